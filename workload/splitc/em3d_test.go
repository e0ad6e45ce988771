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

// The two ways of drawing remote edges, counted on the Clump: from the
// 6 faces, a rank of the good layout stores to its SMP over 3 faces
// whatever its place (its local stores vary little) and the network
// maximum does not drop from the naive layout; from the 26 offsets it
// drops, and the share of local stores is lower (18 of the 26 offsets
// leave a naive SMP's 4×2×1 block along z).
func TestEM3DNeighbours(t *testing.T) {
	type stats struct{ localPct, netMax, netMin, locMin, locMax float64 }
	count := func(faces, good bool) stats {
		g, b, err := grid(32, good)
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEM3D(EM3DConfig{Nodes: 1000, Degree: 20, Remote: 0.4, Steps: 1, Grid: g, Block: b, Faces: faces, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		tal, err := Tally(32, e.Program())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		s := stats{netMin: 1e18, locMin: 1e18}
		var net, loc float64
		for i, c := range tal.Counts {
			x := c.Split(Clump.Layout, i)
			net += float64(x.NetShort)
			loc += float64(x.LocalShort)
			s.netMax, s.netMin = max(s.netMax, float64(x.NetShort)), min(s.netMin, float64(x.NetShort))
			s.locMax, s.locMin = max(s.locMax, float64(x.LocalShort)), min(s.locMin, float64(x.LocalShort))
		}
		s.localPct = 100 * loc / (net + loc)
		return s
	}
	for _, faces := range []bool{true, false} {
		naive, good := count(faces, false), count(faces, true)
		t.Logf("faces %v: local %.1f %% → %.1f %%, network max %.0f → %.0f (×%.2f), good min %.0f, good local %.0f..%.0f",
			faces, naive.localPct, good.localPct, naive.netMax, good.netMax, good.netMax/naive.netMax, good.netMin, good.locMin, good.locMax)
		if good.netMin != 0 || good.localPct <= naive.localPct {
			t.Fatalf("faces %v: the good layout's minimum %v, local %.1f %% (naive %.1f %%)", faces, good.netMin, good.localPct, naive.localPct)
		}
		drop := good.netMax / naive.netMax
		if faces && (drop < 0.95 || good.locMin < 0.9*good.locMax) {
			t.Fatalf("faces: the maximum drops ×%.2f, the good layout's local stores %v..%v", drop, good.locMin, good.locMax)
		}
		if !faces && drop > 0.95 {
			t.Fatalf("26 offsets: the maximum drops ×%.2f only", drop)
		}
	}
}
