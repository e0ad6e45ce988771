package bgl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TestCostartCojoin runs transient work units on the coprocessor: the
// unit's result is in memory when cojoin returns, and the main core pays
// the flush of the unit's input lines, the descriptor, the poll and the
// invalidation of its output lines, while the coprocessor pays the unit,
// the flush of its output lines and the done word — to the cycle, give or
// take a look of each core's polling loop.
func TestCostartCojoin(t *testing.T) {
	cases := []struct {
		name            string
		work, in, out   int
		posted, between int // units posted back to back, cycles of main-core work between costart and cojoin
	}{
		{"one unit", 1000, 4, 16, 1, 0},
		{"main core busy meanwhile", 1000, 0, 32, 1, 3000},
		{"three units queued", 500, 8, 8, 3, 0},
		{"no lines", 200, 0, 0, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := DefaultSpec(2, 1, 1).WithMode(CoprocessorMode)
			m, err := New(sim.NewWorld(1), "bgl", spec)
			if err != nil {
				t.Fatal(err)
			}
			nd := m.Nodes[0]
			period := spec.Torus.Period()
			buf := nd.Alloc(8 * tc.posted)
			var start, end sim.Tick
			var failed error
			nd.Cores[0].Spawn("main", func(p *cpu.Proc) {
				start = p.Now()
				var ws []*Work
				for k := 0; k < tc.posted; k++ {
					k := k
					w := &Work{Name: "unit", In: tc.in, Out: tc.out, Run: func(cp *cpu.Proc) {
						cp.Compute(tc.work)
						nd.Mem.Write(buf+uint64(8*k), []byte{byte(k + 1), 0, 0, 0, 0, 0, 0, 0})
					}}
					if err := nd.Co.Costart(p, w); err != nil {
						failed = err
						return
					}
					ws = append(ws, w)
				}
				p.Compute(tc.between)
				for _, w := range ws {
					if err := nd.Co.Cojoin(p, w); err != nil {
						failed = err
						return
					}
				}
				end = p.Now()
			})
			m.World.Run(sim.S)
			if failed != nil {
				t.Fatal(failed)
			}
			b := make([]byte, 8*tc.posted)
			nd.Mem.Read(buf, b)
			for k := 0; k < tc.posted; k++ {
				if b[8*k] != byte(k+1) {
					t.Fatalf("unit %d's result not in memory after cojoin", k)
				}
			}
			s := spec
			post := tc.in*s.FlushLineCycles + s.ScratchpadCycles
			co := tc.work + tc.out*s.FlushLineCycles + s.ScratchpadCycles
			// The coprocessor takes the first unit at the end of its first
			// look after the post (a look: ScratchpadCycles), runs them
			// all back to back (a look between two), the main core sees
			// the last done at its first poll after it and invalidates
			// its lines (the earlier units' invalidations overlap the
			// coprocessor's work on the later ones).
			lo := post + tc.posted*co + (tc.posted-1)*s.ScratchpadCycles
			lo = max(lo, tc.posted*post+tc.between+s.ScratchpadCycles)
			lo += tc.out * s.InvalidateLineCycles
			got := int((end - start) / period)
			if got < lo || got > lo+3*s.ScratchpadCycles+tc.posted*post {
				t.Fatalf("costart to cojoin: %d cycles, want %d to %d", got, lo, lo+3*s.ScratchpadCycles+tc.posted*post)
			}
			if nd.Co.Stats.Units != uint64(tc.posted) || nd.Co.Stats.FlushedLines != uint64(tc.posted*tc.out) {
				t.Fatalf("stats %+v", nd.Co.Stats)
			}
			t.Logf("%d cycles (at least %d)", got, lo)
		})
	}
}

// TestModes checks the modes' specs and their refusals.
func TestModes(t *testing.T) {
	s := DefaultSpec(4, 2, 2)
	if s.Mode != HeaterMode || s.Torus.Groups != 1 {
		t.Fatalf("default: %v with %d FIFO sets", s.Mode, s.Torus.Groups)
	}
	for _, m := range []Mode{CoprocessorMode, VirtualNodeMode} {
		if g := s.WithMode(m).Torus.Groups; g != 2 {
			t.Errorf("%v: %d FIFO sets, want 2", m, g)
		}
	}
	bad := s
	bad.Mode = CoprocessorMode
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "bgl.mode: coprocessor needs a torus of two FIFO sets") {
		t.Errorf("coprocessor mode on one FIFO set: %v", err)
	}
	bad.Mode = 7
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "bgl.mode: 7") {
		t.Errorf("mode 7: %v", err)
	}
	m, err := New(sim.NewWorld(1), "bgl", s.WithMode(CoprocessorMode))
	if err != nil {
		t.Fatal(err)
	}
	nd := m.Nodes[0]
	if nd.Co == nil || len(nd.PLs) != 2 || nd.PLs[1].Group() != 1 {
		t.Fatal("coprocessor mode: no coprocessor or no second packet layer")
	}
	if err := nd.Co.AddPermanent(&Permanent{Name: "x"}); err == nil {
		t.Error("a permanent unit without functions accepted")
	}
	if err := nd.Co.Cojoin(nil, &Work{Name: "y"}); err == nil || !strings.Contains(err.Error(), "not posted") {
		t.Errorf("cojoin of a unit never posted: %v", err)
	}
	h, _ := New(sim.NewWorld(1), "bgl", s)
	if h.Nodes[0].Co != nil {
		t.Error("heater mode has a coprocessor")
	}
}

// TestSecondSetPacketLayer: the second core's packet layer writes into
// its own injection FIFOs and reads its own reception FIFOs; the first
// set's layer sees none of it.
func TestSecondSetPacketLayer(t *testing.T) {
	m, err := New(sim.NewWorld(1), "bgl", DefaultSpec(4, 2, 2).WithMode(VirtualNodeMode))
	if err != nil {
		t.Fatal(err)
	}
	a, b := m.Nodes[0], m.Nodes[1]
	var got *torus.Packet
	var seen0 int
	var failed error
	a.Cores[1].Spawn("send", func(p *cpu.Proc) {
		failed = a.PLs[1].Write(p, 0, &torus.Packet{Dst: b.Torus.At, Group: 1, Payload: []byte("set one")}, FromCache)
	})
	b.Cores[1].Spawn("recv", func(p *cpu.Proc) {
		f := b.PLs[1].Poll(p)
		seen0 = b.PL.Seen()
		got, failed = b.PLs[1].Read(p, f, true)
	})
	m.World.Run(sim.MS)
	if failed != nil || got == nil || string(got.Payload) != "set one" {
		t.Fatalf("got %v, %v", got, failed)
	}
	if seen0 != -1 {
		t.Fatalf("the first set's layer saw FIFO %d", seen0)
	}
	st := a.Torus.Eng.Stats()
	for k, want := range map[int]uint64{0: 0, 8: 1} {
		c, ok := st.Get(fmt.Sprintf("bgl.node[0].router.inj[%d].packets", k))
		if !ok || c.(*sim.Counter).Value() != want {
			t.Fatalf("injection FIFO %d: %v packets, want %d", k, c, want)
		}
	}
	if err := a.PLs[1].Write(nil, m.Spec.Torus.GroupInj(), &torus.Packet{Dst: b.Torus.At}, FromCache); err == nil {
		t.Fatal("the set's FIFO 8 accepted (a set has 8)")
	}
}
