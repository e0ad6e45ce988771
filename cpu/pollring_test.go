package cpu

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/sim"
)

// A core whose processes all wait (each in a loop that only a write or a
// Notify can end, or in a Sleep) sleeps through their round-robin checks
// and ends every run as checking does: the same return of every poll, the
// same operations per process and per core, busy time and end. Writers on
// another clock (before or after the core's) write the words and
// neighbours in their lines at random, some on the checks' edges; a
// second core's process changes a polling loop's Go state and says so
// (Notify); a process sleeps between computes; MSIs run handlers; loops
// of another interval (a scratchpad poll) share the core with the others.
func TestSleepingRoundRobinMatchesChecking(t *testing.T) {
	const base = 0x8000
	cases := []struct {
		name     string
		pollers  int      // processes that wait for their word (PollWord)
		notified bool     // one more waits on a word and a flag (PollWordNotified)
		sleeper  bool     // one more computes and sleeps in turn
		spad     bool     // one more polls a notified condition every scratchpad access (another interval)
		irqs     bool     // MSIs run handlers now and then
		dmaFirst bool     // the writers' clock precedes the core's on a shared edge
		maxGap   sim.Tick // the longest gap between two writes
		period   sim.Tick // the core's clock period (default 500 ps)
	}{
		{"two pollers", 2, false, false, false, false, false, 400 * sim.NS, 0},
		{"two pollers, writes first on an edge", 2, false, false, false, false, true, 400 * sim.NS, 0},
		{"three pollers, a 2.3 GHz core", 3, false, false, false, false, true, sim.US, 435},
		{"a poller and a notified poller", 1, true, false, false, false, false, 600 * sim.NS, 0},
		{"pollers and a sleeping process", 2, false, true, false, false, true, 500 * sim.NS, 0},
		{"a notified poller and a sleeping process", 0, true, true, false, false, false, 500 * sim.NS, 435},
		{"pollers and interrupts", 2, true, false, false, true, false, 300 * sim.NS, 0},
		{"pollers and a scratchpad poll", 2, false, false, true, false, false, 300 * sim.NS, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(sleep bool) (string, uint64, int) {
				e := sim.NewEngine(7)
				spec := DefaultSpec()
				if tc.period != 0 {
					spec.PeriodPS = tc.period
				}
				var cpuClk, dmaClk *sim.Clock
				if tc.dmaFirst {
					dmaClk = e.NewClock("clk_dma", 1000, 0)
					cpuClk = e.NewClock("clk_cpu", spec.PeriodPS, 0)
				} else {
					cpuClk = e.NewClock("clk_cpu", spec.PeriodPS, 0)
					dmaClk = e.NewClock("clk_dma", 1000, 0)
				}
				mem := memory.NewStore()
				core := NewCore(cpuClk, "cpu0", spec, mem)
				other := NewCore(cpuClk, "cpu1", spec, mem)
				core.SetPollSleep(sleep)
				var log []string
				var procs []*Proc
				words := tc.pollers
				if tc.notified {
					words++
				}
				// Waiter k waits for its word to reach 1, 2, … 25 (the
				// notified one also for its flag to reach the same).
				const rounds = 60
				for k := 0; k < tc.pollers; k++ {
					addr := uint64(base + k*0x1000)
					procs = append(procs, core.Spawn(fmt.Sprintf("p%d", k), func(p *Proc) {
						for i := uint64(1); i <= rounds; i++ {
							p.PollWord(addr, func(v uint64) bool { return v >= i })
							log = append(log, fmt.Sprintf("p%d saw %d at %d", k, i, p.Now()))
							p.Compute(int(i%5) * 7)
						}
					}))
				}
				var flag uint64
				note := &Notify{}
				if tc.notified {
					addr := uint64(base + tc.pollers*0x1000)
					procs = append(procs, core.Spawn("n", func(p *Proc) {
						for i := uint64(1); i <= rounds; i++ {
							p.PollWordNotified(addr, note, func(v uint64) bool { return v >= i && flag >= i })
							log = append(log, fmt.Sprintf("n saw %d at %d", i, p.Now()))
						}
					}))
					// The flag's writer: a process of another core.
					rf := e.Rand("flag")
					other.Spawn("flagger", func(p *Proc) {
						for flag < rounds+2 {
							// Slower than the word's writes at times: the
							// flag is then what the loop waits for.
							p.Sleep(sim.Tick(1+rf.Int64N(int64(3*tc.maxGap/500))) * 500)
							flag++
							note.Changed()
						}
					})
				}
				if tc.sleeper {
					procs = append(procs, core.Spawn("s", func(p *Proc) {
						for i := 0; i < 40; i++ {
							p.Compute(50 + i)
							p.Sleep(sim.Tick(300+97*i) * sim.NS)
						}
					}))
				}
				var spadVal uint64
				spadNote := &Notify{}
				if tc.spad {
					procs = append(procs, core.Spawn("sp", func(p *Proc) {
						for i := uint64(1); i <= rounds; i++ {
							p.ScratchpadPollNotified(spadNote, func() bool { return spadVal >= i })
							log = append(log, fmt.Sprintf("sp saw %d at %d", i, p.Now()))
						}
					}))
				}
				if tc.irqs {
					src := &msiSource{}
					ri := e.Rand("irq")
					var su *sim.Unit
					su = cpuClk.Add("ioapic", sim.BlockFunc(func(now sim.Tick) bool {
						if src.out.Ready() {
							src.sent = false
							src.Tick(now)
						}
						su.WakeIn(sim.Tick(1 + ri.Int64N(int64(20*sim.US))))
						return false
					}))
					core.Irq = sim.NewChan[pcie.Packet](su, core.Unit(), "irq", 2)
					src.out = core.Irq
					core.OnInterrupt(0xfee0_0000, 0x41, "h", func(p *Proc) {
						log = append(log, fmt.Sprintf("handler at %d", p.Now()))
						p.Compute(20)
					})
				}
				// The writers: each write raises a word by one, touches a
				// neighbour in its line or a word elsewhere; half aim at the
				// edges of 50 ns from 0.
				r := e.Rand("dma")
				vals := make([]uint64, words)
				var dma *sim.Unit
				dma = dmaClk.Add("dma", sim.BlockFunc(func(now sim.Tick) bool {
					k := r.IntN(words + 1)
					switch {
					case k < words && r.IntN(4) != 0:
						vals[k]++
						mem.Store64(uint64(base+k*0x1000), vals[k])
					case k < words:
						mem.Store64(uint64(base+k*0x1000+0x20), uint64(now))
					default:
						mem.Store64(0x100000, uint64(now))
					}
					if tc.spad && r.IntN(3) == 0 {
						spadVal++
						spadNote.Changed()
					}
					at := now + sim.Tick(1+r.Int64N(int64(tc.maxGap)))
					if r.IntN(2) == 0 {
						at = (at + 50*sim.NS - 1) / (50 * sim.NS) * (50 * sim.NS)
					}
					if now < 100*sim.US {
						dma.WakeAt(at)
					}
					return false
				}))
				// In parts: each run's end counts the checks slept through
				// so far, and the core sleeps on into the next.
				for _, end := range []sim.Tick{7*sim.US + 1234, 19*sim.US + 7, 43 * sim.US, sim.MS} {
					e.Run(end)
				}
				for _, p := range procs {
					log = append(log, fmt.Sprintf("%s ops %d", p.Name(), p.Ops()))
				}
				for _, name := range []string{"cpu0.ops", "cpu0.busy_ps", "cpu0.interrupts", "cpu1.ops"} {
					v, _ := e.Stats().Get(name)
					log = append(log, fmt.Sprintf("%s %d", name, v.(*sim.Counter).Value()))
				}
				log = append(log, fmt.Sprintf("end %d", e.Now()))
				if len(log) < rounds {
					t.Fatalf("only %d lines", len(log))
				}
				return fmt.Sprint(log), e.UnitTicks(), core.sameEdgeWakes
			}
			ref, evRef, _ := run(false)
			got, ev, _ := run(true)
			if got != ref {
				t.Fatalf("checking every time:\n%s\nsleeping:\n%s", ref, got)
			}
			if !tc.spad && ev >= evRef {
				t.Errorf("sleep: %d evaluations, %d checking every time: it slept through nothing", ev, evRef)
			}
		})
	}
}
