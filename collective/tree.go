package collective

import (
	"fmt"
	"math/bits"

	"github.com/aaemu/aaemu/sim"
)

// Op is what the ALU does to the words of the packets it combines. The
// hardware's ALU works on unsigned integers: a signed maximum is taken on
// values with the sign bit flipped, a minimum as the maximum of the
// complements, by the software around it.
type Op uint8

const (
	OpAdd Op = iota // sum modulo 2^64
	OpMax           // unsigned maximum
	OpAnd
	OpOr
	OpXor
	numOps
)

var opNames = [...]string{"add", "max", "and", "or", "xor"}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// apply combines b into a.
func (o Op) apply(a *[Words]uint64, b *[Words]uint64) {
	for i := range a {
		switch o {
		case OpAdd:
			a[i] += b[i]
		case OpMax:
			a[i] = max(a[i], b[i])
		case OpAnd:
			a[i] &= b[i]
		case OpOr:
			a[i] |= b[i]
		case OpXor:
			a[i] ^= b[i]
		}
	}
}

// Packet is a collective packet: 256 bytes, all payload, and the operation
// the routers combine it with. Every node injects its contribution to a
// collective operation as a packet; every node receives the combined
// result. A broadcast is a reduction in which one node contributes the
// data and the others zeros, with OpOr.
type Packet struct {
	sim.Txn
	Op Op
	W  [Words]uint64
	// Mismatch is set on a result some of whose contributions asked for
	// another operation (a programming error of the message layer).
	Mismatch bool
}

// Tree is the collective network: a binary tree over the nodes, node 0 at
// the root and node i's parent (i-1)/2.
type Tree struct {
	Spec  Spec
	Nodes []*Node
}

// Node is one node's access to the collective and barrier networks. Its
// message layer (the client unit given to New) writes its contributions
// into Inj and reads results from Rec; it arms the barrier by sending on
// Arm and learns that every node has arrived from Release.
type Node struct {
	Index    int
	Inj, Rec *sim.Chan[Packet]
	Arm      *sim.Chan[struct{}]
	Release  *sim.Chan[struct{}]
	router   *router
	barrier  *barrier
}

// router is one node's collective-network router: it combines the
// node's contribution with its children's in the ALU and sends the result
// up; the root turns it around; on the way down it copies the result to
// the children and the node.
type router struct {
	u      *sim.Unit
	spec   *Spec
	period sim.Tick

	inj, rec   *sim.Chan[Packet]
	up, fromUp *sim.Chan[Packet] // to and from the parent (nil at the root)
	fromKids   []*sim.Chan[Packet]
	toKids     []*sim.Chan[Packet]

	upBusy, downBusy sim.Tick
	seen             []sim.Tick // head arrival per input: inj, fromUp, then the children

	combined, broadcast, mismatches *sim.Counter
}

// New builds the collective and barrier networks called name over the
// nodes whose message layers are clients (one unit per node, each in its
// node's domain).
func New(name string, clients []*sim.Unit, spec Spec) (*Tree, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if len(clients) < 1 {
		return nil, fmt.Errorf("collective: no nodes")
	}
	t := &Tree{Spec: spec}
	sp := &t.Spec
	for i, c := range clients {
		clk := c.Clock()
		eng := c.Engine()
		r := &router{spec: sp, period: clk.Period(), seen: []sim.Tick{sim.Never, sim.Never}}
		rname := fmt.Sprintf("%s.node[%d].tree", name, i)
		r.u = clk.Add(rname, r)
		nd := &Node{Index: i, router: r}
		nd.Inj = sim.NewChan[Packet](c, r.u, rname+".inj", spec.InjPackets)
		// A result streams into the reception FIFO at the link rate: the
		// client sees it when its last byte is in.
		nd.Rec = sim.NewChan[Packet](r.u, c, rname+".rec", spec.RecPackets, sim.LatencyCycles(spec.PacketCycles()))
		r.inj, r.rec = nd.Inj, nd.Rec
		st := eng.Stats()
		r.combined = st.Counter(rname+".combined", "packets", "packets the ALU combined and sent up (or turned around at the root)")
		r.broadcast = st.Counter(rname+".broadcast", "packets", "results sent down to the children and the node")
		r.mismatches = st.Counter(rname+".mismatches", "packets", "combinations of packets asking for different operations")
		nd.barrier = newBarrier(fmt.Sprintf("%s.node[%d].barrier", name, i), c, sp)
		nd.Arm, nd.Release = nd.barrier.arm, nd.barrier.release
		t.Nodes = append(t.Nodes, nd)
	}
	lat := func(cycles int, clk *sim.Clock) sim.Tick { return sim.Tick(cycles) * clk.Period() }
	for i := 1; i < len(t.Nodes); i++ {
		kid, par := t.Nodes[i], t.Nodes[(i-1)/2]
		l := lat(spec.WireCycles, kid.router.u.Clock())
		up := sim.NewLink[Packet](kid.router.u, par.router.u, fmt.Sprintf("%s.node[%d].tree.up", name, i), spec.BufferPackets, l)
		down := sim.NewLink[Packet](par.router.u, kid.router.u, fmt.Sprintf("%s.node[%d].tree.down", name, i), spec.BufferPackets, l)
		kid.router.up, kid.router.fromUp = up, down
		par.router.fromKids = append(par.router.fromKids, up)
		par.router.toKids = append(par.router.toKids, down)
		par.router.seen = append(par.router.seen, sim.Never)
		bl := lat(spec.BarrierHopCycles, kid.router.u.Clock())
		bup := sim.NewLink[struct{}](kid.barrier.u, par.barrier.u, fmt.Sprintf("%s.node[%d].barrier.up", name, i), 2, bl)
		bdown := sim.NewLink[struct{}](par.barrier.u, kid.barrier.u, fmt.Sprintf("%s.node[%d].barrier.down", name, i), 2, bl)
		kid.barrier.up, kid.barrier.fromUp = bup, bdown
		par.barrier.fromKids = append(par.barrier.fromKids, bup)
		par.barrier.toKids = append(par.barrier.toKids, bdown)
	}
	return t, nil
}

// Depth is the number of tree levels below the root (the hops from the
// deepest node up to it).
func (t *Tree) Depth() int { return bits.Len(uint(len(t.Nodes))) - 1 }

// head reports whether input ch has a packet whose head arrived at least
// a router's pipeline ago, noting when a head arrives.
func (r *router) head(now sim.Tick, slot int, ch *sim.Chan[Packet]) (ready bool, at sim.Tick) {
	if !ch.Valid() {
		r.seen[slot] = sim.Never
		return false, sim.Never
	}
	if r.seen[slot] == sim.Never {
		r.seen[slot] = now
	}
	at = r.seen[slot] + sim.Tick(r.spec.RouterCycles)*r.period
	return at <= now, at
}

// Tick is the router's datapath: combine on the way up, copy on the way
// down.
func (r *router) Tick(now sim.Tick) bool {
	next := sim.Never
	wait := func(t sim.Tick) {
		if t > now && t < next {
			next = t
		}
	}
	pkt := sim.Tick(r.spec.PacketCycles()) * r.period

	// Up: the node's contribution and every child's, combined.
	ok, at := r.head(now, 0, r.inj)
	wait(at)
	for k, ch := range r.fromKids {
		okk, atk := r.head(now, 2+k, ch)
		ok = ok && okk
		wait(atk)
	}
	root := r.up == nil
	if ok {
		if root {
			ok = r.downFree(now)
			wait(r.downBusy)
		} else {
			ok = r.upBusy <= now && r.up.Ready()
			wait(r.upBusy)
		}
	}
	busy := false
	if ok {
		busy = true // the next contributions may be waiting already
		p := r.inj.Recv()
		r.seen[0] = sim.Never
		for k, ch := range r.fromKids {
			q := ch.Recv()
			r.seen[2+k] = sim.Never
			if q.Op != p.Op {
				p.Mismatch = true
				r.mismatches.Inc()
			}
			p.Mismatch = p.Mismatch || q.Mismatch
			p.Op.apply(&p.W, &q.W)
		}
		r.combined.Inc()
		if root {
			r.sendDown(now, p, pkt)
		} else {
			r.up.Send(p)
			r.upBusy = now + pkt
			wait(r.upBusy)
		}
	}

	// Down: a result from the parent, to the children and the node.
	if !root {
		if okd, atd := r.head(now, 1, r.fromUp); okd && r.downFree(now) {
			p := r.fromUp.Recv()
			r.seen[1] = sim.Never
			r.sendDown(now, p, pkt)
			busy = true
		} else {
			wait(atd)
			wait(r.downBusy)
		}
	}
	if busy {
		return true
	}
	if next != sim.Never {
		r.u.WakeAt(next)
	}
	return false
}

// downFree reports whether the result can go to every child and the node.
func (r *router) downFree(now sim.Tick) bool {
	if r.downBusy > now || !r.rec.Ready() {
		return false
	}
	for _, ch := range r.toKids {
		if !ch.Ready() {
			return false
		}
	}
	return true
}

func (r *router) sendDown(now sim.Tick, p Packet, pkt sim.Tick) {
	for _, ch := range r.toKids {
		ch.Send(p)
	}
	r.rec.Send(p)
	r.broadcast.Inc()
	if len(r.toKids) > 0 {
		r.downBusy = now + pkt
	}
}
