package nic

import (
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

type frameSrc struct {
	out      *sim.Chan[Frame]
	n, i     int
	src, dst int
}

func (s *frameSrc) Tick(sim.Tick) bool {
	if s.i < s.n && s.out.Ready() {
		var p roce.Packet
		p.Opcode, p.PSN, p.Payload = roce.SendOnly, uint32(s.i), make([]byte, 1000)
		s.out.Send(Frame{Txn: sim.Txn{ID: sim.TxnID(s.i+1) << 32}, SrcNode: s.src, DstNode: s.dst, Frame: roce.Frame{Packet: p}})
		s.i++
	}
	return s.i < s.n
}

type frameSink struct {
	in  *sim.Chan[Frame]
	got []Frame
	at  []sim.Tick
}

func (s *frameSink) Tick(now sim.Tick) bool {
	for s.in.Valid() {
		s.got = append(s.got, s.in.Recv())
		s.at = append(s.at, now)
	}
	return false
}

// A wire carries frames at its line rate (preamble, FCS and gap included)
// after its latency, and loses the configured fraction.
func TestWireRateLatencyLoss(t *testing.T) {
	for _, loss := range []uint32{0, 100_000} {
		e := sim.NewEngine(1)
		clk := e.NewClock("clk", 1000, 0)
		src, snk := &frameSrc{n: 200}, &frameSink{}
		su, ku := clk.Add("src", src), clk.Add("sink", snk)
		w, err := NewWire(clk, "wire", WireSpec{RateMbps: 1000, LatencyPS: sim.US, LossPPM: loss}, su, ku)
		if err != nil {
			t.Fatal(err)
		}
		src.out, snk.in = w.In, w.Out
		e.Run(sim.S)
		f := Frame{Frame: roce.Frame{Packet: roce.Packet{Opcode: roce.SendOnly, Payload: make([]byte, 1000)}}}
		per := sim.Tick(roce.WireBytes(f.Len())*8) * sim.NS // bytes × 8 ns at 1 Gb/s
		if loss == 0 {
			if len(snk.got) != 200 {
				t.Fatalf("%d of 200 frames", len(snk.got))
			}
			if gap := snk.at[100] - snk.at[99]; gap < per-sim.NS || gap > per+sim.NS {
				t.Fatalf("frames %v apart, want %v", gap, per)
			}
			if snk.at[0] < per+sim.US {
				t.Fatalf("first frame at %v: before serialization + latency", snk.at[0])
			}
		} else if lost := 200 - len(snk.got); lost < 5 || lost > 40 || w.lost.Value() != uint64(lost) {
			t.Fatalf("lost %d of 200 at 10%% (counter %d)", lost, w.lost.Value())
		}
	}
}

// The switch forwards by destination node and keeps each flow in order.
func TestSwitchForwards(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 1000, 0)
	sw, err := NewSwitch(clk, "sw", SwitchSpec{Ports: 3, LatencyPS: 500 * sim.NS, QueueLen: 4, IngressLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	srcs := []*frameSrc{{n: 50, src: 0, dst: 2}, {n: 50, src: 1, dst: 2}}
	snk := &frameSink{}
	ku := clk.Add("sink2", snk)
	for i, s := range srcs {
		u := clk.Add("src"+string(rune('0'+i)), s)
		s.out = sim.NewChan[Frame](u, sw.Unit(), "in"+string(rune('0'+i)), 2)
		back := &frameSink{}
		back.in = sim.NewChan[Frame](sw.Unit(), clk.Add("sink"+string(rune('0'+i)), back), "out"+string(rune('0'+i)), 2)
		sw.SetPort(i, s.out, back.in)
	}
	sw.SetPort(2, nil, sim.NewChan[Frame](sw.Unit(), ku, "out2", 2))
	snk.in = sw.Out[2]
	e.Run(sim.S)
	if len(snk.got) != 100 {
		t.Fatalf("%d of 100 frames forwarded", len(snk.got))
	}
	next := map[int]uint32{}
	for _, f := range snk.got {
		if f.Packet.PSN != next[f.SrcNode] {
			t.Fatalf("from node %d: PSN %d, expected %d (reordered or lost)", f.SrcNode, f.Packet.PSN, next[f.SrcNode])
		}
		next[f.SrcNode]++
	}
	if sw.stalls.Value() == 0 {
		t.Fatal("two inputs into one output never filled their buffers of 4 and stopped their wires")
	}
}

// A wire that duplicates delivers every frame once and the drawn ones a
// second time, right behind the first, as a transaction of its own; one
// that reorders delivers every frame once, some after the frame sent next.
func TestWireDuplicatesAndReorders(t *testing.T) {
	for _, tc := range []struct {
		name         string
		dup, reorder uint32
	}{
		{"none", 0, 0},
		{"duplicates", 100_000, 0},
		{"reorders", 0, 100_000},
		{"both", 100_000, 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(3)
			clk := e.NewClock("clk", 1000, 0)
			src, snk := &frameSrc{n: 300}, &frameSink{}
			su, ku := clk.Add("src", src), clk.Add("sink", snk)
			w, err := NewWire(clk, "wire", WireSpec{RateMbps: 1000, LatencyPS: sim.US, DupPPM: tc.dup, ReorderPPM: tc.reorder}, su, ku)
			if err != nil {
				t.Fatal(err)
			}
			src.out, snk.in = w.In, w.Out
			e.Run(sim.S)
			seen := map[uint32]int{}
			late, ids := 0, map[uint32]sim.TxnID{}
			for i, f := range snk.got {
				seen[f.Packet.PSN]++
				if id, ok := ids[f.Packet.PSN]; ok && (id == f.ID || f.Cause != id) {
					t.Fatalf("PSN %d delivered again as transaction %v caused by %v: a duplicate needs an ID of its own, caused by the first", f.Packet.PSN, f.ID, f.Cause)
				}
				ids[f.Packet.PSN] = f.ID
				if i > 0 && f.Packet.PSN < snk.got[i-1].Packet.PSN {
					late++
				}
				if i > 0 && snk.at[i] < snk.at[i-1] {
					t.Fatalf("frame %d delivered at %v, before the one ahead of it (%v)", i, snk.at[i], snk.at[i-1])
				}
			}
			dups := 0
			for psn := uint32(0); psn < 300; psn++ {
				switch seen[psn] {
				case 0:
					t.Fatalf("PSN %d never delivered", psn)
				case 2:
					dups++
				case 1:
				default:
					t.Fatalf("PSN %d delivered %d times", psn, seen[psn])
				}
			}
			if tc.dup == 0 && dups > 0 || tc.dup > 0 && (dups < 10 || dups > 60) {
				t.Fatalf("%d of 300 frames duplicated at %d ppm", dups, tc.dup)
			}
			if tc.reorder == 0 && late > 0 || tc.reorder > 0 && (late < 10 || late > 60) {
				t.Fatalf("%d of 300 frames overtaken at %d ppm", late, tc.reorder)
			}
		})
	}
}
