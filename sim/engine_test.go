package sim_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/demo"
	"github.com/aaemu/aaemu/sim"
)

// recorder is a Tracer that keeps every value change as text, so two runs can
// be compared line by line.
// Like a VCD, it keeps one value per signal and time step: the last one set.
type recorder struct {
	names   []string
	last    []string
	log     []string
	now     uint64
	pending map[int]string
}

func (r *recorder) Declare(path string, width int) (int, bool) {
	r.names = append(r.names, path)
	r.last = append(r.last, "")
	return len(r.names) - 1, true
}

func (r *recorder) put(t uint64, id int, v string) {
	if t != r.now {
		r.flush()
		r.now = t
	}
	if r.pending == nil {
		r.pending = map[int]string{}
	}
	r.pending[id] = v
}

func (r *recorder) flush() {
	ids := make([]int, 0, len(r.pending))
	for id := range r.pending {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		if v := r.pending[id]; r.last[id] != v {
			r.last[id] = v
			r.log = append(r.log, fmt.Sprintf("%d %s %s", r.now, r.names[id], v))
		}
	}
	clear(r.pending)
}

func (r *recorder) Set(t uint64, id int, v uint64) { r.put(t, id, fmt.Sprint(v)) }
func (r *recorder) SetXZ(t uint64, id int, z bool) {
	if z {
		r.put(t, id, "z")
	} else {
		r.put(t, id, "x")
	}
}

func runDemo(t *testing.T, cfg demo.Config, seed uint64, opts ...sim.Option) (*demo.Pipeline, *sim.Engine, *recorder) {
	return runDemoUntil(t, cfg, seed, 10*sim.MS, opts...)
}

func runDemoUntil(t *testing.T, cfg demo.Config, seed uint64, limit sim.Tick, opts ...sim.Option) (*demo.Pipeline, *sim.Engine, *recorder) {
	t.Helper()
	e := sim.NewEngine(seed, opts...)
	p, err := demo.Build(e, "top", cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	e.AttachTracer(rec)
	e.Run(limit)
	rec.flush()
	return p, e, rec
}

// Handshakes lose and duplicate nothing, with and without backpressure.
func TestHandshakeNoLossNoDuplication(t *testing.T) {
	cases := []struct {
		name               string
		stages, depth, pct int
		interval           uint64
	}{
		{"direct-no-backpressure", 0, 2, 100, 1},
		{"depth1-half-rate", 4, 1, 100, 1},
		{"depth2-full-rate", 8, 2, 100, 1},
		{"heavy-backpressure", 8, 2, 10, 1},
		{"deep-fifos-backpressure", 3, 16, 35, 1},
		{"sparse-source", 5, 2, 60, 7},
		{"long-chain", 64, 3, 80, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := demo.DefaultConfig()
			cfg.Stages, cfg.Depth, cfg.SinkReadyPct, cfg.IntervalCy, cfg.Items = tc.stages, tc.depth, tc.pct, tc.interval, 500
			p, _, _ := runDemo(t, cfg, 7)
			if err := p.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The order in which blocks are evaluated inside a time step must not matter.
func TestEvaluationOrderDoesNotChangeResults(t *testing.T) {
	cfg := demo.DefaultConfig()
	cfg.Items = 300
	_, _, a := runDemo(t, cfg, 3)
	_, _, b := runDemo(t, cfg, 3, sim.ReverseOrder())
	diffLogs(t, a.log, b.log)
}

// Idle skipping must give exactly the traces of evaluating every block on
// every edge, while doing less work.
func TestIdleSkippingMatchesTickingEveryCycle(t *testing.T) {
	cfg := demo.DefaultConfig()
	cfg.Items, cfg.IntervalCy = 200, 5
	// Ticking every cycle never goes quiet, so both runs stop at one limit.
	_, e1, a := runDemoUntil(t, cfg, 11, 20*sim.US)
	_, e2, b := runDemoUntil(t, cfg, 11, 20*sim.US, sim.NoIdleSkip())
	diffLogs(t, a.log, b.log)
	if e1.UnitTicks() >= e2.UnitTicks() {
		t.Errorf("idle skipping did %d unit evaluations, ticking every cycle %d: expected fewer", e1.UnitTicks(), e2.UnitTicks())
	}
}

// diffLogs compares two traces. Changes that happen at the same time are
// compared as a set: within one time step their order carries no meaning.
func diffLogs(t *testing.T, a, b []string) {
	t.Helper()
	a, b = canonical(a), canonical(b)
	if len(a) == 0 {
		t.Fatal("no trace recorded")
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			t.Fatalf("traces diverge at change %d: %q vs %q", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		t.Fatalf("traces have %d and %d changes", len(a), len(b))
	}
}

func canonical(log []string) []string {
	out := append([]string(nil), log...)
	sort.SliceStable(out, func(i, j int) bool {
		ti, _, _ := strings.Cut(out[i], " ")
		tj, _, _ := strings.Cut(out[j], " ")
		if len(ti) != len(tj) {
			return len(ti) < len(tj)
		}
		if ti != tj {
			return ti < tj
		}
		return out[i] < out[j]
	})
	return out
}

// Same seed, same trace; another seed, another trace (the sink's ready is random).
func TestDeterministicBySeed(t *testing.T) {
	cfg := demo.DefaultConfig()
	_, _, a := runDemo(t, cfg, 5)
	_, _, b := runDemo(t, cfg, 5)
	_, _, c := runDemo(t, cfg, 6)
	if strings.Join(a.log, "\n") != strings.Join(b.log, "\n") {
		t.Fatal("same seed gave different traces")
	}
	if strings.Join(a.log, "\n") == strings.Join(c.log, "\n") {
		t.Fatal("different seeds gave identical traces: the seed is not used")
	}
}

// counterBlock sends one value per cycle until n, used for throughput checks.
type pump struct {
	out  *sim.Chan[int]
	n, i int
}

func (p *pump) Tick(sim.Tick) bool {
	if p.i < p.n && p.out.Ready() {
		p.out.Send(p.i)
		p.i++
	}
	return p.i < p.n
}

type drain struct {
	in   *sim.Chan[int]
	got  []int
	at   []sim.Tick
	stop int
}

func (d *drain) Tick(now sim.Tick) bool {
	if d.in.Valid() {
		d.got = append(d.got, d.in.Recv())
		d.at = append(d.at, now)
	}
	return false
}

// A depth-1 channel passes one item every other cycle; depth 2 sustains one
// per cycle, as registered-ready FIFOs do in RTL. Latency adds cycles.
func TestChannelThroughputAndLatency(t *testing.T) {
	cases := []struct {
		depth, lat int
		wantFirst  sim.Tick // time the first item arrives
		wantLast   sim.Tick // time the 10th arrives
	}{
		{1, 1, 10, 190},
		{2, 1, 10, 100},
		{4, 1, 10, 100},
		{2, 3, 30, 200}, // 3-cycle latency: pairs of items per round trip
		{4, 3, 30, 120},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("depth%d-lat%d", tc.depth, tc.lat), func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 10, 0)
			p := &pump{n: 10}
			d := &drain{}
			pu := clk.Add("pump", p)
			du := clk.Add("drain", d)
			ch := sim.NewChan[int](pu, du, "ch", tc.depth, sim.LatencyCycles(tc.lat))
			p.out, d.in = ch, ch
			e.Run(sim.US)
			if len(d.got) != 10 {
				t.Fatalf("got %d items", len(d.got))
			}
			for i, v := range d.got {
				if v != i {
					t.Fatalf("item %d is %d", i, v)
				}
			}
			if d.at[0] != tc.wantFirst || d.at[9] != tc.wantLast {
				t.Errorf("first at %v, last at %v; want %v and %v", d.at[0], d.at[9], tc.wantFirst, tc.wantLast)
			}
		})
	}
}

// swapper exchanges two registers owned by two units: a classic test that
// register semantics do not depend on evaluation order.
type swapper struct {
	mine, other *sim.Reg[uint8]
	cycles      int
}

func (s *swapper) Tick(sim.Tick) bool {
	s.mine.D(s.other.Q())
	s.cycles--
	return s.cycles > 0
}

func TestRegistersSwapRegardlessOfOrder(t *testing.T) {
	for _, opts := range [][]sim.Option{nil, {sim.ReverseOrder()}} {
		e := sim.NewEngine(1, opts...)
		clk := e.NewClock("clk", 10, 0)
		a, b := &swapper{cycles: 3}, &swapper{cycles: 3}
		ua, ub := clk.Add("a", a), clk.Add("b", b)
		a.mine = sim.NewReg(ua, "v", uint8(1))
		b.mine = sim.NewReg(ub, "v", uint8(2))
		a.other, b.other = b.mine, a.mine
		e.Run(sim.US)
		// Three swaps: 1,2 → 2,1 → 1,2 → 2,1.
		if a.mine.Q() != 2 || b.mine.Q() != 1 {
			t.Fatalf("after 3 swaps a=%d b=%d, want 2 and 1", a.mine.Q(), b.mine.Q())
		}
	}
}

type sleeper struct {
	u     *sim.Unit
	woken []sim.Tick
}

func (s *sleeper) Tick(now sim.Tick) bool {
	s.woken = append(s.woken, now)
	if len(s.woken) == 1 {
		s.u.WakeAt(now + 95) // not on an edge: the next edge at or after is 100
		s.u.WakeAt(now + 1000)
	}
	return false
}

func TestTimersWakeOnTheNextEdge(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 10, 5)
	s := &sleeper{}
	s.u = clk.Add("s", s)
	end := e.Run(sim.MS)
	want := []sim.Tick{5, 105, 1005}
	if fmt.Sprint(s.woken) != fmt.Sprint(want) {
		t.Fatalf("woken at %v, want %v", s.woken, want)
	}
	if end != 1005 {
		t.Fatalf("run ended at %v", end)
	}
	if got := clk.Cycles(1005); got != 101 {
		t.Fatalf("cycles elapsed = %d, want 101", got)
	}
	if clk.EdgesEvaluated() != 3 {
		t.Fatalf("edges evaluated = %d, want 3 (idle edges skipped)", clk.EdgesEvaluated())
	}
}

func TestNamesAreChecked(t *testing.T) {
	for _, bad := range []string{"", "a..b", "9x", "a.b[", "a b"} {
		if sim.CheckName(bad) == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	for _, good := range []string{"a", "cluster.node0.iommu", "node.nic[1].tx", "_hidden"} {
		if err := sim.CheckName(good); err != nil {
			t.Errorf("name %q rejected: %v", good, err)
		}
	}
}

func TestCausalLineage(t *testing.T) {
	e := sim.NewEngine(1)
	e.EnableTxnLog()
	call := e.NewTxn(0, "cpu.put", "cpu0")
	door := e.NewTxn(call.ID, "tlp.MWr", "cpu0")
	dma := e.NewTxn(door.ID, "tlp.MRd", "nic0")
	_ = e.NewTxn(0, "unrelated", "x")
	chain := e.Lineage(dma.ID)
	var kinds []string
	for _, r := range chain {
		kinds = append(kinds, r.Kind)
	}
	if strings.Join(kinds, "<-") != "tlp.MRd<-tlp.MWr<-cpu.put" {
		t.Fatalf("lineage %v", kinds)
	}
}

type counterBlock struct {
	n     uint64
	limit uint64
}

func (c *counterBlock) Tick(sim.Tick) bool { c.n++; return c.n < c.limit }

// A probe samples a block's own state after each evaluation; undefined values
// trace as x, and nothing is sampled without a tracer.
func TestProbe(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 10, 0)
	c := &counterBlock{limit: 4}
	u := clk.Add("cnt", c)
	calls := 0
	u.Probe("n", 8, func() (uint64, bool) { calls++; return c.n, c.n != 2 })
	rec := &recorder{}
	e.AttachTracer(rec)
	e.Run(sim.US)
	rec.flush()
	// Time 0 holds the initial value and then the value after the first
	// evaluation; like a VCD, the recorder keeps the last one.
	want := "0 cnt.n 1|10 cnt.n x|20 cnt.n 3|30 cnt.n 4"
	if got := strings.Join(rec.log, "|"); got != want {
		t.Fatalf("probe trace %s, want %s", got, want)
	}
	e2 := sim.NewEngine(1)
	clk2 := e2.NewClock("clk", 10, 0)
	c2 := &counterBlock{limit: 4}
	calls = 0
	clk2.Add("cnt", c2).Probe("n", 8, func() (uint64, bool) { calls++; return 0, true })
	e2.Run(sim.US)
	if calls != 0 {
		t.Fatalf("probe sampled %d times with no tracer", calls)
	}
}

// EdgeAtOrAfter answers from its last edge without dividing; whatever the
// order of queries, it equals the closed form.
func TestEdgeAtOrAfterMatchesClosedForm(t *testing.T) {
	for _, ck := range []struct{ period, phase sim.Tick }{{1000, 0}, {1000, 250}, {3333, 3332}, {1, 0}} {
		c := sim.NewEngine(1).NewClock("c", ck.period, ck.phase)
		r := sim.NewRand(7, "edges")
		t0 := sim.Tick(0)
		for i := 0; i < 20000; i++ {
			switch r.IntN(4) {
			case 0:
				t0 = sim.Tick(r.IntN(1 << 30)) // anywhere
			case 1:
				t0 += sim.Tick(r.IntN(int(2 * ck.period))) // a little later
			case 2:
				t0 -= min(t0, sim.Tick(r.IntN(int(2*ck.period)))) // a little earlier
			}
			want := ck.phase
			if t0 > ck.phase {
				want = ck.phase + (t0-ck.phase+ck.period-1)/ck.period*ck.period
			}
			if got := c.EdgeAtOrAfter(t0); got != want {
				t.Fatalf("period %d phase %d: EdgeAtOrAfter(%d) = %d, want %d", ck.period, ck.phase, t0, got, want)
			}
		}
	}
}
