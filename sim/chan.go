package sim

import "fmt"

// Chan is a valid/ready handshake channel: a bounded FIFO that carries
// transactions from one producer unit to one consumer unit.
//
// The producer calls Ready and then Send; the consumer calls Valid, Peek and
// Recv. An item sent at time t becomes valid at the consumer's first edge at
// or after t+latency (at least one edge later); space freed by Recv at time t
// is seen by the producer from its next edge on. Both views depend only on
// state at the start of the time step and the caller's own actions, which is
// what makes evaluation order irrelevant.
type Chan[T any] struct {
	eng   *Engine
	name  string
	depth int
	lat   Tick // extra latency in ps beyond the minimum of one edge
	latCy int  // latency in consumer cycles, resolved at Connect

	buf  []T
	vis  []Tick
	head int
	n    int

	lastPop Tick // time of the latest Recv
	popsNow int  // Recvs at lastPop
	waiting bool // the producer found the channel full

	prod, cons *Unit
	onRecv     func(v *T)
	watch      *watchers[T] // observers from outside (Watch); nil: none

	// special is set on a channel with lanes or in link mode: the one
	// branch the plain channel's Ready, Send and Recv pay for both.
	special bool
	lk      *link[T] // link mode (NewLink): the two sides' state

	// A channel with lanes (NewLanedChan) keeps its transactions in one
	// FIFO per lane; n counts them all, and buf, vis and head are those of
	// the lane whose head arrived first (oldest), so that Valid and Peek
	// are the same cheap reads on either kind of channel.
	lanes   []lane[T]
	laneOf  func(v *T) int
	oldest  int    // the lane buf, vis and head belong to
	sent    uint64 // transactions sent so far: the arrival order across lanes
	scratch T      // the transaction being sent, while laneOf looks at it

	transfers  *Counter
	stalls     *Counter
	undeclared bool // StatsOnUse: the counters are declared at the first Send

	sigValid, sigReady, sigFire, sigID, sigCount *signal
	retrace                                      func()
}

// ChanOption configures a channel.
type ChanOption func(*chanCfg)

type chanCfg struct {
	latPS      Tick
	cycles     int
	statsOnUse bool
}

// LatencyCycles delays visibility to the consumer by n of its cycles
// (n ≥ 1; 1 is the default: visible on the next edge).
func LatencyCycles(n int) ChanOption { return func(c *chanCfg) { c.cycles = n } }

// LatencyPS delays visibility by d picoseconds beyond the push time.
func LatencyPS(d Tick) ChanOption { return func(c *chanCfg) { c.latPS = d } }

// StatsOnUse declares the channel's statistics when it first carries a
// transaction rather than when it is made: a path most runs never use (a
// core's completions of uncached reads) adds nothing to their statistics.
func StatsOnUse() ChanOption { return func(c *chanCfg) { c.statsOnUse = true } }

// NewChan creates a channel of the given FIFO depth between prod and cons.
//
// Its traced signals show, like RTL, the state in the cycle after each edge:
// valid (the consumer sees a transaction at its next edge), ready (the
// producer may send at its next edge), id (the head transaction's ID, x when
// not valid), count (FIFO occupancy) and fire (a transfer happened at the
// edge that began this cycle).
func NewChan[T any](prod, cons *Unit, name string, depth int, opts ...ChanOption) *Chan[T] {
	if depth < 1 {
		panic(fmt.Sprintf("sim: channel %s: depth %d must be at least 1", name, depth))
	}
	e := prod.eng
	if cons.eng != e {
		if cons.eng.w == e.w {
			panic(fmt.Sprintf("sim: channel %s joins units of domains %s and %s: only a link (NewLink) may cross domains",
				name, e.label(), cons.eng.label()))
		}
		panic(fmt.Sprintf("sim: channel %s joins units of two engines", name))
	}
	e.claim(name)
	cfg := chanCfg{cycles: 1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.cycles < 1 {
		panic(fmt.Sprintf("sim: channel %s: latency of %d cycles, want at least 1", name, cfg.cycles))
	}
	c := &Chan[T]{
		eng: e, name: name, depth: depth,
		buf: make([]T, depth), vis: make([]Tick, depth),
		prod: prod, cons: cons, lastPop: Never,
	}
	// One cycle = visible on the consumer's next edge; each further cycle
	// adds one consumer period.
	c.lat = 1 + Tick(cfg.cycles-1)*cons.clk.period + cfg.latPS
	c.transfers = &Counter{statMeta: statMeta{name + ".transfers", "transactions", "transfers through the channel"}}
	c.stalls = &Counter{statMeta: statMeta{name + ".full_stalls", "events", "times the producer found the channel full"}}
	if cfg.statsOnUse {
		c.undeclared = true
		e.stats.pend(c.transfers, c.stalls)
	} else {
		c.declareStats()
	}

	c.sigValid = e.declare(name+".valid", 1, func() (uint64, bool) { return b2u(c.validNext()), true })
	c.sigReady = e.declare(name+".ready", 1, func() (uint64, bool) { return b2u(c.roomAll()), true })
	c.sigFire = e.declare(name+".fire", 1, func() (uint64, bool) { return 0, true })
	c.sigID = e.declare(name+".id", 64, c.headID)
	c.sigCount = e.declare(name+".count", widthFor(depth), func() (uint64, bool) { return uint64(c.n), true })
	c.retrace = c.trace
	return c
}

// declareStats adds the channel's counters to the engine's statistics.
func (c *Chan[T]) declareStats() {
	if c.undeclared {
		c.undeclared = false
		c.eng.stats.declareOnce(c.transfers)
		c.eng.stats.declareOnce(c.stalls)
		return
	}
	c.eng.stats.add(c.transfers)
	c.eng.stats.add(c.stalls)
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Name of the channel.
func (c *Chan[T]) Name() string { return c.name }

// Depth is the FIFO capacity.
func (c *Chan[T]) Depth() int { return c.depth }

// Len is the number of items in the FIFO, visible or not. On a link it is
// the number the consumer sees now (see NewLink).
func (c *Chan[T]) Len() int {
	if c.lk != nil {
		return c.lk.visible()
	}
	return c.n
}

func (c *Chan[T]) occupancyForProducer() int {
	if c.lastPop == c.eng.now {
		return c.n + c.popsNow
	}
	return c.n
}

// Ready reports whether the producer may Send in this cycle. A channel with
// lanes is ready when every lane has room (ReadyFor asks about one).
func (c *Chan[T]) Ready() bool {
	if c.special {
		if c.lk != nil {
			return c.lk.ready()
		}
		return c.readyAll()
	}
	if c.occupancyForProducer() < c.depth {
		return true
	}
	if c.n < c.depth {
		// Full only because of this step's pops, which the producer sees
		// from its next edge on: the pop has already happened, so nothing
		// else would wake it.
		c.prod.wake(c.eng.now + 1)
	} else {
		c.waiting = true
	}
	c.stalls.Inc()
	return false
}

// Send pushes v. Sending on a channel that is not Ready is a programming error
// in the block and panics.
func (c *Chan[T]) Send(v T) {
	if c.special {
		if c.lk != nil {
			c.lk.send(v)
			return
		}
		c.sendLane(v)
		return
	}
	if c.occupancyForProducer() >= c.depth {
		panic(fmt.Sprintf("sim: %s: Send on a full channel at %v (check Ready first)", c.name, c.eng.now))
	}
	if c.undeclared {
		c.declareStats()
	}
	i := c.head + c.n
	if i >= c.depth {
		i -= c.depth
	}
	at := c.eng.now + c.lat
	c.buf[i] = v
	c.vis[i] = at
	c.n++
	c.cons.wake(at)
	if c.watch != nil {
		c.watch.sent(&c.buf[i])
	}
	if traceHooks && c.eng.tr != nil && c.traced() {
		c.trace()
	}
}

// watchers are the observers Watch attached.
type watchers[T any] struct{ send, recv []func(v *T) }

func (w *watchers[T]) sent(v *T) {
	for _, f := range w.send {
		f(v)
	}
}

func (w *watchers[T]) taken(v *T) {
	for _, f := range w.recv {
		f(v)
	}
}

// Watch attaches observers to the channel from outside the blocks it joins:
// onSend sees every transaction sent into it, onRecv every one taken out
// (either may be nil), at the time and in the domain of the send or the
// receive, as protocol monitors and scoreboards watch RTL interfaces. They
// must not change the transaction or the channel. An unwatched channel pays
// one nil test per transfer. A link between two domains refuses observers:
// its two sides run on different goroutines.
func (c *Chan[T]) Watch(onSend, onRecv func(v *T)) {
	if c.lk != nil {
		panic(fmt.Sprintf("sim: %s: Watch is for channels within a domain, not links", c.name))
	}
	if c.watch == nil {
		c.watch = &watchers[T]{}
	}
	if onSend != nil {
		c.watch.send = append(c.watch.send, onSend)
	}
	if onRecv != nil {
		c.watch.recv = append(c.watch.recv, onRecv)
	}
}

// OnRecv registers f to run when the consumer takes a transaction: the
// producer side's way to see its receive buffer drain (a PCIe link returns
// flow-control credits this way). A link between two domains refuses it: f
// would run in the consumer's domain; the producer learns of a Recv
// through Ready, a link latency later.
func (c *Chan[T]) OnRecv(f func(v *T)) {
	if c.lk != nil && c.lk.cross {
		panic(fmt.Sprintf("sim: link %s crosses domains: OnRecv would run in the consumer's domain (the producer sees freed space through Ready)", c.name))
	}
	c.onRecv = f
}

// Valid reports whether the consumer has a transaction at the head (of a
// channel with lanes: the oldest of the lanes' heads).
func (c *Chan[T]) Valid() bool { return c.n > 0 && c.vis[c.head] <= c.eng.now }

// Peek returns a pointer to the head transaction, or nil when not valid. The
// pointer is good until the next Recv.
func (c *Chan[T]) Peek() *T {
	if !c.Valid() {
		return nil
	}
	return &c.buf[c.head]
}

// Recv takes the head transaction. Receiving when not Valid panics.
func (c *Chan[T]) Recv() T {
	if c.special {
		if c.lk != nil {
			return c.lk.recv()
		}
		return c.RecvLane(c.oldest)
	}
	if !c.Valid() {
		panic(fmt.Sprintf("sim: %s: Recv with nothing valid at %v", c.name, c.eng.now))
	}
	now := c.eng.now
	if c.onRecv != nil {
		c.onRecv(&c.buf[c.head]) // a pointer into the buffer: no copy escapes
	}
	if c.watch != nil {
		c.watch.taken(&c.buf[c.head])
	}
	v := c.buf[c.head]
	var zero T
	c.buf[c.head] = zero
	c.head++
	if c.head == c.depth {
		c.head = 0
	}
	c.n--
	if c.lastPop != now {
		c.lastPop, c.popsNow = now, 0
	}
	c.popsNow++
	c.transfers.Inc()
	if c.waiting {
		c.waiting = false
		c.prod.wake(now + 1)
	}
	if traceHooks && c.eng.tr != nil && c.traced() {
		c.eng.startPulse(c.sigFire, c.cons.clk.period)
		c.trace()
	}
	return v
}

// validNext reports whether the consumer will see the head at its next edge.
func (c *Chan[T]) validNext() bool {
	return c.n > 0 && c.vis[c.head] <= c.cons.clk.EdgeAtOrAfter(c.eng.horizon())
}

func (c *Chan[T]) headID() (uint64, bool) {
	if !c.validNext() {
		return 0, false
	}
	// A pointer in an interface does not allocate; *T has T's methods.
	if tx, ok := any(&c.buf[c.head]).(Transaction); ok {
		return uint64(tx.TxnInfo().ID), true
	}
	return 0, true
}

// traced reports whether the attached tracer dumps any of the channel's signals.
func (c *Chan[T]) traced() bool {
	return c.sigValid.on || c.sigReady.on || c.sigFire.on || c.sigID.on || c.sigCount.on
}

// trace records the channel's signals after a push or pop at this time.
func (c *Chan[T]) trace() {
	e := c.eng
	valid := c.validNext()
	e.set(c.sigValid, b2u(valid), true)
	id, known := c.headID()
	e.set(c.sigID, id, known)
	e.set(c.sigReady, b2u(c.roomAll()), true)
	e.set(c.sigCount, uint64(c.n), true)
	if !valid && c.n > 0 {
		// The head is still in flight (latency beyond one cycle): valid
		// rises in the cycle before the edge at which it arrives.
		at := c.cons.clk.EdgeAtOrAfter(c.vis[c.head]) - c.cons.clk.period
		e.traceAt(at, c.retrace)
	}
}
