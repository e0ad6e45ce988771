// Package roce is the RoCEv2 wire format: InfiniBand transport headers (BTH,
// RETH, AETH, AtomicETH, AtomicAckETH) over UDP port 4791 on IPv4 and
// Ethernet, with the invariant CRC. It holds no model.
package roce

import (
	"encoding/binary"
	"fmt"
)

// UDPPort is RoCEv2's UDP destination port.
const UDPPort = 4791

// RC opcodes (transport 000).
const (
	SendFirst      uint8 = 0x00
	SendMiddle     uint8 = 0x01
	SendLast       uint8 = 0x02
	SendOnly       uint8 = 0x04
	WriteFirst     uint8 = 0x06
	WriteMiddle    uint8 = 0x07
	WriteLast      uint8 = 0x08
	WriteOnly      uint8 = 0x0A
	ReadRequest    uint8 = 0x0C
	ReadRespFirst  uint8 = 0x0D
	ReadRespMiddle uint8 = 0x0E
	ReadRespLast   uint8 = 0x0F
	ReadRespOnly   uint8 = 0x10
	Ack            uint8 = 0x11
	AtomicAck      uint8 = 0x12
	CmpSwap        uint8 = 0x13
	FetchAdd       uint8 = 0x14
)

var opNames = map[uint8]string{SendFirst: "SEND First", SendMiddle: "SEND Middle", SendLast: "SEND Last", SendOnly: "SEND Only",
	WriteFirst: "RDMA WRITE First", WriteMiddle: "RDMA WRITE Middle", WriteLast: "RDMA WRITE Last", WriteOnly: "RDMA WRITE Only",
	ReadRequest: "RDMA READ Request", ReadRespFirst: "RDMA READ Response First", ReadRespMiddle: "RDMA READ Response Middle",
	ReadRespLast: "RDMA READ Response Last", ReadRespOnly: "RDMA READ Response Only", Ack: "Acknowledge",
	AtomicAck: "Atomic Acknowledge", CmpSwap: "CmpSwap", FetchAdd: "FetchAdd"}

// OpName names an RC opcode.
func OpName(op uint8) string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return fmt.Sprintf("opcode %#02x", op)
}

// AETH syndromes.
const (
	SyndromeAck        uint8 = 0x1f // ACK, credit count invalid (no end-to-end credits)
	SyndromeNAKSeq     uint8 = 0x60 // NAK: PSN sequence error
	SyndromeNAKInvalid uint8 = 0x61 // NAK: invalid request
	SyndromeNAKAccess  uint8 = 0x62 // NAK: remote access error
	SyndromeNAKOp      uint8 = 0x63 // NAK: remote operational error
)

// Header sizes.
const (
	BTHSize          = 12
	RETHSize         = 16
	AETHSize         = 4
	AtomicETHSize    = 28
	AtomicAckETHSize = 8
	ICRCSize         = 4
)

// Packet is an InfiniBand transport packet: BTH, the extended headers its
// opcode carries, and the payload.
type Packet struct {
	Opcode uint8
	SE, M  bool
	PKey   uint16
	FECN   bool
	BECN   bool
	DestQP uint32 // 24 bits
	AckReq bool
	PSN    uint32 // 24 bits

	RETH struct {
		VA     uint64
		RKey   uint32
		DMALen uint32
	}
	AETH struct {
		Syndrome uint8
		MSN      uint32 // 24 bits
	}
	AtomicETH struct {
		VA      uint64
		RKey    uint32
		SwapAdd uint64
		Compare uint64
	}
	AtomicAckETH uint64 // original remote data

	Payload []byte
}

// headers lists which extended headers an opcode carries.
func headers(op uint8) (reth, aeth, atomic, atomicAck bool, payload bool, err error) {
	switch op {
	case SendFirst, SendMiddle, SendLast, SendOnly, WriteMiddle, WriteLast:
		return false, false, false, false, true, nil
	case WriteFirst, WriteOnly:
		return true, false, false, false, true, nil
	case ReadRequest:
		return true, false, false, false, false, nil
	case ReadRespFirst, ReadRespLast, ReadRespOnly:
		return false, true, false, false, true, nil
	case ReadRespMiddle:
		return false, false, false, false, true, nil
	case Ack:
		return false, true, false, false, false, nil
	case AtomicAck:
		return false, true, false, true, false, nil
	case CmpSwap, FetchAdd:
		return false, false, true, false, false, nil
	}
	return false, false, false, false, false, fmt.Errorf("BTH opcode %#02x: not an RC opcode aaemu models", op)
}

// Len is the encoded size without the ICRC: BTH, extended headers, payload
// and pad.
func (p *Packet) Len() int {
	reth, aeth, atomic, ack, _, _ := headers(p.Opcode)
	n := BTHSize + (len(p.Payload)+3)&^3
	if reth {
		n += RETHSize
	}
	if aeth {
		n += AETHSize
	}
	if atomic {
		n += AtomicETHSize
	}
	if ack {
		n += AtomicAckETHSize
	}
	return n
}

// Append encodes the packet (without ICRC) onto b.
func (p *Packet) Append(b []byte) ([]byte, error) {
	reth, aeth, atomic, ack, payload, err := headers(p.Opcode)
	if err != nil {
		return b, err
	}
	if !payload && len(p.Payload) > 0 {
		return b, fmt.Errorf("%s carries no payload", OpName(p.Opcode))
	}
	if p.DestQP > 0xffffff || p.PSN > 0xffffff || p.AETH.MSN > 0xffffff {
		return b, fmt.Errorf("DestQP, PSN and MSN are 24 bits")
	}
	pad := (4 - len(p.Payload)%4) % 4
	b0 := byte(pad) << 4
	if p.SE {
		b0 |= 0x80
	}
	if p.M {
		b0 |= 0x40
	}
	b = append(b, p.Opcode, b0)
	b = binary.BigEndian.AppendUint16(b, p.PKey)
	b4 := uint32(p.DestQP)
	if p.FECN {
		b4 |= 0x80 << 24
	}
	if p.BECN {
		b4 |= 0x40 << 24
	}
	b = binary.BigEndian.AppendUint32(b, b4)
	b8 := p.PSN
	if p.AckReq {
		b8 |= 0x80 << 24
	}
	b = binary.BigEndian.AppendUint32(b, b8)
	if reth {
		b = binary.BigEndian.AppendUint64(b, p.RETH.VA)
		b = binary.BigEndian.AppendUint32(b, p.RETH.RKey)
		b = binary.BigEndian.AppendUint32(b, p.RETH.DMALen)
	}
	if aeth {
		b = binary.BigEndian.AppendUint32(b, uint32(p.AETH.Syndrome)<<24|p.AETH.MSN)
	}
	if atomic {
		b = binary.BigEndian.AppendUint64(b, p.AtomicETH.VA)
		b = binary.BigEndian.AppendUint32(b, p.AtomicETH.RKey)
		b = binary.BigEndian.AppendUint64(b, p.AtomicETH.SwapAdd)
		b = binary.BigEndian.AppendUint64(b, p.AtomicETH.Compare)
	}
	if ack {
		b = binary.BigEndian.AppendUint64(b, p.AtomicAckETH)
	}
	b = append(b, p.Payload...)
	for i := 0; i < pad; i++ {
		b = append(b, 0)
	}
	return b, nil
}

// Decode parses a transport packet (BTH onwards, without the ICRC).
func Decode(b []byte) (Packet, error) {
	var p Packet
	if len(b) < BTHSize {
		return p, fmt.Errorf("BTH: %d bytes, need %d", len(b), BTHSize)
	}
	p.Opcode = b[0]
	p.SE, p.M = b[1]&0x80 != 0, b[1]&0x40 != 0
	pad := int(b[1] >> 4 & 3)
	if tver := b[1] & 0xf; tver != 0 {
		return p, fmt.Errorf("BTH TVer %d: want 0", tver)
	}
	if b[4]&0x3f != 0 || b[8]&0x7f != 0 {
		return p, fmt.Errorf("BTH reserved bits set (byte 4 %#02x, byte 8 %#02x)", b[4], b[8])
	}
	p.PKey = binary.BigEndian.Uint16(b[2:])
	p.FECN, p.BECN = b[4]&0x80 != 0, b[4]&0x40 != 0
	p.DestQP = binary.BigEndian.Uint32(b[4:]) & 0xffffff
	p.AckReq = b[8]&0x80 != 0
	p.PSN = binary.BigEndian.Uint32(b[8:]) & 0xffffff
	reth, aeth, atomic, ack, payload, err := headers(p.Opcode)
	if err != nil {
		return p, err
	}
	r := b[BTHSize:]
	need := func(n int, what string) error {
		if len(r) < n {
			return fmt.Errorf("%s: %d bytes left, need %d", what, len(r), n)
		}
		return nil
	}
	if reth {
		if err := need(RETHSize, "RETH"); err != nil {
			return p, err
		}
		p.RETH.VA, p.RETH.RKey, p.RETH.DMALen = binary.BigEndian.Uint64(r), binary.BigEndian.Uint32(r[8:]), binary.BigEndian.Uint32(r[12:])
		r = r[RETHSize:]
	}
	if aeth {
		if err := need(AETHSize, "AETH"); err != nil {
			return p, err
		}
		v := binary.BigEndian.Uint32(r)
		p.AETH.Syndrome, p.AETH.MSN = uint8(v>>24), v&0xffffff
		r = r[AETHSize:]
	}
	if atomic {
		if err := need(AtomicETHSize, "AtomicETH"); err != nil {
			return p, err
		}
		p.AtomicETH.VA, p.AtomicETH.RKey = binary.BigEndian.Uint64(r), binary.BigEndian.Uint32(r[8:])
		p.AtomicETH.SwapAdd, p.AtomicETH.Compare = binary.BigEndian.Uint64(r[12:]), binary.BigEndian.Uint64(r[20:])
		r = r[AtomicETHSize:]
	}
	if ack {
		if err := need(AtomicAckETHSize, "AtomicAckETH"); err != nil {
			return p, err
		}
		p.AtomicAckETH = binary.BigEndian.Uint64(r)
		r = r[AtomicAckETHSize:]
	}
	if len(r)%4 != 0 {
		return p, fmt.Errorf("payload and pad of %d bytes: not a multiple of 4", len(r))
	}
	if !payload {
		if len(r) != 0 || pad != 0 {
			return p, fmt.Errorf("%s with %d bytes of payload (pad %d)", OpName(p.Opcode), len(r), pad)
		}
		return p, nil
	}
	if pad > len(r) {
		return p, fmt.Errorf("PadCnt %d with %d payload bytes", pad, len(r))
	}
	for _, x := range r[len(r)-pad:] {
		if x != 0 {
			return p, fmt.Errorf("pad bytes are not zero")
		}
	}
	p.Payload = r[:len(r)-pad]
	return p, nil
}
