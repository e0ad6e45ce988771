package sim_test

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// A channel made with StatsOnUse has no statistics until it first carries
// a transaction, then the same two a plain channel has, counting from the
// start; a channel without the option declares them when it is made.
func TestStatsOnUse(t *testing.T) {
	tests := []struct {
		name   string
		opts   []sim.ChanOption
		laned  bool
		send   int
		before bool // declared before anything is sent
	}{
		{"plain channel", nil, false, 3, true},
		{"on use, never used", []sim.ChanOption{sim.StatsOnUse()}, false, 0, false},
		{"on use, used", []sim.ChanOption{sim.StatsOnUse()}, false, 3, false},
		{"on use, with lanes", []sim.ChanOption{sim.StatsOnUse()}, true, 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 10, 0)
			p := &pump{n: tc.send}
			d := &drain{}
			pu, du := clk.Add("pump", p), clk.Add("drain", d)
			var ch *sim.Chan[int]
			if tc.laned {
				ch = sim.NewLanedChan(pu, du, "ch", []int{1, 1}, func(v *int) int { return *v & 1 }, tc.opts...)
			} else {
				ch = sim.NewChan[int](pu, du, "ch", 1, tc.opts...)
			}
			p.out, d.in = ch, ch
			declared := func() bool {
				_, a := e.Stats().Get("ch.transfers")
				_, b := e.Stats().Get("ch.full_stalls")
				if a != b {
					t.Fatalf("one of the channel's two counters declared, not the other")
				}
				return a
			}
			if got := declared(); got != tc.before {
				t.Fatalf("declared before the run: %v, want %v", got, tc.before)
			}
			e.Run(sim.US)
			if got, want := declared(), tc.before || tc.send > 0; got != want {
				t.Fatalf("declared after the run: %v, want %v", got, want)
			}
			if tc.send == 0 {
				return
			}
			st, _ := e.Stats().Get("ch.transfers")
			if v := st.(*sim.Counter).Value(); v != uint64(tc.send) {
				t.Fatalf("%d transfers counted, want %d", v, tc.send)
			}
			if !tc.laned {
				// Depth 1: the pump found the channel full in between.
				st, _ = e.Stats().Get("ch.full_stalls")
				if st.(*sim.Counter).Value() == 0 {
					t.Fatal("no stall counted on a depth-1 channel")
				}
			}
		})
	}
}
