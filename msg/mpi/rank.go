package mpi

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/shm"
	"github.com/aaemu/aaemu/sim"
)

// rank is one MPI process: its matching queues, its protocol state and
// its progress engine, which runs only inside the rank's MPI calls.
type rank struct {
	w     *world
	id    int
	place Place
	node  *machine.Node
	p     *cpu.Proc
	eps   []Endpoint // by transport (nil: not used by this rank)
	deliv []func(h *Header, pl Payload)

	posted []*Request    // posted receives, in posting order
	unexp  []*unexpected // arrived unmatched, in arrival order
	outq   [][]*item     // per destination: packets to send, in order
	active []int         // destinations with packets queued
	queued []bool        // per destination: in active
	routes []int         // per destination: the transport
	xfers  []*Request    // requests moving data by Put or Get
	reqs   map[uint32]*Request
	nextID uint32
	policy PollPolicy
	pool   map[int][]Buf // free internal buffers by size class

	// What the deadlock report says.
	blocked  bool
	idle     bool // the last progress pass did nothing
	call     string
	waitOn   []*Request
	frames   []string // collective calls under way
	finished bool
	finish   sim.Tick
	world    *Comm
}

// unexpected is a message that arrived before a receive matched it: an
// eager one's data (copied into a buffer of the rank's), or an RTS.
type unexpected struct {
	h   Header
	tr  int
	buf Buf
}

// item is a packet waiting to be sent; a stream item sends a rendezvous
// message's DATA packets one after another.
type item struct {
	tr     int // the transport: the route to the destination
	h      Header
	src    uint64
	n      int
	req    *Request
	stream bool
	sent   func() // when the packet (the whole stream) has gone
}

func newRank(w *world, id int) *rank {
	r := &rank{w: w, id: id, place: w.places[id], eps: make([]Endpoint, len(w.trans)),
		outq: make([][]*item, len(w.places)), queued: make([]bool, len(w.places)), reqs: map[uint32]*Request{}, pool: map[int][]Buf{}}
	if w.c != nil {
		r.node = w.c.Nodes[r.place.Node]
	}
	for x := range w.places {
		r.routes = append(r.routes, w.route(id, x))
	}
	for t := range w.trans {
		t := t
		r.deliv = append(r.deliv, func(h *Header, pl Payload) { r.onPacket(t, h, pl) })
	}
	return r
}

// run is the rank's process: open the transports it uses, run the
// program, finalize.
func (r *rank) run(p *cpu.Proc, body func(*Comm)) {
	r.p = p
	// A rank that cannot go on — its transport failed (a connection ran
	// out of retries), or its program panicked — aborts the run, as
	// MPI_ERRORS_ARE_FATAL aborts the job: Run returns the reason.
	defer func() {
		if v := recover(); v != nil {
			if r.w.aborted == nil {
				r.w.aborted = &AbortError{Rank: r.id, At: p.Now(), Reason: fmt.Sprint(v)}
			}
		}
	}()
	r.policy = r.w.cfg.PollPolicy(r.id)
	for t, tr := range r.w.trans {
		if !r.uses(t) {
			continue
		}
		ep, err := tr.Open(Env{Rank: r.id, Place: r.place, Proc: p, Node: r.node, Moved: r.moved})
		if err != nil {
			panic(fmt.Sprintf("mpi: rank %d: opening %s: %v", r.id, tr.Name(), err))
		}
		r.eps[t] = ep
	}
	n := len(r.w.places)
	group := make([]int, n)
	for i := range group {
		group[i] = i
	}
	r.world = newComm(r, 0, group)
	body(r.world)
	r.finalize()
	r.finished = true
	r.finish = p.Now()
	r.w.finished++
}

// uses reports whether some packet to or from the rank takes transport t.
func (r *rank) uses(t int) bool {
	for x := range r.w.places {
		if r.routes[x] == t || r.w.ranks[x].routes[r.id] == t {
			return true
		}
	}
	return false
}

// finalize completes what the rank still owes (MPI_Finalize): its requests
// the program did not wait for, the packets it has queued, the network
// operations under way.
func (r *rank) finalize() {
	open := func() []*Request {
		var rs []*Request
		for _, q := range r.reqsInOrder() {
			if !q.done {
				rs = append(rs, q)
			}
		}
		return rs
	}
	r.call, r.waitOn = "Finalize", open()
	r.waitUntil(func() bool {
		if len(r.active) > 0 || len(r.xfers) > 0 {
			return false
		}
		for _, q := range r.posted {
			if !q.done {
				return false
			}
		}
		for _, ep := range r.eps {
			if ep != nil && ep.Busy() {
				return false
			}
		}
		for _, q := range r.reqs {
			if !q.done {
				return false
			}
		}
		return true
	})
}

func (r *rank) reqsInOrder() []*Request {
	var rs []*Request
	rs = append(rs, r.posted...)
	for id := uint32(1); id <= r.nextID; id++ {
		if q := r.reqs[id]; q != nil {
			rs = append(rs, q)
		}
	}
	return rs
}

func (r *rank) moved() {
	r.idle = false
	r.w.epoch++
}

func (r *rank) compute(cycles int) {
	if cycles <= 0 {
		return
	}
	// The model's cores take an interrupt between two operations: where
	// an endpoint's layer is interrupt-driven, the program's work is
	// sliced so that its handlers can run during it.
	for _, ep := range r.eps {
		if sl, ok := ep.(interface{ ComputeSlice() int }); ok && sl.ComputeSlice() > 0 {
			for c := cycles; c > 0; c -= sl.ComputeSlice() {
				r.p.Compute(min(c, sl.ComputeSlice()))
			}
			return
		}
	}
	r.p.Compute(cycles)
}

// --- the progress engine ---

// progress is one pass: poll the transports (as the policy says), send
// what is queued, move rendezvous data. It reports whether anything
// happened.
func (r *rank) progress() bool { return r.progressAfter(-1, nil, 0) }

// progressAfter is progress whose poll of transport st is sp's: the
// loop's pause, then the poll.
func (r *rank) progressAfter(st int, sp sleepPoller, pause sim.Tick) bool {
	did := false
	for t, ep := range r.eps {
		if ep == nil || !r.policy.Poll(t) {
			continue
		}
		var n int
		var worked bool
		if t == st {
			n, worked = sp.SleepPoll(pause, r.deliv[t])
		} else {
			n, worked = ep.Poll(r.deliv[t])
		}
		r.policy.Polled(t, n)
		if n > 0 || worked {
			did = true
		}
	}
	if r.pushAll() {
		did = true
	}
	if r.pushXfers() {
		did = true
	}
	return did
}

// waitUntil runs the progress engine until cond holds. While it does, the
// rank counts as blocked for the deadlock detector.
func (r *rank) waitUntil(cond func() bool) {
	if cond() {
		return
	}
	r.blocked = true
	pause := r.w.cfg.IdlePS
	if pause == 0 {
		pause = r.p.Core().Spec().PollIntervalPS
	}
	for !cond() {
		if r.progress() {
			continue
		}
		r.idle = true
		// A pass that did nothing may still have changed cond (a
		// destination's empty queue dropped, a transfer's end reaped), and
		// nothing changes it during the pause: if it holds, the loop ends
		// after the pause.
		t, sp := r.sleepPoller()
		if sp == nil || cond() {
			r.p.Sleep(pause)
			continue
		}
		// The pause and the next pass, by the endpoint, which dozes
		// through passes that would find nothing (and change nothing).
		for !r.progressAfter(t, sp, pause) {
			if t, sp = r.sleepPoller(); sp == nil || cond() {
				r.p.Sleep(pause)
				break
			}
		}
	}
	r.blocked, r.idle = false, false
	r.call, r.waitOn = "", nil
}

// sleepPoller is an endpoint whose poll can come with the wait loop's
// pause before it, so that it can doze through the passes that would find
// nothing (the torus transport's: bglml.Layer.SleepAdvance).
type sleepPoller interface {
	SleepPoll(pause sim.Tick, deliver func(h *Header, p Payload)) (delivered int, worked bool)
}

// sleepPoller is the rank's endpoint that may doze, and its transport:
// only when a pass of the rank's wait loop is that endpoint's poll and
// nothing else — its only endpoint, polled every pass, nothing queued to
// send and no rendezvous data moving (so that pushAll and pushXfers, which
// may poll again, cost nothing and change nothing).
func (r *rank) sleepPoller() (int, sleepPoller) {
	if dozeOff || len(r.active) > 0 {
		return -1, nil
	}
	if _, ok := r.policy.(PollAll); !ok {
		return -1, nil
	}
	t := -1
	for i, ep := range r.eps {
		if ep != nil {
			if t >= 0 {
				return -1, nil
			}
			t = i
		}
	}
	if t < 0 {
		return -1, nil
	}
	sp, ok := r.eps[t].(sleepPoller)
	if !ok {
		return -1, nil
	}
	// A get that is moving: pushXfers asks the endpoint whether it is
	// done, which (polling) is a pass of its own, unless the endpoint is
	// passive (its thread or its handlers end the get).
	if pe, ok := sp.(interface{ Passive() bool }); len(r.xfers) > 0 && !(ok && pe.Passive()) {
		return -1, nil
	}
	return t, sp
}

// dozeOff makes the wait loop run every pass (the equivalence test's
// reference).
var dozeOff = false

func (r *rank) describe() string {
	var b strings.Builder
	for _, f := range r.frames {
		b.WriteString(f)
		b.WriteString(": ")
	}
	b.WriteString(r.call)
	b.WriteString("(")
	for i, q := range r.waitOn {
		if i > 0 {
			b.WriteString(", ")
		}
		if r.call == "Recv" || r.call == "Send" || r.call == "Probe" {
			b.WriteString(q.args())
		} else {
			b.WriteString(q.String())
		}
	}
	b.WriteString(")")
	return b.String()
}

// enqueue queues a packet to dst behind the ones already queued (the order
// of a pair's messages is the order they are matched in).
func (r *rank) enqueue(dst int, it *item) {
	it.tr = r.routes[dst]
	if !r.queued[dst] {
		r.queued[dst] = true
		r.active = append(r.active, dst)
	}
	r.outq[dst] = append(r.outq[dst], it)
}

// pushAll sends what it can of every destination's queue.
func (r *rank) pushAll() bool {
	did := false
	for i := 0; i < len(r.active); {
		dst := r.active[i]
		if r.push(dst) {
			did = true
		}
		if len(r.outq[dst]) == 0 {
			r.queued[dst] = false
			r.active = append(r.active[:i], r.active[i+1:]...)
		} else {
			i++
		}
	}
	return did
}

// push sends the packets queued for dst, in order, while the transport
// takes them.
func (r *rank) push(dst int) bool {
	did := false
	for len(r.outq[dst]) > 0 {
		it := r.outq[dst][0]
		if it.stream {
			q := it.req
			if q.posted < q.count {
				n := min(q.count-q.posted, r.w.params[q.tr].ChunkBytes, r.eps[q.tr].MaxPayload())
				h := Header{Kind: Data, Src: r.id, RReq: q.peerReq, Len: n, Off: q.posted}
				if !r.send(it.tr, dst, &h, q.buf.Addr+uint64(q.posted), n) {
					return did
				}
				if f := r.w.cfg.Channel; f != nil && q.posted == 0 {
					f(ChannelCall{Rank: r.id, Peer: dst, Transport: r.w.trans[it.tr].Name(), Kind: Data, Bytes: q.count})
				}
				did = true
				q.posted += n
				continue
			}
		} else {
			if !r.send(it.tr, dst, &it.h, it.src, it.n) {
				return did
			}
			did = true
		}
		r.outq[dst][0] = nil
		r.outq[dst] = r.outq[dst][1:]
		if it.sent != nil {
			it.sent()
		}
	}
	return did
}

// send hands one packet to transport t.
func (r *rank) send(t, dst int, h *Header, src uint64, n int) bool {
	r.w.inflight[dst]++ // before the send yields: the packet may be seen at once
	if !r.eps[t].Send(dst, h, src, n) {
		r.w.inflight[dst]--
		return false
	}
	if f := r.w.cfg.Channel; f != nil && h.Kind != Data { // a message's data is one call (push, pushXfer)
		f(ChannelCall{Rank: r.id, Peer: dst, Transport: r.w.trans[t].Name(), Kind: h.Kind, Bytes: n})
	}
	r.moved()
	return true
}

// onPacket handles an arrived packet.
func (r *rank) onPacket(t int, h *Header, pl Payload) {
	r.moved()
	r.w.inflight[r.id]--
	switch h.Kind {
	case Eager, RTS:
		r.arrive(t, h, pl)
	case CTS:
		r.onCTS(h)
	case Data:
		r.onData(h, pl)
	case FIN:
		r.onFIN(h)
	default:
		panic(fmt.Sprintf("mpi: rank %d: packet of kind %v", r.id, h.Kind))
	}
}

// arrive matches a message's first packet against the posted receives, in
// posting order; unmatched, it joins the unexpected queue.
func (r *rank) arrive(t int, h *Header, pl Payload) {
	for i, q := range r.posted {
		if q.matches(h) {
			r.compute((i + 1) * r.w.cfg.MatchCycles)
			r.posted = append(r.posted[:i], r.posted[i+1:]...)
			r.matched(q, t, h, pl)
			return
		}
	}
	r.compute(len(r.posted) * r.w.cfg.MatchCycles)
	u := &unexpected{h: *h, tr: t}
	if h.Kind == Eager && h.Len > 0 {
		u.buf = r.tmp(h.Len)
		r.copyIn(u.buf.Addr, pl, h.Len)
	}
	r.unexp = append(r.unexp, u)
}

// setMatch records in q the message whose first packet is h.
func (r *rank) setMatch(q *Request, t int, h *Header) {
	q.tr = t
	q.status.Source = q.comm.rankOf(h.Src)
	q.status.Tag = h.Tag
	q.size = h.Size
	q.count = min(h.Size, q.buf.Len)
	q.peer = h.Src
}

// matched starts receiving the message whose first packet is h into q.
func (r *rank) matched(q *Request, t int, h *Header, pl Payload) {
	r.setMatch(q, t, h)
	if h.Kind == Eager {
		r.copyIn(q.buf.Addr, pl, q.count)
		r.complete(q)
		return
	}
	r.rendezvous(q, h)
}

// rendezvous answers the RTS h that q matched, as the sender's mode says.
func (r *rank) rendezvous(q *Request, h *Header) {
	// A rendezvous: the sender's mode.
	q.peerReq = h.SReq
	q.mode = h.Mode
	r.register(q)
	switch h.Mode {
	case RendezvousPut:
		r.enqueue(h.Src, &item{h: Header{Kind: CTS, Src: r.id, SReq: h.SReq, RReq: q.id, Size: q.count, Addr: q.buf.Addr}, req: q})
	case RendezvousCopy:
		it := &item{h: Header{Kind: CTS, Src: r.id, SReq: h.SReq, RReq: q.id, Size: q.count}, req: q}
		if q.count == 0 {
			it.sent = func() { r.complete(q) }
		}
		r.enqueue(h.Src, it)
	case RendezvousGet:
		q.remote = h.Addr
		q.get = true
		r.startXfer(q)
	default:
		panic(fmt.Sprintf("mpi: rank %d: RTS with mode %v", r.id, h.Mode))
	}
}

// matchUnexpected looks for q's message among the unexpected ones, in
// arrival order.
func (r *rank) matchUnexpected(q *Request) bool {
	for i, u := range r.unexp {
		if q.matches(&u.h) {
			r.compute((i + 1) * r.w.cfg.MatchCycles)
			r.unexp = append(r.unexp[:i], r.unexp[i+1:]...)
			r.setMatch(q, u.tr, &u.h)
			if u.h.Kind == Eager {
				if u.h.Len > 0 {
					shm.Copy(r.p, q.buf.Addr, u.buf.Addr, q.count)
					r.release(u.buf)
				}
				r.complete(q)
			} else {
				r.rendezvous(q, &u.h)
			}
			return true
		}
	}
	r.compute(len(r.unexp) * r.w.cfg.MatchCycles)
	return false
}

// onCTS: the receiver matched a rendezvous message of ours.
func (r *rank) onCTS(h *Header) {
	q := r.reqs[h.SReq]
	if q == nil || !q.send {
		panic(fmt.Sprintf("mpi: rank %d: CTS for request %d", r.id, h.SReq))
	}
	q.count, q.peerReq = h.Size, h.RReq
	switch q.mode {
	case RendezvousPut:
		q.remote = h.Addr
		r.startXfer(q)
	case RendezvousCopy:
		if q.count == 0 {
			r.complete(q)
			return
		}
		r.enqueue(q.peer, &item{req: q, stream: true, sent: func() { r.complete(q) }})
	}
}

// onData: a piece of a rendezvous message in copy mode.
func (r *rank) onData(h *Header, pl Payload) {
	q := r.reqs[h.RReq]
	if q == nil || q.send {
		panic(fmt.Sprintf("mpi: rank %d: DATA for request %d", r.id, h.RReq))
	}
	r.copyIn(q.buf.Addr+uint64(h.Off), pl, h.Len)
	q.got += h.Len
	if q.got >= q.count {
		r.complete(q)
	}
}

// onFIN ends a put (we received) or a get (we sent).
func (r *rank) onFIN(h *Header) {
	id := h.SReq
	if h.RReq != 0 {
		id = h.RReq
	}
	q := r.reqs[id]
	if q == nil {
		panic(fmt.Sprintf("mpi: rank %d: FIN for request %d", r.id, id))
	}
	r.complete(q)
}

// startXfer begins moving a rendezvous message with Put (we send) or Get
// (we receive).
func (r *rank) startXfer(q *Request) {
	q.posted = 0
	r.xfers = append(r.xfers, q) // the progress pass posts its chunks
}

func (r *rank) pushXfers() bool {
	did := false
	for i := 0; i < len(r.xfers); {
		q := r.xfers[i]
		if r.pushXfer(q) {
			did = true
		}
		if q.xferDone {
			r.xfers = append(r.xfers[:i], r.xfers[i+1:]...)
		} else {
			i++
		}
	}
	return did
}

// pushXfer reaps the chunks that completed and posts more, up to the
// pipeline's depth; at the end a put sends FIN to the receiver (after its
// data on the same channel), a get sends FIN to the sender and completes.
func (r *rank) pushXfer(q *Request) bool {
	ep := r.eps[q.tr]
	pr := r.w.params[q.tr]
	did := false
	for len(q.ops) > 0 {
		done, err := ep.Done(q.ops[0])
		if !done {
			break
		}
		did = true
		r.moved()
		if err != nil && q.err == nil {
			q.err = fmt.Errorf("mpi: rank %d: rendezvous with rank %d: %w", r.id, q.peer, err)
		}
		q.ops = q.ops[1:]
	}
	for len(q.ops) < pr.Pipeline && q.posted < q.count {
		n := min(q.count-q.posted, pr.ChunkBytes)
		off := uint64(q.posted)
		var op int
		var ok bool
		if q.get {
			op, ok = ep.Get(q.peer, q.buf.Addr+off, q.remote+off, n)
		} else {
			op, ok = ep.Put(q.peer, q.buf.Addr+off, q.remote+off, n)
		}
		if !ok {
			break
		}
		if f := r.w.cfg.Channel; f != nil && q.posted == 0 {
			f(ChannelCall{Rank: r.id, Peer: q.peer, Transport: r.w.trans[q.tr].Name(), Kind: Data, Bytes: q.count})
		}
		did = true
		r.moved()
		q.posted += n
		q.ops = append(q.ops, op)
	}
	if q.posted < q.count {
		return did
	}
	if !q.get && !q.finQueued {
		// Every chunk is posted: FIN follows them on the same channel.
		q.finQueued = true
		r.enqueue(q.peer, &item{h: Header{Kind: FIN, Src: r.id, RReq: q.peerReq}, req: q, sent: func() {
			q.finSent = true
			if len(q.ops) == 0 && q.xferDone {
				r.complete(q)
			}
		}})
	}
	if len(q.ops) > 0 {
		return did
	}
	q.xferDone = true
	if q.get {
		r.enqueue(q.peer, &item{h: Header{Kind: FIN, Src: r.id, SReq: q.peerReq}, req: q})
		r.complete(q)
	} else if q.finSent {
		r.complete(q)
	}
	return did
}

// complete finishes a request.
func (r *rank) complete(q *Request) {
	if q.done {
		return
	}
	r.moved()
	q.done = true
	if !q.send {
		q.status.Count = q.count
		if q.size > q.buf.Len && q.err == nil {
			q.err = fmt.Errorf("%w: a %d-byte message from rank %d (tag %d) into a %d-byte buffer",
				ErrTruncate, q.size, q.status.Source, q.status.Tag, q.buf.Len)
		}
	}
	q.status.Err = q.err
	if q.id != 0 {
		delete(r.reqs, q.id)
	}
}

func (r *rank) register(q *Request) {
	if q.id == 0 {
		r.nextID++
		q.id = r.nextID
		r.reqs[q.id] = q
	}
}

// --- memory ---

// copyIn copies n bytes of a packet's payload to dst.
func (r *rank) copyIn(dst uint64, pl Payload, n int) {
	if n <= 0 {
		return
	}
	if pl.Inline != nil {
		r.p.Write(dst, pl.Inline[:n])
		return
	}
	shm.Copy(r.p, dst, pl.Addr, n)
}

// sizeClass is the pool class of an n-byte buffer.
func sizeClass(n int) int { return 1 << bits.Len(uint(max(n, 64)-1)) }

// tmp returns an internal buffer of n bytes (registered for the NIC).
func (r *rank) tmp(n int) Buf {
	c := sizeClass(n)
	if l := r.pool[c]; len(l) > 0 {
		b := l[len(l)-1]
		r.pool[c] = l[:len(l)-1]
		return Buf{Addr: b.Addr, Len: n}
	}
	b := r.alloc(c)
	return Buf{Addr: b.Addr, Len: n}
}

func (r *rank) release(b Buf) {
	c := sizeClass(b.Len)
	r.pool[c] = append(r.pool[c], b)
}

// alloc allocates and registers n bytes of the rank's node memory.
func (r *rank) alloc(n int) Buf {
	if n <= 0 {
		return Buf{}
	}
	a, err := r.w.h.Alloc(r.place.Node, n)
	if err != nil {
		panic(fmt.Sprintf("mpi: rank %d: registering %d bytes: %v", r.id, n, err))
	}
	return Buf{Addr: a, Len: n}
}
