package machine

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TopologyTorus joins the nodes by a 3D torus (Spec.Torus): each node's
// NIC wire goes into a network adapter at the node's torus router, which
// cuts every frame into torus packets and puts them back together at the
// destination.
const TopologyTorus = "torus"

// GeminiTorus is a Gemini-class torus of the given size: the Blue Gene/L
// router (virtual cut-through, escape channel, bubble rule) with a Cray
// XE6's figures where they differ. The hop is 100 ns (40 ns of cable and
// serdes, 60 ns of router pipeline: the split is assumed), a link moves
// 4 bytes a cycle of a 1 GHz clock, 4 GB/s a direction (Gemini's X and Z
// links are about 4.7 GB/s raw; the issue asks for "several GB/s"), and
// the reception path 16 bytes a cycle, so that a link, not the adapter,
// limits a stream. The dynamic channels' buffers are Blue Gene/L's 1 KB,
// more than a link's tokens' round trip (4 B × 2 × 40 cycles). The escape
// channel's is 2 KB (GeminiEscapeChunks): every frame goes on it, and on a
// ring it holds a packet, however short, in a full-packet slot until the
// packet's tokens are back. docs/scenarios.md gives the sources.
func GeminiTorus(x, y, z int) torus.Spec {
	s := torus.DefaultSpec(x, y, z)
	s.ClockMHz, s.CyclesPerByte, s.BytesPerCycle = 1000, 1, 4
	s.WireCycles, s.RouterCycles = 40, 60
	s.LocalCyclesPerChunk = 2
	s.VCChunks[torus.VCEscape] = GeminiEscapeChunks
	return s
}

// GeminiEscapeChunks is the escape channel's buffer of a Gemini-class
// torus, in 32-byte chunks: 8 full-packet slots. A ring's escape buffer
// must hold, in slots, the short packets a link sends while a slot's
// tokens go round (a 3-chunk packet every 24 cycles against a slot held
// about 160: wire, pipeline, wire back) and the bubble's two. Blue
// Gene/L's 1 KB, 4 slots, held 7a's AM run at 16 nodes (4 × 2 × 2) to
// 106 µs, with links 35 % busy and the adapters' injection FIFOs full 14
// times as often as at 8 nodes; 1.5 KB gave 69 µs, 2 KB 69 µs, 4 KB 66 µs
// (at 8 nodes, whose rings of two are not rings, 62 µs); 7d's hot spot
// at 16 nodes made 34.1 M accesses/s with 1 KB, 51.9 M with 2 or 4 KB, its
// rate before the ring's slot rule. Gemini's own
// buffers are not in the sources here: assumed.
const GeminiEscapeChunks = 64

// TorusDims is the torus the nodes of a Spec of nodes form when its
// dimensions are not given: the x ≥ y ≥ z with x·y·z = nodes that is the
// nearest to a cube (the smallest largest side, then the largest
// smallest), as a scheduler allocates a block of a torus.
func TorusDims(nodes int) [3]int {
	best := [3]int{nodes, 1, 1}
	for z := 1; z*z*z <= nodes; z++ {
		if nodes%z != 0 {
			continue
		}
		for y := z; y*y <= nodes/z; y++ {
			if nodes/z%y != 0 {
				continue
			}
			x := nodes / z / y
			if x < best[0] || x == best[0] && z > best[2] {
				best = [3]int{x, y, z}
			}
		}
	}
	return best
}

// torusNetwork builds the torus and a network adapter at every router,
// with a wire each way between it and each of its nodes' NICs: the wire
// into the adapter runs in the node's domain, the one back in the
// router's.
func (c *Cluster) torusNetwork() error {
	s := c.Spec
	if s.Rails() > 1 {
		return fmt.Errorf("nics: %d NICs a node on a %s network (one)", s.NICs, TopologyTorus)
	}
	if s.TorusTies != "" && s.TorusTies != TiesSplit && s.TorusTies != TiesPlus {
		return fmt.Errorf("torus: ties %q (%s or %s)", s.TorusTies, TiesSplit, TiesPlus)
	}
	k := max(s.NodesPerRouter, 1)
	if k > MaxNodesPerRouter || s.Nodes%k != 0 {
		return fmt.Errorf("torus: %d nodes a router for %d nodes (1..%d, dividing the nodes)", k, s.Nodes, MaxNodesPerRouter)
	}
	spec := s.Torus
	if spec.Dims == [3]int{} {
		spec.Dims = TorusDims(s.Nodes / k)
	}
	if n := spec.Nodes(); n*k != s.Nodes {
		if k > 1 {
			return fmt.Errorf("torus.dims: %d×%d×%d is %d routers of %d nodes, the cluster has %d", spec.Dims[0], spec.Dims[1], spec.Dims[2], n, k, s.Nodes)
		}
		return fmt.Errorf("torus.dims: %d×%d×%d is %d nodes, the cluster has %d", spec.Dims[0], spec.Dims[1], spec.Dims[2], n, s.Nodes)
	}
	net, err := torus.New(c.Eng.World(), "net.torus", spec)
	if err != nil {
		return err
	}
	c.Torus = net
	for r, nd := range net.Nodes {
		a := &torusAdapter{nd: nd, net: net, k: k, seq: map[int]uint32{}, rx: map[int]*reassembly{}, tiesPlus: s.TorusTies == TiesPlus}
		name := fmt.Sprintf("net.torus.node[%d].adapter", r)
		a.u = nd.Clk.Add(name, a)
		a.ready, a.held = make([]sim.Queue[nic.Frame], k), make([]*nic.Frame, k)
		for slot := range k {
			n := c.Nodes[r*k+slot]
			up, err := nic.NewWire(n.Fabric, fmt.Sprintf("net.up%d", n.ID), s.Wire, n.NIC.Unit(), a.u)
			if err != nil {
				return err
			}
			down, err := nic.NewWire(nd.Clk, fmt.Sprintf("net.down%d", n.ID), s.Wire, a.u, n.NIC.Unit())
			if err != nil {
				return err
			}
			n.NIC.NetOut, n.NIC.NetIn = up.In, down.Out
			n.outs[0] = up
			a.in, a.out = append(a.in, up.Out), append(a.out, down.In)
			c.Wires = append(c.Wires, up, down)
		}
		nd.NotifyReceive(a.u)
		nd.NotifyRoom(a.u)
		st := nd.Eng.Stats()
		a.framesIn = st.Counter(name+".frames_in", "frames", "frames from the NICs cut into torus packets (or, between two nodes of the router, passed across)")
		a.framesOut = st.Counter(name+".frames_out", "frames", "frames put back together and sent to the NICs")
		a.packets = st.Counter(name+".packets", "packets", "torus packets injected")
		a.dropped = st.Counter(name+".dropped", "frames", "frames to a node the torus does not have, dropped as a switch drops them")
		a.waits = st.Counter(name+".fifo_full", "edges", "edges at which the next packet found its injection FIFO full (the frames behind it wait on the wire)")
		a.broken = st.Counter(name+".broken", "packets", "packets out of order for their frame (none with deterministic routing)")
		if k > 1 {
			a.local = st.Counter(name+".local", "frames", "frames between two nodes of this router, passed across without the torus")
		}
		c.adapters = append(c.adapters, a)
	}
	return nil
}

// MaxNodesPerRouter is the most nodes a torus router serves (a Gemini
// ASIC serves two).
const MaxNodesPerRouter = 2

// TorusErrors is the packets the torus's adapters found out of order for
// their frame, over every node: a frame they could not put back together
// (a fault of the network; none is expected).
func (c *Cluster) TorusErrors() uint64 {
	var n uint64
	for _, a := range c.adapters {
		n += a.broken.Value()
	}
	return n
}

// torusAdapter is a node's network adapter on the torus: what comes from
// the NIC's wire it cuts into packets of at most 240 payload bytes and
// writes into an injection FIFO; what the router delivers it puts back
// into frames and sends on the wire to the NIC.
//
// The packets of a frame, and the frames between two nodes, must arrive
// in the order they left: they are routed deterministically (x, then y,
// then z, on the escape channel), so they follow one path, and every
// packet to one destination goes through the same injection FIFO. Each
// packet's software header carries the frame's number between the two
// nodes, the packet's offset in the frame and a last-packet flag; the
// receiving side checks them against what it expects from that source.
//
// Nothing is lost: a frame waits on the wire while the FIFO has no room
// (the wire backpressures the NIC), and the adapter stops taking packets
// from the router while outFrames frames wait for the wire to the NIC
// (the router backpressures the torus).
type torusAdapter struct {
	u   *sim.Unit
	nd  *torus.Node
	net *torus.Network
	k   int // nodes on this router: node k·router + slot
	// tiesPlus leaves every tie to the router (+): TiesPlus.
	tiesPlus bool
	in       []*sim.Chan[nic.Frame] // from each node's NIC's wire, by slot
	out      []*sim.Chan[nic.Frame] // into the wire to each node's NIC
	// nextIn is the slot whose wire is looked at first for a new frame
	// (round-robin over the nodes).
	nextIn int
	held   []*nic.Frame // by slot: a frame for the other node, waiting for room (k > 1)

	// The frame being cut: its length and the bytes already sent.
	cur     nic.Frame
	cutting bool
	curLen  int
	sent    int
	curSlot int // the slot of the node the frame came from
	curSeq  uint32
	// seq is the next frame's number from each slot to each node (slot ·
	// nodes + node; looked up only), rx what is expected next from each
	// source node to each slot (source · k + slot).
	seq     map[int]uint32
	rx      map[int]*reassembly
	ready   []sim.Queue[nic.Frame] // put together, for each slot's NIC
	nextRec int                    // the reception FIFO looked at first

	framesIn, framesOut, packets, dropped, broken, waits *sim.Counter
	local                                                *sim.Counter // k > 1
}

// reassembly is what the adapter expects next from one source node.
type reassembly struct {
	seq uint32 // the frame's number
	off int    // bytes of it received
}

// The torus adapter's choices for a packet halfway round a ring of even
// length (Spec.TorusTies).
const (
	TiesSplit = "split" // + from an even coordinate, − from an odd one (tieHints)
	TiesPlus  = "plus"  // every tie +, the router's choice without a hint
)

// tieHints chooses the direction of each ring a packet crosses halfway
// round, where both ways are as short: + from an even coordinate, − from
// an odd one. Left to the router, every tie goes +, and on a ring of 4
// the + links carry three times the − links' traffic (1 + 2 hops of
// every 3 a node sends). The choice depends on the pair of nodes only, so
// a frame's packets, and the frames between two nodes, keep one path and
// their order. (Blue Gene/L leaves the choice to software, the packet
// header's hint bits; this is the adapter's.)
func tieHints(s torus.Spec, src, dst torus.Coord) [3]int8 {
	var h [3]int8
	for d := 0; d < 3; d++ {
		k := s.Dims[d]
		if k > 2 && k%2 == 0 && (dst[d]-src[d]+k)%k == k/2 && !s.Mesh {
			h[d] = 1
			if src[d]%2 == 1 {
				h[d] = -1
			}
		}
	}
	return h
}

// outFrames is the frames the adapter holds for the NIC before it stops
// taking packets from the router.
const outFrames = 8

// soft header: the frame's number (4 bytes), the packet's offset in it
// (2), flags (1: bit 0 the frame's last packet), the source node's and
// the destination node's slots on their routers (1: source · 16 + slot).
const lastPacket = 1

// zeros is the payload of every packet: its length is what it stands
// for; the frame's fields travel with its last packet (Packet.Tag).
var zeros = make([]byte, torus.MaxPayload)

// Tick moves frames both ways: to the NIC what is put together, from the
// router what it delivered, and the next packet of the frame being cut.
func (a *torusAdapter) Tick(now sim.Tick) bool {
	a.deliver()
	if a.k > 1 {
		a.passHeld()
	}
	a.receive()
	more := a.inject()
	a.deliver() // a frame passed across between two nodes of the router
	for slot := range a.ready {
		more = more || a.ready[slot].Len() > 0 && a.out[slot].Ready()
		if f := a.held[slot]; f != nil && a.ready[f.DstNode%a.k].Len() < outFrames {
			more = true
		}
	}
	return more
}

// deliver sends the frames put together to their NICs.
func (a *torusAdapter) deliver() {
	for slot := range a.ready {
		for a.ready[slot].Len() > 0 && a.out[slot].Ready() {
			a.out[slot].Send(a.ready[slot].Pop())
			a.framesOut.Inc()
		}
	}
}

// room says every slot's NIC can take another frame: the router's
// packets are taken only then (a packet may be for any of them).
func (a *torusAdapter) room() bool {
	for slot := range a.ready {
		if a.ready[slot].Len() >= outFrames {
			return false
		}
	}
	return true
}

// receive takes the packets the router delivered, round the reception
// FIFOs, while fewer than outFrames frames wait for the wire.
func (a *torusAdapter) receive() {
	for k := 0; k < torus.NumRecFIFOs && a.room(); k++ {
		f := (a.nextRec + k) % torus.NumRecFIFOs
		for a.room() {
			p := a.nd.Receive(f)
			if p == nil {
				break
			}
			a.take(p)
		}
	}
	a.nextRec = (a.nextRec + 1) % torus.NumRecFIFOs
}

// take adds packet p to its source's frame, and queues the frame for the
// NIC when p is its last packet.
func (a *torusAdapter) take(p *torus.Packet) {
	srcSlot, slot := int(p.Soft[7]>>4), int(p.Soft[7]&0xf)
	if slot >= a.k {
		a.broken.Inc()
		return
	}
	src := a.net.IndexOf(p.Src)*a.k + srcSlot // the source node
	r := a.rx[src*a.k+slot]
	if r == nil {
		r = &reassembly{}
		a.rx[src*a.k+slot] = r
	}
	seq := binary.LittleEndian.Uint32(p.Soft[0:4])
	off := int(binary.LittleEndian.Uint16(p.Soft[4:6]))
	if seq != r.seq || off != r.off {
		a.broken.Inc()
		// Resynchronise on the packet: the frame it belongs to from here.
		r.seq, r.off = seq, off
	}
	r.off += len(p.Payload)
	if p.Soft[6]&lastPacket == 0 {
		return
	}
	f, ok := p.Tag.(nic.Frame)
	if !ok || r.off != f.Len() || f.DstNode%a.k != slot {
		a.broken.Inc()
	} else {
		a.ready[slot].Push(f)
	}
	r.seq, r.off = seq+1, 0
}

// nextFrame is the slot whose wire has the next frame to take, round
// the slots from nextIn, or −1 for none. A slot whose frame for the other
// node of this router waits for room (held) takes no other.
func (a *torusAdapter) nextFrame() int {
	for i := range a.k {
		slot := (a.nextIn + i) % a.k
		if a.k > 1 && a.held[slot] != nil || !a.in[slot].Valid() {
			continue
		}
		a.nextIn = (slot + 1) % a.k
		return slot
	}
	return -1
}

// passHeld moves the frames held for the other node of this router into
// its queue as it has room.
func (a *torusAdapter) passHeld() {
	for slot, f := range a.held {
		if f != nil && a.ready[f.DstNode%a.k].Len() < outFrames {
			a.ready[f.DstNode%a.k].Push(*f)
			a.local.Inc()
			a.held[slot] = nil
		}
	}
}

// inject writes the next packet of the frame being cut, taking a frame
// from the wire when none is; it reports whether it wrote one.
func (a *torusAdapter) inject() bool {
	if !a.cutting {
		slot := a.nextFrame()
		if slot < 0 {
			return false
		}
		f := a.in[slot].Recv()
		a.framesIn.Inc()
		self := a.nd.Index*a.k + slot
		if f.DstNode < 0 || f.DstNode >= len(a.net.Nodes)*a.k || f.DstNode == self {
			a.dropped.Inc()
			return a.nextFrame() >= 0
		}
		if f.DstNode/a.k == a.nd.Index {
			// To the other node of this router: across, in order; while
			// that NIC's queue is full the frame is held and the wire
			// from its sender waits behind it.
			a.held[slot] = &f
			a.passHeld()
			return true
		}
		a.cur, a.cutting, a.curLen, a.sent, a.curSlot = f, true, f.Len(), 0, slot
		key := slot*len(a.net.Nodes)*a.k + f.DstNode
		a.curSeq = a.seq[key]
		a.seq[key] = a.curSeq + 1
	}
	n := min(a.curLen-a.sent, torus.MaxPayload)
	p := &torus.Packet{Src: a.nd.At, Dst: a.net.CoordOf(a.cur.DstNode / a.k), Payload: zeros[:n]}
	if !a.tiesPlus {
		p.Hint = tieHints(a.net.Spec, p.Src, p.Dst)
	}
	binary.LittleEndian.PutUint32(p.Soft[0:4], a.curSeq)
	binary.LittleEndian.PutUint16(p.Soft[4:6], uint16(a.sent))
	p.Soft[7] = byte(a.curSlot<<4 | a.cur.DstNode%a.k)
	last := a.sent+n == a.curLen
	if last {
		p.Soft[6] = lastPacket
		p.Tag = a.cur
	}
	// Every packet to one node through one FIFO: they stay in order.
	err := a.nd.Inject(a.cur.DstNode%a.net.Spec.InjFIFOs, p)
	if err == torus.ErrFIFOFull {
		a.waits.Inc()
		return false // woken when the router frees room
	}
	if err != nil {
		// The frame cannot be carried (it never is: its destination was
		// checked); drop it rather than stop the adapter.
		a.dropped.Inc()
		a.cutting = false
		return true
	}
	a.packets.Inc()
	a.sent += n
	if last {
		a.cutting = false
		a.cur = nic.Frame{}
	}
	return true
}
