package mpi_test

import (
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

// An MPI run asked to partition its cluster runs its nodes on one
// goroutine (the world's bookkeeping is shared): the race detector finds
// nothing, and the cluster says why.
func TestMPIPartitioned(t *testing.T) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores = 4, 2
	cluster, err := machine.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	cluster.SetPartitions(2)
	_, err = mpi.Run(cluster, mpi.Config{}, func(c *mpi.Comm) {
		in, out := c.Alloc(8), c.Alloc(8)
		c.WriteUint64s(in, []uint64{uint64(c.Rank())})
		c.Allreduce(in, out, mpi.SumUint64)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, why := cluster.Partitions(); n != 1 || why == "" {
		t.Errorf("partitions %d (%q), want 1 with a reason", n, why)
	}
}
