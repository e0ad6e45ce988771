package nic

import "github.com/aaemu/aaemu/sim"

// qpTimers is a min-heap of QPs by the time they next need the NIC's
// attention, ties broken by creation order so that reactivation is the
// same from run to run. An entry is stale when its QP went back on the
// active list before its time (the QP's timer field no longer matches):
// due skips those, so they wake nothing.
type qpTimers []qpTimer

type qpTimer struct {
	at sim.Tick
	q  *qp
}

func (h qpTimers) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].q.idx < h[j].q.idx
}

func (h *qpTimers) push(at sim.Tick, q *qp) {
	*h = append(*h, qpTimer{at: at, q: q})
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// pop removes the earliest entry; the heap must not be empty.
func (h *qpTimers) pop() *qp {
	s := *h
	q := s[0].q
	last := len(s) - 1
	s[0] = s[last]
	s[last] = qpTimer{}
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return q
}

// peek is the earliest time in the heap.
func (h qpTimers) peek() (sim.Tick, bool) {
	if len(h) == 0 {
		return 0, false
	}
	return h[0].at, true
}

// dropStale pops the stale entries at the top, so that peek is the next
// time a QP is really due.
func (h *qpTimers) dropStale() {
	for len(*h) > 0 && (*h)[0].at != (*h)[0].q.timer {
		h.pop()
	}
}
