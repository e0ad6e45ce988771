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
	// Far beyond a round at 10 MB/s: 2·per broadcasts of n bytes to 2·per-1 ranks.
	cfg.Limit = sim.Tick(4*per*per*n) * 100 * sim.NS
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
// round-robin placement, at 1+1 to 8+8 ranks, and across SMPs the
// two-stage one is faster once an SMP holds more than one rank (Table 3,
// reduced: 64 kB up to 2+2, then 16 kB and 8 kB, all above the PIO→RDMA
// crossover). 4+4 with block placement is the round that stalled under a
// test-and-set NIU lock (TestStartXLockFair).
func TestBcastTwoStage(t *testing.T) {
	for _, tc := range []struct{ per, n int }{{1, 64 << 10}, {2, 64 << 10}, {4, 16 << 10}, {8, 8 << 10}} {
		for _, rr := range []bool{false, true} {
			if tc.per == 1 && rr {
				continue // one rank an SMP: the same placement
			}
			t.Run(fmt.Sprintf("%d+%d round-robin=%v", tc.per, tc.per, rr), func(t *testing.T) {
				orig := bcastRound(t, tc.per, tc.n, mpi.Algorithms{}, rr)
				two := bcastRound(t, tc.per, tc.n, mpi.SMPAware{}, rr)
				ratio := float64(orig) / float64(two)
				t.Logf("%d bytes: original %v, two-stage %v: %.2f×", tc.n, orig, two, ratio)
				if tc.per == 1 && ratio != 1 {
					t.Errorf("one rank an SMP: the two broadcasts are one tree, want equal times, got %.2f×", ratio)
				}
				if tc.per > 1 && rr && ratio < 1.2 {
					t.Errorf("two-stage broadcast %.2f× as fast as the original with round-robin placement, want clearly faster", ratio)
				}
			})
		}
	}
}
