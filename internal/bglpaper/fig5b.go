package bglpaper

import (
	"context"
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// The series of Figure 5b aaemu runs: MPICH2's broadcast.
const mpich2 workload.Scheme = "mpich2"

// Broadcast is Figure 5b's set-up: the mesh, the message sizes and the
// broadcasts timed at each.
type Broadcast struct {
	Dims  [3]int
	Sizes []int
	Reps  int
}

// DefaultBroadcast is the paper's 4×4×2 mesh (L197), 1 KB to 256 KB.
func DefaultBroadcast() Broadcast {
	return Broadcast{Dims: [3]int{4, 4, 2}, Sizes: []int{1024, 4096, 16384, 65536, 262144}, Reps: 2}
}

// ReducedBroadcast is the test suite's: 2×2×2, three sizes.
func ReducedBroadcast() Broadcast {
	return Broadcast{Dims: [3]int{2, 2, 2}, Sizes: []int{1024, 16384, 65536}, Reps: 1}
}

// MPIBcast is the bandwidth of MPI_Bcast of size bytes from rank 0 over
// the torus transport with the collectives coll: reps broadcasts after a
// barrier, size × reps over the time until the last rank has the last.
func MPIBcast(spec bgl.Spec, coll mpi.Collectives, size, reps int) (float64, error) {
	if size < 1 || reps < 1 {
		return 0, fmt.Errorf("bglpaper: %d broadcasts of %d bytes", reps, size)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	var start, end sim.Tick
	var failed error
	_, err = mpi.RunTorus(m, mpi.Config{Collectives: coll}, mpi.TorusConfig{}, nil, func(c *mpi.Comm) {
		b := c.Alloc(size)
		if err := c.Barrier(); err != nil {
			failed = err
			return
		}
		if c.Rank() == 0 {
			start = c.Now()
		}
		for k := 0; k < reps; k++ {
			if err := c.Bcast(b, 0); err != nil {
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
	return float64(size*reps) / (float64(end-start) / float64(sim.S)), nil
}

// Fig5b is broadcast bandwidth against message size on a mesh (L197–L198):
// of the paper's four implementations aaemu runs MPICH2's (a binomial
// tree, then scatter and ring allgather), which the paper says tops at
// about 60 MB/s, under half a link.
func Fig5b(bc Broadcast) *paper.Figure {
	spec := bgl.DefaultSpec(bc.Dims[0], bc.Dims[1], bc.Dims[2])
	spec.Torus.Mesh = true
	c := paper.NewCustom(paper.Custom{X: bc.Sizes, Schemes: []workload.Scheme{mpich2},
		XLabel: "message size", XUnit: "bytes", LogX: true, YLabel: "broadcast bandwidth", YUnit: "MB/s"},
		func(_ context.Context, x int, _ string, _ workload.Scheme) (float64, error) {
			v, err := MPIBcast(spec, mpi.MPICH2{}, x, bc.Reps)
			return v / 1e6, err
		})
	return &paper.Figure{
		Name:   "5b",
		Title:  fmt.Sprintf("MPI_Bcast bandwidth vs message size, %d×%d×%d mesh, MPICH2's broadcast", bc.Dims[0], bc.Dims[1], bc.Dims[2]),
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: "B12 MPICH2's broadcast plateau", Paper: "≈60 MB/s (< ½ link)", Tolerance: "40–80 MB/s",
				Measure: func(pts []paper.Point) (string, bool) {
					top := 0.0
					for _, p := range pts {
						top = max(top, p.Y)
					}
					return fmt.Sprintf("%.1f MB/s", top), within(top, 40, 80)
				}},
		},
	}
}
