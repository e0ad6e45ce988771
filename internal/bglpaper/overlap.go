package bglpaper

import (
	"context"
	"fmt"
	"strings"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/torus"
	"github.com/aaemu/aaemu/workload"
)

// Overlap is the set-up of the compute-and-communicate figure
// (bglml.Overlap): two neighbours of a torus exchange a message a step
// while their main cores compute, the layer making progress by polling,
// by the coprocessor's communication thread (L111) or by interrupts
// (L94), for each message size and computation.
type Overlap struct {
	Dims    [3]int
	Sizes   []int // bytes: an eager and a rendezvous size
	Compute []int // cycles of computation a step
	Steps   int
}

// DefaultOverlap: 1 KB (eager) and 16 KB (rendezvous) messages, 0 to
// 80,000 cycles of computation a step, 8 steps, on a 2×2×2 torus.
func DefaultOverlap() Overlap {
	return Overlap{Dims: [3]int{2, 2, 2}, Sizes: []int{1024, 16384}, Compute: []int{0, 10000, 20000, 40000, 80000, 120000}, Steps: 8}
}

// ReducedOverlap is the test suite's: three computations, 3 steps.
func ReducedOverlap() Overlap {
	return Overlap{Dims: [3]int{2, 2, 2}, Sizes: []int{1024, 16384}, Compute: []int{0, 40000, 120000}, Steps: 3}
}

// overlapScheme is a series: a progress mode and a size.
func overlapScheme(g bglml.Progress, size int) workload.Scheme {
	return workload.Scheme(fmt.Sprintf("%v, %d B", g, size))
}

func parseOverlapScheme(s workload.Scheme) (bglml.Progress, int, error) {
	name, size, ok := strings.Cut(string(s), ", ")
	if !ok {
		return 0, 0, fmt.Errorf("bglpaper: series %q", s)
	}
	g, err := bglml.ParseProgress(name)
	if err != nil {
		return 0, 0, err
	}
	var n int
	if _, err := fmt.Sscanf(size, "%d B", &n); err != nil {
		return 0, 0, fmt.Errorf("bglpaper: series %q: %v", s, err)
	}
	return g, n, nil
}

// FigOverlap is the time of a step against the computation in it. The
// paper gives no figure of it: the coprocessor "can also help with
// communication tasks" through "a communication thread that runs
// constantly" (L111), and "the advance loop is capable of executing from
// an interrupt handler", at "about 103 cycles of context-switching
// overhead" (L94). The claims are what the mechanisms are for, measured.
func FigOverlap(o Overlap) *paper.Figure {
	spec := bgl.DefaultSpec(o.Dims[0], o.Dims[1], o.Dims[2])
	var schemes []workload.Scheme
	for _, n := range o.Sizes {
		for _, g := range bglml.Progresses {
			schemes = append(schemes, overlapScheme(g, n))
		}
	}
	period := float64(spec.Torus.Period())
	c := paper.NewCustom(paper.Custom{X: o.Compute, Schemes: schemes,
		XLabel: "computation a step", XUnit: "cycles", YLabel: "time a step", YUnit: "cycles"},
		func(_ context.Context, x int, _ string, s workload.Scheme) (float64, error) {
			g, n, err := parseOverlapScheme(s)
			if err != nil {
				return 0, err
			}
			d, err := bglml.Overlap(spec, bglml.DefaultParams(), Costs.Costs(), torus.Coord{}, torus.Coord{1, 0, 0}, g, n, x, o.Steps)
			return float64(d) / period, err
		})
	at := func(pts []paper.Point, s workload.Scheme, x int) float64 {
		for _, p := range series(pts, s) {
			if p.X == x {
				return p.Y
			}
		}
		return 0
	}
	big := o.Sizes[len(o.Sizes)-1]
	small := o.Sizes[0]
	most := o.Compute[len(o.Compute)-1]
	// hidden: at every computation, the step within 10 % of the longer of
	// the computation and the exchange alone (the mode's own, at 0).
	hidden := func(pts []paper.Point, g bglml.Progress) (string, bool) {
		s := overlapScheme(g, big)
		alone := at(pts, s, 0)
		worst, ok := 0.0, alone > 0
		for _, x := range o.Compute {
			r := at(pts, s, x) / max(float64(x), alone)
			worst = max(worst, r)
			ok = ok && r <= 1.1
		}
		poll := at(pts, overlapScheme(bglml.Polling, big), most)
		return fmt.Sprintf("at most %.3f× the longer (exchange alone %.0f cycles; at %d cycles of computation %.0f, polling %.0f)", worst, alone, most, at(pts, s, most), poll), ok
	}
	return &paper.Figure{
		Name:   "overlap",
		Title:  fmt.Sprintf("time a step vs computation a step, two neighbours of a %d×%d×%d torus exchanging %s B a step: polling, the communication thread, interrupts", o.Dims[0], o.Dims[1], o.Dims[2], joinInts(o.Sizes, " or ")),
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: fmt.Sprintf("communication thread hides a %d B exchange behind computation", big), Paper: "no number (L111)", Tolerance: "≤ 1.1× the longer of computation and exchange, every computation",
				Measure: func(pts []paper.Point) (string, bool) { return hidden(pts, bglml.Thread) }},
			{Text: fmt.Sprintf("interrupt-driven reception hides a %d B exchange's waits, not its work", big), Paper: "no number (L94)", Tolerance: "faster than polling at every computation; the computation longer by at most the main core's work of the exchange alone",
				Measure: func(pts []paper.Point) (string, bool) {
					s, ps := overlapScheme(bglml.Interrupts, big), overlapScheme(bglml.Polling, big)
					ok := true
					for _, x := range o.Compute[1:] {
						ok = ok && at(pts, s, x) < at(pts, ps, x)
					}
					excess := at(pts, s, most) - float64(most)
					ok = ok && excess <= at(pts, s, 0)
					return fmt.Sprintf("at %d cycles of computation %.0f, polling %.0f: the handlers' %.0f cycles of reading, writing and context switches on the main core (the exchange alone %.0f)", most, at(pts, s, most), at(pts, ps, most), excess, at(pts, s, 0)), ok
				}},
			{Text: "the thread's hand-offs cost, without computation", Paper: "no number (L111: coherence in software)", Tolerance: "thread slower than polling at 0 cycles, each size",
				Measure: func(pts []paper.Point) (string, bool) {
					var parts []string
					ok := true
					for _, n := range o.Sizes {
						p, t := at(pts, overlapScheme(bglml.Polling, n), 0), at(pts, overlapScheme(bglml.Thread, n), 0)
						parts = append(parts, fmt.Sprintf("%d B: %.0f against %.0f cycles (+%.0f)", n, t, p, t-p))
						ok = ok && t > p
					}
					return strings.Join(parts, "; "), ok
				}},
			{Text: fmt.Sprintf("interrupts cost eager messages that arrive during computation (%d B)", small), Paper: "103 cycles an interrupt (L94)", Tolerance: "interrupts slower than polling at the most computation",
				Measure: func(pts []paper.Point) (string, bool) {
					p, i := at(pts, overlapScheme(bglml.Polling, small), most), at(pts, overlapScheme(bglml.Interrupts, small), most)
					return fmt.Sprintf("%.0f against %.0f cycles (+%.0f, the packets' interrupts)", i, p, i-p), i > p
				}},
		},
	}
}

func joinInts(v []int, sep string) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, sep)
}
