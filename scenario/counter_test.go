package scenario

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// The access counter's Allreduce with more sources than a page of flag
// words holds (9 source nodes × 64 processes: 576, a page holds 512), on
// a torus over srd as at 32 nodes × 32 processes on the Gemini-class
// preset, where it hung: the run finishes and every count checks.
func TestCounterAllreduceBeyondAPageOfSources(t *testing.T) {
	s, err := ParseScenario("s.yaml", []byte(`machine:
  nodes: 10
  cores: 64
  transport: srd
  network: {topology: torus}
workload:
  kind: counter
  counter: {elements: 8, accesses: 1, procs_per_node: 64, schemes: [Allreduce]}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.PrepareRun(sim.NewEngine(s.Seed), s.Experiments()[0])
	if err != nil {
		t.Fatal(err)
	}
	o, err := p.Finish(p.Sys.Cluster.Run(sim.S, p.Sys.Cluster.AppsDone))
	if err != nil {
		t.Fatal(err)
	}
	if r := o.Workload; !r.Verified || r.SimTimePS == 0 {
		t.Fatalf("%+v", r)
	}
}
