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

// TestBubbleRoom is the rule on one output: tokens for the packet (and a
// full packet more entering a ring), and on a ring free slots of a full
// packet (two entering), a packet holding a slot until all its tokens are
// back.
func TestBubbleRoom(t *testing.T) {
	const size = 32 // 4 slots
	for _, tc := range []struct {
		name           string
		sent           []int // chunks of the packets sent, oldest first
		back           int   // tokens returned since
		n              int
		entering, ring bool
		want           bool
	}{
		{"empty, entering", nil, 0, 8, true, true, true},
		{"3 slots held, entering", []int{3, 3, 3}, 0, 3, true, true, false},
		{"3 slots held, going on", []int{3, 3, 3}, 0, 3, false, true, true},
		// 23 chunks free, but no slot: the case chunks alone let through.
		{"4 slots held by 9 chunks, going on", []int{3, 2, 2, 2}, 0, 3, false, true, false},
		{"oldest's tokens partly back", []int{3, 2, 2, 2}, 2, 3, false, true, false},
		{"oldest's tokens all back", []int{3, 2, 2, 2}, 3, 3, false, true, true},
		{"mesh: chunks only", []int{3, 2, 2, 2}, 0, 3, false, false, true},
		{"last slot, going on", []int{8, 8, 8}, 0, 8, false, true, true},
		{"last slot, entering", []int{8, 8, 8}, 0, 1, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := &outPort{}
			op.avail[VCEscape] = size
			for _, n := range tc.sent {
				op.avail[VCEscape] -= n
				op.sent(VCEscape, n)
			}
			op.avail[VCEscape] += tc.back
			op.returned(VCEscape, tc.back)
			if got := bubbleRoom(op, VCEscape, tc.n, size, tc.entering, tc.ring); got != tc.want {
				t.Fatalf("bubbleRoom = %v, want %v (avail %d, %d slots free)", got, tc.want, op.avail[VCEscape], op.freeSlots(VCEscape, size))
			}
		})
	}
}
