//go:build !mpi

package mpi

import (
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Built reports whether this aaemu was built with MPI (the mpi tag).
const Built = false

// Init joins the MPI job the process was started in. Without MPI built in,
// a job of several ranks is an error: running N copies of one simulation
// side by side would look like success.
func Init() (*World, error) {
	rank, size, ok := Launched()
	if !ok || size <= 1 {
		return nil, nil
	}
	return nil, fmt.Errorf("rank %d of %d: this aaemu was built without MPI, so it cannot share a run with other ranks; build it with `make build-mpi` (go build -tags mpi, needs libopenmpi-dev) or run one process", rank, size)
}

// World is MPI_COMM_WORLD; without the mpi tag Init never returns one.
type World struct{}

var _ sim.Comm = (*World)(nil)

func (w *World) Rank() int                                     { return 0 }
func (w *World) Size() int                                     { return 1 }
func (w *World) Exchange(send [][]byte, red []uint64) [][]byte { return send }
func (w *World) AllreduceMin(v []uint64)                       {}
func (w *World) Allgather(b []byte) [][]byte                   { return [][]byte{b} }

// Finalize ends MPI.
func (w *World) Finalize() {}

// Abort ends every rank of the job with code.
func (w *World) Abort(code int) {}
