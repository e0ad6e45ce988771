package bgl

import (
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// Host is the machine as a message-passing library runs on it (the
// methods msg/mpi's Host asks for): its nodes' cores and memory, and its
// simulation run in slices until the ranks are done.
type Host struct{ M *Machine }

// Nodes is the machine's node count.
func (h Host) Nodes() int { return len(h.M.Nodes) }

// CoresPerNode is two (L32).
func (h Host) CoresPerNode() int { return len(h.M.Nodes[0].Cores) }

// Core is core k of node i.
func (h Host) Core(i, k int) *cpu.Core { return h.M.Nodes[i].Cores[k] }

// Alloc takes n bytes of node i's memory (there is nothing to register:
// the torus is written by the cores).
func (h Host) Alloc(i, n int) (uint64, error) { return h.M.Nodes[i].Alloc(n), nil }

// Serial runs the machine on one goroutine.
func (h Host) Serial(string) { h.M.World.SetPartitions(1) }

// Now is the simulated time.
func (h Host) Now() sim.Tick { return h.M.World.Now() }

// Run simulates until done returns true, checked every 5 µs of simulated
// time, or limit passes.
func (h Host) Run(limit sim.Tick, done func() bool) sim.Tick {
	const slice = 5 * sim.US
	w := h.M.World
	for w.Now() < limit {
		before := w.Now()
		until := min(before+slice, limit)
		if next := w.Next(); next > until && next <= limit {
			until = next
		}
		if w.Run(until) == before || done() {
			break
		}
	}
	return w.Now()
}
