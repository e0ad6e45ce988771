package nic

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

// A frame comes back from its encoding equal, field by field: the headers
// its opcode does not carry, a nil payload and an empty one included.
func TestFrameCodecRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	frames := []Frame{
		{},
		{Frame: roce.Frame{Packet: roce.Packet{Payload: []byte{}}}},
		{Txn: sim.Txn{ID: 1<<48 | 7, Cause: 3}, SrcNode: 4095, DstNode: 0,
			Frame: roce.Frame{Src: roce.NodeEndpoint(4095, 3), Dst: roce.NodeEndpoint(1, 0), SrcPort: 0xC001,
				Packet: roce.Packet{Opcode: roce.WriteOnly, SE: true, AckReq: true, DestQP: 0xffffff, PSN: 0xabcdef, Payload: []byte("sixteen bytes...")}}},
	}
	for i := 0; i < 200; i++ {
		var f Frame
		f.ID, f.Cause = sim.TxnID(r.Uint64()), sim.TxnID(r.Uint64())
		f.SrcNode, f.DstNode = r.IntN(1<<16), r.IntN(1<<16)
		f.Src, f.Dst = roce.NodeEndpoint(r.IntN(1<<16), r.IntN(4)), roce.NodeEndpoint(r.IntN(1<<16), r.IntN(4))
		p := &f.Packet
		p.Opcode, p.SE, p.M, p.FECN, p.BECN, p.AckReq = uint8(r.Uint32()), r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0, r.IntN(2) == 0
		p.PKey, p.DestQP, p.PSN = uint16(r.Uint32()), r.Uint32N(1<<24), r.Uint32N(1<<24)
		p.RETH.VA, p.RETH.RKey, p.RETH.DMALen = r.Uint64(), r.Uint32(), r.Uint32()
		p.AETH.Syndrome, p.AETH.MSN = uint8(r.Uint32()), r.Uint32N(1<<24)
		p.AtomicETH.VA, p.AtomicETH.RKey, p.AtomicETH.SwapAdd, p.AtomicETH.Compare = r.Uint64(), r.Uint32(), r.Uint64(), r.Uint64()
		p.AtomicAckETH = r.Uint64()
		if n := r.IntN(300); n > 0 {
			p.Payload = make([]byte, n)
			for j := range p.Payload {
				p.Payload[j] = byte(r.Uint32())
			}
		}
		frames = append(frames, f)
	}
	var b []byte
	for i := range frames {
		b = AppendFrame(b, &frames[i])
	}
	for i := range frames {
		f, rest, err := DecodeFrame(b)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !reflect.DeepEqual(f, frames[i]) {
			t.Fatalf("frame %d came back as %+v, sent %+v", i, f, frames[i])
		}
		b = rest
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left over", len(b))
	}
	one := AppendFrame(nil, &frames[2])
	for cut := 0; cut < len(one); cut++ {
		if _, _, err := DecodeFrame(one[:cut]); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes decoded", cut, len(one))
		}
	}
}
