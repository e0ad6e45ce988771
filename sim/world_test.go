package sim_test

import (
	"flag"
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

var worldSeeds = flag.Int("worldseeds", 0, "seeds of the world property test (0: the default count)")

// pkt is the transaction random models pass around.
type pkt struct {
	sim.Txn
	src, seq, ttl int
	born          sim.Tick
}

type pending struct {
	p   pkt
	at  sim.Tick // ready to leave
	out int
}

// rnode is a block of a random model: it injects packets, takes packets
// from its inputs irregularly, holds them for a random delay in a bounded
// queue and forwards them to a random output until their hop count runs
// out. It records every packet it takes.
type rnode struct {
	name    string
	u       *sim.Unit
	rng     *sim.Rand
	ins     []*sim.Chan[pkt]
	outs    []*sim.Chan[pkt]
	q       sim.Queue[pending]
	qcap    int
	budget  int
	every   sim.Tick
	next    sim.Tick
	delay   sim.Tick
	takePct int
	count   *sim.Reg[uint32]
	got     *sim.Counter
	lat     *sim.Histogram
	log     []string
	stopAt  int // stop the domain after this many packets (0: never)
	stopped sim.Tick
	seq     int
}

func (n *rnode) Tick(now sim.Tick) bool {
	e := n.u.Engine()
	busy := false
	if len(n.outs) == 0 {
		n.budget = 0
	}
	if n.budget > 0 && now >= n.next && n.q.Len() < n.qcap {
		n.seq++
		p := pkt{Txn: e.NewOp("inject", n.name), src: n.u.Engine().Index(), seq: n.seq, ttl: 1 + n.rng.IntN(6), born: now}
		n.q.Push(pending{p: p, at: now + sim.Tick(n.rng.IntN(int(n.delay)+1)), out: n.rng.IntN(len(n.outs))})
		n.budget--
		n.next = now + n.every
	}
	for _, in := range n.ins {
		if !in.Valid() || n.q.Len() >= n.qcap {
			continue
		}
		if n.rng.IntN(100) >= n.takePct {
			busy = true // not this time: look again next cycle
			continue
		}
		seen := in.Len()
		p := in.Recv()
		n.log = append(n.log, fmt.Sprintf("%d %s<-%s id=%x src=%d seq=%d ttl=%d len=%d", now, n.name, in.Name(), uint64(p.ID), p.src, p.seq, p.ttl, seen))
		n.got.Inc()
		n.lat.Observe(uint64(now - p.born))
		n.count.D(n.count.Q() + 1)
		if n.stopAt > 0 && len(n.log) == n.stopAt {
			e.Stop()
			n.stopped = now
		}
		if p.ttl > 1 && len(n.outs) > 0 {
			p.Txn = e.NewTxn(p.ID, "hop", n.name)
			p.ttl--
			n.q.Push(pending{p: p, at: now + sim.Tick(n.rng.IntN(int(n.delay)+1)), out: n.rng.IntN(len(n.outs))})
		}
	}
	for n.q.Len() > 0 {
		h := n.q.Front()
		if h.at > now {
			n.u.WakeAt(h.at)
			break
		}
		out := n.outs[h.out]
		if !out.Ready() {
			break // woken when space frees
		}
		out.Send(n.q.Pop().p)
	}
	for _, in := range n.ins {
		if in.Valid() && n.q.Len() < n.qcap {
			busy = true
		}
	}
	if n.budget > 0 && n.q.Len() < n.qcap { // a full queue wakes it as it drains
		if n.next > now {
			n.u.WakeAt(n.next)
		} else {
			busy = true
		}
	}
	return busy
}

// streamRec records every call a tracer receives, in order, and checks that
// time never goes backwards.
type streamRec struct {
	names []string
	ev    []string
	last  uint64
	bad   string
}

func (r *streamRec) Declare(path string, width int) (int, bool) {
	r.names = append(r.names, fmt.Sprintf("%s/%d", path, width))
	return len(r.names) - 1, true
}

func (r *streamRec) at(t uint64) {
	if t < r.last && r.bad == "" {
		r.bad = fmt.Sprintf("time went backwards from %d to %d", r.last, t)
	}
	r.last = t
}

func (r *streamRec) Set(t uint64, id int, v uint64) {
	r.at(t)
	r.ev = append(r.ev, fmt.Sprintf("%d %d=%d", t, id, v))
}

func (r *streamRec) SetXZ(t uint64, id int, z bool) {
	r.at(t)
	r.ev = append(r.ev, fmt.Sprintf("%d %d=%v", t, id, map[bool]string{false: "x", true: "z"}[z]))
}

// model is a random world: a few domains of blocks on one or two clocks,
// joined by channels inside domains and by links in chains and cycles
// across them.
type model struct {
	w     *sim.World
	nodes []*rnode
	rec   *streamRec
}

type topo struct{ seed uint64 }

func (tp topo) build(parts int, window func(la sim.Tick) sim.Tick, stopAt bool) *model {
	r := rand.New(rand.NewPCG(tp.seed, 99))
	w := sim.NewWorld(tp.seed, sim.Partitions(parts))
	m := &model{w: w}
	nd := 2 + r.IntN(5)
	var byDom [][]*rnode
	for d := 0; d < nd; d++ {
		e := w.Domain(fmt.Sprintf("d%d", d))
		var clks []*sim.Clock
		for c := 0; c < 1+r.IntN(2); c++ {
			period := sim.Tick(400 + 50*r.IntN(40))
			clks = append(clks, e.NewClock(fmt.Sprintf("clk%d", c), period, sim.Tick(r.IntN(int(period)))))
		}
		var ns []*rnode
		for i := 0; i < 2+r.IntN(3); i++ {
			n := &rnode{name: fmt.Sprintf("d%d.n%d", d, i), qcap: 1 + r.IntN(4), budget: r.IntN(25),
				every: sim.Tick(300 + r.IntN(5000)), delay: sim.Tick(r.IntN(4000)), takePct: 20 + r.IntN(81)}
			n.u = clks[r.IntN(len(clks))].Add(n.name, n)
			n.rng = e.Rand(n.name)
			n.count = sim.NewReg(n.u, "count", uint32(0))
			st := e.Stats()
			n.got = st.Counter(n.name+".got", "packets", "packets taken")
			n.lat = st.Histogram(n.name+".age", "ps", "age of packets taken", sim.PowersOfTwo(1<<16))
			ns = append(ns, n)
			m.nodes = append(m.nodes, n)
		}
		byDom = append(byDom, ns)
	}
	pick := func(d int) *rnode { return byDom[d][r.IntN(len(byDom[d]))] }
	nch := 0
	join := func(a, b *rnode, ch *sim.Chan[pkt]) {
		a.outs = append(a.outs, ch)
		b.ins = append(b.ins, ch)
	}
	link := func(a, b *rnode) {
		nch++
		lat := sim.Tick(700 + r.IntN(6000))
		join(a, b, sim.NewLink[pkt](a.u, b.u, fmt.Sprintf("lk%d", nch), 1+r.IntN(6), lat))
	}
	// Plain channels inside domains.
	for d := range byDom {
		for i := 0; i < len(byDom[d]); i++ {
			a, b := pick(d), pick(d)
			if a == b {
				continue
			}
			nch++
			join(a, b, sim.NewChan[pkt](a.u, b.u, fmt.Sprintf("ch%d", nch), 1+r.IntN(3), sim.LatencyCycles(1+r.IntN(2))))
		}
	}
	// A cycle of links through every domain, more links at random, and a
	// few links inside a domain.
	for d := range byDom {
		link(pick(d), pick((d+1)%nd))
	}
	for i := 0; i < nd; i++ {
		link(pick(r.IntN(nd)), pick(r.IntN(nd)))
	}
	for i := 0; i < 2; i++ {
		d := r.IntN(nd)
		if a, b := pick(d), pick(d); a != b {
			link(a, b)
		}
	}
	if stopAt {
		m.nodes[r.IntN(len(m.nodes))].stopAt = 1 + r.IntN(5)
	}
	if window != nil {
		la, _ := w.Lookahead()
		if err := w.SetWindow(window(la)); err != nil {
			panic(err)
		}
	}
	w.EnableTxnLog()
	m.rec = &streamRec{}
	w.AttachTracer(m.rec)
	return m
}

// outcome is everything observable about a run.
func (m *model) outcome(t *testing.T) string {
	t.Helper()
	if m.rec.bad != "" {
		t.Fatal(m.rec.bad)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "now %v\n", m.w.Now())
	for _, d := range m.w.Domains() {
		fmt.Fprintf(&b, "domain %s now %v steps %d ticks %d txns %d\n", d.DomainName(), d.Now(), d.Steps(), d.UnitTicks(), d.Transactions())
	}
	for _, n := range m.nodes {
		b.WriteString(strings.Join(n.log, "\n"))
		b.WriteString("\n")
	}
	if err := m.w.WriteStatsJSON(&b, sim.RunInfo{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	b.WriteString(strings.Join(m.rec.names, "\n"))
	b.WriteString(strings.Join(m.rec.ev, "\n"))
	for _, r := range m.w.TxnLog() {
		fmt.Fprintf(&b, "%+v\n", r)
	}
	return b.String()
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d: %q vs %q", i, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(la), len(lb))
}

// The synchronisation property: on random topologies, every partition
// count and any window up to the lookahead give the same outcome to the
// byte: what every block received and when, the statistics, the trace
// stream and the transaction log.
func TestWorldPartitionsAndWindowsAgree(t *testing.T) {
	seeds := 250 // about 3 s; -worldseeds=N for more
	if testing.Short() {
		seeds = 30
	}
	if *worldSeeds > 0 {
		seeds = *worldSeeds
	}
	configs := []struct {
		name   string
		parts  int
		window func(la sim.Tick) sim.Tick
		split  bool // run in three calls
	}{
		{"p2", 2, nil, false},
		{"p4", 4, nil, false},
		{"p16", 16, nil, false},
		{"p1-half-window", 1, func(la sim.Tick) sim.Tick { return max(la/2, 1) }, false},
		{"p4-third-window", 4, func(la sim.Tick) sim.Tick { return la/3 + 1 }, false},
		{"p2-odd-window-split", 2, func(la sim.Tick) sim.Tick { return max(la-97, 1) }, true},
	}
	transfers := 0
	for s := 0; s < seeds; s++ {
		tp := topo{seed: uint64(s)}
		limit := sim.Never - 1
		if s%3 == 2 {
			limit = sim.Tick(5000 + 997*s) // stop half-way
		}
		base := tp.build(1, nil, false)
		base.w.Run(limit)
		want := base.outcome(t)
		for _, n := range base.nodes {
			transfers += len(n.log)
		}
		for _, c := range configs {
			m := tp.build(c.parts, c.window, false)
			if c.split {
				m.w.Run(limit / 3)
				m.w.Run(limit / 2)
			}
			m.w.Run(limit)
			if got := m.outcome(t); got != want {
				t.Fatalf("seed %d, %s: outcome differs from one partition: %s", s, c.name, firstDiff(want, got))
			}
		}
	}
	if transfers < 20*seeds {
		t.Fatalf("only %d packets taken over %d seeds: the models do too little", transfers, seeds)
	}
}

// Stop in one domain ends every domain at the same barrier for any number
// of partitions, and running on from there ends where an uninterrupted run
// ends.
func TestWorldStopAtBarrier(t *testing.T) {
	stops := 0
	for s := 0; s < 20; s++ {
		tp := topo{seed: uint64(1000 + s)}
		full := tp.build(1, nil, false)
		full.w.Run(sim.Never - 1)
		wantEnd := full.outcome(t)
		var wantStop string
		for _, parts := range []int{1, 2, 4, 16} {
			m := tp.build(parts, nil, true)
			m.w.Run(sim.Never - 1)
			var stopper *rnode
			for _, n := range m.nodes {
				if n.stopAt > 0 && len(n.log) >= n.stopAt {
					stopper = n
				}
			}
			if stopper == nil {
				continue // the packets never came
			}
			stops++
			// Every domain is within one window of the stop.
			for _, d := range m.w.Domains() {
				if d.Now() >= stopper.stopped+m.w.Window() {
					t.Fatalf("seed %d, %d partitions: domain %s ran to %v after a stop at %v (window %v)",
						s, parts, d.DomainName(), d.Now(), stopper.stopped, m.w.Window())
				}
			}
			got := m.outcome(t)
			if wantStop == "" {
				wantStop = got
			} else if got != wantStop {
				t.Fatalf("seed %d, %d partitions: stopped at another point: %s", s, parts, firstDiff(wantStop, got))
			}
			stopper.stopAt = 0
			m.w.Run(sim.Never - 1)
			if got := m.outcome(t); got != wantEnd {
				t.Fatalf("seed %d, %d partitions: stopping and running on changed the outcome: %s", s, parts, firstDiff(wantEnd, got))
			}
		}
	}
	if stops == 0 {
		t.Fatal("no run stopped")
	}
}

// oneWay is a world of two domains joined by one link each way.
func oneWay(lat sim.Tick, parts int) (*sim.World, *pump, *drain) {
	w := sim.NewWorld(1, sim.Partitions(parts))
	a, b := w.Domain("a"), w.Domain("b")
	p, d := &pump{n: 20}, &drain{}
	pu := a.NewClock("clk", 1000, 0).Add("a.pump", p)
	du := b.NewClock("clk", 1000, 0).Add("b.drain", d)
	ch := sim.NewLink[int](pu, du, "ab", 4, lat)
	p.out, d.in = ch, ch
	back := sim.NewLink[int](du, pu, "ba", 1, 3*lat)
	_ = back
	return w, p, d
}

func TestWorldWindowChecks(t *testing.T) {
	w, _, _ := oneWay(2500, 1)
	if la, name := w.Lookahead(); la != 2500 || name != "ab" {
		t.Fatalf("lookahead %v of %q, want 2500 of ab", la, name)
	}
	err := w.SetWindow(2501)
	if err == nil || err.Error() != "sim: window 2501ps exceeds the lookahead 2500ps of link ab" {
		t.Fatalf("too long a window: %v", err)
	}
	if err := w.SetWindow(1000); err != nil || w.Window() != 1000 {
		t.Fatalf("window 1000: %v, %v", err, w.Window())
	}
	// A link added later shortens the lookahead: Run refuses the window.
	e := w.Domains()[0]
	u1 := e.NewClock("c2", 10, 0).Add("x", sim.BlockFunc(func(sim.Tick) bool { return false }))
	u2 := w.Domains()[1].NewClock("c2", 10, 0).Add("y", sim.BlockFunc(func(sim.Tick) bool { return false }))
	sim.NewLink[int](u1, u2, "short", 1, 500)
	msg := func() (m string) {
		defer func() { m = fmt.Sprint(recover()) }()
		w.Run(sim.US)
		return ""
	}()
	if msg != "sim: window 1ns exceeds the lookahead 500ps of link short" {
		t.Fatalf("Run with too long a window: %q", msg)
	}
}

// A link carries items with its latency and returns credits with it, the
// same in one domain as across two.
func TestLinkLatencyAndCredits(t *testing.T) {
	cases := []struct {
		depth     int
		lat       sim.Tick
		wantFirst sim.Tick
		wantLast  sim.Tick
	}{
		{1, 1000, 1000, 19000},   // a round trip per item
		{2, 1000, 1000, 10000},   // one per cycle
		{2, 2500, 3000, 28000},   // credits back after 2.5 cycles: two per 6 cycles
		{6, 2500, 3000, 12000},   // enough credits for the round trip
		{1, 300, 1000, 19000},    // below a period: next edge
		{4, 10000, 10000, 51000}, // 4 per 20 cycles
	}
	for _, tc := range cases {
		for _, same := range []bool{true, false} {
			t.Run(fmt.Sprintf("depth%d-lat%v-same%v", tc.depth, tc.lat, same), func(t *testing.T) {
				w := sim.NewWorld(1, sim.Partitions(2))
				a := w.Domain("a")
				b := a
				if !same {
					b = w.Domain("b")
				}
				p, d := &lazyPump{n: 10}, &drain{}
				pu := a.NewClock("clk", 1000, 0).Add("a.pump", p)
				cb := a.Clocks()[0]
				if !same {
					cb = b.NewClock("clk", 1000, 0)
				}
				du := cb.Add("b.drain", d)
				ch := sim.NewLink[int](pu, du, "ab", tc.depth, tc.lat)
				p.out, d.in = ch, ch
				w.Run(sim.MS)
				if len(d.got) != 10 {
					t.Fatalf("got %d items", len(d.got))
				}
				if d.at[0] != tc.wantFirst || d.at[9] != tc.wantLast {
					t.Errorf("first at %v, last at %v; want %v and %v (%v)", d.at[0], d.at[9], tc.wantFirst, tc.wantLast, d.at)
				}
			})
		}
	}
}

func TestChanAcrossDomainsPanics(t *testing.T) {
	w := sim.NewWorld(1)
	a, b := w.Domain("a"), w.Domain("b")
	ua := a.NewClock("clk", 10, 0).Add("x", sim.BlockFunc(func(sim.Tick) bool { return false }))
	ub := b.NewClock("clk", 10, 0).Add("y", sim.BlockFunc(func(sim.Tick) bool { return false }))
	msg := func() (m string) {
		defer func() { m = fmt.Sprint(recover()) }()
		sim.NewChan[int](ua, ub, "c", 1)
		return ""
	}()
	if !strings.Contains(msg, "only a link (NewLink) may cross domains") {
		t.Fatalf("NewChan across domains: %q", msg)
	}
	msg = func() (m string) {
		defer func() { m = fmt.Sprint(recover()) }()
		sim.NewLink[int](ua, ub, "l", 1, 10).OnRecv(func(*int) {})
		return ""
	}()
	if !strings.Contains(msg, "OnRecv") {
		t.Fatalf("OnRecv on a link across domains: %q", msg)
	}
}

// Transaction IDs: domain 0 counts from 1 as an Engine always has; other
// domains count in their own space; the merged log and lineage follow
// causes across domains.
func TestTxnIDsPerDomain(t *testing.T) {
	w := sim.NewWorld(1)
	a, b := w.Domain("a"), w.Domain("b")
	w.EnableTxnLog()
	x := a.NewTxn(0, "op", "a")
	y := b.NewTxn(x.ID, "hop", "b")
	z := a.NewTxn(y.ID, "hop", "a")
	if x.ID != 1 || z.ID != 2 || y.ID != 1<<sim.TxnDomainShift+1 || y.ID.Domain() != 1 {
		t.Fatalf("IDs %x %x %x", x.ID, y.ID, z.ID)
	}
	var kinds []string
	for _, r := range w.Lineage(z.ID) {
		kinds = append(kinds, fmt.Sprintf("%s@%x", r.By, uint64(r.ID)))
	}
	if got := strings.Join(kinds, "<-"); got != "a@2<-b@1000000000001<-a@1" {
		t.Fatalf("lineage %s", got)
	}
	if n := len(w.TxnLog()); n != 3 || w.Transactions() != 3 {
		t.Fatalf("log of %d, %d transactions", n, w.Transactions())
	}
	// Ties in time go to the lower domain first.
	if got := w.TxnLog(); got[0].ID != 1 || got[1].ID != 2 || got[2].ID != y.ID {
		t.Fatalf("merged log %+v", got)
	}
}

// Processes are coroutines made with iter.Pull; the domain that runs them
// may move from one goroutine to another between windows. A coroutine
// resumes fine on a goroutine other than the one that created it.
func TestPullResumesOnAnotherGoroutine(t *testing.T) {
	seq := func(yield func(int) bool) {
		for i := 0; ; i++ {
			if !yield(i) {
				return
			}
		}
	}
	var next func() (int, bool)
	var stop func()
	created := make(chan struct{})
	go func() {
		next, stop = iter.Pull(iter.Seq[int](seq))
		v, _ := next()
		if v != 0 {
			t.Error("first value", v)
		}
		close(created)
	}()
	<-created
	var wg sync.WaitGroup
	for g := 1; g <= 4; g++ {
		wg.Add(1)
		go func() { // one after another, each on a goroutine of its own
			defer wg.Done()
			if v, ok := next(); !ok || v != g {
				t.Errorf("resumed on goroutine %d: got %d, %v", g, v, ok)
			}
		}()
		wg.Wait()
	}
	stop()
}

// BenchmarkWorld runs 64 domains in a ring: in each, a pump feeds four
// relays through channels at one transaction per 1 GHz cycle, and the last
// relay sends over a link to the next domain's drain. The link's latency is
// the lookahead: 2 ns (two cycles per window: synchronisation dominates)
// and 100 ns (a network hop). Events are unit evaluations.
func BenchmarkWorld(b *testing.B) {
	for _, lat := range []sim.Tick{2 * sim.NS, 100 * sim.NS} {
		for _, parts := range []int{1, 2} {
			b.Run(fmt.Sprintf("lookahead=%v/partitions=%d", lat, parts), func(b *testing.B) {
				var ticks uint64
				for i := 0; i < b.N; i++ {
					w := ring(64, parts, lat)
					w.Run(200 * sim.US)
					ticks += w.UnitTicks()
				}
				b.ReportMetric(float64(ticks)/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

func ring(n, parts int, lat sim.Tick) *sim.World {
	w := sim.NewWorld(1, sim.Partitions(parts))
	var drains []*sim.Unit
	var ds []*txnDrain
	var lasts []*sim.Unit
	var outs []**sim.Chan[sim.Txn]
	for d := 0; d < n; d++ {
		e := w.Domain(fmt.Sprintf("node%d", d))
		clk := e.NewClock("clk", 1000, 0)
		p := &txnPump{e: e, n: 1 << 30}
		prev, prevOut := clk.Add(fmt.Sprintf("node%d.pump", d), p), &p.out
		for i := 0; i < 4; i++ {
			r := &relay{}
			u := clk.Add(fmt.Sprintf("node%d.relay%d", d, i), r)
			ch := sim.NewChan[sim.Txn](prev, u, fmt.Sprintf("node%d.ch%d", d, i), 2)
			*prevOut, r.in = ch, ch
			prev, prevOut = u, &r.out
		}
		dr := &txnDrain{}
		du := clk.Add(fmt.Sprintf("node%d.drain", d), dr)
		drains, ds = append(drains, du), append(ds, dr)
		lasts = append(lasts, prev)
		outs = append(outs, prevOut)
	}
	for d := 0; d < n; d++ {
		du := drains[(d+1)%n]
		depth := int(2*lat/sim.NS) + 2 // credits for a round trip: full rate
		ch := sim.NewLink[sim.Txn](lasts[d], du, fmt.Sprintf("link%d", d), depth, lat)
		*outs[d] = ch
		ds[(d+1)%n].in = ch
	}
	return w
}

// lazyPump sends n items, sleeping whenever the channel is full: it relies
// on being woken when space frees.
type lazyPump struct {
	out  *sim.Chan[int]
	n, i int
}

func (p *lazyPump) Tick(sim.Tick) bool {
	if p.i < p.n && p.out.Ready() {
		p.out.Send(p.i)
		p.i++
		return p.i < p.n
	}
	return false
}
