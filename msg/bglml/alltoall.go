package bglml

import (
	"fmt"
	"math/rand"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// AlltoallOrder is how the nodes of an alltoall inject their messages.
type AlltoallOrder uint8

// The orders: MPICH2's two for messages above 256 bytes (L201–L202: its
// algorithms "are essentially designed for multiported systems"), and the
// optimised one of L156.
const (
	// Pairwise is MPICH2's long-message algorithm (and the MPI core's):
	// in step i a node sends to r+i and receives from r−i, and waits for
	// both before the next step.
	Pairwise AlltoallOrder = iota
	// Posted is MPICH2's medium-message algorithm: every send posted at
	// once in the order r+1, r+2, …, each message's packets back to back,
	// by the protocol its size chooses (deterministic eager or
	// rendezvous).
	Posted
	// Spread is the optimised alltoall (L156, L203): every send posted
	// at once, the destinations in a random order of each node's, one
	// packet of each message in turn (Params.Interleave) and every packet
	// adaptively routed (adaptive eager, or rendezvous above EagerMax).
	Spread
)

func (o AlltoallOrder) String() string {
	switch o {
	case Pairwise:
		return "pairwise"
	case Posted:
		return "posted"
	case Spread:
		return "spread"
	}
	return fmt.Sprintf("order%d", uint8(o))
}

// LinkLoad is one directed link's traffic in a run: the node it leaves,
// its port, and the time it was sending.
type LinkLoad struct {
	Node int
	At   torus.Coord
	Port torus.Port
	Busy sim.Tick
}

// AlltoallResult is an alltoall's time (from the start until the last
// node has everything) and every link's load.
type AlltoallResult struct {
	Time  sim.Tick
	Links []LinkLoad
}

// Alltoall runs an alltoall of size bytes between every pair of nodes
// through the message layer, every node's layer on its first core, in
// order order (seed: the Spread order's random destinations), and checks
// that every node got every other's block.
func Alltoall(spec bgl.Spec, params Params, costs Costs, size int, order AlltoallOrder, seed int64) (AlltoallResult, error) {
	if size < 1 || size > MaxMessage {
		return AlltoallResult{}, fmt.Errorf("bglml: alltoall of %d bytes (1 to %d)", size, MaxMessage)
	}
	if order > Spread {
		return AlltoallResult{}, fmt.Errorf("bglml: alltoall order %v (pairwise, posted, spread)", order)
	}
	if order == Spread {
		params.Interleave, params.Adaptive = true, true
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return AlltoallResult{}, err
	}
	n := len(m.Nodes)
	if uint64(n)*uint64(size) > 1<<31 {
		return AlltoallResult{}, fmt.Errorf("bglml: alltoall of %d bytes among %d nodes: %d bytes a node", size, n, n*size)
	}
	block := func(src, dst, k int) byte { return byte(src*131 + dst*17 + k) }
	rng := rand.New(rand.NewSource(seed))
	var end sim.Tick
	var failed error
	recv := make([]uint64, n)
	for i := range m.Nodes {
		i := i
		nd := m.Nodes[i]
		send := nd.Alloc(n * size)
		recv[i] = nd.Alloc(n * size)
		b := make([]byte, size)
		for d := 0; d < n; d++ {
			for k := range b {
				b[k] = block(i, d, k)
			}
			nd.Mem.Write(send+uint64(d*size), b)
		}
		dsts := make([]int, 0, n-1)
		for k := 1; k < n; k++ {
			dsts = append(dsts, (i+k)%n)
		}
		if order == Spread {
			rng.Shuffle(len(dsts), func(a, b int) { dsts[a], dsts[b] = dsts[b], dsts[a] })
		}
		got, sent := 0, 0
		from := make([]bool, n)
		l, err := New(m, i, params, costs, func(src int, _ []byte, sz int) (uint64, func()) {
			return recv[i] + uint64(src*size), func() { got++; from[src] = true }
		})
		if err != nil {
			return AlltoallResult{}, err
		}
		nd.Cores[0].Spawn("alltoall", func(p *cpu.Proc) {
			post := func(d int) {
				if err := l.Send(p, &Message{Dst: d, Addr: send + uint64(d*size), Len: size, Done: func() { sent++ }}); err != nil && failed == nil {
					failed = err
				}
			}
			if order == Pairwise {
				for k, d := range dsts {
					post(d)
					src := (i - k - 1 + n) % n
					l.Until(p, func() bool { return sent == k+1 && from[src] })
				}
			} else {
				for _, d := range dsts {
					post(d)
				}
			}
			l.Until(p, func() bool { return got == n-1 && sent == n-1 })
			end = max(end, p.Now())
			l.Until(p, l.Idle)
		})
	}
	m.World.Run(10 * sim.S)
	if failed != nil {
		return AlltoallResult{}, failed
	}
	b := make([]byte, size)
	for i, nd := range m.Nodes {
		for s := 0; s < n; s++ {
			if s == i {
				continue
			}
			nd.Mem.Read(recv[i]+uint64(s*size), b)
			for k := range b {
				if b[k] != block(s, i, k) {
					return AlltoallResult{}, fmt.Errorf("bglml: alltoall: node %d's block from node %d differs at byte %d (did it finish within 10 simulated seconds?)", i, s, k)
				}
			}
		}
	}
	res := AlltoallResult{Time: end}
	st := m.World.Stats()
	for i, nd := range m.Nodes {
		for o := torus.Port(0); o < torus.NumLinkPorts; o++ {
			c, ok := st.Get(fmt.Sprintf("bgl.node[%d].%v.busy_ps", i, o))
			if !ok {
				continue // no link there (a mesh's edge)
			}
			res.Links = append(res.Links, LinkLoad{Node: i, At: nd.Torus.At, Port: o, Busy: sim.Tick(c.(*sim.Counter).Value())})
		}
	}
	return res, nil
}
