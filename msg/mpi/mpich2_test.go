package mpi

import (
	"bytes"
	"fmt"
	"testing"
)

// TestMPICH2Alltoall runs MPICH2's alltoall over the torus transport with
// blocks that take each of its algorithms — Bruck's (a power of two
// ranks and not), everything posted, pairwise by XOR and by rank±i —
// and checks every rank's every byte against the serial computation: the
// block rank s sent to rank d is d's block s.
func TestMPICH2Alltoall(t *testing.T) {
	m2 := MPICH2{}
	for _, c := range []struct {
		dims [3]int
		blk  int
		algo string
	}{
		{[3]int{2, 2, 2}, 100, AlltoallBruck},
		{[3]int{3, 3, 1}, 37, AlltoallBruck},
		{[3]int{2, 2, 2}, 1000, AlltoallPosted},
		{[3]int{5, 1, 1}, 100, AlltoallPosted},
		{[3]int{2, 2, 2}, 40000, AlltoallPairwise},
		{[3]int{3, 2, 1}, 33000, AlltoallPairwise},
	} {
		n := c.dims[0] * c.dims[1] * c.dims[2]
		if got := m2.AlltoallAlgorithm(c.blk, n); got != c.algo {
			t.Fatalf("%d-byte blocks among %d ranks: %s, want %s", c.blk, n, got, c.algo)
		}
		// block is what rank s sends rank d (the serial computation).
		block := func(s, d int) []byte { return torusPattern(s, d*7+1, c.blk) }
		m := bglMachine(t, c.dims[0], c.dims[1], c.dims[2])
		var failed []string
		_, err := RunTorus(m, Config{Collectives: m2}, TorusConfig{}, nil, func(cm *Comm) {
			me := cm.Rank()
			send, recv := cm.Alloc(n*c.blk), cm.Alloc(n*c.blk)
			for d := 0; d < n; d++ {
				cm.Write(send.Slice(d*c.blk, c.blk), block(me, d))
			}
			if err := cm.Alltoall(send, recv); err != nil {
				failed = append(failed, err.Error())
				return
			}
			got := cm.Read(recv)
			for s := 0; s < n; s++ {
				if !bytes.Equal(got[s*c.blk:(s+1)*c.blk], block(s, me)) {
					failed = append(failed, fmt.Sprintf("%s, %d ranks, %d B: rank %d's block from rank %d differs", c.algo, n, c.blk, me, s))
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range failed {
			t.Error(f)
		}
	}
}
