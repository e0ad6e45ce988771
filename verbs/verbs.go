// Package verbs is the RDMA programming interface of a process: the
// one-sided and two-sided verbs of the NIC (Put, Get, CAS, FetchAdd,
// Send/PostRecv/Recv, Flush) on the connected queue pairs the machine sets
// up. Active Access (package aa) and the message layers build on it.
//
// With the machine's transport srd a process has one queue for every
// destination: each work request carries its destination node, and a
// SEND the destination core's queue; completions to different nodes may
// come in any order and are matched by wr_id. Its receive queue takes
// SENDs from every node: PostRecv, Recv and TryRecv ignore src (the next
// message from any node; the completion's Value is its sender).
package verbs

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
)

// Ctx is what a process uses to talk to the cluster: the RMA verbs, on the
// connections of core Core of node N.
type Ctx struct {
	N    *machine.Node
	P    *cpu.Proc
	Core int
	// Rail is the NIC of the node the verbs go through (machine.Spec.NICs):
	// its connections reach the same NIC of the other nodes.
	Rail int
}

// OnRail is the same process on NIC r's connections.
func (c *Ctx) OnRail(r int) *Ctx {
	x := *c
	x.Rail = r
	return &x
}

func (c *Ctx) qp(dst int) *machine.QP {
	h := c.N.RailQP(c.Rail, dst, c.Core)
	if h == nil {
		panic(fmt.Sprintf("verbs: node %d core %d has no connection to node %d on NIC %d", c.N.ID, c.Core, dst, c.Rail))
	}
	return h
}

// WR is a posted work request.
type WR struct {
	dst int
	seq uint64 // its completion entry's sequence number
}

// Spawn starts body as a process on core k of node n.
func Spawn(n *machine.Node, core int, name string, body func(c *Ctx)) {
	n.Cores[core].Spawn(name, func(p *cpu.Proc) { body(&Ctx{N: n, P: p, Core: core}) })
}

func (c *Ctx) post(dst int, w nic.WQE) WR {
	h := c.qp(dst)
	if sw := c.N.NICs[c.Rail].Spec().Software; sw != nil {
		// Without RDMA offload the process's send runs the driver's
		// transmit path for each packet of the request.
		c.P.Compute(sw.TxCycles * requestPackets(w, c.N.NICs[c.Rail].Spec().PMTU))
	}
	// A full send queue waits for completions to free slots (an srd
	// queue's completions are filed by destination: reapSRD).
	for !h.SRD && h.Posted-h.Completed >= uint64(h.Size) {
		c.reap(dst)
	}
	// The slot is claimed before the write yields the core: a handler
	// (AM-Int's) may post on the same connection in between.
	if h.SRD {
		for h.Posted-h.Completed >= uint64(h.Size) {
			c.reapSRD(h)
		}
		w.DstNode, w.DstNIC, w.DstQPN = dst, h.Rail, h.QPN // the peer core's queue (same rail) has this core's QPN
	}
	slot := h.Posted
	h.WRs.Post(slot, dst)
	h.Posted++
	w.Signaled = true
	w.WRID = slot
	var b [nic.WQESize]byte
	w.Put(b[:])
	c.P.Write(h.SQBase+(slot%uint64(h.Size))*nic.WQESize, b[:])
	var db [8]byte
	binary.LittleEndian.PutUint64(db[:], h.Posted)
	c.P.MMIOWrite(h.DoorbellAddr, db[:], c.P.Txn.ID)
	return WR{dst: dst, seq: slot + 1}
}

// requestPackets is the packets a work request's request takes: a write's
// or a send's payload in path-MTU pieces, one for the others.
func requestPackets(w nic.WQE, pmtu int) int {
	if w.Opcode == nic.OpWrite || w.Opcode == nic.OpSend {
		return max((int(w.Length)+pmtu-1)/pmtu, 1)
	}
	return 1
}

// reap waits for the next completion entry of the connection to dst.
func (c *Ctx) reap(dst int) nic.CQE {
	h := c.qp(dst)
	cqe := c.pollCQ(h.CQBase, h.Size, &h.Completed)
	h.WRs.Reaped(cqe)
	return cqe
}

// reapSRD waits for the next completion entry of the srd queue h, or for
// another process on the core to take it, and files what it took.
func (c *Ctx) reapSRD(h *machine.QP) {
	cqe, ok := c.pollCQOnce(h.CQBase, h.Size, &h.Completed)
	if !ok {
		return
	}
	h.WRs.Reaped(cqe)
}

// pollCQ polls the ring at base (size entries) for entry *done+1, reads it
// and counts it consumed. An entry is fresh when its sequence number says so.
func (c *Ctx) pollCQ(base uint64, size int, done *uint64) nic.CQE {
	// Processes on one core may share a connection (an inserting process and
	// an active-message server): an entry is claimed before the read that
	// yields the core, and a poller that lost the entry waits for the next.
	for {
		if e, ok := c.pollCQOnce(base, size, done); ok {
			return e
		}
	}
}

// pollCQOnce is pollCQ until the entry is taken: false when another
// process took it.
func (c *Ctx) pollCQOnce(base uint64, size int, done *uint64) (nic.CQE, bool) {
	want := *done + 1
	addr := base + (*done%uint64(size))*nic.CQESize
	c.P.PollWord(addr+24, func(v uint64) bool { return *done+1 != want || v == want })
	if *done+1 != want {
		return nic.CQE{}, false
	}
	*done++
	var b [nic.CQESize]byte
	c.P.Read(addr, b[:])
	return nic.ParseCQE(b[:]), true
}

// Wait blocks until the work request has completed and returns its
// completion. Completions arrive in posting order per connection.
func (c *Ctx) Wait(w WR) (nic.CQE, error) {
	h := c.qp(w.dst)
	var cqe nic.CQE
	if h.SRD {
		for !h.WRs.Done(w.seq - 1) {
			c.reapSRD(h)
		}
		cqe = h.WRs.Take(w.seq - 1)
	} else {
		for h.Completed < w.seq {
			c.reap(w.dst)
		}
		cqe = h.WRs.Take(w.seq - 1) // the WRID is the index at posting
	}
	if cqe.Status != nic.StatusOK {
		return cqe, fmt.Errorf("work request %d to node %d failed with status %d", w.seq, w.dst, cqe.Status)
	}
	return cqe, nil
}

// Test reports, without waiting, whether the work request has completed,
// taking the completion entries that have arrived on its connection (one
// memory access when none has). Once done, the completion is w's and later
// calls must not ask again.
func (c *Ctx) Test(w WR) (cqe nic.CQE, done bool, err error) {
	h := c.qp(w.dst)
	if h.SRD {
		return c.testSRD(h, w)
	}
	if !c.takeArrived(h, func() bool { return h.Completed >= w.seq }) {
		return nic.CQE{}, false, nil
	}
	cqe = h.WRs.Take(w.seq - 1)
	if cqe.Status != nic.StatusOK {
		return cqe, true, fmt.Errorf("work request %d to node %d failed with status %d", w.seq, w.dst, cqe.Status)
	}
	return cqe, true, nil
}

// takeArrived takes the completion entries that have arrived on h, one
// memory access each (and one when none has), until have holds: false if
// the entries ran out first.
func (c *Ctx) takeArrived(h *machine.QP, have func() bool) bool {
	for !have() {
		want := h.Completed + 1
		addr := h.CQBase + (h.Completed%uint64(h.Size))*nic.CQESize
		fresh := c.P.Load64(addr+24) == want
		if h.Completed+1 != want {
			continue // another process on the queue took it meanwhile
		}
		if !fresh {
			return false
		}
		h.Completed++ // claimed before the read yields the core
		var b [nic.CQESize]byte
		c.P.Read(addr, b[:])
		h.WRs.Reaped(nic.ParseCQE(b[:]))
	}
	return true
}

// testSRD is Test on an srd queue: the entries that have arrived are
// taken until w's is among them.
func (c *Ctx) testSRD(h *machine.QP, w WR) (nic.CQE, bool, error) {
	if !c.takeArrived(h, func() bool { return h.WRs.Done(w.seq - 1) }) {
		return nic.CQE{}, false, nil
	}
	cqe := h.WRs.Take(w.seq - 1)
	if cqe.Status != nic.StatusOK {
		return cqe, true, fmt.Errorf("work request %d to node %d failed with status %d", w.seq, w.dst, cqe.Status)
	}
	return cqe, true, nil
}

// SQFree is the number of work requests that can be posted to dst without
// waiting for completions (its connection's send-queue slots not in use).
func (c *Ctx) SQFree(dst int) int {
	h := c.qp(dst)
	return h.Size - int(h.Posted-h.Completed)
}

// Put writes size bytes at local to remote on node dst (an RDMA WRITE). On a
// page with active bits the target's IOMMU logs it: an active put.
func (c *Ctx) Put(dst int, local, remote uint64, size int) WR {
	return c.post(dst, nic.WQE{Opcode: nic.OpWrite, Length: uint32(size), Local: local, Remote: remote})
}

// PutBulk is Put marked for the NICs' bulk DMA paths (nic.WQE.Bulk): the
// payload is read, and written at dst, by one copy each where the NICs
// have the path, TLP by TLP where not.
func (c *Ctx) PutBulk(dst int, local, remote uint64, size int) WR {
	return c.post(dst, nic.WQE{Opcode: nic.OpWrite, Bulk: true, Length: uint32(size), Local: local, Remote: remote})
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
	slot := h.RQPosted // claimed before the write yields the core
	h.RQPosted++
	c.P.Write(h.RQBase+(slot%uint64(h.Size))*nic.RWQESize, b[:])
	var db [8]byte
	binary.LittleEndian.PutUint64(db[:], h.RQPosted)
	c.P.MMIOWrite(h.BAR+nic.RQDoorbells+uint64(h.QPN)*8, db[:], c.P.Txn.ID)
}

// PostRecvs posts receive buffers of size bytes at addrs for SENDs from src
// with one doorbell (a batched ibv_post_recv): the receive requests are
// written in at most two pieces (the ring may wrap), then the producer
// index once.
func (c *Ctx) PostRecvs(src int, addrs []uint64, size int) {
	if len(addrs) == 0 {
		return
	}
	h := c.qp(src)
	first := h.RQPosted // claimed before the writes yield the core
	h.RQPosted += uint64(len(addrs))
	b := make([]byte, len(addrs)*nic.RWQESize)
	for i, a := range addrs {
		binary.LittleEndian.PutUint64(b[i*nic.RWQESize:], a)
		binary.LittleEndian.PutUint32(b[i*nic.RWQESize+8:], uint32(size))
	}
	for i := 0; i < len(addrs); {
		slot := (first + uint64(i)) % uint64(h.Size)
		n := min(len(addrs)-i, h.Size-int(slot))
		c.P.Write(h.RQBase+slot*nic.RWQESize, b[i*nic.RWQESize:(i+n)*nic.RWQESize])
		i += n
	}
	var db [8]byte
	binary.LittleEndian.PutUint64(db[:], first+uint64(len(addrs)))
	c.P.MMIOWrite(h.BAR+nic.RQDoorbells+uint64(h.QPN)*8, db[:], c.P.Txn.ID)
}

// Recv waits for the next message from src and returns its completion: the
// receive request's index (in posting order) and the length.
func (c *Ctx) Recv(src int) nic.CQE {
	h := c.qp(src)
	return c.pollCQ(h.RCQBase, h.Size, &h.RQDone)
}

// TryRecv checks once (one memory access) whether a message from src has
// arrived and takes its completion if so.
func (c *Ctx) TryRecv(src int) (nic.CQE, bool) {
	h := c.qp(src)
	want := h.RQDone + 1
	addr := h.RCQBase + (h.RQDone%uint64(h.Size))*nic.CQESize
	if c.P.Load64(addr+24) != want || h.RQDone+1 != want {
		return nic.CQE{}, false
	}
	h.RQDone++ // claimed before the read yields the core
	b := make([]byte, nic.CQESize)
	c.P.Read(addr, b)
	return nic.ParseCQE(b), true
}

// Get reads size bytes at remote on node dst into local (an RDMA READ).
func (c *Ctx) Get(dst int, local, remote uint64, size int) WR {
	return c.post(dst, nic.WQE{Opcode: nic.OpRead, Length: uint32(size), Local: local, Remote: remote})
}

// GetBulk is Get marked for the NICs' bulk DMA paths (see PutBulk).
func (c *Ctx) GetBulk(dst int, local, remote uint64, size int) WR {
	return c.post(dst, nic.WQE{Opcode: nic.OpRead, Bulk: true, Length: uint32(size), Local: local, Remote: remote})
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
// the data of every put is in dst's memory. It takes the completions of
// those operations: a Wait or Test of one of them afterwards is a usage
// error (on rc it returns an empty completion, on srd it would wait for
// ever).
func (c *Ctx) Flush(dst int) error {
	h := c.qp(dst)
	if h.SRD {
		return c.flushSRD(h, dst)
	}
	var err error
	for h.Completed < h.Posted {
		if cqe := c.reap(dst); cqe.Status != nic.StatusOK && err == nil {
			err = fmt.Errorf("an operation to node %d failed with status %d", dst, cqe.Status)
		}
	}
	h.WRs.TakeReaped() // Flush reports the failures of everything it waited for
	return err
}

// Now is the current simulated time.
func (c *Ctx) Now() sim.Tick { return c.P.Now() }

// flushSRD is Flush on an srd queue: it waits for the work requests to dst
// only, and reports the first failure among them (in posting order) that
// no Wait or Test took.
func (c *Ctx) flushSRD(h *machine.QP, dst int) error {
	// Until no work request to dst is left unreaped, including those
	// another process on the core posts meanwhile.
	var from uint64
	for {
		id, ok := h.WRs.Outstanding(dst, from)
		if !ok {
			break
		}
		for h.WRs.Unreaped(id) {
			c.reapSRD(h)
		}
		from = id + 1
	}
	var err error
	for _, id := range h.WRs.ReapedTo(dst) {
		if cqe := h.WRs.Take(id); cqe.Status != nic.StatusOK && err == nil {
			err = fmt.Errorf("an operation to node %d failed with status %d", dst, cqe.Status)
		}
	}
	return err
}
