package waveforms

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Value states of a signal.
const (
	known uint8 = iota
	stateX
	stateZ
	unset
)

// Kind of a VCD variable.
type Kind uint8

// Variable kinds the writer emits.
const (
	Wire Kind = iota // 1 to 64 bits, 4-state
	Real             // IEEE double
)

// Options configure a Writer.
type Options struct {
	Filter  *Filter // which signals to dump (nil: all but hidden ones)
	From    uint64  // first time (ps) written; earlier changes only set initial values
	To      uint64  // last time (ps) written; 0 means the end of the run
	Version string  // written into $version
	Comment string  // written into $comment (e.g. the seed)
}

// SignalInfo describes one dumped signal.
type SignalInfo struct {
	Path  string // dotted hierarchical path, as declared
	Width int
	Kind  Kind
	Code  string // VCD identifier code
	// Changes counts the value changes written after the initial values
	// ($dumpvars): 0 for a signal that never changes in the window.
	Changes uint64
}

type variable struct {
	SignalInfo
	cur      uint64
	curReal  float64
	state    uint8
	next     uint64
	nextReal float64
	nstate   uint8
	touched  bool
}

// Writer writes a VCD file with a timescale of 1 ps, the kernel's time unit.
// Value changes arrive through Set/SetXZ/SetReal in non-decreasing time; the
// writer keeps the last value set in each time step, writes only real
// changes, and orders the changes of a time step by declaration, so the output
// does not depend on the order in which blocks were evaluated.
type Writer struct {
	bw   *bufio.Writer
	opts Options
	vars []variable

	header    bool // header written
	dumped    bool // initial $dumpvars written
	ended     bool // past the window
	now       uint64
	stamped   bool // "#now" written
	dumpedAt  uint64
	lastStamp uint64
	touched   []int
	buf       []byte
	changes   uint64
	err       error
}

// NewWriter returns a writer to w. Declare every signal, then set values;
// Close finishes the file.
func NewWriter(w io.Writer, opts Options) *Writer {
	if opts.Version == "" {
		opts.Version = "aaemu"
	}
	return &Writer{bw: bufio.NewWriterSize(w, 1<<16), opts: opts, buf: make([]byte, 0, 128)}
}

// Declare adds a wire of width bits (1..64). ok is false when the filter
// leaves the signal out. Declaring after the first value change is an error,
// reported by Close.
func (w *Writer) Declare(path string, width int) (int, bool) {
	return w.declare(path, width, Wire)
}

// DeclareReal adds a real-valued signal.
func (w *Writer) DeclareReal(path string) (int, bool) { return w.declare(path, 64, Real) }

func (w *Writer) declare(path string, width int, kind Kind) (int, bool) {
	if w.header {
		w.fail(fmt.Errorf("vcd: signal %s declared after the header was written", path))
		return 0, false
	}
	if width < 1 || width > 64 {
		w.fail(fmt.Errorf("vcd: signal %s: width %d out of 1..64", path, width))
		return 0, false
	}
	if path == "" || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, "..") {
		w.fail(fmt.Errorf("vcd: bad signal path %q", path))
		return 0, false
	}
	if !w.opts.Filter.Match(path) {
		return 0, false
	}
	id := len(w.vars)
	w.vars = append(w.vars, variable{SignalInfo: SignalInfo{Path: path, Width: width, Kind: kind, Code: idCode(id)},
		state: unset, nstate: unset})
	return id, true
}

// Signals lists the dumped signals in declaration order.
func (w *Writer) Signals() []SignalInfo {
	out := make([]SignalInfo, len(w.vars))
	for i := range w.vars {
		out[i] = w.vars[i].SignalInfo
	}
	return out
}

// Changes is the number of value changes written so far.
func (w *Writer) Changes() uint64 { return w.changes }

// Window is the time span the file covers, from the initial values to the
// last timestamp (both in ps): after Close, the traced window. It is 0, 0
// while no value has been written.
func (w *Writer) Window() (from, to uint64) {
	if !w.dumped {
		return 0, 0
	}
	return w.dumpedAt, w.lastStamp
}

func (w *Writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// idCode numbers identifiers in base 94 over '!'..'~', least significant
// character first.
func idCode(n int) string {
	var b []byte
	for {
		b = append(b, byte('!'+n%94))
		n /= 94
		if n == 0 {
			return string(b)
		}
	}
}

// Set records that signal id has value v from time t on.
func (w *Writer) Set(t uint64, id int, v uint64) { w.stage(t, id, v, 0, known) }

// SetXZ records an undefined (x) or high-impedance (z) value.
func (w *Writer) SetXZ(t uint64, id int, z bool) {
	if z {
		w.stage(t, id, 0, 0, stateZ)
	} else {
		w.stage(t, id, 0, 0, stateX)
	}
}

// SetReal records a real value.
func (w *Writer) SetReal(t uint64, id int, v float64) { w.stage(t, id, 0, v, known) }

func (w *Writer) stage(t uint64, id int, v uint64, r float64, st uint8) {
	if id < 0 || id >= len(w.vars) {
		w.fail(fmt.Errorf("vcd: value for undeclared signal %d", id))
		return
	}
	if !w.header {
		w.writeHeader()
		w.now = t
	}
	if t != w.now {
		if t < w.now {
			w.fail(fmt.Errorf("vcd: time went backwards from %d to %d ps (signal %s)", w.now, t, w.vars[id].Path))
			return
		}
		w.endStep()
		w.now, w.stamped = t, false
	}
	x := &w.vars[id]
	if st == known && x.Kind == Wire && x.Width < 64 {
		v &= 1<<uint(x.Width) - 1
	}
	x.next, x.nextReal, x.nstate = v, r, st
	if !x.touched {
		x.touched = true
		w.touched = append(w.touched, id)
	}
}

// endStep applies the staged values of the current time step.
func (w *Writer) endStep() {
	if len(w.touched) == 0 {
		return
	}
	slices.Sort(w.touched)
	inWindow := w.now >= w.opts.From && (w.opts.To == 0 || w.now <= w.opts.To)
	if w.now > w.opts.From && !w.dumped && !w.ended && inWindow {
		// The window opened between two steps: dump the values as they were.
		w.dumpvars(w.opts.From)
	}
	if !inWindow {
		if w.opts.To != 0 && w.now > w.opts.To && !w.ended {
			w.ended = true
		}
		for _, id := range w.touched {
			w.apply(id)
		}
		w.touched = w.touched[:0]
		return
	}
	if !w.dumped {
		for _, id := range w.touched {
			w.apply(id)
		}
		w.touched = w.touched[:0]
		w.dumpvars(w.now)
		return
	}
	for _, id := range w.touched {
		x := &w.vars[id]
		if x.nstate != x.state || x.next != x.cur || (x.Kind == Real && x.nextReal != x.curReal && !(math.IsNaN(x.nextReal) && math.IsNaN(x.curReal))) {
			if !w.stamped {
				w.stamp(w.now)
			}
			w.apply(id)
			w.writeValue(x)
			w.changes++
			x.Changes++
		} else {
			x.touched = false
		}
	}
	w.touched = w.touched[:0]
}

func (w *Writer) apply(id int) {
	x := &w.vars[id]
	x.cur, x.curReal, x.state, x.touched = x.next, x.nextReal, x.nstate, false
}

func (w *Writer) stamp(t uint64) {
	w.buf = append(w.buf[:0], '#')
	w.buf = strconv.AppendUint(w.buf, t, 10)
	w.buf = append(w.buf, '\n')
	w.bw.Write(w.buf)
	w.stamped = true
	w.lastStamp = t
}

// dumpvars writes the initial value of every signal at time t. It writes the
// time first: a $dumpvars before the first #t loses the initial values in
// some converters (vcd2fst).
func (w *Writer) dumpvars(t uint64) {
	w.stamp(t)
	w.bw.WriteString("$dumpvars\n")
	for i := range w.vars {
		w.writeValue(&w.vars[i])
		w.changes++
	}
	w.bw.WriteString("$end\n")
	w.dumped = true
	w.dumpedAt = t
	w.stamped = t == w.now
}

func (w *Writer) writeValue(x *variable) {
	b := w.buf[:0]
	switch {
	case x.Kind == Real:
		b = append(b, 'r')
		if x.state == known {
			b = strconv.AppendFloat(b, x.curReal, 'g', 16, 64)
		} else {
			b = append(b, "NaN"...)
		}
		b = append(b, ' ')
	case x.Width == 1:
		switch x.state {
		case known:
			b = append(b, byte('0'+x.cur&1))
		case stateZ:
			b = append(b, 'z')
		default: // x, or never set
			b = append(b, 'x')
		}
	default:
		b = append(b, 'b')
		switch x.state {
		case known:
			b = strconv.AppendUint(b, x.cur, 2)
		case stateZ:
			for i := 0; i < x.Width; i++ {
				b = append(b, 'z')
			}
		default:
			for i := 0; i < x.Width; i++ {
				b = append(b, 'x')
			}
		}
		b = append(b, ' ')
	}
	b = append(b, x.Code...)
	b = append(b, '\n')
	w.bw.Write(b)
	w.buf = b
}

// vcdName turns a path segment into a VCD identifier: brackets would be read
// as bit selects, so "nic[1]" becomes "nic_1".
func vcdName(seg string) string {
	if !strings.ContainsAny(seg, "[]") {
		return seg
	}
	r := strings.NewReplacer("[", "_", "]", "")
	return r.Replace(seg)
}

func (w *Writer) writeHeader() {
	w.header = true
	bw := w.bw
	fmt.Fprintf(bw, "$version\n\t%s\n$end\n", w.opts.Version)
	if w.opts.Comment != "" {
		fmt.Fprintf(bw, "$comment\n\t%s\n$end\n", strings.ReplaceAll(w.opts.Comment, "$end", "$ end"))
	}
	bw.WriteString("$timescale 1ps $end\n")
	var open []string // scopes currently open
	for i := range w.vars {
		x := &w.vars[i]
		segs := strings.Split(x.Path, ".")
		scopes, name := segs[:len(segs)-1], segs[len(segs)-1]
		// Scopes are emitted in order of first appearance; a signal whose
		// scope was closed earlier reopens it (viewers merge them).
		common := 0
		for common < len(open) && common < len(scopes) && open[common] == scopes[common] {
			common++
		}
		for len(open) > common {
			bw.WriteString("$upscope $end\n")
			open = open[:len(open)-1]
		}
		for _, s := range scopes[common:] {
			fmt.Fprintf(bw, "$scope module %s $end\n", vcdName(s))
			open = append(open, s)
		}
		switch {
		case x.Kind == Real:
			fmt.Fprintf(bw, "$var real 64 %s %s $end\n", x.Code, vcdName(name))
		case x.Width == 1:
			fmt.Fprintf(bw, "$var wire 1 %s %s $end\n", x.Code, vcdName(name))
		default:
			fmt.Fprintf(bw, "$var wire %d %s %s [%d:0] $end\n", x.Width, x.Code, vcdName(name), x.Width-1)
		}
	}
	for range open {
		bw.WriteString("$upscope $end\n")
	}
	bw.WriteString("$enddefinitions $end\n")
}

// Close ends the file at time end (ps): it writes the last time step and a
// final timestamp so viewers show the whole run, and flushes. It returns the
// first error met while writing.
func (w *Writer) Close(end uint64) error {
	if !w.header {
		w.writeHeader()
	}
	w.endStep()
	if w.opts.To != 0 && end > w.opts.To {
		end = w.opts.To
	}
	if !w.dumped && !w.ended && end >= w.opts.From {
		w.dumpvars(w.opts.From)
		w.now = w.opts.From
	}
	if w.dumped && end > w.lastStamp {
		w.stamp(end)
	}
	if err := w.bw.Flush(); err != nil && w.err == nil {
		w.err = err
	}
	return w.err
}
