package sim_test

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// relay forwards one transaction per cycle from In to Out.
type relay struct{ in, out *sim.Chan[sim.Txn] }

func (r *relay) Tick(sim.Tick) bool {
	if r.in.Valid() && r.out.Ready() {
		r.out.Send(r.in.Recv())
	}
	return false
}

type txnPump struct {
	out  *sim.Chan[sim.Txn]
	e    *sim.Engine
	n, i int
}

func (p *txnPump) Tick(sim.Tick) bool {
	if p.i < p.n && p.out.Ready() {
		p.out.Send(p.e.NewTxn(0, "bench", "pump"))
		p.i++
	}
	return p.i < p.n
}

type txnDrain struct {
	in  *sim.Chan[sim.Txn]
	got int
}

func (d *txnDrain) Tick(sim.Tick) bool {
	if d.in.Valid() {
		d.in.Recv()
		d.got++
	}
	return false
}

// chain builds pump → 8 relays → drain with depth-2 channels on one clock:
// 9 handshakes per transaction.
func chain(n int, tracer sim.Tracer) (*sim.Engine, *txnDrain) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 1000, 0)
	p := &txnPump{e: e, n: n}
	pu := clk.Add("pump", p)
	prev, prevOut := pu, &p.out
	for i := 0; i < 8; i++ {
		r := &relay{}
		u := clk.Add("relay"+string(rune('0'+i)), r)
		ch := sim.NewChan[sim.Txn](prev, u, "ch"+string(rune('0'+i)), 2)
		*prevOut, r.in = ch, ch
		prev, prevOut = u, &r.out
	}
	d := &txnDrain{}
	du := clk.Add("drain", d)
	ch := sim.NewChan[sim.Txn](prev, du, "ch8", 2)
	*prevOut, d.in = ch, ch
	if tracer != nil {
		e.AttachTracer(tracer)
	}
	return e, d
}

// nothing is a tracer that selects no signal: tracing attached, nothing dumped.
type nothing struct{}

func (nothing) Declare(string, int) (int, bool) { return 0, false }
func (nothing) Set(uint64, int, uint64)         {}
func (nothing) SetXZ(uint64, int, bool)         {}

func benchChain(b *testing.B, tracer sim.Tracer) {
	const perRun = 100_000
	b.ReportAllocs()
	var hops float64
	for i := 0; i < b.N; i++ {
		e, d := chain(perRun, tracer)
		e.Run(sim.Never - 1)
		if d.got != perRun {
			b.Fatalf("drained %d of %d", d.got, perRun)
		}
		hops += 9 * perRun
	}
	b.ReportMetric(hops/b.Elapsed().Seconds(), "handshakes/s")
	b.ReportMetric(float64(b.N*perRun)/b.Elapsed().Seconds(), "txn/s")
}

// BenchmarkChain8 moves transactions through a chain of 8 blocks. Compare
// `go test -bench Chain8` with `go test -tags notrace -bench Chain8` for the
// cost of the tracing hooks when tracing is off.
func BenchmarkChain8(b *testing.B) { benchChain(b, nil) }

// BenchmarkChain8NothingSelected attaches a tracer whose filter selects no
// signal (e.g. --trace on another block).
func BenchmarkChain8NothingSelected(b *testing.B) { benchChain(b, nothing{}) }

// sleeper sleeps until its far timer; idle blocks of a mostly idle system.
type idleBlock struct{}

func (idleBlock) Tick(sim.Tick) bool { return false }

type ticker struct{ n int }

func (t *ticker) Tick(sim.Tick) bool { t.n++; return true }

// BenchmarkIdle1000 runs 1,000 idle blocks beside one busy block for one
// simulated microsecond per iteration (250 cycles of a 250 MHz clock). With
// idle skipping the idle blocks cost nothing after their first edge.
func BenchmarkIdle1000(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []sim.Option
	}{{"skipping", nil}, {"ticking-every-cycle", []sim.Option{sim.NoIdleSkip()}}} {
		b.Run(mode.name, func(b *testing.B) {
			e := sim.NewEngine(1, mode.opts...)
			clk := e.NewClock("clk", 4000, 0)
			for i := 0; i < 1000; i++ {
				clk.Add("idle"+itoa(i), idleBlock{})
			}
			clk.Add("busy", &ticker{})
			e.Run(sim.US) // elaboration and first edge out of the loop
			b.ResetTimer()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				e.Run(e.Now() + sim.US)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/simulated-us")
		})
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// Steady-state handshakes allocate nothing.
func TestChainDoesNotAllocatePerTransaction(t *testing.T) {
	e, d := chain(1<<30, nil)
	e.Run(100 * sim.NS) // warm up: buffers and heaps at their final size
	allocs := testing.AllocsPerRun(100, func() { e.Run(e.Now() + 100*sim.NS) })
	if allocs != 0 {
		t.Fatalf("%.1f allocations per 100 cycles of streaming", allocs)
	}
	if d.got == 0 {
		t.Fatal("nothing streamed")
	}
}

// FuzzParseTick: durations never crash the parser, and what it accepts it
// prints back to the same value.
func FuzzParseTick(f *testing.F) {
	for _, s := range []string{"250ns", "3us", "12", "1s", "18446744073709551615ps", "1 ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := sim.ParseTick(s)
		if err != nil {
			return
		}
		back, err := sim.ParseTick(v.String())
		if v != sim.Never && (err != nil || back != v) {
			t.Fatalf("%q → %v → %v, %v", s, v, back, err)
		}
	})
}
