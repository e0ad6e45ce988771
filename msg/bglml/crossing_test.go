package bglml

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// cutLoad summarises a run's crossings: the cut links' cycles (both
// directions), their least, mean and most, and the efficiency the
// busiest link allows: the bound over the time the busiest link needs
// for what crossed on it.
type cutLoad struct {
	lo, mean, hi int64
	ceiling      float64
}

func loadOf(c *CutCrossings, spec bgl.Spec, size int) cutLoad {
	var all []int64
	for k := range c.Cycles {
		all = append(all, c.Cycles[k]...)
	}
	var sum int64
	for _, v := range all {
		sum += v
	}
	l := cutLoad{lo: slices.Min(all), hi: slices.Max(all), mean: sum / int64(len(all))}
	l.ceiling = float64(BisectionTime(spec, size)) / (float64(l.hi) * float64(spec.Torus.Period()))
	return l
}

// adaptiveCut is the load a minimal adaptive route that picks uniformly
// at random, at every hop, among the dimensions with hops left would put
// on each link across the middle of x (towards x+, index y + Y·z) in an
// alltoall of one packet a pair on a mesh of dims: the expected number
// of packets crossing there. Dimension order crosses at the source's
// (y, z): (X/2)·(N/2) on every link.
func adaptiveCut(dims [3]int) []float64 {
	X, Y, Z := dims[0], dims[1], dims[2]
	mid := X/2 - 1
	load := make([]float64, Y*Z)
	abs := func(v int) int { return max(v, -v) }
	// For a pair, the route is a random walk in the box of hops left:
	// at (a, b, c) hops left, each dimension with hops left equally
	// likely. The cut is crossed on the x hop from x = mid.
	for sx := 0; sx <= mid; sx++ {
		for dx := mid + 1; dx < X; dx++ {
			hx := dx - sx
			before := mid - sx // x hops before the crossing one
			for sy := 0; sy < Y; sy++ {
				for dy := 0; dy < Y; dy++ {
					for sz := 0; sz < Z; sz++ {
						for dz := 0; dz < Z; dz++ {
							hy, hz := abs(dy-sy), abs(dz-sz)
							sgy, sgz := sign(dy-sy), sign(dz-sz)
							// p[i][j][k]: probability of having made i x
							// hops, j y hops and k z hops.
							p := make([]float64, (hx+1)*(hy+1)*(hz+1))
							idx := func(i, j, k int) int { return (i*(hy+1)+j)*(hz+1) + k }
							p[0] = 1
							for i := 0; i <= hx; i++ {
								for j := 0; j <= hy; j++ {
									for k := 0; k <= hz; k++ {
										q := p[idx(i, j, k)]
										if q == 0 {
											continue
										}
										n := 0
										for _, left := range []int{hx - i, hy - j, hz - k} {
											if left > 0 {
												n++
											}
										}
										if n == 0 {
											continue
										}
										q /= float64(n)
										if i < hx {
											if i == before {
												load[(sy+sgy*j)+Y*(sz+sgz*k)] += q
											}
											p[idx(i+1, j, k)] += q
										}
										if j < hy {
											p[idx(i, j+1, k)] += q
										}
										if k < hz {
											p[idx(i, j, k+1)] += q
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return load
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// TestAdaptiveCutModel: dimension order loads the cut evenly, random
// minimal adaptive routing does not: its busiest cut link carries more
// than the mean, the middle of (y, z) more than the corners, and every
// crossing pair is counted once.
func TestAdaptiveCutModel(t *testing.T) {
	for _, dims := range [][3]int{{4, 4, 4}, {8, 8, 8}} {
		load := adaptiveCut(dims)
		X, Y, Z := dims[0], dims[1], dims[2]
		var sum float64
		for _, v := range load {
			sum += v
		}
		pairs := float64(X/2*Y*Z) * float64(X/2*Y*Z)
		if d := sum - pairs; d > 1e-6*pairs || d < -1e-6*pairs {
			t.Errorf("%v: %.3f crossings, want %.0f (every pair once)", dims, sum, pairs)
		}
		mean := sum / float64(len(load))
		hi, corner := slices.Max(load), load[0]
		centre := load[Y/2+Y*(Z/2)]
		t.Logf("%v: random minimal adaptive, per cut link: corner %.0f, centre %.0f, least %.0f, most %.0f, mean %.0f (dimension order: %.0f on every link); mean/most %.3f",
			dims, corner, centre, slices.Min(load), hi, mean, mean, mean/hi)
		if !(hi > 1.05*mean && centre > corner) {
			t.Errorf("%v: the random adaptive cut is not centre-heavy: corner %.0f, centre %.0f, mean %.0f, most %.0f", dims, corner, centre, mean, hi)
		}
	}
}

// TestAlltoallCrossings measures, on the 4×4×4 mesh at 952 B, where the
// optimised alltoall's packets cross the middle of x under each router
// selection, and requires the crossings to account for every packet
// that must cross ((N/2)² pairs each way, four packets each), x first
// to cross at the source's (y, z) and x last at the destination's more
// often than the most tokens does, and x first to load the cut's links
// more evenly.
func TestAlltoallCrossings(t *testing.T) {
	if testing.Short() {
		t.Skip("four alltoalls")
	}
	atSrc, atDst, even := map[torus.Selection]float64{}, map[torus.Selection]float64{}, map[torus.Selection]float64{}
	defer func() {
		tk := torus.SelectTokens
		if !(atSrc[torus.SelectXFirst] > atSrc[tk] && atDst[torus.SelectXLast] > atDst[tk] && even[torus.SelectXFirst] > even[tk]) {
			t.Errorf("at the source: %v; at the destination: %v; mean/most: %v", atSrc, atDst, even)
		}
	}()
	for _, sel := range []torus.Selection{torus.SelectTokens, torus.SelectXFirst, torus.SelectXLast, torus.SelectHops} {
		spec := bgl.DefaultSpec(4, 4, 4)
		spec.Torus.Mesh = true
		spec.Torus.Selection = sel
		r, err := AlltoallWith(spec, DefaultParams(), DefaultCosts(), 952, Spread, 1, AlltoallOptions{Crossings: true})
		if err != nil {
			t.Fatal(err)
		}
		c := r.Crossings
		n := c.AtSrc + c.AtDst + c.AtBoth + c.Elsewhere
		if want := int64(2 * 32 * 32 * 4); n != want {
			t.Errorf("%v: %d crossings, want %d", sel, n, want)
		}
		l := loadOf(c, spec, 952)
		atSrc[sel] = float64(c.AtSrc) / float64(n)
		atDst[sel] = float64(c.AtDst) / float64(n)
		even[sel] = float64(l.mean) / float64(l.hi)
		eff := 100 * float64(BisectionTime(spec, 952)) / float64(r.Time)
		t.Logf("%-6v %.1f %% of the bound, %d escapes; crossed at the source's (y,z) %s %%, the destination's %s %%, both %s %%, elsewhere %s %%; offsets from the source %v; cut link cycles %d..%d mean %d (mean/most %.3f), the busiest link allows %.1f %%",
			sel, eff, r.Escaped, pc(c.AtSrc, n), pc(c.AtDst, n), pc(c.AtBoth, n), pc(c.Elsewhere, n), c.Offset,
			l.lo, l.hi, l.mean, float64(l.mean)/float64(l.hi), 100*l.ceiling)
		t.Logf("%v: the cut's links busy, both ways' mean, %% of the run (a row per z, y across):\n%s", sel, cutMap(c, spec, r.Time))
	}
}

// cutMap is the cut's links' busy time, both ways' mean, in % of a run
// of time t: a row per z, y across.
func cutMap(c *CutCrossings, spec bgl.Spec, t sim.Tick) string {
	var b strings.Builder
	Y, Z := spec.Torus.Dims[1], spec.Torus.Dims[2]
	for z := 0; z < Z; z++ {
		for y := 0; y < Y; y++ {
			v := float64(c.Cycles[0][y+Y*z]+c.Cycles[1][y+Y*z]) / 2 * float64(spec.Torus.Period()) / float64(t)
			fmt.Fprintf(&b, " %5.1f", 100*v)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func pc(a, n int64) string { return fmt.Sprintf("%.1f", 100*float64(a)/float64(n)) }
