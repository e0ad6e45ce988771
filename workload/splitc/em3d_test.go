package splitc

import (
	"testing"
)

// EM3D on one E5000 of 8 (a 2×2×2 grid): the values equal a serial
// computation to the bit, and each rank sent the ghost stores its graph
// says, every step.
func TestEM3DOneSMP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nodes  int
		remote float64
		steps  int
	}{
		{"40 % remote", 200, 0.4, 2},
		{"all local", 100, 0, 1},
		{"all remote, odd nodes", 51, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEM3D(EM3DConfig{Nodes: tc.nodes, Degree: 6, Remote: tc.remote, Steps: tc.steps, Grid: [3]int{2, 2, 2}, Block: [3]int{2, 2, 2}, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunAM(e5000(t, 1, 8), Layout{Nodes: 1, PerNode: 8}, AMConfig{}, e.Program())
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Check(); err != nil {
				t.Fatal(err)
			}
			total := uint64(0)
			for i, c := range res.Counts {
				per := e.StoresPerStep(i)
				for d := range per {
					if c.Short[d] != per[d]*uint64(tc.steps) || c.Bulk[d] != 0 {
						t.Fatalf("rank %d → %d: %d short stores, want %d", i, d, c.Short[d], per[d]*uint64(tc.steps))
					}
					total += c.Short[d]
				}
			}
			if (total == 0) != (tc.remote == 0) {
				t.Fatalf("%d stores with %v remote edges", total, tc.remote)
			}
			t.Logf("%v, %d stores", res.Elapsed, total)
		})
	}
}
