package cpu

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/sim"
)

// e5000 is seed 000's Table 1 node (the figures of examples/machines/e5000.yaml).
func e5000() SMPSpec {
	return SMPSpec{LineBytes: 64, L2Bytes: 512 << 10, L2Ways: 8, HitCycles: 2, MissCycles: 50, C2CCycles: 80,
		UpgradeCycles: 50, CASCycles: 15, MemoryMBps: 400, MemcpyMBps: 200}
}

const e5000Period = 5988 // 167 MHz

// smpNode is n cores on one clock sharing memory and an SMP.
type smpNode struct {
	e     *sim.Engine
	mem   *memory.Store
	smp   *SMP
	cores []*Core
}

func newSMPNode(t *testing.T, n int, spec SMPSpec, period sim.Tick) *smpNode {
	t.Helper()
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", period, 0)
	s, err := NewSMP(e, "node0.smp", spec)
	if err != nil {
		t.Fatal(err)
	}
	nd := &smpNode{e: e, mem: memory.NewStore(), smp: s}
	cs := DefaultSpec()
	cs.PeriodPS = period
	for i := 0; i < n; i++ {
		c := NewCore(clk, fmt.Sprintf("cpu%d", i), cs, nd.mem)
		if err := s.Attach(c); err != nil {
			t.Fatal(err)
		}
		nd.cores = append(nd.cores, c)
	}
	return nd
}

func (nd *smpNode) run(t *testing.T) {
	t.Helper()
	nd.e.Run(sim.S)
	for _, c := range nd.cores {
		if !c.AppsDone() {
			t.Fatalf("%s did not finish", c.Unit().Name())
		}
	}
}

// A ping-pong of one line between two cores: each half round trip is a
// store that takes the line from the other core's cache (an upgrade that
// invalidates the one other copy) and the other core's poll that misses
// and fetches it cache to cache. Every round trip after the first costs
// exactly 2 × (cache-to-cache + upgrade + one invalidation), and moves the
// line cache to cache twice.
func TestSMPPingPong(t *testing.T) {
	cases := []struct {
		name   string
		spec   func(*SMPSpec)
		period sim.Tick
	}{
		{"e5000", func(*SMPSpec) {}, e5000Period},
		{"per-copy invalidation", func(s *SMPSpec) { s.HitCycles, s.C2CCycles, s.UpgradeCycles, s.InvalCycles = 1, 40, 0, 10 }, 500},
		{"128-byte lines", func(s *SMPSpec) {
			s.LineBytes, s.HitCycles, s.C2CCycles, s.UpgradeCycles, s.InvalCycles = 128, 3, 120, 20, 5
		}, 1000},
	}
	const trips = 50
	const flag = 0x1_0008 // not line aligned: the line is what moves
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := e5000()
			c.spec(&spec)
			nd := newSMPNode(t, 2, spec, c.period)
			var done []sim.Tick // when the ping's round trip i came back
			nd.cores[0].Spawn("ping", func(p *Proc) {
				for i := uint64(0); i < trips; i++ {
					p.Store64(flag, 2*i+1)
					p.PollLoad64(flag, func(v uint64) bool { return v == 2*i+2 })
					done = append(done, p.Now())
				}
			})
			nd.cores[1].Spawn("pong", func(p *Proc) {
				for i := uint64(0); i < trips; i++ {
					p.PollLoad64(flag, func(v uint64) bool { return v == 2*i+1 })
					p.Store64(flag, 2*i+2)
				}
			})
			nd.run(t)
			rt := 2 * sim.Tick(spec.C2CCycles+spec.UpgradeCycles+spec.InvalCycles) * c.period
			for i := 1; i < trips; i++ {
				if d := done[i] - done[i-1]; d != rt {
					t.Fatalf("round trip %d took %v, want 2 × (c2c %d + upgrade %d + inval %d) cycles = %v", i, d, spec.C2CCycles, spec.UpgradeCycles, spec.InvalCycles, rt)
				}
			}
			if got, want := done[trips-1]-done[0], sim.Tick(trips-1)*rt; got != want {
				t.Fatalf("%d round trips took %v, want %v", trips-1, got, want)
			}
			if n := nd.smp.Counts(); n.C2C != 2*trips || n.Upgrades != 2*trips-1 {
				t.Fatalf("counts %+v: want %d cache-to-cache transfers and %d upgrades", n, 2*trips, 2*trips-1)
			}
		})
	}
}

// Eight cores contending on one line's CAS (or fetch-and-add) serialise:
// the first takes the line from memory, every other waits for the line and
// takes it from the previous one's cache. Completion times are strictly
// ordered, exactly c2c + CAS apart, and the whole takes at least 8 × CAS.
func TestSMPContendedAtomicsSerialise(t *testing.T) {
	for _, op := range []string{"cas", "fetchadd"} {
		for _, inval := range []int{0, 7} {
			t.Run(fmt.Sprintf("%s/inval%d", op, inval), func(t *testing.T) {
				spec := e5000()
				spec.InvalCycles = inval
				const P = e5000Period
				nd := newSMPNode(t, 8, spec, P)
				const word = 0x2000
				var start sim.Tick
				ends := make([]sim.Tick, 8)
				for i, c := range nd.cores {
					c.Spawn("atomic", func(p *Proc) {
						start = p.Now()
						if op == "cas" {
							for {
								if old := nd.mem.Load64(word); p.CAS(word, old, old+1) == old {
									break
								}
							}
						} else {
							p.FetchAdd(word, 1)
						}
						ends[i] = p.Now()
					})
				}
				nd.run(t)
				if v := nd.mem.Load64(word); v != 8 {
					t.Fatalf("counter %d, want 8", v)
				}
				sorted := slices.Clone(ends)
				slices.Sort(sorted)
				first := start + sim.Tick(spec.MissCycles+spec.CASCycles)*P
				step := sim.Tick(spec.C2CCycles+spec.CASCycles+inval) * P
				for k, e := range sorted {
					if want := first + sim.Tick(k)*step; e != want {
						t.Fatalf("completion %d at %v, want %v (all %v)", k, e-start, want-start, ends)
					}
				}
				if total := sorted[7] - start; total < 8*sim.Tick(spec.CASCycles)*P {
					t.Fatalf("8 atomics in %v, less than 8 × CAS", total)
				}
				if n := nd.smp.Counts(); n.Atomics != 8 || n.C2C != 7 || n.MemoryMisses != 1 {
					t.Fatalf("counts %+v", n)
				}
			})
		}
	}
}

// Parallel copies: one core copies at its memcpy bandwidth; k cores copying
// from memory together share the node's memory bandwidth, which caps their
// aggregate; without a memory limit, or copying out of their own caches,
// they do not meet that cap.
func TestSMPMemoryBandwidthCapsMemcpy(t *testing.T) {
	const n = 64 << 10 // bytes per core
	cases := []struct {
		cores    int
		memory   uint64 // MB/s, 0 unlimited
		resident bool   // src already in the copying core's cache
		want     float64
	}{
		{1, 400, false, 200},
		{2, 400, false, 400},
		{3, 400, false, 400},
		{4, 400, false, 400},
		{8, 400, false, 400},
		{8, 1000, false, 1000},
		{8, 0, false, 1600},
		{8, 400, true, 1600},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dcores/mem%d/resident%v", c.cores, c.memory, c.resident), func(t *testing.T) {
			spec := e5000()
			spec.MemoryMBps = c.memory
			nd := newSMPNode(t, c.cores, spec, e5000Period)
			var start, end sim.Tick
			var before uint64
			ready := 0
			for i, core := range nd.cores {
				src, dst := uint64(0x100_0000+i*0x10_0000), uint64(0x800_0000+i*0x10_0000)
				nd.mem.Write(src, []byte(fmt.Sprintf("block %d", i)))
				core.Spawn("copy", func(p *Proc) {
					if c.resident {
						buf := make([]byte, n)
						p.Read(src, buf) // fill the cache
						ready++
						p.Poll(func() bool { return ready == c.cores })
						before = nd.smp.Counts().MemoryBytes
					}
					start = p.Now()
					p.Memcpy(dst, src, n)
					end = max(end, p.Now())
				})
			}
			nd.run(t)
			for i := range nd.cores {
				b := make([]byte, 7)
				nd.mem.Read(uint64(0x800_0000+i*0x10_0000), b)
				if string(b) != fmt.Sprintf("block %d", i) {
					t.Fatalf("core %d copied %q", i, b)
				}
			}
			mbps := float64(c.cores*n) / (float64(end-start) / 1e6) // bytes per µs
			if mbps > c.want || mbps < 0.99*c.want {
				t.Fatalf("aggregate %.1f MB/s, want %v (capped)", mbps, c.want)
			}
			moved := nd.smp.Counts().MemoryBytes - before
			if want := uint64(c.cores * n); !c.resident && moved != want || c.resident && moved != 0 {
				t.Fatalf("%d bytes from memory during the copies", moved)
			}
		})
	}
}

// Data no other core holds costs a memory access, once: the line then hits
// in the core's cache, until streaming more than the cache holds evicts it.
// A line another core wrote last comes from its cache, until that core
// evicts it (a writeback): then from memory again.
func TestSMPUnsharedAndEvicted(t *testing.T) {
	spec := e5000()
	spec.L2Bytes, spec.L2Ways = 4<<10, 4 // 64 lines
	const P = e5000Period                // a miss outlasts a line's transfer: no queue at the memory
	nd := newSMPNode(t, 2, spec, P)
	miss, hit, c2c := sim.Tick(spec.MissCycles)*P, sim.Tick(spec.HitCycles)*P, sim.Tick(spec.C2CCycles)*P
	cost := func(p *Proc, op func()) sim.Tick {
		t0 := p.Now()
		op()
		return p.Now() - t0
	}
	var phase int
	nd.cores[0].Spawn("a", func(p *Proc) {
		for i := uint64(0); i < 32; i++ {
			if d := cost(p, func() { p.Load64(0x10_0000 + 64*i) }); d != miss {
				t.Errorf("first load of line %d: %v, want the memory latency %v", i, d, miss)
			}
		}
		for i := uint64(0); i < 32; i++ {
			if d := cost(p, func() { p.Load64(0x10_0000 + 64*i + 8) }); d != hit {
				t.Errorf("second load of line %d: %v, want a hit %v", i, d, hit)
			}
		}
		p.Read(0x20_0000, make([]byte, 8<<10)) // twice the cache
		if d := cost(p, func() { p.Load64(0x10_0000) }); d != miss {
			t.Errorf("load after the stream: %v, want a miss %v", d, miss)
		}
		p.Store64(0x30_0000, 1)
		phase = 1
	})
	nd.cores[1].Spawn("b", func(p *Proc) {
		p.Poll(func() bool { return phase == 1 })
		if d := cost(p, func() { p.Load64(0x30_0000) }); d != c2c {
			t.Errorf("load of a line core 0 wrote: %v, want cache to cache %v", d, c2c)
		}
		phase = 2
	})
	nd.run(t)
	if n := nd.smp.Counts(); n.MemoryMisses != 32+128+1+1 || n.C2C != 1 {
		t.Fatalf("counts %+v", n)
	}
	// Core 0 evicts the dirty line: core 1's copy stays, a third reader
	// would now be served by memory.
	phase = 0
	nd2 := newSMPNode(t, 2, spec, P)
	nd2.cores[0].Spawn("w", func(p *Proc) {
		p.Store64(0x30_0000, 1)
		p.Read(0x20_0000, make([]byte, 8<<10))
		phase = 3
	})
	nd2.cores[1].Spawn("r", func(p *Proc) {
		p.Poll(func() bool { return phase == 3 })
		if d := cost(p, func() { p.Load64(0x30_0000) }); d != miss {
			t.Errorf("load of a line written back: %v, want memory %v", d, miss)
		}
	})
	nd2.run(t)
	if n := nd2.smp.Counts(); n.Writebacks != 1 {
		t.Fatalf("counts %+v: want the dirty line written back", n)
	}
}

// A store to a line k cores hold invalidates the k−1 other copies: it
// costs a hit if the core holds the line alone, else an upgrade plus the
// invalidations.
func TestSMPStoreInvalidatesSharers(t *testing.T) {
	for k := 1; k <= 8; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			spec := e5000()
			spec.InvalCycles = 6
			const P = 1000
			nd := newSMPNode(t, 8, spec, P)
			const word = 0x4000
			loaded := 0
			var cost sim.Tick
			var inv uint64
			for i := 0; i < k; i++ {
				nd.cores[i].Spawn("load", func(p *Proc) {
					p.Load64(word)
					loaded++
					if i != 0 {
						return
					}
					p.Poll(func() bool { return loaded == k })
					inv = nd.smp.Counts().Invalidations
					t0 := p.Now()
					p.Store64(word, 1)
					cost = p.Now() - t0
				})
			}
			nd.run(t)
			want := sim.Tick(spec.HitCycles) * P
			if k > 1 {
				want = sim.Tick(spec.UpgradeCycles+(k-1)*spec.InvalCycles) * P
			}
			if cost != want {
				t.Fatalf("store cost %v, want %v", cost, want)
			}
			if got := nd.smp.Counts().Invalidations - inv; got != uint64(k-1) {
				t.Fatalf("%d invalidations, want %d", got, k-1)
			}
			if cores, owner := nd.smp.Holders(word); !slices.Equal(cores, []int{0}) || owner != 0 {
				t.Fatalf("holders %v owner %d after the store", cores, owner)
			}
		})
	}
}

// A device's write (Invalidate) drops the cached copies: the next load
// misses.
func TestSMPDeviceWriteInvalidates(t *testing.T) {
	spec := e5000()
	const P = e5000Period
	nd := newSMPNode(t, 1, spec, P)
	var d sim.Tick
	nd.cores[0].Spawn("p", func(p *Proc) {
		p.Store64(0x5000, 1)
		nd.smp.Invalidate(0x5000, 8)
		t0 := p.Now()
		p.Load64(0x5000)
		d = p.Now() - t0
	})
	nd.run(t)
	if d != sim.Tick(spec.MissCycles)*P {
		t.Fatalf("load after a device write: %v", d)
	}
	if cores, owner := nd.smp.Holders(0x5000); !slices.Equal(cores, []int{0}) || owner != -1 {
		t.Fatalf("holders %v owner %d", cores, owner)
	}
}

// Without an SMP a copy costs a memory access per line read and written,
// and the bad specs are refused.
func TestMemcpyWithoutSMPAndBadSpecs(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 500, 0)
	mem := memory.NewStore()
	c := NewCore(clk, "cpu0", DefaultSpec(), mem)
	mem.Write(0x1000, []byte("hello"))
	var d sim.Tick
	c.Spawn("p", func(p *Proc) {
		t0 := p.Now()
		p.Memcpy(0x9000, 0x1000, 200)
		d = p.Now() - t0
	})
	e.Run(sim.MS)
	if want := 2 * 4 * DefaultSpec().MemAccessPS; d != want {
		t.Fatalf("memcpy of 200 bytes: %v, want %v", d, want)
	}
	b := make([]byte, 5)
	mem.Read(0x9000, b)
	if string(b) != "hello" {
		t.Fatalf("copied %q", b)
	}
	for _, bad := range []func(*SMPSpec){
		func(s *SMPSpec) { s.LineBytes = 48 },
		func(s *SMPSpec) { s.L2Bytes = 100 },
		func(s *SMPSpec) { s.L2Ways = 65 },
		func(s *SMPSpec) { s.C2CCycles = -1 },
		func(s *SMPSpec) { s.MemoryMBps = 2_000_000 },
	} {
		s := e5000()
		bad(&s)
		if _, err := NewSMP(sim.NewEngine(1), "x", s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

// The bandwidth timeline stays exact far into a run: a transfer after
// 100 s of simulated time at 1 TB/s (a time × rate product past 2^64)
// takes exactly its share.
func TestBandwidthLateInARun(t *testing.T) {
	b := bandwidth{mbps: 1_000_000}
	at := 100 * sim.S
	start, end := b.reserve(at, 64)
	if start != at || end != at+64 {
		t.Fatalf("64 B at 1 TB/s from %v: %v..%v, want 64 ps", at, start, end)
	}
	// Three bytes at 3 MB/s: a third of a µs each, the remainders carried.
	b = bandwidth{mbps: 3}
	var last sim.Tick
	for i := 0; i < 3; i++ {
		_, last = b.reserve(at, 1)
	}
	if last != at+sim.US {
		t.Fatalf("3 × 1 B at 3 MB/s end at %v, want %v", last, at+sim.US)
	}
}

// PollLoad64, whose loads the core makes itself while they hit, behaves
// exactly as its loop of Load64s: the same return times and values, the
// same SMP counts, and the same operations and busy time of every core,
// whoever ends the spin (a core's store, a device's write) and whatever
// else runs on the polling core; so does PollLoad64Every, as its loop of
// Load64s and Computes.
func TestPollLoad64AsItsLoop(t *testing.T) {
	const P = e5000Period
	type writer func(nd *smpNode, p *Proc, v uint64)
	coreStore := func(nd *smpNode, p *Proc, v uint64) { p.Store64(0x5000, v) }
	deviceWrite := func(nd *smpNode, p *Proc, v uint64) {
		nd.mem.Store64(0x5000, v)
		nd.smp.Invalidate(0x5000, 8)
	}
	for _, tc := range []struct {
		name    string
		write   writer
		pollers int        // processes polling 0x5000 until it reads 3, one per core
		other   bool       // a second process on core 0 that computes and loads meanwhile
		gaps    []sim.Tick // the writer's sleeps before it writes 1, 2, 3
		every   int        // PollLoad64Every's cycles between loads (0: PollLoad64)
	}{
		{"core store", coreStore, 1, false, []sim.Tick{1 * sim.US, 2*sim.US + 7*P, 3 * sim.US}, 0},
		{"device write", deviceWrite, 1, false, []sim.Tick{1 * sim.US, 3 * P, 5*sim.US + 1}, 0},
		{"two pollers", deviceWrite, 2, false, []sim.Tick{2 * sim.US, 2 * sim.US, 2 * sim.US}, 0},
		{"a second process", coreStore, 1, true, []sim.Tick{1 * sim.US, 1 * sim.US, 4 * sim.US}, 0},
		{"written at once", coreStore, 1, false, []sim.Tick{P, P, P}, 0},
		{"every 4 cycles, core store", coreStore, 1, false, []sim.Tick{1 * sim.US, 2*sim.US + 7*P, 3 * sim.US}, 4},
		{"every 4 cycles, device write", deviceWrite, 1, false, []sim.Tick{1 * sim.US, 3 * P, 5*sim.US + 1}, 4},
		{"every cycle, two pollers", deviceWrite, 2, false, []sim.Tick{2 * sim.US, 2 * sim.US, 2 * sim.US}, 1},
		{"every 7 cycles, a second process", coreStore, 1, true, []sim.Tick{1 * sim.US, 1 * sim.US, 4 * sim.US}, 7},
		{"every 4 cycles, written at once", coreStore, 1, false, []sim.Tick{P, 2 * P, P}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(spin bool) string {
				nd := newSMPNode(t, tc.pollers+1, e5000(), P)
				var out []string
				for i := 0; i < tc.pollers; i++ {
					nd.cores[i].Spawn("poller", func(p *Proc) {
						until := func(v uint64) bool { return v == 3 }
						var v uint64
						switch {
						case spin && tc.every > 0:
							v = p.PollLoad64Every(0x5000, tc.every, until)
						case spin:
							v = p.PollLoad64(0x5000, until)
						default:
							for v = p.Load64(0x5000); !until(v); v = p.Load64(0x5000) {
								if tc.every > 0 {
									p.Compute(tc.every)
								}
							}
						}
						out = append(out, fmt.Sprintf("poller %d: %d at %v", i, v, p.Now()))
					})
				}
				if tc.other {
					nd.cores[0].Spawn("other", func(p *Proc) {
						for k := 0; k < 50; k++ {
							p.Compute(17)
							p.Load64(0x9000 + uint64(k)*64)
						}
					})
				}
				nd.cores[tc.pollers].Spawn("writer", func(p *Proc) {
					for i, g := range tc.gaps {
						p.Sleep(g)
						tc.write(nd, p, uint64(i+1))
					}
				})
				nd.run(t)
				out = append(out, fmt.Sprintf("%+v", nd.smp.Counts()))
				for _, c := range nd.cores {
					out = append(out, fmt.Sprintf("%s: ops %d busy %d", c.Unit().Name(), c.stOps.Value(), c.stBusy.Value()))
				}
				return fmt.Sprint(out)
			}
			loop, spin := run(false), run(true)
			if loop != spin {
				t.Fatalf("PollLoad64 differs from its loop:\nloop %s\nspin %s", loop, spin)
			}
		})
	}
}

// The directory keeps each line's entry apart across its chunks, finds
// nothing in a chunk never used, and makes fresh entries owned by no one.
func TestDirectoryChunks(t *testing.T) {
	d := directory{chunks: map[uint64]*dirChunk{}}
	if d.find(5) != nil {
		t.Fatal("an entry in a chunk never used")
	}
	lns := []uint64{0, 1, dirChunkLines - 1, dirChunkLines, 7 * dirChunkLines, 1 << 40}
	for i, ln := range lns {
		l := d.entry(ln)
		if l.owner != -1 || !l.holders.empty() || l.busy != 0 {
			t.Fatalf("line %d: fresh entry %+v", ln, *l)
		}
		l.busy = sim.Tick(i + 1)
	}
	for i, ln := range lns {
		if l := d.find(ln); l == nil || l.busy != sim.Tick(i+1) {
			t.Fatalf("line %d: entry %v, want busy %d", ln, l, i+1)
		}
	}
	if d.find(2*dirChunkLines) != nil || len(d.chunks) != 4 {
		t.Fatalf("%d chunks", len(d.chunks))
	}
}
