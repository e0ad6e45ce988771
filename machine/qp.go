package machine

import (
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
)

// QP is a node's connected queue pair to one remote node, with its rings in
// host memory and the driver's indices into them (what libibverbs keeps in
// its ibv_qp). The verbs library posts and reaps through it.
type QP struct {
	QPN          uint32
	SQBase       uint64
	CQBase       uint64
	Size         int
	Posted       uint64 // work requests posted (the SQ producer index)
	Completed    uint64 // completion entries consumed
	DoorbellAddr uint64
	RQBase       uint64 // receive queue and its completions
	RCQBase      uint64
	RQPosted     uint64
	RQDone       uint64
	Results      map[uint64]nic.CQE // completions reaped before their Wait, by WRID
}

// QP returns the node's queue pair towards node dst for core k, or nil.
func (n *Node) QP(dst, core int) *QP {
	hs := n.qps[dst]
	if core < 0 || core >= len(hs) {
		return nil
	}
	return hs[core]
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
	h := &QP{QPN: c.qpn(b.ID, core), Size: size, Results: map[uint64]nic.CQE{}}
	h.SQBase = a.Alloc(uint64(size * nic.WQESize))
	h.CQBase = a.Alloc(uint64(size * nic.CQESize))
	rw := iommu.Perm{Bits: pte.R | pte.W}
	if err := a.Register(h.SQBase, uint64(size*nic.WQESize), rw); err != nil {
		return err
	}
	if err := a.Register(h.CQBase, uint64(size*nic.CQESize), rw); err != nil {
		return err
	}
	h.RQBase = a.Alloc(uint64(size * nic.RWQESize))
	h.RCQBase = a.Alloc(uint64(size * nic.CQESize))
	if err := a.Register(h.RQBase, uint64(size*nic.RWQESize), rw); err != nil {
		return err
	}
	if err := a.Register(h.RCQBase, uint64(size*nic.CQESize), rw); err != nil {
		return err
	}
	h.DoorbellAddr = BARBase + uint64(h.QPN)*8
	a.qps[b.ID] = append(a.qps[b.ID], h)
	return a.NIC.CreateQP(nic.QPConfig{QPN: h.QPN, RemoteNode: b.ID, RemoteQPN: c.qpn(a.ID, core),
		SQBase: h.SQBase, SQSize: size, CQBase: h.CQBase, CQSize: size, RQBase: h.RQBase, RQSize: size, RCQBase: h.RCQBase})
}

// Run simulates until done returns true (checked every slice of simulated
// time) or limit passes, then calls what OnStop registered.
func (c *Cluster) Run(limit sim.Tick, done func() bool) sim.Tick {
	const slice = 5 * sim.US
	for c.Eng.Now() < limit {
		before := c.Eng.Now()
		until := min(before+slice, limit)
		if next := c.Eng.Next(); next > until && next <= limit {
			until = next // a long wait with nothing else to do (a computation)
		}
		if c.Eng.Run(until) == before || done() {
			break // done, or nothing left to happen
		}
	}
	for _, f := range c.onStop {
		f()
	}
	return c.Eng.Now()
}

// OnStop registers f to run when Run ends: a system stops its daemons (an
// access log's polling consumer) there.
func (c *Cluster) OnStop(f func()) { c.onStop = append(c.onStop, f) }

// AppsDone reports whether every process spawned on the nodes' cores has
// finished (daemons excluded).
func (c *Cluster) AppsDone() bool {
	for _, n := range c.Nodes {
		for _, core := range n.Cores {
			if !core.AppsDone() {
				return false
			}
		}
	}
	return true
}
