package am2paper

import (
	"errors"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/workload"
	"github.com/aaemu/aaemu/workload/splitc"
)

func find(t *testing.T, figs []*paper.Figure, name string) *paper.Figure {
	t.Helper()
	for _, f := range figs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %s", name)
	return nil
}

// table4Points are Table 4's statistics as points: the paper's own rows,
// scaled (the FFT's bulk counts by the cube's size).
func table4Points(scale float64) []paper.Point {
	var pts []paper.Point
	add := func(app splitc.App, s workload.Scheme, v float64) {
		pts = append(pts, paper.Point{X: 32, Category: string(app), Scheme: s, Y: v})
	}
	for _, app := range splitc.Apps {
		p := paperTable4[app]
		add(app, netMean, p.net)
		add(app, netMin, p.netMin)
		add(app, netMax, p.netMax)
		add(app, locMean, p.loc)
		add(app, netBulk, 0)
		add(app, localBulk, 0)
	}
	for i := range pts {
		if pts[i].Category == string(splitc.FFT3D) && pts[i].Scheme == netBulk {
			pts[i].Y = 3072 * scale
		}
		if pts[i].Category == string(splitc.FFT3D) && pts[i].Scheme == localBulk {
			pts[i].Y = 896 * scale
		}
	}
	return pts
}

// The claims' checks on made-up points: the paper's own Table 4 passes
// every one; a bulk count off by one, an equal network maximum, a good
// layout with a processor that sends over the network, and a balanced
// comm-bound run fail theirs.
func TestTable4ClaimChecks(t *testing.T) {
	full := table4Figure(splitc.PaperSizes)
	set := func(pts []paper.Point, app splitc.App, s workload.Scheme, v float64) []paper.Point {
		out := append([]paper.Point(nil), pts...)
		for i := range out {
			if out[i].Category == string(app) && out[i].Scheme == s {
				out[i].Y = v
			}
		}
		return out
	}
	base := table4Points(1)
	for _, tc := range []struct {
		name string
		pts  []paper.Point
		want []bool
	}{
		{"the paper's table", base, []bool{true, true, true, true, true}},
		{"one bulk store more", set(base, splitc.FFT3D, netBulk, 3073), []bool{false, true, true, true, true}},
		{"the good layout no better", set(base, splitc.EM3DGood, netMax, 1015500), []bool{true, true, false, true, true}},
		{"no processor of the good layout local only", set(base, splitc.EM3DGood, netMin, 1), []bool{true, true, false, true, true}},
		{"a balanced comm-bound run", set(base, splitc.CONComm, netMax, 67236), []bool{true, true, true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := full.CheckPoints(tc.pts)
			if len(rs) != len(tc.want) {
				t.Fatalf("%d claims, want %d", len(rs), len(tc.want))
			}
			for i, r := range rs {
				if r.Holds != tc.want[i] {
					t.Errorf("%s: holds %v (%s), want %v", r.Claim.Text, r.Holds, r.Measured, tc.want[i])
				}
			}
		})
	}
}

// Table 4 on reduced sizes, counted: the FFT's bulk stores are exactly
// the paper's pattern, every run's result was checked, and the counts do
// not change from one run to the next.
func TestTable4Reduced(t *testing.T) {
	f := find(t, appFigures(true), "table4")
	pts, err := f.Custom.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != len(splitc.Apps)*len(table4Stats) {
		t.Fatalf("%d points", len(pts))
	}
	rs := f.CheckPoints(pts)
	if !rs[0].Holds || !strings.Contains(rs[0].Measured, "48 and 14") {
		t.Fatalf("the FFT's bulk stores: %s", rs[0].Measured)
	}
	if !rs[2].Holds {
		t.Fatalf("A16: %s", rs[2].Measured)
	}
	again, err := find(t, appFigures(true), "table4").Custom.Run(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pts {
		if pts[i] != again[i] {
			t.Fatalf("point %d: %+v, then %+v", i, pts[i], again[i])
		}
	}
	for _, r := range rs {
		t.Logf("%s: %s (%v)", r.Claim.Text, r.Measured, r.Holds)
	}
}

// Table 5 on reduced sizes runs what runs today (one SMP, shared memory
// only), every result checked; its claims that need the network say so.
// Table 6 needs the network for every series: running it fails with
// am2.ErrRemote.
func TestTimedTablesReduced(t *testing.T) {
	figs := appFigures(true)
	f5 := find(t, figs, "table5")
	pts, err := f5.Custom.Run(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if available(smpShm) != nil || len(pts) < len(table5Apps) {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		if !(p.Y > 0) {
			t.Fatalf("%+v", p)
		}
		t.Logf("%s, %s: %.6f s", p.Category, p.Scheme, p.Y)
	}
	for _, r := range f5.CheckPoints(pts) {
		if available(smpMulti) != nil && !strings.Contains(r.Measured, "not measured") {
			t.Fatalf("%s: %s without the multi-protocol series", r.Claim.Text, r.Measured)
		}
	}
	f6 := find(t, figs, "table6")
	if available(clump) != nil {
		_, err := f6.Custom.Run(1, nil)
		if !errors.Is(err, am2.ErrRemote) {
			t.Fatalf("table 6: %v, want am2.ErrRemote", err)
		}
	}
}
