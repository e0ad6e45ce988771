package mpi

import (
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Host is the machine the ranks run on: a machine.Cluster (Run), or
// another machine whose transports are not the cluster's (a Blue Gene/L
// torus, RunOn).
type Host interface {
	// Nodes and CoresPerNode are the machine's size.
	Nodes() int
	CoresPerNode() int
	// Core is a core of a node, where a rank's process runs.
	Core(node, core int) *cpu.Core
	// Alloc takes n bytes of a node's memory for a rank's buffers, usable
	// by every transport of the node (registered with its NICs).
	Alloc(node, n int) (uint64, error)
	// Serial makes the machine run on one goroutine (the ranks share the
	// world's bookkeeping).
	Serial(why string)
	// Run simulates until done returns true (checked every slice of
	// simulated time) or limit passes; Now is the simulated time.
	Run(limit sim.Tick, done func() bool) sim.Tick
	Now() sim.Tick
}

// clusterHost is a machine.Cluster as a Host.
type clusterHost struct{ c *machine.Cluster }

func (h clusterHost) Nodes() int                             { return len(h.c.Nodes) }
func (h clusterHost) CoresPerNode() int                      { return h.c.Spec.Cores }
func (h clusterHost) Core(node, core int) *cpu.Core          { return h.c.Nodes[node].Cores[core] }
func (h clusterHost) Serial(why string)                      { h.c.Serial(why) }
func (h clusterHost) Now() sim.Tick                          { return h.c.Now() }
func (h clusterHost) Run(l sim.Tick, d func() bool) sim.Tick { return h.c.Run(l, d) }

func (h clusterHost) Alloc(node, n int) (uint64, error) {
	nd := h.c.Nodes[node]
	a := nd.Alloc(uint64(n))
	return a, nd.Register(a, uint64(n), rw)
}
