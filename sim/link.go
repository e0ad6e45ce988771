package sim

import (
	"encoding/binary"
	"fmt"
)

// NewLink creates a channel in link mode between prod and cons, which may
// belong to two domains of one world: the only way for transactions to
// cross domains. It returns a *Chan[T], so a block holding a channel works
// the same on either.
//
// Semantics, the same whether the two units share a domain or not:
//
//   - an item sent at the producer's time t is visible to the consumer at
//     its first edge at or after t + latency;
//   - depth bounds the items in flight and in the consumer's FIFO together,
//     as the producer sees them: a Recv at the consumer's time t frees space
//     the producer sees from t + latency on (credits travel back with the
//     same latency, like flow-control credits on a real link). Sustaining
//     one item per producer cycle P therefore takes a depth of about
//     2·latency/P + 1;
//   - latency is in picoseconds, at least 1. The shortest latency among the
//     links between different domains is the world's lookahead: the length
//     of its windows.
//
// The consumer calls Valid, Peek, Recv and Len (the items it sees now); the
// producer calls Ready and Send. StatsOnUse is the only option a link
// takes. OnRecv is refused on a link between two domains.
//
// Traced signals: on the producer's side ready (the producer may send) and
// count (items sent and not yet seen received, the producer's view); on the
// consumer's side valid (the consumer sees a transaction at the head, from
// the edge at which it arrives until it is taken), id (its ID, x when not
// valid) and fire (a pulse of one consumer cycle at each Recv).
func NewLink[T any](prod, cons *Unit, name string, depth int, latency Tick, opts ...ChanOption) *Chan[T] {
	if depth < 1 {
		panic(fmt.Sprintf("sim: link %s: depth %d must be at least 1", name, depth))
	}
	if latency < 1 {
		panic(fmt.Sprintf("sim: link %s: latency must be at least 1ps", name))
	}
	pe, ce := prod.eng, cons.eng
	w := pe.w
	if ce.w != w {
		panic(fmt.Sprintf("sim: link %s joins units of two worlds", name))
	}
	if len(w.links) >= maxLinks {
		panic(fmt.Sprintf("sim: link %s: a world has at most %d links", name, maxLinks))
	}
	pe.claim(name)
	cfg := chanCfg{cycles: 1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.cycles != 1 || cfg.latPS != 0 {
		panic(fmt.Sprintf("sim: link %s: its latency is NewLink's argument, not an option", name))
	}
	c := &Chan[T]{
		eng: ce, name: name, depth: depth,
		buf: make([]T, depth), vis: make([]Tick, depth),
		prod: prod, cons: cons, lastPop: Never, lat: latency, special: true,
	}
	l := &link[T]{c: c, idx: len(w.links), lat: latency, cross: pe != ce, pe: pe}
	c.lk = l
	c.transfers = &Counter{statMeta: statMeta{name + ".transfers", "transactions", "transfers through the link"}}
	c.stalls = &Counter{statMeta: statMeta{name + ".full_stalls", "events", "times the producer found the link full"}}
	if cfg.statsOnUse {
		c.undeclared = true
		pe.stats.pend(c.transfers, c.stalls)
	} else {
		c.declareStats()
	}
	c.sigReady = pe.declare(name+".ready", 1, func() (uint64, bool) {
		return b2u(l.occupancy(pe.now) < uint64(depth)), true
	})
	c.sigCount = pe.declare(name+".count", widthFor(depth), func() (uint64, bool) { return l.occupancy(pe.now), true })
	c.sigValid = ce.declare(name+".valid", 1, func() (uint64, bool) { return b2u(c.Valid()), true })
	c.sigFire = ce.declare(name+".fire", 1, func() (uint64, bool) { return 0, true })
	c.sigID = ce.declare(name+".id", 64, l.headID)
	l.traceConsFn, l.traceProdFn = l.traceCons, l.traceProd
	w.links = append(w.links, l)
	return c
}

// OnArrive registers f to run in the consumer's domain at each edge at
// which an item of the link arrives (becomes visible), before the consumer
// is evaluated: how a consumer with many inputs (a switch) learns which one
// has work without looking at them all. Only a link has it.
func (c *Chan[T]) OnArrive(f func()) {
	if c.lk == nil {
		panic(fmt.Sprintf("sim: %s: OnArrive is for links (NewLink)", c.name))
	}
	c.lk.onArrive = f
}

// IsLink reports whether the channel is in link mode (NewLink).
func (c *Chan[T]) IsLink() bool { return c.lk != nil }

// Latency is the latency of a link (NewLink); of a channel, the delay from
// a Send to the earliest time its item may be visible.
func (c *Chan[T]) Latency() Tick { return c.lat }

// linkPort is what the world knows of a link of any item type.
type linkPort interface {
	index() int
	linkName() string
	latency() Tick
	crosses() bool
	// deliver hands the items and credits of the window to the other
	// side and returns the earliest time of an event it scheduled.
	deliver() Tick

	// Over ranks (SetComm): the domains of the two sides; the item codec;
	// the window's items (credits) moved into a message for the other
	// rank, and loaded from one there, ready for deliver.
	prodDomain() int
	consDomain() int
	useCodec() error
	appendItems(b []byte) ([]byte, Tick)   // and when the first is visible
	appendCredits(b []byte) ([]byte, Tick) // and when the first reaches the producer
	loadItems(b []byte) ([]byte, error)
	loadCredits(b []byte) ([]byte, error)
}

// A link's events (waking a unit, tracing a change) carry timer keys above
// every ordinary timer's, made of the link's index, the item's or credit's
// number on the link and the kind of event: a total order that does not
// depend on when the event was scheduled.
const (
	linkSeqBase = 1 << 63
	linkNumBits = 39
	maxLinks    = 1 << (63 - linkNumBits - 2)

	evItem        = 0 // wake the consumer: an item arrives
	evItemTrace   = 1 // trace the consumer's side at the arrival
	evCredit      = 2 // wake the producer: a credit arrives
	evCreditTrace = 3 // trace the producer's side at the credit
)

// link is the state of a channel in link mode. The producer's side and the
// consumer's side may live in two domains that run at once on two
// goroutines: each side touches only its own fields during a window, and
// the barrier moves the window's items and credits across.
type link[T any] struct {
	c     *Chan[T] // buf, vis, head and n are the consumer's FIFO
	idx   int      // creation order among the world's links
	lat   Tick
	cross bool    // the two units are in different domains
	pe    *Engine // the producer's domain (c.eng is the consumer's)

	// The producer's side.
	sent     uint64      // items sent
	absorbed uint64      // credits the producer has seen
	pend     Queue[Tick] // times at which the delivered credits become visible
	credits  uint64      // credits delivered
	waiting  bool        // found full with no credit on its way
	wokeFor  uint64      // the credit a wake of the producer is scheduled for
	out      []linkItem[T]
	outMark  bool // listed in the producer's domain for the barrier

	// The consumer's side.
	delivered uint64 // items delivered to the consumer's FIFO
	crOut     []Tick // times of the window's Recvs
	crMark    bool   // listed in the consumer's domain for the barrier

	traceConsFn, traceProdFn func()
	onArrive                 func() // runs in the consumer's domain as an item arrives

	codec *Codec[T] // over ranks, when the sides run on two
}

type linkItem[T any] struct {
	v   T
	vis Tick
}

func (l *link[T]) index() int       { return l.idx }
func (l *link[T]) linkName() string { return l.c.name }
func (l *link[T]) latency() Tick    { return l.lat }
func (l *link[T]) crosses() bool    { return l.cross }
func (l *link[T]) prodDomain() int  { return l.pe.index }
func (l *link[T]) consDomain() int  { return l.c.eng.index }

func (l *link[T]) useCodec() error {
	c, ok := codecFor[T]()
	if !ok {
		var v T
		return fmt.Errorf("sim: link %s joins two ranks but its items (%T) have no codec (RegisterCodec)", l.c.name, v)
	}
	l.codec = &c
	return nil
}

func (l *link[T]) appendItems(b []byte) ([]byte, Tick) {
	first := Never
	if !l.outMark {
		return b, first
	}
	l.outMark = false
	b = binary.AppendUvarint(b, msgItems)
	b = binary.AppendUvarint(b, uint64(l.idx))
	b = binary.AppendUvarint(b, uint64(len(l.out)))
	for i := range l.out {
		b = binary.AppendUvarint(b, uint64(l.out[i].vis))
		b = l.codec.Append(b, &l.out[i].v)
		first = min(first, l.out[i].vis)
		l.out[i] = linkItem[T]{}
	}
	l.out = l.out[:0]
	return b, first
}

func (l *link[T]) appendCredits(b []byte) ([]byte, Tick) {
	first := Never
	if !l.crMark {
		return b, first
	}
	l.crMark = false
	b = binary.AppendUvarint(b, msgCredits)
	b = binary.AppendUvarint(b, uint64(l.idx))
	b = binary.AppendUvarint(b, uint64(len(l.crOut)))
	for _, r := range l.crOut {
		b = binary.AppendUvarint(b, uint64(r))
		first = min(first, r+l.lat)
	}
	l.crOut = l.crOut[:0]
	return b, first
}

func (l *link[T]) loadItems(b []byte) ([]byte, error) {
	if l.codec == nil {
		return nil, fmt.Errorf("items for a link that does not join two ranks")
	}
	d := decoder{b: b}
	n := d.uvarint()
	for k := uint64(0); k < n && d.err == nil; k++ {
		vis := Tick(d.uvarint())
		if d.err != nil {
			break
		}
		v, rest, err := l.codec.Decode(d.b)
		if err != nil {
			return nil, err
		}
		d.b = rest
		l.out = append(l.out, linkItem[T]{v, vis})
	}
	l.outMark = len(l.out) > 0
	return d.b, d.err
}

func (l *link[T]) loadCredits(b []byte) ([]byte, error) {
	d := decoder{b: b}
	n := d.uvarint()
	for k := uint64(0); k < n && d.err == nil; k++ {
		l.crOut = append(l.crOut, Tick(d.uvarint()))
	}
	l.crMark = len(l.crOut) > 0
	return d.b, d.err
}

func (l *link[T]) key(n, kind uint64) uint64 {
	return linkSeqBase | uint64(l.idx)<<(linkNumBits+2) | (n&(1<<linkNumBits-1))<<2 | kind
}

// absorb makes the credits visible at now count for the producer.
func (l *link[T]) absorb(now Tick) {
	for l.pend.Len() > 0 && *l.pend.Front() <= now {
		l.pend.Pop()
		l.absorbed++
	}
}

// occupancy is the producer's view at now, without absorbing.
func (l *link[T]) occupancy(now Tick) uint64 {
	n := l.sent - l.absorbed
	for i := 0; i < l.pend.Len() && *l.pend.At(i) <= now; i++ {
		n--
	}
	return n
}

func (l *link[T]) ready() bool {
	c := l.c
	l.absorb(l.pe.now)
	if l.sent-l.absorbed < uint64(c.depth) {
		return true
	}
	if l.pend.Len() > 0 {
		// A credit is on its way: wake the producer when it arrives. The
		// same wake, with the same key, as the barrier schedules when it
		// delivers a credit to a waiting producer.
		if k := l.absorbed + 1; l.wokeFor != k {
			l.wokeFor = k
			p := c.prod
			l.pe.pushLink(p.clk.EdgeAtOrAfter(*l.pend.Front()), l.key(k, evCredit), p, nil)
		}
	} else {
		l.waiting = true
	}
	c.stalls.Inc()
	return false
}

func (l *link[T]) send(v T) {
	c, pe := l.c, l.pe
	now := pe.now
	l.absorb(now)
	if l.sent-l.absorbed >= uint64(c.depth) {
		panic(fmt.Sprintf("sim: %s: Send on a full link at %v (check Ready first)", c.name, now))
	}
	if c.undeclared {
		c.declareStats()
	}
	vis := now + l.lat
	l.sent++
	if l.cross {
		if vis < pe.winEnd {
			panic(fmt.Sprintf("sim: link %s: an item sent at %v would be visible at %v, inside the window that ends at %v: the window exceeds the link's latency %v",
				c.name, now, vis, pe.winEnd, l.lat))
		}
		l.out = append(l.out, linkItem[T]{v, vis})
		if !l.outMark {
			l.outMark = true
			pe.linkDirty = append(pe.linkDirty, l)
		}
	} else {
		l.deliverItem(v, vis)
	}
	if traceHooks && pe.tr != nil && l.prodTraced() {
		l.traceProd()
	}
}

func (l *link[T]) recv() T {
	c := l.c
	ce := c.eng
	now := ce.now
	if !c.Valid() {
		panic(fmt.Sprintf("sim: %s: Recv with nothing valid at %v", c.name, now))
	}
	if c.onRecv != nil {
		c.onRecv(&c.buf[c.head])
	}
	v := c.buf[c.head]
	var zero T
	c.buf[c.head] = zero
	c.head++
	if c.head == c.depth {
		c.head = 0
	}
	c.n--
	c.transfers.Inc()
	if l.cross {
		if now+l.lat < ce.winEnd {
			panic(fmt.Sprintf("sim: link %s: a credit returned at %v would be visible at %v, inside the window that ends at %v: the window exceeds the link's latency %v",
				c.name, now, now+l.lat, ce.winEnd, l.lat))
		}
		l.crOut = append(l.crOut, now)
		if !l.crMark {
			l.crMark = true
			ce.linkDirty = append(ce.linkDirty, l)
		}
	} else {
		l.deliverCredit(now)
	}
	if traceHooks && ce.tr != nil && l.consTraced() {
		ce.startPulse(c.sigFire, c.cons.clk.period)
		l.traceCons()
	}
	return v
}

// deliverItem puts an item in the consumer's FIFO and schedules the
// consumer at the edge where it becomes visible.
func (l *link[T]) deliverItem(v T, vis Tick) Tick {
	c := l.c
	i := c.head + c.n
	if i >= c.depth {
		i -= c.depth
	}
	c.buf[i], c.vis[i] = v, vis
	c.n++
	l.delivered++
	ce, u := c.eng, c.cons
	edge := u.clk.EdgeAtOrAfter(vis)
	ce.pushLink(edge, l.key(l.delivered, evItem), u, l.onArrive)
	if traceHooks && ce.tr != nil && l.consTraced() {
		ce.pushLink(edge, l.key(l.delivered, evItemTrace), nil, l.traceConsFn)
	}
	return edge
}

// deliverCredit gives the producer's side the credit of a Recv at r, and
// wakes a producer that waits for one.
func (l *link[T]) deliverCredit(r Tick) Tick {
	c, pe := l.c, l.pe
	at := r + l.lat
	l.pend.Push(at)
	l.credits++
	p := c.prod
	edge := Never
	if l.waiting {
		l.waiting = false
		l.wokeFor = l.credits
		edge = p.clk.EdgeAtOrAfter(at)
		pe.pushLink(edge, l.key(l.credits, evCredit), p, nil)
	}
	if traceHooks && pe.tr != nil && l.prodTraced() {
		edge = p.clk.EdgeAtOrAfter(at)
		pe.pushLink(edge, l.key(l.credits, evCreditTrace), nil, l.traceProdFn)
	}
	return edge
}

func (l *link[T]) deliver() Tick {
	next := Never
	if l.outMark {
		l.outMark = false
		for i := range l.out {
			next = min(next, l.deliverItem(l.out[i].v, l.out[i].vis))
			l.out[i] = linkItem[T]{}
		}
		l.out = l.out[:0]
	}
	if l.crMark {
		l.crMark = false
		for _, r := range l.crOut {
			next = min(next, l.deliverCredit(r))
		}
		l.crOut = l.crOut[:0]
	}
	return next
}

// visible is the number of items the consumer sees now.
func (l *link[T]) visible() int {
	c := l.c
	n := 0
	for i, j := 0, c.head; i < c.n && c.vis[j] <= c.eng.now; i++ {
		n++
		if j++; j == c.depth {
			j = 0
		}
	}
	return n
}

func (l *link[T]) headID() (uint64, bool) {
	c := l.c
	if !c.Valid() {
		return 0, false
	}
	if tx, ok := any(&c.buf[c.head]).(Transaction); ok {
		return uint64(tx.TxnInfo().ID), true
	}
	return 0, true
}

func (l *link[T]) prodTraced() bool { return l.c.sigReady.on || l.c.sigCount.on }

func (l *link[T]) consTraced() bool {
	c := l.c
	return c.sigValid.on || c.sigID.on || c.sigFire.on
}

func (l *link[T]) traceProd() {
	c, pe := l.c, l.pe
	n := l.occupancy(pe.now)
	pe.set(c.sigReady, b2u(n < uint64(c.depth)), true)
	pe.set(c.sigCount, n, true)
}

func (l *link[T]) traceCons() {
	c := l.c
	ce := c.eng
	ce.set(c.sigValid, b2u(c.Valid()), true)
	id, known := l.headID()
	ce.set(c.sigID, id, known)
}
