package sim_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// The units due on one edge run in creation order, whatever made them due
// and in whatever order: timers pushed late and early, a channel's
// delivery, a register's change; ReverseOrder runs them backwards.
func TestEdgeOrderIsCreationOrder(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		var opts []sim.Option
		if reverse {
			opts = append(opts, sim.ReverseOrder())
		}
		e := sim.NewEngine(1, opts...)
		clk := e.NewClock("clk", 1000, 0)
		const edge = 20 * 1000
		var order []string
		units := make([]*sim.Unit, 6)
		var ch *sim.Chan[int]
		var reg *sim.Reg[int]
		for i := range units {
			name := fmt.Sprintf("u%d", i)
			units[i] = clk.Add(name, sim.BlockFunc(func(now sim.Tick) bool {
				if now == edge {
					order = append(order, name)
				}
				if i == 4 && ch.Valid() {
					ch.Recv()
				}
				return false
			}))
		}
		reg = sim.NewReg(units[0], "r", 0) // u0 is woken by its change
		driver := clk.Add("driver", sim.BlockFunc(func(now sim.Tick) bool {
			switch now {
			case 0:
				units[5].WakeAt(edge) // the earliest push, the last unit
				units[3].WakeAt(edge)
			case 5 * 1000:
				units[2].WakeAt(edge)
				units[1].WakeAt(edge) // the latest push
			case edge - 1000:
				ch.Send(1) // wakes u4 on the next edge
				reg.D(7)   // wakes u0 on the next edge
			}
			return now < edge
		}))
		ch = sim.NewChan[int](driver, units[4], "ch", 2)
		e.Run(sim.MS)
		want := []string{"u0", "u1", "u2", "u3", "u4", "u5"}
		if reverse {
			slices.Reverse(want)
		}
		if !slices.Equal(order, want) {
			t.Fatalf("reverse %v: edge ran %v, want %v", reverse, order, want)
		}
	}
}

// WakeThisEdge evaluates a unit in the current step only where its turn
// has not come: later on the same clock, or on a later clock with an edge
// now (which then runs this step); never a unit already evaluated, the
// unit running, a unit of an earlier clock or of a clock without an edge
// now, nor outside a step.
func TestWakeThisEdge(t *testing.T) {
	e := sim.NewEngine(1)
	a := e.NewClock("a", 1000, 0)
	b := e.NewClock("b", 2000, 0)
	c := e.NewClock("c", 3000, 500) // no edge at 6000
	var log []string
	var got []string
	mk := func(clk *sim.Clock, name string) *sim.Unit {
		return clk.Add(name, sim.BlockFunc(func(now sim.Tick) bool {
			if now >= 6000 {
				log = append(log, fmt.Sprintf("%d %s", now, name))
			}
			return false
		}))
	}
	var a0, a1, a2, b0, b1, c0 *sim.Unit
	a0 = mk(a, "a0")
	a1 = a.Add("a1", sim.BlockFunc(func(now sim.Tick) bool {
		if now == 6000 {
			log = append(log, "6000 a1")
			for _, u := range []*sim.Unit{a0, a1, a2, b0, b1, c0} {
				got = append(got, fmt.Sprintf("%s:%v", u.Name(), u.WakeThisEdge()))
			}
		}
		if now == 0 {
			a1.WakeAt(6000)
		}
		return false
	}))
	a2 = mk(a, "a2")
	b0 = mk(b, "b0")
	b1 = b.Add("b1", sim.BlockFunc(func(now sim.Tick) bool {
		if now == 6000 {
			log = append(log, "6000 b1")
			got = append(got, fmt.Sprintf("from b1 a2:%v", a2.WakeThisEdge()))
		}
		return false
	}))
	c0 = mk(c, "c0")
	e.Run(sim.US)
	if before := a0.WakeThisEdge(); before {
		t.Fatal("WakeThisEdge outside a step woke a unit")
	}
	wantGot := []string{"a0:false", "a1:false", "a2:true", "b0:true", "b1:true", "c0:false", "from b1 a2:false"}
	if !slices.Equal(got, wantGot) {
		t.Fatalf("WakeThisEdge answered %v, want %v", got, wantGot)
	}
	wantLog := []string{"6000 a1", "6000 a2", "6000 b0", "6000 b1"}
	if !slices.Equal(log, wantLog) {
		t.Fatalf("the step ran %v, want %v", log, wantLog)
	}
}

// Windows lie on a grid of the window's length from time 0: a run that
// stops ends every domain at the end of the grid's window that holds the
// stop, however long the domains were idle before (a window that started
// at the first event after an idle gap would end elsewhere).
func TestWindowsOnAGrid(t *testing.T) {
	const period = 1000
	for _, gap := range []sim.Tick{0, 1234 * period, 98765 * period} {
		for _, parts := range []int{1, 2} {
			w := sim.NewWorld(1, sim.Partitions(parts))
			da, db := w.Domain("a"), w.Domain("b")
			stopAt := gap + 37*period
			var last sim.Tick
			var ua, ub *sim.Unit
			ua = da.NewClock("clk", period, 0).Add("a.stopper", sim.BlockFunc(func(now sim.Tick) bool {
				if now == 0 && gap > 0 {
					ua.WakeAt(gap)
					return false
				}
				if now == stopAt {
					da.Stop()
				}
				return true
			}))
			ub = db.NewClock("clk", period, 0).Add("b.ticker", sim.BlockFunc(func(now sim.Tick) bool {
				last = now
				if now == 0 && gap > 0 {
					ub.WakeAt(gap)
					return false
				}
				return true
			}))
			sim.NewLink[int](ua, ub, "ab", 1, 10*period)
			win := w.Window()
			w.Run(sim.Never - 1)
			wantLast := stopAt - stopAt%win + win - period
			if last != wantLast || w.Now() != wantLast {
				t.Fatalf("gap %v, %d partitions: the other domain ran to %v (world %v), want %v: the end of the grid's window",
					gap, parts, last, w.Now(), wantLast)
			}
		}
	}
}
