package machine

import (
	"fmt"
	"runtime"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
)

// The transports of Spec.Transport.
const (
	TransportRC  = "rc"  // reliable connections: a QP per core per peer node
	TransportSRD = "srd" // a queue per core, one reliable context per peer NIC in the NIC
)

// QP is a node's connected queue pair to one remote node, with its rings in
// host memory and the driver's indices into them (what libibverbs keeps in
// its ibv_qp). The verbs library posts and reaps through it.
//
// With transport srd it is the core's one queue, shared by every
// destination: each work request names its destination node, and the
// destination queue of a SEND (the peer core's queue, which has the same
// QPN), in the WQE. Completions then come in posting order per destination
// only; WRs lets the verbs match them by wr_id.
type QP struct {
	QPN          uint32
	Rail         int    // the NIC of the node it is on (Spec.NICs)
	BAR          uint64 // that NIC's BAR: its doorbells
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
	// WRs are the work requests posted and not yet taken by a Wait, Test
	// or Flush: their destinations, and their completions once reaped.
	WRs WorkRequests

	SRD bool // the core's srd queue, for every destination
}

// QP returns the node's queue pair towards node dst for core k on NIC 0,
// or nil. With transport srd it is core k's queue for every dst but the
// node itself.
func (n *Node) QP(dst, core int) *QP { return n.RailQP(0, dst, core) }

// RailQP is QP on NIC rail of the node (Spec.NICs), or nil.
func (n *Node) RailQP(rail, dst, core int) *QP {
	if n.queues != nil {
		if rail < 0 || rail >= len(n.queues) || dst == n.ID || dst < 0 || dst >= len(n.c.Nodes) || core < 0 || core >= len(n.queues[rail]) {
			return nil
		}
		return n.queues[rail][core]
	}
	if rail < 0 || rail >= len(n.qps) {
		return nil
	}
	hs := n.qps[rail][dst]
	if core < 0 || core >= len(hs) {
		return nil
	}
	return hs[core]
}

// connect creates one queue pair per core of a towards b on NIC rail, so
// that every process has its own send and completion queues (sharing a QP
// between threads would need locks).
func (c *Cluster) connect(a, b *Node, rail int) error {
	for len(a.qps) <= rail {
		a.qps = append(a.qps, map[int][]*QP{})
	}
	for k := 0; k < c.Spec.Cores; k++ {
		if err := c.connectQP(a, b, rail, k); err != nil {
			return err
		}
	}
	return nil
}

// qpn numbers node a's QP towards peer b for core k. QPNs start at 0x100:
// QP0 and QP1 are InfiniBand's management QPs and analyzers decode them so.
func (c *Cluster) qpn(peer, core int) uint32 { return uint32(0x100 + peer*c.Spec.Cores + core) }

func (c *Cluster) connectQP(a, b *Node, rail, core int) error {
	h := &QP{QPN: c.qpn(b.ID, core), Rail: rail, Size: c.Spec.SQSize, WRs: newWorkRequests(c.Spec.SQSize)}
	if err := c.rings(a, h); err != nil {
		return err
	}
	a.qps[rail][b.ID] = append(a.qps[rail][b.ID], h)
	return a.NICs[rail].CreateQP(nic.QPConfig{QPN: h.QPN, RemoteNode: b.ID, RemoteNIC: rail, RemoteQPN: c.qpn(a.ID, core),
		SQBase: h.SQBase, SQSize: h.Size, CQBase: h.CQBase, CQSize: h.Size, RQBase: h.RQBase, RQSize: h.Size, RCQBase: h.RCQBase})
}

// createQueues gives every core of node a its srd queue on NIC rail: QPN
// 0x100 + core, rings allocated and registered once, whatever the number of
// nodes.
func (c *Cluster) createQueues(a *Node, rail int) error {
	a.queues = append(a.queues, nil)
	for k := 0; k < c.Spec.Cores; k++ {
		h := &QP{QPN: uint32(0x100 + k), Rail: rail, Size: c.Spec.SQSize, WRs: newQueueWorkRequests(c.Spec.SQSize), SRD: true}
		if err := c.rings(a, h); err != nil {
			return err
		}
		a.queues[rail] = append(a.queues[rail], h)
		if err := a.NICs[rail].CreateQueue(nic.QueueConfig{QPN: h.QPN, SQBase: h.SQBase, SQSize: h.Size, CQBase: h.CQBase, CQSize: h.Size,
			RQBase: h.RQBase, RQSize: h.Size, RCQBase: h.RCQBase}); err != nil {
			return err
		}
	}
	return nil
}

// RequirePerPeerReceive fails with transport srd, where a process has one
// receive queue for SENDs from every node: what for needs one per source
// node (its receive buffers, or a receive CQ shared by QPN) runs on rc only.
func (c *Cluster) RequirePerPeerReceive(what string) error {
	if c.Spec.Transport == TransportSRD {
		return fmt.Errorf("%s needs a receive queue per source node: machine transport %s, not %s", what, TransportRC, TransportSRD)
	}
	return nil
}

// rings allocates and registers h's rings in a's memory: send queue, CQ,
// receive queue and receive CQ, h.Size entries each.
func (c *Cluster) rings(a *Node, h *QP) error {
	size := h.Size
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
	for _, r := range []struct {
		base, size uint64
		kind       string
	}{{h.SQBase, uint64(size * nic.WQESize), KindQueues}, {h.CQBase, uint64(size * nic.CQESize), KindCompletions},
		{h.RQBase, uint64(size * nic.RWQESize), KindQueues}, {h.RCQBase, uint64(size * nic.CQESize), KindCompletions}} {
		if err := a.Label(r.base, r.size, r.kind); err != nil {
			return err
		}
	}
	h.BAR = BARBase + uint64(h.Rail)*BARStride
	h.DoorbellAddr = h.BAR + uint64(h.QPN)*8
	return nil
}

// Run simulates until done returns true (checked at the end of every
// slice of simulated time, when every node has reached it) or limit
// passes, then calls what OnStop registered. The nodes run on Partitions
// goroutines.
//
// The slices lie on a grid of 5 µs from time 0, and a slice in which
// nothing happens is skipped: where a run stops depends on when done
// became true, not on which events exist, so a core that sleeps through
// its polling checks ends the run where checking would have.
func (c *Cluster) Run(limit sim.Tick, done func() bool) sim.Tick {
	const slice = 5 * sim.US
	w := c.Eng.World()
	c.quiet = false
	from := w.Now() // the first time not yet run
	for {
		next := w.Next()
		if next == sim.Never {
			// No event and no timer anywhere: nothing will ever happen
			// again, whatever the limit.
			c.quiet, c.quietAt = true, from
		}
		if next > limit {
			// Nothing happens before the limit: what sleeps through its
			// checks would have checked up to it.
			w.Run(limit)
			break
		}
		e := min(next-next%slice+slice-1, limit)
		w.Run(e)
		from = e + 1
		// Over ranks, every rank stops at the same slice: when one is done
		// (interrupted; AppsDone is already agreed).
		if !w.AllTrue(!done()) {
			break
		}
	}
	for _, f := range c.onStop {
		f()
	}
	// Over ranks, the counts, statistics and kept states of every node
	// reach every rank, for the results and reports to read.
	if err := w.Sync(); err != nil {
		panic(err.Error())
	}
	return w.Now()
}

// Quiet reports whether the last Run ended with nothing left to happen
// (no event, no timer in any domain) and from when: a process not finished
// then waits for what never comes (a write that was dropped, a message
// never sent), a hang rather than a slow run. A core that checks every
// poll (SetPollSleep off) keeps time going, so such a run is never quiet.
func (c *Cluster) Quiet() (at sim.Tick, quiet bool) { return c.quietAt, c.quiet }

// NotFinished says why a run that ended at end left processes not
// finished: a hang (Quiet) or a run out of time, then what the network and
// the IOMMUs went through (TransportReport, FaultReport), a line each.
func (c *Cluster) NotFinished(end sim.Tick) string {
	s := fmt.Sprintf("did not finish by %v", end)
	if at, quiet := c.Quiet(); quiet {
		s = fmt.Sprintf("did not finish: nothing was left to happen from %s on, so the processes not finished wait for what never comes", at.Human())
	}
	for _, r := range []string{c.TransportReport(4), c.FaultReport(4)} {
		if r != "" {
			s += "\n  " + r
		}
	}
	return s
}

// SetPollSleep chooses whether the nodes' cores sleep through the checks
// of a lone polling loop that cannot see a change (on, the default) or
// run every check (cpu.Core.SetPollSleep): the outputs are the same.
func (c *Cluster) SetPollSleep(on bool) {
	for _, n := range c.Nodes {
		for _, core := range n.Cores {
			core.SetPollSleep(on)
		}
		for _, t := range n.pollers() {
			t.SetPollSleep(on)
		}
	}
}

// Close ends every process still running on the nodes' cores (after a
// run that stopped before they finished), so that nothing of the cluster
// stays alive once its results are read.
func (c *Cluster) Close() {
	for _, n := range c.Nodes {
		for _, core := range n.Cores {
			core.Close()
		}
		for _, t := range n.pollers() {
			t.Close()
		}
	}
}

// Now is the cluster's simulated time: the latest any node has reached.
func (c *Cluster) Now() sim.Tick { return c.Eng.World().Now() }

// SetPartitions runs the nodes on n goroutines from the next Run on (1:
// all on the caller's; 0: AutoPartitions). Outputs are the same for every
// n; only the wall time differs. A system or workload whose Go state is
// shared across nodes calls Serial instead, and the nodes then run on one
// goroutine.
func (c *Cluster) SetPartitions(n int) {
	if n <= 0 {
		n = AutoPartitions(c.Spec.Nodes, c.Spec.Cores, runtime.NumCPU())
	}
	c.partitions = n
	c.applyPartitions()
}

// coresPerPartition is the cluster cores' worth of work a goroutine needs
// before a second one pays for the windows' synchronisation: measured, a
// two-node run of one process each is 1.2× slower on two goroutines, four
// nodes of 32 processes 1.2× faster, 32 such nodes 1.8× faster.
const coresPerPartition = 32

// AutoPartitions is the partitions a cluster of nodes × cores runs on by
// default on a host of hostCores: one per 32 cores of the cluster, at least
// one, at most the host's cores.
func AutoPartitions(nodes, cores, hostCores int) int {
	return max(1, min(hostCores, nodes*cores/coresPerPartition))
}

// Serial makes the cluster run its nodes on one goroutine whatever
// SetPartitions asked, because of why (what shares Go state across nodes):
// the run is the same, only not parallel.
func (c *Cluster) Serial(why string) {
	if c.serial == "" {
		c.serial = why
	}
	c.applyPartitions()
}

// Partitions is the goroutines the nodes run on, and why it is one when a
// system asked for that (Serial).
func (c *Cluster) Partitions() (int, string) {
	if c.serial != "" {
		return 1, c.serial
	}
	return max(c.partitions, 1), ""
}

func (c *Cluster) applyPartitions() {
	n, _ := c.Partitions()
	c.Eng.World().SetPartitions(n)
}

// OnStop registers f to run when Run ends: a system stops its daemons (an
// access log's polling consumer) there.
func (c *Cluster) OnStop(f func()) { c.onStop = append(c.onStop, f) }

// AppsDone reports whether every process spawned on the nodes' cores has
// finished (daemons excluded). Over ranks it is a collective call.
func (c *Cluster) AppsDone() bool {
	w := c.Eng.World()
	if w.Ranked() {
		// Each rank knows its own nodes' processes: agreed, collectively.
		done := true
		for _, n := range c.Nodes {
			if n.Eng.Local() {
				done = done && n.appsDone()
			}
		}
		return w.AllTrue(done)
	}
	for _, n := range c.Nodes {
		if !n.appsDone() {
			return false
		}
	}
	return true
}

func (n *Node) appsDone() bool {
	for _, core := range n.Cores {
		if !core.AppsDone() {
			return false
		}
	}
	return true
}
