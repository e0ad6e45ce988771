package paper

import (
	"reflect"
	"testing"

	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// CheckEveryPoll (aaemu paper --check-every-poll) reaches the figures'
// clusters: their cores then run every polling check, so the kernel
// evaluates more, and the result is the same.
func TestCheckEveryPollReachesTheCores(t *testing.T) {
	defer func(old bool) { CheckEveryPoll = old }(CheckEveryPoll)
	var evals []uint64
	var results []workload.DHTResult
	for _, check := range []bool{false, true} {
		CheckEveryPoll = check
		c, err := clusterOf(2, 2, "srd")
		if err != nil {
			t.Fatal(err)
		}
		d, err := workload.SetupDHT(c, workload.DHTConfig{Scheme: workload.AASP, Inserts: 20, Cells: 256, Procs: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.S, c.AppsDone)
		if err := d.Verify(); err != nil {
			t.Fatal(err)
		}
		evals = append(evals, c.Cluster.Eng.World().UnitTicks())
		results = append(results, d.Result())
		c.Close()
	}
	if evals[1] <= evals[0] {
		t.Errorf("every poll checked: %d evaluations, sleeping %d: the option did not reach the cores", evals[1], evals[0])
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		t.Errorf("results differ: %+v and %+v", results[0], results[1])
	}
}
