package mpi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TestTorusVirtualNode runs MPI in virtual node mode on a 2×2×1 torus:
// eight ranks, two a node, each on its own core; every pair exchanges
// messages of sizes on both sides of the eager limit (between the two
// ranks of a node: the virtual FIFOs and L144's copy; between nodes: each
// rank's own FIFO set), every byte checked; ranks follow XYZT with t
// slowest, and a mapping file with t.
func TestTorusVirtualNode(t *testing.T) {
	dims := torus.Coord{2, 2, 1}
	var file strings.Builder
	for r := 0; r < 8; r++ { // t fastest: ranks 2k and 2k+1 share node k
		fmt.Fprintf(&file, "%d %d 0 %d\n", r/2%2, r/4, r%2)
	}
	mapped, err := bgl.ReadMappingTasks("vn.map", strings.NewReader(file.String()), dims, 2)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{0, 1, 100, 1000, 5000}
	for _, nodeOf := range [][]int{nil, mapped} {
		m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 2, 1).WithMode(bgl.VirtualNodeMode))
		if err != nil {
			t.Fatal(err)
		}
		var failed []string
		res, err := RunTorus(m, Config{}, TorusConfig{Params: Params{EagerLimit: 1200}}, nodeOf, func(c *Comm) {
			failed = append(failed, exchangeAll(c, sizes)...)
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range failed {
			t.Error(f)
		}
		if len(res.Places) != 8 {
			t.Fatalf("%d ranks, want 8", len(res.Places))
		}
		for r, p := range res.Places {
			want := Place{Node: r % 4, Core: r / 4} // XYZT: t slowest
			if nodeOf != nil {
				want = Place{Node: r / 2, Core: r % 2}
			}
			if p != want {
				t.Errorf("rank %d on %v, want %v", r, p, want)
			}
		}
		var virtual uint64
		for _, nd := range m.Nodes {
			virtual += nd.VN.To[0].Stats.Packets + nd.VN.To[1].Stats.Packets
		}
		if virtual == 0 {
			t.Error("no packet through the virtual FIFOs")
		}
	}
	// Two ranks on one core, a rank on core 1 in coprocessor mode.
	m, _ := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1).WithMode(bgl.VirtualNodeMode))
	if _, err := RunTorus(m, Config{}, TorusConfig{}, []int{0, 0, 1, 2}, func(*Comm) {}); err == nil || !strings.Contains(err.Error(), "both on node 0 core 0") {
		t.Errorf("two ranks on a core: %v", err)
	}
	co, _ := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1).WithMode(bgl.CoprocessorMode))
	_, err = RunOn(bgl.Host{M: co}, Config{Ranks: 2, Transports: []TransportMaker{Torus(TorusConfig{Machine: co})},
		Place: func(r int) Place { return Place{Node: r, Core: 1} }}, func(*Comm) {})
	if err == nil || !strings.Contains(err.Error(), "on core 1 of node 0 (one rank a node, on core 0, in coprocessor mode)") {
		t.Errorf("a rank on core 1 in coprocessor mode: %v", err)
	}
}
