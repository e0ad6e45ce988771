package workload

import (
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

func newCluster(t testing.TB, mut func(*machine.Spec)) *aa.System {
	t.Helper()
	s := machine.DefaultSpec()
	if mut != nil {
		mut(&s)
	}
	c, err := aa.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
