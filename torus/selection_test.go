package torus

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// TestSelection routes one adaptive packet of 8 chunks at node (1,1,1)
// of a 4×4×4 mesh with the next routers' tokens set by hand, under every
// selection: the output and channel it takes, or that it waits.
func TestSelection(t *testing.T) {
	type avail map[Port][2]int // dynamic channels' tokens; others 32
	const wait = Port(99)
	cases := []struct {
		name  string
		dst   Coord
		av    avail
		taken Port // an output another head took this edge (NumLinkPorts: none)
		want  [numSelections]Port
		vc    [numSelections]int // the channel taken (VCEscape: escaped)
	}{
		{"x1 y2, y has more tokens", Coord{2, 3, 1}, avail{XPlus: {10, 10}, YPlus: {30, 30}}, NumLinkPorts,
			[numSelections]Port{YPlus, XPlus, YPlus, YPlus}, [numSelections]int{0, 0, 0, 0}},
		{"x2 y1, y has more tokens", Coord{3, 2, 1}, avail{XPlus: {10, 10}, YPlus: {30, 30}}, NumLinkPorts,
			[numSelections]Port{YPlus, XPlus, YPlus, XPlus}, [numSelections]int{0, 0, 0, 0}},
		{"x y z, x has no room, z's second channel most", Coord{2, 2, 2}, avail{XPlus: {4, 4}, YPlus: {20, 20}, ZPlus: {9, 30}}, NumLinkPorts,
			[numSelections]Port{ZPlus, YPlus, ZPlus, ZPlus}, [numSelections]int{1, 0, 1, 1}},
		{"x y, x has room but is taken", Coord{2, 2, 1}, avail{XPlus: {30, 30}, YPlus: {20, 20}}, XPlus,
			[numSelections]Port{YPlus, wait, YPlus, YPlus}, [numSelections]int{0, 0, 0, 0}},
		{"x y, no dynamic room: escape in x", Coord{2, 2, 1}, avail{XPlus: {7, 7}, YPlus: {0, 7}}, NumLinkPorts,
			[numSelections]Port{XPlus, XPlus, XPlus, XPlus}, [numSelections]int{VCEscape, VCEscape, VCEscape, VCEscape}},
		{"x y, ties: lowest dimension, first channel", Coord{2, 2, 1}, avail{}, NumLinkPorts,
			[numSelections]Port{XPlus, XPlus, YPlus, XPlus}, [numSelections]int{0, 0, 0, 0}},
	}
	for _, c := range cases {
		for sel := Selection(0); sel < numSelections; sel++ {
			t.Run(c.name+"/"+sel.String(), func(t *testing.T) {
				spec := DefaultSpec(4, 4, 4)
				spec.Mesh, spec.Selection = true, sel
				net, err := New(sim.NewWorld(1), "torus", spec)
				if err != nil {
					t.Fatal(err)
				}
				nd := net.Nodes[net.IndexOf(Coord{1, 1, 1})]
				r := nd.Router
				for o, a := range c.av {
					r.out[o].avail[VCDynamic0], r.out[o].avail[VCDynamic1] = a[0], a[1]
				}
				before := map[Port][NumVCs]int{}
				for o := Port(0); o < NumLinkPorts; o++ {
					before[o] = r.out[o].avail
				}
				p := &Packet{Dst: c.dst, Dynamic: true, Payload: make([]byte, MaxPayload)}
				if err := nd.Inject(0, p); err != nil {
					t.Fatal(err)
				}
				now := sim.Tick(1) * r.period
				h, at, from, vc := r.head(now, int(NumLinkPorts)*NumVCs)
				if h == nil {
					t.Fatal("no head")
				}
				var taken [NumLinkPorts]bool
				var recTaken [maxRec]bool
				if c.taken < NumLinkPorts {
					taken[c.taken] = true
				}
				_, moved := r.route(now, h, at, from, vc, int(NumLinkPorts)*NumVCs, &taken, &recTaken)
				got, gotVC := wait, -1
				for o := Port(0); o < NumLinkPorts; o++ {
					for v := 0; v < NumVCs; v++ {
						if d := before[o][v] - r.out[o].avail[v]; d != 0 {
							got, gotVC = o, v
						}
					}
				}
				if moved != (got != wait) {
					t.Fatalf("route says moved=%v, tokens taken on %v", moved, got)
				}
				if got != c.want[sel] || got != wait && gotVC != c.vc[sel] {
					t.Errorf("took %v channel %d, want %v channel %d", portName(got), gotVC, portName(c.want[sel]), c.vc[sel])
				}
			})
		}
	}
}

func portName(p Port) string {
	if p >= NumLinkPorts {
		return "nothing (waits)"
	}
	return p.String()
}

// TestSelectionNames: every selection's name parses back to it, and
// Validate refuses one out of range, naming the allowed.
func TestSelectionNames(t *testing.T) {
	for s := Selection(0); s < numSelections; s++ {
		if got, err := ParseSelection(s.String()); err != nil || got != s {
			t.Errorf("%v: parsed %v, %v", s, got, err)
		}
	}
	if _, err := ParseSelection("random"); err == nil {
		t.Error("ParseSelection(random): no error")
	}
	spec := DefaultSpec(2, 1, 1)
	spec.Selection = numSelections
	if err := spec.Validate(); err == nil {
		t.Error("a selection out of range validated")
	} else if want := "torus.selection: 4 out of range (0 to 3: tokens, xfirst, xlast or hops)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
