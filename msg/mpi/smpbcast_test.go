package mpi_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

// bcastRound runs a broadcast round on two E5000s of per ranks each —
// every rank broadcasts n bytes in turn — and returns its time, checking
// that every rank got every root's bytes.
func bcastRound(t *testing.T, per, n int, coll mpi.Collectives, roundRobin bool) sim.Tick {
	t.Helper()
	c := startXCluster(t, per)
	cfg := startXConfig(mpi.StartXConfig{Block: true})
	cfg.Collectives = coll
	if roundRobin {
		cfg.Place, cfg.Ranks = mpi.RoundRobin(2), 2*per
	}
	cfg.Limit = sim.Tick(2*per*n) * 100 * sim.NS // far beyond a round at 10 MB/s
	var t0, t1 sim.Tick
	bad := 0
	_, err := mpi.Run(c, cfg, func(cm *mpi.Comm) {
		b := cm.Alloc(n)
		cm.Barrier()
		if cm.Rank() == 0 {
			t0 = cm.Now()
		}
		for root := 0; root < cm.Size(); root++ {
			if cm.Rank() == root {
				cm.Write(b, fill(n, root))
			}
			if err := cm.Bcast(b, root); err != nil {
				t.Error(err)
			}
			if !bytes.Equal(cm.Read(b), fill(n, root)) {
				bad++
			}
		}
		cm.Barrier()
		if cm.Rank() == 0 {
			t1 = cm.Now()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		t.Fatalf("%d broadcasts delivered other bytes", bad)
	}
	return t1 - t0
}

// Both broadcasts give every rank the root's bytes, with block and
// round-robin placement, and across SMPs the two-stage one is faster
// once an SMP holds more than one rank (Table 3, reduced: 64 kB, up to
// 2+2). At 4+4 with block placement the original broadcast does not
// finish: two RDMA transfers in opposite directions at once stall (an
// open bug of the channel device, see docs/mpi-start.md).
func TestBcastTwoStage(t *testing.T) {
	for _, rr := range []bool{false, true} {
		for _, per := range []int{1, 2} {
			t.Run(fmt.Sprintf("%d+%d round-robin=%v", per, per, rr), func(t *testing.T) {
				orig := bcastRound(t, per, 64<<10, mpi.Algorithms{}, rr)
				two := bcastRound(t, per, 64<<10, mpi.SMPAware{}, rr)
				ratio := float64(orig) / float64(two)
				t.Logf("original %v, two-stage %v: %.2f×", orig, two, ratio)
				if per > 1 && rr && ratio < 1.2 {
					t.Errorf("two-stage broadcast %.2f× as fast as the original with round-robin placement, want clearly faster", ratio)
				}
			})
		}
	}
}
