package mpi

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/verbs"
)

// RDMAConfig configures the transport over the RDMA NICs.
type RDMAConfig struct {
	// Slots is the number of eager receive buffers a rank keeps posted
	// for each other node (the credits that node's ranks share; default 16).
	Slots int
	// Bounces is the number of registered send buffers of a rank (default 32).
	Bounces int
	// Batch is the most packets one poll takes (default 8).
	Batch  int
	Params Params // zero fields: DefaultRDMAParams
}

// DefaultRDMAParams: eager up to 8 kB (SEND into a posted receive buffer),
// then RPUT (RDMA WRITE into the receive buffer) in chunks of 64 kB at most,
// 4 in flight. The run's chunk is smaller on slow links (see chunkLimit).
func DefaultRDMAParams() Params {
	return Params{EagerLimit: 8192, Rendezvous: RendezvousPut, ChunkBytes: 64 << 10, Pipeline: 4}
}

// chunkLimit is the default chunk on a cluster: the largest power of two
// (at most 64 kB) the wire moves in three quarters of the NIC's
// retransmission timeout (on 1 GbE with the 200 µs timeout, 16 kB). The
// NIC now shows a long message's progress (an ACK request every 16
// packets, every READ response restarting the timer), so larger chunks
// work; the bound stays as a conservative default that keeps a chunk's
// completion within one timeout.
func chunkLimit(c *machine.Cluster) int {
	rate := c.Spec.Wire.RateMbps // bits per µs
	bytes := uint64(c.Spec.NIC.RetransmitPS) * rate / 8 / 1_000_000 * 3 / 4
	n := 64 << 10
	for n > 4096 && uint64(n) > bytes {
		n >>= 1
	}
	return n
}

func (c RDMAConfig) withDefaults() RDMAConfig {
	if c.Slots == 0 {
		c.Slots = 16
	}
	if c.Bounces == 0 {
		c.Bounces = 32
	}
	if c.Batch == 0 {
		c.Batch = 8
	}
	c.Params = fillParams(c.Params, DefaultRDMAParams())
	return c
}

// rdmaHeaderBytes precede the payload in a SEND.
const rdmaHeaderBytes = 64

// rdmaCQN is the first receive completion queue number: a rank on core k
// has CQ rdmaCQN+k, which every one of its QPs reports receives to.
const rdmaCQN = 0x4000

// RDMA is the transport over the NICs between ranks of different nodes. A
// rank on core k of node b receives on the connected QPs of core k (node b
// to every other node), whose receive completions all go to one completion
// queue of its own, and it sends to a rank on core j of another node on
// its node's QP of core j (processes of one node share that QP, as verbs
// lets them). Packets are SENDs of a 64-byte header and the payload from a
// registered bounce buffer into one of the receiver's posted buffers;
// flow control is by credits: a receiver writes how many buffers it has
// posted for a node into a word of that node's memory (an RDMA WRITE per
// half of them re-posted), and that node's ranks send while the count is
// above what they have sent. Put and Get are RDMA WRITE and READ.
func RDMA(cfg RDMAConfig) TransportMaker {
	return func(s *Setup) (Transport, error) {
		c := s.Cluster
		if cfg.Params.ChunkBytes == 0 {
			cfg.Params.ChunkBytes = chunkLimit(c)
		}
		cfg := cfg.withDefaults()
		switch {
		case cfg.Slots < 2 || cfg.Slots > c.Spec.SQSize:
			return nil, fmt.Errorf("rdma: %d receive slots per node, want 2..%d (the QPs' receive queue)", cfg.Slots, c.Spec.SQSize)
		case cfg.Bounces < 1:
			return nil, fmt.Errorf("rdma: %d bounce buffers", cfg.Bounces)
		case cfg.Batch < 1:
			return nil, fmt.Errorf("rdma: poll batch %d", cfg.Batch)
		}
		if err := cfg.Params.validate("rdma", cfg.Params.EagerLimit); err != nil {
			return nil, err
		}
		// The NIC reads a larger payload in turns as its PCIe read tags
		// come back; the bound keeps a chunk's reads within half the tags,
		// so the other work requests in flight still find tags.
		ns := c.Spec.NIC
		maxWR := (1 << max(ns.TagBits, 5)) * ns.Sizes.MRRS / 2
		if cfg.Params.ChunkBytes > maxWR {
			return nil, fmt.Errorf("rdma: chunks of %d bytes, want at most %d (half the NIC's read tags × MRRS)", cfg.Params.ChunkBytes, maxWR)
		}
		if rdmaHeaderBytes+cfg.Params.EagerLimit > maxWR {
			return nil, fmt.Errorf("rdma: eager limit %d, want at most %d", cfg.Params.EagerLimit, maxWR-rdmaHeaderBytes)
		}
		return newRDMA(s, cfg)
	}
}

type rdmaTransport struct {
	cfg    RDMAConfig
	c      *machine.Cluster
	places []Place
	used   []bool     // nodes with ranks
	credit [][]uint64 // [node][rank]: the word of node's memory where rank's posted count for it lands
	sent   [][]uint64 // [node][rank]: SENDs node's ranks made to rank (driver state, shared by them)
	slot   int        // bytes per receive buffer
	ranks  []*rdmaRank
}

// rdmaRank is what the transport sets up for a rank before the run.
type rdmaRank struct {
	cqBase  uint64
	cqSize  int
	slots   []uint64 // per source node: Slots receive buffers
	credSrc uint64   // per source node: the word the credit WRITE reads
	bounce  []uint64
	qpnNode map[uint32]int
}

var rw = iommu.Perm{Bits: pte.R | pte.W}

func newRDMA(s *Setup, cfg RDMAConfig) (*rdmaTransport, error) {
	c := s.Cluster
	nn := len(c.Nodes)
	t := &rdmaTransport{cfg: cfg, c: c, places: s.Places, used: make([]bool, nn), credit: make([][]uint64, nn),
		sent: make([][]uint64, nn), slot: rdmaHeaderBytes + cfg.Params.EagerLimit, ranks: make([]*rdmaRank, len(s.Places))}
	t.slot = (t.slot + 63) &^ 63
	for _, p := range s.Places {
		t.used[p.Node] = true
	}
	peers := 0
	for n := range t.used {
		if t.used[n] {
			peers++
		}
	}
	peers-- // other nodes with ranks
	for n, u := range t.used {
		if !u {
			continue
		}
		node := c.Nodes[n]
		size := uint64(8 * len(s.Places))
		base := node.Alloc(size)
		if err := node.Register(base, size, rw); err != nil {
			return nil, err
		}
		t.credit[n] = make([]uint64, len(s.Places))
		for r := range s.Places {
			t.credit[n][r] = base + uint64(8*r)
		}
		t.sent[n] = make([]uint64, len(s.Places))
	}
	if peers == 0 {
		return t, nil
	}
	if err := c.RequirePerPeerReceive("the MPI RDMA transport"); err != nil {
		return nil, err
	}
	alloc := func(node *machine.Node, size uint64) (uint64, error) {
		a := node.Alloc(size)
		return a, node.Register(a, size, rw)
	}
	for r, p := range s.Places {
		node := c.Nodes[p.Node]
		x := &rdmaRank{cqSize: peers * cfg.Slots, slots: make([]uint64, nn), qpnNode: map[uint32]int{}}
		var err error
		if x.cqBase, err = alloc(node, uint64(x.cqSize*nic.CQESize)); err != nil {
			return nil, err
		}
		if x.credSrc, err = alloc(node, uint64(8*nn)); err != nil {
			return nil, err
		}
		cqn := uint32(rdmaCQN + p.Core)
		if err := node.NIC.CreateCQ(nic.CQConfig{CQN: cqn, Base: x.cqBase, Size: x.cqSize,
			MSIAddr: 0xfee0_0000 | uint64(p.Node)<<12, MSIData: 0x90 + uint32(p.Core), Moderation: nic.Moderation{Count: 1}}); err != nil {
			return nil, err
		}
		for a, u := range t.used {
			if !u || a == p.Node {
				continue
			}
			if x.slots[a], err = alloc(node, uint64(cfg.Slots*t.slot)); err != nil {
				return nil, err
			}
			qp := node.QP(a, p.Core)
			if err := node.NIC.SetRecvCQ(qp.QPN, cqn); err != nil {
				return nil, err
			}
			x.qpnNode[qp.QPN] = a
		}
		b, err := alloc(node, uint64(cfg.Bounces*t.slot))
		if err != nil {
			return nil, err
		}
		for i := 0; i < cfg.Bounces; i++ {
			x.bounce = append(x.bounce, b+uint64(i*t.slot))
		}
		t.ranks[r] = x
	}
	return t, nil
}

func (t *rdmaTransport) Name() string                { return "rdma" }
func (t *rdmaTransport) Params() Params              { return t.cfg.Params }
func (t *rdmaTransport) Reaches(from, to Place) bool { return from.Node != to.Node }

func (t *rdmaTransport) Open(e Env) (Endpoint, error) {
	x := t.ranks[e.Rank]
	nn := len(t.c.Nodes)
	ep := &rdmaEP{t: t, x: x, env: e, ctx: make([]*verbs.Ctx, t.c.Spec.Cores), posted: make([]uint64, nn), consumed: make([]uint64, nn),
		credited: make([]uint64, nn), free: append([]uint64(nil), x.bounce...),
		ops: map[int]*verbs.Posted{}, buf: make([]byte, t.slot)}
	// Post every receive buffer, then tell each node how many.
	for a, u := range t.used {
		if !u || a == e.Place.Node {
			continue
		}
		ep.repost(a, t.cfg.Slots)
		ep.credit(a)
	}
	return ep, nil
}

type rdmaEP struct {
	t        *rdmaTransport
	x        *rdmaRank
	env      Env
	ctx      []*verbs.Ctx  // by core: the QPs of that core
	cqDone   uint64        // receive completions consumed
	posted   []uint64      // per source node: receive buffers posted
	consumed []uint64      // per source node: messages taken
	credited []uint64      // per source node: the count last written to it
	free     []uint64      // bounce buffers
	tr       verbs.Tracker // this rank's work requests until their completions are taken
	ops      map[int]*verbs.Posted
	nextOp   int
	buf      []byte
}

func (e *rdmaEP) on(core int) *verbs.Ctx {
	if e.ctx[core] == nil {
		e.ctx[core] = &verbs.Ctx{N: e.env.Node, P: e.env.Proc, Core: core}
	}
	return e.ctx[core]
}

func (e *rdmaEP) MaxPayload() int { return e.t.cfg.Params.EagerLimit }

// repost posts the next n receive buffers for node a with one doorbell:
// posting index i uses slot i mod Slots (buffers are consumed and
// re-posted in order).
func (e *rdmaEP) repost(a, n int) {
	addrs := make([]uint64, n)
	for k := range addrs {
		i := e.posted[a] + uint64(k)
		addrs[k] = e.x.slots[a] + (i%uint64(e.t.cfg.Slots))*uint64(e.t.slot)
	}
	e.on(e.env.Place.Core).PostRecvs(a, addrs, e.t.slot)
	e.posted[a] += uint64(n)
}

// credit writes the posted count for node a into that node's word.
func (e *rdmaEP) credit(a int) {
	src := e.x.credSrc + uint64(8*a)
	e.env.Proc.Store64(src, e.posted[a])
	e.credited[a] = e.posted[a]
	wr := e.on(e.env.Place.Core).Put(a, src, e.t.credit[a][e.env.Rank], 8)
	e.tr.Track(verbs.Conn{Node: a, Core: e.env.Place.Core}, wr, 0)
}

// reap takes the completions of connection k's oldest work requests of
// this rank (completions come in posting order).
func (e *rdmaEP) reap(k verbs.Conn) bool { return e.tr.Reap(k, e.on, e.taken) }

func (e *rdmaEP) reapAll() bool { return e.tr.ReapAll(e.on, e.taken) }

// taken is a work request done: data moved, its bounce buffer free again.
func (e *rdmaEP) taken(p *verbs.Posted) {
	e.env.Moved()
	if p.Bounce != 0 {
		e.free = append(e.free, p.Bounce)
	}
}

func (e *rdmaEP) Send(dst int, h *Header, src uint64, n int) bool {
	p := e.env.Proc
	d := e.t.places[dst]
	me := e.env.Place.Node
	if n > e.MaxPayload() {
		panic(fmt.Sprintf("mpi: a packet of %d bytes over rdma (at most %d)", n, e.MaxPayload()))
	}
	// The load yields the core: the node's other ranks may take credits
	// meanwhile, so the count is read after it, and the credit taken at
	// once, before anything else yields (and given back on a refusal).
	credit := p.Load64(e.t.credit[me][dst])
	if credit <= e.t.sent[me][dst] {
		return false // no credit: the receiver has not re-posted yet
	}
	e.t.sent[me][dst]++
	if len(e.free) == 0 {
		e.reapAll()
		if len(e.free) == 0 {
			e.t.sent[me][dst]--
			return false
		}
	}
	x := e.on(d.Core)
	if x.SQFree(d.Node) < 2 {
		e.reapAll()
		if x.SQFree(d.Node) < 2 {
			e.t.sent[me][dst]--
			return false
		}
	}
	b := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	buf := e.buf[:rdmaHeaderBytes+n]
	clear(buf[:rdmaHeaderBytes])
	w := h.Pack()
	for i, v := range w {
		binary.LittleEndian.PutUint64(buf[8*i:], v)
	}
	if n > 0 {
		p.Read(src, buf[rdmaHeaderBytes:])
	}
	p.Write(b, buf)
	wr := x.Send(d.Node, b, len(buf))
	e.tr.Track(verbs.Conn{Node: d.Node, Core: d.Core}, wr, b)
	return true
}

func (e *rdmaEP) Poll(deliver func(h *Header, p Payload)) (int, bool) {
	worked := false
	if e.tr.Pending() > 0 {
		worked = e.reapAll()
	}
	p := e.env.Proc
	n := 0
	for n < e.t.cfg.Batch {
		if e.x.cqSize == 0 {
			break
		}
		addr := e.x.cqBase + (e.cqDone%uint64(e.x.cqSize))*nic.CQESize
		if p.Load64(addr+24) != e.cqDone+1 {
			break
		}
		e.cqDone++
		var b [nic.CQESize]byte
		p.Read(addr, b[:])
		cqe := nic.ParseCQE(b[:])
		a, ok := e.x.qpnNode[uint32(cqe.Value)]
		if !ok {
			panic(fmt.Sprintf("rank %d: a receive completion of no connection of its own: %+v", e.env.Rank, cqe))
		}
		if cqe.Status != nic.StatusOK {
			// The connection is dead (its QP is in the error state): the
			// rank cannot receive from that node any more.
			panic(fmt.Sprintf("the RDMA connection from node %d failed: a receive completed with %s (%s)",
				a, nic.StatusText(cqe.Status), e.env.Node.Cluster().TransportReport(2)))
		}
		slot := e.x.slots[a] + (cqe.WRID%uint64(e.t.cfg.Slots))*uint64(e.t.slot)
		var hb [rdmaHeaderBytes]byte
		p.Read(slot, hb[:])
		var w [HeaderWords]uint64
		for i := range w {
			w[i] = binary.LittleEndian.Uint64(hb[8*i:])
		}
		h := Unpack(&w)
		n++
		deliver(&h, Payload{Addr: slot + rdmaHeaderBytes, Len: h.Len})
		// Consumed buffers are re-posted half the slots at a time, and the
		// new count written to the sending node (its credits).
		e.consumed[a]++
		if k := e.consumed[a] + uint64(e.t.cfg.Slots) - e.posted[a]; k >= uint64(max(e.t.cfg.Slots/2, 1)) {
			e.repost(a, int(k))
			e.credit(a)
		}
	}
	return n, worked
}

func (e *rdmaEP) Put(dst int, local, remote uint64, n int) (int, bool) {
	d := e.t.places[dst]
	return e.rma(d, func(x *verbs.Ctx) verbs.WR { return x.Put(d.Node, local, remote, n) })
}

func (e *rdmaEP) Get(src int, local, remote uint64, n int) (int, bool) {
	d := e.t.places[src]
	return e.rma(d, func(x *verbs.Ctx) verbs.WR { return x.Get(d.Node, local, remote, n) })
}

// rma posts a WRITE or READ on the QP towards the peer's core (the one its
// packets from this node take, so a FIN sent after a put follows its data).
func (e *rdmaEP) rma(d Place, post func(*verbs.Ctx) verbs.WR) (int, bool) {
	x := e.on(d.Core)
	if x.SQFree(d.Node) < 2 {
		e.reapAll()
		if x.SQFree(d.Node) < 2 {
			return 0, false
		}
	}
	rec := e.tr.Track(verbs.Conn{Node: d.Node, Core: d.Core}, post(x), 0)
	e.nextOp++
	e.ops[e.nextOp] = rec
	return e.nextOp, true
}

func (e *rdmaEP) Done(op int) (bool, error) {
	rec := e.ops[op]
	if rec == nil {
		return true, nil
	}
	if !rec.Done {
		e.reap(rec.Conn)
	}
	if !rec.Done {
		return false, nil
	}
	delete(e.ops, op)
	return true, rec.Err
}

func (e *rdmaEP) Busy() bool { return e.tr.Pending() > 0 }
