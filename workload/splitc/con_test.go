package splitc

import (
	"testing"
)

// CON on one E5000 of 8: every node's label is the serial union-find's,
// on a 2D and a 3D lattice, below and near the percolation threshold.
func TestCONOneSMP(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  CONConfig
	}{
		{"2D, 40 % edges", CONConfig{Dims: 2, Side: 12, Edge: 0.4, Grid: [3]int{4, 2, 1}, Block: [3]int{4, 2, 1}}},
		{"3D, 25 % edges", CONConfig{Dims: 3, Side: 5, Edge: 0.25, Grid: [3]int{2, 2, 2}, Block: [3]int{2, 2, 2}}},
		{"2D, 70 % edges", CONConfig{Dims: 2, Side: 8, Edge: 0.7, Grid: [3]int{2, 4, 1}, Block: [3]int{2, 4, 1}}},
		{"3D, no edges", CONConfig{Dims: 3, Side: 3, Edge: 0, Grid: [3]int{2, 2, 2}, Block: [3]int{2, 2, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Seed = 9
			c, err := NewCON(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunAM(e5000(t, 1, 8), Layout{Nodes: 1, PerNode: 8}, AMConfig{}, c.Program())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Check(); err != nil {
				t.Fatal(err)
			}
			var stores uint64
			for _, k := range res.Counts {
				for _, s := range k.Short {
					stores += s
				}
			}
			t.Logf("%v, %d rounds, %d stores", res.Elapsed, c.Rounds(), stores)
		})
	}
}
