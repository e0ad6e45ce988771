package lcp

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// HeaderBytes precede an active message's payload in its SEND: a word of
// handler id, header length, source rank and payload length, then up to
// MaxHeader bytes of the protocol's header.
const (
	HeaderBytes = 64
	MaxHeader   = HeaderBytes - 8
)

// Payload is an arrived message's data while its handler runs: Len bytes
// at Addr in the receiving node's memory (the receive slot; gone once the
// handler returns).
type Payload struct {
	Addr uint64
	Len  int
}

// Handler runs an active message on arrival, to completion: it must take
// what it needs from the header and payload before returning, and never
// moves bulk data itself (it changes requests' state; the progress engine
// does the rest).
type Handler func(t *Iface, src int, hdr []byte, p Payload)

// Iface is a process's transport endpoint on one rail: the active-message
// and tag API and the RDMA operations over NIC Rail's verbs. A SEND to the
// rank on core k of node b goes on this node's rail QP of core k towards
// b, into one of the receive buffers that rank keeps posted for this node
// (Config.Slots); flow control is by credits: a receiver writes how many
// buffers it has posted for a node into a word of that node's memory (an
// RDMA WRITE on the same rail), and that node's ranks send while the count
// is above what they have sent.
type Iface struct {
	Rail     int
	p        *Proc
	slots    []uint64 // per source node: the receive buffers
	credSrc  uint64   // per source node: the word its credit WRITE reads
	posted   []uint64 // per source node: buffers posted
	consumed []uint64 // per source node: messages taken
	free     []uint64 // bounce buffers
	ctx      []*verbs.Ctx
	tr       verbs.Tracker // work requests until their completions are taken
	unit     matchUnit
	buf      []byte
	// arrivedAt is when the message whose handler runs completed in the
	// NIC (matching on arrival), else the poll's time.
	arrivedAt sim.Tick
}

var rw = iommu.Perm{Bits: pte.R | pte.W}

// alloc takes registered memory of the node (pinned and in the IOMMU
// domain every NIC of the node shares).
func alloc(n *machine.Node, size uint64) (uint64, error) {
	a := n.Alloc(size)
	return a, n.Register(a, max(size, 1), rw)
}

// newIface sets up rank r's endpoint on rail (before the run: memory).
func newIface(p *Proc, rail int) (*Iface, error) {
	w := p.w
	nn := len(w.c.Nodes)
	t := &Iface{Rail: rail, p: p, slots: make([]uint64, nn), posted: make([]uint64, nn), consumed: make([]uint64, nn),
		ctx: make([]*verbs.Ctx, w.c.Spec.Cores), buf: make([]byte, w.slot)}
	n := p.node
	var err error
	if t.credSrc, err = alloc(n, uint64(8*nn)); err != nil {
		return nil, err
	}
	for a, u := range w.used {
		if u && a != n.ID {
			if t.slots[a], err = alloc(n, uint64(w.cfg.Slots*w.slot)); err != nil {
				return nil, err
			}
		}
	}
	b, err := alloc(n, uint64(w.cfg.Bounces*w.slot))
	if err != nil {
		return nil, err
	}
	for i := 0; i < w.cfg.Bounces; i++ {
		t.free = append(t.free, b+uint64(i*w.slot))
	}
	return t, nil
}

// open posts every receive buffer and tells each node how many (in the
// process: costed).
func (t *Iface) open() {
	for a, u := range t.p.w.used {
		if u && a != t.p.node.ID {
			t.repost(a, t.p.w.cfg.Slots)
			t.credit(a)
		}
	}
}

// on is the verbs of this rail on the QPs of core k (towards the ranks on
// core k of the other nodes).
func (t *Iface) on(core int) *verbs.Ctx {
	if t.ctx[core] == nil {
		t.ctx[core] = (&verbs.Ctx{N: t.p.node, P: t.p.cp, Core: core}).OnRail(t.Rail)
	}
	return t.ctx[core]
}

// repost posts the next n receive buffers for node a with one doorbell:
// posting index i uses slot i mod Slots (buffers are consumed and
// re-posted in order).
func (t *Iface) repost(a, n int) {
	w := t.p.w
	addrs := make([]uint64, n)
	for k := range addrs {
		i := t.posted[a] + uint64(k)
		addrs[k] = t.slots[a] + (i%uint64(w.cfg.Slots))*uint64(w.slot)
	}
	t.on(t.p.place.Core).PostRecvs(a, addrs, w.slot)
	t.posted[a] += uint64(n)
}

// credit writes the posted count for node a into that node's word.
func (t *Iface) credit(a int) {
	src := t.credSrc + uint64(8*a)
	t.p.cp.Store64(src, t.posted[a])
	wr := t.on(t.p.place.Core).Put(a, src, t.p.w.credit[a][t.p.rank][t.Rail], 8)
	t.tr.Track(verbs.Conn{Node: a, Core: t.p.place.Core}, wr, 0)
}

func (t *Iface) reapAll() bool { return t.tr.ReapAll(t.on, t.taken) }

// taken is a work request done: its bounce buffer is free again.
func (t *Iface) taken(p *verbs.Posted) {
	if p.Bounce != 0 {
		t.free = append(t.free, p.Bounce)
	}
}

// room makes sure the QP towards d has two free send slots (one for a
// credit WRITE), reaping completions if not.
func (t *Iface) room(d Place) bool {
	x := t.on(d.Core)
	if x.SQFree(d.Node) >= 2 {
		return true
	}
	t.reapAll()
	return x.SQFree(d.Node) >= 2
}

// SendAM sends an active message to rank dst: handler am runs there with
// hdr (at most MaxHeader bytes) and the n bytes at src (at most the eager
// limit), copied into a bounce buffer before SendAM returns. It returns
// false, having sent nothing, when the rail has no credit, bounce buffer
// or send slot now (the progress engine tries again).
func (t *Iface) SendAM(dst int, am uint8, hdr []byte, src uint64, n int) bool {
	w, p := t.p.w, t.p.cp
	if len(hdr) > MaxHeader || n > w.cfg.EagerLimit || n < 0 {
		panic(fmt.Sprintf("lcp: an active message with a %d-byte header and %d bytes of payload", len(hdr), n))
	}
	d := w.places[dst]
	me := t.p.node.ID
	// The load yields the core: the node's other ranks may take credits
	// meanwhile, so the count is read after it and the credit taken at
	// once (given back on a refusal).
	if p.Load64(w.credit[me][dst][t.Rail]) <= w.sent[me][dst][t.Rail] {
		return false
	}
	w.sent[me][dst][t.Rail]++
	if len(t.free) == 0 {
		t.reapAll()
	}
	if len(t.free) == 0 || !t.room(d) {
		w.sent[me][dst][t.Rail]--
		return false
	}
	b := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	buf := t.buf[:HeaderBytes+n]
	clear(buf[:HeaderBytes])
	binary.LittleEndian.PutUint64(buf, uint64(am)|uint64(len(hdr))<<8|uint64(t.p.rank)<<16|uint64(n)<<32)
	copy(buf[8:], hdr)
	if n > 0 {
		p.Read(src, buf[HeaderBytes:])
	}
	p.Write(b, buf)
	t.tr.Track(verbs.Conn{Node: d.Node, Core: d.Core}, t.on(d.Core).Send(d.Node, b, len(buf)), b)
	return true
}

// SendTag sends a tagged message (eager: n < the eager limit) with an
// immediate value to rank dst; its matching unit matches the tag there.
func (t *Iface) SendTag(dst int, tag, imm uint64, src uint64, n int) bool {
	return t.sendTagged(dst, tag, imm, rdvInfo{}, src, n)
}

// sendTagged is SendTag with a rendezvous request's contents in the
// header.
func (t *Iface) sendTagged(dst int, tag, imm uint64, r rdvInfo, src uint64, n int) bool {
	var h [40]byte
	binary.LittleEndian.PutUint64(h[0:], tag)
	binary.LittleEndian.PutUint64(h[8:], imm)
	binary.LittleEndian.PutUint64(h[16:], r.id)
	binary.LittleEndian.PutUint64(h[24:], r.addr)
	binary.LittleEndian.PutUint64(h[32:], uint64(r.size))
	return t.SendAM(dst, amTag, h[:], src, n)
}

// RecvTag posts a receive to the rail's matching unit: messages whose tag
// matches tag on the bits ign leaves clear. When an unexpected message
// already matches, it is taken and returned (the receive is not posted);
// otherwise ctx is handed back when a message matches it.
func (t *Iface) RecvTag(tag, ign uint64, ctx *Request) *unexpected {
	m, n := t.unit.post(tag, ign, ctx)
	t.p.waitUnit(t.unit.search(t.p.cp.Now(), n, t.p.w.cfg.MatchPS))
	return m
}

// Put starts an RDMA WRITE of n bytes from local to remote in rank dst's
// node; Get an RDMA READ from remote in rank dst's node to local. nil when
// the rail has no send slot now.
func (t *Iface) Put(dst int, local, remote uint64, n int) *verbs.Posted {
	return t.rdma(dst, local, remote, n, (*verbs.Ctx).Put)
}

// Get: see Put.
func (t *Iface) Get(dst int, local, remote uint64, n int) *verbs.Posted {
	return t.rdma(dst, local, remote, n, (*verbs.Ctx).Get)
}

// rdma posts one RDMA work request by post (Put, Get, or their bulk
// forms), or returns nil when the rail has no send slot now.
func (t *Iface) rdma(dst int, local, remote uint64, n int, post func(*verbs.Ctx, int, uint64, uint64, int) verbs.WR) *verbs.Posted {
	d := t.p.w.places[dst]
	if !t.room(d) {
		return nil
	}
	return t.tr.Track(verbs.Conn{Node: d.Node, Core: d.Core}, post(t.on(d.Core), d.Node, local, remote, n), 0)
}

// poll reaps completions and hands arrived messages (at most batch) to
// their handlers. It reports whether anything happened.
func (t *Iface) poll(batch int) bool {
	worked := false
	if t.tr.Pending() > 0 {
		worked = t.reapAll()
	}
	w, p := t.p.w, t.p.cp
	me := t.p.node.ID
	got := 0
	for a, u := range w.used {
		if !u || a == me {
			continue
		}
		for got < batch {
			cqe, ok := t.on(t.p.place.Core).TryRecv(a)
			if !ok {
				break
			}
			if cqe.Status != nic.StatusOK {
				panic(fmt.Sprintf("lcp: the connection from node %d on rail %d failed: a receive completed with %s (%s)",
					a, t.Rail, nic.StatusText(cqe.Status), w.c.TransportReport(2)))
			}
			got++
			worked = true
			var at sim.Tick
			if w.arrived != nil {
				m := w.arrived[me][t.Rail]
				k := recvKey{t.p.node.RailQP(t.Rail, a, t.p.place.Core).QPN, cqe.WRID}
				var ok bool
				if at, ok = m[k]; !ok {
					panic(fmt.Sprintf("lcp: rank %d: receive %d from node %d on rail %d completed, but its NIC did not say when", t.p.rank, cqe.WRID, a, t.Rail))
				}
				delete(m, k)
			}
			slot := t.slots[a] + (cqe.WRID%uint64(w.cfg.Slots))*uint64(w.slot)
			var hb [HeaderBytes]byte
			p.Read(slot, hb[:])
			w0 := binary.LittleEndian.Uint64(hb[:])
			am, hl, src, n := uint8(w0), int(uint8(w0>>8)), int(uint16(w0>>16)), int(uint32(w0>>32))
			h := t.p.handlers[am]
			if h == nil {
				panic(fmt.Sprintf("lcp: rank %d: an active message for handler %d, which is not set", t.p.rank, am))
			}
			if w.arrived == nil {
				at = p.Now() // matching on poll: the unit starts now
			}
			t.arrivedAt = at
			h(t, src, hb[8:8+hl], Payload{Addr: slot + HeaderBytes, Len: n})
			// Consumed buffers are re-posted half the slots at a time and
			// the new count written to the sending node (its credits).
			t.consumed[a]++
			if k := t.consumed[a] + uint64(w.cfg.Slots) - t.posted[a]; k >= uint64(max(w.cfg.Slots/2, 1)) {
				t.repost(a, int(k))
				t.credit(a)
			}
		}
	}
	return worked
}
