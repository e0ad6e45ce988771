package sim

import (
	"fmt"
	"math/bits"
)

// Tracer receives signal declarations and value changes. The VCD writer in
// package waveforms implements it; the kernel does not import it, so tracing
// attaches from outside the models.
type Tracer interface {
	// Declare is called once per signal when the tracer is attached, in
	// declaration order. ok=false means the tracer filtered the signal out;
	// it then costs nothing.
	Declare(path string, width int) (id int, ok bool)
	// Set records that signal id has value v from time t (picoseconds) on.
	// Times never go backwards. A tracer drops values equal to the last one.
	Set(t uint64, id int, v uint64)
	// SetXZ records an undefined (x) or high-impedance (z) value.
	SetXZ(t uint64, id int, z bool)
}

// signal is one traced value inside the kernel.
type signal struct {
	eng   *Engine // the domain whose blocks change it
	path  string
	width int
	id    int
	on    bool
	get   func() (v uint64, known bool) // current value, for the initial dump
	pulse Tick                          // end time of the pulse in flight
	end   func()                        // ends the pulse; made once, so pulsing does not allocate
}

func (e *Engine) declare(path string, width int, get func() (uint64, bool)) *signal {
	if err := CheckName(path); err != nil {
		panic(err)
	}
	if width < 1 || width > 64 {
		panic(fmt.Sprintf("sim: signal %s: width %d out of 1..64", path, width))
	}
	s := &signal{eng: e, path: path, width: width, get: get}
	e.w.addSignal(s)
	return s
}

// AttachTracer connects a tracer to the engine's world (World.AttachTracer).
func (e *Engine) AttachTracer(tr Tracer) { e.w.AttachTracer(tr) }

// Tracing reports whether a tracer is attached.
func (e *Engine) Tracing() bool { return e.tr != nil }

func (e *Engine) set(s *signal, v uint64, known bool) {
	if !s.on {
		return
	}
	if known {
		e.tr.Set(uint64(e.now), s.id, v)
	} else {
		e.tr.SetXZ(uint64(e.now), s.id, false)
	}
}

// startPulse drives s to 1 now and back to 0 after d, unless pulsed again.
func (e *Engine) startPulse(s *signal, d Tick) {
	if !s.on {
		return
	}
	e.tr.Set(uint64(e.now), s.id, 1)
	end := e.now + d
	if s.pulse != end {
		s.pulse = end
		if s.end == nil {
			s.end = func() {
				if s.pulse == e.now {
					e.tr.Set(uint64(e.now), s.id, 0)
				}
			}
		}
		e.traceAt(end, s.end)
	}
}

// traceAt runs fn at time t: a trace update with no block evaluation.
func (e *Engine) traceAt(t Tick, fn func()) {
	e.timerSq++
	e.pushTimer(timer{at: t, seq: e.timerSq, fn: fn})
}

type probe struct {
	sig *signal
	get func() (uint64, bool)
}

func (p *probe) sample(e *Engine) {
	if p.sig.on {
		v, known := p.get()
		e.set(p.sig, v, known)
	}
}

// Probe declares a traced signal of the unit, sampled after each evaluation
// of the unit: get returns the value and whether it is defined (x if not).
// Probes cost nothing when no tracer is attached.
func (u *Unit) Probe(name string, width int, get func() (v uint64, known bool)) {
	p := &probe{sig: u.eng.declare(u.name+"."+name, width, get), get: get}
	u.probes = append(u.probes, p)
}

// widthFor returns the number of bits needed to count up to n.
func widthFor(n int) int {
	if n <= 1 {
		return 1
	}
	return bits.Len(uint(n))
}

// bitsOf converts an integer or boolean value to bits and its natural width.
func bitsOf(v any) (uint64, int, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, 1, true
		}
		return 0, 1, true
	case uint8:
		return uint64(x), 8, true
	case uint16:
		return uint64(x), 16, true
	case uint32:
		return uint64(x), 32, true
	case uint64:
		return x, 64, true
	case uint:
		return uint64(x), 64, true
	case int8:
		return uint64(uint8(x)), 8, true
	case int16:
		return uint64(uint16(x)), 16, true
	case int32:
		return uint64(uint32(x)), 32, true
	case int64:
		return uint64(x), 64, true
	case int:
		return uint64(x), 64, true
	case Tick:
		return uint64(x), 64, true
	case TxnID:
		return uint64(x), 64, true
	}
	return 0, 0, false
}
