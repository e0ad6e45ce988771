// Package torus models the Blue Gene/L torus network: an X×Y×Z torus (or
// mesh) of routers, each with six bidirectional links, carrying packets of
// 32-byte chunks by virtual cut-through with token flow control, on two
// dynamic virtual channels, a deterministic escape channel kept free of
// deadlock by the bubble rule, and a high-priority channel. Packets are
// routed deterministically (x, then y, then z: in order) or minimally
// adaptively, chosen per packet; the deposit bit leaves a copy at every
// node along a line. The message layer owns the injection and reception
// FIFOs (Node.Inject, Node.Receive).
//
// Every node is a domain of the simulation and every link a sim link, so a
// torus runs on any number of goroutines with the same results.
package torus

import (
	"errors"
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Network is a torus of nodes, each a domain with its clock and router.
type Network struct {
	Spec  Spec
	Name  string
	Nodes []*Node
	// Watch, if set before the run, is told of every packet as it starts
	// on a link: the node it leaves and the output. A measurement only
	// (where packets go); it must not change the packet. It is called in
	// the sending node's domain, so with several goroutines it must keep
	// what it notes per node.
	Watch func(node int, o Port, p *Packet)
}

// Node is one node's side of the torus: its router and FIFOs, in its own
// domain. The message layer's blocks go in Eng on Clk.
type Node struct {
	Index  int
	At     Coord
	Eng    *sim.Engine
	Clk    *sim.Clock
	Router *Router
	net    *Network
}

// ErrFIFOFull is Inject's answer when the injection FIFO has no room for
// the packet yet: the message layer tries again later.
var ErrFIFOFull = errors.New("torus: injection FIFO full")

// New builds the torus called name (the prefix of every block's name) in
// world w: a domain per node ("<name>.node<i>") with a clock of the
// spec's frequency and a router, and a pair of links (packets one way,
// tokens back) for each direction of each link. Nodes are numbered
// lexically, x fastest: i = x + X·(y + Y·z).
func New(w *sim.World, name string, spec Spec) (*Network, error) {
	return build(w, name, spec, func(r *Router) sim.Block { return r })
}

// build is New with the block that runs each router's datapath (the
// equivalence test runs a reference datapath on the same state).
func build(w *sim.World, name string, spec Spec, datapath func(*Router) sim.Block) (*Network, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := sim.CheckName(name); err != nil {
		return nil, fmt.Errorf("torus: %w", err)
	}
	n := &Network{Spec: spec, Name: name, Nodes: make([]*Node, spec.Nodes())}
	sp := &n.Spec
	period := spec.Period()
	for i := range n.Nodes {
		eng := w.Domain(fmt.Sprintf("%s.node%d", name, i))
		clk := eng.NewClock("clk", period, 0)
		nd := &Node{Index: i, At: n.CoordOf(i), Eng: eng, Clk: clk, net: n}
		r := &Router{spec: sp, net: n, node: i, at: nd.At, period: period, minTokens: 1 << 30, eligAt: sim.Never}
		rname := fmt.Sprintf("%s.node[%d].router", name, i)
		for o := range r.need {
			r.need[o] = [NumVCs]int{noNeed, noNeed, noNeed, noNeed}
		}
		r.u = clk.Add(rname, datapath(r))
		r.chunkPS = sim.Tick(spec.ChunkCycles()) * period
		r.localPS = sim.Tick(spec.LocalCyclesPerChunk) * period
		st := eng.Stats()
		for k := 0; k < spec.Groups*spec.GroupInj(); k++ {
			f := newFIFO(st, fmt.Sprintf("%s.inj[%d]", rname, k), spec.InjChunks)
			f.reader = r.u
			src := int(NumLinkPorts)*NumVCs + k
			f.onHead = func(vis sim.Tick) { r.headAt(src, vis+r.hopDelay()) }
			r.Inj = append(r.Inj, f)
		}
		for k := range r.Inj {
			if k%spec.GroupInj() >= spec.InjFIFOs {
				r.prio.add(int(NumLinkPorts)*NumVCs + k)
			}
		}
		for o := 0; o < int(NumLinkPorts); o++ {
			r.prio.add(o*NumVCs + VCPriority)
		}
		r.Rec = make([]*FIFO, spec.Groups*NumRecFIFOs)
		r.rec = make([]stream, len(r.Rec))
		for k := range r.rec {
			r.strm[int(NumLinkPorts)+k] = &r.rec[k]
		}
		for k := range r.Rec {
			r.Rec[k] = newFIFO(st, fmt.Sprintf("%s.rec[%d]", rname, k), spec.RecChunks)
			r.Rec[k].writer = r.u
			// Space freed at t is the router's from the next edge.
			r.Rec[k].onPop = func(t sim.Tick) {
				r.popped |= 1 << k
				r.wakeAlloc(t + 1)
			}
		}
		r.delivered = st.Counter(rname+".delivered", "packets", "packets written into a reception FIFO at their destination")
		r.deposited = st.Counter(rname+".deposited", "packets", "copies left by deposit-bit packets passing through")
		r.forwarded = st.Counter(rname+".forwarded", "packets", "packets passed on to another router")
		r.escaped = st.Counter(rname+".escaped", "packets", "adaptive packets that took the escape channel (no dynamic channel had room)")
		nd.Router = r
		n.Nodes[i] = nd
	}
	lat := sim.Tick(spec.WireCycles) * period
	depth := 2*spec.WireCycles/spec.PacketCycles(1) + 2
	for i, nd := range n.Nodes {
		r := nd.Router
		for o := Port(0); o < NumLinkPorts; o++ {
			j, ok := n.neighbour(i, o)
			if !ok {
				continue
			}
			peer := n.Nodes[j].Router
			lname := fmt.Sprintf("%s.node[%d].%s", name, i, o)
			op := &outPort{}
			op.link = sim.NewLink[Packet](r.u, peer.u, lname, depth, lat)
			op.tokens = sim.NewLink[Tokens](peer.u, r.u, lname+"_tokens", 2*spec.WireCycles+2, lat)
			for vc := range op.avail {
				op.avail[vc] = spec.VCChunks[vc]
			}
			st := nd.Eng.Stats()
			op.packets = st.Counter(lname+".packets", "packets", "packets sent on the link")
			op.payload = st.Counter(lname+".payload_bytes", "bytes", "payload bytes sent on the link")
			op.wireBytes = st.Counter(lname+".wire_bytes", "bytes", "bytes on the wire: chunks and per-packet overhead")
			op.busyPS = st.Counter(lname+".busy_ps", "ps", "time the link was sending")
			r.out[o] = op
			r.strm[o] = &op.s
			peer.in[o.opposite()] = &inPort{port: o.opposite(), link: op.link, tokens: op.tokens}
			in := o.opposite()
			op.link.OnArrive(func() { peer.arrived |= 1 << in })
			op.tokens.OnArrive(func() { r.arrived |= 1 << (NumLinkPorts + o) })
		}
	}
	for _, nd := range n.Nodes {
		nd.Router.probes()
	}
	return n, nil
}

// CoordOf is node i's place.
func (n *Network) CoordOf(i int) Coord {
	d := n.Spec.Dims
	return Coord{i % d[0], i / d[0] % d[1], i / (d[0] * d[1])}
}

// IndexOf is the node at c.
func (n *Network) IndexOf(c Coord) int {
	d := n.Spec.Dims
	return c[0] + d[0]*(c[1]+d[1]*c[2])
}

// neighbour is the node output o of node i leads to, if it has a link.
func (n *Network) neighbour(i int, o Port) (int, bool) {
	c := n.CoordOf(i)
	d := o.dim()
	size := n.Spec.Dims[d]
	step := 1
	if o%2 == 1 {
		step = -1
	}
	v := c[d] + step
	if v < 0 || v >= size {
		if !n.Spec.wraps(d) {
			return 0, false
		}
		v = (v + size) % size
	}
	if v == c[d] {
		return 0, false
	}
	c[d] = v
	return n.IndexOf(c), true
}

// Hops is the number of links a packet from a to b crosses on the
// shortest way (the Manhattan distance on the torus).
func (n *Network) Hops(a, b Coord) int {
	h := 0
	for d := 0; d < 3; d++ {
		k := b[d] - a[d]
		if k < 0 {
			k = -k
		}
		if n.Spec.wraps(d) {
			k = min(k, n.Spec.Dims[d]-k)
		}
		h += k
	}
	return h
}

// Inject writes p into injection FIFO fifo of the node (of each set of
// Spec.GroupInj FIFOs, the first InjFIFOs are normal, the rest
// high-priority: p.Priority must match).
// It returns ErrFIFOFull when the FIFO has no room for the packet now,
// and an error naming the problem for a packet the network cannot carry.
// It must be called from a block of the node's domain (or before the
// run). The router sees the packet from the next edge.
func (nd *Node) Inject(fifo int, p *Packet) error {
	if err := nd.Check(fifo, p); err != nil {
		return err
	}
	sp := &nd.net.Spec
	r := nd.Router
	f := r.Inj[fifo]
	now := nd.Eng.Now()
	if f.Room(now) < p.Chunks() {
		return ErrFIFOFull
	}
	p.chunks = uint8(p.Chunks())
	p.dir = sp.directions(p, nd.At)
	p.vc, p.inPort, p.Hops = 0, uint8(Local), 0
	p.InjectedAt = now
	if p.ID == 0 {
		p.Txn = nd.Eng.NewOp("torus_packet", r.u.Name())
	}
	f.push(p, now, now+1)
	return nil
}

// Check returns the error Inject would give for a packet the network
// cannot carry or a FIFO that is not there (not for a full FIFO), so that
// a message layer can refuse a packet before it spends time writing it.
func (nd *Node) Check(fifo int, p *Packet) error {
	sp := &nd.net.Spec
	r := nd.Router
	if fifo < 0 || fifo >= len(r.Inj) {
		return fmt.Errorf("torus: injection FIFO %d of %d", fifo, len(r.Inj))
	}
	if pri := fifo%sp.GroupInj() >= sp.InjFIFOs; pri != p.Priority {
		kind := "normal"
		if pri {
			kind = "high-priority"
		}
		return fmt.Errorf("torus: injection FIFO %d is for %s packets", fifo, kind)
	}
	return sp.checkPacket(p, nd.At)
}

// Room is the chunks injection FIFO fifo has room for now.
func (nd *Node) Room(fifo int) int { return nd.Router.Inj[fifo].Room(nd.Eng.Now()) }

// Receive takes the packet at the head of reception FIFO fifo, or returns
// nil when none has arrived. FIFOs 0 to 5 hold the packets that came in on
// the ports XPlus … ZMinus; FIFO 6 the high-priority ones; on a torus of
// two FIFO sets, FIFOs 7 to 13 are the second set's, in the same order.
func (nd *Node) Receive(fifo int) *Packet {
	f := nd.Router.Rec[fifo]
	now := nd.Eng.Now()
	if f.head(now) == nil {
		return nil
	}
	return f.pop(now)
}

// Peek returns the packet at the head of reception FIFO fifo without
// taking it (nil when none has arrived).
func (nd *Node) Peek(fifo int) *Packet { return nd.Router.Rec[fifo].head(nd.Eng.Now()) }

// NumRecFIFOs is the number of reception FIFOs of a set.
const NumRecFIFOs = int(NumLinkPorts) + 1

// Groups is the node's number of FIFO sets.
func (nd *Node) Groups() int { return nd.net.Spec.Groups }

// NotifyReceive wakes u (a block of the node's domain) whenever a packet
// becomes visible in one of the reception FIFOs of set 0: how a message
// layer avoids polling every cycle.
func (nd *Node) NotifyReceive(u *sim.Unit) { nd.NotifyReceiveGroup(0, u) }

// NotifyReceiveGroup is NotifyReceive for the reception FIFOs of set g.
func (nd *Node) NotifyReceiveGroup(g int, u *sim.Unit) {
	for _, f := range nd.Router.Rec[g*NumRecFIFOs : (g+1)*NumRecFIFOs] {
		f.reader = u
	}
}

// NextVisible is the time from which the earliest packet held in one of
// the node's reception FIFOs of set 0 is visible to the message layer
// (sim.Never: they are empty). A layer that sleeps while it has nothing
// to do asks it when NotifyReceive wakes it.
func (nd *Node) NextVisible() sim.Tick { return nd.NextVisibleGroup(0) }

// NextVisibleGroup is NextVisible for the reception FIFOs of set g.
func (nd *Node) NextVisibleGroup(g int) sim.Tick {
	t := sim.Never
	for _, f := range nd.Router.Rec[g*NumRecFIFOs : (g+1)*NumRecFIFOs] {
		if f.q.Len() > 0 {
			t = min(t, f.q.Front().vis)
		}
	}
	return t
}

// NotifyRoom wakes u whenever the router frees space in one of the node's
// injection FIFOs.
func (nd *Node) NotifyRoom(u *sim.Unit) {
	for _, f := range nd.Router.Inj {
		f.writer = u
	}
}
