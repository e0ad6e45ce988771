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
		if !strings.Contains(g.Title, "access logs: one a process") {
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
	if _, err := NewPreset("small.yaml", []byte("machine: {cores: 8}\n")); err == nil || !strings.Contains(err.Error(), "small.yaml: machine.cores: 8") {
		t.Fatalf("a preset of 8 cores: %v", err)
	}
	if _, err := NewPreset("bad.yaml", []byte("machine:\n  network: {topology: tours}\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml:2: machine.network.topology") {
		t.Fatalf("a bad preset: %v", err)
	}
}
