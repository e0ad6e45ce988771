package workload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// The DHT over transport srd: 8 nodes × 32 cores, AA-SP, every table exact.
// A node holds one NIC context per peer it addressed (or that addressed
// it), never one per core per peer: with every node inserting into every
// shard that is the 7 others; with node 0 inserting into node 1 only, one
// each on those two and none elsewhere.
func TestDHTOverSRD(t *testing.T) {
	for _, tc := range []struct {
		procs int
		peers func(node int) int
	}{
		{32, func(int) int { return 7 }},
		{0, func(node int) int {
			if node < 2 {
				return 1
			}
			return 0
		}},
	} {
		t.Run(fmt.Sprintf("procs=%d", tc.procs), func(t *testing.T) {
			spec := machine.DefaultSpec()
			spec.Nodes, spec.Cores, spec.Transport = 8, 32, machine.TransportSRD
			c, err := aa.New(sim.NewEngine(1), spec)
			if err != nil {
				t.Fatal(err)
			}
			d := runChecked(t, c, DHTConfig{Scheme: AASP, Inserts: 12, Cells: 1 << 10, Collisions: 0.2, Procs: tc.procs, Seed: 1}, "AA-SP over srd")
			want := 12 * 8 * tc.procs
			if tc.procs == 0 {
				want = 12
			}
			if r := d.Result(); r.Inserts != want {
				t.Fatalf("%d inserts, want %d", r.Inserts, want)
			}
			for i, n := range c.Nodes {
				if got := n.NIC.Peers(); got != tc.peers(i) {
					t.Errorf("node %d holds %d contexts, want %d (the peers it talked to)", i, got, tc.peers(i))
				}
				if p := n.NIC.Pending(); len(p) != 0 {
					t.Errorf("node %d: pending %v", i, p)
				}
			}
		})
	}
}

// The schemes whose receivers post buffers per source node refuse srd.
func TestSRDRefusesPerSourceReceive(t *testing.T) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores, spec.Transport = 3, 2, machine.TransportSRD
	c, err := aa.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = SetupDHT(c, DHTConfig{Scheme: AM, Inserts: 4, Cells: 64, Procs: 2, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "needs a receive queue per source node") {
		t.Fatalf("AM over srd: %v", err)
	}
}
