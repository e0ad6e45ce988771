package workload

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// The completion-queue polls of the verbs load their word only after a
// write to its line (cpu.Proc.PollWord): the DHT, under several schemes
// and transports and on two partitions, ends with the same statistics,
// simulated times, transaction log and results as with a load on every
// check.
func TestPollWatchMatchesEveryCheck(t *testing.T) {
	cases := []struct {
		name      string
		scheme    Scheme
		transport string
		nodes     int
		procs     int
	}{
		{"AA-SP, srd, 4×8", AASP, machine.TransportSRD, 4, 8},
		{"AA-Poll, rc, 3×4", AAPoll, "", 3, 4},
		{"RMA, rc, 2×2", RMA, "", 2, 2},
		{"RMA, srd, 4×4", RMA, machine.TransportSRD, 4, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(watch bool) string {
				c := newCluster(t, func(s *machine.Spec) {
					s.Nodes, s.Cores = tc.nodes, tc.procs
					if tc.transport != "" {
						s.Transport = tc.transport
					}
				})
				for _, n := range c.Nodes {
					for _, core := range n.Cores {
						core.SetPollWatch(watch)
					}
				}
				c.Eng.World().EnableTxnLog()
				d, err := SetupDHT(c, DHTConfig{Scheme: tc.scheme, Inserts: 60, Cells: 1 << 12, Collisions: 0.1, Procs: tc.procs, Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				c.SetPartitions(2)
				end := c.Run(sim.S, c.AppsDone)
				if err := d.Verify(); err != nil {
					t.Fatal(err)
				}
				snap, err := json.Marshal(c.Eng.World().Snapshot().Stats)
				if err != nil {
					t.Fatal(err)
				}
				txns := c.Eng.World().TxnLog()
				return fmt.Sprintf("end %d\nresult %+v\ntransactions %d %v\nstats %s", end, d.Result(), len(txns), txns, snap)
			}
			every, watched := run(false), run(true)
			if every != watched {
				t.Fatalf("loading on every check and on writes only differ:\n%.3000s\n\n%.3000s", every, watched)
			}
		})
	}
}
