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

// The series of the hot-spot figure.
const (
	eagerDet    workload.Scheme = "eager (deterministic)"
	rdvAdaptive workload.Scheme = "rendezvous (adaptive)"
)

// HotSpot is the hot-spot figure's set-up: the torus, the message sizes,
// the messages each node sends.
type HotSpot struct {
	Dims  [3]int
	Sizes []int
	Msgs  int
}

// DefaultHotSpot: all 63 other nodes of a 4×4×4 torus into one.
func DefaultHotSpot() HotSpot {
	return HotSpot{Dims: [3]int{4, 4, 4}, Sizes: []int{960, 3840, 15360}, Msgs: 2}
}

// ReducedHotSpot: 31 nodes of a 4×4×2 torus, one size.
func ReducedHotSpot() HotSpot { return HotSpot{Dims: [3]int{4, 4, 2}, Sizes: []int{2000}, Msgs: 2} }

// FigHotSpot is the paper's hot-spot claim (L53, L129) as a figure: every
// node sends to one, by the deterministic eager protocol and by the
// adaptively routed rendezvous; the payload the hot node takes per second.
// The paper gives no numbers, only that deterministic routing congests.
func FigHotSpot(h HotSpot) *paper.Figure {
	spec := bgl.DefaultSpec(h.Dims[0], h.Dims[1], h.Dims[2])
	params := bglml.Params{EagerMax: 1 << 20, Batch: bglml.DefaultParams().Batch}
	c := paper.NewCustom(paper.Custom{X: h.Sizes, Schemes: []workload.Scheme{eagerDet, rdvAdaptive},
		XLabel: "message size", XUnit: "bytes", LogX: true, YLabel: "throughput into the hot node", YUnit: "MB/s"},
		func(_ context.Context, x int, _ string, s workload.Scheme) (float64, error) {
			proto := bglml.Eager
			if s == rdvAdaptive {
				proto = bglml.Rendezvous
			}
			v, err := bglml.HotSpot(spec, params, Costs.Costs(), torus.Coord{}, proto, x, h.Msgs)
			return v / 1e6, err
		})
	return &paper.Figure{
		Name:   "hotspot",
		Title:  fmt.Sprintf("hot spot: every other node of a %d×%d×%d torus sends %d messages to one, message layer", h.Dims[0], h.Dims[1], h.Dims[2], h.Msgs),
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: "B9 adaptive rendezvous takes more into a hot spot than deterministic eager", Paper: "deterministic routing creates hot spots", Tolerance: "higher at every size",
				Measure: func(pts []paper.Point) (string, bool) {
					ok := true
					var rs []string
					for _, x := range h.Sizes {
						var e, r float64
						for _, p := range pts {
							if p.X == x && p.Scheme == eagerDet {
								e = p.Y
							} else if p.X == x {
								r = p.Y
							}
						}
						rs = append(rs, fmt.Sprintf("%.2f×", r/e))
						ok = ok && r > e
					}
					return "rendezvous/eager " + strings.Join(rs, ", "), ok
				}},
		},
	}
}
