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

// raiser raises an interrupt on its core at the edge at.
type raiser struct {
	u  *sim.Unit
	c  *Core
	at sim.Tick
	h  func(p *Proc)
}

func (r *raiser) Tick(now sim.Tick) bool {
	switch {
	case now < r.at:
		r.c.Unit().WakeAt(r.at)
		r.u.WakeAt(r.at)
	case now == r.at:
		r.c.Raise("dev", r.h)
	}
	return false
}

// A raised interrupt's handler runs at the core's next edge if the core is
// free, else between the process's operations, ahead of the process; the
// process's computation takes the handler's time longer, and one cycle
// (the edge on which the handler ends is its own).
func TestRaise(t *testing.T) {
	for _, c := range []struct {
		name             string
		slice, at        int // the process computes 10 slices of slice cycles; the raise at cycle at
		handler          int // cycles the handler computes
		wantRan, wantEnd int // cycles
	}{
		{"idle core", 10, 200, 30, 201, 100},
		{"before a slice's edge", 10, 39, 30, 40, 131},
		{"on a slice's edge (the slice started first)", 10, 40, 30, 50, 131},
		{"in a slice", 10, 45, 30, 50, 131},
		{"one long operation", 100, 45, 30, 100, 131},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			spec := DefaultSpec()
			spec.PeriodPS = 1000
			core := NewCore(clk, "cpu0", spec, memory.NewStore())
			var ran, end sim.Tick
			r := &raiser{c: core, at: sim.Tick(c.at) * 1000, h: func(p *Proc) {
				ran = p.Now()
				p.Compute(c.handler)
			}}
			r.u = clk.Add("dev", r)
			core.Spawn("app", func(p *Proc) {
				for k := 0; k < 100/c.slice; k++ {
					p.Compute(c.slice)
				}
				end = p.Now()
			})
			e.Run(sim.MS)
			if ran != sim.Tick(c.wantRan)*1000 || end != sim.Tick(c.wantEnd)*1000 {
				t.Errorf("handler ran at cycle %d, the process ended at %d; want %d and %d", ran/1000, end/1000, c.wantRan, c.wantEnd)
			}
		})
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

// A halted process (Halt) waits without using the core until a handler
// announces a change: it runs again from the edge after the one the
// handler ends on (that edge is the handler's, as in TestRaise),
// looks at its condition, and halts again while it is false; the core is
// busy only for the handlers and the process's own operations.
func TestHalt(t *testing.T) {
	for _, c := range []struct {
		name    string
		raises  []int // cycles of the raises; each handler computes 30 and announces
		setAt   int   // the raise (index) whose handler makes the condition true
		wantEnd int   // cycle the process goes on
	}{
		{"one interrupt", []int{200}, 0, 232},
		{"a change that does not end the wait", []int{200, 500}, 1, 532},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			spec := DefaultSpec()
			spec.PeriodPS = 1000
			core := NewCore(clk, "cpu0", spec, memory.NewStore())
			var n Notify
			flag, looks := false, 0
			for i, at := range c.raises {
				i := i
				r := &raiser{c: core, at: sim.Tick(at) * 1000, h: func(p *Proc) {
					p.Compute(30)
					if i == c.setAt {
						flag = true
					}
					n.Changed()
				}}
				r.u = clk.Add(fmt.Sprintf("dev%d", i), r)
			}
			var end sim.Tick
			core.Spawn("app", func(p *Proc) {
				p.Halt(&n, func() bool { looks++; return flag })
				end = p.Now()
			})
			e.Run(sim.MS)
			if end != sim.Tick(c.wantEnd)*1000 {
				t.Errorf("the process went on at cycle %d, want %d", end/1000, c.wantEnd)
			}
			if looks != len(c.raises)+1 {
				t.Errorf("%d looks at the condition, want %d", looks, len(c.raises)+1)
			}
			busy, _ := e.Stats().Get("cpu0.busy_ps")
			if b := busy.(*sim.Counter).Value(); b != uint64(30*len(c.raises))*1000 {
				t.Errorf("core busy %d cycles, want the handlers' %d", b/1000, 30*len(c.raises))
			}
		})
	}
}
