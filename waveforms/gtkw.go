package waveforms

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// GTKW trace flags (GTKWave's analyzer.h).
const (
	gtkwHex          = 0x22      // hex, right-justified
	gtkwBin          = 0x28      // binary, right-justified
	gtkwRealAnalog   = 0x8420    // real, drawn as an analog step
	gtkwTranslated   = 0x2024    // decimal, shown through a translate filter file
	gtkwGroupBegin   = 0x800200  // blank row that opens a group
	gtkwGroupEnd     = 0x1000200 // blank row that closes it
	gtkwClosedBegin  = 0xc00200  // a group shown closed
	gtkwClosedEnd    = 0x1401200
	gtkwFramePixels  = 200 // GTKWave shows 2^-zoom time units per 200 pixels
	gtkwPaneOverhead = 120 // pixels of the window that are neither pane nor waves: borders, scroll bar (measured 86)
	gtkwSignalsWidth = 260
	gtkwSSTWidth     = 240
)

// Enum names the values of enumerated signals for a viewer. GTKWave shows
// the names through a translate filter file (one "value name" line per
// value, the value in decimal as the trace displays it), which the save
// file attaches to every signal the enum names.
type Enum struct {
	// Name names the enum and its translate file, <save file stem>.<Name>.txt.
	Name string
	// Signals are patterns of the signals the enum names: dotted paths in
	// which * matches within one level, ** any number of levels (also none
	// at the start) and ? one character.
	Signals []string
	// Bits, when set, makes Signals patterns of scopes instead: in each
	// matching scope that has all of these 1-bit signals, the viewer joins
	// them into one trace called Name (the first is the most significant
	// bit), and the enum names that trace's values.
	Bits   []string
	Values map[uint64]string
}

// WriteTo writes the enum's translate filter file.
func (e Enum) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: out}
	fmt.Fprintf(cw, "# %s: GTKWave translate filter file written by aaemu\n", e.Name)
	keys := make([]uint64, 0, len(e.Values))
	for k := range e.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(cw, "%d %s\n", k, e.Values[k])
	}
	return cw.n, cw.err
}

func (e Enum) names(path string) bool {
	for _, p := range e.Signals {
		if glob(p, path) || strings.HasPrefix(p, "**.") && glob(p[3:], path) {
			return true
		}
	}
	return false
}

// SaveFile is a GTKWave save file that opens a VCD on its traced window,
// with the signals that change grouped by the block they belong to, the
// ones that never change in closed groups at the end, and enumerated
// signals shown by name.
type SaveFile struct {
	DumpFile string // the VCD, as the viewer should find it (relative to the .gtkw)
	// SaveName is the save file's own name, relative like DumpFile
	// ("run.gtkw"): the viewer finds the translate files next to it. Write
	// sets it.
	SaveName string
	Signals  []SignalInfo
	Width    int // window size in pixels
	Height   int
	// From and To (ps) are the window the view opens on, zoomed to fit;
	// To == 0 leaves the zoom to the viewer.
	From, To uint64
	Enums    []Enum
}

// A trace is one row of the view: a signal, or 1-bit signals joined.
type trace struct {
	sig     *SignalInfo
	bits    []*SignalInfo // joined, most significant first
	name    string        // the joined trace's name
	enum    int           // index in Enums, or -1
	changes bool
}

// layout plans the view: the traces of each scope in first-appearance
// order, and which enums name at least one trace.
func (s SaveFile) layout() (scopes []string, traces map[string][]trace, used []int) {
	traces = map[string][]trace{}
	seen := map[int]bool{}
	for i := range s.Signals {
		sig := &s.Signals[i]
		scope := viewerScope(sig.Path)
		if _, ok := traces[scope]; !ok {
			scopes = append(scopes, scope)
		}
		tr := trace{sig: sig, enum: -1, changes: sig.Changes > 0}
		for j, e := range s.Enums {
			if len(e.Bits) == 0 && sig.Kind == Wire && e.names(sig.Path) {
				tr.enum = j
				break
			}
		}
		traces[scope] = append(traces[scope], tr)
	}
	// Joined traces go right before the first of their bits.
	for j, e := range s.Enums {
		if len(e.Bits) == 0 {
			continue
		}
		for _, scope := range scopes {
			ts := traces[scope]
			bits := make([]*SignalInfo, len(e.Bits))
			at := -1
			for k, tr := range ts {
				if tr.sig == nil || tr.sig.Width != 1 || tr.sig.Kind != Wire {
					continue
				}
				segs := strings.Split(tr.sig.Path, ".")
				if !e.names(strings.Join(segs[:len(segs)-1], ".")) {
					continue
				}
				if b := slices.Index(e.Bits, segs[len(segs)-1]); b >= 0 && bits[b] == nil {
					bits[b] = tr.sig
					if at < 0 {
						at = k
					}
				}
			}
			if at < 0 || slices.Contains(bits, nil) {
				continue
			}
			jt := trace{bits: bits, name: scope + "." + e.Name, enum: j}
			for _, b := range bits {
				jt.changes = jt.changes || b.Changes > 0
			}
			traces[scope] = slices.Insert(ts, at, jt)
		}
	}
	for _, ts := range traces {
		for _, tr := range ts {
			if tr.enum >= 0 {
				seen[tr.enum] = true
			}
		}
	}
	for j := range s.Enums {
		if seen[j] {
			used = append(used, j)
		}
	}
	return scopes, traces, used
}

// TranslateFile is the name of enum e's translate file, next to the save file.
func (s SaveFile) TranslateFile(e Enum) string {
	stem := s.SaveName
	if stem == "" {
		stem = s.DumpFile
	}
	stem = strings.TrimSuffix(stem, filepath.Ext(stem))
	return stem + "." + e.Name + ".txt"
}

// Write writes the save file to path, and next to it the translate file of
// every enum that names a signal.
func (s SaveFile) Write(path string) error {
	s.SaveName = filepath.Base(path)
	if err := s.WriteTranslateFiles(filepath.Dir(path)); err != nil {
		return err
	}
	return writeFile(path, s.WriteTo)
}

// WriteTranslateFiles writes into dir, where the save file goes, the
// translate file of every enum that names a signal.
func (s SaveFile) WriteTranslateFiles(dir string) error {
	_, _, used := s.layout()
	for _, j := range used {
		e := s.Enums[j]
		if err := writeFile(filepath.Join(dir, s.TranslateFile(e)), e.WriteTo); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) (int64, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// WriteTo writes the save file: one group per scope in first-appearance
// order with the signals that change in the window (1-bit signals in binary,
// vectors in hex, reals as analog steps, enumerated ones by name), then one
// closed group of closed groups per scope with the signals that never
// change. The view opens on [From, To].
func (s SaveFile) WriteTo(out io.Writer) (int64, error) {
	w, h := s.Width, s.Height
	if w == 0 {
		w, h = 1200, 700
	}
	bw := bufio.NewWriter(out)
	cw := &countWriter{w: bw}
	fmt.Fprintf(cw, "[*] GTKWave save file written by aaemu\n")
	fmt.Fprintf(cw, "[dumpfile] %q\n", s.DumpFile)
	if s.SaveName != "" {
		// Relative names in the file (translate files) are resolved from
		// where the save file now is, by way of where it was written.
		fmt.Fprintf(cw, "[savefile] %q\n", s.SaveName)
	}
	fmt.Fprintf(cw, "[timestart] %d\n[size] %d %d\n[pos] -1 -1\n", s.From, w, h)
	if s.To > s.From {
		fmt.Fprintf(cw, "*%f -1\n", gtkwZoom(s.To-s.From, w-gtkwSSTWidth-gtkwSignalsWidth-gtkwPaneOverhead))
	}

	scopes, traces, used := s.layout()
	filterID := map[int]int{}
	for n, j := range used {
		filterID[j] = n + 1
	}
	// Open every scope in the signal tree.
	opened := map[string]bool{}
	for _, scope := range scopes {
		segs := strings.Split(scope, ".")
		for i := range segs {
			p := strings.Join(segs[:i+1], ".") + "."
			if scope != "" && !opened[p] {
				opened[p] = true
				fmt.Fprintf(cw, "[treeopen] %s\n", p)
			}
		}
	}
	fmt.Fprintf(cw, "[signals_width] %d\n[sst_expanded] 1\n[sst_width] %d\n", gtkwSignalsWidth, gtkwSSTWidth)

	flags := -1
	setFlags := func(f int) {
		if f != flags {
			fmt.Fprintf(cw, "@%x\n", f)
			flags = f
		}
	}
	group := func(begin, end int, label string, body func()) {
		setFlags(begin)
		fmt.Fprintf(cw, "-%s\n", label)
		body()
		setFlags(end)
		fmt.Fprintf(cw, "-%s\n", label)
	}
	emit := func(tr trace) {
		if tr.enum >= 0 {
			setFlags(gtkwTranslated)
			fmt.Fprintf(cw, "^%d %s\n", filterID[tr.enum], s.TranslateFile(s.Enums[tr.enum]))
		}
		if tr.sig == nil {
			names := make([]string, len(tr.bits))
			for i, b := range tr.bits {
				names[i] = viewerName(*b)
			}
			fmt.Fprintf(cw, "#{%s} %s\n", tr.name, strings.Join(names, " "))
			return
		}
		if tr.enum < 0 {
			switch {
			case tr.sig.Kind == Real:
				setFlags(gtkwRealAnalog)
			case tr.sig.Width > 1:
				setFlags(gtkwHex)
			default:
				setFlags(gtkwBin)
			}
		}
		fmt.Fprintf(cw, "%s\n", viewerName(*tr.sig))
	}
	label := func(scope string) string {
		if scope == "" {
			return "(top)"
		}
		return scope
	}
	pick := func(scope string, changes bool) []trace {
		var out []trace
		for _, tr := range traces[scope] {
			if tr.changes == changes {
				out = append(out, tr)
			}
		}
		return out
	}
	unchanged := 0
	for _, scope := range scopes {
		ts := pick(scope, true)
		unchanged += len(traces[scope]) - len(ts)
		if len(ts) > 0 {
			group(gtkwGroupBegin, gtkwGroupEnd, label(scope), func() {
				for _, tr := range ts {
					emit(tr)
				}
			})
		}
	}
	if unchanged > 0 {
		group(gtkwClosedBegin, gtkwClosedEnd, fmt.Sprintf("unchanged in this window (%d)", unchanged), func() {
			for _, scope := range scopes {
				if ts := pick(scope, false); len(ts) > 0 {
					group(gtkwClosedBegin, gtkwClosedEnd, label(scope), func() {
						for _, tr := range ts {
							emit(tr)
						}
					})
				}
			}
		})
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}

// gtkwZoom is GTKWave's zoom that fits span time units into pixels: it
// shows 2^-zoom units per 200 pixels. It is rounded down (zoomed out) to
// the six decimals the file keeps.
func gtkwZoom(span uint64, pixels int) float64 {
	if pixels < 1 {
		pixels = 1
	}
	z := math.Log2(float64(pixels) / (gtkwFramePixels * float64(span)))
	return math.Floor(z*1e6) / 1e6
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

// viewerScope is the scope of a signal as a viewer names it.
func viewerScope(path string) string {
	segs := strings.Split(path, ".")
	for i := range segs {
		segs[i] = vcdName(segs[i])
	}
	return strings.Join(segs[:len(segs)-1], ".")
}

// viewerName is the full name GTKWave gives a signal: vectors carry their
// bit range.
func viewerName(sig SignalInfo) string {
	segs := strings.Split(sig.Path, ".")
	for i := range segs {
		segs[i] = vcdName(segs[i])
	}
	n := strings.Join(segs, ".")
	if sig.Kind == Wire && sig.Width > 1 {
		n += fmt.Sprintf("[%d:0]", sig.Width-1)
	}
	return n
}
