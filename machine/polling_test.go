package machine_test

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Spec.PollingHyperthreads: the node's one thread always, and with "core" a
// sibling a core, named after it; PollerOf picks the one that serves core
// k's logs; an unknown placement is refused.
func TestPollingHyperthreads(t *testing.T) {
	cases := []struct {
		place    string
		siblings int
		err      string
	}{
		{"", 0, ""},
		{machine.PollingPerNode, 0, ""},
		{machine.PollingPerCore, 3, ""},
		{"smt", 0, `polling hyperthreads "smt": want node or core`},
	}
	for _, tc := range cases {
		s := machine.DefaultSpec()
		s.Cores, s.PollingHyperthreads = 3, tc.place
		c, err := machine.New(sim.NewEngine(1), s)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.place, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.place, err)
		}
		n := c.Nodes[1]
		if len(n.Pollers) != tc.siblings || n.Poller == nil {
			t.Fatalf("%q: %d siblings (want %d), node thread %v", tc.place, len(n.Pollers), tc.siblings, n.Poller)
		}
		for k := range n.Cores {
			want := n.Poller
			if tc.siblings > 0 {
				want = n.Pollers[k]
				if name := n.Pollers[k].Unit().Name(); name != "node1.cpu"+string(rune('0'+k))+"_poll" {
					t.Errorf("%q: core %d's sibling is %s", tc.place, k, name)
				}
			}
			if n.PollerOf(k) != want {
				t.Errorf("%q: PollerOf(%d) is %s", tc.place, k, n.PollerOf(k).Unit().Name())
			}
		}
		c.Close()
	}
}
