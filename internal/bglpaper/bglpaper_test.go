package bglpaper

import (
	"math"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/paper"
)

// TestFigures runs Figures 4a and 4b reduced (a 4×4×4 torus, a few
// distances and sizes) and checks their points and verdicts: the network's
// slope and the link's plateau agree with the paper; the intercept and
// the half-bandwidth size, which the paper's MPI software sets, do not
// (aaemu runs the packet layer only) and say so.
func TestFigures(t *testing.T) {
	cases := []struct {
		fig     *paper.Figure
		verdict []bool
	}{
		{Fig4a(Latency{Dims: [3]int{4, 4, 4}, Distances: []int{1, 2, 4, 6}, Iters: 4}), []bool{true, false}},
		{Fig4b(Bandwidth{Dims: [3]int{4, 2, 2}, Sizes: []int{16, 64, 240, 3840, 14400}, Msgs: 4}), []bool{true, false}},
	}
	for _, c := range cases {
		t.Run(c.fig.Name, func(t *testing.T) {
			pts, err := c.fig.Custom.Run(2, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(pts); i++ {
				if pts[i].Y <= pts[i-1].Y && c.fig.Name == "4a" {
					t.Errorf("latency not growing with distance: %v", pts)
				}
			}
			for i, r := range c.fig.CheckPoints(pts) {
				if r.Holds != c.verdict[i] {
					t.Errorf("%s: %s (holds %v, want %v)", r.Claim.Text, r.Measured, r.Holds, c.verdict[i])
				}
				if !r.Holds && !strings.Contains(r.Measured, "not modelled") {
					t.Errorf("%s: a disagreement that does not say why: %s", r.Claim.Text, r.Measured)
				}
				t.Logf("%s: paper %s, aaemu %s", r.Claim.Text, r.Claim.Paper, r.Measured)
			}
		})
	}
}

// TestFit checks the line fit and the half-bandwidth point on exact data.
func TestFit(t *testing.T) {
	var pts []paper.Point
	for x := 1; x <= 5; x++ {
		pts = append(pts, paper.Point{X: x, Y: 3 + 0.5*float64(x)})
	}
	if a, b := linearFit(pts); math.Abs(a-3) > 1e-12 || math.Abs(b-0.5) > 1e-12 {
		t.Fatalf("fit %v + %v·x, want 3 + 0.5·x", a, b)
	}
	bw := []paper.Point{{X: 100, Y: 10}, {X: 300, Y: 30}, {X: 1000, Y: 40}}
	if h := halfPoint(bw); h != 200 {
		t.Fatalf("half point %v, want 200", h)
	}
}

// TestFarthest checks the nodes the latency figure sends to, and that a
// distance the torus does not have is an error.
func TestFarthest(t *testing.T) {
	cases := []struct {
		d    int
		want [3]int
	}{{1, [3]int{1, 0, 0}}, {4, [3]int{4, 0, 0}}, {5, [3]int{4, 1, 0}}, {12, [3]int{4, 4, 4}}}
	for _, c := range cases {
		got, err := farthest([3]int{8, 8, 8}, c.d)
		if err != nil || [3]int(got) != c.want {
			t.Errorf("%d hops: %v, %v; want %v", c.d, got, err, c.want)
		}
	}
	if _, err := farthest([3]int{8, 8, 8}, 13); err == nil {
		t.Error("13 hops on 8×8×8: no error")
	}
}
