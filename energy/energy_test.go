package energy

import (
	"math"
	"testing"
)

// The mean routers crossed, against closed forms: a hypercube of 2^d
// routers has mean distance d·2^(d−1)/(2^d−1) between distinct routers; a
// ring of k has ⌊k²/4⌋/(k−1); a torus adds its rings' sums.
func TestAvgRouters(t *testing.T) {
	for _, tc := range []struct {
		t     Topology
		nodes int
		want  float64
	}{
		{Hypercube, 8, 1 + 12.0/7},   // 3·4/7
		{Hypercube, 16, 1 + 32.0/15}, // 4·8/15
		{Hypercube, 2, 2},
		{LongHop, 8, 1 + 10.0/7},                         // folded: 4 at one hop, 3 at two
		{Torus3D, 64, 1 + 3*64.0/63},                     // 4×4×4: each ring sums 4 over 4 routers
		{Torus3D, 27, 1 + 3*2*9.0/26},                    // 3×3×3: 2 per ring per router
		{Torus5D, 32, 1 + 5*16.0/31},                     // 2^5: a hypercube
		{Torus3D, 7, 1 + 12.0/6},                         // 7×1×1: a ring of 7, ⌊49/4⌋ = 12
		{FatTree, 16, (3*1 + 12*3) / 15.0},               // 4 leaves of 4
		{FatTree, 8, (3*1 + 4*3) / 7.0},                  // 2 leaves of 4
		{FatTree, 64, (3*1 + 12*3 + 48*5) / 63.0},        // three levels
		{FlattenedButterfly, 8, (1*1 + 4*2 + 2*3) / 7.0}, // 2×2 routers, 2 nodes each: 1 same, 4 one hop, 2 two hops
		{Dragonfly, 6, 1 + (1+1+2+2+3)/5.0},              // p=1: 3 groups of 2 routers, a router per node
	} {
		n, err := Build(tc.t, tc.nodes)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.AvgRouters(); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s, %d nodes: %.6f routers, want %.6f", tc.t, tc.nodes, got, tc.want)
		}
	}
}

// Every topology connects every node at every size, and the high-radix
// ones cross fewer routers than the tori at scale.
func TestTopologiesConnected(t *testing.T) {
	for _, tp := range Topologies {
		for _, nodes := range []int{2, 3, 8, 12, 64, 200} {
			n, err := Build(tp, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if r := n.AvgRouters(); !(r >= 1) || math.IsInf(r, 0) || r > float64(nodes+1) {
				t.Errorf("%s, %d nodes: %v routers", tp, nodes, r)
			}
			for a := range n.adj {
				if len(n.adj[a]) == 0 && n.Routers() > 1 {
					t.Errorf("%s, %d nodes: router %d has no link", tp, nodes, a)
				}
			}
		}
	}
	at := func(tp Topology) float64 { n, _ := Build(tp, 256); return n.AvgRouters() }
	if at(Dragonfly) >= at(Torus3D) || at(FlattenedButterfly) >= at(Torus3D) || at(LongHop) >= at(Hypercube) {
		t.Errorf("256 nodes: dragonfly %.2f, flattened butterfly %.2f, torus %.2f, long hop %.2f, hypercube %.2f",
			at(Dragonfly), at(FlattenedButterfly), at(Torus3D), at(LongHop), at(Hypercube))
	}
	if _, err := Build("Ring", 8); err == nil {
		t.Error("an unknown topology built")
	}
}

func TestBalancedFactors(t *testing.T) {
	for _, tc := range []struct {
		n, d int
		want []int
	}{
		{64, 3, []int{4, 4, 4}}, {8, 5, []int{2, 2, 2, 1, 1}}, {12, 3, []int{3, 2, 2}}, {7, 3, []int{7, 1, 1}}, {243, 5, []int{3, 3, 3, 3, 3}},
	} {
		got := balancedFactors(tc.n, tc.d)
		if len(got) != len(tc.want) {
			t.Fatalf("%d in %d: %v", tc.n, tc.d, got)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%d in %d: %v, want %v", tc.n, tc.d, got, tc.want)
				break
			}
		}
	}
}

func TestEnergy(t *testing.T) {
	p := DefaultParams()
	// 1 Gb/s, 125 MB in 2 s: busy 1 s.
	if got := p.NIC(125_000_000, 1000, 2); math.Abs(got-(0.5*2+0.5*1)) > 1e-9 {
		t.Errorf("NIC: %v J", got)
	}
	// Busy never longer than the interval.
	if got := p.NIC(1e9, 1000, 1); math.Abs(got-1.0) > 1e-9 {
		t.Errorf("saturated NIC: %v J", got)
	}
	if got := p.Routers(1000, 2.5); math.Abs(got-1000*2.5*0.4e-9) > 1e-18 {
		t.Errorf("routers: %v J", got)
	}
	for _, bad := range []Params{{NICActiveW: 1, NICIdleW: 2}, {NICActiveW: 1, NICIdleW: -1}, {NICActiveW: 1, RouterJPerByte: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if DefaultParams().Validate() != nil {
		t.Error("the defaults are refused")
	}
}
