package pcie

import (
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Dir is one direction of a PCIe link as a cycle-level block: the
// transmitter's per-class queues, ordering and flow-control gate, the
// serializer, the wire latency, and the receiver's buffer, which is the Out
// channel. A TLP's credits return to the transmitter when the block behind
// the receiver takes it from Out: a receiver that stops taking TLPs (the
// IOMMU with a full access log) stops the flow of credits and so stalls the
// sender, and nothing is lost.
//
// In and Out have a lane per class (NewClassChan), as a port's transmit
// and receive buffers keep posted requests, non-posted requests and
// completions apart: a receiver that leaves a non-posted request in its
// buffer withholds non-posted credits only, and the posted requests behind
// it still come in (take them with NextLane). Taken with Valid, Peek and
// Recv, Out is one FIFO in arrival order.
type Dir struct {
	u    *sim.Unit
	spec LinkSpec
	ser  serializer

	In  *sim.Chan[Packet] // from the transmitting port, a lane per class
	Out *sim.Chan[Packet] // the receive buffer, a lane per class, drained by the receiving port

	q        [3]queue    // transmit queues: posted, non-posted, completion
	seq      uint64      // arrival order across classes
	avail    [6]int      // credits available: PH PD NPH NPD CplH CplD (−1: infinite)
	creditAt [3]sim.Tick // per class, when the latest credit return took effect
	wireFree sim.Tick    // when the wire finishes the TLP being sent

	flight     []inFlight // on the wire, in delivery order, from flightHead
	flightHead int
	rxFull     bool                    // an arrived TLP waits for room in its lane of the receive buffer
	returns    sim.Queue[creditReturn] // in time order: one latency for all

	// DLLPs this direction owes the reverse one (Ack, UpdateFC), counted in
	// bytes by a register so the reverse direction reads them race-free.
	dllpOut  *sim.Reg[uint64]
	reverse  *Dir
	dllpSeen uint64 // of reverse.dllpOut, already put on this wire
	sinceAck int

	last lastTLP // the TLP most recently put on the wire, for tracing

	tlps, payload, wireBytes, dllps *sim.Counter
	creditStall                     [3]*sim.Counter
}

type queued struct {
	p      Packet
	seq    uint64
	at     sim.Tick // when it entered the queue
	waited bool     // it found too few credits: it starts no earlier than their return
}

// queue is a bounded FIFO of one class.
type queue struct {
	buf        []queued
	head, n    int
	class      tlp.Class
	stallSince sim.Tick
}

func (q *queue) push(x queued) {
	i := (q.head + q.n) % len(q.buf)
	q.buf[i] = x
	q.n++
}

func (q *queue) front() *queued { return &q.buf[q.head] }

func (q *queue) pop() queued {
	x := q.buf[q.head]
	q.buf[q.head] = queued{}
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return x
}

type inFlight struct {
	p    Packet
	at   sim.Tick
	done bool // delivered past a TLP whose lane was full
}

type creditReturn struct {
	at       sim.Tick
	class    tlp.Class
	hdr, dat int
}

type lastTLP struct {
	kind   tlp.Kind
	tag    uint16
	addr   uint64
	length uint16
	valid  bool
}

// NewDir places one link direction called name in clock clk, between the
// transmitting unit tx and the receiving unit rx.
func NewDir(clk *sim.Clock, name string, spec LinkSpec, tx, rx *sim.Unit) (*Dir, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.UpdateFCLatency == 0 {
		spec.UpdateFCLatency = max(spec.LatencyPS, 1)
	}
	d := &Dir{spec: spec, ser: newSerializer(spec)}
	d.u = clk.Add(name, d)
	e := d.u.Engine()
	for i := range d.q {
		d.q[i] = queue{buf: make([]queued, spec.QueueTLPs), class: tlp.Class(i)}
	}
	c := spec.Credits
	for i, v := range []int{c.PH, c.PD, c.NPH, c.NPD, c.CplH, c.CplD} {
		d.avail[i] = v
		if v == 0 {
			d.avail[i] = -1
		}
	}
	// The receive buffer has a lane per class holding every TLP its header
	// credits allow, as a receiver's P, NP and Cpl buffers do: the port
	// behind it takes a posted request while a non-posted one it cannot
	// serve yet waits (an active get on a full access log), and the
	// non-posted request's withheld credits stall only non-posted traffic.
	var rxDepth [3]int
	for i, h := range []int{c.PH, c.NPH, c.CplH} {
		if h == 0 {
			h = 64 // infinite credits: the receiver sinks what comes
		}
		rxDepth[i] = h
	}
	// The transmitting port hands TLPs over in a lane per class too, so a
	// class whose transmit queue is full (no credits) does not hold up the
	// others at the input.
	d.In = NewClassChan(tx, d.u, name+".tx", [3]int{2, 2, 2})
	d.Out = NewClassChan(d.u, rx, name+".rx", rxDepth)
	d.Out.OnRecv(d.release)
	d.dllpOut = sim.NewReg(d.u, "_dllp_bytes", uint64(0))
	st := e.Stats()
	d.tlps = st.Counter(name+".tlps", "TLPs", "TLPs sent over this link direction")
	d.payload = st.Counter(name+".payload_bytes", "bytes", "payload bytes carried by TLPs")
	d.wireBytes = st.Counter(name+".wire_bytes", "bytes", "bytes on the wire: TLPs with framing, and DLLPs")
	d.dllps = st.Counter(name+".dllps", "DLLPs", "Ack and UpdateFC DLLPs sent for the reverse direction's traffic")
	for i, n := range []string{"posted", "nonposted", "completion"} {
		d.creditStall[i] = st.Counter(name+".credit_stall_"+n, "cycles",
			"edges at which a "+n+" TLP waited for flow-control credits")
	}
	d.u.Probe("kind", 5, func() (uint64, bool) { return uint64(d.last.kind), d.last.valid })
	d.u.Probe("tag", 10, func() (uint64, bool) { return uint64(d.last.tag), d.last.valid })
	d.u.Probe("addr", 64, func() (uint64, bool) { return d.last.addr, d.last.valid && d.last.kind.IsMemory() })
	d.u.Probe("length", 11, func() (uint64, bool) { return uint64(d.last.length), d.last.valid })
	for i, n := range []string{"credits_ph", "credits_pd", "credits_nph", "credits_npd", "credits_cplh", "credits_cpld"} {
		i := i
		d.u.Probe(n, 16, func() (uint64, bool) { return uint64(d.avail[i]), d.avail[i] >= 0 })
	}
	d.u.Probe("wire_busy", 1, func() (uint64, bool) {
		if d.wireFree > e.Now() {
			return 1, true
		}
		return 0, true
	})
	return d, nil
}

// Pair makes d and r the two directions of one link, so that each carries
// the other's DLLPs.
func Pair(d, r *Dir) { d.reverse, r.reverse = r, d }

// Spec is the link's configuration.
func (d *Dir) Spec() LinkSpec { return d.spec }

// Unit is the direction's kernel unit.
func (d *Dir) Unit() *sim.Unit { return d.u }

func credits(t *tlp.TLP) (class tlp.Class, hdr, dat int) {
	return t.Kind.Class(), 1, dataCredits(t.PayloadBytes())
}

// release runs when the receiving port takes a TLP from the buffer: the
// credits travel back to the transmitter (UpdateFC).
func (d *Dir) release(p *Packet) {
	class, h, dat := credits(&p.TLP)
	at := d.u.Engine().Now() + d.spec.UpdateFCLatency
	d.returns.Push(creditReturn{at: at, class: class, hdr: h, dat: dat})
	d.u.WakeAt(at)
}

// mayPass applies the ordering rules to a TLP that would pass an earlier
// posted request: posted requests pass nothing posted unless relaxed ordering
// or ID-based ordering with another requester allow it (A2, B2, C2, D2).
func mayPassPosted(t *tlp.TLP, earlier *tlp.TLP) bool {
	switch {
	case t.Kind.IsCompletion():
		// D2b: relaxed ordering, or IDO with the completer ≠ the posted
		// request's requester. (I/O and configuration write completions
		// may pass as well.)
		return t.RO || (t.IDO && t.CompleterID != earlier.RequesterID)
	case t.Kind.Class() == tlp.NonPosted && t.Kind.HasData():
		return t.RO || (t.IDO && t.RequesterID != earlier.RequesterID) // C2b
	case t.Kind.Class() == tlp.NonPosted:
		return t.IDO && t.RequesterID != earlier.RequesterID // B2b
	default:
		return t.RO || (t.IDO && t.RequesterID != earlier.RequesterID) // A2b
	}
}

// eligible reports whether the head of queue c may go now by the ordering
// rules: it must not pass an older posted request unless allowed. Posted
// requests and completions may always pass non-posted ones (A3, A4, D3, D4),
// and completions of different transactions may pass each other.
func (d *Dir) eligible(c int) bool {
	h := d.q[c].front()
	p := &d.q[tlp.Posted]
	for i := 0; i < p.n; i++ {
		older := &p.buf[(p.head+i)%len(p.buf)]
		if older.seq > h.seq {
			break
		}
		if c == int(tlp.Posted) {
			if older != h {
				return false // FIFO within the posted queue
			}
			break
		}
		if !mayPassPosted(&h.p.TLP, &older.p.TLP) {
			return false
		}
	}
	return true
}

func (d *Dir) haveCredits(c int, t *tlp.TLP) bool {
	_, h, dat := credits(t)
	hi, di := 2*c, 2*c+1
	return (d.avail[hi] < 0 || d.avail[hi] >= h) && (d.avail[di] < 0 || d.avail[di] >= dat)
}

func (d *Dir) take(c int, t *tlp.TLP) {
	_, h, dat := credits(t)
	if d.avail[2*c] >= 0 {
		d.avail[2*c] -= h
	}
	if d.avail[2*c+1] >= 0 {
		d.avail[2*c+1] -= dat
	}
}

// Tick moves the link one edge on.
func (d *Dir) Tick(now sim.Tick) bool {
	// Credits that came back.
	for d.returns.Len() > 0 && d.returns.Front().at <= now {
		r := d.returns.Pop()
		c := int(r.class)
		d.creditAt[c] = max(d.creditAt[c], r.at)
		if d.avail[2*c] >= 0 {
			d.avail[2*c] += r.hdr
		}
		if d.avail[2*c+1] >= 0 {
			d.avail[2*c+1] += r.dat
		}
		if d.reverse != nil && d.spec.DLLP {
			d.sendDLLP(1) // UpdateFC
		}
	}

	// TLPs that reached the receiver enter its buffer, in order.
	d.deliver(now)

	// Take one TLP from the transmitting port into its class queue: the
	// oldest whose queue has room, never one behind a posted request that
	// must wait.
	if c := NextLane(d.In, func(c int, _ *Packet) bool { return d.q[c].n < len(d.q[c].buf) }); c >= 0 {
		d.seq++
		d.q[c].push(queued{p: d.In.RecvLane(c), seq: d.seq, at: now})
	}

	// Put the oldest eligible TLP with credits on the wire once it is free.
	d.sendOwedDLLPs(now)
	if d.wireFree <= now {
		best := -1
		for c := 0; c < 3; c++ {
			if d.q[c].n == 0 || !d.eligible(c) {
				continue
			}
			if !d.haveCredits(c, &d.q[c].front().p.TLP) {
				d.creditStall[c].Inc()
				d.q[c].front().waited = true
				continue
			}
			if best < 0 || d.q[c].front().seq < d.q[best].front().seq {
				best = c
			}
		}
		if best >= 0 {
			x := d.q[best].pop()
			d.take(best, &x.p.TLP)
			d.transmit(x, now)
		}
	}
	return d.schedule(now)
}

// deliver moves the TLPs that reached the receiver into its buffer, in
// wire order. The credits keep every lane from overflowing; only a class
// with infinite credits can find its lane full, and then its TLP waits on
// the wire while later posted requests (and completions, past a waiting
// non-posted request) go on — but nothing passes a waiting posted request.
func (d *Dir) deliver(now sim.Tick) {
	var blocked [3]bool
	skipped := false
	d.rxFull = false
	for i := d.flightHead; i < len(d.flight) && d.flight[i].at <= now; i++ {
		f := &d.flight[i]
		if f.done {
			continue
		}
		c := f.p.TLP.Kind.Class()
		if blocked[c] {
			skipped = true
			continue
		}
		if !d.Out.ReadyLane(int(c)) {
			d.rxFull = true // the receiver's next Recv wakes the direction
			if c == tlp.Posted {
				break
			}
			blocked[c], skipped = true, true
			continue
		}
		d.Out.SendLane(int(c), f.p)
		*f = inFlight{done: true}
		if d.reverse != nil && d.spec.DLLP {
			d.sinceAck++
			if d.sinceAck >= d.spec.AckEvery {
				d.sinceAck = 0
				d.sendDLLP(1) // Ack
			}
		}
		if !skipped {
			d.flightHead = i + 1
		}
	}
	for d.flightHead < len(d.flight) && d.flight[d.flightHead].done {
		d.flightHead++
	}
	if d.flightHead == len(d.flight) {
		d.flight, d.flightHead = d.flight[:0], 0 // reuse the array
	}
}

// sendDLLP accounts n DLLPs this direction's receiver sends on the reverse
// wire.
func (d *Dir) sendDLLP(n int) {
	d.dllpOut.D(d.dllpOut.Next() + uint64(n*DLLPBytes))
	d.dllps.Add(uint64(n))
	d.reverse.u.WakeAt(d.u.Engine().Now() + 1)
}

// sendOwedDLLPs puts the DLLPs the reverse direction's receiver owes on this
// wire; they take wire time ahead of the next TLP.
func (d *Dir) sendOwedDLLPs(now sim.Tick) {
	if d.reverse == nil {
		return
	}
	if owed := d.reverse.dllpOut.Q() - d.dllpSeen; owed > 0 {
		d.dllpSeen += owed
		d.wireFree = max(d.wireFree, now) + d.ser.time(int(owed))
		d.wireBytes.Add(owed)
	}
}

func (d *Dir) transmit(x queued, now sim.Tick) {
	t := &x.p.TLP
	// Back to back: a TLP queued before the wire freed starts when it frees
	// (the block may run a little after that), but one that waited for
	// credits starts no earlier than their return.
	start := max(d.wireFree, x.at)
	if x.waited {
		start = max(start, d.creditAt[t.Kind.Class()])
	}
	wb := d.spec.WireBytes(t)
	d.wireFree = start + d.ser.time(wb)
	if d.flightHead > 0 && len(d.flight) == cap(d.flight) {
		n := copy(d.flight, d.flight[d.flightHead:])
		clear(d.flight[n:])
		d.flight, d.flightHead = d.flight[:n], 0
	}
	d.flight = append(d.flight, inFlight{p: x.p, at: d.wireFree + d.spec.LatencyPS})
	d.tlps.Inc()
	d.payload.Add(uint64(t.PayloadBytes()))
	d.wireBytes.Add(uint64(wb))
	d.last = lastTLP{kind: t.Kind, tag: t.Tag, addr: t.Addr, length: t.Length, valid: true}
}

// schedule decides when the direction next has something to do: another
// edge if a TLP waits at its input with room to queue it, else a timer at the
// next wire, arrival or credit event. A receiver that drains its buffer, or a
// new TLP at the input, wakes the block through its channels.
func (d *Dir) schedule(now sim.Tick) bool {
	if NextLane(d.In, func(c int, _ *Packet) bool { return d.q[c].n < len(d.q[c].buf) }) >= 0 {
		return true
	}
	next := sim.Never
	if d.q[0].n+d.q[1].n+d.q[2].n > 0 && d.wireFree > now {
		next = d.wireFree
	}
	// The next arrival. A TLP that arrived and waits for room in the
	// receive buffer is woken by the receiver draining it; one that arrived
	// otherwise (put on the wire after this edge's deliveries) goes at the
	// next edge.
	for i := d.flightHead; i < len(d.flight); i++ {
		if f := &d.flight[i]; !f.done {
			if f.at > now {
				next = min(next, f.at)
				break
			}
			if !d.rxFull {
				return true
			}
		}
	}
	if d.returns.Len() > 0 {
		next = min(next, d.returns.Front().at)
	}
	if next != sim.Never {
		d.u.WakeAt(next)
	}
	return false
}

// CountBulk adds to the direction's counters the TLPs a bulk transfer
// stands for (n TLPs, their payload and wire bytes), as if they had
// crossed it: a device's bulk DMA path moves the bytes with one copy and
// keeps the link's statistics what the per-TLP path gives. The DLLPs the
// link would have exchanged for them are not counted.
func (d *Dir) CountBulk(n, payload, wire uint64) {
	d.tlps.Add(n)
	d.payload.Add(payload)
	d.wireBytes.Add(wire)
}
