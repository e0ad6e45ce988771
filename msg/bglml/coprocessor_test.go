package bglml

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TestCoprocessorReceives sends rendezvous messages in coprocessor mode:
// those into buffers of whole L1 lines are received by the coprocessor
// (their data in the second FIFO set), the others by the main core, and
// every message arrives whole, once, in order, with other protocols' traffic
// beside them.
func TestCoprocessorReceives(t *testing.T) {
	cases := []struct {
		size, skew int
		co         bool
	}{
		{32, 0, true}, {480, 0, true}, {4800, 0, true}, {16384, 0, true},
		{1000, 0, false},  // not whole lines
		{4800, 16, false}, // not line-aligned
		{4800, 8, false},  // not even 16-byte aligned: the realigning copy
		{0, 0, false},
	}
	var sends []send
	wantCo, wantPk := 0, 0
	for _, c := range cases {
		for _, pair := range [][2]int{{0, 1}, {5, 0}, {9, 14}} {
			sends = append(sends, send{src: pair[0], dst: pair[1], size: c.size, proto: Rendezvous, skew: c.skew})
			if c.co {
				wantCo++
				wantPk += (c.size + torus.MaxPayload - 1) / torus.MaxPayload
			}
		}
		sends = append(sends, send{src: 3, dst: 0, size: 700, proto: Eager}, send{src: 0, dst: 3, size: 20, proto: OnePacket})
	}
	params := DefaultParams()
	params.Coprocessor = true
	st := deliverStats(t, torus.Coord{4, 2, 2}, params, sends)
	if int(st.CoRecv) != wantCo || int(st.CoPackets) != wantPk {
		t.Fatalf("the coprocessor received %d transfers in %d packets, want %d in %d", st.CoRecv, st.CoPackets, wantCo, wantPk)
	}
	params.Coprocessor = false
	if st := deliverStats(t, torus.Coord{4, 2, 2}, params, sends); st.CoRecv != 0 {
		t.Fatalf("without the coprocessor: %d transfers received by it", st.CoRecv)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(4, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	params.Coprocessor = true
	if _, err := New(m, 0, params, DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "bglml.coprocessor: node 0 is in heater mode") {
		t.Fatalf("the coprocessor on a node in heater mode: %v", err)
	}
}

// TestCoprocessorLinks is Figure 4f's mechanism: with the coprocessor
// receiving the rendezvous data, the main core only sends, and the node
// moves more than three links' worth both ways where the main core alone
// moves about two.
func TestCoprocessorLinks(t *testing.T) {
	link := 2 * 700e6 / 4 * 240 / 270 // bytes/s of one link both ways
	run := func(co bool, k int) float64 {
		spec := bgl.DefaultSpec(4, 4, 4)
		params := Params{EagerMax: 1 << 20, Batch: 8, Coprocessor: co}
		if co {
			spec = spec.WithMode(bgl.CoprocessorMode)
		}
		v, err := Links(spec, params, DefaultCosts(), torus.Coord{1, 1, 1}, k, Rendezvous, 8192, 3)
		if err != nil {
			t.Fatal(err)
		}
		return v / link
	}
	without, with := run(false, 4), run(true, 4)
	t.Logf("4 links: %.2f links' worth by the main core alone, %.2f with the coprocessor", without, with)
	if without > 2.5 || with < 3 {
		t.Fatalf("4 links: %.2f links' worth without the coprocessor (want at most 2.5), %.2f with (want more than 3)", without, with)
	}
	if one := run(true, 1); one < 0.95 {
		t.Fatalf("one link with the coprocessor: %.2f links' worth", one)
	}
}
