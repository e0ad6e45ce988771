package bglml

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// SleepAdvance is the next pass of an upper layer's wait loop whose pass
// is one Advance and whose pause after a pass that did nothing is a
// Sleep of pause (the MPI core's wait loop over this layer): it sleeps
// pause, then runs Advance, and reports whether that pass did anything.
//
// The caller must call it only when its loop, after a pass of this layer
// that did nothing, would do nothing but sleep pause and pass again —
// its own steps between passes costing nothing and changing nothing
// until this layer's callbacks run. Then a pass that found the reception
// FIFOs empty and looked at no injection FIFO is repeated unchanged
// until a packet (or, in coprocessor mode, a completion word) becomes
// visible, and SleepAdvance dozes through those passes as Until does:
// the core sleeps, and the process comes back at the end of the look of
// the first pass whose look is at or after that time, the passes'
// operations and busy time (not their pauses) counted as if they had
// run. The run is the loop's to the byte (TestTorusDozeMatchesPolling in
// package mpi). With Params.Spin every pass runs.
func (l *Layer) SleepAdvance(p *cpu.Proc, pause sim.Tick) bool {
	if l.ct != nil {
		panic(fmt.Sprintf("bglml: %s: the layer runs on its communication thread (CommThread.Wait)", l.name()))
	}
	if !l.params.Spin && !l.notified {
		l.pl.NotifyReceive(p.Core().Unit())
		l.main = p.Core().Unit()
		l.notified = true
	}
	t0, ops := p.Now(), p.Ops()
	p.Sleep(pause)
	t1 := p.Now()
	defer l.mask()()
	if did := l.Advance(p); did || l.looks > 0 || l.params.Spin || l.irq != nil {
		return did
	}
	// One whole pass, its pause and its pass, measured: the ones dozed
	// through are the same.
	p.DozeBusy(p.Now()-t0, p.Now()-t1, int(p.Ops()-ops), l.nextChange)
	l.clearFull()
	l.looks = 0
	return l.afterLook(p, l.pl.Seen())
}
