package bglpaper

import (
	"math"
	"testing"

	"github.com/aaemu/aaemu/collective"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/torus"
)

// TestLinkRates: streaming full packets, a link carries 240 payload bytes
// per 1,080 cycles one way, and the centre node twelve times that (its
// six links both ways at once do not slow each other).
func TestLinkRates(t *testing.T) {
	link, node, err := LinkRates(torus.DefaultSpec(3, 3, 3), 20)
	if err != nil {
		t.Fatal(err)
	}
	if want := 240.0 / 1080; math.Abs(link-want) > 1e-12 || math.Abs(node-12*want) > 1e-12 {
		t.Fatalf("link %v B/cycle, node %v; want %v and %v", link, node, want, 12*want)
	}
	if _, _, err := LinkRates(torus.DefaultSpec(3, 3, 3), 1); err == nil {
		t.Fatal("a stream of one packet has no rate: want an error")
	}
}

// TestTreeLatency: one allreduce and one barrier cost the same number of
// cycles for every level the tree has (so that the figure's scaling from
// its largest reduced tree to the full machine's depth is exact), and the
// allreduce checks out against the collective network's own formula.
func TestTreeLatency(t *testing.T) {
	spec := collective.DefaultSpec()
	var rs, bs []float64
	var ds []int
	for _, n := range []int{8, 64, 512} {
		r, b, d, err := TreeLatency(spec, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := float64(2*d*(spec.WireCycles+spec.RouterCycles) + spec.RouterCycles + spec.PacketCycles() + 1); r != want {
			t.Errorf("%d nodes: allreduce %v cycles, want %v", n, r, want)
		}
		rs, bs, ds = append(rs, r), append(bs, b), append(ds, d)
	}
	for i := 2; i < len(ds); i++ {
		per := func(v []float64) float64 { return (v[i] - v[i-1]) / float64(ds[i]-ds[i-1]) }
		per0 := func(v []float64) float64 { return (v[1] - v[0]) / float64(ds[1]-ds[0]) }
		if per(rs) != per0(rs) || per(bs) != per0(bs) {
			t.Errorf("cost per level not constant: allreduce %v, barrier %v at depths %v", rs, bs, ds)
		}
	}
	if want := float64(2 * spec.BarrierHopCycles); (bs[1]-bs[0])/float64(ds[1]-ds[0]) != want {
		t.Errorf("barrier %v cycles a level, want %v (a hop up and one down)", (bs[1]-bs[0])/float64(ds[1]-ds[0]), want)
	}
	if _, _, _, err := TreeLatency(spec, 1<<17); err == nil {
		t.Fatal("a tree of 131,072 nodes: want an error")
	}
}

// TestNetworkFigures runs the link and tree figures reduced: B5, B6 and
// B16 (scaled from 512 nodes to 65,536) agree.
func TestNetworkFigures(t *testing.T) {
	for _, fig := range []*paper.Figure{FigLink(ReducedNetwork()), FigTree(ReducedNetwork())} {
		pts, err := fig.Custom.Run(2, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range fig.CheckPoints(pts) {
			if !r.Holds {
				t.Errorf("%s: %s does not hold", r.Claim.Text, r.Measured)
			}
			t.Logf("%s: paper %s, aaemu %s", r.Claim.Text, r.Claim.Paper, r.Measured)
		}
	}
}
