package splitc

import (
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// E5000Spec is the E5000 preset's machine spec and seed. The preset is a
// scenario file, and package scenario runs this package's programs
// (workload.splitc), so the external test package reads it
// (preset_test.go) and sets this.
var E5000Spec func() (machine.Spec, uint64, error)

// e5000 is a machine of nodes E5000 SMPs (the preset) of cores CPUs.
func e5000(t testing.TB, nodes, cores int) *machine.Cluster {
	t.Helper()
	spec, seed, err := E5000Spec()
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes, spec.Cores = max(nodes, 2), cores // a machine has two nodes at least
	c, err := machine.New(sim.NewEngine(seed), spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
