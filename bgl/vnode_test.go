package bgl

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

func vnMachine(t *testing.T) *Machine {
	t.Helper()
	m, err := New(sim.NewWorld(1), "bgl", DefaultSpec(2, 1, 1).WithMode(VirtualNodeMode))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLockboxMutualExclusion: both cores of a node take one lock 300 times
// each, hold it a random while and update a shared counter inside; never
// are both inside, no update is lost, and they did contend.
func TestLockboxMutualExclusion(t *testing.T) {
	m := vnMachine(t)
	nd := m.Nodes[0]
	lb := nd.VN.Lockbox
	const rounds = 300
	inside, counter, overlaps := -1, 0, 0
	var failed error
	for k := range nd.Cores {
		rng := rand.New(rand.NewPCG(uint64(k), 7))
		nd.Cores[k].Spawn("locker", func(p *cpu.Proc) {
			for range rounds {
				if err := lb.Acquire(p, 3); err != nil {
					failed = err
					return
				}
				if inside >= 0 {
					overlaps++
				}
				inside = k
				c := counter
				p.Compute(1 + rng.IntN(40))
				if lb.Holder(3) != k {
					overlaps++
				}
				counter = c + 1
				inside = -1
				if err := lb.Release(p, 3); err != nil {
					failed = err
					return
				}
				p.Compute(rng.IntN(30))
			}
		})
	}
	m.World.Run(10 * sim.MS)
	if failed != nil {
		t.Fatal(failed)
	}
	if counter != 2*rounds || overlaps != 0 {
		t.Fatalf("counter %d (want %d), %d overlaps", counter, 2*rounds, overlaps)
	}
	if lb.Stats.Acquires != 2*rounds || lb.Stats.Contended == 0 {
		t.Fatalf("%d acquires, %d contended: the test did not contend", lb.Stats.Acquires, lb.Stats.Contended)
	}
	t.Logf("%d acquires, %d found the lock held", lb.Stats.Acquires, lb.Stats.Contended)
}

// TestLockboxRefusals: a lock out of range, a release of a lock not held,
// a lock taken twice, and a core of another node.
func TestLockboxRefusals(t *testing.T) {
	m := vnMachine(t)
	lb := m.Nodes[0].VN.Lockbox
	var errs []error
	m.Nodes[0].Cores[0].Spawn("bad", func(p *cpu.Proc) {
		errs = append(errs, lb.Acquire(p, Locks), lb.Release(p, 0), lb.Acquire(p, 1), lb.Acquire(p, 1))
	})
	m.Nodes[1].Cores[0].Spawn("other", func(p *cpu.Proc) { errs = append(errs, lb.Acquire(p, 0)) })
	m.World.Run(sim.MS)
	want := []string{"lock 8 of 8", "releases lock 0 it does not hold", "", "takes lock 1 it holds", "not one of the node's cores"}
	if len(errs) != len(want) {
		t.Fatalf("%d results", len(errs))
	}
	for i, w := range want {
		if (w == "") != (errs[i] == nil) || errs[i] != nil && !strings.Contains(errs[i].Error(), w) {
			t.Errorf("case %d: %v, want %q", i, errs[i], w)
		}
	}
}

// TestLockboxWords: core 0 sets a word after a while, core 1 polls it;
// core 1 sees the new value from the edge after the write (its looks
// before see the old one), and a set and a read cost one access each;
// out of range words and another node's core are refused.
func TestLockboxWords(t *testing.T) {
	for _, c := range []struct {
		word, delay int
		v           uint32
	}{{0, 0, 1}, {1, 37, 7}, {0, 200, 0xffffffff}} {
		m := vnMachine(t)
		nd := m.Nodes[0]
		lb := nd.VN.Lockbox
		spec := m.Spec
		var setAt, seenAt, lastOld sim.Tick
		var setCost sim.Tick
		var failed error
		nd.Cores[0].Spawn("setter", func(p *cpu.Proc) {
			p.Compute(c.delay)
			t0 := p.Now()
			failed = lb.SetWord(p, c.word, c.v)
			setAt, setCost = p.Now(), p.Now()-t0
		})
		nd.Cores[1].Spawn("poller", func(p *cpu.Proc) {
			for {
				v, err := lb.Word(p, c.word)
				if err != nil {
					failed = err
					return
				}
				if v == c.v {
					seenAt = p.Now()
					return
				}
				lastOld = p.Now()
			}
		})
		m.World.Run(sim.MS)
		if failed != nil {
			t.Fatal(failed)
		}
		cycle := nd.Cores[0].Spec().PeriodPS
		if setCost != sim.Tick(spec.ScratchpadCycles)*cycle {
			t.Errorf("%+v: a set took %v, want %d cycles", c, setCost, spec.ScratchpadCycles)
		}
		if seenAt <= setAt || seenAt > setAt+sim.Tick(spec.ScratchpadCycles+1)*cycle || lastOld > setAt {
			t.Errorf("%+v: set at %v, seen at %v (last old value at %v)", c, setAt, seenAt, lastOld)
		}
	}
	m := vnMachine(t)
	lb := m.Nodes[0].VN.Lockbox
	var errs []error
	m.Nodes[0].Cores[0].Spawn("bad", func(p *cpu.Proc) {
		_, err := lb.Word(p, Words)
		errs = append(errs, err, lb.SetWord(p, -1, 0))
	})
	m.Nodes[1].Cores[0].Spawn("other", func(p *cpu.Proc) { errs = append(errs, lb.SetWord(p, 0, 1)) })
	m.World.Run(sim.MS)
	for i, w := range []string{"word 2 of 2", "word -1 of 2", "not one of the node's cores"} {
		if i >= len(errs) || errs[i] == nil || !strings.Contains(errs[i].Error(), w) {
			t.Errorf("case %d: %v, want %q", i, errs, w)
		}
	}
}

// TestVirtualFIFO: core 0 writes 200 packets of random sizes into the
// virtual FIFO to core 1 as its room allows; core 1 reads every one
// exactly once, in order, with its payload; a full packet's store costs
// the lock, sixteen 16-byte stores and the tail word, and the release.
func TestVirtualFIFO(t *testing.T) {
	m := vnMachine(t)
	nd := m.Nodes[0]
	f := nd.VN.To[1]
	const n = 200
	rng := rand.New(rand.NewPCG(1, 2))
	sent := make([][]byte, n)
	for i := range sent {
		sent[i] = make([]byte, rng.IntN(torus.MaxPayload+1))
		for k := range sent[i] {
			sent[i][k] = byte(rng.Uint32())
		}
	}
	sent[0] = make([]byte, torus.MaxPayload) // a full packet, stored before the reader starts
	var got [][]byte
	var failed error
	var fullStore sim.Tick
	nd.Cores[0].Spawn("writer", func(p *cpu.Proc) {
		for i, b := range sent {
			pk := &torus.Packet{Soft: [torus.SoftHeaderSize]byte{byte(i)}, Payload: b}
			for f.Room(p) < pk.Chunks() {
				p.Compute(20)
			}
			t0 := p.Now()
			if failed = f.Store(p, pk); failed != nil {
				return
			}
			if i == 0 {
				fullStore = p.Now() - t0
			}
		}
	})
	f.NotifyReceive(nd.Cores[1].Unit())
	nd.Cores[1].Spawn("reader", func(p *cpu.Proc) {
		p.Compute(1000)
		for len(got) < n {
			if f.Peek(p) == nil {
				p.Compute(7)
				continue
			}
			pk, err := f.Read(p, len(got)%2 == 0)
			if err != nil || pk == nil {
				failed = err
				return
			}
			got = append(got, pk.Payload)
			p.Compute(rng.IntN(400)) // a slow reader: the FIFO fills
		}
	})
	m.World.Run(100 * sim.MS)
	if failed != nil {
		t.Fatal(failed)
	}
	if len(got) != n {
		t.Fatalf("%d packets read of %d", len(got), n)
	}
	for i := range got {
		if string(got[i]) != string(sent[i]) {
			t.Fatalf("packet %d: %d bytes differ from the %d sent", i, len(got[i]), len(sent[i]))
		}
	}
	period := m.Spec.Torus.Period()
	if want := sim.Tick(10+17*10+10) * period; fullStore != want {
		t.Fatalf("a full packet's store took %d ps, want %d", fullStore, want)
	}
	if f.Stats.Packets != n || f.used != 0 {
		t.Fatalf("%d packets through, %d chunks left", f.Stats.Packets, f.used)
	}
	if err := f.Check(&torus.Packet{Payload: make([]byte, torus.MaxPayload+1)}); err == nil {
		t.Fatal("a packet over 256 bytes accepted")
	}
}

// TestMemorySystem: a sweep that fits the L3 hits on its second pass and
// runs at the core's own stream rate; two cores sweeping 3 MB each thrash
// the 4 MB L3 (misses on every pass) where one alone does not, and two
// cores sweeping from the DDR at once take longer than one.
func TestMemorySystem(t *testing.T) {
	const mb = 1 << 20
	run := func(cores, bytes, passes int) (sim.Tick, MemoryStats) {
		m := vnMachine(t)
		nd := m.Nodes[0]
		var end sim.Tick
		var last sim.Tick
		for k := 0; k < cores; k++ {
			base := nd.Alloc(bytes)
			nd.Cores[k].Spawn("sweep", func(p *cpu.Proc) {
				for i := 0; i < passes; i++ {
					t0 := p.Now()
					if err := nd.MemSys.Sweep(p, base, bytes, 0, true); err != nil {
						t.Error(err)
					}
					last = p.Now() - t0
				}
				end = max(end, p.Now())
			})
		}
		m.World.Run(1000 * sim.MS)
		_ = end
		return last, nd.MemSys.Stats
	}
	period := DefaultSpec(2, 1, 1).Torus.Period()
	last, st := run(1, mb, 2)
	if st.Misses != mb/128 || st.Hits != mb/128 {
		t.Fatalf("1 MB twice: %d misses, %d hits, want %d each", st.Misses, st.Hits, mb/128)
	}
	if want := sim.Tick(mb/16384) * sim.Tick((16384*7+63)/64) * period; last != want {
		t.Fatalf("a pass from the L3 took %d ps, want the stream's %d", last, want)
	}
	// Compute-bound: 1,000,003 flops over 1 MB from the L3 take their
	// cycles at 4 a cycle (each of the 64 blocks rounded up), not the
	// stream's.
	{
		m := vnMachine(t)
		nd := m.Nodes[0]
		base := nd.Alloc(mb)
		var pass sim.Tick
		nd.Cores[0].Spawn("sweep", func(p *cpu.Proc) {
			nd.MemSys.Sweep(p, base, mb, 0, false)
			t0 := p.Now()
			if err := nd.MemSys.Sweep(p, base, mb, 1_000_003, false); err != nil {
				t.Error(err)
			}
			pass = p.Now() - t0
		})
		m.World.Run(100 * sim.MS)
		if c := int(pass / period); c < 1_000_003/4 || c > 1_000_003/4+64 {
			t.Fatalf("1,000,003 flops over 1 MB: %d cycles, want %d to %d", c, 1_000_003/4, 1_000_003/4+64)
		}
	}
	_, one := run(1, 3*mb, 3)
	_, two := run(2, 3*mb, 3)
	if one.Misses != 3*mb/128 {
		t.Fatalf("one core, 3 MB three times: %d misses, want the first pass's %d", one.Misses, 3*mb/128)
	}
	if two.Misses != 2*3*3*mb/128 || two.Writebacks == 0 {
		t.Fatalf("two cores, 3 MB each three times: %d misses (want every line every pass), %d write-backs", two.Misses, two.Writebacks)
	}
	alone, _ := run(1, 8*mb, 1)
	shared, _ := run(2, 8*mb, 1)
	if shared <= alone*3/2 {
		t.Fatalf("8 MB from the DDR: %d ps alone, %d with the other core sweeping too", alone, shared)
	}
	t.Logf("8 MB from the DDR: %.2f ms alone, %.2f ms each of two", float64(alone)/1e9, float64(shared)/1e9)
}

// TestModeInput: the modes by name, a mode that does not exist (by name
// and by number), the tasks a node, and what each mode builds.
func TestModeInput(t *testing.T) {
	for _, m := range []Mode{HeaterMode, CoprocessorMode, VirtualNodeMode} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("%v: parsed as %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("dual"); err == nil || err.Error() != `bgl.mode: "dual" is not a mode (heater, coprocessor, virtual-node)` {
		t.Errorf("mode dual: %v", err)
	}
	s := DefaultSpec(2, 1, 1).WithMode(VirtualNodeMode)
	s.Mode = 3
	if err := s.Validate(); err == nil || err.Error() != "bgl.mode: 3 is not a mode (heater, coprocessor, virtual-node)" {
		t.Errorf("mode 3: %v", err)
	}
	if _, err := New(sim.NewWorld(1), "bgl", s); err == nil {
		t.Error("a machine in mode 3 built")
	}
	if HeaterMode.Tasks() != 1 || CoprocessorMode.Tasks() != 1 || VirtualNodeMode.Tasks() != 2 {
		t.Error("tasks a node")
	}
	vn := vnMachine(t)
	if vn.Nodes[0].VN == nil || vn.Nodes[0].Co != nil || vn.Nodes[1].VN.To[0] == vn.Nodes[1].VN.To[1] {
		t.Fatal("virtual node mode: no virtual torus device, or a coprocessor")
	}
	co, _ := New(sim.NewWorld(1), "bgl", DefaultSpec(2, 1, 1).WithMode(CoprocessorMode))
	if co.Nodes[0].VN != nil {
		t.Error("coprocessor mode has a virtual torus device")
	}
	bad := DefaultSpec(2, 1, 1)
	bad.VirtualFIFOChunks = 4
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "bgl.virtual_fifo_chunks: 4 out of range (8 to 65536)") {
		t.Errorf("virtual FIFO of 4 chunks: %v", err)
	}
	bad = DefaultSpec(2, 1, 1)
	bad.Memory.L3Bytes = 3 << 20
	bad.Memory.L3Ways = 7
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "bgl.memory.l3_bytes: 3145728 is not a whole number of sets of 7 ways of 128-byte lines") {
		t.Errorf("an L3 of 3 MB in 7 ways: %v", err)
	}
}
