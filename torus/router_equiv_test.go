package torus

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/waveforms"
)

// mixed queues, on every node, count packets of every kind the router
// handles: adaptive, deterministic, high-priority and deposit-bit ones (a
// deposit packet goes to a random node on a line through the source).
func (r *rig) mixed(count int) int {
	sp := r.net.Spec
	total := 0
	for i, g := range r.gen {
		rng := r.w.Rand(fmt.Sprintf("test.mixed.%d", i))
		src := r.net.CoordOf(i)
		for k := 0; k < count; k++ {
			var dst Coord
			kind := rng.Uint32N(4)
			if kind == 3 {
				// A line through the source, in a dimension longer than one.
				d := int(rng.Uint32N(3))
				for sp.Dims[d] == 1 {
					d = (d + 1) % 3
				}
				dst = src
				dst[d] = (src[d] + 1 + int(rng.Uint32N(uint32(sp.Dims[d]-1)))) % sp.Dims[d]
			} else {
				j := int(rng.Uint32N(uint32(len(r.gen) - 1)))
				if j >= i {
					j++
				}
				dst = r.net.CoordOf(j)
			}
			p := tagged(i, k, dst, int(rng.Uint32N(MaxPayload+1)))
			switch kind {
			case 0:
				p.Dynamic = true
			case 2:
				p.Priority = true
			case 3:
				p.Deposit = true
			}
			g.queue = append(g.queue, p)
			total++
		}
		g.fifo = func(p *Packet) int {
			if p.Priority {
				return sp.InjFIFOs + r.net.IndexOf(p.Dst)%sp.InjPriorityFIFOs
			}
			return r.net.IndexOf(p.Dst) % sp.InjFIFOs
		}
	}
	return total
}

// record runs the rig with the waveforms on and returns what it produced:
// every delivery (time, node, packet, FIFO, hops, ID), every counter and
// the VCD.
func (r *rig) record(t *testing.T) (log, stats, vcd []byte) {
	t.Helper()
	var v bytes.Buffer
	wr := waveforms.NewWriter(&v, waveforms.Options{})
	r.w.AttachTracer(wr)
	end := r.run(sim.S)
	if err := wr.Close(uint64(end)); err != nil {
		t.Fatal(err)
	}
	var l, s bytes.Buffer
	for j, g := range r.gen {
		for _, a := range g.got {
			fmt.Fprintf(&l, "%d %d %d/%d %d %d %v\n", a.at, j, a.src, a.seq, a.fifo, a.p.Hops, a.p.ID)
		}
	}
	for _, st := range r.w.Stats().All() {
		if c, ok := st.(*sim.Counter); ok {
			fmt.Fprintf(&s, "%s %d\n", st.Name(), c.Value())
		}
	}
	return l.Bytes(), s.Bytes(), v.Bytes()
}

// TestRouterMatchesReference runs the same traffic through the router and
// through the reference datapath (router_ref_test.go, which looks at every
// input on every edge) and requires the same deliveries, statistics and
// VCD to the byte: the router's event-driven allocation changes its speed,
// not its behaviour.
func TestRouterMatchesReference(t *testing.T) {
	mesh := func(s Spec) Spec { s.Mesh = true; return s }
	fast := func(s Spec) Spec { s.RouterCycles, s.WireCycles, s.CyclesPerByte = 0, 1, 1; return s }
	sel := func(s Spec, k Selection) Spec { s.Selection = k; return s }
	cases := []struct {
		name       string
		spec       Spec
		partitions int
		load       func(r *rig) int
		slow       int
		// reverse evaluates each edge's blocks in reverse order: the
		// message layer reads its reception FIFOs before the router runs.
		reverse bool
	}{
		{"4x4x4 adaptive small buffers", smallBuffers(DefaultSpec(4, 4, 4)), 1, func(r *rig) int { return r.allToAll(12, true) }, 0, false},
		{"4x4x4 deterministic small buffers", smallBuffers(DefaultSpec(4, 4, 4)), 2, func(r *rig) int { return r.allToAll(12, false) }, 0, false},
		{"4x4x2 mesh adaptive", mesh(smallBuffers(DefaultSpec(4, 4, 2))), 1, func(r *rig) int { return r.allToAll(20, true) }, 0, false},
		{"4x4x4 every kind, slow receivers", DefaultSpec(4, 4, 4), 2, func(r *rig) int { return r.mixed(12) }, 300, false},
		{"4x2x2 every kind, small buffers", smallBuffers(DefaultSpec(4, 2, 2)), 1, func(r *rig) int { return r.mixed(40) }, 0, false},
		{"8x2x1 no router delay, fast links, slow receivers", fast(smallBuffers(DefaultSpec(8, 2, 1))), 1, func(r *rig) int { return r.mixed(60) }, 40, false},
		{"4x2x2 every kind, slow receivers first", smallBuffers(DefaultSpec(4, 2, 2)), 1, func(r *rig) int { return r.mixed(40) }, 1, true},

		{"4x4x4 mesh adaptive xfirst", sel(mesh(smallBuffers(DefaultSpec(4, 4, 4))), SelectXFirst), 1, func(r *rig) int { return r.allToAll(12, true) }, 0, false},
		{"4x4x4 adaptive xlast, slow receivers", sel(smallBuffers(DefaultSpec(4, 4, 4)), SelectXLast), 2, func(r *rig) int { return r.allToAll(12, true) }, 40, false},
		{"4x4x4 mesh adaptive hops", sel(mesh(smallBuffers(DefaultSpec(4, 4, 4))), SelectHops), 1, func(r *rig) int { return r.allToAll(12, true) }, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out [2][3][]byte
			for i, ref := range []bool{true, false} {
				dp := func(r *Router) sim.Block { return r }
				if ref {
					dp = func(r *Router) sim.Block { return (*refRouter)(r) }
				}
				var opts []sim.Option
				if tc.reverse {
					opts = append(opts, sim.ReverseOrder())
				}
				r := newRigWith(t, tc.spec, 3, tc.partitions, dp, opts...)
				total := tc.load(r)
				for _, g := range r.gen {
					g.slow = tc.slow
				}
				l, s, v := r.record(t)
				if n := bytes.Count(l, []byte("\n")); n < total {
					t.Fatalf("ref=%v: %d deliveries of %d packets", ref, n, total)
				}
				out[i] = [3][]byte{l, s, v}
			}
			for k, what := range []string{"deliveries", "statistics", "VCD"} {
				if !bytes.Equal(out[0][k], out[1][k]) {
					t.Fatalf("%s differ from the reference's: %s", what, firstDiff(out[0][k], out[1][k]))
				}
			}
			t.Logf("%d deliveries, %d bytes of VCD, identical", bytes.Count(out[0][0], []byte("\n")), len(out[0][2]))
		})
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d: reference %q, router %q", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("reference %d lines, router %d", len(la), len(lb))
}
