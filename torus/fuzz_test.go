package torus

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// FuzzInject writes arbitrary packets into a node of a small torus: Inject
// either refuses one with an error or the network delivers it, to its
// destination (and, with the deposit bit, along its line), never panicking.
func FuzzInject(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint8(0), uint8(0), uint16(10), uint8(0), int8(0), int8(0), int8(0))
	f.Add(uint8(0), uint8(2), uint8(0), uint8(0), uint16(240), uint8(4), int8(1), int8(0), int8(0))
	f.Add(uint8(5), uint8(0), uint8(1), uint8(1), uint16(241), uint8(1), int8(0), int8(-1), int8(0))
	f.Add(uint8(3), uint8(7), uint8(9), uint8(0), uint16(0), uint8(2), int8(3), int8(0), int8(0))
	f.Add(uint8(1), uint8(1), uint8(0), uint8(0), uint16(100), uint8(8), int8(0), int8(0), int8(0))
	f.Fuzz(func(t *testing.T, src, x, y, z uint8, n uint16, flags uint8, hx, hy, hz int8) {
		spec := DefaultSpec(3, 3, 2)
		r := newRig(t, spec, 1, 1)
		s := int(src) % len(r.net.Nodes)
		p := tagged(s, 0, Coord{int(x), int(y), int(z)}, int(n%300))
		p.Dynamic = flags&1 != 0
		p.Deposit = flags&2 != 0
		p.Priority = flags&4 != 0
		p.Hint = [3]int8{hx, hy, hz}
		fifo := 0
		if flags&8 != 0 {
			fifo = spec.InjFIFOs
		}
		if err := r.net.Nodes[s].Inject(fifo, p); err != nil {
			return
		}
		r.run(sim.MS)
		dst := r.net.IndexOf(p.Dst)
		if got := len(r.gen[dst].got); got != 1 {
			t.Fatalf("destination got %d packets", got)
		}
		total := 0
		for _, g := range r.gen {
			total += len(g.got)
		}
		hops := int(r.gen[dst].got[0].p.Hops)
		if !p.Deposit && total != 1 || p.Deposit && total != hops {
			t.Fatalf("%d deliveries for a packet of %d hops (deposit %v)", total, hops, p.Deposit)
		}
		checkDrained(t, r)
	})
}
