package splitc

import (
	"testing"

	"github.com/aaemu/aaemu/examples/machines"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

// e5000 is a machine of nodes E5000 SMPs (the preset) of cores CPUs.
func e5000(t testing.TB, nodes, cores int) *machine.Cluster {
	t.Helper()
	s, err := scenario.ParseScenario("e5000.yaml", machines.E5000)
	if err != nil {
		t.Fatal(err)
	}
	spec := s.ClusterSpec()
	spec.Nodes, spec.Cores = max(nodes, 2), cores // a machine has two nodes at least
	c, err := machine.New(sim.NewEngine(s.Seed), spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
