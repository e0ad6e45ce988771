package torus

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// TestFIFOGroups checks the second FIFO set of coprocessor and virtual
// node mode: a packet is received into the reception FIFOs of its Group
// (its input port's, or the high-priority one, of that set), a deposit
// packet leaves its copies in its set's FIFOs along the line, either
// set's injection FIFOs feed the router, and a group the torus does not
// have is refused.
func TestFIFOGroups(t *testing.T) {
	spec := DefaultSpec(4, 4, 2)
	spec.Groups = 2
	w := sim.NewWorld(1)
	net, err := New(w, "t", spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(net.Nodes[0].Router.Rec), 2*NumRecFIFOs; got != want {
		t.Fatalf("%d reception FIFOs, want %d", got, want)
	}
	gi := spec.GroupInj()
	src := net.Nodes[0]
	sends := []struct {
		fifo int
		p    Packet
	}{
		{0, Packet{Dst: Coord{1, 0, 0}}},                          // set 0, in on x−
		{gi, Packet{Dst: Coord{1, 0, 0}, Group: 1}},               // set 1 from set 1's FIFO
		{1, Packet{Dst: Coord{0, 1, 0}, Group: 1, Dynamic: true}}, // set 1 from set 0's FIFO
		{gi + spec.InjFIFOs, Packet{Dst: Coord{0, 0, 1}, Group: 1, Priority: true}},
		{2, Packet{Dst: Coord{3, 0, 0}, Group: 1, Deposit: true, Hint: [3]int8{1, 0, 0}}},
	}
	for _, s := range sends {
		p := s.p
		p.Payload = make([]byte, 40)
		if err := src.Inject(s.fifo, &p); err != nil {
			t.Fatalf("inject into FIFO %d: %v", s.fifo, err)
		}
	}
	w.Run(sim.MS)
	want := map[[2]int]int{ // node, reception FIFO: packets
		{1, int(XMinus)}:                      1, // the first
		{1, NumRecFIFOs + int(XMinus)}:        2, // the second, and the deposit's copy
		{4, NumRecFIFOs + int(YMinus)}:        1, // the adaptive one
		{16, NumRecFIFOs + int(NumLinkPorts)}: 1, // the high-priority one
		{2, NumRecFIFOs + int(XMinus)}:        1, // the deposit's copy
		{3, NumRecFIFOs + int(XMinus)}:        1, // the deposit's end
	}
	for i, nd := range net.Nodes {
		for k, f := range nd.Router.Rec {
			if got := f.Len(); got != want[[2]int{i, k}] {
				t.Errorf("node %d reception FIFO %d: %d packets, want %d", i, k, got, want[[2]int{i, k}])
			}
		}
	}
	if v := net.Nodes[1].NextVisibleGroup(1); v == sim.Never {
		t.Error("node 1: set 1 holds packets, NextVisibleGroup says none")
	}

	one := DefaultSpec(4, 4, 2)
	w1 := sim.NewWorld(1)
	net1, err := New(w1, "t", one)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fifo int
		p    Packet
		msg  string
	}{
		{0, Packet{Dst: Coord{1, 0, 0}, Group: 1}, "FIFO group 1 of a torus of 1"},
		{gi, Packet{Dst: Coord{1, 0, 0}}, "injection FIFO 8 of 8"},
	} {
		p := tc.p
		if err := net1.Nodes[0].Inject(tc.fifo, &p); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("inject %+v into FIFO %d: %v, want %q", tc.p, tc.fifo, err, tc.msg)
		}
	}
	if err := net.Nodes[0].Inject(gi+1, &Packet{Dst: Coord{1, 0, 0}, Priority: true}); err == nil || !strings.Contains(err.Error(), "normal") {
		t.Errorf("a high-priority packet into set 1's normal FIFO: %v", err)
	}
	bad := DefaultSpec(4, 4, 2)
	bad.Groups = 3
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "torus.groups: 3 out of range (1 to 2)") {
		t.Errorf("three FIFO sets: %v", err)
	}
}
