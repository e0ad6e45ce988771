package roce

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Endpoint is a RoCE port's Ethernet and IPv4 address.
type Endpoint struct {
	MAC net.HardwareAddr
	IP  net.IP
}

// NodeEndpoint is the address aaemu gives node n's NIC i: MAC
// 02:00:00:hh:ll:ii and IPv4 10.hh.ll.(i+1), hh and ll the high and low
// bytes of n (up to 65,535 nodes; below 256, 02:00:00:00:nn:ii and
// 10.0.n.(i+1)).
func NodeEndpoint(node, nic int) Endpoint {
	hi, lo := byte(node>>8), byte(node)
	return Endpoint{MAC: net.HardwareAddr{0x02, 0, 0, hi, lo, byte(nic)}, IP: net.IPv4(10, hi, lo, byte(nic+1)).To4()}
}

// Frame is one RoCEv2 frame.
type Frame struct {
	Src, Dst Endpoint
	SrcPort  uint16 // UDP source port: flow entropy (aaemu: 0xC000 | QP)
	Packet   Packet
}

// ICRC computes the invariant CRC of a RoCEv2 IPv4 packet: CRC-32 (IEEE)
// over eight 0xFF bytes standing in for the LRH, then the IP header, UDP
// header and transport packet with the variant fields masked (IP TOS, TTL
// and checksum; UDP checksum; BTH byte 4). ip runs from the IP header to the
// end of the pad, without the ICRC.
func ICRC(ip []byte) (uint32, error) {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return 0, fmt.Errorf("ICRC: not an IPv4 packet")
	}
	ihl := int(ip[0]&0xf) * 4
	if len(ip) < ihl+8+BTHSize {
		return 0, fmt.Errorf("ICRC: packet of %d bytes too short", len(ip))
	}
	c := crc32.Update(0, crc32.IEEETable, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	var hdr [60]byte
	copy(hdr[:ihl], ip[:ihl])
	hdr[1], hdr[8], hdr[10], hdr[11] = 0xff, 0xff, 0xff, 0xff
	c = crc32.Update(c, crc32.IEEETable, hdr[:ihl])
	var udp [8]byte
	copy(udp[:], ip[ihl:ihl+8])
	udp[6], udp[7] = 0xff, 0xff
	c = crc32.Update(c, crc32.IEEETable, udp[:])
	var bth [BTHSize]byte
	copy(bth[:], ip[ihl+8:])
	bth[4] = 0xff
	c = crc32.Update(c, crc32.IEEETable, bth[:])
	return crc32.Update(c, crc32.IEEETable, ip[ihl+8+BTHSize:]), nil
}

// Serialize builds the Ethernet frame (without FCS): Ethernet, IPv4 (DF,
// TTL 64), UDP to port 4791 with checksum 0 as Linux's rxe sends it, the
// transport packet, and the ICRC least-significant byte first.
func (f *Frame) Serialize() ([]byte, error) {
	pkt, err := f.Packet.Append(make([]byte, 0, f.Packet.Len()+ICRCSize))
	if err != nil {
		return nil, err
	}
	pkt = append(pkt, 0, 0, 0, 0)
	eth := &layers.Ethernet{SrcMAC: f.Src.MAC, DstMAC: f.Dst.MAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP,
		SrcIP: f.Src.IP, DstIP: f.Dst.IP}
	udp := &layers.UDP{SrcPort: layers.UDPPort(f.SrcPort), DstPort: UDPPort}
	if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
		return nil, err
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(pkt)); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	// UDP checksum 0: not computed (allowed for IPv4; the ICRC covers the data).
	b[14+20+6], b[14+20+7] = 0, 0
	ipPart := b[14 : len(b)-ICRCSize]
	crc, err := ICRC(ipPart)
	if err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint32(b[len(b)-ICRCSize:], crc)
	return b, nil
}

// Parse decodes an Ethernet frame carrying RoCEv2 and checks its ICRC.
func Parse(b []byte) (Frame, error) {
	var f Frame
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true, Lazy: false})
	eth, _ := p.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if eth == nil || ip == nil || udp == nil {
		if e := p.ErrorLayer(); e != nil {
			return f, fmt.Errorf("frame: %v", e.Error())
		}
		return f, fmt.Errorf("frame: not Ethernet/IPv4/UDP")
	}
	if udp.DstPort != UDPPort {
		return f, fmt.Errorf("frame: UDP port %d is not RoCEv2's %d", udp.DstPort, UDPPort)
	}
	body := udp.Payload
	if len(body) < BTHSize+ICRCSize {
		return f, fmt.Errorf("frame: RoCE payload of %d bytes", len(body))
	}
	ipStart := 14
	ipEnd := ipStart + int(ip.Length) - ICRCSize
	if ipEnd+ICRCSize > len(b) || ipEnd < ipStart+28+BTHSize {
		return f, fmt.Errorf("frame: IP length %d does not fit the frame", ip.Length)
	}
	want, err := ICRC(b[ipStart:ipEnd])
	if err != nil {
		return f, err
	}
	if got := binary.LittleEndian.Uint32(b[ipEnd:]); got != want {
		return f, fmt.Errorf("frame: ICRC %08x, computed %08x", got, want)
	}
	pkt, err := Decode(body[:len(body)-ICRCSize])
	if err != nil {
		return f, err
	}
	f.Src, f.Dst = Endpoint{MAC: eth.SrcMAC, IP: ip.SrcIP}, Endpoint{MAC: eth.DstMAC, IP: ip.DstIP}
	f.SrcPort, f.Packet = uint16(udp.SrcPort), pkt
	return f, nil
}

// WireBytes is the frame's size on an Ethernet wire: the frame, FCS (4),
// preamble and start delimiter (8) and the inter-frame gap (12), padded to
// the 64-byte minimum.
func WireBytes(frameLen int) int { return max(frameLen+4, 64) + 8 + 12 }
