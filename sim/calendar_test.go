package sim

import (
	"fmt"
	"strings"
	"testing"
)

// The calendar only changes where near timers wait, not their order: units
// of clocks of several periods and phases, waking themselves (and each
// other) at random distances — within one slot, within the calendar's
// horizon, beyond it, at times that fall in one slot for two clocks —
// are evaluated in the same order, at the same times, as with every
// timer in the heap.
func TestCalendarKeepsTheHeapsOrder(t *testing.T) {
	cases := []struct {
		name    string
		periods []Tick // one clock each
		phases  []Tick
		maxWake Tick // wakes at 1 … maxWake ps ahead
		run     Tick
		late    bool // the last clock (the fastest) is added half way through
	}{
		{"one clock, near", []Tick{500}, []Tick{0}, 100 * NS, 200 * US, false},
		{"one clock, across the horizon", []Tick{500}, []Tick{0}, 2 * US, 2 * MS, false},
		{"cpu and fabric", []Tick{500, 1000}, []Tick{0, 0}, 400 * NS, 400 * US, false},
		{"phases in one slot", []Tick{700, 1100, 300}, []Tick{0, 450, 100}, 300 * NS, 200 * US, false},
		{"far only", []Tick{1000}, []Tick{0}, 50 * US, 50 * MS, false},
		{"a faster clock added during the run", []Tick{1000, 300}, []Tick{0, 0}, 100 * NS, 400 * US, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(noCal bool) string {
				e := NewEngine(7)
				e.noCal = noCal
				var log strings.Builder
				var units []*Unit
				add := func(k int) {
					p := tc.periods[k]
					clk := e.NewClock(fmt.Sprintf("clk%d", k), p, tc.phases[k])
					for i := 0; i < 10; i++ {
						name := fmt.Sprintf("u%d_%d", k, i)
						r := e.Rand(name)
						var u *Unit
						u = clk.Add(name, BlockFunc(func(now Tick) bool {
							fmt.Fprintf(&log, "%d %s\n", now, name)
							switch r.IntN(4) {
							case 0:
								return true // the next edge
							case 1: // hands its wake to another
								units[r.IntN(len(units))].WakeIn(Tick(1 + r.Int64N(int64(tc.maxWake))))
								return false
							}
							u.WakeIn(Tick(1 + r.Int64N(int64(tc.maxWake))))
							return false
						}))
						units = append(units, u)
					}
				}
				n := len(tc.periods)
				if tc.late {
					n--
				}
				for k := range n {
					add(k)
				}
				if tc.late {
					e.Run(tc.run / 2)
					add(n)
				}
				e.Run(tc.run)
				return log.String()
			}
			heap, cal := run(true), run(false)
			if heap != cal {
				a, b := strings.Split(heap, "\n"), strings.Split(cal, "\n")
				for i := range min(len(a), len(b)) {
					if a[i] != b[i] {
						t.Fatalf("evaluation %d: heap alone %q, with the calendar %q", i, a[i], b[i])
					}
				}
				t.Fatalf("%d evaluations with the heap alone, %d with the calendar", len(a), len(b))
			}
			if n := strings.Count(heap, "\n"); n < 2000 {
				t.Fatalf("only %d evaluations: the test exercises too little", n)
			}
		})
	}
}
