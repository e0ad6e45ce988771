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
// (the rest of the queue could only be skipped, at no cost); the runs are
// the same to the picosecond as with the whole queue gone through — the
// alltoall's every link's busy time and its end, on a mesh (whose corners
// write three FIFOs only) and a torus, and the mixed traffic of all four
// protocols and a broadcast with every statistic.
func TestSkipFullScanMatches(t *testing.T) {
	run := func(all bool, f func() string) string {
		scanAll = all
		defer func() { scanAll = false }()
		return f()
	}
	for _, mesh := range []bool{true, false} {
		for _, order := range []AlltoallOrder{Pairwise, Posted, Spread} {
			f := func() string {
				spec := bgl.DefaultSpec(4, 3, 2)
				spec.Torus.Mesh = mesh
				r, err := Alltoall(spec, DefaultParams(), DefaultCosts(), 952, order, 1)
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprint(r)
			}
			if a, b := run(true, f), run(false, f); a != b {
				t.Errorf("mesh %v, %v: the alltoall differs when the scan stops early", mesh, order)
			}
		}
	}
	f := func() string { s, _ := mixed(t, torus.Coord{4, 2, 2}, false, 3, false); return s }
	a, b := run(true, f), run(false, f)
	if a != b || !strings.Contains(a, ".busy_ps") {
		t.Error("the mixed traffic differs when the scan stops early")
	}
	// The stop is taken: many-to-one traffic fills the senders' FIFOs.
	var sends []send
	for src := 1; src < 16; src++ {
		for k := 0; k < 3; k++ {
			sends = append(sends, send{src: src, dst: 0, size: 3000, proto: Eager})
		}
	}
	if st := deliverStats(t, torus.Coord{4, 2, 2}, DefaultParams(), sends); st.ScanStops == 0 {
		t.Error("no pass stopped its scan early: the equivalence above tested nothing")
	}
}
