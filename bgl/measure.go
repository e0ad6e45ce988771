package bgl

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// PingPong measures the packet layer's half round trip between the nodes
// at a and b: a process on a's first core writes a packet of payload bytes
// to b (deterministic routing, data in the cache), b's process polls,
// reads it into aligned memory and writes one back, iters times; the
// result is the mean half round trip. It is the hardware and the packet
// layer only: no message layer or MPI software runs.
func PingPong(spec Spec, a, b torus.Coord, payload, iters int) (sim.Tick, error) {
	if iters < 1 {
		return 0, fmt.Errorf("bgl: ping-pong of %d round trips", iters)
	}
	m, err := New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	na, nb, err := m.pair(a, b)
	if err != nil {
		return 0, err
	}
	if payload < 0 || payload > torus.MaxPayload {
		return 0, fmt.Errorf("bgl: ping-pong payload of %d bytes (0 to %d: one packet)", payload, torus.MaxPayload)
	}
	var start, end sim.Tick
	var failed error
	fail := func(err error) {
		if failed == nil {
			failed = err
		}
	}
	bounce := func(p *cpu.Proc, self, peer *Node, first bool) {
		for k := 0; k < iters; k++ {
			if first {
				if k == 0 {
					start = p.Now()
				}
				fail(self.PL.Write(p, 0, &torus.Packet{Dst: peer.Torus.At, Payload: make([]byte, payload)}, FromCache))
			}
			f := self.PL.Poll(p)
			_, err := self.PL.Read(p, f, true)
			fail(err)
			if !first {
				fail(self.PL.Write(p, 0, &torus.Packet{Dst: peer.Torus.At, Payload: make([]byte, payload)}, FromCache))
			}
		}
		if first {
			end = p.Now()
		}
	}
	na.Cores[0].Spawn("ping", func(p *cpu.Proc) { bounce(p, na, nb, true) })
	nb.Cores[0].Spawn("pong", func(p *cpu.Proc) { bounce(p, nb, na, false) })
	m.World.Run(sim.S)
	if failed != nil {
		return 0, failed
	}
	if end == 0 {
		return 0, fmt.Errorf("bgl: ping-pong did not finish within a simulated second")
	}
	return (end - start) / sim.Tick(2*iters), nil
}

// Exchange measures the bandwidth of the link between neighbours a and b
// used both ways at once: each node's process sends msgs messages of size
// bytes to the other (cut into packets of up to 240 bytes of payload,
// written from memory) while reading the other's, as fast as the FIFOs and
// the link take them. The result is the payload bytes both received per
// second, from the first write to the last read.
func Exchange(spec Spec, a, b torus.Coord, size, msgs int) (float64, error) {
	if size < 1 || msgs < 1 {
		return 0, fmt.Errorf("bgl: exchange of %d messages of %d bytes", msgs, size)
	}
	m, err := New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	na, nb, err := m.pair(a, b)
	if err != nil {
		return 0, err
	}
	if m.Torus.Hops(a, b) != 1 {
		return 0, fmt.Errorf("bgl: %v and %v are not neighbours", a, b)
	}
	var start, end sim.Tick
	var failed error
	run := func(p *cpu.Proc, self, peer *Node) {
		if p.Now() > start {
			start = p.Now()
		}
		var packets []*torus.Packet
		for k := 0; k < msgs; k++ {
			for off := 0; off < size; off += torus.MaxPayload {
				pk := &torus.Packet{Dst: peer.Torus.At, Payload: make([]byte, min(torus.MaxPayload, size-off))}
				binary.LittleEndian.PutUint32(pk.Soft[:4], uint32(k))
				packets = append(packets, pk)
			}
		}
		want, got := msgs*size, 0
		pl := self.PL
		canSend := func() bool { return len(packets) > 0 && pl.nd.Room(0) >= packets[0].Chunks() }
		for len(packets) > 0 || got < want {
			// A look at the status (polling while there is nothing to
			// do), then send while the FIFO takes whole packets and read
			// what came.
			pl.look(p, func() bool { return canSend() || pl.pending() >= 0 })
			if canSend() {
				if err := pl.Write(p, 0, packets[0], FromMemory); err != nil {
					failed = err
					return
				}
				packets = packets[1:]
				continue
			}
			pk, _ := pl.Read(p, pl.pending(), true)
			got += len(pk.Payload)
		}
		end = max(end, p.Now())
	}
	na.Cores[0].Spawn("exchange", func(p *cpu.Proc) { run(p, na, nb) })
	nb.Cores[0].Spawn("exchange", func(p *cpu.Proc) { run(p, nb, na) })
	m.World.Run(sim.S)
	if failed != nil {
		return 0, failed
	}
	if end <= start {
		return 0, fmt.Errorf("bgl: exchange did not finish within a simulated second")
	}
	return float64(2*msgs*size) / (float64(end-start) / float64(sim.S)), nil
}

// pair is the nodes at a and b, which must differ.
func (m *Machine) pair(a, b torus.Coord) (*Node, *Node, error) {
	for _, c := range []torus.Coord{a, b} {
		for d := 0; d < 3; d++ {
			if c[d] < 0 || c[d] >= m.Spec.Torus.Dims[d] {
				return nil, nil, fmt.Errorf("bgl: node %v outside the %d×%d×%d torus", c, m.Spec.Torus.Dims[0], m.Spec.Torus.Dims[1], m.Spec.Torus.Dims[2])
			}
		}
	}
	if a == b {
		return nil, nil, fmt.Errorf("bgl: both ends are node %v", a)
	}
	return m.Nodes[m.Torus.IndexOf(a)], m.Nodes[m.Torus.IndexOf(b)], nil
}
