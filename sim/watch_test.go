package sim_test

import (
	"slices"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// Observers attached with Watch see every send and every receive, in the
// order they happen, on plain channels and channels with lanes, and do not
// change what the consumer gets.
func TestChanWatch(t *testing.T) {
	items := []item{{0, 0}, {1, 1}, {0, 2}, {1, 3}, {0, 4}}
	tests := []struct {
		name   string
		depths []int // nil: a plain channel
		hold   []int
		sent   []int
		got    []int
	}{
		{"plain", nil, nil, []int{0, 1, 2, 3, 4}, []int{0, 1, 2, 3, 4}},
		{"lanes", []int{4, 4}, nil, []int{0, 1, 2, 3, 4}, []int{0, 1, 2, 3, 4}},
		{"lanes with one held", []int{4, 4}, []int{0}, []int{0, 1, 2, 3, 4}, []int{1, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			p := &laneProducer{items: slices.Clone(items)}
			c := &laneConsumer{hold: tc.hold, fifo: tc.depths == nil}
			pu, cu := clk.Add("prod", p), clk.Add("cons", c)
			var ch *sim.Chan[item]
			if tc.depths == nil {
				ch = sim.NewChan[item](pu, cu, "ch", 8)
			} else {
				ch = sim.NewLanedChan(pu, cu, "ch", tc.depths, func(it *item) int { return it.lane })
			}
			p.ch, c.ch = ch, ch
			var sent, got, got2 []int
			ch.Watch(func(v *item) { sent = append(sent, v.n) }, func(v *item) { got = append(got, v.n) })
			ch.Watch(nil, func(v *item) { got2 = append(got2, v.n) })
			e.Run(sim.US)
			if !slices.Equal(sent, tc.sent) || !slices.Equal(got, tc.got) || !slices.Equal(got2, tc.got) || !slices.Equal(c.got, tc.got) {
				t.Fatalf("observed sends %v and receives %v, %v; the consumer got %v; want %v and %v", sent, got, got2, c.got, tc.sent, tc.got)
			}
		})
	}
}
