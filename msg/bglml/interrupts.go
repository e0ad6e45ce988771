package bglml

import (
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// The interrupt-driven packet layer (L94): "the advance loop is capable of
// executing from an interrupt handler. The torus (and collective) hardware
// support interrupt-driven operation, although handling a hardware
// interrupt costs the processor about 103 cycles of context-switching
// overhead." With StartInterrupts a packet that becomes visible in the
// layer's reception FIFOs raises an interrupt on its core (the line is
// level-triggered: it raises again while packets are there once the
// handler has returned). The handler pays the context switch
// (Spec.InterruptCycles, busy cycles of the core, not a latency) and runs
// passes of the advance loop until one does nothing; the process it
// interrupted goes on between two of its operations (the model's cores
// take interrupts there, cpu.Core.Raise).
//
// The layer is masked while the process runs it (Send, Get, Advance,
// Until, ...):
// its state is not re-entrant, as a real layer masks its interrupts in its
// critical sections. An interrupt taken then (raised just before) is
// dismissed, its context switch paid, and raised again at the unmask if
// packets are still there.

// irqLine is the layer's interrupt line: a block of the node's clock
// domain that the torus wakes when a packet becomes visible.
type irqLine struct {
	l    *Layer
	u    *sim.Unit
	core *cpu.Core
	on   bool // not raised and not being handled
	// blocked is the injection FIFOs the handler's last pass found
	// full with packets left to write: the line is raised when one of
	// them has room for a whole packet again (a watermark; the paper
	// says the torus hardware "support[s] interrupt-driven operation",
	// L94, not which events: this one is our assumption).
	blocked []int
	// halt is what a process halted in WaitInterrupts is woken by: a
	// handler whose passes did something.
	halt cpu.Notify
}

// IrqStats counts the interrupt-driven layer's work.
type IrqStats struct {
	Raised    uint64 // interrupts taken
	Dismissed uint64 // taken while the process ran the layer
	Passes    uint64 // advance-loop passes run in handlers
	// Worked counts the handlers whose passes did something (read a
	// packet, wrote one): what a process halted in WaitInterrupts
	// compares.
	Worked uint64
}

// StartInterrupts makes the layer's reception interrupt-driven on its
// core. Before the run; once.
func (l *Layer) StartInterrupts() error {
	switch {
	case l.irq != nil || l.ct != nil || l.notified:
		return fmt.Errorf("bglml.interrupts: %s: the layer already runs on a core", l.name())
	case l.tasks > 1:
		return fmt.Errorf("bglml.interrupts: %s: virtual node mode (its tasks poll: the virtual FIFOs raise no interrupt)", l.name())
	case l.params.Coprocessor:
		return fmt.Errorf("bglml.interrupts: %s: the rendezvous helper's FIFOs are the coprocessor's (polled); interrupts are the main core's", l.name())
	}
	core := l.Core()
	q := &irqLine{l: l, core: core, on: true}
	q.u = l.nd.Torus.Clk.Add(fmt.Sprintf("%s.irq", core.Unit().Name()), q)
	l.irq = q
	l.pl.NotifyReceive(q.u)
	l.nd.PL.NotifyRoom(q.u)
	// The torus wakes one block a FIFO, the line: Until runs every pass
	// (it cannot doze without the wake).
	l.notified = true
	return nil
}

// Tick raises the interrupt when a packet is visible and the line is on
// and unmasked.
func (q *irqLine) Tick(now sim.Tick) bool {
	l := q.l
	if l.pl.Seen() < 0 && !q.room() {
		if t := l.pl.NextVisible(); t != sim.Never {
			q.u.WakeAt(max(t, now+1))
		}
		return false
	}
	if q.on && l.masked == 0 {
		q.on = false
		l.IrqStats.Raised++
		q.core.Raise("torus", q.handle)
	}
	return false
}

// handle is the interrupt handler.
func (q *irqLine) handle(p *cpu.Proc) {
	l := q.l
	p.Compute(l.bs.InterruptCycles)
	if l.masked > 0 {
		l.IrqStats.Dismissed++
	} else {
		l.masked++
		did := false
		for l.Advance(p) {
			l.IrqStats.Passes++
			did = true
		}
		l.IrqStats.Passes++
		q.blocked = q.blocked[:0]
		q.noteFull()
		l.masked--
		if did {
			l.IrqStats.Worked++
			q.halt.Changed() // a process halted in WaitInterrupts looks again
		}
	}
	q.on = true
	q.u.WakeAt(p.Now() + 1) // level-triggered: raised again if packets are there
}

// noteFull adds the injection FIFOs the last pass (or send) found full,
// with packets left to write, to those whose room raises the line.
func (q *irqLine) noteFull() {
	l := q.l
	if len(l.sendq) == 0 {
		return
	}
	for f, full := range l.full {
		if full && !slices.Contains(q.blocked, f) {
			q.blocked = append(q.blocked, f)
		}
	}
}

// WaitInterrupts waits in the layer's core's process p, halted (the core
// idle, cpu.Proc.Halt), until cond holds: cond is looked at again after
// each interrupt whose handler's passes did something, so it may depend
// only on what the handlers change (the callbacks they run, the layer's
// state). The process must not be inside the layer. Before its first
// wait the process should have run passes of its own until one did
// nothing (after a send: what the FIFOs took is written, the rest waits
// for room, which raises the line).
func (l *Layer) WaitInterrupts(p *cpu.Proc, cond func() bool) {
	if l.irq == nil {
		panic(fmt.Sprintf("bglml: %s: WaitInterrupts without StartInterrupts", l.name()))
	}
	if l.masked > 0 {
		panic(fmt.Sprintf("bglml: %s: WaitInterrupts inside the layer", l.name()))
	}
	p.Halt(&l.irq.halt, cond)
}

// Interrupts reports whether the layer is interrupt-driven
// (StartInterrupts).
func (l *Layer) Interrupts() bool { return l.irq != nil }

// room reports whether a FIFO the handler found full has room for a
// whole packet again.
func (q *irqLine) room() bool {
	for _, f := range q.blocked {
		if q.l.nd.PL.RoomNow(f) >= torus.MaxPacketBytes/torus.ChunkBytes {
			return true
		}
	}
	return false
}

// mask marks the process inside the layer (interrupts held off); the
// returned function unmasks.
func (l *Layer) mask() func() {
	if l.irq == nil {
		return func() {}
	}
	l.masked++
	return func() {
		l.masked--
		if l.masked == 0 {
			// What the process's call found full is watched too: its
			// room raises the line (the process does not come back to
			// write the rest).
			l.irq.noteFull()
			l.irq.u.WakeAt(l.irq.u.Engine().Now() + 1)
		}
	}
}
