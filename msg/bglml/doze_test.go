package bglml

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// mixed runs traffic that leaves nodes idle between bursts: each node
// computes for a random time, advances until a pass finds nothing, and
// posts a message of a random protocol to a random node, four times; then a torus broadcast,
// then waits for all it expects. It returns every completion (node,
// time, source, size), every statistic of the run, and the kernel's unit
// evaluations.
//
// With co, the nodes are in coprocessor mode and the rendezvous messages
// are whole lines, so that the coprocessor receives them and the main
// core learns of their end from the scratchpad.
func mixed(t *testing.T, dims torus.Coord, spin bool, seed int64, co bool) (string, uint64) {
	t.Helper()
	spec := bgl.DefaultSpec(dims[0], dims[1], dims[2])
	if co {
		spec = spec.WithMode(bgl.CoprocessorMode)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		t.Fatal(err)
	}
	n := len(m.Nodes)
	rng := rand.New(rand.NewSource(seed))
	type post struct {
		at, dst, size int
		proto         Protocol
	}
	plans := make([][]post, n)
	expect := make([]int, n)
	for i := range plans {
		for k := 0; k < 4; k++ {
			dst := rng.Intn(n - 1)
			if dst >= i {
				dst++
			}
			s := post{at: rng.Intn(8000), dst: dst, size: rng.Intn(3000), proto: Protocols[rng.Intn(len(Protocols))]}
			if s.proto == OnePacket {
				s.size %= torus.MaxPayload - FirstHeaderBytes + 1
			}
			if co && s.proto == Rendezvous {
				s.size &^= bgl.LineBytes - 1
			}
			plans[i] = append(plans[i], s)
			expect[dst]++
		}
	}
	params := DefaultParams()
	params.Spin = spin
	params.Coprocessor = co
	var lines []string // completions: each node's domain runs on its own, so sorted
	var failed error
	for i := range m.Nodes {
		i := i
		nd := m.Nodes[i]
		got := 0
		var pp *cpu.Proc
		l, err := New(m, i, params, DefaultCosts(), func(src int, _ []byte, size int) (uint64, func()) {
			return nd.Alloc(max(size, 1)), func() {
				got++
				lines = append(lines, fmt.Sprintf("node %3d t %12d from %3d size %d\n", i, pp.Now(), src, size))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		nd.Cores[0].Spawn("mixed", func(p *cpu.Proc) {
			pp = p
			buf := nd.Alloc(3000)
			for _, s := range plans[i] {
				p.Compute(s.at) // work between posts, then what came meanwhile
				for l.Advance(p) {
				}
				if err := l.Send(p, &Message{Dst: s.dst, Addr: buf, Len: s.size, Proto: s.proto}); err != nil {
					failed = err
				}
			}
			l.Until(p, func() bool { return got == expect[i] })
			l.Until(p, l.Idle)
		})
	}
	m.World.Run(100 * sim.MS)
	if failed != nil {
		t.Fatal(failed)
	}
	sort.Strings(lines)
	var log strings.Builder
	for _, s := range lines {
		log.WriteString(s)
	}
	for _, st := range m.World.Stats().All() {
		switch v := st.(type) {
		case *sim.Counter:
			fmt.Fprintf(&log, "%s %d\n", st.Name(), v.Value())
		case *sim.Histogram:
			fmt.Fprintf(&log, "%s %d %d\n", st.Name(), v.Count(), v.Sum())
		}
	}
	fmt.Fprintf(&log, "end %d\n", m.World.Now())
	return log.String(), m.World.UnitTicks()
}

// TestDozeMatchesSpinBcast: the same for the torus broadcast and the hot
// spot, whose nodes wait long for packets.
func TestDozeMatchesSpinBcast(t *testing.T) {
	spec := bgl.DefaultSpec(4, 4, 2)
	spec.Torus.Mesh = true
	for _, routes := range []int{1, 3} {
		var ts [2]sim.Tick
		for k, spin := range []bool{true, false} {
			params := DefaultParams()
			params.Spin = spin
			var err error
			if ts[k], err = BcastTime(spec, params, DefaultCosts(), routes, 5000, nil); err != nil {
				t.Fatal(err)
			}
		}
		if ts[0] != ts[1] {
			t.Errorf("broadcast over %d routes: polling %d ps, dozing %d ps", routes, ts[0], ts[1])
		}
	}
	var vs [2]float64
	for k, spin := range []bool{true, false} {
		params := DefaultParams()
		params.Spin = spin
		var err error
		if vs[k], err = HotSpot(bgl.DefaultSpec(4, 2, 2), params, DefaultCosts(), torus.Coord{}, Rendezvous, 3000, 2); err != nil {
			t.Fatal(err)
		}
	}
	if vs[0] != vs[1] {
		t.Errorf("hot spot: polling %v B/s, dozing %v B/s", vs[0], vs[1])
	}
}

// TestDozeMatchesSpin: dozing through the passes that can only find the
// reception FIFOs empty gives the run the polling loop gives, to the
// byte — every completion's time, every statistic (the cores' operations
// and busy time among them) — with fewer evaluations.
func TestDozeMatchesSpin(t *testing.T) {
	for _, c := range []struct {
		dims torus.Coord
		seed int64
		co   bool
	}{{torus.Coord{4, 2, 2}, 1, false}, {torus.Coord{3, 3, 2}, 2, false}, {torus.Coord{4, 4, 2}, 3, false},
		{torus.Coord{4, 2, 2}, 4, true}, {torus.Coord{4, 4, 2}, 5, true}} {
		name := fmt.Sprintf("%dx%dx%d", c.dims[0], c.dims[1], c.dims[2])
		if c.co {
			name += " coprocessor"
		}
		t.Run(name, func(t *testing.T) {
			spin, se := mixed(t, c.dims, true, c.seed, c.co)
			doze, de := mixed(t, c.dims, false, c.seed, c.co)
			if spin != doze {
				a, b := strings.Split(spin, "\n"), strings.Split(doze, "\n")
				for k := range min(len(a), len(b)) {
					if a[k] != b[k] {
						t.Fatalf("line %d: polling %q, dozing %q", k, a[k], b[k])
					}
				}
				t.Fatalf("polling gave %d lines, dozing %d", len(a), len(b))
			}
			if !strings.Contains(spin, ".busy_ps") || strings.Count(spin, " from ") != 4*c.dims[0]*c.dims[1]*c.dims[2] {
				t.Fatal("the comparison lacks the cores' statistics or messages")
			}
			t.Logf("unit evaluations: polling %d, dozing %d", se, de)
			if de >= se {
				t.Errorf("dozing took %d evaluations, polling %d", de, se)
			}
		})
	}
}
