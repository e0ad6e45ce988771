package torus

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// TestBubbleFragments sends, on a ring, packets whose sizes do not divide
// the escape buffer (3 chunks into 32, 4 into 30 …), every node half the ring
// ahead: deterministic, all on the escape channel the same way round.
// Counted in chunks, the bubble rule keeps a full packet of room in the
// ring in total but not in one place: each router can be left with 1 or
// 2 free chunks, too few for the 3- or 4-chunk packet at the head of the
// router before it, and the ring deadlocks with room in total (a 16-node
// AA run on the Gemini-class preset stopped so at 124 µs). Counted in
// slots of a full packet, the bubble is whole and every packet arrives.
func TestBubbleFragments(t *testing.T) {
	for _, tc := range []struct {
		name    string
		x       int
		payload []int // cycled over
		count   int
	}{
		{"4-ring, 3 chunks", 4, []int{80}, 300},
		{"8-ring, 3 chunks", 8, []int{80}, 300},
		{"8-ring, 3 and 4 chunks", 8, []int{80, 112, 80}, 300},
		{"8-ring, 1 to 8 chunks", 8, []int{0, 80, 112, 240, 48, 200}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, DefaultSpec(tc.x, 1, 1), 1, 1)
			total := 0
			for i, g := range r.gen {
				dst := r.net.CoordOf((i + tc.x/2) % tc.x)
				for k := 0; k < tc.count; k++ {
					g.queue = append(g.queue, tagged(i, k, dst, tc.payload[k%len(tc.payload)]))
					total++
				}
			}
			r.run(sim.S)
			checkDelivery(t, r, total, true)
			checkDrained(t, r)
		})
	}
}
