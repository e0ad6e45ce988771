// Package am2paper is seed 000 (Lumetta, Mainwaring and Culler,
// Multi-Protocol Active Messages on a Cluster of SMP's) as aaemu paper
// am2: its Table 2 (LogGP and round trip of AM-II on shared memory and on
// Myrinet, single- and multi-protocol), Figure 4 (the send overhead by
// component), the bandwidth and half-power points, and the polling
// policies, measured on two E5000 nodes with Myrinet-class NIUs, and its
// Tables 4–6 (the Split-C applications' message counts and run times on one
// SMP, NOWs of U170 workstations and the Clump), with the reference's
// claims (A1–A16) checked against them.
package am2paper

import (
	"github.com/aaemu/aaemu/internal/paper"
)

func init() {
	paper.Register(&paper.Paper{
		Name:    "am2",
		Title:   "Multi-protocol Active Messages on a cluster of SMPs (Lumetta, Mainwaring, Culler): AM-II on E5000s with Myrinet, and Split-C applications",
		Figures: func() []*paper.Figure { return append(Figures(Full), appFigures(false)...) },
		Reduced: func() []*paper.Figure { return append(Figures(Reduced), appFigures(true)...) },
	})
}

// Sizes are what the figures run on: the paper's benchmarks, or reduced
// ones (fewer iterations, fewer message sizes) that take seconds.
type Sizes struct {
	Iters     int   // round trips and spaced messages a LogGP measurement averages
	Bandwidth []int // the ping-pong's message sizes
	Sends     int   // the sends Figure 4 averages
	Polls     int   // the idle polls a poll's cost averages
}

// Full is the paper's benchmarks' scale.
var Full = Sizes{
	Iters:     32,
	Bandwidth: []int{16, 64, 256, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10},
	Sends:     128,
	Polls:     1000,
}

// Reduced is what the test suite runs.
var Reduced = Sizes{
	Iters:     4,
	Bandwidth: []int{64, 1 << 10, 8 << 10, 32 << 10},
	Sends:     64,
	Polls:     256,
}

// Figures lists the microbenchmark figures, at sizes z; the applications'
// tables follow them (appFigures).
func Figures(z Sizes) []*paper.Figure {
	return []*paper.Figure{table2Figure(z), fig4Figure(z), bandwidthFigure(z), pollingFigure(z)}
}
