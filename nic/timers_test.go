package nic

import (
	"slices"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// The QP timers come out by time, then by creation order, whatever order
// they went in, as a sorted list of the same entries does.
func TestQPTimersOrder(t *testing.T) {
	r := sim.NewRand(3, "timers")
	qps := make([]*qp, 40)
	for i := range qps {
		qps[i] = &qp{idx: i, qpHost: &qpHost{}}
	}
	var h qpTimers
	var want []qpTimer
	// popOne checks the heap's earliest entry against the sorted model's.
	popOne := func() {
		slices.SortStableFunc(want, func(a, b qpTimer) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.q.idx - b.q.idx
		})
		at, _ := h.peek()
		if q := h.pop(); at != want[0].at || q.idx != want[0].q.idx {
			t.Fatalf("popped %d@%d, want %d@%d", q.idx, at, want[0].q.idx, want[0].at)
		}
		want = want[1:]
	}
	for k := 0; k < 500; k++ {
		e := qpTimer{at: sim.Tick(r.IntN(50)), q: qps[r.IntN(len(qps))]}
		h.push(e.at, e.q)
		want = append(want, e)
		if r.IntN(3) == 0 { // interleave pops
			popOne()
		}
	}
	for len(want) > 0 {
		popOne()
	}
	if _, ok := h.peek(); ok {
		t.Fatal("entries left")
	}
}

// compact keeps exactly the entries that match their QP's timer, in heap
// order.
func TestQPTimersCompact(t *testing.T) {
	r := sim.NewRand(5, "compact")
	qps := make([]*qp, 30)
	for i := range qps {
		qps[i] = &qp{idx: i, qpHost: &qpHost{}}
	}
	var h qpTimers
	for k := 0; k < 400; k++ {
		q := qps[r.IntN(len(qps))]
		q.timer = sim.Tick(1 + r.IntN(100))
		h.push(q.timer, q)
	}
	valid := 0
	for _, e := range h {
		if e.at == e.q.timer {
			valid++
		}
	}
	h.compact()
	if len(h) != valid {
		t.Fatalf("%d entries left, %d match their timer", len(h), valid)
	}
	var last qpTimer
	for len(h) > 0 {
		at, _ := h.peek()
		q := h.pop()
		if at != q.timer || at < last.at || at == last.at && q.idx < last.q.idx {
			t.Fatalf("popped %d@%d after %d@%d (its timer %d)", q.idx, at, last.q.idx, last.at, q.timer)
		}
		last = qpTimer{at: at, q: q}
	}
}
