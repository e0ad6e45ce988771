package workload

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// The completion-queue polls of the verbs load their word only after a
// write to its line (cpu.Proc.PollWord), and a core whose one process
// polls sleeps through the checks until a write wakes it
// (cpu.Core.SetPollSleep): the DHT, under several schemes and transports
// and on 1, 2 and 4 partitions, ends with the same statistics, simulated
// times, transaction log and results as with a load on every check and
// no sleep; only the kernel's evaluations differ, fewer with the sleep.
// With a log a process, AA-SP's polling hyperthreads are the node's one
// (which polls them all and never sleeps) or each core's sibling, whose
// one log's loop sleeps until the scratchpad's write of its slot.
func TestPollWatchMatchesEveryCheck(t *testing.T) {
	cases := []struct {
		name      string
		scheme    Scheme
		transport string
		nodes     int
		procs     int
		logs      bool   // a log a process (ProcessLogs)
		onload    int    // AM-Onload's server cores
		polling   string // machine.Spec.PollingHyperthreads, with a log a process
	}{
		{"AA-SP, srd, 4×8", AASP, machine.TransportSRD, 4, 8, false, 0, ""},
		{"AA-SP, rc, 3×2", AASP, "", 3, 2, false, 0, ""},
		{"AA-SP, a hyperthread a core, srd, 4×8", AASP, machine.TransportSRD, 4, 8, true, 0, machine.PollingPerCore},
		{"AA-SP, a hyperthread a node, rc, 3×4", AASP, "", 3, 4, true, 0, machine.PollingPerNode},
		{"AA-Poll, rc, 3×4", AAPoll, "", 3, 4, false, 0, ""},
		{"AA-Poll, srd, 2×4", AAPoll, machine.TransportSRD, 2, 4, false, 0, ""},
		{"RMA, rc, 2×2", RMA, "", 2, 2, false, 0, ""},
		{"RMA, srd, 4×4", RMA, machine.TransportSRD, 4, 4, false, 0, ""},
		// A log a process: AA-Poll's cores hold an inserting process and
		// its log's poller, AA-SP's hyperthread a poller a log.
		{"AA-Poll, a log a process, srd, 3×4", AAPoll, machine.TransportSRD, 3, 4, true, 0, ""},
		{"AA-SP, a log a process, srd, 2×4", AASP, machine.TransportSRD, 2, 4, true, 0, ""},
		// The active-message schemes: each inserting process waits for its
		// owners' done flags, beside a server that sleeps between polls.
		{"AM, srd, 3×4", AM, machine.TransportSRD, 3, 4, false, 0, ""},
		{"AM-Exp, rc, 2×4", AMExp, "", 2, 4, false, 0, ""},
		{"AM-Int, srd, 2×4", AMInt, machine.TransportSRD, 2, 4, false, 0, ""},
		{"AM-Onload, srd, 2×4", AMOnload, machine.TransportSRD, 2, 4, false, 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(watch, sleep bool, parts int) (string, uint64) {
				c := newCluster(t, func(s *machine.Spec) {
					s.Nodes, s.Cores = tc.nodes, tc.procs
					if tc.transport != "" {
						s.Transport = tc.transport
					}
					if tc.polling != "" {
						s.PollingHyperthreads = tc.polling
						s.IOMMU.FlushBufferEntries = tc.procs
					}
				})
				for _, n := range c.Nodes {
					for _, core := range n.Cores {
						core.SetPollWatch(watch)
					}
				}
				c.SetPollSleep(sleep) // the polling hyperthreads too
				c.Eng.World().EnableTxnLog()
				d, err := SetupDHT(c, DHTConfig{Scheme: tc.scheme, Inserts: 60, Cells: 1 << 12, Collisions: 0.1, Procs: tc.procs, Seed: 1, ProcessLogs: tc.logs, OnloadCores: tc.onload})
				if err != nil {
					t.Fatal(err)
				}
				c.SetPartitions(parts)
				end := c.Run(sim.S, c.AppsDone)
				if err := d.Verify(); err != nil {
					t.Fatal(err)
				}
				w := c.Eng.World()
				snap, err := json.Marshal(w.Snapshot().Stats)
				if err != nil {
					t.Fatal(err)
				}
				txns := w.TxnLog()
				return fmt.Sprintf("end %d (world %d)\nresult %+v\ntransactions %d %v\nstats %s", end, w.Now(), d.Result(), len(txns), txns, snap), w.UnitTicks()
			}
			every, evEvery := run(false, false, 2)
			for _, parts := range []int{1, 2, 4} {
				for _, watch := range []bool{false, true} {
					got, ev := run(watch, true, parts)
					if got != every {
						t.Fatalf("%d partitions, watch %v, sleep: differs from every check:\n%.3000s\n\n%.3000s", parts, watch, every, got)
					}
					if ev >= evEvery {
						t.Errorf("%d partitions: %d evaluations with the sleep, %d without: it slept through nothing", parts, ev, evEvery)
					}
				}
				if got, _ := run(true, false, parts); got != every {
					t.Fatalf("%d partitions, watch, no sleep: differs from every check:\n%.3000s\n\n%.3000s", parts, every, got)
				}
			}
		})
	}
}
