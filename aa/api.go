package aa

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
)

// qpHandle is a node's connected queue pair to one remote node, with its
// rings in host memory.
type qpHandle struct {
	qpn          uint32
	sqBase       uint64
	cqBase       uint64
	size         int
	posted       uint64 // work requests posted (the SQ producer index)
	completed    uint64 // completion entries consumed
	doorbellAddr uint64
	rqBase       uint64 // receive queue and its completions
	rcqBase      uint64
	rqPosted     uint64
	rqDone       uint64
	results      map[uint64]nic.CQE // completions reaped before their Wait, by WRID
}

// connect creates one queue pair per core of a towards b, so that every
// process has its own send and completion queues (sharing a QP between
// threads would need locks).
func (c *Cluster) connect(a, b *Node) error {
	for k := 0; k < c.Spec.Cores; k++ {
		if err := c.connectQP(a, b, k); err != nil {
			return err
		}
	}
	return nil
}

// qpn numbers node a's QP towards peer b for core k. QPNs start at 0x100:
// QP0 and QP1 are InfiniBand's management QPs and analyzers decode them so.
func (c *Cluster) qpn(peer, core int) uint32 { return uint32(0x100 + peer*c.Spec.Cores + core) }

func (c *Cluster) connectQP(a, b *Node, core int) error {
	size := c.Spec.SQSize
	h := &qpHandle{qpn: c.qpn(b.ID, core), size: size, results: map[uint64]nic.CQE{}}
	h.sqBase = a.Alloc(uint64(size * nic.WQESize))
	h.cqBase = a.Alloc(uint64(size * nic.CQESize))
	rw := iommu.Perm{Bits: pte.R | pte.W}
	if err := a.Register(h.sqBase, uint64(size*nic.WQESize), rw); err != nil {
		return err
	}
	if err := a.Register(h.cqBase, uint64(size*nic.CQESize), rw); err != nil {
		return err
	}
	h.rqBase = a.Alloc(uint64(size * nic.RWQESize))
	h.rcqBase = a.Alloc(uint64(size * nic.CQESize))
	if err := a.Register(h.rqBase, uint64(size*nic.RWQESize), rw); err != nil {
		return err
	}
	if err := a.Register(h.rcqBase, uint64(size*nic.CQESize), rw); err != nil {
		return err
	}
	h.doorbellAddr = barBase + uint64(h.qpn)*8
	a.qps[b.ID] = append(a.qps[b.ID], h)
	return a.NIC.CreateQP(nic.QPConfig{QPN: h.qpn, RemoteNode: b.ID, RemoteQPN: c.qpn(a.ID, core),
		SQBase: h.sqBase, SQSize: size, CQBase: h.cqBase, CQSize: size, RQBase: h.rqBase, RQSize: size, RCQBase: h.rcqBase})
}

// Ctx is what a process uses to talk to the cluster: the AA and RMA verbs.
type Ctx struct {
	N    *Node
	P    *cpu.Proc
	core int
}

func (c *Ctx) qp(dst int) *qpHandle {
	hs := c.N.qps[dst]
	if len(hs) == 0 {
		panic(fmt.Sprintf("aa: node %d has no connection to node %d", c.N.ID, dst))
	}
	return hs[c.core]
}

// WR is a posted work request.
type WR struct {
	dst int
	seq uint64 // its completion entry's sequence number
}

// Spawn starts body as a process on core k of node n.
func (n *Node) Spawn(core int, name string, body func(c *Ctx)) {
	n.Cores[core].Spawn(name, func(p *cpu.Proc) { body(&Ctx{N: n, P: p, core: core}) })
}

func (c *Ctx) post(dst int, w nic.WQE) WR {
	h := c.qp(dst)
	// A full send queue waits for completions to free slots.
	for h.posted-h.completed >= uint64(h.size) {
		c.reap(dst)
	}
	// The slot is claimed before the write yields the core: a handler
	// (AM-Int's) may post on the same connection in between.
	slot := h.posted
	h.posted++
	w.Signaled = true
	w.WRID = slot
	var b [nic.WQESize]byte
	w.Put(b[:])
	c.P.Write(h.sqBase+(slot%uint64(h.size))*nic.WQESize, b[:])
	var db [8]byte
	binary.LittleEndian.PutUint64(db[:], h.posted)
	c.P.MMIOWrite(h.doorbellAddr, db[:], c.P.Txn.ID)
	return WR{dst: dst, seq: slot + 1}
}

// reap waits for the next completion entry of the connection to dst.
func (c *Ctx) reap(dst int) nic.CQE {
	h := c.qp(dst)
	cqe := c.pollCQ(h.cqBase, h.size, &h.completed)
	h.results[cqe.WRID] = cqe
	return cqe
}

// pollCQ polls the ring at base (size entries) for entry *done+1, reads it
// and counts it consumed. An entry is fresh when its sequence number says so.
func (c *Ctx) pollCQ(base uint64, size int, done *uint64) nic.CQE {
	// Processes on one core may share a connection (an inserting process and
	// an active-message server): an entry is claimed before the read that
	// yields the core, and a poller that lost the entry waits for the next.
	for {
		want := *done + 1
		addr := base + (*done%uint64(size))*nic.CQESize
		c.P.Poll(func() bool { return *done+1 != want || c.N.Mem.Load64(addr+24) == want })
		if *done+1 != want {
			continue
		}
		*done++
		b := make([]byte, nic.CQESize)
		c.P.Read(addr, b)
		return nic.ParseCQE(b)
	}
}

// Wait blocks until the work request has completed and returns its
// completion. Completions arrive in posting order per connection.
func (c *Ctx) Wait(w WR) (nic.CQE, error) {
	h := c.qp(w.dst)
	for h.completed < w.seq {
		c.reap(w.dst)
	}
	cqe := h.results[w.seq-1] // the WRID is the index at posting
	delete(h.results, w.seq-1)
	if cqe.Status != nic.StatusOK {
		return cqe, fmt.Errorf("work request %d to node %d failed with status %d", w.seq, w.dst, cqe.Status)
	}
	return cqe, nil
}

// Put writes size bytes at local to remote on node dst (an RDMA WRITE). On a
// page with active bits the target's IOMMU logs it: an active put.
func (c *Ctx) Put(dst int, local, remote uint64, size int) WR {
	return c.post(dst, nic.WQE{Opcode: nic.OpWrite, Length: uint32(size), Local: local, Remote: remote})
}

// Send sends size bytes at local to dst, into the next receive buffer the
// peer's process posted on its connection to this one.
func (c *Ctx) Send(dst int, local uint64, size int) WR {
	return c.post(dst, nic.WQE{Opcode: nic.OpSend, Length: uint32(size), Local: local})
}

// PostRecv posts a receive buffer of size bytes at addr for SENDs from src.
func (c *Ctx) PostRecv(src int, addr uint64, size int) {
	h := c.qp(src)
	var b [nic.RWQESize]byte
	binary.LittleEndian.PutUint64(b[:], addr)
	binary.LittleEndian.PutUint32(b[8:], uint32(size))
	slot := h.rqPosted // claimed before the write yields the core
	h.rqPosted++
	c.P.Write(h.rqBase+(slot%uint64(h.size))*nic.RWQESize, b[:])
	var db [8]byte
	binary.LittleEndian.PutUint64(db[:], h.rqPosted)
	c.P.MMIOWrite(barBase+nic.RQDoorbells+uint64(h.qpn)*8, db[:], c.P.Txn.ID)
}

// Recv waits for the next message from src and returns its completion: the
// receive request's index (in posting order) and the length.
func (c *Ctx) Recv(src int) nic.CQE {
	h := c.qp(src)
	return c.pollCQ(h.rcqBase, h.size, &h.rqDone)
}

// TryRecv checks once (one memory access) whether a message from src has
// arrived and takes its completion if so.
func (c *Ctx) TryRecv(src int) (nic.CQE, bool) {
	h := c.qp(src)
	want := h.rqDone + 1
	addr := h.rcqBase + (h.rqDone%uint64(h.size))*nic.CQESize
	if c.P.Load64(addr+24) != want || h.rqDone+1 != want {
		return nic.CQE{}, false
	}
	h.rqDone++ // claimed before the read yields the core
	b := make([]byte, nic.CQESize)
	c.P.Read(addr, b)
	return nic.ParseCQE(b), true
}

// Get reads size bytes at remote on node dst into local (an RDMA READ).
func (c *Ctx) Get(dst int, local, remote uint64, size int) WR {
	return c.post(dst, nic.WQE{Opcode: nic.OpRead, Length: uint32(size), Local: local, Remote: remote})
}

// CAS compares the 64-bit word at remote on dst with cmp and, if equal,
// replaces it with swap; it returns the old value.
func (c *Ctx) CAS(dst int, remote, cmp, swap uint64) (uint64, error) {
	cqe, err := c.Wait(c.post(dst, nic.WQE{Opcode: nic.OpCAS, Remote: remote, Compare: cmp, Swap: swap}))
	return cqe.Value, err
}

// FetchAdd adds v to the 64-bit word at remote on dst and returns the old value.
func (c *Ctx) FetchAdd(dst int, remote, v uint64) (uint64, error) {
	cqe, err := c.Wait(c.post(dst, nic.WQE{Opcode: nic.OpFetchOp, Remote: remote, Compare: v}))
	return cqe.Value, err
}

// Flush (RMA) returns when every operation posted to dst has completed:
// the data of every put is in dst's memory.
func (c *Ctx) Flush(dst int) error {
	h := c.qp(dst)
	var err error
	for h.completed < h.posted {
		if cqe := c.reap(dst); cqe.Status != nic.StatusOK && err == nil {
			err = fmt.Errorf("an operation to node %d failed with status %d", dst, cqe.Status)
		}
	}
	clear(h.results) // Flush reports the failures of everything it waited for
	return err
}

// ActiveFlush returns when every active access this process issued to the
// log iuid on dst has been processed by dst's handler: an active get of the
// log's flushing page, whose completion dst's IOMMU withholds until the log
// is consumed (DESIGN.md §2.6).
func (c *Ctx) ActiveFlush(dst int, iuid uint16) error {
	page, ok := c.N.c.Nodes[dst].flush[iuid]
	if !ok {
		return fmt.Errorf("node %d's log %d has no flushing page", dst, iuid)
	}
	buf := c.N.scratch()
	_, err := c.Wait(c.Get(dst, buf, page, 8))
	return err
}

// scratch returns a registered 4 KB buffer of the node for the library's
// own use.
func (n *Node) scratch() uint64 {
	if n.scratchBuf == 0 {
		n.scratchBuf = n.Alloc(4096)
		if err := n.Register(n.scratchBuf, 4096, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
			panic(err)
		}
	}
	return n.scratchBuf
}

// Now is the current simulated time.
func (c *Ctx) Now() sim.Tick { return c.P.Now() }
