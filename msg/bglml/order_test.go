package bglml

import (
	"math/rand/v2"
	"testing"

	"github.com/aaemu/aaemu/torus"
)

// TestOrderAdaptive sends random mixes of one-packet, eager,
// adaptive-eager and rendezvous messages between a few pairs of nodes
// (every pair's messages in a burst, so that a deterministic message and
// the adaptive-eager one after it are in the network together) with
// adaptive routing, and checks (deliver) that every pair's messages reach
// the upcall in the order they were sent. An adaptive-eager message's
// first packet overtakes the deterministic messages before it; the
// receiver holds it until they are matched (Stats.Held), which some seed
// must make it do.
func TestOrderAdaptive(t *testing.T) {
	params := Params{EagerMax: 1200, Adaptive: true, Batch: 8}
	dims := torus.Coord{4, 4, 2}
	nodes := dims[0] * dims[1] * dims[2]
	cases := []struct {
		name  string
		seeds []uint64
		pairs int
		each  int
	}{
		{"few pairs", []uint64{1, 2, 3, 4}, 4, 24},
		{"many pairs", []uint64{5, 6}, 24, 8},
	}
	var held uint64
	for _, c := range cases {
		for _, seed := range c.seeds {
			rng := rand.New(rand.NewPCG(seed, 16))
			var sends []send
			for range c.pairs {
				src := rng.IntN(nodes)
				dst := (src + 1 + rng.IntN(nodes-1)) % nodes
				for range c.each {
					s := send{src: src, dst: dst, skew: rng.IntN(3) * 5}
					switch rng.IntN(4) {
					case 0:
						s.proto, s.size = OnePacket, rng.IntN(torus.MaxPayload-firstHdr-4+1)
					case 1:
						s.proto, s.size = Eager, rng.IntN(3000)
					case 2:
						s.proto, s.size = AdaptiveEager, rng.IntN(3000)
					default:
						s.proto, s.size = Rendezvous, rng.IntN(6000)
					}
					sends = append(sends, s)
				}
			}
			st := deliverStats(t, dims, params, sends)
			t.Logf("%s, seed %d: %d messages, %d first packets held", c.name, seed, len(sends), st.Held)
			held += st.Held
		}
	}
	if held == 0 {
		t.Error("no first packet came before a message sent earlier: the test does not exercise the reordering")
	}
}
