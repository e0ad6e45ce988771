package paper

import (
	"context"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/workload"
)

// streamPoints makes the points of a streaming figure with e-iommu at
// ratio1 (1 in flight) and ratio32 (32 in flight) of no-iommu's rate.
func streamPoints(ratio1, ratio32 float64) []Point {
	var pts []Point
	for _, size := range streamSizes {
		bw := float64(size) * 1e4
		pts = append(pts, Point{X: size, Scheme: noIOMMU1, Y: bw}, Point{X: size, Scheme: eIOMMU1, Y: bw * ratio1},
			Point{X: size, Scheme: noIOMMU32, Y: 2 * bw}, Point{X: size, Scheme: eIOMMU32, Y: 2 * bw * ratio32})
	}
	return pts
}

// The claims of Figures 6a and 6b read the points: each holds on data
// shaped like the paper's and fails on data that is not.
func TestStreamClaims(t *testing.T) {
	f := streamFigure("6a", "test", 1000, nil)
	for _, tc := range []struct {
		name            string
		ratio1, ratio32 float64
		want            [3]bool // 1 in flight, 32 in flight, marginally faster
	}{
		{"e-iommu 3 % slower", 1 / 1.03, 1 / 1.03, [3]bool{true, true, true}},
		{"e-iommu 3 % slower with one in flight, equal with 32", 1 / 1.03, 1, [3]bool{true, false, true}},
		{"equal", 1, 1, [3]bool{false, false, false}},
		{"e-iommu 20 % slower", 1 / 1.2, 1 / 1.2, [3]bool{false, false, false}},
		{"e-iommu faster", 1.02, 1.02, [3]bool{false, false, false}},
		// A faster e-iommu anywhere, however slightly, is not "no-iommu
		// marginally faster".
		{"e-iommu 3 % slower with one in flight, 0.05 % faster with 32", 1 / 1.03, 1.0005, [3]bool{true, false, false}},
		{"e-iommu 0.3 % slower", 1 / 1.003, 1 / 1.003, [3]bool{false, false, true}},
	} {
		rs := f.CheckPoints(streamPoints(tc.ratio1, tc.ratio32))
		if len(rs) != 3 {
			t.Fatalf("%d claims", len(rs))
		}
		for i, r := range rs {
			if r.Holds != tc.want[i] {
				t.Errorf("%s, %q: holds %v (%s), want %v", tc.name, r.Claim.Text, r.Holds, r.Measured, tc.want[i])
			}
		}
		if !strings.Contains(rs[0].Measured, "64B ") || !strings.Contains(rs[0].Measured, "64K ") {
			t.Errorf("the gap per size is not printed: %s", rs[0].Measured)
		}
	}
	// A missing point is said, never read as a zero rate.
	if r := f.CheckPoints(streamPoints(1, 1)[4:]); r[0].Holds || !strings.Contains(r[0].Measured, "no measurement at 64B") {
		t.Errorf("a missing size: %v %s", r[0].Holds, r[0].Measured)
	}
}

// One point of each series of Figure 6b, simulated: the stream checks its
// data, and no-iommu is not slower than e-iommu.
func TestStreamFigurePoints(t *testing.T) {
	c := streamFigure("6b", "test", 10000, nil).Custom
	y := map[workload.Scheme]float64{}
	for _, s := range c.Schemes {
		v, err := c.run(context.Background(), 4096, "", s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		y[s] = v
	}
	if y[noIOMMU1] < y[eIOMMU1] || y[noIOMMU32] < y[eIOMMU32]*0.999 || y[eIOMMU32] <= y[eIOMMU1] {
		t.Errorf("4 KB over 10 GbE: %v", y)
	}
}
