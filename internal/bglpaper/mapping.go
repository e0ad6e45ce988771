package bglpaper

import (
	"context"
	"fmt"
	"strings"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
	"github.com/aaemu/aaemu/workload"
)

// The series of the mapping figure.
const (
	xyzt   workload.Scheme = "XYZT"
	folded workload.Scheme = "folded (mapping file)"
)

// Mapping is the mapping figure's set-up: an 8×8 periodic grid of ranks
// (a BT/SP-like 2D decomposition, Figure 2) on a 4×4×4 torus.
type Mapping struct {
	Sizes []int
	Iters int
}

// DefaultMapping: halos of 1 to 16 KB, 4 exchanges.
func DefaultMapping() Mapping { return Mapping{Sizes: []int{1024, 4096, 16384}, Iters: 4} }

// ReducedMapping: 1 KB, 2 exchanges.
func ReducedMapping() Mapping { return Mapping{Sizes: []int{1024}, Iters: 2} }

// foldedFile is a mapping file that puts the 8×8 grid on the 4×4×4 torus
// with every grid neighbour one hop away: column i goes to x = i folded
// (0 1 2 3 3 2 1 0) and row j to y the same way; the two fold bits pick z
// in the ring order 0, 1, 2, 3 so that flipping either moves one hop.
func foldedFile() string {
	fold := func(i int) (int, int) {
		if i < 4 {
			return i, 0
		}
		return 7 - i, 1
	}
	ring := [2][2]int{{0, 3}, {1, 2}} // [fold of i][fold of j]
	var b strings.Builder
	b.WriteString("# 8×8 grid, rank = i + 8j, folded onto 4×4×4\n")
	for r := 0; r < 64; r++ {
		x, fi := fold(r % 8)
		y, fj := fold(r / 8)
		fmt.Fprintf(&b, "%d %d %d\n", x, y, ring[fi][fj])
	}
	return b.String()
}

// Halo is a 2D halo exchange on an 8×8 periodic grid of ranks placed by
// nodeOf on the 4×4×4 torus: each of iters steps, every rank receives
// from and sends size bytes to its four grid neighbours and waits for
// all. It returns the mean time a step takes.
func Halo(spec bgl.Spec, nodeOf []int, size, iters int) (sim.Tick, error) {
	spec, tc := mpiOn(spec, mpi.TorusConfig{}.WithProfile(Costs), nil)
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	var start, end sim.Tick
	var failed error
	_, err = mpi.RunTorus(m, mpi.Config{}, tc, nodeOf, func(c *mpi.Comm) {
		me := c.Rank()
		i, j := me%8, me/8
		nb := []int{(i+1)%8 + 8*j, (i+7)%8 + 8*j, i + 8*((j+1)%8), i + 8*((j+7)%8)}
		sb, rb := c.Alloc(size), c.Alloc(4*size)
		if err := c.Barrier(); err != nil {
			failed = err
			return
		}
		start = max(start, c.Now())
		for k := 0; k < iters; k++ {
			var qs []*mpi.Request
			for d, q := range nb {
				qs = append(qs, c.Irecv(mpi.Buf{Addr: rb.Addr + uint64(d*size), Len: size}, q, d^1))
			}
			for d, q := range nb {
				qs = append(qs, c.Isend(sb, q, d))
			}
			if _, err := c.Waitall(qs...); err != nil {
				failed = err
			}
		}
		end = max(end, c.Now())
	})
	if err != nil {
		return 0, err
	}
	if failed != nil {
		return 0, failed
	}
	return (end - start) / sim.Tick(iters), nil
}

// FigMapping is the rank-mapping claim (B17, Figure 2, L106–L107): the
// same 2D halo exchange with the default XYZT mapping, where a grid
// neighbour can be several hops away, and with a mapping file that folds
// the grid onto the torus so that every neighbour is one hop away.
func FigMapping(mp Mapping) *paper.Figure {
	spec := bgl.DefaultSpec(4, 4, 4)
	c := paper.NewCustom(paper.Custom{X: mp.Sizes, Schemes: []workload.Scheme{xyzt, folded},
		XLabel: "halo size", XUnit: "bytes", LogX: true, YLabel: "time a step", YUnit: "µs"},
		func(_ context.Context, x int, _ string, s workload.Scheme) (float64, error) {
			nodeOf := bgl.XYZT(torus.Coord{4, 4, 4})
			if s == folded {
				var err error
				if nodeOf, err = bgl.ReadMapping("folded.map", strings.NewReader(foldedFile()), torus.Coord{4, 4, 4}); err != nil {
					return 0, err
				}
			}
			t, err := Halo(spec, nodeOf, x, mp.Iters)
			return float64(t) / float64(sim.US), err
		})
	return &paper.Figure{
		Name:   "mapping",
		Title:  "rank mapping: a 2D halo exchange of an 8×8 periodic grid of ranks on a 4×4×4 torus, XYZT against a folded mapping file",
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: "B17 a mapping that keeps grid neighbours adjacent beats XYZT", Paper: "optimised mapping faster (Fig. 2)", Tolerance: "faster at every size",
				Measure: func(pts []paper.Point) (string, bool) {
					ok := true
					var rs []string
					for _, x := range mp.Sizes {
						var a, b float64
						for _, p := range pts {
							if p.X == x && p.Scheme == xyzt {
								a = p.Y
							} else if p.X == x {
								b = p.Y
							}
						}
						rs = append(rs, fmt.Sprintf("%.2f×", a/b))
						ok = ok && b < a
					}
					return "XYZT/folded " + strings.Join(rs, ", "), ok
				}},
		},
	}
}
