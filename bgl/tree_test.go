package bgl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// TestTreeBcast broadcasts over the collective network from several roots
// and checks every byte at every node; a long broadcast streams at the
// tree's payload rate (one 256-byte packet per 532 cycles: the cores'
// write and read of a packet, about 270 cycles, keep up), and a short one
// costs the tree's depth.
func TestTreeBcast(t *testing.T) {
	cases := []struct {
		dims       [3]int
		root, size int
	}{
		{[3]int{2, 2, 2}, 0, 1},
		{[3]int{2, 2, 2}, 3, 256},
		{[3]int{4, 4, 2}, 0, 1000},
		{[3]int{4, 4, 2}, 17, 5000},
		{[3]int{4, 4, 2}, 0, 65536},
	}
	for _, c := range cases {
		spec := DefaultSpec(c.dims[0], c.dims[1], c.dims[2])
		seen := 0
		end, err := TreeBcast(spec, c.root, c.size, func(node int, got, want []byte) {
			seen++
			if !bytes.Equal(got, want) {
				t.Errorf("%v from %d, %d bytes: node %d's data differs", c.dims, c.root, c.size, node)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen != c.dims[0]*c.dims[1]*c.dims[2] {
			t.Fatalf("%d nodes checked", seen)
		}
		mbs := float64(c.size) / (float64(end) / float64(sim.S)) / 1e6
		t.Logf("%v from %d, %d bytes: %v, %.1f MB/s", c.dims, c.root, c.size, end, mbs)
		if c.size == 65536 {
			rate := 700e6 / float64(spec.Collective.CyclesPerByte) * 256 / 266 / 1e6
			if mbs < 0.9*rate || mbs > rate {
				t.Errorf("64 KB: %.1f MB/s, want 90 to 100 %% of %.1f", mbs, rate)
			}
		}
	}
	if _, err := TreeBcast(DefaultSpec(2, 2, 2), 8, 10, nil); err == nil || !strings.Contains(err.Error(), "from node 8 of 8") {
		t.Errorf("a root outside: %v", err)
	}
}
