package torus

import (
	"encoding/binary"
	"errors"

	"github.com/aaemu/aaemu/sim"
)

// Packets and tokens cross ranks (a torus link between nodes two MPI ranks
// run) field by field, the router's own fields too (the channel, the
// direction, the hops), so that they arrive as sent.
func init() {
	sim.RegisterCodec(sim.Codec[Packet]{Append: appendPacket, Decode: decodePacket})
	sim.RegisterCodec(sim.Codec[Tokens]{Append: appendTokens, Decode: decodeTokens})
}

var errShort = errors.New("torus: an encoded packet or token is cut short")

func appendPacket(b []byte, p *Packet) []byte {
	u := func(v uint64) { b = binary.AppendUvarint(b, v) }
	s := func(v int64) { b = binary.AppendVarint(b, v) }
	u(uint64(p.ID))
	u(uint64(p.Cause))
	for d := 0; d < 3; d++ {
		s(int64(p.Src[d]))
		s(int64(p.Dst[d]))
		s(int64(p.Hint[d]))
		s(int64(p.dir[d]))
	}
	var flags uint64
	for i, x := range []bool{p.Dynamic, p.Priority, p.Deposit, p.Payload != nil} {
		if x {
			flags |= 1 << i
		}
	}
	u(flags)
	b = append(b, p.Soft[:]...)
	u(uint64(len(p.Payload)))
	b = append(b, p.Payload...)
	u(uint64(p.chunks))
	u(uint64(p.vc))
	u(uint64(p.inPort))
	u(uint64(p.Hops))
	u(uint64(p.InjectedAt))
	return b
}

func decodePacket(b []byte) (Packet, []byte, error) {
	var p Packet
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
	s := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	p.ID, p.Cause = sim.TxnID(u()), sim.TxnID(u())
	for d := 0; d < 3; d++ {
		p.Src[d], p.Dst[d], p.Hint[d], p.dir[d] = int(s()), int(s()), int8(s()), int8(s())
	}
	flags := u()
	p.Dynamic, p.Priority, p.Deposit = flags&1 != 0, flags&2 != 0, flags&4 != 0
	if bad || len(b) < len(p.Soft) {
		return Packet{}, nil, errShort
	}
	copy(p.Soft[:], b)
	b = b[len(p.Soft):]
	n := u()
	if bad || n > uint64(len(b)) {
		return Packet{}, nil, errShort
	}
	if flags&8 != 0 {
		p.Payload = append([]byte{}, b[:n]...)
	}
	b = b[n:]
	p.chunks, p.vc, p.inPort, p.Hops = uint8(u()), uint8(u()), uint8(u()), uint16(u())
	p.InjectedAt = sim.Tick(u())
	if bad {
		return Packet{}, nil, errShort
	}
	return p, b, nil
}

func appendTokens(b []byte, t *Tokens) []byte {
	for _, c := range t.Chunks {
		b = binary.AppendUvarint(b, uint64(c))
	}
	return b
}

func decodeTokens(b []byte) (Tokens, []byte, error) {
	var t Tokens
	for i := range t.Chunks {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return Tokens{}, nil, errShort
		}
		t.Chunks[i], b = uint16(v), b[n:]
	}
	return t, b, nil
}
