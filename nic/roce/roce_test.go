package roce

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// The known answer of the fact sheet: a ConnectX-4 Lx CNP capture whose
// ICRC is 0x2A00FD82 (written 82 fd 00 2a).
func TestICRCKnownAnswer(t *testing.T) {
	frame := unhex("e41d2dab2bc2 7cfe90643b32 0800" + "45c2003c718c400040119161 0a001101 0a001201" +
		"000012b700280000" + "8100ffff4000011800000000" + strings.Repeat("00", 16) + "82fd002a")
	crc, err := ICRC(frame[14 : len(frame)-4])
	if err != nil {
		t.Fatal(err)
	}
	if crc != 0x2a00fd82 {
		t.Fatalf("ICRC %08x, want 2a00fd82", crc)
	}
}

func samplePackets() []Packet {
	var w Packet
	w.Opcode, w.PKey, w.DestQP, w.AckReq, w.PSN = WriteOnly, 0xffff, 0x11, true, 100
	w.RETH.VA, w.RETH.RKey, w.RETH.DMALen = 0x7f0000001000, 0x1234, 17
	w.Payload = []byte("seventeen bytes!!")
	var r Packet
	r.Opcode, r.PKey, r.DestQP, r.PSN = ReadRequest, 0xffff, 0x11, 101
	r.RETH.VA, r.RETH.RKey, r.RETH.DMALen = 0x7f0000002000, 0x5678, 32
	var resp Packet
	resp.Opcode, resp.PKey, resp.DestQP, resp.PSN = ReadRespOnly, 0xffff, 0x22, 101
	resp.AETH.Syndrome, resp.AETH.MSN = SyndromeAck, 2
	resp.Payload = bytes.Repeat([]byte{7}, 32)
	var ack Packet
	ack.Opcode, ack.PKey, ack.DestQP, ack.PSN = Ack, 0xffff, 0x22, 100
	ack.AETH.Syndrome, ack.AETH.MSN = SyndromeAck, 1
	var cas Packet
	cas.Opcode, cas.PKey, cas.DestQP, cas.PSN, cas.AckReq = CmpSwap, 0xffff, 0x11, 102, true
	cas.AtomicETH.VA, cas.AtomicETH.RKey, cas.AtomicETH.SwapAdd, cas.AtomicETH.Compare = 0x7f0000003000, 9, 5, 0
	var aack Packet
	aack.Opcode, aack.PKey, aack.DestQP, aack.PSN = AtomicAck, 0xffff, 0x22, 102
	aack.AETH.Syndrome, aack.AtomicAckETH = SyndromeAck, 42
	var first, mid, last Packet
	first.Opcode, first.PKey, first.DestQP, first.PSN = WriteFirst, 0xffff, 0x11, 103
	first.RETH.DMALen, first.Payload = 2048+10, bytes.Repeat([]byte{1}, 1024)
	mid.Opcode, mid.PKey, mid.DestQP, mid.PSN, mid.Payload = WriteMiddle, 0xffff, 0x11, 104, bytes.Repeat([]byte{2}, 1024)
	last.Opcode, last.PKey, last.DestQP, last.PSN, last.AckReq, last.Payload = WriteLast, 0xffff, 0x11, 105, true, []byte("tail bytes")
	var nak Packet
	nak.Opcode, nak.PKey, nak.DestQP, nak.PSN = Ack, 0xffff, 0x22, 104
	nak.AETH.Syndrome = SyndromeNAKSeq
	return []Packet{w, r, resp, ack, cas, aack, first, mid, last, nak}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, p := range samplePackets() {
		f := Frame{Src: NodeEndpoint(0, 0), Dst: NodeEndpoint(1, 0), SrcPort: 0xc011, Packet: p}
		b, err := f.Serialize()
		if err != nil {
			t.Fatalf("%s: %v", OpName(p.Opcode), err)
		}
		back, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", OpName(p.Opcode), err)
		}
		if len(back.Packet.Payload) == 0 {
			back.Packet.Payload = nil
		}
		if !reflect.DeepEqual(back.Packet, p) || back.SrcPort != 0xc011 || !back.Dst.IP.Equal(f.Dst.IP) {
			t.Fatalf("%s: round trip\n got %+v\nwant %+v", OpName(p.Opcode), back.Packet, p)
		}
		b[len(b)-10] ^= 1 // corrupt the payload or a header
		if _, err := Parse(b); err == nil {
			t.Fatalf("%s: corrupted frame accepted", OpName(p.Opcode))
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, c := range []struct{ name, hex string }{
		{"short BTH", "0a00ffff"},
		{"unknown opcode", "1f00ffff000000110000000a"},
		{"RETH missing", "0a00ffff000000110000000a00"},
		{"ACK with payload", "1100ffff00000022000000641f00000100000000"},
		{"nonzero TVer", "0a01ffff000000110000000a" + strings.Repeat("00", 16)},
	} {
		if _, err := Decode(unhex(c.hex)); err == nil {
			t.Errorf("%s accepted", c.name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, p := range samplePackets() {
		b, _ := p.Append(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			return
		}
		out, err := p.Append(nil)
		if err != nil {
			t.Fatalf("decoded packet does not encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs\n in %x\nout %x", b, out)
		}
	})
}

func FuzzParseFrame(f *testing.F) {
	for _, p := range samplePackets() {
		fr := Frame{Src: NodeEndpoint(0, 0), Dst: NodeEndpoint(1, 0), SrcPort: 0xc000, Packet: p}
		b, _ := fr.Serialize()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Parse(b) // must not panic
	})
}
