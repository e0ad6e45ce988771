package workload

import (
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// The XOR checksum checkpoint: N processes fold K words each into node 0's
// checksum. Both schemes must leave the exact XOR of every checkpoint; AA's
// single put per process takes at most half the PCIe transactions at the
// target that RMA's per-word atomics do (the paper: N·K against 2·N·K).
func TestXORCheckpoint(t *testing.T) {
	for _, nodes := range []int{2, 4} {
		res := map[Scheme]XORResult{}
		for _, s := range []Scheme{AASP, RMA} {
			c := newCluster(t, func(sp *machine.Spec) { sp.Nodes = nodes })
			x, err := SetupXORCheckpoint(c, XORConfig{Scheme: s, Words: 512, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			c.Run(sim.S, c.AppsDone)
			if !c.AppsDone() {
				t.Fatalf("%s: did not finish", s)
			}
			r := x.Result()
			if !r.Verified {
				t.Fatalf("%s on %d nodes: %s", s, nodes, r.Problem)
			}
			res[s] = r
			t.Logf("%d nodes %-5s: %d processes × %d words, %d TLPs at the target, %d remote ops, %v",
				nodes, s, r.Processes, r.Words, r.TargetTLPs, r.RemoteOps, sim.Tick(r.SimTimePS).Human())
		}
		if aa, rma := res[AASP].TargetTLPs, res[RMA].TargetTLPs; aa == 0 || 2*aa > rma {
			t.Errorf("%d nodes: AA %d TLPs at the target, RMA %d: want AA at most half", nodes, aa, rma)
		}
	}
	if _, err := SetupXORCheckpoint(newCluster(t, nil), XORConfig{Scheme: AM, Words: 8}); err == nil {
		t.Error("AM accepted: the workload has no active-message variant")
	}
}
