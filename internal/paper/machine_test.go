package paper

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/examples/machines"
	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/machine"
)

// On a machine preset the figures at scale take the preset's machine: the
// sweeps name it as their base scenario and set neither the wire nor the
// transport (the preset's), each point runs on the preset's torus of that
// many nodes, and the custom figures' clusters are the preset's.
func TestFiguresOnPreset(t *testing.T) {
	p, err := NewPreset("gemini.yaml", machines.Gemini)
	if err != nil {
		t.Fatal(err)
	}
	Machine = p
	defer func() { Machine = nil }()
	nodes := ScaleNodes(16)
	for _, f := range Figures() {
		if f.AtScale == nil {
			continue
		}
		g := f.AtScale(nodes)
		if !strings.Contains(g.Title, "on gemini.yaml (a torus of 4 B/cycle links at 1000 MHz, 100-cycle hops") {
			t.Errorf("%s: %q", g.Name, g.Title)
		}
		if g.Custom != nil {
			continue
		}
		if g.Scenario != p || strings.Contains(g.Sweep, "rate_mbps") || strings.Contains(g.Sweep, "transport") || !strings.HasPrefix(g.Sweep, "scenario: gemini.yaml\n") {
			t.Fatalf("%s: sweep\n%s", g.Name, g.Sweep)
		}
		if !strings.Contains(g.Title, "access logs: one a process, AA-SP's polled by each core's sibling hyperthread)") {
			t.Errorf("%s: %q", g.Name, g.Title)
		}
		s, err := sweep.ParseWith("figure "+g.Name, []byte(g.Sweep), p.Load)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(s.Points()); got != len(nodes)*5 {
			t.Errorf("%s: %d points, want %d", g.Name, got, len(nodes)*5)
		}
	}
	spec := p.spec(16, 32)
	if spec.Topology != machine.TopologyTorus || spec.Nodes != 16 || spec.Transport != machine.TransportSRD || spec.Torus.BytesPerCycle != 4 {
		t.Fatalf("the preset's cluster: %+v", spec)
	}
	if _, err := NewPreset("small.yaml", []byte("machine: {nodes: 4, cores: 8}\n")); err == nil || !strings.Contains(err.Error(), "small.yaml: machine.cores: 8") {
		t.Fatalf("a preset of 8 cores: %v", err)
	}
	if _, err := NewPreset("bad.yaml", []byte("machine:\n  network: {topology: tours}\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml:2: machine.network.topology") {
		t.Fatalf("a bad preset: %v", err)
	}
}

// On a two-node preset the figures 6a–6c take the preset's machine and the
// others are refused: 6c's sweep names the preset as its base scenario,
// the streams' clusters are the preset's with the figure's wire.
func TestFiguresOnTwoNodePreset(t *testing.T) {
	p, err := NewPreset("gem5.yaml", machines.Gem5)
	if err != nil {
		t.Fatal(err)
	}
	if !p.TwoNode() {
		t.Fatal("gem5.yaml is not a two-node preset")
	}
	figs, err := OnTwoNode(p, Figures(), false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		if !strings.Contains(f.Title, "gem5.yaml") {
			t.Errorf("%s: %q", f.Name, f.Title)
		}
	}
	if got := strings.Join(names, " "); got != "6a 6b 6c" {
		t.Fatalf("figures on gem5: %s", got)
	}
	c := figs[2]
	if c.Scenario != p || !strings.HasPrefix(c.Sweep, "scenario: gem5.yaml\n") {
		t.Fatalf("6c: sweep\n%s", c.Sweep)
	}
	s, err := sweep.ParseWith("figure 6c", []byte(c.Sweep), p.Load)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Points()); got != 1 { // one scenario of 5 ratios × 2 schemes
		t.Errorf("6c: %d points, want 1", got)
	}
	if spec := p.spec(2, 1); spec.PCIe.Gen != 1 || spec.PCIe.Width != 1 || spec.Wire.RateMbps != 1000 {
		t.Errorf("the preset's cluster: %+v", spec)
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"7a"}, "figure 7a does not run on a two-node machine"},
		{[]string{"6c", "9b"}, "figure 9b does not run on a two-node machine"},
	} {
		var asked []*Figure
		for _, n := range tc.names {
			f, err := AA.Lookup([]string{n})
			if err != nil {
				t.Fatal(err)
			}
			asked = append(asked, f...)
		}
		if _, err := OnTwoNode(p, asked, true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.names, err, tc.want)
		}
	}
}
