package sim

import (
	"fmt"
	"math/bits"
	"regexp"
)

// Block is one hardware block's behaviour on a clock edge. Tick is called at
// the rising edge at time now; it returns true when the block wants to be
// evaluated on the next edge too (it has work in flight), false to sleep until
// something wakes it.
type Block interface {
	Tick(now Tick) bool
}

// BlockFunc adapts a function to Block.
type BlockFunc func(now Tick) bool

// Tick calls f.
func (f BlockFunc) Tick(now Tick) bool { return f(now) }

// Option configures a World and its domains (and so an Engine made with
// NewEngine, a world of one domain).
type Option func(*config)

type config struct {
	noIdleSkip bool
	reverse    bool
	partitions int
}

// NoIdleSkip evaluates every unit on every edge of its clock, as a naive
// cycle-by-cycle simulator would. It exists to check idle skipping against.
func NoIdleSkip() Option { return func(c *config) { c.noIdleSkip = true } }

// ReverseOrder evaluates the units of a time step in reverse order. Results
// must not change; tests use it to prove that.
func ReverseOrder() Option { return func(c *config) { c.reverse = true } }

// Engine is one domain of a World: a scheduler with its own time, clocks,
// units, timers, registers and transaction IDs, run by one goroutine at a
// time. Everything global (the seed, the names, the statistics, the signals
// and the tracer) belongs to the World and is shared by its domains.
//
// NewEngine makes a world with a single domain and returns that domain; it
// runs as an Engine always has, on the calling goroutine, with the same
// results.
type Engine struct {
	w     *World
	index int    // position in the world's domains
	dname string // the domain's name ("" for NewEngine's)

	seed  uint64
	now   Tick
	clks  []*Clock
	units []*Unit

	timers  timerHeap // the far future, and the links' events
	cal     calendar  // the near future (push order is seq order)
	timerSq uint64
	due     []timer // the calendar's timers of the current step
	noCal   bool    // every timer in the heap (tests compare the two)
	dirty   []committer

	// The step in progress: stepPhase is 0 outside one, 1 while its
	// timers are taken, 2 while clock stepClock (an index in clks) is
	// evaluated. WakeThisEdge reads them.
	stepPhase int
	stepClock int

	runEnds []func(end Tick) Tick // OnRunEnd's hooks

	stopped    bool
	solo       bool // alone in its world: Stop takes effect after the step
	noIdleSkip bool
	reverse    bool

	txnBase TxnID // the domain's ID space: IDs are txnBase+1, txnBase+2, …
	lastTxn TxnID
	txnLog  []TxnRecord

	stats *Stats
	tr    Tracer    // the world's tracer, or tbuf in a world of several domains
	tbuf  *traceBuf // value changes of the current window

	winEnd    Tick       // the end of the window being run (exclusive)
	linkDirty []linkPort // links with items or credits to deliver at the barrier

	steps     uint64 // time steps with work
	unitTicks uint64 // Block.Tick calls

	keep []State // Go state of the domain's blocks that World.Sync carries
}

// NewEngine creates a world of one domain whose random generators all
// derive from seed, and returns that domain.
func NewEngine(seed uint64, opts ...Option) *Engine {
	return NewWorld(seed, opts...).domain("")
}

// label names the domain in messages.
func (e *Engine) label() string {
	if e.dname == "" {
		return fmt.Sprintf("#%d", e.index)
	}
	return e.dname
}

// World is the world the engine is a domain of.
func (e *Engine) World() *World { return e.w }

// Index is the domain's position in its world (0 for NewEngine's).
func (e *Engine) Index() int { return e.index }

// DomainName is the name the domain was created with ("" for NewEngine's).
func (e *Engine) DomainName() string { return e.dname }

// Seed is the root seed of the run.
func (e *Engine) Seed() uint64 { return e.seed }

// Now is the domain's current simulated time: the time of its latest step.
func (e *Engine) Now() Tick { return e.now }

// Stats is the run's statistics registry, shared by every domain of the
// world.
func (e *Engine) Stats() *Stats { return e.stats }

// Clocks lists the domain's clocks in creation order.
func (e *Engine) Clocks() []*Clock { return e.clks }

// UnitTicks is the number of Block.Tick calls of the domain so far: the
// work actually done.
func (e *Engine) UnitTicks() uint64 { return e.unitTicks }

// Steps is the number of the domain's time steps that had work.
func (e *Engine) Steps() uint64 { return e.steps }

// Stop ends Run at the end of the current window: every domain finishes
// the window, so that where a run stops does not depend on the partitions.
// A domain alone in its world (NewEngine's) stops after the current time
// step.
func (e *Engine) Stop() { e.stopped = true }

// Run runs the engine's world (see World.Run): with NewEngine, this engine
// alone, until nothing is left to do, Stop is called, or the next time step
// would lie beyond limit. It returns the time it stopped at.
func (e *Engine) Run(limit Tick) Tick { return e.w.Run(limit) }

// Rand returns a generator for the component called name, derived from the
// world's seed, so that adding a component never changes another's stream.
func (e *Engine) Rand(name string) *Rand { return NewRand(e.seed, name) }

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?(\.[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?)*$`)

// CheckName validates a hierarchical instance name such as
// "cluster.node0.iommu" or "node.nic[1].tx".
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("invalid name %q: want dot-separated identifiers, optionally indexed like nic[1]", name)
	}
	return nil
}

func (e *Engine) claim(name string) { e.w.claim(name) }

// Clock is a clock domain: rising edges at Phase + k·Period.
type Clock struct {
	eng    *Engine
	name   string
	path   string // the name qualified by the domain's: how reports show it
	period Tick
	phase  Tick

	index int // position in the domain's clocks: the order clocks run in a step

	// The units due at nextEdge, and those of the edge being evaluated
	// (curEdge), as bit sets over units: an edge evaluates its units in
	// creation order, whatever order their wakes were made in.
	nextSet  []uint64
	nNext    int
	nextEdge Tick
	curSet   []uint64
	curEdge  Tick   // Never when the clock is not being evaluated
	pos      int    // the unit being evaluated on curEdge (-1 before the first)
	edges    uint64 // edges evaluated (idle edges are skipped)
	units    []*Unit
	lastEdge Tick // the last edge EdgeAtOrAfter found: most queries fall next to it
}

// NewClock adds a clock domain with the given period and phase (the time of
// its first edge, which must be below the period). Clock names are the
// domain's own: every domain of a world may have a clock called
// "clk_fabric"; reports show it as "<domain>.clk_fabric" (Clock.Path).
func (e *Engine) NewClock(name string, period, phase Tick) *Clock {
	path := name
	if e.dname != "" {
		path = e.dname + "." + name
	}
	e.claim(path)
	if period == 0 {
		panic(fmt.Sprintf("sim: clock %s: period must be positive", name))
	}
	if phase >= period {
		panic(fmt.Sprintf("sim: clock %s: phase %v must be below the period %v", name, phase, period))
	}
	c := &Clock{eng: e, name: name, path: path, period: period, phase: phase, lastEdge: phase,
		index: len(e.clks), curEdge: Never}
	e.clks = append(e.clks, c)
	if e.cal.w == 0 || period < e.cal.w {
		e.setSlotWidth(period)
	}
	return c
}

// Name of the clock domain.
func (c *Clock) Name() string { return c.name }

// Path is the clock's name qualified by its domain's ("node3.clk_fabric"),
// or its name in a domain without a name (NewEngine's).
func (c *Clock) Path() string { return c.path }

// Engine is the domain the clock belongs to.
func (c *Clock) Engine() *Engine { return c.eng }

// Period of the clock.
func (c *Clock) Period() Tick { return c.period }

// Phase is the time of the first edge.
func (c *Clock) Phase() Tick { return c.phase }

// EdgesEvaluated counts the edges on which at least one unit ran.
func (c *Clock) EdgesEvaluated() uint64 { return c.edges }

// Cycles is the number of clock cycles that elapsed up to time t, idle or
// not: the simulated cycle count.
func (c *Clock) Cycles(t Tick) uint64 {
	if t < c.phase {
		return 0
	}
	return uint64((t-c.phase)/c.period) + 1
}

// EdgeAtOrAfter returns the first edge at or after t.
func (c *Clock) EdgeAtOrAfter(t Tick) Tick {
	if t <= c.phase {
		return c.phase
	}
	// Wake-ups ask for now or the next few edges: answer from the last
	// edge found without a 64-bit division where t is within a period of it.
	if e := c.lastEdge; t <= e && t > e-c.period {
		return e
	} else if t > e && t <= e+c.period {
		c.lastEdge = e + c.period
		return c.lastEdge
	}
	k := (t - c.phase + c.period - 1) / c.period
	c.lastEdge = c.phase + k*c.period
	return c.lastEdge
}

// Unit is a block placed in a clock domain: the kernel's handle for
// scheduling it.
type Unit struct {
	eng  *Engine
	clk  *Clock
	name string
	blk  Block
	idx  int // position in its clock's units: its place on every edge

	queuedAt Tick // edge it is queued for in clk.nextSet, or Never
	timerAt  Tick // latest timer pushed for it (dedupe), or Never
	probes   []*probe
}

// Add places block b, called name, in clock domain c. The unit starts awake:
// it is evaluated on the first edge.
func (c *Clock) Add(name string, b Block) *Unit {
	e := c.eng
	e.claim(name)
	u := &Unit{eng: e, clk: c, name: name, blk: b, idx: len(c.units), queuedAt: Never, timerAt: Never}
	e.units = append(e.units, u)
	c.units = append(c.units, u)
	if w := (len(c.units) + 63) / 64; w > len(c.nextSet) {
		c.nextSet = append(c.nextSet, 0)
		c.curSet = append(c.curSet, 0)
	}
	u.wake(e.horizon())
	return u
}

// Name is the unit's hierarchical name.
func (u *Unit) Name() string { return u.name }

// Clock is the unit's domain.
func (u *Unit) Clock() *Clock { return u.clk }

// Engine is the engine the unit runs on.
func (u *Unit) Engine() *Engine { return u.eng }

// WakeAt asks for an evaluation at the first edge at or after t (a timer).
// t must lie in the future.
func (u *Unit) WakeAt(t Tick) {
	if t < u.eng.horizon() {
		panic(fmt.Sprintf("sim: %s: WakeAt(%v) is not after now (%v)", u.name, t, u.eng.now))
	}
	u.wake(t)
}

// WakeIn asks for an evaluation d picoseconds from now (at least one edge on).
func (u *Unit) WakeIn(d Tick) {
	if d == 0 {
		d = 1
	}
	u.wake(u.eng.now + d)
}

// horizon is the earliest time a wake may target: now itself before the run
// has started, the future after that.
func (e *Engine) horizon() Tick {
	if e.steps == 0 {
		return e.now
	}
	return e.now + 1
}

// wake schedules u on the first edge of its clock at or after t (t > now).
func (u *Unit) wake(t Tick) {
	u.wakeEdge(u.clk.EdgeAtOrAfter(t))
}

func (u *Unit) wakeEdge(edge Tick) {
	c := u.clk
	e := u.eng
	immediate := c.EdgeAtOrAfter(e.horizon())
	if edge <= immediate {
		c.enqueue(u, immediate)
		return
	}
	if u.timerAt == edge {
		return
	}
	u.timerAt = edge
	e.timerSq++
	e.pushTimer(timer{at: edge, seq: e.timerSq, u: u})
}

// pushTimer schedules tm, whose seq is the latest taken: in the calendar
// when it is near, else in the heap (as is one for the current time, which
// the step still running takes from the heap alone).
func (e *Engine) pushTimer(tm timer) {
	if e.cal.w == 0 || tm.at <= e.now || e.noCal || !e.cal.push(e.now, &tm) {
		e.timers.push(tm)
	}
}

// setSlotWidth makes w the calendar's slot width (the shortest clock
// period), moving what it holds to the heap: their order is the same
// there.
func (e *Engine) setSlotWidth(w Tick) {
	e.cal.each(func(tm *timer) { e.timers.push(*tm) })
	e.cal = calendar{w: w, base: e.now - e.now%w}
}

// enqueue puts u in the set for the clock's next edge, once. That set only
// ever holds units for the immediate next edge; later ones wait as timers.
func (c *Clock) enqueue(u *Unit, edge Tick) {
	if u.queuedAt == edge {
		return
	}
	if c.nNext == 0 {
		c.nextEdge = edge
	}
	u.queuedAt = edge
	c.nextSet[u.idx>>6] |= 1 << (u.idx & 63)
	c.nNext++
}

// WakeThisEdge asks for an evaluation of u in the time step being run, at
// u's place in it: it does so and reports true when u's clock has an edge
// now and u's turn on it has not come yet (clocks run in creation order,
// the units of a clock in creation order). It reports false, and wakes
// nothing, outside a time step, when u's clock has no edge now, or when
// u's turn has passed (or is the current one). A block that lets a unit
// sleep through checks it would make on its own clock's edges uses it to
// wake the unit on the very check that would have seen a change.
func (u *Unit) WakeThisEdge() bool {
	e, c := u.eng, u.clk
	t := e.now
	if e.stepPhase == 0 || t < c.phase || (t-c.phase)%c.period != 0 {
		return false
	}
	bit := uint64(1) << (u.idx & 63)
	if e.stepPhase == 1 {
		// The step's timers are being taken: the edge's set is still the
		// next one (it holds units for this edge, or none).
		if u.queuedAt != t {
			c.enqueue(u, t)
		}
		return true
	}
	switch {
	case c.index < e.stepClock:
		return false
	case c.index == e.stepClock:
		if e.reverse && u.idx >= c.pos || !e.reverse && u.idx <= c.pos {
			return false
		}
	case c.curEdge != t:
		// A later clock with an edge now and nothing due on it yet.
		c.curEdge, c.pos = t, -1
		c.edges++
	}
	c.curSet[u.idx>>6] |= bit
	return true
}

// OnRunEnd registers f, called when World.Run returns, on the caller's
// goroutine, with the end of the time the run covered (every time step
// before end has run; Never when the run ran out of work with no limit).
// f settles what a block skipped in the run (the checks of a loop it slept
// through) and returns the latest time step it skipped, below end (0 if
// none): the domain's time (Now) becomes that when it is later, as it
// would be had the block run those steps.
func (e *Engine) OnRunEnd(f func(end Tick) Tick) { e.runEnds = append(e.runEnds, f) }

// settle runs the OnRunEnd hooks for a run that covered up to end.
func (e *Engine) settle(end Tick) {
	for _, f := range e.runEnds {
		if t := f(end); t > e.now {
			e.now = t
		}
	}
}

// Next is the time of the next step: the earliest timer or clock edge with
// a block due; Never when nothing is left to do.
func (e *Engine) Next() Tick {
	t := e.cal.next()
	if len(e.timers) > 0 && e.timers[0].at < t {
		t = e.timers[0].at
	}
	for _, c := range e.clks {
		if c.nNext > 0 && c.nextEdge < t {
			t = c.nextEdge
		}
	}
	return t
}

// runUntil runs every time step before end. A domain alone in its world
// stops as soon as Stop is called; in a world of several, every domain
// finishes the window.
func (e *Engine) runUntil(end Tick) {
	e.winEnd = end
	for !e.stopped || !e.solo {
		t := e.Next()
		if t >= end {
			break
		}
		e.step(t)
	}
}

func (e *Engine) step(t Tick) {
	e.now = t
	e.steps++
	e.stepPhase = 1
	// Timers due now join their clock's set for this edge: the heap's and
	// the calendar's merged by seq (the order of their functions).
	due := e.due[:0]
	if e.cal.n > 0 && e.cal.next() == t {
		due = e.cal.take(t, due)
	}
	for i := 0; ; {
		var tm timer
		if len(e.timers) > 0 && e.timers[0].at == t && (i == len(due) || e.timers[0].seq < due[i].seq) {
			tm = e.timers.pop()
		} else if i < len(due) {
			tm = due[i]
			due[i] = timer{}
			i++
		} else {
			break
		}
		if tm.fn != nil {
			// A traced value that changes with no block running, or a
			// link's arrival hook (OnArrive) ahead of waking its consumer.
			tm.fn()
			if tm.u == nil {
				continue
			}
		}
		u := tm.u
		if u.timerAt == t {
			u.timerAt = Never
		}
		u.clk.enqueue(u, t)
	}
	e.due = due[:0]
	// Phase 1: take every clock's due units out of its next set, so that
	// wakes made while evaluating go to the next edge.
	for _, c := range e.clks {
		if c.nNext > 0 && c.nextEdge == t {
			c.curSet, c.nextSet = c.nextSet, c.curSet
			c.nNext = 0
			c.curEdge, c.pos = t, -1
			c.edges++
		}
	}
	// Phase 2: evaluate, clock by clock in creation order, each clock's
	// units in creation order (reverse with ReverseOrder). A set is read
	// word by word as it is taken, so a unit WakeThisEdge adds further on
	// is evaluated in its place.
	e.stepPhase = 2
	for ci := 0; ci < len(e.clks); ci++ {
		c := e.clks[ci]
		if c.curEdge != t {
			continue
		}
		e.stepClock = ci
		set := c.curSet
		if !e.reverse {
			for w := 0; w < len(set); w++ {
				for set[w] != 0 {
					b := bits.TrailingZeros64(set[w])
					set[w] &^= 1 << b
					c.pos = w<<6 | b
					e.eval(c, c.units[c.pos], t)
				}
			}
		} else {
			c.pos = len(c.units)
			for w := len(set) - 1; w >= 0; w-- {
				for set[w] != 0 {
					b := 63 - bits.LeadingZeros64(set[w])
					set[w] &^= 1 << b
					c.pos = w<<6 | b
					e.eval(c, c.units[c.pos], t)
				}
			}
		}
		c.curEdge = Never
	}
	e.stepPhase = 0
	// Phase 3: the clock edge. Registers take their next values.
	for i, r := range e.dirty {
		r.commit(t)
		e.dirty[i] = nil
	}
	e.dirty = e.dirty[:0]
}

// eval evaluates u on the edge of c at t.
func (e *Engine) eval(c *Clock, u *Unit, t Tick) {
	e.unitTicks++
	busy := u.blk.Tick(t)
	if traceHooks && e.tr != nil {
		for _, p := range u.probes {
			p.sample(e)
		}
	}
	if busy || e.noIdleSkip {
		u.wakeEdge(t + c.period)
	}
}

type timer struct {
	at  Tick
	seq uint64 // insertion order; a link's events have keys above linkSeqBase
	u   *Unit  // unit to wake, or
	fn  func() // trace update (tracing only)
}

// pushLink schedules a link's event at time at: waking u, or running fn (a
// trace update). Its key seq places it after every other timer of the same
// time and orders the links' events by link, item and kind, whenever they
// were pushed: at a barrier or at once, within a short window or a long
// one. That is what keeps a domain's evaluation order independent of
// the windows. Unlike WakeAt it leaves u.timerAt alone, so it never hides a
// timer of the unit's own.
func (e *Engine) pushLink(at Tick, seq uint64, u *Unit, fn func()) {
	e.timers.push(timer{at: at, seq: seq, u: u, fn: fn})
}

// timerHeap is a binary min-heap on (at, seq): time ties break by insertion
// order, so the schedule is deterministic. Hand-written to avoid the
// interface boxing of container/heap on the hot path.
type timerHeap []timer

func (h timerHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *timerHeap) push(t timer) {
	*h = append(*h, t)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *timerHeap) pop() timer {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = timer{}
	s = s[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
