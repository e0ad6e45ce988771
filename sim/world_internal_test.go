package sim

import (
	"fmt"
	"strings"
	"testing"
)

// A link whose latency is below the window would let an item arrive in the
// past of a domain that already ran on. Run refuses such a window; if one
// slips through anyway, the first Send below it panics rather than
// silently giving wrong results, with any number of partitions.
func TestSendBelowTheWindowPanics(t *testing.T) {
	for _, parts := range []int{1, 2} {
		t.Run(fmt.Sprint("partitions=", parts), func(t *testing.T) {
			w := NewWorld(1, Partitions(parts))
			a, b := w.Domain("a"), w.Domain("b")
			sent := 0
			var ch *Chan[int]
			pu := a.NewClock("clk", 1000, 0).Add("a.src", BlockFunc(func(now Tick) bool {
				if ch.Ready() {
					ch.Send(sent)
					sent++
				}
				return sent < 10
			}))
			du := b.NewClock("clk", 1000, 0).Add("b.dst", BlockFunc(func(Tick) bool {
				if ch.Valid() {
					ch.Recv()
				}
				return false
			}))
			ch = NewLink[int](pu, du, "ab", 4, 2000)
			w.window, w.trustWindow = 5000, true
			msg := func() (m string) {
				defer func() { m = fmt.Sprint(recover()) }()
				w.Run(Never - 1)
				return ""
			}()
			want := "sim: link ab: an item sent at 0ps would be visible at 2ns, inside the window that ends at 5ns: the window exceeds the link's latency 2ns"
			if !strings.HasPrefix(msg, want) {
				t.Fatalf("panic %q, want %q", msg, want)
			}
		})
	}
}

// World.Stop, called from a block, ends the run at the barrier.
func TestWorldStopFromABlock(t *testing.T) {
	for _, parts := range []int{1, 2} {
		w := NewWorld(1, Partitions(parts))
		a, b := w.Domain("a"), w.Domain("b")
		n := 0
		ua := a.NewClock("clk", 1000, 0).Add("a.x", BlockFunc(func(now Tick) bool {
			if n++; n == 5 {
				w.Stop()
			}
			return true
		}))
		ub := b.NewClock("clk", 1000, 500).Add("b.y", BlockFunc(func(Tick) bool { return true }))
		NewLink[int](ua, ub, "ab", 1, 3000)
		end := w.Run(Never - 1)
		// The stop at 4ns falls in the window [3ns, 6ns).
		if end != 5500 || a.Now() != 5000 || b.Now() != 5500 || w.Windows() != 2 {
			t.Fatalf("%d partitions: stopped at %v (a %v, b %v) after %d windows", parts, end, a.Now(), b.Now(), w.Windows())
		}
	}
}
