package workload

import (
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// The access counter: every scheme's counts equal the accesses made, per
// element; counting costs something over No-Cnt, and AA-Poll, which counts
// in the IOMMU's log, beats RMA's extra atomic per access.
func TestAccessCounter(t *testing.T) {
	res := map[Scheme]CounterResult{}
	for _, s := range []Scheme{NoCnt, AAPoll, RMA, AKV, Allreduce} {
		c := newCluster(t, func(sp *machine.Spec) { sp.Nodes, sp.Cores = 3, 2 })
		k, err := SetupCounter(c, CounterConfig{Scheme: s, Elements: 256, Accesses: 150, Procs: 2, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.S, c.AppsDone)
		if !c.AppsDone() {
			t.Fatalf("%s: did not finish", s)
		}
		r := k.Result()
		if !r.Verified {
			t.Fatalf("%s: %s", s, r.Problem)
		}
		res[s] = r
		t.Logf("%-9s %5d accesses, %9.0f accesses/s, %v", s, r.Accesses, r.AccessesPerSec, sim.Tick(r.SimTimePS).Human())
	}
	if res[AAPoll].AccessesPerSec <= res[RMA].AccessesPerSec {
		t.Errorf("AA-Poll %.0f ≤ RMA %.0f accesses/s", res[AAPoll].AccessesPerSec, res[RMA].AccessesPerSec)
	}
	for _, s := range []Scheme{AAPoll, RMA, AKV, Allreduce} {
		if res[s].AccessesPerSec > res[NoCnt].AccessesPerSec*1.001 {
			t.Errorf("%s %.0f accesses/s beats not counting at all (%.0f)", s, res[s].AccessesPerSec, res[NoCnt].AccessesPerSec)
		}
	}
	if _, err := SetupCounter(newCluster(t, nil), CounterConfig{Scheme: AM, Elements: 8, Accesses: 1, Procs: 1}); err == nil {
		t.Error("AM accepted for the counter")
	}
}
