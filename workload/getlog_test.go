package workload

import (
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Logging gets: every get returns its value, and with AA (R=1, RL=1,
// RLD=1: the target's IOMMU logs what each get read) and RMA (the source
// puts the value back) each target's log holds exactly the gets made to it.
// AA stays close to No-FT; RMA pays a fetch-and-add and a put per get.
func TestLoggingGets(t *testing.T) {
	res := map[Scheme]GetLogResult{}
	for _, s := range []Scheme{NoFT, AAPoll, RMA} {
		c := newCluster(t, func(sp *machine.Spec) { sp.Nodes, sp.Cores = 3, 2 })
		g, err := SetupGetLog(c, GetLogConfig{Scheme: s, Gets: 60, Procs: 2, Words: 64, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.S, c.AppsDone)
		if !c.AppsDone() {
			t.Fatalf("%s: did not finish", s)
		}
		r := g.Result()
		if !r.Verified {
			t.Fatalf("%s: %s", s, r.Problem)
		}
		res[s] = r
		t.Logf("%-7s %d gets, %8.0f gets/s, %.0f wire bytes per get, %v", s, r.Gets, r.GetsPerSec, r.WireBytes, sim.Tick(r.SimTimePS).Human())
	}
	if aa, noft := res[AAPoll].GetsPerSec, res[NoFT].GetsPerSec; aa < 0.8*noft {
		t.Errorf("AA %.0f gets/s against No-FT %.0f: logging in the IOMMU should cost little", aa, noft)
	}
	if res[RMA].GetsPerSec >= res[AAPoll].GetsPerSec {
		t.Errorf("RMA %.0f ≥ AA %.0f gets/s", res[RMA].GetsPerSec, res[AAPoll].GetsPerSec)
	}
	if res[RMA].WireBytes <= res[AAPoll].WireBytes {
		t.Errorf("RMA sends %.0f wire bytes per get, AA %.0f: RMA sends the data back", res[RMA].WireBytes, res[AAPoll].WireBytes)
	}
}
