package splitc

import (
	"testing"
)

// The FFT on one E5000 of 8: the result equals a serial 3D FFT to the bit
// (both transposes moved every value to its place), and every rank sent
// each other rank the bulk stores the pattern says.
func TestFFTOneSMP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n, p  int
		chunk int
	}{
		{"16³ on 8, 4 kB chunks", 16, 8, 4096},
		{"16³ on 4, 1 kB chunks", 16, 4, 1024},
		{"8³ on 8, 16 B chunks", 8, 8, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFFT(FFTConfig{N: tc.n, Chunk: tc.chunk, Seed: 3}, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunAM(e5000(t, 1, tc.p), Layout{Nodes: 1, PerNode: tc.p}, AMConfig{}, f.Program())
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Check(); err != nil {
				t.Fatal(err)
			}
			for i, c := range res.Counts {
				for d := range c.Bulk {
					want := uint64(f.BulkPerPair())
					if d == i {
						want = 0
					}
					if c.Bulk[d] != want || c.Short[d] != 0 {
						t.Fatalf("rank %d → %d: %d bulk, %d short stores, want %d and 0", i, d, c.Bulk[d], c.Short[d], want)
					}
				}
			}
			t.Logf("%v, %d syncs, %d barrier rounds", res.Elapsed, res.Syncs, res.Rounds)
		})
	}
}
