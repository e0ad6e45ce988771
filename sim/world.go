package sim

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// World is one simulation made of domains that may run in parallel. It owns
// what is global to the run: the seed, the name registry, the statistics,
// the traced signals and the tracer. Each domain (World.Domain) is an Engine
// with a scheduler of its own; domains exchange transactions only through
// links (NewLink), whose latency lets them run a window of time apart from
// each other (see the package documentation).
//
// The model decides the domains; Partitions only decides how many
// goroutines run them. Every output (statistics, traces, transaction log,
// simulated times) is the same for any number of partitions.
type World struct {
	seed uint64
	cfg  config

	mu     sync.Mutex // names and signals may be declared while domains run
	names  map[string]bool
	dnames map[string]bool
	stats  *Stats
	sigs   []*signal
	tr     Tracer

	doms  []*Engine
	links []linkPort

	window      Tick // asked for with SetWindow; 0: the lookahead
	trustWindow bool // tests only: run a window longer than the lookahead
	txnLog      bool
	stopReq     atomic.Bool
	windows     uint64

	dirty []linkPort  // barrier scratch
	bufs  []*traceBuf // trace merge scratch

	rk    *ranks  // SetComm: the world runs over several ranks
	sinks []*Sink // NewSink
}

// NewWorld creates a world with no domain yet, whose random generators all
// derive from seed. Options apply to every domain.
func NewWorld(seed uint64, opts ...Option) *World {
	w := &World{seed: seed, names: map[string]bool{}, dnames: map[string]bool{}, stats: newStats()}
	w.cfg.partitions = 1
	for _, o := range opts {
		o(&w.cfg)
	}
	return w
}

// Partitions runs a world's domains on n goroutines (n ≥ 1; 1, the default,
// runs them all on the caller's goroutine). It never changes a result.
func Partitions(n int) Option { return func(c *config) { c.partitions = n } }

// maxDomains bounds the domains of a world: the domain index takes the top
// 16 bits of a transaction ID.
const maxDomains = 1 << (64 - TxnDomainShift)

// Domain adds a domain called name (a valid hierarchical name, unique among
// the world's domains) and returns its engine. Domains are numbered in
// creation order; the number orders same-time events when outputs merge and
// places the domain's transaction IDs (TxnID).
func (w *World) Domain(name string) *Engine {
	if err := CheckName(name); err != nil {
		panic(fmt.Sprintf("sim: domain: %v", err))
	}
	return w.domain(name)
}

func (w *World) domain(name string) *Engine {
	if w.dnames[name] {
		panic(fmt.Sprintf("sim: domain %q created twice", name))
	}
	if len(w.doms) >= maxDomains {
		panic(fmt.Sprintf("sim: domain %s: a world has at most %d domains", name, maxDomains))
	}
	w.dnames[name] = true
	i := len(w.doms)
	e := &Engine{w: w, index: i, dname: name, seed: w.seed, stats: w.stats,
		noIdleSkip: w.cfg.noIdleSkip, reverse: w.cfg.reverse,
		txnBase: TxnID(i) << TxnDomainShift}
	e.lastTxn = e.txnBase
	if w.txnLog {
		e.enableTxnLog()
	}
	w.doms = append(w.doms, e)
	w.retarget()
	return e
}

// Domains lists the domains in creation order.
func (w *World) Domains() []*Engine { return w.doms }

// Seed is the root seed of the run.
func (w *World) Seed() uint64 { return w.seed }

// Stats is the run's statistics registry, shared by every domain.
func (w *World) Stats() *Stats { return w.stats }

// Rand returns a generator for the component called name, derived from the
// world's seed: the same in whichever domain the component runs.
func (w *World) Rand(name string) *Rand { return NewRand(w.seed, name) }

func (w *World) claim(name string) {
	if err := CheckName(name); err != nil {
		panic(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.names[name] {
		panic(fmt.Sprintf("sim: name %q declared twice", name))
	}
	w.names[name] = true
}

func (w *World) addSignal(s *signal) {
	w.mu.Lock()
	w.sigs = append(w.sigs, s)
	w.mu.Unlock()
}

// SetPartitions sets the number of goroutines that run the domains from
// the next Run on (see Partitions).
func (w *World) SetPartitions(n int) { w.cfg.partitions = n }

// Now is the world's time: the latest time step run by any domain (0
// before the run). After Run returns, no domain has anything left to do
// before it, unless the run was stopped.
func (w *World) Now() Tick {
	var t Tick
	if w.rk != nil {
		t = w.rk.now // the other ranks' domains advance out of sight
	}
	for _, d := range w.doms {
		t = max(t, d.now)
	}
	return t
}

// Next is the earliest time any domain has work at (Never if none). Over
// ranks it is agreed among them: a collective call.
func (w *World) Next() Tick {
	t := Never
	if w.rk != nil {
		for _, d := range w.rk.local {
			t = min(t, d.Next())
		}
		v := []uint64{uint64(t)}
		w.rk.comm.AllreduceMin(v)
		return Tick(v[0])
	}
	for _, d := range w.doms {
		t = min(t, d.Next())
	}
	return t
}

// UnitTicks is the number of Block.Tick calls in all domains so far.
func (w *World) UnitTicks() uint64 {
	var n uint64
	for _, d := range w.doms {
		n += d.unitTicks
	}
	return n
}

// Steps is the number of time steps that had work, summed over domains.
func (w *World) Steps() uint64 {
	var n uint64
	for _, d := range w.doms {
		n += d.steps
	}
	return n
}

// Transactions is the number of transactions allocated in all domains.
func (w *World) Transactions() uint64 {
	var n uint64
	for _, d := range w.doms {
		n += d.Transactions()
	}
	return n
}

// Windows is the number of windows run so far: the synchronisation rounds.
func (w *World) Windows() uint64 { return w.windows }

// Stop ends the run at the end of the current window, as Engine.Stop does.
// It may be called from any goroutine.
func (w *World) Stop() { w.stopReq.Store(true) }

// Lookahead is the shortest latency of the links between two different
// domains, and that link's name: how far domains may run apart. It is
// Never when no link crosses domains.
func (w *World) Lookahead() (Tick, string) {
	la, name := Never, ""
	for _, l := range w.links {
		if l.crosses() && l.latency() < la {
			la, name = l.latency(), l.linkName()
		}
	}
	return la, name
}

// SetWindow sets the length of the windows to d, at most the lookahead (0
// restores the default, the lookahead). A shorter window gives the same
// results with more synchronisation; a longer one would be wrong and is
// refused.
func (w *World) SetWindow(d Tick) error {
	if err := w.checkWindow(d); err != nil {
		return err
	}
	w.window = d
	return nil
}

func (w *World) checkWindow(d Tick) error {
	if la, name := w.Lookahead(); d > la {
		return fmt.Errorf("sim: window %v exceeds the lookahead %v of link %s", d, la, name)
	}
	return nil
}

// Window is the length of the windows Run uses: the one SetWindow set, or
// the lookahead (Never with no link between domains: one window to the
// limit).
func (w *World) Window() Tick {
	if w.window != 0 {
		return w.window
	}
	la, _ := w.Lookahead()
	return la
}

// Run simulates until nothing is left to do, Stop is called, or the next
// time step would lie beyond limit; it returns the world's time (Now).
//
// It runs windows: the window of the grid of Window's length that holds
// T, the earliest time any domain has work at, up to E = min(its end,
// limit + 1): every domain runs its time steps before E; then, at the barrier, what links carried during the window is
// delivered to the other side, and the next window starts. Domains run in
// parallel on the partitions' goroutines, each goroutine running its
// contiguous group of domains one after another.
func (w *World) Run(limit Tick) Tick {
	win := w.Window()
	if w.window != 0 && !w.trustWindow {
		if err := w.checkWindow(w.window); err != nil {
			panic(err.Error())
		}
	}
	if w.rk != nil {
		return w.runRanked(limit)
	}
	for _, d := range w.doms {
		d.stopped, d.solo = false, len(w.doms) == 1
	}
	w.stopReq.Store(false)
	end := satAdd(limit, 1)
	var p *pool
	if groups := w.partitionOf(w.doms, w.cfg.partitions); len(groups) > 1 {
		p = newPool(groups)
		defer p.close()
	}
	covered := end // what the run covers: every step before it has run
	t := w.Next()
	for t != Never && t <= limit {
		e := min(gridEnd(t, win), end)
		next := runWindow(p, w.doms, e)
		w.windows++
		next = min(next, w.barrier())
		if w.stopReq.Load() || w.anyStopped() {
			covered = e
			if len(w.doms) == 1 {
				covered = w.doms[0].now + 1 // it stopped after the step
			}
			break
		}
		t = next
	}
	for _, d := range w.doms {
		d.settle(covered)
	}
	return w.Now()
}

// gridEnd is the end of the window that holds t: windows lie on a grid of
// their length from time 0, so where one starts or ends, and so where a
// stopped run ends, does not depend on which events exist (a block that
// sleeps through steps it would otherwise run leaves the windows as they
// were).
func gridEnd(t, win Tick) Tick {
	if win == Never || win == 0 {
		return Never
	}
	return satAdd(t-t%win, win)
}

func satAdd(a, b Tick) Tick {
	if s := a + b; s >= a {
		return s
	}
	return Never
}

// runWindow runs doms up to e, on the pool's goroutines when there is one,
// and returns their earliest next event.
func runWindow(p *pool, doms []*Engine, e Tick) Tick {
	if p != nil {
		return p.run(e)
	}
	next := Never
	for _, d := range doms {
		d.runUntil(e)
		next = min(next, d.Next())
	}
	return next
}

func (w *World) anyStopped() bool {
	for _, d := range w.doms {
		if d.stopped {
			return true
		}
	}
	return false
}

// partitionOf splits doms into at most parts contiguous groups of about
// equal weight (units + 1 each); nil for one group.
func (w *World) partitionOf(doms []*Engine, parts int) [][]*Engine {
	n := len(doms)
	p := min(max(parts, 1), n)
	if p <= 1 {
		return nil
	}
	total := 0
	for _, d := range doms {
		total += len(d.units) + 1
	}
	groups := make([][]*Engine, 0, p)
	i, cum := 0, 0
	for g := 0; g < p; g++ {
		start := i
		if g == p-1 {
			i = n
		} else {
			target := total * (g + 1) / p
			for i < n-(p-1-g) && (i == start || 2*cum+len(doms[i].units)+1 <= 2*target) {
				cum += len(doms[i].units) + 1
				i++
			}
		}
		groups = append(groups, doms[start:i])
	}
	return groups
}

// barrier delivers what the links carried during the window and hands the
// window's value changes to the tracer. It returns the earliest time of an
// event it scheduled.
//
// Links deliver domain by domain, each domain's in the order it first used
// them in the window: a fixed order, though the order cannot matter: a
// delivery changes only its own link's state, and the events it schedules
// carry keys (pushLink) that order them whenever they were scheduled.
func (w *World) barrier() Tick {
	next := Never
	for _, d := range w.doms {
		for i, l := range d.linkDirty {
			next = min(next, l.deliver())
			d.linkDirty[i] = nil
		}
		d.linkDirty = d.linkDirty[:0]
	}
	if len(w.doms) > 1 {
		w.flushTrace() // traced changes and outputs (Engine.Output)
	}
	return next
}

// pool runs groups of domains on goroutines of their own, one per group
// after the first (which the caller runs), reused from window to window.
type pool struct {
	groups [][]*Engine
	start  []chan Tick
	wg     sync.WaitGroup
	panics []any
	next   []Tick
}

func newPool(groups [][]*Engine) *pool {
	p := &pool{groups: groups, start: make([]chan Tick, len(groups)),
		panics: make([]any, len(groups)), next: make([]Tick, len(groups))}
	for g := 1; g < len(groups); g++ {
		p.start[g] = make(chan Tick)
		go p.worker(g)
	}
	return p
}

func (p *pool) worker(g int) {
	for end := range p.start[g] {
		p.runGroup(g, end)
		p.wg.Done()
	}
}

func (p *pool) runGroup(g int, end Tick) {
	defer func() {
		if r := recover(); r != nil {
			p.panics[g] = fmt.Sprintf("%v\n\n[raised while running partition %d]\n%s", r, g, debug.Stack())
		}
	}()
	next := Never
	for _, d := range p.groups[g] {
		d.runUntil(end)
		next = min(next, d.Next())
	}
	p.next[g] = next
}

// run runs one window in every group and waits for all: the barrier. A
// panic in a domain is raised again here, the first group's first.
func (p *pool) run(end Tick) Tick {
	p.wg.Add(len(p.groups) - 1)
	for g := 1; g < len(p.groups); g++ {
		p.start[g] <- end
	}
	p.runGroup(0, end)
	p.wg.Wait()
	next := Never
	for g, r := range p.panics {
		if r != nil {
			panic(r)
		}
		next = min(next, p.next[g])
	}
	return next
}

func (p *pool) close() {
	for g := 1; g < len(p.groups); g++ {
		close(p.start[g])
	}
}

// EnableTxnLog starts recording every transaction allocated from now on,
// in every domain.
func (w *World) EnableTxnLog() {
	w.txnLog = true
	for _, d := range w.doms {
		d.enableTxnLog()
	}
}

// TxnLog returns the recorded transactions of all domains, ordered by time,
// then domain, then allocation: with one domain, the domain's log itself.
func (w *World) TxnLog() []TxnRecord {
	var logs [][]TxnRecord
	for _, d := range w.doms {
		if len(d.txnLog) > 0 {
			logs = append(logs, d.txnLog)
		}
	}
	switch {
	case len(w.doms) == 1:
		return w.doms[0].txnLog
	case len(logs) == 0:
		return nil
	case len(logs) == 1:
		return logs[0]
	}
	n := 0
	for _, l := range logs {
		n += len(l)
	}
	out := make([]TxnRecord, 0, n)
	kmerge(len(logs), func(i int) int { return len(logs[i]) },
		func(i, j int) Tick { return logs[i][j].At },
		func(i, j int) { out = append(out, logs[i][j]) })
	return out
}

// Lineage returns the chain of recorded transactions from id back to the
// transaction that started it (id first), following causes across domains.
func (w *World) Lineage(id TxnID) []TxnRecord {
	var out []TxnRecord
	for id != 0 {
		d := id.Domain()
		if d >= len(w.doms) {
			break
		}
		r, ok := w.doms[d].findTxn(id)
		if !ok {
			break
		}
		out = append(out, r)
		id = r.Cause
	}
	return out
}

// AttachTracer connects a tracer: every declared signal of every domain is
// offered to it, and the current value of each accepted one is recorded at
// the current time. A world of several domains must attach it before it
// runs.
func (w *World) AttachTracer(tr Tracer) {
	if len(w.doms) > 1 {
		for _, d := range w.doms {
			if d.steps > 0 {
				panic("sim: attach the tracer to a world of several domains before it runs")
			}
		}
	}
	w.tr = tr
	for _, s := range w.sigs {
		s.id, s.on = tr.Declare(s.path, s.width)
	}
	w.retarget()
	// All declarations come first: a VCD header closes at the first value.
	for _, s := range w.sigs {
		if s.on {
			v, known := s.get()
			if len(w.doms) == 1 {
				s.eng.set(s, v, known)
			} else if known {
				tr.Set(uint64(s.eng.now), s.id, v)
			} else {
				tr.SetXZ(uint64(s.eng.now), s.id, false)
			}
		}
	}
}

// Tracing reports whether a tracer is attached.
func (w *World) Tracing() bool { return w.tr != nil }

// retarget points the domains at the tracer: a world of one domain hands
// it every change at once, as an Engine always has; several domains buffer
// a window's changes for the barrier to merge.
func (w *World) retarget() {
	if w.tr == nil {
		return
	}
	if len(w.doms) == 1 {
		w.doms[0].tr, w.doms[0].tbuf = w.tr, nil
		return
	}
	for _, d := range w.doms {
		if d.tbuf == nil {
			d.tbuf = &traceBuf{}
		}
		d.tr = d.tbuf
	}
}

// traceBuf keeps a domain's value changes during a window.
type traceBuf struct{ ev []traceEv }

type traceEv struct {
	t    uint64
	v    uint64
	id   int    // the signal's, or the sink's (evSink)
	kind uint8  // 0: a value, 1: x, 2: z, evOutput: fn, evSink: data
	fn   func() // an output (Engine.Output)
	data []byte // a sink's record (Engine.OutputTo)
}

// evOutput and evSink mark a buffered output (Engine.Output, OutputTo)
// among the trace changes.
const (
	evOutput = 3
	evSink   = 4
)

// Output runs fn, a write to an output several domains share (a capture
// file, a trace value set from outside the kernel), in simulated-time
// order: at once in a world of one domain; in a world of several, at the
// window's barrier, merged with every domain's outputs and traced changes
// by time, then domain, then the order the domain made them, so the file is
// the same for any partitions. fn runs on the barrier's goroutine and must
// not touch the model.
func (e *Engine) Output(fn func()) {
	if e.w == nil || len(e.w.doms) <= 1 {
		fn()
		return
	}
	if e.tbuf == nil {
		e.tbuf = &traceBuf{}
	}
	e.tbuf.ev = append(e.tbuf.ev, traceEv{t: uint64(e.now), kind: evOutput, fn: fn})
}

func (b *traceBuf) Declare(string, int) (int, bool) { return 0, false }
func (b *traceBuf) Set(t uint64, id int, v uint64) {
	b.ev = append(b.ev, traceEv{t: t, v: v, id: id})
}
func (b *traceBuf) SetXZ(t uint64, id int, z bool) {
	k := uint8(1)
	if z {
		k = 2
	}
	b.ev = append(b.ev, traceEv{t: t, id: id, kind: k})
}

func (w *World) emit(ev *traceEv) {
	switch ev.kind {
	case evOutput:
		ev.fn()
		ev.fn = nil
	case evSink:
		w.sinks[ev.id].fn(Tick(ev.t), ev.data)
		ev.data = nil
	case 0:
		w.tr.Set(ev.t, ev.id, ev.v)
	case 1:
		w.tr.SetXZ(ev.t, ev.id, false)
	default:
		w.tr.SetXZ(ev.t, ev.id, true)
	}
}

// flushTrace hands the window's changes to the tracer ordered by time, then
// domain, then the order the domain made them: one stream whatever the
// partitions.
func (w *World) flushTrace() {
	bufs := w.bufs[:0]
	for _, d := range w.doms {
		if b := d.tbuf; b != nil && len(b.ev) > 0 {
			bufs = append(bufs, b)
		}
	}
	kmerge(len(bufs), func(i int) int { return len(bufs[i].ev) },
		func(i, j int) Tick { return Tick(bufs[i].ev[j].t) },
		func(i, j int) { w.emit(&bufs[i].ev[j]) })
	for i, b := range bufs {
		b.ev = b.ev[:0]
		bufs[i] = nil
	}
	w.bufs = bufs[:0]
}

// kmerge visits item j of sequence i (sequences sorted by time, numbered in
// domain order) ordered by time, then i, then j.
func kmerge(k int, length func(i int) int, at func(i, j int) Tick, visit func(i, j int)) {
	type cursor struct {
		t      Tick
		i, pos int
	}
	h := make([]cursor, 0, k)
	for i := 0; i < k; i++ {
		if length(i) > 0 {
			h = append(h, cursor{t: at(i, 0), i: i})
		}
	}
	less := func(a, b *cursor) bool { return a.t < b.t || a.t == b.t && a.i < b.i }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(&h[r], &h[l]) {
				m = r
			}
			if !less(&h[m], &h[i]) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		c := &h[0]
		n := length(c.i)
		// Every item of this sequence that still comes before both children.
		for {
			visit(c.i, c.pos)
			c.pos++
			if c.pos == n {
				break
			}
			c.t = at(c.i, c.pos)
			if len(h) > 1 && less(&h[1], c) || len(h) > 2 && less(&h[2], c) {
				break
			}
		}
		if c.pos == n {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
}
