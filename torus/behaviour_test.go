package torus

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/waveforms"
)

// TestDeposit sends deposit-bit packets along lines and checks that a copy
// arrives at every node of the line the packet passes, once, and nowhere
// else.
func TestDeposit(t *testing.T) {
	cases := []struct {
		name     string
		spec     Spec
		src, dst Coord
		hint     [3]int8
		want     []Coord
	}{
		{"x plus, whole ring", DefaultSpec(4, 4, 4), Coord{0, 1, 2}, Coord{3, 1, 2}, [3]int8{1, 0, 0},
			[]Coord{{1, 1, 2}, {2, 1, 2}, {3, 1, 2}}},
		{"z minus, wrapping", DefaultSpec(4, 4, 4), Coord{1, 1, 1}, Coord{1, 1, 2}, [3]int8{0, 0, -1},
			[]Coord{{1, 1, 0}, {1, 1, 3}, {1, 1, 2}}},
		{"y shortest way", DefaultSpec(4, 4, 4), Coord{2, 0, 3}, Coord{2, 3, 3}, [3]int8{},
			[]Coord{{2, 3, 3}}},
		{"mesh x minus", func() Spec { s := DefaultSpec(4, 2, 2); s.Mesh = true; return s }(), Coord{3, 1, 0}, Coord{0, 1, 0}, [3]int8{},
			[]Coord{{2, 1, 0}, {1, 1, 0}, {0, 1, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.spec, 1, 1)
			src := r.net.IndexOf(tc.src)
			for k := 0; k < 3; k++ {
				p := tagged(src, k, tc.dst, 100+k*60)
				p.Deposit, p.Hint = true, tc.hint
				r.gen[src].queue = append(r.gen[src].queue, p)
			}
			r.run(sim.MS)
			want := map[int]bool{}
			for _, c := range tc.want {
				want[r.net.IndexOf(c)] = true
			}
			for j, g := range r.gen {
				if !want[j] {
					if len(g.got) != 0 {
						t.Fatalf("node %v received %d packets, off the line", r.net.CoordOf(j), len(g.got))
					}
					continue
				}
				if len(g.got) != 3 {
					t.Fatalf("node %v received %d packets, want 3", r.net.CoordOf(j), len(g.got))
				}
				for k, a := range g.got {
					if a.seq != k || a.src != src {
						t.Fatalf("node %v: packet %d/%d in place %d", r.net.CoordOf(j), a.src, a.seq, k)
					}
				}
			}
			checkDrained(t, r)
		})
	}
}

// TestLinkBandwidth streams packets of each size over one link and checks
// that the link sends one packet per (32·n + 14)·4 cycles, back to back, so
// that its payload rate for full packets is η × 0.25 B/cycle exactly:
// 240 bytes per 1080 cycles.
func TestLinkBandwidth(t *testing.T) {
	for chunks := 1; chunks <= MaxChunks; chunks++ {
		t.Run(fmt.Sprintf("%d chunks", chunks), func(t *testing.T) {
			spec := DefaultSpec(4, 4, 4)
			r := newRig(t, spec, 1, 1)
			const n = 40
			payload := chunks*ChunkBytes - HeaderBytes
			for k := 0; k < n; k++ {
				r.gen[0].queue = append(r.gen[0].queue, tagged(0, k, Coord{1, 0, 0}, payload))
			}
			r.run(sim.MS)
			got := r.gen[1].got
			if len(got) != n {
				t.Fatalf("%d of %d packets arrived", len(got), n)
			}
			period := spec.Period()
			want := sim.Tick(4*(32*chunks+14)) * period
			// The first few wait for the FIFO and the pipeline; from then on
			// the link is the bottleneck.
			for k := 10; k < n; k++ {
				if d := got[k].at - got[k-1].at; d != want {
					t.Fatalf("packets %d and %d arrived %v apart, want %v (%d cycles)", k-1, k, d, want, want/period)
				}
			}
			st := r.w.Stats()
			pay, _ := st.Get("torus.node[0].xp.payload_bytes")
			busy, _ := st.Get("torus.node[0].xp.busy_ps")
			pb, bp := pay.(*sim.Counter).Value(), busy.(*sim.Counter).Value()/uint64(period)
			if pb != uint64(n*payload) || bp != uint64(n*4*(32*chunks+14)) {
				t.Fatalf("link counted %d payload bytes in %d cycles, want %d in %d", pb, bp, n*payload, n*4*(32*chunks+14))
			}
			if chunks == MaxChunks && pb*270*4 != bp*240 {
				t.Fatalf("full packets: %d payload bytes in %d cycles is not 240/270 × 0.25 B/cycle", pb, bp)
			}
		})
	}
}

// TestFastLinkBandwidth is TestLinkBandwidth on links of several bytes a
// cycle (BytesPerCycle): back-to-back packets arrive a packet's wire bytes
// over the bytes a cycle apart, rounded up to whole cycles.
func TestFastLinkBandwidth(t *testing.T) {
	for _, tc := range []struct{ bpc, chunks, cycles int }{
		{4, 8, 68}, // 270 bytes: 67.5 cycles, the last one part-filled
		{4, 1, 12}, // 46 bytes: 11.5
		{8, 8, 34}, // 33.75
		{32, 3, 4}, // 110 bytes: 3.4
		{2, 2, 39}, // 78 bytes
	} {
		t.Run(fmt.Sprintf("%d B/cycle %d chunks", tc.bpc, tc.chunks), func(t *testing.T) {
			spec := DefaultSpec(4, 2, 2)
			spec.ClockMHz, spec.CyclesPerByte, spec.BytesPerCycle = 1000, 1, tc.bpc
			spec.LocalCyclesPerChunk = 1 // the reception path faster than the link
			// Buffers over the tokens' round trip at the fastest rate.
			spec.VCChunks = [NumVCs]int{512, 512, 512, 512}
			r := newRig(t, spec, 1, 1)
			const n = 40
			payload := tc.chunks*ChunkBytes - HeaderBytes
			for k := 0; k < n; k++ {
				r.gen[0].queue = append(r.gen[0].queue, tagged(0, k, Coord{1, 0, 0}, payload))
			}
			r.run(sim.MS)
			got := r.gen[1].got
			if len(got) != n {
				t.Fatalf("%d of %d packets arrived", len(got), n)
			}
			want := sim.Tick(tc.cycles) * spec.Period()
			for k := 10; k < n; k++ {
				if d := got[k].at - got[k-1].at; d != want {
					t.Fatalf("packets %d and %d arrived %v apart, want %v", k-1, k, d, want)
				}
			}
		})
	}
}

// TestLatencyPerHop sends one packet at a time from node 0 to nodes at
// growing distance, deterministic and adaptive, and checks that each hop
// adds exactly WireCycles + RouterCycles (63 cycles, 90 ns at 700 MHz).
func TestLatencyPerHop(t *testing.T) {
	spec := DefaultSpec(8, 4, 4)
	for _, dynamic := range []bool{false, true} {
		t.Run(fmt.Sprintf("dynamic=%v", dynamic), func(t *testing.T) {
			r := newRig(t, spec, 1, 1)
			var lat []sim.Tick
			var hops []int
			for dst := 1; dst < len(r.net.Nodes); dst += 7 {
				// One packet at a time, into an idle network.
				p := tagged(0, dst, r.net.CoordOf(dst), 8)
				p.Dynamic = dynamic
				r.gen[0].queue = append(r.gen[0].queue, p)
				r.gen[0].u.WakeAt(r.w.Now() + 1)
				r.run(sim.S)
				g := r.gen[dst].got
				if len(g) != 1 {
					t.Fatalf("node %d got %d packets", dst, len(g))
				}
				lat = append(lat, g[0].at-g[0].p.InjectedAt)
				hops = append(hops, r.net.Hops(Coord{}, r.net.CoordOf(dst)))
				if int(g[0].p.Hops) != hops[len(hops)-1] {
					t.Fatalf("node %d: %d hops taken, %d minimal", dst, g[0].p.Hops, hops[len(hops)-1])
				}
			}
			hop := sim.Tick(spec.HopCycles()) * spec.Period()
			for i := 1; i < len(lat); i++ {
				if lat[i]-lat[0] != sim.Tick(hops[i]-hops[0])*hop {
					t.Fatalf("%d hops: %v, %d hops: %v: not %v per hop", hops[0], lat[0], hops[i], lat[i], hop)
				}
			}
			if ns := float64(hop) / 1000; ns < 85 || ns > 95 {
				t.Fatalf("per hop %.1f ns, want about 90", ns)
			}
		})
	}
}

// TestBadInput checks that a spec or packet the torus cannot take gives
// an error that names it.
func TestBadInput(t *testing.T) {
	specs := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"dimension 0", func(s *Spec) { s.Dims[1] = 0 }, "torus.dims.y: 0 out of range"},
		{"one node", func(s *Spec) { s.Dims = [3]int{1, 1, 1} }, "is one node"},
		{"escape below the bubble", func(s *Spec) { s.VCChunks[VCEscape] = 8 }, "torus.vc_chunks.escape: 8 out of range (16 to 4096)"},
		{"zero clock", func(s *Spec) { s.ClockMHz = 0 }, "torus.clock_mhz"},
		{"no injection FIFO", func(s *Spec) { s.InjFIFOs = 0 }, "torus.inj_fifos"},
		{"bytes a cycle not a chunk's divisor", func(s *Spec) { s.CyclesPerByte, s.BytesPerCycle = 1, 5 }, "torus.bytes_per_cycle: 5 is not 0, 1, 2, 4, 8, 16 or 32"},
		{"bytes and cycles a byte", func(s *Spec) { s.BytesPerCycle = 4 }, "torus.cycles_per_byte: 4 with bytes_per_cycle 4"},
	}
	for _, tc := range specs {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSpec(4, 4, 4)
			tc.edit(&s)
			_, err := New(sim.NewWorld(1), "torus", s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	packets := []struct {
		name string
		fifo int
		p    Packet
		want string
	}{
		{"packet over 256 bytes", 0, Packet{Dst: Coord{1, 0, 0}, Payload: make([]byte, 241)}, "packet of 257 bytes (at most 256"},
		{"outside", 0, Packet{Dst: Coord{4, 0, 0}}, "outside the 4×4×4 torus"},
		{"to itself", 0, Packet{Dst: Coord{0, 0, 0}}, "is the sending node"},
		{"deposit off a line", 0, Packet{Dst: Coord{1, 1, 0}, Deposit: true}, "must lie on a line"},
		{"deposit adaptive", 0, Packet{Dst: Coord{1, 0, 0}, Deposit: true, Dynamic: true}, "deposit bit needs deterministic"},
		{"bad hint", 0, Packet{Dst: Coord{1, 0, 0}, Hint: [3]int8{2, 0, 0}}, "hint 2 in x"},
		{"priority in a normal FIFO", 0, Packet{Dst: Coord{1, 0, 0}, Priority: true}, "is for normal packets"},
		{"no such FIFO", 99, Packet{Dst: Coord{1, 0, 0}}, "injection FIFO 99 of 8"},
	}
	r := newRig(t, DefaultSpec(4, 4, 4), 1, 1)
	for _, tc := range packets {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			err := r.net.Nodes[0].Inject(tc.fifo, &p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestPartitionsByteIdentical runs adaptive all-to-all traffic with the
// waveforms on, on 1, 2 and 4 goroutines, and requires the same
// deliveries, statistics and VCD to the byte.
func TestPartitionsByteIdentical(t *testing.T) {
	var ref [3][32]byte
	for i, parts := range []int{1, 2, 4} {
		r := newRig(t, smallBuffers(DefaultSpec(4, 4, 2)), 7, parts)
		r.allToAll(30, true)
		var vcd bytes.Buffer
		wr := waveforms.NewWriter(&vcd, waveforms.Options{})
		r.w.AttachTracer(wr)
		end := r.run(sim.S)
		if err := wr.Close(uint64(end)); err != nil {
			t.Fatal(err)
		}
		var log, stats bytes.Buffer
		for j, g := range r.gen {
			for _, a := range g.got {
				fmt.Fprintf(&log, "%d %d %d/%d %d %d %v\n", a.at, j, a.src, a.seq, a.fifo, a.p.Hops, a.p.ID)
			}
		}
		for _, s := range r.w.Stats().All() {
			if c, ok := s.(*sim.Counter); ok {
				fmt.Fprintf(&stats, "%s %d\n", s.Name(), c.Value())
			}
		}
		got := [3][32]byte{sha256.Sum256(log.Bytes()), sha256.Sum256(stats.Bytes()), sha256.Sum256(vcd.Bytes())}
		if i == 0 {
			ref = got
			if log.Len() == 0 || vcd.Len() == 0 {
				t.Fatal("nothing delivered or traced")
			}
			continue
		}
		for k, what := range []string{"deliveries", "statistics", "VCD"} {
			if got[k] != ref[k] {
				t.Fatalf("%d partitions: %s differ from 1 partition's", parts, what)
			}
		}
	}
}

// TestWaveforms checks that a router's packet and link signals reach the
// VCD and read back with the strict reader: the packet IDs on an output
// while it sends, the tokens, and the link's handshake.
func TestWaveforms(t *testing.T) {
	r := newRig(t, DefaultSpec(4, 2, 2), 1, 1)
	for k := 0; k < 4; k++ {
		r.gen[0].queue = append(r.gen[0].queue, tagged(0, k, Coord{2, 0, 0}, 200))
	}
	var vcd bytes.Buffer
	f, _ := waveforms.NewFilter("torus.node[0].*,torus.node[1].*", "", false)
	wr := waveforms.NewWriter(&vcd, waveforms.Options{Filter: f})
	r.w.AttachTracer(wr)
	end := r.run(sim.MS)
	if err := wr.Close(uint64(end)); err != nil {
		t.Fatal(err)
	}
	file, err := waveforms.Parse(&vcd)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range file.History("torus.node_0.router.xp.pkt") {
		if !strings.ContainsAny(c.V, "xX") {
			ids[c.V] = true
		}
	}
	if len(ids) != 4 {
		t.Fatalf("output xp of node 0 shows %d packets, want 4", len(ids))
	}
	for _, sig := range []string{"torus.node_0.xp.fire", "torus.node_0.router.xp.tokens_vc2", "torus.node_1.router.in_xm.chunks_vc2", "torus.node_0.xp_tokens.fire"} {
		if len(file.History(sig)) < 2 {
			t.Fatalf("%s: %d changes", sig, len(file.History(sig)))
		}
	}
	var names []string
	for _, s := range wr.Signals() {
		names = append(names, s.Path)
	}
	sort.Strings(names)
	t.Logf("%d signals, %d changes", len(names), wr.Changes())
}
