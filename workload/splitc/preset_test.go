package splitc_test

import (
	"github.com/aaemu/aaemu/examples/machines"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/workload/splitc"
)

func init() {
	splitc.E5000Spec = func() (machine.Spec, uint64, error) {
		s, err := scenario.ParseScenario("e5000.yaml", machines.E5000)
		if err != nil {
			return machine.Spec{}, 0, err
		}
		return s.ClusterSpec(), s.Seed, nil
	}
}
