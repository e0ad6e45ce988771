package bglml

import (
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/torus"
)

// TestLinksProgress: Figures 4c–4e's traffic with the communication
// thread and with interrupts moves the same messages (Links checks every
// one arrived), and each mode's cost shows: the thread, on the
// coprocessor alone, moves about what the main core does when polling
// (the same loop, and the scratchpad's hand-offs), and the handlers'
// context switches make the interrupt-driven node slower than the
// polling one over several links.
func TestLinksProgress(t *testing.T) {
	spec := bgl.DefaultSpec(4, 4, 4)
	params := Params{EagerMax: 1 << 20, Batch: DefaultParams().Batch}
	for _, proto := range []Protocol{Eager, Rendezvous} {
		v := map[Progress]float64{}
		for _, how := range Progresses {
			bw, err := LinksProgress(spec, params, DefaultCosts(), torus.Coord{1, 1, 1}, 3, proto, 8192, 2, how)
			if err != nil {
				t.Fatalf("%v, %v: %v", proto, how, err)
			}
			v[how] = bw / 1e6
		}
		t.Logf("%v over 3 links: polling %.1f, thread %.1f, interrupts %.1f MB/s", proto, v[Polling], v[Thread], v[Interrupts])
		if r := v[Thread] / v[Polling]; r < 0.8 || r > 1.2 {
			t.Errorf("%v: the thread moves %.2f× what the polling main core does", proto, r)
		}
		if v[Interrupts] >= v[Polling] {
			t.Errorf("%v: interrupts %.1f MB/s, not under polling's %.1f", proto, v[Interrupts], v[Polling])
		}
	}
}
