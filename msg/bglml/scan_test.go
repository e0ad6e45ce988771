package bglml

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/torus"
)

// TestSkipFullScanMatches: a pass of the advance loop stops going through
// the send queue once every injection FIFO the node can write is full
// (the rest of the queue could only be skipped, at no cost), and jumps
// over the entries whose FIFO it found full to the next that can write
// (the per-FIFO index, nextWritable); the runs are the same to the
// picosecond as with the whole queue gone through entry by entry — the
// alltoall's every link's busy time and its end, on a mesh (whose corners
// write three FIFOs only) and a torus, with one-packet, eager or
// adaptive-eager, and rendezvous messages, and the mixed traffic of all
// four protocols and a broadcast with every statistic.
func TestSkipFullScanMatches(t *testing.T) {
	run := func(all bool, f func() string) string {
		scanAll = all
		defer func() { scanAll = false }()
		return f()
	}
	sizes := []int{200, 952, 2000}
	if testing.Short() {
		sizes = []int{952}
	}
	for _, mesh := range []bool{true, false} {
		for _, size := range sizes {
			for _, order := range []AlltoallOrder{Pairwise, Posted, Spread} {
				f := func() string {
					spec := bgl.DefaultSpec(4, 3, 2)
					spec.Torus.Mesh = mesh
					r, err := Alltoall(spec, DefaultParams(), DefaultCosts(), size, order, 1)
					if err != nil {
						t.Fatal(err)
					}
					return fmt.Sprint(r)
				}
				if a, b := run(true, f), run(false, f); a != b {
					t.Errorf("mesh %v, %d B, %v: the alltoall differs when the scan stops early and jumps", mesh, size, order)
				}
			}
		}
	}
	f := func() string { s, _ := mixed(t, torus.Coord{4, 2, 2}, false, 3, false); return s }
	a, b := run(true, f), run(false, f)
	if a != b || !strings.Contains(a, ".busy_ps") {
		t.Error("the mixed traffic differs when the scan stops early")
	}
	// The stop and the jumps are taken: traffic to two nodes fills the
	// senders' FIFOs, those towards one before those towards the other.
	var sends []send
	for src := 1; src < 15; src++ {
		for k := 0; k < 4; k++ {
			sends = append(sends, send{src: src, dst: 15 * (k % 2), size: 3000, proto: Eager})
		}
	}
	if st := deliverStats(t, torus.Coord{4, 2, 2}, DefaultParams(), sends); st.ScanStops == 0 || st.Jumps == 0 {
		t.Errorf("%d passes stopped their scan early and %d jumped: the equivalence above tested nothing", st.ScanStops, st.Jumps)
	}
	// And the round of Interleave jumps.
	inter := DefaultParams()
	inter.Interleave, inter.Adaptive = true, true
	for k := range sends {
		sends[k].proto = AdaptiveEager
	}
	if st := deliverStats(t, torus.Coord{4, 2, 2}, inter, sends); st.Jumps == 0 {
		t.Error("no round of Interleave jumped: the equivalence above tested nothing")
	}
}
