package workload

import (
	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
)

// amRecv is an active-message server's receive buffers on one core's
// connections, for a message count known per source node in advance.
//
// With rc every source node has its own connection and receive queue: the
// server keeps amBuffers posted on each and polls each in turn. With srd
// the core has one receive queue that takes SENDs from every node (the
// completion names the sender): one pool of buffers, as many as the queue
// holds or the messages expected, and one poll answers for every source.
// Messages from one node still arrive in the order it sent them (srd is in
// order per peer NIC), which the servers' done flags rely on.
type amRecv struct {
	core   int
	rbuf   uint64
	size   uint64 // bytes of a buffer
	expect []int  // messages, by source node
	left   []int  // messages still to come, by source node
	posted []int  // rc: receive requests posted, by source node
	srd    bool
	pool   int // srd: buffers in the queue's one ring
	peer   int // srd: a node other than the server's, to name the core's queue
	// srd: receive requests posted, and messages expected, over all sources
	postedAll, expectAll int
}

// newAMRecv allocates and registers on node the buffers for expect (by
// source node) on core's connections; nil when nothing is expected.
func newAMRecv(c *aa.System, node *aa.Node, core int, expect []int, size uint64) (*amRecv, error) {
	total := 0
	for _, e := range expect {
		total += e
	}
	if total == 0 {
		return nil, nil
	}
	r := &amRecv{core: core, size: size, expect: expect, left: append([]int(nil), expect...),
		srd: c.Spec.Transport == machine.TransportSRD, expectAll: total}
	bufs := len(expect) * amBuffers
	if r.srd {
		r.pool = min(total, c.Spec.SQSize)
		r.peer = (node.ID + 1) % len(c.Nodes)
		bufs = r.pool
	} else {
		r.posted = make([]int, len(expect))
	}
	r.rbuf = node.Alloc(uint64(bufs) * size)
	if err := node.Register(r.rbuf, uint64(bufs)*size, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
		return nil, err
	}
	return r, nil
}

// slot is the buffer of the wrid-th receive request on src's connection
// (srd: on the core's one queue).
func (r *amRecv) slot(src int, wrid uint64) uint64 {
	if r.srd {
		return r.rbuf + (wrid%uint64(r.pool))*r.size
	}
	return r.rbuf + uint64(src*amBuffers+int(wrid%amBuffers))*r.size
}

// postAll posts the first buffers: amBuffers per source (rc) or the pool.
// x is on any core of the server's node; the requests go to r's core.
func (r *amRecv) postAll(x *aa.Ctx) {
	lx := x.OnCore(r.core)
	if r.srd {
		for r.postedAll < r.pool {
			lx.PostRecv(r.peer, r.slot(0, uint64(r.postedAll)), int(r.size))
			r.postedAll++
		}
		return
	}
	for src := range r.left {
		for r.posted[src] < min(amBuffers, r.left[src]) {
			lx.PostRecv(src, r.slot(src, uint64(r.posted[src])), int(r.size))
			r.posted[src]++
		}
	}
}

// taken counts a message from src handled and posts its buffer again if
// more messages are to come on it.
func (r *amRecv) taken(x *aa.Ctx, src int, slot uint64) {
	r.left[src]--
	lx := x.OnCore(r.core)
	if r.srd {
		if r.postedAll < r.expectAll {
			lx.PostRecv(r.peer, slot, int(r.size))
			r.postedAll++
		}
		return
	}
	if r.posted[src] < r.expect[src] {
		lx.PostRecv(src, slot, int(r.size))
		r.posted[src]++
	}
}

// poll checks for arrived messages once per connection that still expects
// one (srd: once). For each message taken it calls handle, posts the buffer
// again if more are to come, then calls after (if not nil). It returns the
// polls made and whether any message arrived.
func (r *amRecv) poll(x *aa.Ctx, handle func(src int, slot uint64), after func(src int)) (polls int, any bool) {
	lx := x.OnCore(r.core)
	if r.srd {
		cqe, ok := lx.TryRecv(r.peer)
		if !ok {
			return 1, false
		}
		src := int(cqe.Value)
		slot := r.slot(src, cqe.WRID)
		handle(src, slot)
		r.taken(x, src, slot)
		if after != nil {
			after(src)
		}
		return 1, true
	}
	for src, left := range r.left {
		if left == 0 {
			continue
		}
		polls++
		cqe, ok := lx.TryRecv(src)
		if !ok {
			continue
		}
		any = true
		slot := r.slot(src, cqe.WRID)
		handle(src, slot)
		r.taken(x, src, slot)
		if after != nil {
			after(src)
		}
	}
	return polls, any
}
