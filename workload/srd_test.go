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

// The active-message schemes over srd: a server's one receive queue per
// core takes every node's messages, the completion naming the sender. Every
// table exact after inserts, lookups and deletes (a delete acts only after
// its sender's inserts: the done flags count per source), with a receive
// ring smaller than the messages a server awaits (its buffers posted again
// as they are taken, senders NAKed receiver-not-ready when it runs dry), and
// the access counter's A-KV counting every access.
func TestActiveMessagesOverSRD(t *testing.T) {
	for _, tc := range []struct {
		scheme Scheme
		ring   int // the queues' size: the receive pool of a server's core
	}{
		{AM, 256}, {AM, 4}, {AMExp, 256}, {AMOnload, 256}, {AMOnload, 4}, {AMInt, 256}, {AMInt, 8},
	} {
		t.Run(fmt.Sprintf("%s/ring=%d", tc.scheme, tc.ring), func(t *testing.T) {
			spec := machine.DefaultSpec()
			spec.Nodes, spec.Cores, spec.Transport, spec.SQSize = 5, 4, machine.TransportSRD, tc.ring
			c, err := aa.New(sim.NewEngine(1), spec)
			if err != nil {
				t.Fatal(err)
			}
			d := runChecked(t, c, DHTConfig{Scheme: tc.scheme, Inserts: 30, Cells: 1 << 10, Collisions: 0.2, Procs: 4, OnloadCores: 1,
				Lookups: 0.3, Deletes: 0.3, AMIntCount: DefaultAMIntCount, PollPS: 50_000, Seed: 2}, string(tc.scheme)+" over srd")
			r := d.Result()
			if want := 30 * 5 * 4; tc.scheme != AMOnload && r.Inserts != want {
				t.Fatalf("%d inserts, want %d", r.Inserts, want)
			}
			if r.Deletes == 0 {
				t.Fatal("no deletes")
			}
			rnr := 0
			for i, n := range c.Nodes {
				rnr += int(n.NIC.Health().RNRNAKs)
				if got := n.NIC.Peers(); got != 4 {
					t.Errorf("node %d holds %d contexts, want the 4 others", i, got)
				}
			}
			if tc.ring < 16 && rnr == 0 {
				t.Errorf("a ring of %d buffers never ran dry (no RNR NAK): the pool was not exercised", tc.ring)
			}
		})
	}
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores, spec.Transport, spec.SQSize = 4, 3, machine.TransportSRD, 8
	c, err := aa.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	k, err := SetupCounter(c, CounterConfig{Scheme: AKV, Elements: 64, Accesses: 40, Procs: 3, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(sim.S, c.AppsDone)
	if r := k.Result(); !c.AppsDone() || !r.Verified || r.Accesses != 3*3*40 {
		t.Fatalf("A-KV over srd: done %v, %d accesses, %s", c.AppsDone(), r.Accesses, r.Problem)
	}
}

// The sort's AM, whose receivers take chunks per source node, refuses srd.
func TestSRDRefusesPerSourceReceive(t *testing.T) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores, spec.Transport = 3, 2, machine.TransportSRD
	c, err := aa.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = SetupSort(c, SortConfig{Scheme: AM, Keys: 64, Procs: 2, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "needs a receive queue per source node") {
		t.Fatalf("sort AM over srd: %v", err)
	}
}
