package nic

import (
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/sim"
)

// schedCheck has every NIC made from then on keep, beside its scheduling
// sets, the active list it used to scan, scan it as it did, and panic where
// the two disagree: a QP the loop skipped that progress would have given
// work, another requester, another answer of schedule, another wake time,
// another active set. The package's tests turn it on; it costs what the
// scan cost.
var schedCheck bool

// refSched is the NIC's scheduling as it was: the active list in creation
// order, and the timers of the QPs taken off it.
type refSched struct {
	active   []*qp
	in       []bool     // by index: on the list
	timer    []sim.Tick // by index: its timer while off the list (0: none)
	timed    []qpTimer  // unordered; stale when timer no longer matches
	deferred []*qp
	snap     []*qp // the list when the loop started
	pos      int   // how far the loop got in snap
}

func (r *refSched) grow(n int) {
	for len(r.in) < n {
		r.in = append(r.in, false)
		r.timer = append(r.timer, 0)
	}
}

func (r *refSched) insert(q *qp) {
	r.in[q.idx], r.timer[q.idx] = true, 0
	i, _ := slices.BinarySearchFunc(r.active, q.idx, func(a *qp, idx int) int { return a.idx - idx })
	r.active = slices.Insert(r.active, i, q)
}

func (r *refSched) activate(n *NIC, q *qp) {
	if r.in[q.idx] {
		if !q.active {
			panic(fmt.Sprintf("%s: srd/QP %d is on the active list but not active", n.name, q.idx))
		}
		return
	}
	if n.looping {
		r.deferred = append(r.deferred, q)
		return
	}
	r.insert(q)
}

// tickStart puts the QPs whose timer is due back on the list.
func (r *refSched) tickStart(now sim.Tick) {
	keep := r.timed[:0]
	var due []*qp
	for _, e := range r.timed {
		switch {
		case r.timer[e.q.idx] != e.at:
		case e.at <= now:
			due = append(due, e.q)
		default:
			keep = append(keep, e)
		}
	}
	clear(r.timed[len(keep):])
	r.timed = keep
	for _, q := range due {
		if !r.in[q.idx] {
			r.insert(q)
		}
	}
}

func (r *refSched) loopStart() {
	r.snap = append(r.snap[:0], r.active...)
	r.pos = 0
}

// progressing: the loop is about to progress q; the QPs of the list before
// it that the loop skipped must have had nothing to do.
func (r *refSched) progressing(n *NIC, q *qp, now sim.Tick) {
	r.skipTo(n, q.idx, now)
	if r.pos == len(r.snap) || r.snap[r.pos] != q {
		panic(fmt.Sprintf("%s at %v: progressed QP %d, which is not on the active list", n.name, now, q.idx))
	}
	r.pos++
}

func (r *refSched) skipTo(n *NIC, idx int, now sim.Tick) {
	for ; r.pos < len(r.snap) && r.snap[r.pos].idx < idx; r.pos++ {
		if s := r.snap[r.pos]; !s.progressIdle(now) {
			panic(fmt.Sprintf("%s at %v: skipped QP %d, which had work", n.name, now, s.idx))
		}
	}
}

func (r *refSched) loopEnd(n *NIC, now sim.Tick) {
	r.skipTo(n, int(^uint(0)>>1), now)
	for _, q := range r.deferred {
		if !r.in[q.idx] {
			r.insert(q)
		}
	}
	clear(r.deferred)
	r.deferred = r.deferred[:0]
}

func (r *refSched) checkRequester(n *NIC, i int) {
	want := -1
	for _, q := range r.active {
		if q.hasRequest() {
			want = q.idx
			break
		}
	}
	if i != want {
		panic(fmt.Sprintf("%s at %v: requester %d, the list's is %d", n.name, n.u.Engine().Now(), i, want))
	}
}

// checkSchedule compares whether the wire is asked and whether a fetch
// asks for the next edge with the scan's answers.
func (r *refSched) checkSchedule(n *NIC, now sim.Tick, ask, fetch bool) {
	tagFree := n.req.Outstanding() < n.req.Tags()
	wantAsk, wantFetch, hit := false, false, false
	for _, q := range r.active {
		h, f := q.hasRequest(), q.needsFetch() && tagFree
		if !hit && (h || f) {
			hit, wantAsk = true, h
		}
		wantFetch = wantFetch || f
	}
	if ask != wantAsk || fetch != wantFetch {
		panic(fmt.Sprintf("%s at %v: asks the wire %v and fetches %v, the scan %v and %v", n.name, now, ask, fetch, wantAsk, wantFetch))
	}
}

// checkQuiet prunes the list as the scan did and compares the wake time
// and the active set.
func (r *refSched) checkQuiet(n *NIC, now, next sim.Tick) {
	want := sim.Never
	for _, e := range r.timed {
		if r.timer[e.q.idx] == e.at {
			want = min(want, e.at)
		}
	}
	keep := r.active[:0]
	for _, q := range r.active {
		d := q.deadline()
		if d != 0 {
			want = min(want, d)
		}
		if !q.needsFetch() && !q.hasRequest() && q.settled() && !q.blocked() {
			if d == 0 {
				r.in[q.idx] = false
				continue
			}
			if d > now {
				r.in[q.idx], r.timer[q.idx] = false, d
				r.timed = append(r.timed, qpTimer{at: d, q: q})
				continue
			}
		}
		keep = append(keep, q)
	}
	clear(r.active[len(keep):])
	r.active = keep
	if next != want {
		panic(fmt.Sprintf("%s at %v: wakes at %v, the scan at %v", n.name, now, next, want))
	}
	for _, q := range n.byIdx {
		if q.active != r.in[q.idx] {
			panic(fmt.Sprintf("%s at %v: QP %d active %v, on the list %v", n.name, now, q.idx, q.active, r.in[q.idx]))
		}
	}
}

// progressIdle reports whether progress would do nothing now.
func (q *qp) progressIdle(now sim.Tick) bool {
	n := q.n
	tagFree := n.req.Outstanding() < n.req.Tags()
	rq := q.rqHead < q.rqTail && !q.rqFetching && q.rings.RQSize > 0
	if q.state == QPStateError && q.rings.RQSize > 0 && (len(q.rwqes) > 0 || rq) {
		return false
	}
	if tagFree && (q.needsFetch() || rq && len(q.rwqes) < 4) {
		return false
	}
	for _, w := range q.pending() {
		payload := w.w.Opcode == OpWrite || w.w.Opcode == OpSend
		if tagFree && payload && !w.issued && !w.err {
			return false
		}
	}
	for _, w := range q.pending() {
		if !w.packets {
			payload := w.w.Opcode == OpWrite || w.w.Opcode == OpSend
			if !(payload && w.got < len(w.payload) && !w.err) {
				return false
			}
			break
		}
	}
	for _, rr := range q.reads {
		if tagFree && !rr.issued {
			return false
		}
	}
	for _, a := range q.atomics {
		if tagFree && !a.issued && !a.done {
			return false
		}
	}
	return !(q.deadlineAt != 0 && now >= q.deadlineAt && q.txPos > 0)
}
