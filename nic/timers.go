package nic

import "github.com/aaemu/aaemu/sim"

// qpTimers is a min-heap of QPs by the time they next need the NIC's
// attention (their deadline), ties broken by creation order so that the
// order is the same from run to run. An entry is stale when its QP's
// deadline changed since it was pushed (the QP's timer field no longer
// matches): dropStale skips those, so they wake nothing.
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
	*h = s[:last]
	h.down(0)
	return q
}

func (h qpTimers) down(i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
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

// compact drops every stale entry: a QP whose deadline moves often (each
// ACK restarts the retransmission timer) leaves one behind each time.
func (h *qpTimers) compact() {
	s := (*h)[:0]
	for _, e := range *h {
		if e.at == e.q.timer {
			s = append(s, e)
		}
	}
	clear((*h)[len(s):])
	*h = s
	for i := len(s)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}
