package nic

import (
	"encoding/binary"
	"errors"

	"github.com/aaemu/aaemu/sim"
)

// A frame crosses ranks (a wire's link between two ranks, a tapped frame on
// its way to rank 0's capture) field by field, every header whether or not
// its opcode carries it, so that it arrives equal to the frame sent.
func init() {
	sim.RegisterCodec(sim.Codec[Frame]{Append: AppendFrame, Decode: DecodeFrame})
}

// AppendFrame encodes f after b.
func AppendFrame(b []byte, f *Frame) []byte {
	u := func(v uint64) { b = binary.AppendUvarint(b, v) }
	raw := func(p []byte) {
		if p == nil {
			u(0)
			return
		}
		u(uint64(len(p)) + 1)
		b = append(b, p...)
	}
	u(uint64(f.ID))
	u(uint64(f.Cause))
	u(uint64(f.SrcNode))
	u(uint64(f.DstNode))
	raw(f.Src.MAC)
	raw(f.Src.IP)
	raw(f.Dst.MAC)
	raw(f.Dst.IP)
	u(uint64(f.SrcPort))
	p := &f.Packet
	var flags uint64
	for i, x := range []bool{p.SE, p.M, p.FECN, p.BECN, p.AckReq} {
		if x {
			flags |= 1 << i
		}
	}
	for _, v := range []uint64{uint64(p.Opcode), flags, uint64(p.PKey), uint64(p.DestQP), uint64(p.PSN),
		p.RETH.VA, uint64(p.RETH.RKey), uint64(p.RETH.DMALen), uint64(p.AETH.Syndrome), uint64(p.AETH.MSN),
		p.AtomicETH.VA, uint64(p.AtomicETH.RKey), p.AtomicETH.SwapAdd, p.AtomicETH.Compare, p.AtomicAckETH} {
		u(v)
	}
	raw(p.Payload)
	return b
}

var errShortFrame = errors.New("nic: an encoded frame is cut short")

// DecodeFrame reads a frame AppendFrame wrote from the front of b and
// returns the rest.
func DecodeFrame(b []byte) (Frame, []byte, error) {
	var f Frame
	bad := false
	u := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	raw := func() []byte {
		n := u()
		if n == 0 || bad {
			return nil
		}
		if n-1 > uint64(len(b)) {
			bad = true
			return nil
		}
		p := append([]byte{}, b[:n-1]...)
		b = b[n-1:]
		return p
	}
	f.ID, f.Cause = sim.TxnID(u()), sim.TxnID(u())
	f.SrcNode, f.DstNode = int(u()), int(u())
	f.Src.MAC, f.Src.IP, f.Dst.MAC, f.Dst.IP = raw(), raw(), raw(), raw()
	f.SrcPort = uint16(u())
	p := &f.Packet
	p.Opcode = uint8(u())
	flags := u()
	p.SE, p.M, p.FECN, p.BECN, p.AckReq = flags&1 != 0, flags&2 != 0, flags&4 != 0, flags&8 != 0, flags&16 != 0
	p.PKey, p.DestQP, p.PSN = uint16(u()), uint32(u()), uint32(u())
	p.RETH.VA, p.RETH.RKey, p.RETH.DMALen = u(), uint32(u()), uint32(u())
	p.AETH.Syndrome, p.AETH.MSN = uint8(u()), uint32(u())
	p.AtomicETH.VA, p.AtomicETH.RKey, p.AtomicETH.SwapAdd, p.AtomicETH.Compare = u(), uint32(u()), u(), u()
	p.AtomicAckETH = u()
	p.Payload = raw()
	if bad {
		return Frame{}, nil, errShortFrame
	}
	return f, b, nil
}

// appendTap encodes what a tap sees: the frame and whether it was lost.
func appendTap(f *Frame, lost bool) []byte {
	b := []byte{0}
	if lost {
		b[0] = 1
	}
	return AppendFrame(b, f)
}
