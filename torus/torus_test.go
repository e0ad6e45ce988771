package torus

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

func smallBuffers(s Spec) Spec {
	s.VCChunks = [NumVCs]int{MaxChunks, MaxChunks, 2 * MaxChunks, 2 * MaxChunks}
	s.InjChunks, s.RecChunks = MaxChunks, MaxChunks
	return s
}

// TestAllToAll sends random all-to-all traffic as fast as the injection
// FIFOs take it and checks that every packet arrives exactly once, at its
// destination, with its payload; in order per source with deterministic
// routing; and that the network ends empty with every token back.
func TestAllToAll(t *testing.T) {
	cases := []struct {
		name    string
		spec    Spec
		count   int
		dynamic bool
	}{
		{"4x4x4 adaptive small buffers", smallBuffers(DefaultSpec(4, 4, 4)), 150, true},
		{"4x4x4 deterministic small buffers", smallBuffers(DefaultSpec(4, 4, 4)), 150, false},
		{"4x4x4 adaptive", DefaultSpec(4, 4, 4), 60, true},
		{"4x4x2 mesh adaptive", func() Spec { s := smallBuffers(DefaultSpec(4, 4, 2)); s.Mesh = true; return s }(), 100, true},
		{"8x2x1 deterministic", smallBuffers(DefaultSpec(8, 2, 1)), 100, false},
	}
	// Every selection on the same traffic with the smallest buffers,
	// torus and mesh: the escape channel and the bubble rule are the
	// same under each, so none may deadlock.
	for sel := SelectXFirst; sel < numSelections; sel++ {
		s := smallBuffers(DefaultSpec(4, 4, 4))
		s.Selection = sel
		m := smallBuffers(DefaultSpec(4, 4, 4))
		m.Selection, m.Mesh = sel, true
		cases = append(cases, struct {
			name    string
			spec    Spec
			count   int
			dynamic bool
		}{"4x4x4 adaptive small buffers " + sel.String(), s, 150, true},
			struct {
				name    string
				spec    Spec
				count   int
				dynamic bool
			}{"4x4x4 mesh adaptive small buffers " + sel.String(), m, 150, true})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.spec, 1, 1)
			total := r.allToAll(tc.count, tc.dynamic)
			end := r.run(sim.S)
			checkDelivery(t, r, total, !tc.dynamic)
			checkDrained(t, r)
			escaped := uint64(0)
			for _, nd := range r.net.Nodes {
				escaped += nd.Router.escaped.Value()
			}
			// With small buffers the adaptive packets must have fallen
			// back on the escape channel: that path is exercised.
			if tc.dynamic && tc.spec.VCChunks[VCDynamic0] == MaxChunks && escaped == 0 {
				t.Fatal("no adaptive packet took the escape channel")
			}
			t.Logf("%d packets in %v, %d escapes", total, end, escaped)
		})
	}
}

func checkDelivery(t *testing.T, r *rig, total int, ordered bool) {
	t.Helper()
	seen := map[[2]int]bool{}
	got := 0
	for j, g := range r.gen {
		last := map[int]int{}
		for _, a := range g.got {
			key := [2]int{a.src, a.seq}
			if seen[key] {
				t.Fatalf("packet %d/%d delivered twice", a.src, a.seq)
			}
			seen[key] = true
			if r.net.IndexOf(a.p.Dst) != j {
				t.Fatalf("packet %d/%d for %v delivered at node %d", a.src, a.seq, a.p.Dst, j)
			}
			for i, b := range a.p.Payload {
				if b != byte(a.src+a.seq+i) {
					t.Fatalf("packet %d/%d: payload byte %d corrupted", a.src, a.seq, i)
				}
			}
			if ordered {
				if s, ok := last[a.src]; ok && a.seq < s {
					t.Fatalf("node %d: packet %d from %d after %d", j, a.seq, a.src, s)
				}
				last[a.src] = a.seq
			}
			got++
		}
	}
	if got != total {
		t.Fatalf("%d of %d packets delivered (deadlock or loss)", got, total)
	}
}

// checkDrained checks that nothing is left in the routers and every output
// holds all its tokens again, and that no output ever had fewer than zero;
// and that the router's bookkeeping is empty with it: no source holding
// or blocked, no head waiting for a stream, no stream sending, no tokens
// left to return.
func checkDrained(t *testing.T, r *rig) {
	t.Helper()
	for _, nd := range r.net.Nodes {
		rt := nd.Router
		if rt.minTokens < 0 {
			t.Fatalf("node %d: tokens went down to %d", nd.Index, rt.minTokens)
		}
		var none srcSet
		if rt.occ != none || rt.blocked != none || rt.streaming != 0 || rt.pending != 0 {
			t.Fatalf("node %d: at the end sources %v, blocked %v, streams %b, tokens to return %b", nd.Index, rt.occ, rt.blocked, rt.streaming, rt.pending)
		}
		for i, w := range rt.wait {
			if w != none {
				t.Fatalf("node %d: heads %v still wait for stream %d", nd.Index, w, i)
			}
		}
		for o, op := range rt.out {
			if op == nil {
				continue
			}
			for vc, a := range op.avail {
				if a != r.net.Spec.VCChunks[vc] {
					t.Fatalf("node %d port %v vc %d: %d tokens at the end, want %d", nd.Index, Port(o), vc, a, r.net.Spec.VCChunks[vc])
				}
			}
		}
		for p, ip := range rt.in {
			if ip == nil {
				continue
			}
			for vc := range ip.vc {
				if ip.vc[vc].Len() != 0 || ip.used[vc] != 0 {
					t.Fatalf("node %d input %v vc %d: %d packets, %d chunks left", nd.Index, Port(p), vc, ip.vc[vc].Len(), ip.used[vc])
				}
			}
		}
	}
}
