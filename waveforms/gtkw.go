package waveforms

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// GTKW trace flags (GTKWave's analyzer.h).
const (
	gtkwHex        = 0x22   // hex, right-justified
	gtkwBin        = 0x28   // binary, right-justified
	gtkwRealAnalog = 0x8420 // real, drawn as an analog step
	gtkwGroupBegin = 0x800200
	gtkwGroupEnd   = 0x1000200
)

// SaveFile is a GTKWave save file that opens a VCD with its signals grouped
// by the block they belong to.
type SaveFile struct {
	DumpFile string // the VCD, as the viewer should find it (relative to the .gtkw)
	Signals  []SignalInfo
	Width    int // window size in pixels
	Height   int
}

// WriteTo writes the save file: one group per scope in first-appearance
// order, 1-bit signals in binary, vectors in hex, reals as analog steps.
func (s SaveFile) WriteTo(out io.Writer) (int64, error) {
	w, h := s.Width, s.Height
	if w == 0 {
		w, h = 1200, 700
	}
	bw := bufio.NewWriter(out)
	cw := &countWriter{w: bw}
	fmt.Fprintf(cw, "[*] GTKWave save file written by aaemu\n")
	fmt.Fprintf(cw, "[dumpfile] %q\n", s.DumpFile)
	fmt.Fprintf(cw, "[timestart] 0\n[size] %d %d\n", w, h)

	// Open every scope in the signal tree.
	seen := map[string]bool{}
	var groups []string
	members := map[string][]SignalInfo{}
	for _, sig := range s.Signals {
		scope := viewerScope(sig.Path)
		segs := strings.Split(scope, ".")
		for i := range segs {
			p := strings.Join(segs[:i+1], ".") + "."
			if scope != "" && !seen[p] {
				seen[p] = true
				fmt.Fprintf(cw, "[treeopen] %s\n", p)
			}
		}
		if _, ok := members[scope]; !ok {
			groups = append(groups, scope)
		}
		members[scope] = append(members[scope], sig)
	}
	fmt.Fprintf(cw, "[signals_width] 260\n[sst_expanded] 1\n[sst_width] 240\n")
	for _, g := range groups {
		label := g
		if label == "" {
			label = "(top)"
		}
		fmt.Fprintf(cw, "@%x\n-%s\n", gtkwGroupBegin, label)
		flags := -1
		for _, sig := range members[g] {
			f := gtkwBin
			switch {
			case sig.Kind == Real:
				f = gtkwRealAnalog
			case sig.Width > 1:
				f = gtkwHex
			}
			if f != flags {
				fmt.Fprintf(cw, "@%x\n", f)
				flags = f
			}
			fmt.Fprintf(cw, "%s\n", viewerName(sig))
		}
		fmt.Fprintf(cw, "@%x\n-%s\n", gtkwGroupEnd, label)
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
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
