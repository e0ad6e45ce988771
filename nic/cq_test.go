package nic

import (
	"encoding/binary"
	"testing"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// cqHost is the host side of a lone NIC: it rings doorbells into DMAIn and
// records the TLPs the NIC sends up.
type cqHost struct {
	in, out *sim.Chan[pcie.Packet]
	send    []pcie.Packet
	got     []pcie.Packet
	at      []sim.Tick
}

func (h *cqHost) Tick(now sim.Tick) bool {
	for h.out.Valid() {
		h.got = append(h.got, h.out.Recv())
		h.at = append(h.at, now)
	}
	for len(h.send) > 0 && h.in.Ready() {
		h.in.Send(h.send[0])
		h.send = h.send[1:]
	}
	return len(h.send) > 0
}

// msis are the MSIs among the recorded TLPs, with their times.
func (h *cqHost) msis() (out []tlp.TLP, at []sim.Tick) {
	for i, p := range h.got {
		if p.TLP.Kind == tlp.MWr && p.TLP.Addr>>20 == 0xfee {
			out, at = append(out, p.TLP), append(at, h.at[i])
		}
	}
	return out, at
}

type cqBench struct {
	e    *sim.Engine
	n    *NIC
	h    *cqHost
	hu   *sim.Unit
	c    *cq
	spec Spec
}

const testCQN = 7

func newCQBench(t *testing.T, mod Moderation) *cqBench {
	t.Helper()
	e := sim.NewEngine(1)
	clk := e.NewClock("fabric", 1000, 0)
	n, err := NewNIC(clk, "nic", Spec{BAR: 0xf000_0000})
	if err != nil {
		t.Fatal(err)
	}
	h := &cqHost{}
	hu := clk.Add("host", h)
	sink := &frameSink{}
	net := clk.Add("net", sink)
	h.out = sim.NewChan[pcie.Packet](n.Unit(), hu, "up", 8)
	h.in = sim.NewChan[pcie.Packet](hu, n.Unit(), "down", 8)
	n.DMAOut, n.DMAIn = h.out, h.in
	n.NetIn = sim.NewChan[Frame](net, n.Unit(), "netin", 2)
	n.NetOut = sim.NewChan[Frame](n.Unit(), net, "netout", 2)
	sink.in = n.NetOut
	if err := n.CreateCQ(CQConfig{CQN: testCQN, Base: 0x10000, Size: 64, MSIAddr: 0xfee0_1000, MSIData: 0x81, Moderation: mod}); err != nil {
		t.Fatal(err)
	}
	return &cqBench{e: e, n: n, h: h, hu: hu, c: n.cqs[testCQN], spec: n.Spec()}
}

// arm rings the CQ's arm doorbell with v, as software does by MMIO.
// consumed is ArmNextCompletion with everything written consumed.
func (b *cqBench) consumed() uint64 { return ArmNextCompletion | b.c.tail }

func (b *cqBench) arm(v uint64) {
	var d [8]byte
	binary.LittleEndian.PutUint64(d[:], v)
	b.h.send = append(b.h.send, pcie.Packet{TLP: tlp.NewMemWrite(0, 0, b.spec.BAR+CQDoorbells+8*testCQN, d[:])})
	b.hu.WakeIn(1)
}

// complete writes k completions into the CQ now, as the receive path does.
func (b *cqBench) complete(k int) {
	for i := 0; i < k; i++ {
		b.n.completed(b.c, b.e.Now(), 0)
	}
	b.n.Unit().WakeIn(1)
}

func (b *cqBench) run(d sim.Tick) { b.e.Run(b.e.Now() + d) }

// An armed CQ raises one MSI (its completion vector's address and data) per
// arming; a CQ not armed raises none; moderation waits for Count
// completions.
func TestCQEventArmOneShotCount(t *testing.T) {
	type step struct {
		arm      uint64 // 0: no doorbell; all: arm with everything consumed
		all      bool
		complete int
		want     int // MSIs seen so far
	}
	tests := []struct {
		name  string
		count int
		steps []step
	}{
		{"not armed: no event", 1, []step{{complete: 5, want: 0}}},
		{"armed: one event for many completions", 1, []step{{all: true, want: 0}, {complete: 3, want: 1}, {complete: 3, want: 1}}},
		{"re-armed: the next completion raises again", 1, []step{{all: true}, {complete: 1, want: 1}, {all: true, want: 1}, {complete: 1, want: 2}}},
		{"completions consumed before arming are not counted", 1, []step{{complete: 4}, {all: true, want: 0}, {complete: 1, want: 1}}},
		{"unconsumed completions at arming raise at once", 1, []step{{complete: 4}, {arm: ArmNextCompletion | 3, want: 1}}},
		{"count 10: unconsumed completions at arming count", 10, []step{{complete: 12}, {arm: ArmNextCompletion | 4, want: 0}, {complete: 1, want: 0}, {complete: 1, want: 1}}},
		{"reserved doorbell value (no arm bit): not armed", 1, []step{{arm: 2}, {complete: 2, want: 0}}},
		{"count 10: nine wait, the tenth raises", 10, []step{{all: true}, {complete: 9, want: 0}, {complete: 1, want: 1}, {complete: 10, want: 1}}},
		{"count 10, re-armed: counted from the arming", 10, []step{{all: true}, {complete: 10, want: 1}, {complete: 5, want: 1}, {all: true, want: 1}, {complete: 9, want: 1}, {complete: 1, want: 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newCQBench(t, Moderation{Count: tc.count})
			b.run(sim.US)
			for i, s := range tc.steps {
				if s.all {
					b.arm(b.consumed())
				} else if s.arm != 0 {
					b.arm(s.arm)
				}
				b.run(sim.US)
				b.complete(s.complete)
				b.run(sim.US)
				got, _ := b.h.msis()
				if len(got) != s.want {
					t.Fatalf("step %d: %d MSIs, want %d", i, len(got), s.want)
				}
			}
			got, _ := b.h.msis()
			for _, m := range got {
				if m.Addr != 0xfee0_1000 || binary.LittleEndian.Uint32(m.Data) != 0x81 || m.RequesterID != b.spec.ID {
					t.Fatalf("MSI %s: want the CQ's vector (0xfee01000, 0x81) from the NIC", m.String())
				}
			}
			if b.n.CQTail(testCQN) != b.c.tail || b.n.stCQEvents.Value() != uint64(len(got)) {
				t.Fatalf("tail %d, events counted %d, MSIs %d", b.n.CQTail(testCQN), b.n.stCQEvents.Value(), len(got))
			}
		})
	}
}

// Fewer completions than the count raise the event when the moderation
// period after the first of them ends, not before; without a period they
// wait for the count.
func TestCQEventModerationPeriod(t *testing.T) {
	for _, period := range []sim.Tick{5 * sim.US, 0} {
		b := newCQBench(t, Moderation{Count: 10, PeriodPS: period})
		b.run(sim.US)
		b.arm(b.consumed())
		b.run(sim.US)
		first := b.e.Now()
		b.complete(2)
		b.run(2 * sim.US)
		b.complete(1) // a later completion does not restart the period
		b.run(20 * sim.US)
		got, at := b.h.msis()
		if period == 0 {
			if len(got) != 0 {
				t.Fatalf("no period: %d MSIs for 3 of 10 completions", len(got))
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("period %v: %d MSIs, want 1", period, len(got))
		}
		if at[0] < first+period || at[0] > first+period+100*sim.NS {
			t.Fatalf("MSI at %v, want the period's end %v (+ the trip to the host)", at[0], first+period)
		}
		if b.c.timerAt != 0 || b.c.armed {
			t.Fatal("the event left the timer running or the CQ armed")
		}
	}
}

func TestCQConfigAndBinding(t *testing.T) {
	ok := CQConfig{CQN: 1, Base: 0x1000, Size: 16, MSIAddr: 0xfee0_0000, MSIData: 0x80, Moderation: Moderation{Count: 1}}
	bad := []func(c *CQConfig){
		func(c *CQConfig) { c.CQN = 0 },
		func(c *CQConfig) { c.CQN = MaxCQN + 1 },
		func(c *CQConfig) { c.Size = 0 },
		func(c *CQConfig) { c.Moderation.Count = 0 },
		func(c *CQConfig) { c.MSIAddr = 0x1000_0000 },
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, f := range bad {
		c := ok
		f(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: %+v accepted", i, c)
		}
	}
	b := newCQBench(t, Moderation{Count: 1})
	if err := b.n.CreateCQ(CQConfig{CQN: testCQN, Size: 4, MSIAddr: 0xfee0_0000, Moderation: Moderation{Count: 1}}); err == nil {
		t.Error("a CQN taken twice")
	}
	if err := b.n.CreateQP(QPConfig{QPN: 0x100, SQSize: 4, CQSize: 4, RQSize: 4}); err != nil {
		t.Fatal(err)
	}
	if err := b.n.SetRecvCQ(0x100, 99); err == nil {
		t.Error("bound to a CQ that does not exist")
	}
	if err := b.n.SetRecvCQ(0x101, testCQN); err == nil {
		t.Error("bound a QP that does not exist")
	}
	if err := b.n.SetRecvCQ(0x100, testCQN); err != nil || b.n.qps[0x100].rcq != b.c {
		t.Fatalf("binding: %v", err)
	}
	b.n.qps[0x100].rcqTail = 1
	if err := b.n.SetRecvCQ(0x100, testCQN); err == nil {
		t.Error("rebound a QP that has received")
	}
}

// QP numbers whose doorbells would land on another doorbell page are
// refused: a receive doorbell must never be taken for a CQ arm.
func TestQPNumbersStayInTheirDoorbellPage(t *testing.T) {
	n, err := NewNIC(sim.NewEngine(1).NewClock("fabric", 1000, 0), "nic", Spec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		qpn uint32
		ok  bool
	}{{0, false}, {1, true}, {MaxQPN - 1, true}, {MaxQPN, false}, {0x8007, false}, {0xffffff, false}} {
		if err := n.CreateQP(QPConfig{QPN: c.qpn, SQSize: 4, CQSize: 4, RQSize: 4}); (err == nil) != c.ok {
			t.Errorf("QPN %#x: %v, want ok=%v", c.qpn, err, c.ok)
		}
	}
	if RQDoorbells+8*(MaxQPN-1) >= CQDoorbells {
		t.Fatal("the last QP's receive doorbell reaches the CQ arms")
	}
}
