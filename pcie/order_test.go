package pcie

import (
	"slices"
	"testing"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// step is a block that runs f at every edge it is woken for.
type step struct{ f func(now sim.Tick) bool }

func (s *step) Tick(now sim.Tick) bool { return s.f(now) }

// classTLP is a TLP of class c, told apart by its tag.
func classTLP(c tlp.Class, tag uint16) Packet {
	id := tlp.NewID(1, 0, 0)
	var t tlp.TLP
	switch c {
	case tlp.Posted:
		t = tlp.NewMemWrite(id, 0, 0x1000, make([]byte, 64))
	case tlp.NonPosted:
		t = tlp.NewMemRead(id, 0, 0x1000, 64)
	default:
		req := tlp.NewMemRead(id, 0, 0x1000, 64)
		t = tlp.NewCompletion(&req, 0, tlp.SC, 64, 0, make([]byte, 64))
	}
	t.Tag = tag
	return Packet{TLP: t}
}

const (
	P   = tlp.Posted
	NP  = tlp.NonPosted
	Cpl = tlp.Completion
)

// A receiver taking from a channel with a lane per class takes the oldest
// head the ordering rules let go: posted requests and completions pass a
// non-posted request that waits (A3, A4, D3, D4), nothing passes a posted
// request that waits (A2a, B2a, C2a, D2a), and each lane is a FIFO.
func TestNextLaneFollowsTheOrderingTable(t *testing.T) {
	tests := []struct {
		name    string
		plain   bool
		sent    []tlp.Class
		refused []tlp.Class
		want    int // index into sent, -1: nothing may go
	}{
		{"a posted write passes a waiting read", false, []tlp.Class{NP, P}, []tlp.Class{NP}, 1},
		{"a completion passes a waiting read", false, []tlp.Class{NP, Cpl}, []tlp.Class{NP}, 1},
		{"a posted write may pass a waiting completion", false, []tlp.Class{Cpl, P}, []tlp.Class{Cpl}, 1},
		{"a read does not pass a waiting write", false, []tlp.Class{P, NP}, []tlp.Class{P}, -1},
		{"read data does not pass a waiting write", false, []tlp.Class{P, Cpl}, []tlp.Class{P}, -1},
		{"a write does not pass a waiting write", false, []tlp.Class{P, P}, []tlp.Class{P}, -1},
		{"a read stays behind a waiting read", false, []tlp.Class{NP, NP}, []tlp.Class{NP}, -1},
		{"oldest first when nothing waits", false, []tlp.Class{NP, P, Cpl}, nil, 0},
		{"a completion does not pass a write that waits behind a read", false, []tlp.Class{NP, P, Cpl}, []tlp.Class{NP, P}, -1},
		{"a plain channel is one FIFO", true, []tlp.Class{NP, P}, []tlp.Class{NP}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			prod, cons := &step{}, &step{}
			pu, cu := clk.Add("prod", prod), clk.Add("cons", cons)
			ch := NewClassChan(pu, cu, "ch", [3]int{4, 4, 4})
			if tc.plain {
				ch = sim.NewChan[Packet](pu, cu, "plain", 8)
			}
			prod.f = func(sim.Tick) bool {
				for i, c := range tc.sent {
					ch.Send(classTLP(c, uint16(i)))
				}
				return false
			}
			got, asked := -2, false
			cons.f = func(sim.Tick) bool {
				if !ch.Valid() || asked {
					return false
				}
				asked = true
				l := NextLane(ch, func(_ int, p *Packet) bool { return !slices.Contains(tc.refused, p.TLP.Kind.Class()) })
				got = -1
				if l >= 0 {
					got = int(ch.PeekLane(l).TLP.Tag)
				}
				return false
			}
			e.Run(sim.US)
			if got != tc.want {
				t.Fatalf("took TLP %d, want %d", got, tc.want)
			}
		})
	}
}

// An outbox sends in arrival order, except that posted requests (and
// completions) pass a non-posted request whose lane is full, and nothing
// passes a posted request whose lane is full. Over a plain channel it is one
// FIFO.
func TestOutboxDrain(t *testing.T) {
	tests := []struct {
		name  string
		plain bool
		full  []tlp.Class // lanes filled before the drain
		items []tlp.Class
		want  []int // indices of items sent, in order
	}{
		{"room everywhere: arrival order", false, nil, []tlp.Class{NP, P, Cpl}, []int{0, 1, 2}},
		{"writes and completions pass a read whose lane is full", false, []tlp.Class{NP}, []tlp.Class{NP, P, Cpl}, []int{1, 2}},
		{"nothing passes a write whose lane is full", false, []tlp.Class{P}, []tlp.Class{P, NP, Cpl}, nil},
		{"a read goes until a write waits", false, []tlp.Class{P}, []tlp.Class{NP, P, NP}, []int{0}},
		{"a completion goes until a write waits", false, []tlp.Class{P}, []tlp.Class{Cpl, P, Cpl}, []int{0}},
		{"a write passes a completion whose lane is full", false, []tlp.Class{Cpl}, []tlp.Class{Cpl, P, NP}, []int{1, 2}},
		{"a plain channel is one FIFO", true, []tlp.Class{P}, []tlp.Class{NP, P}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			prod, cons := &step{}, &step{}
			pu, cu := clk.Add("prod", prod), clk.Add("cons", cons)
			ch := NewClassChan(pu, cu, "ch", [3]int{1, 1, 1})
			if tc.plain {
				ch = sim.NewChan[Packet](pu, cu, "plain", 1)
			}
			o := NewOutbox(PacketClass)
			for i, c := range tc.items {
				o.Push(classTLP(c, uint16(i)))
			}
			sent, done := 0, false
			prod.f = func(sim.Tick) bool {
				if done {
					return false // one drain: the lanes stay as they were
				}
				done = true
				for _, c := range tc.full {
					ch.Send(classTLP(c, 999))
				}
				sent = o.Drain(ch)
				return false
			}
			var got []int
			cons.f = func(sim.Tick) bool {
				for ch.Valid() {
					if p := ch.Recv(); p.TLP.Tag != 999 {
						got = append(got, int(p.TLP.Tag))
					}
				}
				return false
			}
			e.Run(sim.US)
			if !slices.Equal(got, tc.want) || sent != len(tc.want) || o.Len() != len(tc.items)-len(tc.want) {
				t.Fatalf("sent %v (%d, %d left), want %v", got, sent, o.Len(), tc.want)
			}
		})
	}
}

// classRx takes TLPs from a link's receive buffer as a root port does
// (NextLane), except the classes it holds until release.
type classRx struct {
	d       *Dir
	u       *sim.Unit
	hold    []tlp.Class
	release sim.Tick
	got     []Packet
	at      []sim.Tick
}

func (r *classRx) Tick(now sim.Tick) bool {
	if now >= r.release {
		r.hold = nil
	} else {
		r.u.WakeAt(r.release)
	}
	for {
		l := NextLane(r.d.Out, func(_ int, p *Packet) bool { return !slices.Contains(r.hold, p.TLP.Kind.Class()) })
		if l < 0 {
			return false
		}
		r.got = append(r.got, r.d.Out.RecvLane(l))
		r.at = append(r.at, now)
	}
}

// outboxTx feeds a link from an outbox, as an endpoint's transaction layer.
type outboxTx struct {
	d *Dir
	o *Outbox[Packet]
}

func (f *outboxTx) Tick(sim.Tick) bool {
	f.o.Drain(f.d.In)
	return f.o.Len() > 0 && f.o.Sendable(f.d.In)
}

// A link keeps the classes apart end to end: non-posted requests the
// receiver does not take yet use up their credits and queues, while posted
// requests and completions behind them flow; a posted request that waits
// holds back everything behind it. A TLP that waited for credits starts on
// the wire only once they are back.
func TestLinkKeepsClassesApart(t *testing.T) {
	tests := []struct {
		name    string
		credits Credits
		hold    []tlp.Class
		sent    []tlp.Class
		before  []int // TLPs (indices) received before the release, in order
	}{
		{"posted writes and completions pass reads waiting for credits", Credits{PH: 4, PD: 64, NPH: 1},
			[]tlp.Class{NP}, []tlp.Class{NP, NP, NP, NP, NP, P, P, Cpl}, []int{5, 6, 7}},
		{"nothing passes a write waiting for credits", Credits{PH: 1, PD: 64, NPH: 4},
			[]tlp.Class{P}, []tlp.Class{P, P, NP, Cpl, P}, nil},
		{"a completion passes a read, not a write, waiting", Credits{PH: 1, PD: 64, NPH: 1},
			[]tlp.Class{NP, P}, []tlp.Class{NP, Cpl, P, Cpl}, []int{1}},
	}
	const release = 20 * sim.US
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("pcie_clk", 4000, 0)
			spec := DefaultLinkSpec()
			spec.Credits, spec.QueueTLPs = tc.credits, 2
			f := &outboxTx{o: NewOutbox(PacketClass)}
			r := &classRx{hold: tc.hold, release: release}
			fu := clk.Add("dev", f)
			r.u = clk.Add("rc", r)
			d, err := NewDir(clk, "link.up", spec, fu, r.u)
			if err != nil {
				t.Fatal(err)
			}
			f.d, r.d = d, d
			for i, c := range tc.sent {
				f.o.Push(classTLP(c, uint16(i)))
			}
			e.Run(release - 1)
			var before []int
			for _, p := range r.got {
				before = append(before, int(p.TLP.Tag))
			}
			if !slices.Equal(before, tc.before) {
				t.Fatalf("received %v before the release, want %v", before, tc.before)
			}
			e.Run(2 * release)
			if len(r.got) != len(tc.sent) {
				t.Fatalf("received %d of %d TLPs", len(r.got), len(tc.sent))
			}
			// Within a class, in order; a TLP that waited for credits
			// arrives a credit return, a wire time and a latency after
			// the receiver freed them.
			last := [3]int{-1, -1, -1}
			var took [3]sim.Tick
			for i, p := range r.got {
				c := p.TLP.Kind.Class()
				if int(p.TLP.Tag) < last[c] {
					t.Fatalf("%v %d after %d", c, p.TLP.Tag, last[c])
				}
				last[c] = int(p.TLP.Tag)
				if took[c] >= release && r.at[i]-took[c] < d.Spec().UpdateFCLatency+spec.LatencyPS && c != Cpl {
					t.Fatalf("%v %d arrived %v after the receiver freed its credits", c, p.TLP.Tag, r.at[i]-took[c])
				}
				took[c] = r.at[i]
			}
		})
	}
}
