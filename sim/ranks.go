package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
)

// Comm is what a world needs of the processes that run it together, one
// rank each (an MPI communicator): every rank builds the same model and
// runs its contiguous share of the domains. Every method is collective:
// all ranks call it, in the same order, from one goroutine each.
type Comm interface {
	Rank() int
	Size() int
	// Exchange sends send[r] to rank r and returns what every rank sent
	// to this one, in rank order (its own included); in the same round it
	// replaces each element of red by its minimum over the ranks.
	Exchange(send [][]byte, red []uint64) [][]byte
	// AllreduceMin replaces each element of v by its minimum over the ranks.
	AllreduceMin(v []uint64)
	// Allgather returns every rank's b, in rank order.
	Allgather(b []byte) [][]byte
}

// Codec carries a link's item between ranks: Append encodes v after b,
// Decode reads one item from the front of b and returns the rest. A link
// whose producer and consumer run on two ranks needs one for its item type
// (RegisterCodec); the item must come back equal, for the run to be the same
// as in one process.
type Codec[T any] struct {
	Append func(b []byte, v *T) []byte
	Decode func(b []byte) (T, []byte, error)
}

var codecs sync.Map // reflect.Type → Codec[T]

// RegisterCodec makes links of items of type T able to cross ranks.
func RegisterCodec[T any](c Codec[T]) {
	codecs.Store(reflect.TypeOf((*T)(nil)).Elem(), c)
}

func codecFor[T any]() (Codec[T], bool) {
	c, ok := codecs.Load(reflect.TypeOf((*T)(nil)).Elem())
	if !ok {
		return Codec[T]{}, false
	}
	return c.(Codec[T]), true
}

// State is Go state a block keeps outside the kernel (a count a result is
// read from) that every rank must see the same after a run: the rank that
// runs the block's domain encodes it (AppendState), the others load it
// (LoadState), at World.Sync.
type State interface {
	AppendState(b []byte) []byte
	LoadState(b []byte) ([]byte, error)
}

// Keep registers s as the domain's state for World.Sync. Every rank must
// register the same states in the same order (they build the same model).
func (e *Engine) Keep(s State) { e.keep = append(e.keep, s) }

// Uint64s is a State of a few counters.
func Uint64s(p ...*uint64) State { return u64State(p) }

type u64State []*uint64

func (s u64State) AppendState(b []byte) []byte {
	for _, p := range s {
		b = binary.AppendUvarint(b, *p)
	}
	return b
}

func (s u64State) LoadState(b []byte) ([]byte, error) {
	d := decoder{b: b}
	for _, p := range s {
		*p = d.uvarint()
	}
	return d.b, d.err
}

// Sink is an output several domains share (a capture file) whose records
// may come from another rank: each record is bytes, written by fn in
// simulated-time order (as Engine.Output orders its functions) on rank 0.
type Sink struct {
	id int
	fn func(t Tick, b []byte)
}

// NewSink creates a sink. Every rank must create the same sinks in the
// same order.
func (w *World) NewSink(fn func(t Tick, b []byte)) *Sink {
	s := &Sink{id: len(w.sinks), fn: fn}
	w.sinks = append(w.sinks, s)
	return s
}

// OutputTo writes b to the sink at the domain's time: at once in a world of
// one domain, else at the window's barrier, merged as Output merges, on
// rank 0 when the world runs over ranks. b must not change afterwards.
func (e *Engine) OutputTo(s *Sink, b []byte) {
	if e.w == nil || len(e.w.doms) <= 1 {
		s.fn(e.now, b)
		return
	}
	if e.tbuf == nil {
		e.tbuf = &traceBuf{}
	}
	e.tbuf.ev = append(e.tbuf.ev, traceEv{t: uint64(e.now), kind: evSink, id: s.id, data: b})
}

// ranks is the state of a world that runs over several ranks.
type ranks struct {
	comm  Comm
	rank  int
	owner []int     // by domain: the rank that runs it
	local []*Engine // this rank's domains, in order
	now   Tick      // the world's time, agreed at each window
	send  [][]byte

	base    map[string]statBase // the statistics at the last Sync, by name (looked up, never iterated)
	txnSent []int               // by domain: records of the transaction log already gathered

	// What the windows exchanged: messages (a rank's non-empty message to
	// another) and their bytes, sent by this rank.
	msgs, bytes uint64
}

type statBase struct {
	v, n, sum, min, max uint64
	counts              []uint64
}

// Ranked reports whether the world runs over several ranks (SetComm).
func (w *World) Ranked() bool { return w.rk != nil }

// Rank is this process's rank (0 when not ranked).
func (w *World) Rank() int {
	if w.rk == nil {
		return 0
	}
	return w.rk.rank
}

// Local reports whether this rank runs the domain (always, when not
// ranked).
func (e *Engine) Local() bool {
	return e.w == nil || e.w.rk == nil || e.w.rk.owner[e.index] == e.w.rk.rank
}

// RankOf is the rank that runs domain i (0 when not ranked).
func (w *World) RankOf(i int) int {
	if w.rk == nil {
		return 0
	}
	return w.rk.owner[i]
}

// RankTraffic is what this rank sent to the others at the windows'
// barriers: messages (one per other rank with something to deliver, per
// window) and their bytes.
func (w *World) RankTraffic() (msgs, bytes uint64) {
	if w.rk == nil {
		return 0, 0
	}
	return w.rk.msgs, w.rk.bytes
}

// ErrTooManyRanks: a world cannot run on more ranks than it has domains.
var ErrTooManyRanks = errors.New("more ranks than domains")

// SetComm makes the world run over the ranks of c: every rank has built the
// same model and runs a contiguous group of domains of about equal weight
// (as partitions are chosen); the items and credits of links between two
// ranks, the outputs and the agreed next time cross at each window's
// barrier. Call it once the model is built, before it runs, on every rank.
// A communicator of one rank changes nothing.
func (w *World) SetComm(c Comm) error {
	if c == nil || c.Size() <= 1 {
		return nil
	}
	if w.rk != nil {
		return fmt.Errorf("sim: the world already runs over ranks")
	}
	for _, d := range w.doms {
		if d.steps > 0 {
			return fmt.Errorf("sim: a world must run over ranks from its start")
		}
	}
	n := c.Size()
	if n > len(w.doms) {
		return fmt.Errorf("%w: %d ranks for %d domains (each rank runs at least one)", ErrTooManyRanks, n, len(w.doms))
	}
	rk := &ranks{comm: c, rank: c.Rank(), owner: make([]int, len(w.doms)), send: make([][]byte, n),
		base: map[string]statBase{}, txnSent: make([]int, len(w.doms))}
	for g, ds := range w.partitionOf(w.doms, n) {
		for _, d := range ds {
			rk.owner[d.index] = g
			if g == rk.rank {
				rk.local = append(rk.local, d)
			}
		}
	}
	for _, l := range w.links {
		if rk.owner[l.prodDomain()] != rk.owner[l.consDomain()] {
			if err := l.useCodec(); err != nil {
				return err
			}
		}
	}
	w.rk = rk
	for _, st := range w.stats.All() {
		rk.base[st.Name()] = baseOf(st)
	}
	return nil
}

func baseOf(st Stat) statBase {
	switch s := st.(type) {
	case *Counter:
		return statBase{v: s.v}
	case *Histogram:
		return statBase{n: s.n, sum: s.sum, min: s.min, max: s.max, counts: append([]uint64(nil), s.counts...)}
	}
	return statBase{}
}

// runRanked is Run over ranks: each rank runs its domains through the
// window; at the barrier, what crosses ranks is exchanged, and the next
// time, the world's time and a stop are agreed, in one round (Exchange).
//
// The next time a rank brings counts what it sends at the earliest time it
// becomes visible on the other side: a lower bound of the event the
// delivery schedules there (the consumer's edge at or after it). A window
// may then start before the first event and run nothing, which changes no
// result (any window up to the lookahead gives the same), and the round
// needs no second reduction after the deliveries.
func (w *World) runRanked(limit Tick) Tick {
	rk := w.rk
	win := w.Window()
	for _, d := range w.doms {
		d.stopped, d.solo = false, false
	}
	w.stopReq.Store(false)
	end := satAdd(limit, 1)
	var p *pool
	if groups := w.partitionOf(rk.local, w.cfg.partitions); len(groups) > 1 {
		p = newPool(groups)
		defer p.close()
	}
	covered := end
	t := w.Next()
	for t != Never && t <= limit {
		e := min(gridEnd(t, win), end)
		next := runWindow(p, rk.local, e)
		w.windows++
		stop := w.stopReq.Load()
		now := rk.now
		for _, d := range rk.local {
			stop = stop || d.stopped
			now = max(now, d.now)
		}
		v := []uint64{uint64(next), ^uint64(now), ^b2u(stop)}
		w.exchange(v)
		rk.now = Tick(^v[1])
		if ^v[2] != 0 {
			covered = e
			break
		}
		t = Tick(v[0])
	}
	// What the domains skipped (Engine.OnRunEnd) may move their time: the
	// ranks agree on it again.
	for _, d := range rk.local {
		d.settle(covered)
	}
	v := []uint64{^uint64(w.localNow())}
	rk.comm.AllreduceMin(v)
	rk.now = max(rk.now, Tick(^v[0]))
	return w.Now()
}

// localNow is the latest time of the rank's own domains.
func (w *World) localNow() Tick {
	var t Tick
	for _, d := range w.rk.local {
		t = max(t, d.now)
	}
	return t
}

// The parts of a barrier's message from one rank to another.
const (
	msgItems   = 1 // a link's items, to the consumer's rank
	msgCredits = 2 // a link's credits, to the producer's rank
	msgOutputs = 3 // a domain's traced changes and outputs, to rank 0
)

// exchange is the barrier over ranks: links inside the rank deliver as in
// one process; the others are encoded for the rank on the other side, and
// the outputs for rank 0; red (the next time first) is reduced in the same
// round; then everything received is delivered, and rank 0 writes the
// window's outputs merged in the kernel's order.
func (w *World) exchange(red []uint64) {
	rk := w.rk
	for i := range rk.send {
		rk.send[i] = rk.send[i][:0]
	}
	next := Tick(red[0])
	for _, d := range rk.local {
		for i, l := range d.linkDirty {
			d.linkDirty[i] = nil
			po, co := rk.owner[l.prodDomain()], rk.owner[l.consDomain()]
			if po == co {
				next = min(next, l.deliver())
				continue
			}
			var at Tick
			if po == rk.rank {
				rk.send[co], at = l.appendItems(rk.send[co])
			} else {
				rk.send[po], at = l.appendCredits(rk.send[po])
			}
			next = min(next, at)
		}
		d.linkDirty = d.linkDirty[:0]
		if rk.rank != 0 && d.tbuf != nil && len(d.tbuf.ev) > 0 {
			rk.send[0] = d.appendOutputs(rk.send[0])
		}
	}
	for r, b := range rk.send {
		if r != rk.rank && len(b) > 0 {
			rk.msgs++
			rk.bytes += uint64(len(b))
		}
	}
	red[0] = uint64(next)
	for r, b := range rk.comm.Exchange(rk.send, red) {
		if r == rk.rank {
			continue
		}
		if err := w.receive(b); err != nil {
			panic(fmt.Sprintf("sim: rank %d: the message from rank %d: %v", rk.rank, r, err))
		}
	}
	if rk.rank == 0 {
		w.flushTrace()
	}
}

func (w *World) receive(b []byte) error {
	d := decoder{b: b}
	for len(d.b) > 0 && d.err == nil {
		kind, i := d.uvarint(), int(d.uvarint())
		switch kind {
		case msgItems, msgCredits:
			if i >= len(w.links) {
				return fmt.Errorf("link %d of %d", i, len(w.links))
			}
			l := w.links[i]
			var err error
			if kind == msgItems {
				d.b, err = l.loadItems(d.b)
			} else {
				d.b, err = l.loadCredits(d.b)
			}
			if err != nil {
				return fmt.Errorf("link %s: %w", l.linkName(), err)
			}
			l.deliver()
		case msgOutputs:
			if i >= len(w.doms) {
				return fmt.Errorf("domain %d of %d", i, len(w.doms))
			}
			w.doms[i].loadOutputs(&d)
		default:
			return fmt.Errorf("part of kind %d", kind)
		}
	}
	return d.err
}

// appendOutputs moves the domain's buffered changes and outputs into b.
func (e *Engine) appendOutputs(b []byte) []byte {
	b = binary.AppendUvarint(b, msgOutputs)
	b = binary.AppendUvarint(b, uint64(e.index))
	b = binary.AppendUvarint(b, uint64(len(e.tbuf.ev)))
	for i := range e.tbuf.ev {
		ev := &e.tbuf.ev[i]
		if ev.kind == evOutput {
			panic(fmt.Sprintf("sim: domain %s: Engine.Output cannot cross ranks (a function); write shared outputs through a Sink", e.label()))
		}
		b = append(b, ev.kind)
		b = binary.AppendUvarint(b, ev.t)
		b = binary.AppendUvarint(b, uint64(ev.id))
		switch ev.kind {
		case 0:
			b = binary.AppendUvarint(b, ev.v)
		case evSink:
			b = binary.AppendUvarint(b, uint64(len(ev.data)))
			b = append(b, ev.data...)
		}
		*ev = traceEv{}
	}
	e.tbuf.ev = e.tbuf.ev[:0]
	return b
}

func (e *Engine) loadOutputs(d *decoder) {
	if e.tbuf == nil {
		e.tbuf = &traceBuf{}
	}
	n := d.uvarint()
	for k := uint64(0); k < n && d.err == nil; k++ {
		ev := traceEv{kind: d.byte(), t: d.uvarint(), id: int(d.uvarint())}
		switch ev.kind {
		case 0:
			ev.v = d.uvarint()
		case evSink:
			ev.data = d.bytes()
			if ev.id >= len(e.w.sinks) {
				d.fail(fmt.Errorf("sink %d of %d", ev.id, len(e.w.sinks)))
			}
		}
		e.tbuf.ev = append(e.tbuf.ev, ev)
	}
}

// Sync makes what a ranked run left spread over the ranks the same on
// every rank, so that reports read it as in one process: each domain's
// time and counts, its clocks' edges, its new transaction records and its
// States, from the rank that runs it; the statistics summed over the ranks
// (each rank's change since the last Sync; a histogram's minimum and
// maximum over them). Collective; nothing when the world is not ranked.
func (w *World) Sync() error {
	rk := w.rk
	if rk == nil {
		return nil
	}
	var b []byte
	for _, d := range rk.local {
		b = d.appendSync(b, rk.txnSent[d.index])
		rk.txnSent[d.index] = len(d.txnLog)
	}
	b = w.appendStats(b)
	all := rk.comm.Allgather(b)
	type statSum struct {
		st     Stat
		base   statBase
		sum    statBase // the changes summed
		bounds []uint64
	}
	var sums []*statSum
	idx := map[string]int{} // looked up only
	for r, m := range all {
		d := decoder{b: m}
		for _, dom := range w.doms {
			if rk.owner[dom.index] != r {
				continue
			}
			// This rank's own domains come back as it sent them.
			dom.loadSync(&d, r != rk.rank)
			rk.txnSent[dom.index] = len(dom.txnLog)
		}
		n := d.uvarint()
		for k := uint64(0); k < n && d.err == nil; k++ {
			name, kind, unit, desc := d.str(), d.byte(), d.str(), d.str()
			var bounds []uint64
			if kind == 1 {
				bounds = make([]uint64, d.uvarint())
				for i := range bounds {
					bounds[i] = d.uvarint()
				}
			}
			var ch statBase
			if kind == 0 {
				ch.v = d.uvarint()
			} else {
				ch.n, ch.sum, ch.min, ch.max = d.uvarint(), d.uvarint(), d.uvarint(), d.uvarint()
				ch.counts = make([]uint64, len(bounds)+1)
				for i := range ch.counts {
					ch.counts[i] = d.uvarint()
				}
			}
			if d.err != nil {
				break
			}
			j, ok := idx[name]
			if !ok {
				st := w.stats.declareForSync(name, kind, unit, desc, bounds)
				if st == nil {
					return fmt.Errorf("sim: rank %d: statistic %s is of another kind on rank %d", rk.rank, name, r)
				}
				j = len(sums)
				idx[name] = j
				base, seen := rk.base[name]
				if !seen {
					base = statBase{min: math.MaxUint64, counts: make([]uint64, len(bounds)+1)}
				}
				sums = append(sums, &statSum{st: st, base: base, sum: statBase{min: base.min, max: base.max, counts: make([]uint64, len(bounds)+1)}})
			}
			s := sums[j]
			s.sum.v += ch.v
			s.sum.n += ch.n
			s.sum.sum += ch.sum
			s.sum.min = min(s.sum.min, ch.min)
			s.sum.max = max(s.sum.max, ch.max)
			for i := range ch.counts {
				if i < len(s.sum.counts) {
					s.sum.counts[i] += ch.counts[i]
				}
			}
		}
		if d.err != nil {
			return fmt.Errorf("sim: rank %d: the state of rank %d: %w", rk.rank, r, d.err)
		}
	}
	for _, s := range sums {
		switch st := s.st.(type) {
		case *Counter:
			st.v = s.base.v + s.sum.v
		case *Histogram:
			st.n, st.sum, st.min, st.max = s.base.n+s.sum.n, s.base.sum+s.sum.sum, s.sum.min, s.sum.max
			for i := range st.counts {
				st.counts[i] = s.base.counts[i] + s.sum.counts[i]
			}
		}
		rk.base[s.st.Name()] = baseOf(s.st)
	}
	return nil
}

// appendSync encodes the domain's counts, clocks, States and the
// transaction records from the sent-th on.
func (e *Engine) appendSync(b []byte, sent int) []byte {
	b = binary.AppendUvarint(b, uint64(e.now))
	b = binary.AppendUvarint(b, e.steps)
	b = binary.AppendUvarint(b, e.unitTicks)
	b = binary.AppendUvarint(b, uint64(e.lastTxn))
	b = append(b, byte(b2u(e.stopped)))
	for _, c := range e.clks {
		b = binary.AppendUvarint(b, c.edges)
	}
	for _, s := range e.keep {
		st := s.AppendState(nil)
		b = binary.AppendUvarint(b, uint64(len(st)))
		b = append(b, st...)
	}
	b = binary.AppendUvarint(b, uint64(len(e.txnLog)-sent))
	for _, r := range e.txnLog[sent:] {
		b = binary.AppendUvarint(b, uint64(r.ID))
		b = binary.AppendUvarint(b, uint64(r.Cause))
		b = appendStr(b, r.Kind)
		b = appendStr(b, r.By)
		b = binary.AppendUvarint(b, uint64(r.At))
		b = append(b, byte(b2u(r.Op)))
	}
	return b
}

// loadSync reads what appendSync wrote, into the domain when apply.
func (e *Engine) loadSync(d *decoder, apply bool) {
	now, steps, ticks, last, stopped := Tick(d.uvarint()), d.uvarint(), d.uvarint(), TxnID(d.uvarint()), d.byte() != 0
	if apply {
		e.now, e.steps, e.unitTicks, e.lastTxn, e.stopped = now, steps, ticks, last, stopped
	}
	for _, c := range e.clks {
		if edges := d.uvarint(); apply {
			c.edges = edges
		}
	}
	for _, s := range e.keep {
		st := d.bytes()
		if !apply || d.err != nil {
			continue
		}
		if _, err := s.LoadState(st); err != nil {
			d.fail(fmt.Errorf("domain %s: %w", e.label(), err))
		}
	}
	n := d.uvarint()
	for k := uint64(0); k < n && d.err == nil; k++ {
		r := TxnRecord{ID: TxnID(d.uvarint()), Cause: TxnID(d.uvarint()), Kind: d.str(), By: d.str(), At: Tick(d.uvarint()), Op: d.byte() != 0}
		if apply && e.txnLog != nil {
			e.txnLog = append(e.txnLog, r)
		}
	}
}

// appendStats encodes the change since the last Sync of every statistic
// that changed or that this rank declared since (by name), and of those
// declared on use that counted here though another rank declared them:
// every rank declares them all, as one process would have.
func (w *World) appendStats(b []byte) []byte {
	var all []Stat
	for _, st := range append(w.stats.All(), w.stats.used()...) {
		base, seen := w.rk.base[st.Name()]
		switch s := st.(type) {
		case *Counter:
			if seen && s.v == base.v {
				continue
			}
		case *Histogram:
			if seen && s.n == base.n {
				continue
			}
		}
		all = append(all, st)
	}
	b = binary.AppendUvarint(b, uint64(len(all)))
	for _, st := range all {
		b = appendStr(b, st.Name())
		base, seen := w.rk.base[st.Name()]
		switch s := st.(type) {
		case *Counter:
			b = append(b, 0)
			b = appendStr(b, s.unit)
			b = appendStr(b, s.desc)
			b = binary.AppendUvarint(b, s.v-base.v)
		case *Histogram:
			b = append(b, 1)
			b = appendStr(b, s.unit)
			b = appendStr(b, s.desc)
			b = binary.AppendUvarint(b, uint64(len(s.bounds)))
			for _, x := range s.bounds {
				b = binary.AppendUvarint(b, x)
			}
			if !seen {
				base.counts = make([]uint64, len(s.counts))
			}
			b = binary.AppendUvarint(b, s.n-base.n)
			b = binary.AppendUvarint(b, s.sum-base.sum)
			b = binary.AppendUvarint(b, s.min)
			b = binary.AppendUvarint(b, s.max)
			for i, c := range s.counts {
				b = binary.AppendUvarint(b, c-base.counts[i])
			}
		}
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads what the ranks' encoders wrote; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errors.New("truncated"))
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(errors.New("truncated"))
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(errors.New("truncated"))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes()) }

// AllTrue reports whether b holds on every rank (b itself when not
// ranked). Collective.
func (w *World) AllTrue(b bool) bool {
	if w.rk == nil {
		return b
	}
	v := []uint64{b2u(b)}
	w.rk.comm.AllreduceMin(v)
	return v[0] == 1
}

// Allgather returns every rank's b in rank order ([][]byte{b} when not
// ranked). Collective.
func (w *World) Allgather(b []byte) [][]byte {
	if w.rk == nil {
		return [][]byte{b}
	}
	return w.rk.comm.Allgather(b)
}
