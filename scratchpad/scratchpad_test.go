package scratchpad

import (
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/sim"
)

type writer struct {
	out *sim.Chan[iommu.SPWrite]
	w   []iommu.SPWrite
}

func (w *writer) Tick(sim.Tick) bool {
	if len(w.w) > 0 && w.out.Ready() {
		w.out.Send(w.w[0])
		w.w = w.w[1:]
	}
	return len(w.w) > 0
}

// The IOMMU's writes land in their slots; a slot beyond the scratchpad is
// ignored rather than corrupting another.
func TestScratchpadSlots(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 500, 0)
	w := &writer{w: []iommu.SPWrite{{Slot: 1, Tail: 96}, {Slot: 3, Tail: 40}, {Slot: 1, Tail: 192}, {Slot: 99, Tail: 1}}}
	wu := clk.Add("iommu", w)
	s := New(clk, "sp", 4, wu)
	w.out = s.In
	e.Run(sim.US)
	if s.Read(1) != 192 || s.Read(3) != 40 || s.Read(0) != 0 || s.wr.Value() != 3 {
		t.Fatalf("slots %d %d %d, %d writes", s.Read(0), s.Read(1), s.Read(3), s.wr.Value())
	}
}
