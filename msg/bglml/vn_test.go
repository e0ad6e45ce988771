package bglml

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// deliverVN is deliver in virtual node mode: src and dst are tasks (node ×
// 2 + core), each task's layer runs on its core. It returns the layers'
// statistics summed and the packets that went through the virtual FIFOs.
func deliverVN(t *testing.T, dims torus.Coord, params Params, sends []send) (sum Stats, virtual uint64) {
	t.Helper()
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(dims[0], dims[1], dims[2]).WithMode(bgl.VirtualNodeMode))
	if err != nil {
		t.Fatal(err)
	}
	sum = deliverOn(t, m, 2*len(m.Nodes), "task", func(me int, up Handler) (*Layer, error) {
		return NewTask(m, me, params, DefaultCosts(), up)
	}, sends)
	for _, nd := range m.Nodes {
		virtual += nd.VN.To[0].Stats.Packets + nd.VN.To[1].Stats.Packets
	}
	return sum, virtual
}

// TestVirtualNodeDeliver: in virtual node mode, every protocol between the
// two tasks of a node (through the virtual FIFOs, and a rendezvous by the
// copy of L144) and between tasks of different nodes (each task's own
// torus FIFO set), into aligned and misaligned buffers: every message
// exactly once, in order, every byte.
func TestVirtualNodeDeliver(t *testing.T) {
	sizes := []int{0, 1, 15, 200, 228, 229, 240, 241, 468, 1000, 4097, 20000}
	for _, pr := range Protocols {
		t.Run(pr.String(), func(t *testing.T) {
			var sends []send
			for k, n := range sizes {
				if pr == OnePacket && firstHdr+4+n > torus.MaxPayload {
					continue
				}
				sends = append(sends,
					send{src: 0, dst: 1, size: n, proto: pr, skew: k % 3 * 5},  // within node 0
					send{src: 1, dst: 0, size: n, proto: pr, skew: k % 2 * 16}, // and back
					send{src: 3, dst: 0, size: n, proto: pr, skew: k % 2 * 8},  // node 1 core 1 to node 0 core 0
					send{src: 10, dst: 5, size: n, proto: pr})                  // node 5 core 0 to node 2 core 1
			}
			st, virtual := deliverVN(t, torus.Coord{4, 2, 1}, DefaultParams(), sends)
			if virtual == 0 {
				t.Error("no packet went through a virtual FIFO")
			}
			if (pr == Rendezvous) != (st.Copied == 2*uint64(len(sizes))) {
				t.Errorf("%d messages copied from the other task's memory", st.Copied)
			}
		})
	}
}

// TestVirtualNodeManyToOne: every task of a 4×2×2 torus in virtual node
// mode sends three messages of mixed sizes to task 0 at once (its own
// node's other task among them), with deterministic and adaptive eager
// and with Interleave.
func TestVirtualNodeManyToOne(t *testing.T) {
	for _, params := range []Params{DefaultParams(), {EagerMax: 1200, Adaptive: true, Batch: 4}, {EagerMax: 1200, Adaptive: true, Batch: 8, Interleave: true}} {
		var sends []send
		for src := 1; src < 32; src++ {
			sends = append(sends,
				send{src: src, dst: 0, size: 700 + src},
				send{src: src, dst: 0, size: 3000 + 17*src},
				send{src: src, dst: 0, size: src})
		}
		deliverVN(t, torus.Coord{4, 2, 2}, params, sends)
	}
}

// TestVirtualNodeGet: gets between the two tasks of a node (L144's copy
// after the owner wrote back its lines) and across nodes, every byte.
func TestVirtualNodeGet(t *testing.T) {
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1).WithMode(bgl.VirtualNodeMode))
	if err != nil {
		t.Fatal(err)
	}
	const size = 5000
	src := make([]uint64, 4)
	for k := range src {
		nd := m.Nodes[k/2]
		src[k] = nd.Alloc(size)
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(k*41 + i*3)
		}
		nd.Mem.Write(src[k], b)
	}
	layers := make([]*Layer, 4)
	for k := range layers {
		if layers[k], err = NewTask(m, k, DefaultParams(), DefaultCosts(), nil); err != nil {
			t.Fatal(err)
		}
	}
	got := map[int]bool{}
	dsts := map[int]uint64{}
	for k, l := range layers {
		l.Core().Spawn("get", func(p *cpu.Proc) {
			// task 0 gets from task 1 (its node's other) and task 3.
			from := map[int][]int{0: {1, 3}, 2: {1}}[k]
			done := 0
			for _, f := range from {
				dsts[k*4+f] = m.Nodes[k/2].Alloc(size)
				if err := l.Get(p, f, src[f], dsts[k*4+f], size, func() { done++; got[k*4+f] = true }); err != nil {
					t.Error(err)
				}
			}
			l.Until(p, func() bool { return done == len(from) })
			// serve the others' gets until everyone is done
			l.Until(p, func() bool { return len(got) == 3 && l.Idle() })
		})
	}
	m.World.Run(100 * sim.MS)
	if len(got) != 3 {
		t.Fatalf("%d gets done of 3", len(got))
	}
	for key, a := range dsts {
		k, f := key/4, key%4
		b := make([]byte, size)
		m.Nodes[k/2].Mem.Read(a, b)
		for i := range b {
			if b[i] != byte(f*41+i*3) {
				t.Fatalf("task %d's get from task %d: byte %d differs", k, f, i)
			}
		}
	}
	if layers[0].Stats.Copied != 1 || layers[2].Stats.Copied != 0 {
		t.Fatalf("copies: task 0 %d (want 1: from task 1), task 2 %d (want 0: from another node)", layers[0].Stats.Copied, layers[2].Stats.Copied)
	}
}

// TestVirtualNodeBadInput: a layer a node on a machine in virtual node
// mode, a layer a task on one that is not, tasks out of range, a send to
// itself, a broadcast of no bytes (the same refusal as with a task a
// node).
func TestVirtualNodeBadInput(t *testing.T) {
	vn, _ := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1).WithMode(bgl.VirtualNodeMode))
	co, _ := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 1, 1).WithMode(bgl.CoprocessorMode))
	if _, err := New(vn, 0, DefaultParams(), DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "virtual node mode: a layer a task") {
		t.Errorf("New in virtual node mode: %v", err)
	}
	if _, err := NewTask(co, 0, DefaultParams(), DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "needs virtual node mode, not coprocessor") {
		t.Errorf("NewTask in coprocessor mode: %v", err)
	}
	if _, err := NewTask(vn, 4, DefaultParams(), DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "task 4 of 4") {
		t.Errorf("task 4 of 4: %v", err)
	}
	if _, err := NewTask(vn, 0, Params{EagerMax: 1200, Batch: 8, Coprocessor: true}, DefaultCosts(), nil); err == nil {
		t.Error("coprocessor receiving in virtual node mode accepted")
	}
	l, _ := NewTask(vn, 1, DefaultParams(), DefaultCosts(), nil)
	var errs []error
	vn.Nodes[0].Cores[1].Spawn("bad", func(p *cpu.Proc) {
		errs = append(errs, l.Send(p, &Message{Dst: 1}), l.Send(p, &Message{Dst: 4}), l.Get(p, 1, 0, 0, 8, nil), l.Bcast(p, 0, 0, 1, nil))
	})
	vn.World.Run(sim.MS)
	for i, w := range []string{"task 1 (node 0 core 1): send to task 1 (0 to 3, not itself)", "send to task 4", "get of 8 bytes from task 1", "broadcast of 0 bytes"} {
		if i >= len(errs) || errs[i] == nil || !strings.Contains(errs[i].Error(), w) {
			t.Errorf("case %d: %v, want %q", i, errs, w)
		}
	}
}

// mixedVN is mixed in virtual node mode: every task computes a random
// while, advances, posts a message of a random protocol to a random task
// (the other task of its node among them), four times, then waits for
// what it expects. It returns every completion and every statistic.
func mixedVN(t *testing.T, dims torus.Coord, spin bool, seed uint64, partitions int) string {
	t.Helper()
	w := sim.NewWorld(1)
	w.SetPartitions(partitions)
	m, err := bgl.New(w, "bgl", bgl.DefaultSpec(dims[0], dims[1], dims[2]).WithMode(bgl.VirtualNodeMode))
	if err != nil {
		t.Fatal(err)
	}
	n := 2 * len(m.Nodes)
	rng := rand.New(rand.NewPCG(seed, 9))
	type post struct {
		at, dst, size int
		proto         Protocol
	}
	plans := make([][]post, n)
	expect := make([]int, n)
	for i := range plans {
		for k := 0; k < 4; k++ {
			dst := rng.IntN(n - 1)
			if k%2 == 0 {
				dst = i ^ 1 // the other task of the node
			} else if dst >= i {
				dst++
			}
			s := post{at: rng.IntN(8000), dst: dst, size: rng.IntN(3000), proto: Protocols[rng.IntN(len(Protocols))]}
			if s.proto == OnePacket {
				s.size %= torus.MaxPayload - FirstHeaderBytes + 1
			}
			plans[i] = append(plans[i], s)
			expect[dst]++
		}
	}
	params := DefaultParams()
	params.Spin = spin
	lines := make([][]string, n) // a task's, written in its node's domain only
	fails := make([]error, n)
	for i := 0; i < n; i++ {
		nd := m.Nodes[i/2]
		got := 0
		var pp *cpu.Proc
		l, err := NewTask(m, i, params, DefaultCosts(), func(src int, _ []byte, size int) (uint64, func()) {
			return nd.Alloc(max(size, 1)), func() {
				got++
				lines[i] = append(lines[i], fmt.Sprintf("task %3d t %12d from %3d size %d\n", i, pp.Now(), src, size))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		l.Core().Spawn("mixed", func(p *cpu.Proc) {
			pp = p
			buf := nd.Alloc(3000)
			for _, s := range plans[i] {
				p.Compute(s.at)
				for l.Advance(p) {
				}
				if err := l.Send(p, &Message{Dst: s.dst, Addr: buf, Len: s.size, Proto: s.proto}); err != nil {
					fails[i] = err
				}
			}
			l.Until(p, func() bool { return got == expect[i] })
			l.Until(p, l.Idle)
		})
	}
	m.World.Run(100 * sim.MS)
	var all []string
	for i := range lines {
		if fails[i] != nil {
			t.Fatal(fails[i])
		}
		all = append(all, lines[i]...)
	}
	sort.Strings(all)
	var log strings.Builder
	for _, s := range all {
		log.WriteString(s)
	}
	for _, st := range m.World.Stats().All() {
		if v, ok := st.(*sim.Counter); ok {
			fmt.Fprintf(&log, "%s %d\n", st.Name(), v.Value())
		}
	}
	fmt.Fprintf(&log, "end %d\n", m.World.Now())
	return log.String()
}

// TestVirtualNodeDozeMatchesSpin: in virtual node mode, dozing (woken by
// the torus and by the virtual FIFO) gives the polling loop's run to the
// byte: every completion's time and every statistic.
func TestVirtualNodeDozeMatchesSpin(t *testing.T) {
	for _, c := range []struct {
		dims torus.Coord
		seed uint64
	}{{torus.Coord{2, 2, 1}, 1}, {torus.Coord{4, 2, 2}, 2}} {
		spin, doze := mixedVN(t, c.dims, true, c.seed, 1), mixedVN(t, c.dims, false, c.seed, 1)
		if strings.Count(spin, " from ") != 8*c.dims[0]*c.dims[1]*c.dims[2] || !strings.Contains(spin, ".busy_ps") {
			t.Fatal("the comparison lacks messages or the cores' statistics")
		}
		if spin != doze {
			a, b := strings.Split(spin, "\n"), strings.Split(doze, "\n")
			for k := range min(len(a), len(b)) {
				if a[k] != b[k] {
					t.Fatalf("%v: line %d: polling %q, dozing %q", c.dims, k, a[k], b[k])
				}
			}
			t.Fatalf("%v: polling gave %d lines, dozing %d", c.dims, len(a), len(b))
		}
	}
}

// TestVirtualNodeCopyFaster: between the two tasks of a node, a message
// of 8 KB by L144's copy (the rendezvous protocol) takes less than half
// the time it takes through the virtual FIFOs (eager: every byte through
// uncached scratchpad stores and loads) — the reason for the protocol
// (L144); and a 1-byte message to the other task of the node is faster
// than to a neighbour node (no router, no wire).
func TestVirtualNodeCopyFaster(t *testing.T) {
	spec := bgl.DefaultSpec(2, 1, 1)
	params := DefaultParams()
	params.EagerMax = 1 << 20
	cyc := func(a, b int, pr Protocol, size int) int {
		h, err := TaskPingPong(spec, params, DefaultCosts(), a, b, pr, size, 4)
		if err != nil {
			t.Fatal(err)
		}
		return int(h / spec.Torus.Period())
	}
	cp, fifo := cyc(0, 1, Rendezvous, 8192), cyc(0, 1, Eager, 8192)
	local, remote := cyc(0, 1, OnePacket, 1), cyc(0, 2, OnePacket, 1)
	t.Logf("8 KB to the other task: %d cycles by copy, %d through the virtual FIFOs; 1 byte: %d cycles within the node, %d to the next node", cp, fifo, local, remote)
	if 2*cp >= fifo {
		t.Errorf("8 KB: copy %d cycles, virtual FIFOs %d", cp, fifo)
	}
	if local >= remote {
		t.Errorf("1 byte: %d cycles within the node, %d to the neighbour", local, remote)
	}
	if _, err := TaskPingPong(spec, params, DefaultCosts(), 1, 1, Eager, 1, 1); err == nil {
		t.Error("a ping-pong of a task with itself accepted")
	}
}

// TestVirtualNodePartitions: virtual node mode's traffic run on one, two
// and four goroutines gives the same completions and statistics to the
// byte (each node's lockbox, virtual FIFOs and tasks are in its domain).
func TestVirtualNodePartitions(t *testing.T) {
	one := mixedVN(t, torus.Coord{4, 2, 2}, false, 3, 1)
	for _, parts := range []int{2, 4} {
		if got := mixedVN(t, torus.Coord{4, 2, 2}, false, 3, parts); got != one {
			t.Errorf("%d partitions differ from one", parts)
		}
	}
}
