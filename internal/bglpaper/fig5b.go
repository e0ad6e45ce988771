package bglpaper

import (
	"context"
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/collective"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
	"github.com/aaemu/aaemu/workload"
)

// The series of Figure 5b aaemu runs: MPICH2's broadcast, the message
// layer's torus broadcast with the deposit bit over three routes and over
// one, and the collective network's; then MPI_Bcast with Blue Gene/L's
// collectives (mpi.BGL) by each of its three implementations: the
// mesh-aware point-to-point broadcast (the paper's second curve), the
// deposit broadcast and the collective network (what MPI_COMM_WORLD
// takes).
const (
	mpich2   workload.Scheme = "mpich2"
	deposit3 workload.Scheme = "deposit, 3 routes"
	deposit1 workload.Scheme = "deposit, 1 route"
	treeNet  workload.Scheme = "collective network"
	mpiMesh  workload.Scheme = "MPI_Bcast, mesh-aware point-to-point"
	mpiDep   workload.Scheme = "MPI_Bcast, deposit"
	mpiTree  workload.Scheme = "MPI_Bcast, collective network"
)

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
	spec, tc := mpiOn(spec, mpi.TorusConfig{}.WithProfile(Costs), coll)
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	var start, end sim.Tick
	var failed error
	_, err = mpi.RunTorus(m, mpi.Config{Collectives: coll}, tc, nil, func(c *mpi.Comm) {
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
// of the paper's four implementations aaemu runs MPICH2's through MPI (a
// binomial tree, then scatter and ring allgather), which the paper says
// tops at about 60 MB/s, under half a link, and the message layer's
// broadcast with the deposit bit (collectives may use the message layer
// directly, L83), which it says tops a bit below two links, about 60 % of
// its peak of three, beside the same over one route; and the collective
// network's (L60: every node injects its contribution, the root the data,
// and reads the result), which it says reaches about 100 % of that
// network's 350 MB/s.
func Fig5b(bc Broadcast) *paper.Figure {
	spec := bgl.DefaultSpec(bc.Dims[0], bc.Dims[1], bc.Dims[2])
	spec.Torus.Mesh = true
	c := paper.NewCustom(paper.Custom{X: bc.Sizes, Schemes: []workload.Scheme{mpich2, deposit3, deposit1, treeNet, mpiMesh, mpiDep, mpiTree},
		XLabel: "message size", XUnit: "bytes", LogX: true, YLabel: "broadcast bandwidth", YUnit: "MB/s"},
		func(_ context.Context, x int, _ string, s workload.Scheme) (float64, error) {
			var coll mpi.Collectives
			switch s {
			case mpich2:
				coll = mpi.MPICH2{}
			case mpiMesh:
				coll = mpi.BGL{BcastWith: mpi.ImplMesh}
			case mpiDep:
				coll = mpi.BGL{BcastWith: mpi.ImplDeposit}
			case mpiTree:
				coll = mpi.BGL{}
			}
			if coll != nil {
				v, err := MPIBcast(spec, coll, x, bc.Reps)
				return v / 1e6, err
			}
			if s == treeNet {
				t, err := bgl.TreeBcast(spec, 0, x, nil)
				return float64(x) / (float64(t) / float64(sim.S)) / 1e6, err
			}
			routes := 3
			if s == deposit1 {
				routes = 1
			}
			t, err := bglml.BcastTime(spec, bglml.DefaultParams(), Costs.Costs(), routes, x, nil)
			return float64(x) / (float64(t) / float64(sim.S)) / 1e6, err
		})
	link := 700e6 / float64(spec.Torus.CyclesPerByte) * float64(torus.MaxPayload) / float64(torus.MaxPacketBytes+spec.Torus.WireOverheadBytes) / 1e6
	// The collective network's payload rate: 0.5 B/cycle × 256/266.
	treeRate := 700e6 / float64(spec.Collective.CyclesPerByte) * collective.PacketBytes / float64(collective.PacketBytes+spec.Collective.WireOverheadBytes) / 1e6
	return &paper.Figure{
		Name:   "5b",
		Title:  fmt.Sprintf("broadcast bandwidth vs message size, %d×%d×%d mesh: MPICH2's through MPI, the message layer's deposit-bit broadcast over three routes and one, the collective network's, and MPI_Bcast by each of BGL's three", bc.Dims[0], bc.Dims[1], bc.Dims[2]),
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: "B12 MPICH2's broadcast plateau", Paper: "≈60 MB/s (< ½ link)", Tolerance: "40–80 MB/s",
				Measure: func(pts []paper.Point) (string, bool) {
					v := top(pts, mpich2)
					return fmt.Sprintf("%.1f MB/s", v), within(v, 40, 80)
				}},
			{Text: "B11 deposit-bit broadcast plateau over its peak (three links)", Paper: "≈60 %, just under 2 links", Tolerance: "45–75 %",
				Measure: func(pts []paper.Point) (string, bool) {
					v := top(pts, deposit3)
					f := v / (3 * link)
					if within(f, 0.45, 0.75) {
						return fmt.Sprintf("%.0f %% (%.1f MB/s)", 100*f, v), true
					}
					return fmt.Sprintf("%.0f %% (%.1f MB/s of %.1f): %s", 100*f, v, 3*link, why("aaemu's per-packet software is cheaper than the paper's (Table 1), so the forwarding cores keep up with more",
						"the table1 profile adds Table 1's per-message remainder to the four point-to-point protocols; the deposit broadcast forwards packets with the estimated per-packet steps, so the forwarding cores keep up with more")), false
				}},
			{Text: "B13 three routes against one", Paper: "up to 3×", Tolerance: "2–3×",
				Measure: func(pts []paper.Point) (string, bool) {
					f := top(pts, deposit3) / top(pts, deposit1)
					return fmt.Sprintf("%.2f×", f), within(f, 2, 3)
				}},
			{Text: "B10 collective-network broadcast plateau", Paper: "≈350 MB/s (≈100 %)", Tolerance: fmt.Sprintf("≥ 90 %% of 0.5 B/cycle × η (%.1f MB/s)", treeRate),
				Measure: func(pts []paper.Point) (string, bool) {
					v := top(pts, treeNet)
					return fmt.Sprintf("%.1f MB/s (%.0f %%)", v, 100*v/treeRate), v >= 0.9*treeRate && v <= treeRate+0.05
				}},
			{Text: "B10 MPI_Bcast on MPI_COMM_WORLD (BGL's choice: the collective network) plateau", Paper: "≈350 MB/s (≈100 %)", Tolerance: fmt.Sprintf("≥ 90 %% of 0.5 B/cycle × η (%.1f MB/s)", treeRate),
				Measure: func(pts []paper.Point) (string, bool) {
					v := top(pts, mpiTree)
					return fmt.Sprintf("%.1f MB/s (%.0f %%; the collective network alone %.1f)", v, 100*v/treeRate, top(pts, treeNet)), v >= 0.9*treeRate && v <= treeRate+0.05
				}},
			{Text: "B11 MPI_Bcast by the deposit broadcast, plateau over its peak (three links)", Paper: "≈60 %, just under 2 links", Tolerance: "45–75 %",
				Measure: func(pts []paper.Point) (string, bool) {
					v := top(pts, mpiDep)
					f := v / (3 * link)
					if within(f, 0.45, 0.75) {
						return fmt.Sprintf("%.0f %% (%.1f MB/s)", 100*f, v), true
					}
					return fmt.Sprintf("%.0f %% (%.1f MB/s of %.1f; the message layer's alone %.1f): %s, and MPI adds a call and a wait around the layer's broadcast, nothing per packet", 100*f, v, 3*link, top(pts, deposit3), why("aaemu's per-packet software is cheaper than the paper's (Table 1)",
						"the deposit broadcast's per-packet software is the estimated profile's under table1 too")), false
				}},
			{Text: "L197 MPICH2's broadcast beats both mesh-aware ones (point-to-point, deposit) at the smallest size", Paper: "\"outperforms both … for small message lengths\"", Tolerance: "MPICH2 above both",
				Measure: func(pts []paper.Point) (string, bool) {
					at := func(s workload.Scheme) float64 { return series(pts, s)[0].Y }
					m, p2p, dep := at(mpich2), at(mpiMesh), at(mpiDep)
					ok := m > p2p && m > dep
					note := ""
					if !ok {
						note = ": " + why("aaemu's deposit broadcast is the message layer's, a packet's forward costing a few hundred cycles (Table 1: a fifth of the paper's software), where MPICH2's pays MPI's per-message costs at every step",
							"aaemu's deposit broadcast is the message layer's, a packet's forward costing a few hundred cycles (no Table 1 remainder: it is none of the four protocols), where MPICH2's pays Table 1's per-message costs at every step")
					}
					return fmt.Sprintf("%d B: MPICH2 %.1f, mesh-aware point-to-point %.1f, deposit %.1f MB/s%s", series(pts, mpich2)[0].X, m, p2p, dep, note), ok
				}},
		},
	}
}
