package cpu

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Costed operations advance simulated time by their cost, and a process
// reads and writes node memory.
func TestOperationsCostTime(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 500, 0)
	mem := memory.NewStore()
	c := NewCore(clk, "cpu0", DefaultSpec(), mem)
	var at []sim.Tick
	c.Spawn("p", func(p *Proc) {
		at = append(at, p.Now())
		p.Compute(10) // 5 ns
		at = append(at, p.Now())
		p.Store64(0x1000, 42) // 70 ns
		at = append(at, p.Now())
		if p.Load64(0x1000) != 42 { // 70 ns
			t.Error("load after store")
		}
		at = append(at, p.Now())
		p.CAS(0x1000, 42, 7) // 100 ns
		at = append(at, p.Now())
	})
	e.Run(sim.MS)
	want := []sim.Tick{0, 5000, 75000, 145000, 245000}
	for i := range want {
		if at[i]-at[0] != want[i] {
			t.Fatalf("times %v, want offsets %v", at, want)
		}
	}
	if mem.Load64(0x1000) != 7 || !c.AppsDone() {
		t.Fatal("CAS or completion")
	}
}

// Two processes on one core take turns; a process that sleeps leaves the
// core to the other.
func TestProcessesShareACore(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 500, 0)
	c := NewCore(clk, "cpu0", DefaultSpec(), memory.NewStore())
	var order []string
	c.Spawn("a", func(p *Proc) {
		p.Sleep(sim.US) // idle: b runs meanwhile
		order = append(order, "a")
	})
	c.Spawn("b", func(p *Proc) {
		p.Compute(100)
		order = append(order, "b")
	})
	e.Run(sim.MS)
	if len(order) != 2 || order[0] != "b" {
		t.Fatalf("order %v", order)
	}
}

type msiSource struct {
	out  *sim.Chan[pcie.Packet]
	sent bool
}

func (s *msiSource) Tick(sim.Tick) bool {
	if !s.sent && s.out.Ready() {
		s.out.Send(pcie.Packet{TLP: tlp.NewMSI(0, 0xfee0_0000, 0x41)})
		s.sent = true
	}
	return false
}

// An MSI runs its handler after the interrupt latency, ahead of the process.
func TestInterruptLatency(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 500, 0)
	c := NewCore(clk, "cpu0", DefaultSpec(), memory.NewStore())
	src := &msiSource{}
	su := clk.Add("ioapic", src)
	c.Irq = sim.NewChan[pcie.Packet](su, c.Unit(), "irq", 2)
	src.out = c.Irq
	var ran sim.Tick
	c.OnInterrupt(0xfee0_0000, 0x41, "h", func(p *Proc) { ran = p.Now() })
	c.OnInterrupt(0xfee0_0000, 0x42, "other", func(p *Proc) { t.Error("wrong vector ran") })
	e.Run(sim.MS)
	if ran < 3*sim.US || ran > 3*sim.US+2*sim.NS {
		t.Fatalf("handler ran at %v, want 3 µs after the MSI", ran)
	}
}

// A process that busy-polls does not starve another on the same core: the
// core takes turns, so a flag set by the second ends the first's poll.
func TestBusyPollerDoesNotStarve(t *testing.T) {
	for _, pollerFirst := range []bool{true, false} {
		e := sim.NewEngine(1)
		clk := e.NewClock("clk", 500, 0)
		mem := memory.NewStore()
		c := NewCore(clk, "cpu0", DefaultSpec(), mem)
		poller := func(p *Proc) { p.Poll(func() bool { return mem.Load64(0x40) == 1 }) }
		worker := func(p *Proc) {
			p.Compute(1000)
			p.Store64(0x40, 1)
		}
		if pollerFirst {
			c.SpawnDaemon("poller", poller)
			c.Spawn("worker", worker)
		} else {
			c.Spawn("worker", worker)
			c.SpawnDaemon("poller", poller)
		}
		e.Run(sim.MS)
		if !c.AppsDone() || mem.Load64(0x40) != 1 {
			t.Fatalf("poller first %v: the worker never finished", pollerFirst)
		}
		if now := e.Now(); now > 10*sim.US {
			t.Fatalf("poller first %v: finished at %v, the worker waited too long for its turns", pollerFirst, now)
		}
	}
}

// Close ends the processes still waiting: their deferred calls run and
// their coroutines go away.
func TestCloseEndsWaitingProcesses(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 500, 0)
	c := NewCore(clk, "cpu0", DefaultSpec(), memory.NewStore())
	before := runtime.NumGoroutine()
	unwound := 0
	for i := 0; i < 8; i++ {
		c.Spawn(fmt.Sprintf("p%d", i), func(p *Proc) {
			defer func() { unwound++ }()
			p.Poll(func() bool { return false }) // forever
		})
	}
	e.Run(sim.US)
	if c.AppsDone() {
		t.Fatal("the processes finished")
	}
	c.Close()
	if unwound != 8 || !c.AppsDone() {
		t.Fatalf("%d of 8 processes unwound, done %v", unwound, c.AppsDone())
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before the processes", n, before)
	}
}

// A local CAS swaps only when the word equals the compare value, a
// fetch-and-add adds; both return the word as it was, on a core alone and
// on an SMP.
func TestLocalAtomicsReturnTheOldWord(t *testing.T) {
	for _, tc := range []struct {
		name             string
		op               string
		word, arg1, arg2 uint64
		wantOld, wantNew uint64
	}{
		{"cas equal", "cas", 42, 42, 7, 42, 7},
		{"cas differs", "cas", 42, 41, 7, 42, 42},
		{"fetch-and-add", "fadd", 40, 2, 0, 40, 42},
		{"fetch-and-add wraps", "fadd", ^uint64(0), 3, 0, ^uint64(0), 2},
	} {
		for _, smp := range []bool{false, true} {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 500, 0)
			mem := memory.NewStore()
			c := NewCore(clk, "cpu0", DefaultSpec(), mem)
			if smp {
				s, err := NewSMP(e, "smp", SMPSpec{L2Bytes: 1 << 20})
				if err == nil {
					err = s.Attach(c)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			mem.Store64(0x1000, tc.word)
			var old uint64
			c.Spawn("p", func(p *Proc) {
				if tc.op == "cas" {
					old = p.CAS(0x1000, tc.arg1, tc.arg2)
				} else {
					old = p.FetchAdd(0x1000, tc.arg1)
				}
			})
			e.Run(sim.MS)
			if old != tc.wantOld || mem.Load64(0x1000) != tc.wantNew {
				t.Errorf("%s (SMP %v): returned %d, word %d; want %d, %d", tc.name, smp, old, mem.Load64(0x1000), tc.wantOld, tc.wantNew)
			}
		}
	}
}
