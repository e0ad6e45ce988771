package cpu

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/sim"
)

// PollWord sees what Poll sees, when Poll sees it, and the core's fast
// path for a lone polling process does what its general path does: a process waits for a
// word to reach 1, 2, 3, … while a DMA engine on another clock and a
// process on a second core of the poller's clock write it (and its
// neighbours in the line, and words elsewhere) at random times, some on
// the very edges of the checks, before and after the poller's turn on
// them. Every poll returns at the same time, and the cores' statistics end
// the same, whether the poller's core checks on every edge of the loop or
// sleeps through the checks until a write wakes it (SetPollSleep): the
// sleeping runs must wake on checks of this very step too, and make fewer
// evaluations.
func TestPollWordMatchesPoll(t *testing.T) {
	const word = 0x4008
	cases := []struct {
		name      string
		dmaPeriod sim.Tick
		dmaPhase  sim.Tick
		coreWrite bool // the second core writes the word too
		maxGap    sim.Tick
		irqs      bool     // MSIs run handlers on the poller's core now and then
		dmaFirst  bool     // the DMA's clock comes first: its writes on a check's edge precede the check
		sameEdge  bool     // writes aim at the checks' edges: a sleeping poller must be woken on one's own step
		irqGap    sim.Tick // the longest time between two MSIs (default 2 µs)
		cpuPeriod sim.Tick // the cores' clock period (default 500 ps)
	}{
		{"dma on a slower clock", 1000, 0, false, 300 * sim.NS, false, false, false, 0, 0},
		{"dma on an offset clock", 800, 300, false, 200 * sim.NS, false, false, false, 0, 0},
		{"dma on the poll's edges", 50 * sim.NS, 0, false, sim.US, false, false, false, 0, 0},
		{"a core of the same clock too", 1000, 0, true, 300 * sim.NS, false, false, false, 0, 0},
		{"interrupts between the checks", 1000, 0, false, 300 * sim.NS, true, false, false, 0, 0},
		{"dma of an earlier clock on the poll's edges", 500, 0, false, sim.US, false, true, true, 0, 0},
		{"dma of an earlier clock, interrupts", 500, 0, false, 300 * sim.NS, true, true, true, 20 * sim.US, 0},
		{"a core of the same clock before the poller", 1000, 0, true, 300 * sim.NS, false, true, true, 0, 0},
		{"dma of a later clock on the poll's edges", 500, 0, false, sim.US, false, false, true, 0, 0},
		{"a core of the same clock after the poller", 1000, 0, true, 300 * sim.NS, false, false, true, 0, 0},
		// 167 MHz: the 50 ns between checks are not whole periods, so the
		// checks fall 9 periods (53.9 ns) apart and each costs 50 ns.
		{"a 167 MHz core, dma of an earlier clock", 500, 0, false, 300 * sim.NS, false, true, false, 0, 5988},
		{"a 167 MHz core, interrupts", 1000, 0, false, 300 * sim.NS, true, false, false, 20 * sim.US, 5988},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(byWord, fast, sleep bool) (string, uint64) {
				e := sim.NewEngine(3)
				spec := DefaultSpec()
				period := sim.Tick(500)
				if tc.cpuPeriod != 0 {
					period, spec.PeriodPS = tc.cpuPeriod, tc.cpuPeriod
				}
				var cpuClk, dmaClk *sim.Clock
				if tc.dmaFirst {
					dmaClk = e.NewClock("clk_dma", tc.dmaPeriod, tc.dmaPhase)
					cpuClk = e.NewClock("clk_cpu", period, 0)
				} else {
					cpuClk = e.NewClock("clk_cpu", period, 0)
					dmaClk = e.NewClock("clk_dma", tc.dmaPeriod, tc.dmaPhase)
				}
				mem := memory.NewStore()
				var log []string
				next := uint64(1) // the value the next write of the word stores
				var pollStart sim.Tick
				// aim chooses when a writer writes next, at least gap after
				// now: with sameEdge, half the time on a check of the poll
				// (which starts at pollStart and checks every 50 ns).
				aim := func(r *sim.Rand, now, gap sim.Tick) sim.Tick {
					at := now + gap
					if tc.sameEdge && r.IntN(2) == 0 {
						const every = 50 * sim.NS
						if at <= pollStart {
							at = pollStart + every
						} else {
							at = pollStart + (at-pollStart+every-1)/every*every
						}
					}
					return at
				}
				var poller, writer *Core
				if tc.dmaFirst && tc.coreWrite {
					writer = NewCore(cpuClk, "cpu1", spec, mem)
					poller = NewCore(cpuClk, "cpu0", spec, mem)
				} else {
					poller = NewCore(cpuClk, "cpu0", spec, mem)
					writer = NewCore(cpuClk, "cpu1", spec, mem)
				}
				poller.generalOnly = !fast
				poller.SetPollSleep(sleep)
				poller.Spawn("p", func(p *Proc) {
					for k := uint64(1); k <= 40; k++ {
						pollStart = p.Now()
						if byWord {
							p.PollWord(word, func(v uint64) bool { return v >= k })
						} else {
							p.Poll(func() bool { return mem.Load64(word) >= k })
						}
						log = append(log, fmt.Sprintf("%d saw %d at %d", k, mem.Load64(word), p.Now()))
						p.Compute(int(k % 7))
					}
				})
				if tc.irqs {
					// A handler that runs now and then takes the core from the
					// lone poller: the general path's turn, then the fast again.
					src := &msiSource{}
					ri := e.Rand("irq")
					var su *sim.Unit
					su = cpuClk.Add("ioapic", sim.BlockFunc(func(now sim.Tick) bool {
						if src.out.Ready() {
							src.sent = false
							src.Tick(now)
						}
						gap := tc.irqGap
						if gap == 0 {
							gap = 2 * sim.US
						}
						su.WakeIn(sim.Tick(1 + ri.Int64N(int64(gap))))
						return false
					}))
					poller.Irq = sim.NewChan[pcie.Packet](su, poller.Unit(), "irq", 2)
					src.out = poller.Irq
					poller.OnInterrupt(0xfee0_0000, 0x41, "h", func(p *Proc) {
						log = append(log, fmt.Sprintf("handler at %d", p.Now()))
						p.Compute(20)
					})
				}
				r := e.Rand("dma")
				var dma *sim.Unit
				dma = dmaClk.Add("dma", sim.BlockFunc(func(now sim.Tick) bool {
					switch r.IntN(4) {
					case 0, 1:
						mem.Store64(word, next)
						next++
					case 2:
						mem.Store64(word+0x30, uint64(now)) // the same line
					default:
						mem.Store64(word+0x1000, uint64(now)) // elsewhere
					}
					if next <= 45 {
						dma.WakeAt(aim(r, now, sim.Tick(1+r.Int64N(int64(tc.maxGap)))))
					}
					return false
				}))
				if tc.coreWrite {
					rw := e.Rand("cpu1")
					writer.Spawn("w", func(p *Proc) {
						for next <= 45 {
							now := p.Now()
							p.Sleep(aim(rw, now, sim.Tick(1+rw.Int64N(int64(tc.maxGap/500)))*500) - now)
							p.Store64(word, next)
							next++
						}
					})
				}
				e.Run(sim.MS)
				if tc.sameEdge && tc.dmaFirst && sleep && fast && poller.sameEdgeWakes == 0 {
					t.Errorf("no write woke the sleeping poller on its own step")
				}
				for _, name := range []string{"cpu0.ops", "cpu0.busy_ps", "cpu1.ops"} {
					v, _ := e.Stats().Get(name)
					log = append(log, fmt.Sprintf("%s %d", name, v.(*sim.Counter).Value()))
				}
				log = append(log, fmt.Sprintf("end %d", e.Now()))
				if len(log) < 44 {
					t.Fatalf("only %d polls", len(log)-4)
				}
				return fmt.Sprint(log), e.UnitTicks()
			}
			ref, evRef := run(false, false, false)
			for _, v := range []struct{ byWord, fast, sleep bool }{{false, true, false}, {true, false, false}, {true, true, false},
				{true, true, true}, {true, false, true}} {
				got, ev := run(v.byWord, v.fast, v.sleep)
				if got != ref {
					t.Fatalf("Poll on the general path:\n%s\nPollWord %v, fast path %v, sleep %v:\n%s", ref, v.byWord, v.fast, v.sleep, got)
				}
				if v.sleep && v.fast && !tc.irqs && ev >= evRef {
					t.Errorf("sleep: %d evaluations, %d checking every edge", ev, evRef)
				}
			}
		})
	}
}
