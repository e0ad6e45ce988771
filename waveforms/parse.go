package waveforms

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Var is a variable read from a VCD file.
type Var struct {
	Path  string // scopes and reference joined by dots, bit range dropped
	Type  string // wire, reg, real, ...
	Width int
	Code  string
}

// Change is one value change: a normalized value (vectors left-extended to
// the full width, as the standard says; reals in Go's %g form).
type Change struct {
	T uint64
	V string
}

// File is a parsed VCD file.
type File struct {
	Timescale string
	Vars      []Var
	// Changes per identifier code, in time order, including the initial
	// values. Consecutive equal values are kept as written.
	Changes map[string][]Change
	End     uint64 // last timestamp
}

// ParseError says where a VCD file is malformed.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("vcd line %d: %s", e.Line, e.Msg) }

var varTypes = map[string]bool{"event": true, "integer": true, "parameter": true, "real": true, "realtime": true,
	"reg": true, "supply0": true, "supply1": true, "time": true, "tri": true, "triand": true, "trior": true,
	"trireg": true, "tri0": true, "tri1": true, "wand": true, "wire": true, "wor": true}

var scopeKinds = map[string]bool{"begin": true, "fork": true, "function": true, "module": true, "task": true}

// Parse reads a VCD file strictly, as IEEE 1364-2005 clause 18 defines it:
// it rejects what lenient viewers silently accept (unknown identifiers,
// unbalanced scopes, value characters other than 0 1 x z, vectors wider than
// declared, times that do not increase, changes before $enddefinitions).
func Parse(r io.Reader) (*File, error) {
	p := &parser{sc: bufio.NewScanner(r), f: &File{Changes: map[string][]Change{}}, widths: map[string]int{}, types: map[string]string{}}
	p.sc.Buffer(make([]byte, 1<<16), 1<<24)
	p.sc.Split(p.splitWords)
	if err := p.run(); err != nil {
		return nil, err
	}
	return p.f, nil
}

type parser struct {
	sc      *bufio.Scanner
	f       *File
	line    int // line of the current token
	pending int // newlines consumed before the next token
	scopes  []string
	widths  map[string]int
	types   map[string]string
	defined bool
	haveT   bool
	now     uint64
}

// splitWords splits on white space and counts lines.
func (p *parser) splitWords(data []byte, atEOF bool) (int, []byte, error) {
	start := 0
	for start < len(data) && isSpace(data[start]) {
		if data[start] == '\n' {
			p.pending++
		}
		start++
	}
	for i := start; i < len(data); i++ {
		if isSpace(data[i]) {
			return i, data[start:i], nil
		}
	}
	if atEOF && len(data) > start {
		return len(data), data[start:], nil
	}
	return start, nil, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func (p *parser) next() (string, bool) {
	if !p.sc.Scan() {
		return "", false
	}
	p.line = p.pending + 1
	return p.sc.Text(), true
}

func (p *parser) errf(format string, a ...any) error {
	return &ParseError{Line: p.line, Msg: fmt.Sprintf(format, a...)}
}

// body reads tokens up to $end.
func (p *parser) body(cmd string) ([]string, error) {
	var out []string
	for {
		t, ok := p.next()
		if !ok {
			return nil, p.errf("%s without $end", cmd)
		}
		if t == "$end" {
			return out, nil
		}
		if strings.HasPrefix(t, "$") {
			return nil, p.errf("%s: found %s before $end", cmd, t)
		}
		out = append(out, t)
	}
}

func (p *parser) run() error {
	sawAny := false
	for {
		tok, ok := p.next()
		if !ok {
			break
		}
		sawAny = true
		if !p.defined {
			if err := p.header(tok); err != nil {
				return err
			}
			continue
		}
		if err := p.simulation(tok); err != nil {
			return err
		}
	}
	if err := p.sc.Err(); err != nil {
		return fmt.Errorf("vcd: %w", err)
	}
	if !sawAny {
		return &ParseError{Line: 1, Msg: "empty file"}
	}
	if !p.defined {
		return p.errf("no $enddefinitions")
	}
	return nil
}

func (p *parser) header(tok string) error {
	switch tok {
	case "$date", "$version", "$comment":
		_, err := p.body(tok)
		return err
	case "$timescale":
		b, err := p.body(tok)
		if err != nil {
			return err
		}
		ts := strings.Join(b, "")
		num := strings.TrimRight(ts, "afpnumsµ")
		unit := ts[len(num):]
		if (num != "1" && num != "10" && num != "100") || !map[string]bool{"s": true, "ms": true, "us": true, "ns": true, "ps": true, "fs": true}[unit] {
			return p.errf("$timescale %q: want 1, 10 or 100 followed by s, ms, us, ns, ps or fs", ts)
		}
		p.f.Timescale = ts
		return nil
	case "$scope":
		b, err := p.body(tok)
		if err != nil {
			return err
		}
		if len(b) != 2 || !scopeKinds[b[0]] {
			return p.errf("$scope %s: want a kind (module, task, function, begin, fork) and a name", strings.Join(b, " "))
		}
		p.scopes = append(p.scopes, b[1])
		return nil
	case "$upscope":
		if _, err := p.body(tok); err != nil {
			return err
		}
		if len(p.scopes) == 0 {
			return p.errf("$upscope without an open $scope")
		}
		p.scopes = p.scopes[:len(p.scopes)-1]
		return nil
	case "$var":
		return p.varDecl()
	case "$enddefinitions":
		if _, err := p.body(tok); err != nil {
			return err
		}
		if len(p.scopes) != 0 {
			return p.errf("$enddefinitions with %d scope(s) still open", len(p.scopes))
		}
		if len(p.f.Vars) == 0 {
			return p.errf("no variables declared")
		}
		p.defined = true
		return nil
	}
	if strings.HasPrefix(tok, "$") {
		return p.errf("unknown header command %s", tok)
	}
	return p.errf("%q before $enddefinitions", tok)
}

func (p *parser) varDecl() error {
	// Read positionally: an identifier code may itself start with '$'.
	var b []string
	for {
		t, ok := p.next()
		if !ok {
			return p.errf("$var without $end")
		}
		if t == "$end" && len(b) >= 4 {
			break
		}
		if len(b) == 5 {
			return p.errf("$var %s: want type, size, identifier, reference and an optional bit range, then $end", strings.Join(b, " "))
		}
		if t == "$end" || (len(b) != 2 && strings.HasPrefix(t, "$")) {
			return p.errf("$var %s: found %s before $end", strings.Join(b, " "), t)
		}
		b = append(b, t)
	}
	if len(b) < 4 || len(b) > 5 {
		return p.errf("$var %s: want type, size, identifier, reference and an optional bit range", strings.Join(b, " "))
	}
	typ, code, ref := b[0], b[2], b[3]
	if !varTypes[typ] {
		return p.errf("$var: unknown type %q", typ)
	}
	w, err := strconv.Atoi(b[1])
	if err != nil || w < 1 {
		return p.errf("$var %s: size %q is not a positive number", ref, b[1])
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '!' || code[i] > '~' {
			return p.errf("$var %s: identifier %q has a character outside '!'..'~'", ref, code)
		}
	}
	if len(b) == 5 {
		if rng := b[4]; !strings.HasPrefix(rng, "[") || !strings.HasSuffix(rng, "]") {
			return p.errf("$var %s: bad bit range %q", ref, rng)
		}
	}
	if prev, ok := p.widths[code]; ok && prev != w {
		return p.errf("$var %s: identifier %q reused with size %d, declared before with %d", ref, code, w, prev)
	}
	p.widths[code] = w
	p.types[code] = typ
	path := strings.Join(append(append([]string(nil), p.scopes...), ref), ".")
	p.f.Vars = append(p.f.Vars, Var{Path: path, Type: typ, Width: w, Code: code})
	return nil
}

func (p *parser) simulation(tok string) error {
	switch tok {
	case "$dumpvars", "$dumpall", "$dumpon", "$dumpoff", "$end":
		return nil // their value changes are read as ordinary changes
	case "$comment":
		_, err := p.body(tok)
		return err
	}
	c := tok[0]
	switch {
	case c == '#':
		t, err := strconv.ParseUint(tok[1:], 10, 64)
		if err != nil {
			return p.errf("bad timestamp %q", tok)
		}
		if p.haveT && t <= p.now {
			return p.errf("time %d does not come after %d", t, p.now)
		}
		p.now, p.haveT = t, true
		p.f.End = t
		return nil
	case c == '$':
		return p.errf("unknown command %s in the value-change section", tok)
	}
	if !p.haveT {
		return p.errf("value change %q before the first timestamp", tok)
	}
	switch c {
	case '0', '1', 'x', 'X', 'z', 'Z':
		code := tok[1:]
		w, ok := p.widths[code]
		if !ok {
			return p.errf("value change for undeclared identifier %q", code)
		}
		if w != 1 && p.types[code] != "event" {
			// A scalar value for a vector is legal and left-extended.
			return p.add(code, extend(strings.ToLower(tok[:1]), w))
		}
		return p.add(code, strings.ToLower(tok[:1]))
	case 'b', 'B':
		code, ok := p.next()
		if !ok {
			return p.errf("vector value %q without an identifier", tok)
		}
		w, known := p.widths[code]
		if !known {
			return p.errf("value change for undeclared identifier %q", code)
		}
		bits := strings.ToLower(tok[1:])
		if bits == "" {
			return p.errf("empty vector value for %q", code)
		}
		for i := 0; i < len(bits); i++ {
			if !strings.ContainsRune("01xz", rune(bits[i])) {
				return p.errf("vector value %q for %q has %q, want 0, 1, x or z", tok, code, bits[i])
			}
		}
		if len(bits) > w {
			return p.errf("vector value %q is %d bits wide, %q is declared with %d", tok, len(bits), code, w)
		}
		return p.add(code, extend(bits, w))
	case 'r', 'R':
		code, ok := p.next()
		if !ok {
			return p.errf("real value %q without an identifier", tok)
		}
		if _, known := p.widths[code]; !known {
			return p.errf("value change for undeclared identifier %q", code)
		}
		v, err := strconv.ParseFloat(tok[1:], 64)
		if err != nil {
			return p.errf("real value %q for %q does not parse", tok, code)
		}
		return p.add(code, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return p.errf("unexpected %q in the value-change section", tok)
}

func (p *parser) add(code, v string) error {
	p.f.Changes[code] = append(p.f.Changes[code], Change{T: p.now, V: v})
	return nil
}

// extend left-extends bits to width w: with 0 after a leading 0 or 1, with x
// or z after a leading x or z.
func extend(bits string, w int) string {
	if len(bits) >= w {
		return bits
	}
	fill := byte('0')
	if bits[0] == 'x' || bits[0] == 'z' {
		fill = bits[0]
	}
	return string(bytes.Repeat([]byte{fill}, w-len(bits))) + bits
}

// ByPath returns the variable with the given dotted path.
func (f *File) ByPath(path string) (Var, bool) {
	for _, v := range f.Vars {
		if v.Path == path {
			return v, true
		}
	}
	return Var{}, false
}

// History returns the changes of the variable at path with consecutive
// duplicates removed: the signal's value over time, whoever wrote the file.
func (f *File) History(path string) []Change {
	v, ok := f.ByPath(path)
	if !ok {
		return nil
	}
	var out []Change
	for _, c := range f.Changes[v.Code] {
		if n := len(out); n > 0 && out[n-1].V == c.V {
			continue
		}
		if n := len(out); n > 0 && out[n-1].T == c.T {
			out[n-1] = c
			continue
		}
		out = append(out, c)
	}
	return out
}
