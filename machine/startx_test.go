package machine

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/sim"
)

// machine.Spec.StartXNICs: every node gets that many NIUs, each its own
// requester ID, BAR and network address; two single NIUs are joined
// directly, more through the switch; a count out of range, or NIUs
// without machine.startx, is an error before anything is built.
func TestStartXNICs(t *testing.T) {
	for _, tc := range []struct {
		nodes, nius int
		startx      bool
		switched    bool
		err         string
	}{
		{2, 0, true, false, ""},
		{2, 1, true, false, ""},
		{2, 3, true, true, ""},
		{4, 1, true, true, ""},
		{2, 5, true, false, "startx nius: 5 a node, want 1..4"},
		{2, -1, true, false, "startx nius: -1"},
		{2, 3, false, false, "with machine.startx"},
	} {
		s := DefaultSpec()
		s.Nodes, s.StartXNICs = tc.nodes, tc.nius
		if tc.startx {
			ns := startx.DefaultSpec()
			s.StartX = &ns
		}
		c, err := New(sim.NewEngine(1), s)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: %v, want %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if (c.StartXSwitch != nil) != tc.switched {
			t.Errorf("%+v: switch %v", tc, c.StartXSwitch)
		}
		seen := map[uint64]bool{}
		for i, n := range c.Nodes {
			if len(n.NIUs) != max(tc.nius, 1) || n.NIU != n.NIUs[0] {
				t.Fatalf("%+v: node %d has %d NIUs", tc, i, len(n.NIUs))
			}
			for r, x := range n.NIUs {
				if x.Spec().Node != s.StartXAddr(i, r) || seen[x.Spec().BAR+uint64(i)<<40] {
					t.Errorf("%+v: node %d NIU %d at address %d, BAR %#x", tc, i, r, x.Spec().Node, x.Spec().BAR)
				}
				seen[x.Spec().BAR+uint64(i)<<40] = true
			}
		}
	}
}
