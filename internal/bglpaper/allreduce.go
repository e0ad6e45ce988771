package bglpaper

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

// MPIAllreduce is the time of one MPI_Allreduce (a float64 sum) of size
// bytes with the collectives coll, on the world or (planes) on the
// communicators of the machine's z planes: reps allreduces after a
// barrier, the time until the last rank has the last over reps. It also
// returns what the collectives counted (mpi.Result.Collectives).
func MPIAllreduce(spec bgl.Spec, coll mpi.Collectives, size, reps int, planes bool) (sim.Tick, []mpi.CollStat, error) {
	return MPIAllreduceOp(spec, coll, mpi.SumFloat64, size, reps, planes)
}

// MPIAllreduceOp is MPIAllreduce of op (whole elements of op.Size bytes).
func MPIAllreduceOp(spec bgl.Spec, coll mpi.Collectives, op mpi.Op, size, reps int, planes bool) (sim.Tick, []mpi.CollStat, error) {
	if size < 8 || size%8 != 0 || reps < 1 {
		return 0, nil, fmt.Errorf("bglpaper: %d allreduces of %d bytes (whole float64s)", reps, size)
	}
	spec, tc := mpiOn(spec, mpi.TorusConfig{}.WithProfile(Costs), coll)
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, nil, err
	}
	plane := spec.Torus.Dims[0] * spec.Torus.Dims[1]
	var start, end sim.Tick
	var failed error
	res, err := mpi.RunTorus(m, mpi.Config{Collectives: coll}, tc, nil, func(w *mpi.Comm) {
		c := w
		if planes {
			if c, failed = w.Split(w.Rank()/plane, w.Rank()); failed != nil {
				return
			}
		}
		s, r := c.Alloc(size), c.Alloc(size)
		if err := w.Barrier(); err != nil {
			failed = err
			return
		}
		if w.Rank() == 0 {
			start = w.Now()
		}
		for k := 0; k < reps; k++ {
			if err := c.Allreduce(s, r, op); err != nil {
				failed = err
			}
		}
		end = max(end, w.Now())
	})
	if err != nil {
		return 0, nil, err
	}
	if failed != nil {
		return 0, nil, failed
	}
	return (end - start) / sim.Tick(reps), res.Collectives, nil
}
