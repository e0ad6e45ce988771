package workload

import (
	"sync/atomic"

	"github.com/aaemu/aaemu/sim"
)

// opProgress counts a workload's operations as its processes start them,
// for a progress display: it reads nothing the model depends on. The
// count is atomic: processes of several nodes may start operations at
// once (partitions).
type opProgress struct {
	started atomic.Int64
	total   int
}

func (p *opProgress) start() { p.started.Add(1) }

// Progress is the share of the workload's operations its processes have
// started, 0..1. Call it between slices of the run.
func (p *opProgress) Progress() float64 {
	if p.total <= 0 {
		return 0
	}
	return min(1, float64(p.started.Load())/float64(p.total))
}

// lastEnd is the latest time any process finished, noted by processes of
// every node: a maximum is the same in whatever order the nodes (which may
// run on several goroutines) note their times.
type lastEnd struct{ t atomic.Int64 }

func (e *lastEnd) note(t sim.Tick) {
	for {
		old := e.t.Load()
		if int64(t) <= old || e.t.CompareAndSwap(old, int64(t)) {
			return
		}
	}
}

func (e *lastEnd) get() sim.Tick { return sim.Tick(e.t.Load()) }
