package bglml

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TestAlltoall: every order delivers every block (Alltoall checks each
// byte) on a torus and a mesh, with messages of one packet, eager and
// rendezvous; the links' busy time adds up to at least the payload
// every node sends over its first hop.
func TestAlltoall(t *testing.T) {
	for _, mesh := range []bool{false, true} {
		for _, size := range []int{100, 700, 2000} {
			for _, order := range []AlltoallOrder{Pairwise, Posted, Spread} {
				spec := bgl.DefaultSpec(4, 2, 2)
				spec.Torus.Mesh = mesh
				r, err := Alltoall(spec, DefaultParams(), DefaultCosts(), size, order, 1)
				if err != nil {
					t.Fatalf("mesh %v, %d B, %v: %v", mesh, size, order, err)
				}
				if r.Time == 0 || len(r.Links) == 0 {
					t.Fatalf("mesh %v, %d B, %v: no time or links", mesh, size, order)
				}
				t.Log(fmt.Sprintf("mesh %v %5d B %-8v %v", mesh, size, order, r.Time))
			}
		}
	}
}

// TestAlltoallPaced: the optimised order paced to the bisection bound
// (AlltoallPace) and clocked by reception (AlltoallWindow) beats it
// open loop (neither) on the 4×4×4 mesh with four-packet messages (the
// network no longer fills up: fewer packets in it at the fullest, fewer
// adaptive packets pushed onto the escape channel), and neither beats
// the bound; the cut's samples cover the run and do not change it.
func TestAlltoallPaced(t *testing.T) {
	spec := bgl.DefaultSpec(4, 4, 4)
	spec.Torus.Mesh = true
	var res [2]AlltoallResult
	for k, open := range []bool{false, true} {
		r, err := AlltoallWith(spec, DefaultParams(), DefaultCosts(), 952, Spread, 1, AlltoallOptions{Sample: 25 * sim.US, Unpaced: open, Unwindowed: open})
		if err != nil {
			t.Fatal(err)
		}
		if r.Time < BisectionTime(spec, 952) {
			t.Errorf("open %v: %v, under the bisection bound %v", open, r.Time, BisectionTime(spec, 952))
		}
		if n := len(r.Cut); n == 0 || sim.Tick(n)*25*sim.US < r.Time || r.InNet[n-1] != 0 || len(r.InInj) != n || len(r.InRec) != n {
			t.Fatalf("open %v: %d samples of a %v run, %v left in the network", open, n, r.Time, r.InNet)
		}
		res[k] = r
	}
	// Sampling only looks: the run is the unsampled one's.
	plain, err := Alltoall(spec, DefaultParams(), DefaultCosts(), 952, Spread, 1)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Time != res[0].Time || fmt.Sprint(plain.Links) != fmt.Sprint(res[0].Links) {
		t.Errorf("sampled: %v, unsampled: %v (or their links differ)", res[0].Time, plain.Time)
	}
	peak := func(r AlltoallResult) int { return slices.Max(r.InNet) }
	if res[0].Time >= res[1].Time || peak(res[0]) >= peak(res[1]) || res[0].Escaped >= res[1].Escaped {
		t.Errorf("paced and windowed %v (at most %d packets in the network, %d escapes), open loop %v (%d, %d)",
			res[0].Time, peak(res[0]), res[0].Escaped, res[1].Time, peak(res[1]), res[1].Escaped)
	}
	t.Logf("paced and windowed %v, open loop %v; bound %v", res[0].Time, res[1].Time, BisectionTime(spec, 952))
}

// TestAlltoallWindow: on a long run (4×4×4 mesh, 4,792-byte messages,
// 20 packets each) the paced network fills up without the reception
// window, and its adaptive packets fall onto the escape channel; with
// the window it holds far fewer packets at its fullest, escapes less and
// finishes sooner.
func TestAlltoallWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of 3 simulated ms on 64 nodes")
	}
	spec := bgl.DefaultSpec(4, 4, 4)
	spec.Torus.Mesh = true
	var res [2]AlltoallResult
	for k, unwindowed := range []bool{false, true} {
		r, err := AlltoallWith(spec, DefaultParams(), DefaultCosts(), 4792, Spread, 1, AlltoallOptions{Sample: 100 * sim.US, Unwindowed: unwindowed})
		if err != nil {
			t.Fatal(err)
		}
		res[k] = r
	}
	peak := func(r AlltoallResult) int { return slices.Max(r.InNet) }
	if res[0].Time >= res[1].Time || 2*peak(res[0]) >= peak(res[1]) || 2*res[0].Escaped >= res[1].Escaped {
		t.Errorf("windowed %v (at most %d packets in the network, %d escapes), unwindowed %v (%d, %d)",
			res[0].Time, peak(res[0]), res[0].Escaped, res[1].Time, peak(res[1]), res[1].Escaped)
	}
	b := BisectionTime(spec, 4792)
	t.Logf("windowed %v (%.1f %%), unwindowed %v (%.1f %%)", res[0].Time, 100*float64(b)/float64(res[0].Time), res[1].Time, 100*float64(b)/float64(res[1].Time))
}

// TestAlltoallWindowSize: the window is the injection FIFOs' 24 full
// packets in paces: 24 on the 4×4×4 mesh at every size (a node's share
// of the bisection is about a link's rate: 1,080 cycles a packet against
// a pace of 1,060 to 1,095), 12 on 8×8×8 (a pace of 2,146 cycles), never
// more than the FIFOs hold (a 2×2×2 mesh's pace is under a link's
// packet time), and smaller FIFOs make it smaller.
func TestAlltoallWindowSize(t *testing.T) {
	for _, c := range []struct {
		dims     [3]int
		size     int
		inj, win int
	}{
		{[3]int{4, 4, 4}, 232, 32, 24},
		{[3]int{4, 4, 4}, 952, 32, 24},
		{[3]int{4, 4, 4}, 1912, 32, 24},
		{[3]int{4, 4, 4}, 4792, 32, 24},
		{[3]int{8, 8, 8}, 952, 32, 12},
		{[3]int{2, 2, 2}, 952, 32, 24},
		{[3]int{8, 8, 8}, 952, 16, 6},
	} {
		spec := bgl.DefaultSpec(c.dims[0], c.dims[1], c.dims[2])
		spec.Torus.Mesh = true
		spec.Torus.InjChunks = c.inj
		if got := AlltoallWindow(spec, c.size); got != c.win {
			t.Errorf("%v, %d B, FIFOs of %d chunks: window %d, want %d (pace %v)", c.dims, c.size, c.inj, got, c.win, AlltoallPace(spec, c.size))
		}
	}
}

// TestWindow: a node with a reception window of 2 writes two packets of
// a five-packet message, then waits (dozing, or polling) for packets to
// read: its last packet is written only after its peer's message, sent
// 50 µs later, arrives; without the window long before. Both messages
// complete.
func TestWindow(t *testing.T) {
	const late = 50 * sim.US
	for _, c := range []struct {
		window int
		spin   bool
	}{{0, false}, {2, false}, {2, true}} {
		m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		params := DefaultParams()
		params.Adaptive, params.Interleave, params.Window, params.Spin = true, true, c.window, c.spin
		var done, sent [2]sim.Tick
		var ls [2]*Layer
		for i := range ls {
			nd := m.Nodes[i]
			buf := nd.Alloc(1200)
			var p0 *cpu.Proc
			l, err := New(m, i, params, DefaultCosts(), func(int, []byte, int) (uint64, func()) {
				return buf, func() { done[i] = p0.Now() }
			})
			if err != nil {
				t.Fatal(err)
			}
			ls[i] = l
			nd.Cores[0].Spawn("window", func(p *cpu.Proc) {
				p0 = p
				if i == 1 {
					p.Sleep(late)
				}
				if err := l.Send(p, &Message{Dst: 1 - i, Addr: buf, Len: 1100, Unordered: true, Done: func() { sent[i] = p.Now() }}); err != nil {
					t.Error(err)
				}
				l.Until(p, func() bool { return done[i] > 0 })
				l.Until(p, l.Idle)
			})
		}
		m.World.Run(sim.S)
		if done[0] == 0 || done[1] == 0 {
			t.Fatalf("window %d: the messages completed at %v", c.window, done)
		}
		if held := sent[0] > late; held != (c.window > 0) {
			t.Errorf("window %d (spin %v): node 0's last packet written at %v, node 1 sends at %v", c.window, c.spin, sent[0], late)
		}
		if got := ls[0].Stats.Packets; got != 5 {
			t.Errorf("window %d: node 0 wrote %d packets, want 5", c.window, got)
		}
	}
}

// TestPacedDozeMatchesSpin: a paced node dozes until its next packet's
// time, with the run the polling loop gives to the picosecond.
func TestPacedDozeMatchesSpin(t *testing.T) {
	spec := bgl.DefaultSpec(4, 3, 2)
	spec.Torus.Mesh = true
	for _, c := range []struct {
		size   int
		strict bool
		window int
	}{{200, false, 0}, {952, false, 0}, {2000, false, 0}, {952, true, 0}, {952, false, 2}} {
		size := c.size
		var out [2]string
		for k, spin := range []bool{true, false} {
			params := DefaultParams()
			params.Spin, params.PaceStrict, params.Window = spin, c.strict, c.window
			r, err := Alltoall(spec, params, DefaultCosts(), size, Spread, 1)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = fmt.Sprint(r)
		}
		if out[0] != out[1] {
			t.Errorf("%d B (strict %v, window %d): polling and dozing differ", size, c.strict, c.window)
		}
	}
}

// TestPace: a node paced at P writes the k-th packet of a message no
// earlier than k × P after the first, so a five-packet message to a
// neighbour completes no earlier than 4P after it is posted; unpaced it
// takes far less. An unordered adaptive-eager message takes no
// confirmation, an ordered one does.
func TestPace(t *testing.T) {
	const pace = 20 * sim.US
	run := func(pace sim.Tick, unordered bool) (sim.Tick, Stats) {
		m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1))
		if err != nil {
			t.Fatal(err)
		}
		params := DefaultParams()
		params.Adaptive, params.Interleave, params.Pace = true, true, pace
		var done sim.Tick
		var ls [2]*Layer
		for i := range ls {
			nd := m.Nodes[i]
			buf := nd.Alloc(1200)
			var p0 *cpu.Proc
			l, err := New(m, i, params, DefaultCosts(), func(int, []byte, int) (uint64, func()) {
				return buf, func() { done = p0.Now() }
			})
			if err != nil {
				t.Fatal(err)
			}
			ls[i] = l
			nd.Cores[0].Spawn("pace", func(p *cpu.Proc) {
				p0 = p
				if i == 0 {
					if err := l.Send(p, &Message{Dst: 1, Addr: buf, Len: 1100, Unordered: unordered}); err != nil {
						t.Error(err)
					}
					l.Until(p, l.Idle)
					return
				}
				l.Until(p, func() bool { return done > 0 })
				l.Until(p, l.Idle)
			})
		}
		m.World.Run(sim.S)
		return done, ls[1].Stats
	}
	paced, st := run(pace, false)
	unpaced, _ := run(0, false)
	if paced < 4*pace || unpaced >= pace {
		t.Errorf("five packets paced at %v: done at %v; unpaced at %v", pace, paced, unpaced)
	}
	t.Logf("paced at %v: done at %v; unpaced at %v", pace, paced, unpaced)
	if st.Packets != 1 {
		t.Errorf("an ordered adaptive-eager message: the receiver wrote %d packets, want its confirmation", st.Packets)
	}
	if _, st := run(pace, true); st.Packets != 0 {
		t.Errorf("an unordered adaptive-eager message: the receiver wrote %d packets, want none", st.Packets)
	}
}

// BenchmarkAlltoallFull runs the optimised alltoall on the 8×8×8 mesh
// (952 B, Figure 6's) with the cut sampled every 250 µs and its
// crossings noted: as by default (paced, windowed), under the routers'
// other selections (xfirst, xlast, hops), with the window 20 % smaller
// and larger, without the window, and strictly paced without it; a
// measurement of several minutes of CPU each, so a benchmark, not a
// test: `go test ./msg/bglml -run '^$' -bench AlltoallFull/paced
// -benchtime 1x -timeout 0 -v`.
func BenchmarkAlltoallFull(b *testing.B) {
	spec := bgl.DefaultSpec(8, 8, 8)
	spec.Torus.Mesh = true
	w := AlltoallWindow(spec, 952)
	for _, c := range []struct {
		name       string
		window     int
		unwindowed bool
		strict     bool
		sel        torus.Selection
	}{
		{"paced", 0, false, false, torus.SelectTokens},
		{"xfirst", 0, false, false, torus.SelectXFirst},
		{"xlast", 0, false, false, torus.SelectXLast},
		{"hops", 0, false, false, torus.SelectHops},
		{fmt.Sprintf("window=%d", (4*w+2)/5), (4*w + 2) / 5, false, false, torus.SelectTokens},
		{fmt.Sprintf("window=%d", (6*w+2)/5), (6*w + 2) / 5, false, false, torus.SelectTokens},
		{"unwindowed", 0, true, false, torus.SelectTokens},
		{"strict", 0, true, true, torus.SelectTokens},
	} {
		b.Run(c.name, func(b *testing.B) {
			params := DefaultParams()
			params.PaceStrict, params.Window = c.strict, c.window
			spec := spec
			spec.Torus.Selection = c.sel
			for i := 0; i < b.N; i++ {
				r, err := AlltoallWith(spec, params, DefaultCosts(), 952, Spread, 1, AlltoallOptions{Sample: 250 * sim.US, Unwindowed: c.unwindowed, Crossings: true})
				if err != nil {
					b.Fatal(err)
				}
				bound := BisectionTime(spec, 952)
				if r.Time < bound {
					b.Fatalf("%v, under the bound %v", r.Time, bound)
				}
				b.ReportMetric(100*float64(bound)/float64(r.Time), "%-of-bound")
				b.ReportMetric(float64(r.Escaped), "escapes")
				for i := range r.Cut {
					b.Logf("%5d µs: cut %5.1f %%, %6d packets in the network (%d in injection FIFOs, %d in reception FIFOs)", (i+1)*250, 100*r.Cut[i], r.InNet[i], r.InInj[i], r.InRec[i])
				}
				lo, mean, hi, top := cutSpread(r, spec)
				b.Logf("%v (bound %v); cut links busy %.0f to %.0f %% of the run (mean %.0f %%), the busiest link %.0f %%", r.Time, bound, 100*lo, 100*hi, 100*mean, 100*top)
				cr := r.Crossings
				n := cr.AtSrc + cr.AtDst + cr.AtBoth + cr.Elsewhere
				l := loadOf(cr, spec, 952)
				b.Logf("crossed at the source's (y,z) %s %%, the destination's %s %%, both %s %%, elsewhere %s %%; offsets from the source %v; cut link cycles %d..%d mean %d (mean/most %.3f), the busiest link allows %.1f %%",
					pc(cr.AtSrc, n), pc(cr.AtDst, n), pc(cr.AtBoth, n), pc(cr.Elsewhere, n), cr.Offset, l.lo, l.hi, l.mean, float64(l.mean)/float64(l.hi), 100*l.ceiling)
				b.Logf("the cut's links busy, both ways' mean, %% of the run (a row per z, y across):\n%s", cutMap(cr, spec, r.Time))
			}
		})
	}
}

// cutSpread is the least, mean and most utilisation over the run of the
// links across the middle of x (both ways), and the busiest link's.
func cutSpread(r AlltoallResult, spec bgl.Spec) (lo, mean, hi, top float64) {
	mid := spec.Torus.Dims[0]/2 - 1
	lo = 1
	n := 0
	for _, l := range r.Links {
		u := float64(l.Busy) / float64(r.Time)
		top = max(top, u)
		if l.At[0] == mid && l.Port == torus.XPlus || l.At[0] == mid+1 && l.Port == torus.XMinus {
			lo, hi, mean = min(lo, u), max(hi, u), mean+u
			n++
		}
	}
	return lo, mean / float64(n), hi, top
}
