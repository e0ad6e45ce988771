package bglml

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TestOverlap runs the compute-and-communicate experiment under the three
// progress modes (Overlap checks every message once, with its bytes) and
// requires what each mode is for: without computation, interrupts change
// nothing (the layer is masked while the process polls it) and the
// thread costs its scratchpad hand-offs; a rendezvous exchange (its data
// waits for the grant, which polling reads only after the computation)
// is hidden by the thread and by the interrupts and not by polling;
// eager messages that arrive during the
// computation cost the interrupt-driven layer a context switch each.
func TestOverlap(t *testing.T) {
	spec := bgl.DefaultSpec(2, 2, 2)
	a, b := torus.Coord{}, torus.Coord{1, 0, 0}
	run := func(g Progress, size, compute int) sim.Tick {
		d, err := Overlap(spec, DefaultParams(), DefaultCosts(), a, b, g, size, compute, 3)
		if err != nil {
			t.Fatalf("%v, %d bytes, %d cycles: %v", g, size, compute, err)
		}
		return d
	}
	cycles := func(d sim.Tick) float64 { return float64(d) / float64(spec.Torus.Period()) }
	for _, size := range []int{0, 1, 1000, 16384} {
		poll0, thr0, irq0 := run(Polling, size, 0), run(Thread, size, 0), run(Interrupts, size, 0)
		if irq0 != poll0 {
			t.Errorf("%d bytes, no computation: interrupts %v, polling %v: want the same", size, irq0, poll0)
		}
		if thr0 <= poll0 {
			t.Errorf("%d bytes, no computation: thread %v, polling %v: want the hand-offs to cost", size, thr0, poll0)
		}
		const compute = 30000
		poll, thr, irq := run(Polling, size, compute), run(Thread, size, compute), run(Interrupts, size, compute)
		t.Logf("%5d bytes: exchange alone %.0f cycles (polling), %.0f (thread); with %d cycles of computation: polling %.0f, thread %.0f, interrupts %.0f",
			size, cycles(poll0), cycles(thr0), compute, cycles(poll), cycles(thr), cycles(irq))
		if size == 16384 {
			if cycles(poll) < compute+cycles(poll0)*0.9 {
				t.Errorf("16 KB: polling %.0f cycles: want about the computation and the exchange one after the other (%d + %.0f)", cycles(poll), compute, cycles(poll0))
			}
			if cycles(thr) > 1.05*max(compute, cycles(thr0)) || cycles(irq) > 1.05*max(compute, cycles(poll0)) {
				t.Errorf("16 KB: thread %.0f, interrupts %.0f cycles: want both within 5 %% of the longer of the computation and the exchange", cycles(thr), cycles(irq))
			}
		}
		if size == 1000 && irq <= poll {
			t.Errorf("1000 bytes (eager): interrupts %v, polling %v: want the context switches to cost", irq, poll)
		}
	}
	if x, y := run(Interrupts, 16384, 30000), run(Interrupts, 16384, 30000); x != y {
		t.Errorf("two runs: %v and %v", x, y)
	}
}

// TestInterruptsDeliver runs the delivery tests' traffic (one-packet,
// eager or adaptive eager, and rendezvous messages by size, many to one
// and one to many, misaligned buffers) with every node computing 40,000
// cycles, in slices, after posting its sends and a pass, then polling:
// every message arrives exactly once with its bytes, in order per pair,
// done() once a send, and every node received messages by its interrupt
// handlers while it computed.
func TestInterruptsDeliver(t *testing.T) {
	for _, c := range []struct {
		name   string
		params Params
		sizes  func(src int) []int
	}{
		{"deterministic eager", DefaultParams(), func(src int) []int { return []int{src, 700 + src, 3000 + 17*src, 20000 + src} }},
		// The one-packet message last: one before an adaptive-eager
		// message to the same node can reach the upcall after it (with
		// polling too; TestManyToOne's order).
		{"adaptive eager", Params{EagerMax: 1200, Adaptive: true, Batch: 4}, func(src int) []int { return []int{700 + src, 3000 + 17*src, 20000 + src, src} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sends []send
			for src := 1; src < 16; src++ {
				for k, n := range c.sizes(src) {
					sends = append(sends, send{src: src, dst: 0, size: n, proto: Auto, skew: src % 3 * 5},
						send{src: 0, dst: src, size: n, proto: Auto, skew: k % 2 * 16})
				}
			}
			m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(4, 2, 2))
			if err != nil {
				t.Fatal(err)
			}
			var layers []*Layer
			var handled []uint64
			deliverWork = func(p *cpu.Proc, l *Layer) {
				l.Advance(p) // the posts' first packets written
				for k := 0; k < 40000/ComputeSlice; k++ {
					p.Compute(ComputeSlice)
				}
				handled = append(handled, l.Stats.Received)
			}
			defer func() { deliverWork = nil }()
			deliverOn(t, m, len(m.Nodes), "node", func(me int, up Handler) (*Layer, error) {
				l, err := New(m, me, c.params, DefaultCosts(), up)
				if err == nil {
					err = l.StartInterrupts()
				}
				layers = append(layers, l)
				return l, err
			}, sends)
			var raised, passes uint64
			for i, l := range layers {
				raised += l.IrqStats.Raised
				passes += l.IrqStats.Passes
				if want := uint64(map[bool]int{true: 4 * 15, false: 4}[i == 0]); l.Stats.Received != want {
					t.Errorf("node %d: %d messages received, want %d", i, l.Stats.Received, want)
				}
			}
			for i, h := range handled {
				if h == 0 {
					t.Errorf("process %d: no message received by the interrupts while it computed", i)
				}
			}
			t.Logf("%d interrupts, %d passes in handlers", raised, passes)
		})
	}
}

// TestCommThreadDeliver: messages of every protocol between the
// communication threads of two nodes, posted all at once while the main
// cores compute: each once, with its bytes, and the lines of each
// received message written back by the coprocessor and invalidated by the
// main core.
func TestCommThreadDeliver(t *testing.T) {
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 2, 1).WithMode(bgl.CoprocessorMode))
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{0, 1, 200, 1000, 4096, 20000}
	var cts [2]*CommThread
	got := [2][]int{}
	for me := 0; me < 2; me++ {
		me := me
		nd := m.Nodes[me]
		var bufs []uint64
		l, err := New(m, me, DefaultParams(), DefaultCosts(), func(src int, info []byte, n int) (uint64, func()) {
			k := int(info[0])
			a := nd.Alloc(max(n, 1))
			bufs = append(bufs, a)
			return a, func() {
				got[me] = append(got[me], k)
				b := make([]byte, n)
				nd.Mem.Read(a, b)
				for i := range b {
					if b[i] != byte(k+i) {
						t.Errorf("node %d: message %d: byte %d differs", me, k, i)
						break
					}
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if cts[me], err = l.StartCommThread(); err != nil {
			t.Fatal(err)
		}
		ct := cts[me]
		nd.Cores[0].Spawn("main", func(p *cpu.Proc) {
			sent := 0
			for k, n := range sizes {
				a := nd.Alloc(max(n, 1))
				b := make([]byte, n)
				for i := range b {
					b[i] = byte(k + i)
				}
				nd.Mem.Write(a, b)
				pr := Auto
				if k == 1 {
					pr = OnePacket
				}
				if err := ct.Post(p, &Message{Dst: 1 - me, Addr: a, Len: n, Info: []byte{byte(k)}, Proto: pr, Done: func() { sent++ }}); err != nil {
					t.Error(err)
				}
			}
			p.Compute(50000)
			ct.Wait(p, func() bool { return sent == len(sizes) && len(got[me]) == len(sizes) })
		})
	}
	m.World.Run(sim.S)
	var lines int
	for _, n := range sizes {
		lines += bgl.Lines(0, n)
	}
	for me := 0; me < 2; me++ {
		if len(got[me]) != len(sizes) {
			t.Errorf("node %d: %d messages, want %d", me, len(got[me]), len(sizes))
		}
		for k, g := range got[me] {
			if g != k {
				t.Errorf("node %d: message %d arrived %d-th", me, g, k)
			}
		}
		st := cts[me].Stats
		if st.Completions != uint64(2*len(sizes)) || st.Invalidated != uint64(lines) || m.Nodes[me].Co.Stats.FlushedLines != uint64(lines) {
			t.Errorf("node %d: %d completions, %d lines invalidated, %d written back; want %d, %d, %d", me, st.Completions, st.Invalidated, m.Nodes[me].Co.Stats.FlushedLines, 2*len(sizes), lines, lines)
		}
	}
}

// TestProgressBadInput: the refusals of the thread, the interrupts and
// the overlap experiment.
func TestProgressBadInput(t *testing.T) {
	heat, _ := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1))
	co, _ := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1).WithMode(bgl.CoprocessorMode))
	l, _ := New(heat, 0, DefaultParams(), DefaultCosts(), nil)
	if _, err := l.StartCommThread(); err == nil || !strings.Contains(err.Error(), "coprocessor mode needed") {
		t.Errorf("thread in heater mode: %v", err)
	}
	if err := l.StartInterrupts(); err != nil {
		t.Fatal(err)
	}
	if err := l.StartInterrupts(); err == nil || !strings.Contains(err.Error(), "already runs") {
		t.Errorf("interrupts twice: %v", err)
	}
	lh, _ := New(co, 0, Params{EagerMax: 1200, Batch: 8, Coprocessor: true}, DefaultCosts(), nil)
	if _, err := lh.StartCommThread(); err == nil || !strings.Contains(err.Error(), "rendezvous helper") {
		t.Errorf("thread with the rendezvous helper: %v", err)
	}
	if err := lh.StartInterrupts(); err == nil || !strings.Contains(err.Error(), "rendezvous helper") {
		t.Errorf("interrupts with the rendezvous helper: %v", err)
	}
	lc, _ := New(co, 1, DefaultParams(), DefaultCosts(), nil)
	ct, err := lc.StartCommThread()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.StartCommThread(); err == nil || !strings.Contains(err.Error(), "already runs") {
		t.Errorf("thread twice: %v", err)
	}
	co.Nodes[1].Cores[0].Spawn("bad", func(p *cpu.Proc) {
		if err := ct.Post(p, &Message{Dst: 1}); err == nil || !strings.Contains(err.Error(), "not itself") {
			t.Errorf("post to itself: %v", err)
		}
		if err := ct.Post(p, &Message{Dst: 0, Len: 300, Proto: OnePacket}); err == nil || !strings.Contains(err.Error(), "one-packet") {
			t.Errorf("a one-packet message of 300 bytes: %v", err)
		}
	})
	co.World.Run(sim.MS)
	spec := bgl.DefaultSpec(2, 2, 2)
	for _, c := range []struct {
		a, b                 torus.Coord
		g                    Progress
		size, compute, steps int
		want                 string
	}{
		{torus.Coord{}, torus.Coord{1, 0, 0}, Polling, 10, 0, 0, "steps ≥ 1"},
		{torus.Coord{}, torus.Coord{1, 0, 0}, Polling, -1, 0, 1, "0 to"},
		{torus.Coord{}, torus.Coord{1, 0, 0}, Polling, 10, -5, 1, "cycles"},
		{torus.Coord{}, torus.Coord{}, Polling, 10, 0, 1, "two nodes"},
		{torus.Coord{}, torus.Coord{2, 0, 0}, Polling, 10, 0, 1, "two nodes"},
		{torus.Coord{}, torus.Coord{1, 0, 0}, Progress(7), 10, 0, 1, "progress mode"},
	} {
		if _, err := Overlap(spec, DefaultParams(), DefaultCosts(), c.a, c.b, c.g, c.size, c.compute, c.steps); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}
	if _, err := ParseProgress("threads"); err == nil || !strings.Contains(err.Error(), "(polling, thread, interrupts)") {
		t.Errorf("ParseProgress: %v", err)
	}
	for _, g := range Progresses {
		if h, err := ParseProgress(g.String()); err != nil || h != g {
			t.Errorf("ParseProgress(%q): %v, %v", g, h, err)
		}
	}
}

// TestProgressPartitions: the overlap experiment under the thread and the
// interrupts, and the torus broadcast in virtual node mode, on one, two
// and four goroutines give the same times to the picosecond (the thread,
// the interrupt line and the tasks are in their node's domain).
func TestProgressPartitions(t *testing.T) {
	spec := bgl.DefaultSpec(2, 2, 2)
	for _, g := range []Progress{Thread, Interrupts} {
		var one sim.Tick
		for _, parts := range []int{1, 2, 4} {
			d, err := overlapOn(parts, spec, DefaultParams(), DefaultCosts(), torus.Coord{}, torus.Coord{1, 1, 1}, g, 16384, 20000, 2)
			if err != nil {
				t.Fatal(err)
			}
			if parts == 1 {
				one = d
			} else if d != one {
				t.Errorf("%v: %d partitions %v, one %v", g, parts, d, one)
			}
		}
	}
	vn := bgl.DefaultSpec(4, 2, 2).WithMode(bgl.VirtualNodeMode)
	var one sim.Tick
	for _, parts := range []int{1, 2, 4} {
		d, err := bcastOn(parts, vn, DefaultParams(), DefaultCosts(), torus.Coord{1, 1, 0}, 3, 3*VNBcastChunk+7, nil)
		if err != nil {
			t.Fatal(err)
		}
		if parts == 1 {
			one = d
		} else if d != one {
			t.Errorf("virtual node broadcast: %d partitions %v, one %v", parts, d, one)
		}
	}
}

// TestInterruptCost: a node computing 60,000 cycles in slices while ten
// one-packet messages arrive 4,000 cycles apart takes an interrupt a
// message, and each costs its core the context switch: with 1,103 cycles
// a switch instead of 103 the computation ends exactly 1,000 cycles an
// interrupt later.
func TestInterruptCost(t *testing.T) {
	run := func(irq int) (end sim.Tick, raised uint64) {
		spec := bgl.DefaultSpec(2, 1, 1)
		spec.InterruptCycles = irq
		m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		rx, err := New(m, 0, DefaultParams(), DefaultCosts(), func(int, []byte, int) (uint64, func()) {
			return m.Nodes[0].Alloc(64), func() { got++ }
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := rx.StartInterrupts(); err != nil {
			t.Fatal(err)
		}
		tx, _ := New(m, 1, DefaultParams(), DefaultCosts(), nil)
		m.Nodes[1].Cores[0].Spawn("tx", func(p *cpu.Proc) {
			for k := 0; k < 10; k++ {
				p.Compute(4000)
				if err := tx.Send(p, &Message{Dst: 0, Addr: m.Nodes[1].Alloc(8), Len: 8}); err != nil {
					t.Error(err)
				}
			}
			tx.Until(p, tx.Idle)
		})
		m.Nodes[0].Cores[0].Spawn("rx", func(p *cpu.Proc) {
			for k := 0; k < 60000/ComputeSlice; k++ {
				p.Compute(ComputeSlice)
			}
			end = p.Now()
			rx.Until(p, func() bool { return got == 10 })
		})
		m.World.Run(sim.S)
		if got != 10 {
			t.Fatalf("%d messages of 10", got)
		}
		return end / spec.Torus.Period(), rx.IrqStats.Raised
	}
	e1, r1 := run(103)
	e2, r2 := run(1103)
	if r1 != 10 || r2 != 10 || e2-e1 != 10*1000 {
		t.Errorf("103 cycles: %d interrupts, computation ended at %d; 1,103: %d, %d; want 10 each, 10,000 cycles apart", r1, e1, r2, e2)
	}
	t.Logf("60,000 cycles of computation end at %d with 10 interrupts of 103 cycles (%d a handler)", e1, (e1-60000)/10)
}
