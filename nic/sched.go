package nic

import "github.com/aaemu/aaemu/sim"

// The NIC's scheduling: each kind of work a QP (an RC QP, an srd queue or
// an srd peer context) can have is a set of creation indices that events
// maintain, so that an edge costs the QPs that had events at it, not the
// QPs that merely wait (for the wire, for ACKs, for a timer):
//
//   - work: QPs to progress at the next loop, marked by every event that
//     may give them something to do (activate) and cleared when progressed;
//   - tagWait: QPs with DMA reads to issue that wait for a free tag,
//     progressed only at edges that start with one free;
//   - ready: QPs with a request packet for the wire (hasRequest), served
//     in creation order;
//   - fetch: QPs with work requests to fetch (needsFetch);
//   - timed: every QP's next time (deadline: its retransmission timer or
//     the end of its RNR wait), as a heap.
//
// A QP whose state changes is touched, and refresh brings its membership
// of ready, fetch and tagWait and its heap entry up to date before the
// wire and schedule look at them.
//
// The active flag marks the QPs with work or waiting for the wire: a QP
// becomes active by an event and leaves at a quiet edge (one where nothing
// asks for the next edge) when it has nothing left but to wait for a time
// or an event. Whether a QP is active decides whether an event during the
// loop has it progressed at this edge or (inactive, deferred) at the next,
// which the outputs depend on, so the flag follows exactly these rules. A
// QP found busy at a quiet edge stays busy until its state changes
// (waiting only makes it busier: an RNR wait ends, a timer falls due), so
// a quiet edge only looks at the QPs touched since the last one.
//
// The loop progresses the marked QPs and, while tags are free, those
// waiting for tags: any other active QP would find nothing to do in
// progress (no event, no tag, no timer due), so leaving it out changes
// nothing, and the NIC runs on the same edges as one that progresses every
// active QP (schedCheck verifies this edge by edge in the tests).

// addQP registers a new QP, srd queue or peer context under its index.
func (n *NIC) addQP(q *qp) {
	n.byIdx = append(n.byIdx, q)
	for _, s := range []*idxSet{&n.work, &n.tagWait, &n.ready, &n.fetch} {
		s.grow(len(n.byIdx))
	}
	if n.ref != nil {
		n.ref.grow(len(n.byIdx))
	}
}

// activate marks q for progress when something may give it work: a
// doorbell, a frame, a DMA completion, a freed window, a timer. While the
// loop runs, an inactive QP waits for its end, as it waited to join the
// list: it is progressed at the next edge.
func (n *NIC) activate(q *qp) {
	if n.ref != nil {
		n.ref.activate(n, q)
	}
	if n.looping && !q.active {
		n.deferred = append(n.deferred, q)
		return
	}
	q.active = true
	n.work.add(q.idx)
	n.touch(q)
}

// touch notes that q's state changed: refresh updates its sets.
func (n *NIC) touch(q *qp) {
	if !q.touched {
		q.touched = true
		n.touched = append(n.touched, q)
	}
}

// refreshTouched brings the sets of the QPs touched so far up to date.
func (n *NIC) refreshTouched() {
	for _, q := range n.touched {
		n.refresh(q)
	}
	clear(n.touched)
	n.touched = n.touched[:0]
}

// refresh puts q in the sets its state calls for, gives the timer heap its
// next time, and, while it is active, has the next quiet edge look at it.
func (n *NIC) refresh(q *qp) {
	q.touched = false
	n.ready.set(q.idx, q.hasRequest())
	f := q.needsFetch()
	n.fetch.set(q.idx, f)
	n.tagWait.set(q.idx, f || q.blocked())
	if d := q.deadline(); d != q.timer {
		q.timer = d
		if d != 0 {
			n.timed.push(d, q)
			if len(n.timed) > 4*len(n.byIdx)+64 {
				n.timed.compact()
			}
		}
	}
	if q.active && !q.inCheck {
		q.inCheck = true
		n.check = append(n.check, q)
	}
}

// dueTimers marks the QPs whose time has come: a retransmission timer to
// run, an RNR wait that ended (a request to send again).
func (n *NIC) dueTimers(now sim.Tick) {
	for {
		n.timed.dropStale()
		t, ok := n.timed.peek()
		if !ok || t > now {
			return
		}
		q := n.timed.pop()
		q.timer = 0 // refresh gives it its next entry
		n.wake(q)
	}
}

// wake is activate for a timer: the reference list takes its own timers.
func (n *NIC) wake(q *qp) {
	q.active = true
	n.work.add(q.idx)
	n.touch(q)
}

// progressAll progresses the marked QPs in creation order, and those
// waiting for tags while tags are free (tags only free at completions,
// which come before the loop, so once they run out no later QP can use
// one).
func (n *NIC) progressAll(now sim.Tick) {
	n.looping = true
	if n.ref != nil {
		n.ref.loopStart()
	}
	for i := 0; ; i++ {
		j := n.work.next(i)
		if n.req.Outstanding() < n.req.Tags() {
			if k := n.tagWait.next(i); k >= 0 && (j < 0 || k < j) {
				j = k
			}
		}
		if j < 0 {
			break
		}
		i = j
		q := n.byIdx[i]
		if n.ref != nil {
			n.ref.progressing(n, q, now)
		}
		n.work.del(i)
		q.progress(now)
		n.touch(q)
	}
	if n.ref != nil {
		n.ref.loopEnd(n, now)
	}
	n.looping = false
	if len(n.deferred) > 0 {
		for _, q := range n.deferred {
			n.activate(q)
		}
		clear(n.deferred)
		n.deferred = n.deferred[:0]
	}
}

// nextRequester is the QP whose request goes on the wire: the first, in
// creation order, with one to send.
func (n *NIC) nextRequester() *qp {
	i := n.ready.min()
	if n.ref != nil {
		n.ref.checkRequester(n, i)
	}
	if i < 0 {
		return nil
	}
	return n.byIdx[i]
}

// schedule says whether the NIC needs its next edge, and otherwise when to
// wake it.
func (n *NIC) schedule(now sim.Tick) bool {
	if n.tlpQ.Sendable(n.DMAOut) || len(n.respQPs) > 0 && n.NetOut.Ready() {
		return true
	}
	if n.soft != nil && n.soft.irqAt != 0 && n.soft.irqOn {
		if n.soft.irqAt <= now {
			return true
		}
		n.u.WakeAt(n.soft.irqAt)
	}
	if n.NetIn.Valid() && n.rxBacklog() < n.spec.QueueTLPs && n.softRoom() {
		if n.busy <= now {
			return true
		}
		n.u.WakeAt(n.busy)
	}
	// A request to send needs the wire, a fetch a tag. NetOut.Ready counts
	// a stall when the wire is full: it is asked once, as the scan in
	// creation order asked it, when a QP with a request comes before every
	// QP that could fetch (that one alone would ask for the next edge).
	tagFree := n.req.Outstanding() < n.req.Tags()
	if tagFree && n.desc != nil && len(n.desc.waiting) > 0 {
		return true
	}
	r, f := n.ready.min(), -1
	if tagFree {
		f = n.fetch.min()
	}
	ask := r >= 0 && (f < 0 || r <= f)
	if n.ref != nil {
		n.ref.checkSchedule(n, now, ask, f >= 0)
	}
	if ask && n.NetOut.Ready() || f >= 0 {
		return true // the quiet edge's pruning waits for a quieter edge
	}
	// A quiet edge: the active QPs touched since the last one leave the
	// active set if they only wait for a time or an event.
	for _, q := range n.check {
		q.inCheck = false
		if !q.active || q.needsFetch() || q.hasRequest() || !q.settled() || q.blocked() {
			continue
		}
		if d := q.deadline(); d == 0 || d > now {
			q.active = false
			n.work.del(q.idx)
		}
	}
	clear(n.check)
	n.check = n.check[:0]
	next := sim.Never
	n.timed.dropStale()
	if t, ok := n.timed.peek(); ok {
		next = t
	}
	if n.ref != nil {
		n.ref.checkQuiet(n, now, next)
	}
	next = min(next, n.nextCQTimer())
	if n.hostQ.Len() > 0 {
		next = min(next, n.accessEnd) // (hostAccesses started the head's access)
	}
	if next != sim.Never {
		n.u.WakeAt(max(next, now+1))
	}
	return false
}
