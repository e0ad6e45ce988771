//go:build !mpi

package mpi

import (
	"strings"
	"testing"
)

// Built without MPI, a job of several ranks is refused, one rank is not.
func TestInitWithoutMPI(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_RANK", "1")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	if _, err := Init(); err == nil || !strings.Contains(err.Error(), "rank 1 of 2: this aaemu was built without MPI") {
		t.Fatalf("two ranks: %v", err)
	}
	t.Setenv("OMPI_COMM_WORLD_RANK", "0")
	t.Setenv("OMPI_COMM_WORLD_SIZE", "1")
	if w, err := Init(); w != nil || err != nil {
		t.Fatalf("one rank: %v, %v", w, err)
	}
}
