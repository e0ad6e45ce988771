package workload

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// Incremental checkpointing: pages mapped W=1, WL=1, WLD=0 take remote puts
// and the IOMMU logs which page each touched. Every checkpoint copies exactly
// the pages written since the last one, fewer than the whole region, and
// the checkpoint restores the region byte for byte.
func TestIncrementalCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name               string
		pages, epochs, put int
	}{
		{"few writes", 64, 3, 10},
		{"many writes", 16, 2, 200},
		{"an idle epoch", 8, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, nil)
			k, err := SetupCheckpoint(c, CheckpointConfig{Pages: tc.pages, Epochs: tc.epochs, Puts: tc.put, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			c.Run(sim.S, c.AppsDone)
			if !c.AppsDone() {
				t.Fatal("the processes did not finish")
			}
			r := k.Result()
			if !r.Verified {
				t.Fatalf("%v", r.Problems)
			}
			if r.Records != tc.epochs*tc.put {
				t.Fatalf("%d log records for %d puts", r.Records, tc.epochs*tc.put)
			}
			for e, n := range r.PagesCopied {
				if tc.put > 0 && (n == 0 || n > tc.pages) {
					t.Fatalf("checkpoint %d copied %d of %d pages", e+1, n, tc.pages)
				}
			}
			t.Logf("pages copied per checkpoint %v of %d, %d records, %v", r.PagesCopied, tc.pages, r.Records, sim.Tick(r.SimTimePS).Human())
		})
	}
}
