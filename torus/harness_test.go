package torus

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// traffic is a test's message layer on one node: it writes its packets into
// the injection FIFOs as room allows and drains every reception FIFO,
// logging what arrived.
type traffic struct {
	nd    *Node
	u     *sim.Unit
	queue []*Packet // to send, in order
	fifo  func(p *Packet) int
	got   []arrival
	// slow, when set, makes the node take at most one packet per edge
	// and come back slow cycles later: reception FIFOs fill up and hold
	// the routers back.
	slow int
	next int // the reception FIFO a slow node looks at first
}

type arrival struct {
	at       sim.Tick
	src, seq int
	fifo     int
	p        *Packet
}

func (g *traffic) Tick(now sim.Tick) bool {
	if g.slow > 0 {
		g.receiveOne(now)
	}
	for f := 0; f < NumRecFIFOs && g.slow == 0; f++ {
		for p := g.nd.Receive(f); p != nil; p = g.nd.Receive(f) {
			g.got = append(g.got, arrival{at: now, src: int(binary.LittleEndian.Uint32(p.Soft[:4])),
				seq: int(binary.LittleEndian.Uint32(p.Soft[4:])), fifo: f, p: p})
		}
	}
	for len(g.queue) > 0 {
		err := g.nd.Inject(g.fifo(g.queue[0]), g.queue[0])
		if err == ErrFIFOFull {
			break // woken when the router frees room
		}
		if err != nil {
			panic(err)
		}
		g.queue = g.queue[1:]
	}
	return false
}

// receiveOne takes one packet, the first found from FIFO g.next on, and
// comes back slow cycles later if it found one.
func (g *traffic) receiveOne(now sim.Tick) {
	for k := 0; k < NumRecFIFOs; k++ {
		f := (g.next + k) % NumRecFIFOs
		if p := g.nd.Receive(f); p != nil {
			g.got = append(g.got, arrival{at: now, src: int(binary.LittleEndian.Uint32(p.Soft[:4])),
				seq: int(binary.LittleEndian.Uint32(p.Soft[4:])), fifo: f, p: p})
			g.next = f + 1
			g.u.WakeAt(now + sim.Tick(g.slow)*g.nd.Clk.Period())
			return
		}
	}
}

// tagged is a packet from node src, its seq-th, with n payload bytes.
func tagged(src, seq int, dst Coord, n int) *Packet {
	p := &Packet{Dst: dst, Payload: make([]byte, n)}
	binary.LittleEndian.PutUint32(p.Soft[:4], uint32(src))
	binary.LittleEndian.PutUint32(p.Soft[4:], uint32(seq))
	for i := range p.Payload {
		p.Payload[i] = byte(src + seq + i)
	}
	return p
}

// rig is a torus with a traffic block on every node.
type rig struct {
	w   *sim.World
	net *Network
	gen []*traffic
}

func newRig(t testing.TB, spec Spec, seed uint64, partitions int) *rig {
	t.Helper()
	return newRigWith(t, spec, seed, partitions, func(r *Router) sim.Block { return r })
}

// newRigWith is newRig with the routers' datapath given (the reference's
// for the equivalence test) and further options of the world.
func newRigWith(t testing.TB, spec Spec, seed uint64, partitions int, datapath func(*Router) sim.Block, opts ...sim.Option) *rig {
	t.Helper()
	w := sim.NewWorld(seed, append([]sim.Option{sim.Partitions(partitions)}, opts...)...)
	net, err := build(w, "torus", spec, datapath)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{w: w, net: net}
	for _, nd := range net.Nodes {
		g := &traffic{nd: nd, fifo: func(*Packet) int { return 0 }}
		g.u = nd.Clk.Add(fmt.Sprintf("torus.node[%d].ml", nd.Index), g)
		nd.NotifyReceive(g.u)
		nd.NotifyRoom(g.u)
		r.gen = append(r.gen, g)
	}
	return r
}

// run simulates to quiescence (or the limit) and returns the end time.
func (r *rig) run(limit sim.Tick) sim.Tick { return r.w.Run(limit) }

// allToAll queues, on every node, count packets to uniformly random other
// nodes with random sizes, adaptive or deterministic; the injection FIFO
// is chosen by destination (FIFO pinning keeps deterministic packets in
// order).
func (r *rig) allToAll(count int, dynamic bool) int {
	nodes := len(r.net.Nodes)
	total := 0
	for i, g := range r.gen {
		rng := r.w.Rand(fmt.Sprintf("test.alltoall.%d", i))
		for k := 0; k < count; k++ {
			j := int(rng.Uint32N(uint32(nodes - 1)))
			if j >= i {
				j++
			}
			p := tagged(i, k, r.net.CoordOf(j), int(rng.Uint32N(MaxPayload+1)))
			p.Dynamic = dynamic
			g.queue = append(g.queue, p)
			total++
		}
		inj := r.net.Spec.InjFIFOs
		g.fifo = func(p *Packet) int { return r.net.IndexOf(p.Dst) % inj }
	}
	return total
}
