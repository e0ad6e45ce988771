// Package aa is the Active Access programming interface (Besta and
// Hoefler, ICS'15) over the machine: pages made active with AssocPage,
// access logs that the IOMMU fills and handlers consume (notification Poll,
// Int or SP), and ActiveFlush; a process's Ctx also carries the plain RMA
// verbs of package verbs.
package aa

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// System is Active Access on a cluster: the machine and, per node, its
// logs and flushing pages.
type System struct {
	*machine.Cluster
	Nodes []*Node // shadows the machine's: the same nodes with their AA state
}

// Node is one node of the machine with its access logs.
type Node struct {
	*machine.Node
	sys   *System
	logs  map[uint16]*Log
	flush map[uint16]uint64 // IUID → flushing page
	// spNotify are the SP logs' notifies by scratchpad slot: a write of a
	// slot concerns the one log that reads it.
	spNotify map[int]*cpu.Notify
}

// spWritten is the scratchpad's OnWrite.
func (n *Node) spWritten(slot int) {
	if x := n.spNotify[slot]; x != nil {
		x.Changed()
	}
}

// New builds a machine of spec s on engine e and Active Access over it.
func New(e *sim.Engine, s machine.Spec) (*System, error) {
	c, err := machine.New(e, s)
	if err != nil {
		return nil, err
	}
	return Over(c), nil
}

// Over puts Active Access on an existing machine.
func Over(c *machine.Cluster) *System {
	sys := &System{Cluster: c}
	for _, n := range c.Nodes {
		sys.Nodes = append(sys.Nodes, &Node{Node: n, sys: sys, logs: map[uint16]*Log{}, flush: map[uint16]uint64{}, spNotify: map[int]*cpu.Notify{}})
	}
	c.OnStop(func() {
		for _, n := range sys.Nodes {
			for _, l := range n.logs {
				l.Stop()
			}
		}
	})
	return sys
}

// Ctx is what a process uses to talk to the cluster: the AA verbs here and
// the RMA verbs of package verbs.
type Ctx struct {
	verbs.Ctx
	N *Node // shadows verbs.Ctx.N: the same node with its AA state
}

// Ctx is a context for process p using the connections of core k.
func (n *Node) Ctx(p *cpu.Proc, core int) *Ctx {
	return &Ctx{Ctx: verbs.Ctx{N: n.Node, P: p, Core: core}, N: n}
}

// OnCore is the same process using core k's connections (a server that
// answers on another core's queue pairs).
func (c *Ctx) OnCore(k int) *Ctx {
	x := c.N.Ctx(c.P, k)
	x.Rail = c.Rail
	return x
}

// OnRail is the same process using NIC r's connections (machine.Spec.NICs).
func (c *Ctx) OnRail(r int) *Ctx {
	x := *c
	x.Rail = r
	return &x
}

// Spawn starts body as a process on core k of node n.
func (n *Node) Spawn(core int, name string, body func(c *Ctx)) {
	n.Cores[core].Spawn(name, func(p *cpu.Proc) { body(n.Ctx(p, core)) })
}

// AssocPage changes the bits of a registered page: it makes the page active
// (AA bits, IUID) or plain again.
func (n *Node) AssocPage(addr uint64, p iommu.Perm) error { return n.SetBits(addr, p) }

// Log is node n's access log for iuid, or nil.
func (n *Node) Log(iuid uint16) *Log { return n.logs[iuid] }

// ActiveFlush returns when every active access this process issued to the
// log iuid on dst has been processed by dst's handler: an active get of the
// log's flushing page, whose completion dst's IOMMU withholds until the log
// is consumed (DESIGN.md §2.6).
func (c *Ctx) ActiveFlush(dst int, iuid uint16) error {
	return c.ActiveFlushLogs(dst, []uint16{iuid})
}

// ActiveFlushLogs is one flush(dst) over several of dst's logs (a log a
// process there): it returns when every active access this process issued
// to those logs has been processed. A flushing page serves one log, so the
// flush is a get of each log's page; they are posted together and then
// waited for, as one flush's reads, not one round trip after another.
func (c *Ctx) ActiveFlushLogs(dst int, iuids []uint16) error {
	pages := make([]uint64, len(iuids))
	for i, iuid := range iuids {
		page, ok := c.N.sys.Nodes[dst].flush[iuid]
		if !ok {
			return fmt.Errorf("node %d's log %d has no flushing page", dst, iuid)
		}
		pages[i] = page
	}
	buf := c.N.Scratch()
	wrs := make([]verbs.WR, len(pages))
	for i, page := range pages {
		wrs[i] = c.Get(dst, buf, page, 8)
	}
	var first error
	for _, w := range wrs {
		if _, err := c.Wait(w); err != nil && first == nil {
			first = err
		}
	}
	return first
}
