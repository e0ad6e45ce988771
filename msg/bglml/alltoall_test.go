package bglml

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
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
// (AlltoallPace) beats it unpaced on the 4×4×4 mesh with four-packet
// messages (the network no longer fills up: fewer packets in it at the
// fullest, fewer adaptive packets pushed onto the escape channel), and
// neither beats the bound; the cut's samples cover the run
// and do not change it.
func TestAlltoallPaced(t *testing.T) {
	spec := bgl.DefaultSpec(4, 4, 4)
	spec.Torus.Mesh = true
	var res [2]AlltoallResult
	for k, unpaced := range []bool{false, true} {
		r, err := AlltoallWith(spec, DefaultParams(), DefaultCosts(), 952, Spread, 1, AlltoallOptions{Sample: 25 * sim.US, Unpaced: unpaced})
		if err != nil {
			t.Fatal(err)
		}
		if r.Time < BisectionTime(spec, 952) {
			t.Errorf("unpaced %v: %v, under the bisection bound %v", unpaced, r.Time, BisectionTime(spec, 952))
		}
		if n := len(r.Cut); n == 0 || sim.Tick(n)*25*sim.US < r.Time || r.InNet[n-1] != 0 || len(r.InInj) != n || len(r.InRec) != n {
			t.Fatalf("unpaced %v: %d samples of a %v run, %v left in the network", unpaced, n, r.Time, r.InNet)
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
		t.Errorf("paced %v (at most %d packets in the network, %d escapes), unpaced %v (%d, %d)",
			res[0].Time, peak(res[0]), res[0].Escaped, res[1].Time, peak(res[1]), res[1].Escaped)
	}
	t.Logf("paced %v, unpaced %v; bound %v", res[0].Time, res[1].Time, BisectionTime(spec, 952))
}

// TestPacedDozeMatchesSpin: a paced node dozes until its next packet's
// time, with the run the polling loop gives to the picosecond.
func TestPacedDozeMatchesSpin(t *testing.T) {
	spec := bgl.DefaultSpec(4, 3, 2)
	spec.Torus.Mesh = true
	for _, c := range []struct {
		size   int
		strict bool
	}{{200, false}, {952, false}, {2000, false}, {952, true}} {
		size := c.size
		var out [2]string
		for k, spin := range []bool{true, false} {
			params := DefaultParams()
			params.Spin, params.PaceStrict = spin, c.strict
			r, err := Alltoall(spec, params, DefaultCosts(), size, Spread, 1)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = fmt.Sprint(r)
		}
		if out[0] != out[1] {
			t.Errorf("%d B (strict %v): polling and dozing differ", size, c.strict)
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
// (952 B, Figure 6's) with the cut sampled every 250 µs, paced as by
// default and strictly; a measurement of several minutes of CPU each, so
// a benchmark, not a test: `go test ./msg/bglml -run '^$' -bench
// AlltoallFull/paced -benchtime 1x -timeout 0 -v`.
func BenchmarkAlltoallFull(b *testing.B) {
	for _, strict := range []bool{false, true} {
		name := map[bool]string{false: "paced", true: "strict"}[strict]
		b.Run(name, func(b *testing.B) {
			spec := bgl.DefaultSpec(8, 8, 8)
			spec.Torus.Mesh = true
			params := DefaultParams()
			params.PaceStrict = strict
			for i := 0; i < b.N; i++ {
				r, err := AlltoallWith(spec, params, DefaultCosts(), 952, Spread, 1, AlltoallOptions{Sample: 250 * sim.US})
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
			}
		})
	}
}
