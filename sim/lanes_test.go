package sim_test

import (
	"slices"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// item is a transaction of a laned channel: lane is its class.
type item struct {
	lane, n int
}

// laneProducer sends its items in order within each lane, as room in the
// item's lane allows: an item whose lane is full holds back only its lane.
type laneProducer struct {
	ch    *sim.Chan[item]
	items []item
	sent  []int
}

func (p *laneProducer) Tick(sim.Tick) bool {
	var full [3]bool
	keep := p.items[:0]
	for _, it := range p.items {
		if full[it.lane] || !p.ch.ReadyFor(&it) {
			full[it.lane] = true
			keep = append(keep, it)
			continue
		}
		p.ch.Send(it)
		p.sent = append(p.sent, it.n)
	}
	p.items = keep
	return false
}

// laneConsumer takes every valid head but those of the held lanes, oldest
// first (or, with fifo, only the oldest transaction, as from one FIFO).
type laneConsumer struct {
	ch   *sim.Chan[item]
	hold []int
	fifo bool
	got  []int
}

func (c *laneConsumer) Tick(sim.Tick) bool {
	for {
		if c.fifo {
			if !c.ch.Valid() || slices.Contains(c.hold, c.ch.Peek().lane) {
				return false
			}
			c.got = append(c.got, c.ch.Recv().n)
			continue
		}
		best, bestAt := -1, uint64(0)
		for l := 0; l < c.ch.Lanes(); l++ {
			if a, ok := c.ch.Arrival(l); ok && !slices.Contains(c.hold, l) && (best < 0 || a < bestAt) {
				best, bestAt = l, a
			}
		}
		if best < 0 {
			return false
		}
		c.got = append(c.got, c.ch.RecvLane(best).n)
	}
}

// A channel with lanes keeps a FIFO per lane: a lane whose head the
// consumer leaves, or which is full, holds up neither the producer nor the
// consumer in the other lanes; without lanes held it delivers in send order.
func TestLanedChanKeepsLanesApart(t *testing.T) {
	tests := []struct {
		name   string
		depths []int
		items  []item
		hold   []int
		fifo   bool
		want   []int // received before the hold is lifted
		after  []int // received after
	}{
		{"nothing held: send order", []int{2, 2}, []item{{0, 0}, {1, 1}, {0, 2}, {1, 3}}, nil, false,
			[]int{0, 1, 2, 3}, nil},
		{"one FIFO when taken with Recv", []int{2, 2}, []item{{0, 0}, {1, 1}, {0, 2}}, nil, true,
			[]int{0, 1, 2}, nil},
		{"a held lane does not block another", []int{2, 2}, []item{{0, 0}, {1, 1}, {0, 2}, {1, 3}}, []int{0}, false,
			[]int{1, 3}, []int{0, 2}},
		{"a full lane does not block the producer in another", []int{1, 4}, []item{{0, 0}, {0, 1}, {0, 2}, {1, 3}, {1, 4}}, []int{0}, false,
			[]int{3, 4}, []int{0, 1, 2}},
		{"Recv stops at a held oldest head", []int{2, 2}, []item{{0, 0}, {1, 1}}, []int{0}, true,
			nil, []int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			p := &laneProducer{items: slices.Clone(tc.items)}
			c := &laneConsumer{hold: tc.hold, fifo: tc.fifo}
			pu, cu := clk.Add("prod", p), clk.Add("cons", c)
			ch := sim.NewLanedChan(pu, cu, "ch", tc.depths, func(it *item) int { return it.lane })
			p.ch, c.ch = ch, ch
			e.Run(sim.US)
			if !slices.Equal(c.got, tc.want) {
				t.Fatalf("received %v, want %v", c.got, tc.want)
			}
			c.hold = nil
			cu.WakeAt(e.Now() + 1)
			e.Run(2 * sim.US)
			if !slices.Equal(c.got[len(tc.want):], tc.after) {
				t.Fatalf("received %v after the hold, want %v", c.got[len(tc.want):], tc.after)
			}
		})
	}
}

// Ready asks for room in every lane, ReadyFor and ReadyLane in one; space a
// Recv frees is the producer's from its next edge, lane by lane, as on a
// plain channel.
func TestLanedChanReadiness(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 1000, 0)
	var ch *sim.Chan[item]
	var log []string
	step := 0
	prod := blockFunc(func(now sim.Tick) bool {
		switch step {
		case 0:
			ch.Send(item{0, 0})
			if ch.Ready() || ch.ReadyLane(0) || !ch.ReadyLane(1) || !ch.ReadyFor(&item{1, 9}) {
				log = append(log, "after filling lane 0: Ready or ReadyLane wrong")
			}
		case 1:
			// The consumer took lane 0's head at this edge: not yet room.
			if ch.ReadyLane(0) {
				log = append(log, "space freed in this step seen by the producer")
			}
		case 2:
			if !ch.ReadyLane(0) || !ch.Ready() {
				log = append(log, "space freed at the last edge not seen")
			}
		}
		step++
		return step < 3
	})
	cons := blockFunc(func(now sim.Tick) bool {
		if ch.ValidLane(0) {
			ch.RecvLane(0)
		}
		return false
	})
	pu, cu := clk.Add("prod", prod), clk.Add("cons", cons)
	ch = sim.NewLanedChan(pu, cu, "ch", []int{1, 1}, func(it *item) int { return it.lane })
	e.Run(sim.US)
	if len(log) != 0 || step != 3 {
		t.Fatalf("%v (step %d)", log, step)
	}
	if ch.Lanes() != 2 || ch.Depth() != 2 || ch.LaneDepth(1) != 1 {
		t.Fatal("lane geometry")
	}
}

type blockFunc func(now sim.Tick) bool

func (f blockFunc) Tick(now sim.Tick) bool { return f(now) }
