package machine_test

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// A write to memory the target did not register is blocked by its IOMMU
// and dropped, and a process polling for it waits for ever: Run says the
// cluster went quiet (nothing left to happen) and FaultReport names the
// node. The same put into registered memory finishes, with no fault; a
// poll that checks every time keeps the run from being quiet.
func TestQuietAndFaultReport(t *testing.T) {
	cases := []struct {
		name       string
		registered bool // the flag's page on node 0
		checkEvery bool // SetPollSleep off
		done       bool
		quiet      bool
		faults     string
	}{
		{"registered", true, false, true, false, ""},
		{"dropped", false, false, false, true, "the IOMMUs blocked 1 DMA requests with a translation fault (a write to memory not registered for it is dropped): node 0: 1"},
		{"dropped, every check", false, true, false, false, "node 0: 1"},
	}
	for _, tc := range cases {
		s := machine.DefaultSpec()
		s.Nodes, s.Cores = 2, 1
		c, err := machine.New(sim.NewEngine(1), s)
		if err != nil {
			t.Fatal(err)
		}
		c.SetPollSleep(!tc.checkEvery)
		rw := iommu.Perm{Bits: pte.R | pte.W}
		n0, n1 := c.Nodes[0], c.Nodes[1]
		flag := n0.Alloc(4096)
		if tc.registered {
			if err := n0.Register(flag, 4096, rw); err != nil {
				t.Fatal(err)
			}
		}
		src := n1.Alloc(4096)
		if err := n1.Register(src, 4096, rw); err != nil {
			t.Fatal(err)
		}
		n1.Mem.Store64(src, 1)
		verbs.Spawn(n1, 0, "setter", func(x *verbs.Ctx) {
			if _, err := x.Wait(x.Put(0, src, flag, 8)); err != nil {
				t.Error(err)
			}
		})
		verbs.Spawn(n0, 0, "waiter", func(x *verbs.Ctx) {
			x.P.PollWord(flag, func(v uint64) bool { return v == 1 })
		})
		c.Run(20*sim.MS, c.AppsDone)
		at, quiet := c.Quiet()
		if c.AppsDone() != tc.done || quiet != tc.quiet {
			t.Errorf("%s: done %v, quiet %v (from %v), want %v, %v", tc.name, c.AppsDone(), quiet, at, tc.done, tc.quiet)
		}
		if quiet && (at == 0 || at >= 20*sim.MS) {
			t.Errorf("%s: quiet from %v, want within the run", tc.name, at)
		}
		if r := c.FaultReport(4); (tc.faults == "") != (r == "") || !strings.Contains(r, tc.faults) {
			t.Errorf("%s: fault report %q, want %q", tc.name, r, tc.faults)
		}
		c.Close()
	}
}
