package mpi_test

import (
	"testing"

	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

// pingPong is the one-way time of n-byte messages between rank 0 and
// rank peer (1: the same SMP; 2: the other), averaged over reps round
// trips, on two E5000s with StarT-X and the given crossover.
func pingPong(t *testing.T, n, peer, reps, crossover int) sim.Tick {
	c := startXCluster(t, 2)
	var d sim.Tick
	_, err := mpi.Run(c, startXConfig(mpi.StartXConfig{Block: true, Params: mpi.Params{EagerLimit: crossover}}), func(cm *mpi.Comm) {
		b := cm.Alloc(n+1).Slice(0, n)
		switch cm.Rank() {
		case 0:
			cm.Send(b, peer, 0)
			cm.Recv(b, peer, 0)
			t0 := cm.Now()
			for i := 0; i < reps; i++ {
				cm.Send(b, peer, 0)
				cm.Recv(b, peer, 0)
			}
			d = (cm.Now() - t0) / sim.Tick(2*reps)
		case peer:
			for i := 0; i <= reps; i++ {
				cm.Recv(b, 0, 0)
				cm.Send(b, 0, 0)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Figure 1 (reduced): MPI ping-pong inside an SMP (shared memory) and
// between SMPs (StarT-X). The network's large-message bandwidth is near
// the RDMA engine's raw rate (one copy each side hidden); shared memory's,
// two streaming copies through the receiver's blocks overlapped, passes
// the paper's 150 MB/s and is over twice the network's. The small-message
// latencies are not asserted because the model disagrees
// (docs/mpi-start.md): here a small message is faster over StarT-X than
// through shared memory.
func TestFigure1Shape(t *testing.T) {
	mbps := func(n int, d sim.Tick) float64 { return float64(n) / (float64(d) / float64(sim.US)) }
	shm0, net0 := pingPong(t, 0, 1, 4, 1024), pingPong(t, 0, 2, 4, 1024)
	const big = 256 << 10
	shmBW, netBW := mbps(big, pingPong(t, big, 1, 2, 1024)), mbps(big, pingPong(t, big, 2, 2, 1024))
	t.Logf("0 B one way: shm %v, network %v; %d B: shm %.1f MB/s, network %.1f MB/s", shm0, net0, big, shmBW, netBW)
	if netBW < 50 || netBW > 70 {
		t.Errorf("network %.1f MB/s: want near the RDMA engine's raw 66.7 MB/s (nic/startx TestRDMABandwidth)", netBW)
	}
	if shmBW < 150 || shmBW < 2*netBW {
		t.Errorf("bandwidth: shared memory %.1f MB/s, want over 150 MB/s and twice the network's %.1f MB/s", shmBW, netBW)
	}
}
