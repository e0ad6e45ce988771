package main

// The outputs of `aaemu run` read back by tools that are not ours: the
// GTKWave view of run.vcd (GTKWave itself, and our own reading of the .gtkw,
// its translate files and the VCD), and run.pcapng (tshark and scapy)
// against the waveforms.

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/testtool"
	"github.com/aaemu/aaemu/waveforms"
)

// gtkwRow is one row of a save file: a group's begin or end, or a trace.
type gtkwRow struct {
	flags  uint64
	label  string   // a group row's label
	signal string   // a trace's signal as the VCD names it (no bit range)
	bits   []string // a joined trace's signals, most significant first
	filter string   // translate file of a translated trace
}

type gtkwView struct {
	timestart uint64
	zoom      float64
	zoomed    bool
	rows      []gtkwRow
}

const (
	flagTranslated = 0x2000
	flagBlank      = 0x200
	flagClosed     = 0x400000
)

// readGTKW reads the parts of a save file GTKWave acts on here.
func readGTKW(t *testing.T, path string) gtkwView {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v gtkwView
	var flags uint64
	filter := ""
	vcdName := func(s string) string {
		if i := strings.IndexByte(s, '['); i >= 0 {
			return s[:i]
		}
		return s
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var err error
		switch {
		case strings.HasPrefix(line, "[timestart] "):
			v.timestart, err = strconv.ParseUint(strings.TrimPrefix(line, "[timestart] "), 10, 64)
		case strings.HasPrefix(line, "["):
		case strings.HasPrefix(line, "*"):
			v.zoom, err = strconv.ParseFloat(strings.Fields(line[1:])[0], 64)
			v.zoomed = true
		case strings.HasPrefix(line, "@"):
			flags, err = strconv.ParseUint(line[1:], 16, 64)
		case strings.HasPrefix(line, "^"):
			f := strings.Fields(line)
			filter = f[len(f)-1]
		case strings.HasPrefix(line, "-"):
			v.rows = append(v.rows, gtkwRow{flags: flags, label: line[1:]})
		case strings.HasPrefix(line, "#{"):
			f := strings.Fields(line[strings.IndexByte(line, '}')+1:])
			for i := range f {
				f[i] = vcdName(f[i])
			}
			v.rows = append(v.rows, gtkwRow{flags: flags, bits: f, filter: filter})
		default:
			v.rows = append(v.rows, gtkwRow{flags: flags, signal: vcdName(line), filter: filter})
		}
		if err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
	}
	return v
}

// readTranslate reads a GTKWave translate filter file: "value name" lines.
func readTranslate(t *testing.T, path string) map[uint64]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[uint64]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, name, _ := strings.Cut(line, " ")
		v, err := strconv.ParseUint(k, 10, 64)
		if err != nil || name == "" {
			t.Fatalf("%s: line %q", path, line)
		}
		m[v] = name
	}
	return m
}

// valueAt is a signal's known value at time tm, from its history.
func valueAt(h []waveforms.Change, tm uint64) (uint64, bool) {
	i, _ := slices.BinarySearchFunc(h, tm, func(c waveforms.Change, tm uint64) int {
		if c.T > tm {
			return 1
		}
		return -1
	})
	if i == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(h[i-1].V, 2, 64)
	return v, err == nil
}

// rowValues are the known values a translated row takes in the VCD, at
// the times it takes them: a signal's, or its bits' joined.
func rowValues(f *waveforms.File, r gtkwRow) map[uint64]uint64 {
	out := map[uint64]uint64{}
	if r.signal != "" {
		for _, c := range f.History(r.signal) {
			if v, err := strconv.ParseUint(c.V, 2, 64); err == nil {
				out[c.T] = v
			}
		}
		return out
	}
	var times []uint64
	hs := make([][]waveforms.Change, len(r.bits))
	for i, b := range r.bits {
		hs[i] = f.History(b)
		for _, c := range hs[i] {
			times = append(times, c.T)
		}
	}
	for _, tm := range times {
		v, known := uint64(0), true
		for _, h := range hs {
			b, ok := valueAt(h, tm)
			v, known = v<<1|b, known && ok
		}
		if known {
			out[tm] = v
		}
	}
	return out
}

// The run's save file, read by us and by GTKWave: it opens on the traced
// window (a window that does not start at 0), every signal GTKWave finds;
// the signals that change come first, the ones that never change (the
// access logs but one) in closed groups after them; every enumerated
// signal of the VCD has a translate file that names every value it takes,
// and GTKWave shows those names.
func TestRunSavedView(t *testing.T) {
	// The window begins before the first frame, so every enumerated
	// signal changes in it.
	const from, to = 1_000_000, 12_000_000
	dir, _ := runSmall(t, "--trace", "node0.pcie0,node1.pcie0,node1.iommu,net", "--trace-from", "1us", "--trace-to", "12us")
	data, err := os.ReadFile(filepath.Join(dir, "run.vcd"))
	if err != nil {
		t.Fatal(err)
	}
	vcd, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	gtkwPath := filepath.Join(dir, "run.gtkw")
	view := readGTKW(t, gtkwPath)
	if view.timestart != from || vcd.End != to || !view.zoomed {
		t.Fatalf("timestart %d, VCD ends at %d, zoom given %v", view.timestart, vcd.End, view.zoomed)
	}

	// Changing signals first, then a closed group of closed groups.
	closedAt := slices.IndexFunc(view.rows, func(r gtkwRow) bool { return r.flags&flagClosed != 0 })
	if closedAt < 0 {
		t.Fatal("no closed group")
	}
	listed := map[string]bool{}
	for i, r := range view.rows {
		if r.signal == "" {
			if r.bits == nil && (r.label == "" || i > closedAt && r.flags&flagClosed == 0) {
				t.Fatalf("row %d %+v", i, r)
			}
			continue
		}
		listed[r.signal] = true
		if changes := len(vcd.History(r.signal)) > 1; changes != (i < closedAt) {
			t.Errorf("%s (%d values in the window) is row %d; the closed group begins at row %d",
				r.signal, len(vcd.History(r.signal)), i, closedAt)
		}
	}
	for _, v := range vcd.Vars {
		if !listed[v.Path] {
			t.Errorf("%s is not in the save file", v.Path)
		}
	}
	for i := 1; i < 16; i++ {
		if _, ok := vcd.ByPath(fmt.Sprintf("node1.iommu.log%d.head", i)); !ok {
			t.Fatalf("log%d is not traced", i)
		}
	}

	// Every enumerated signal is translated, and its file names every value.
	enumerated := map[string]bool{}
	for _, v := range vcd.Vars {
		leaf := v.Path[strings.LastIndexByte(v.Path, '.')+1:]
		if leaf == "tlp_kind" || leaf == "kind" || leaf == "bth_opcode" {
			enumerated[v.Path] = true
		}
	}
	names := map[string]map[uint64]string{}
	seen := map[string]map[uint64]bool{} // values per translate file
	for _, r := range view.rows {
		if r.flags&flagTranslated == 0 {
			continue
		}
		if r.filter == "" {
			t.Fatalf("translated row %+v without a file", r)
		}
		if names[r.filter] == nil {
			names[r.filter] = readTranslate(t, filepath.Join(dir, r.filter))
			seen[r.filter] = map[uint64]bool{}
		}
		delete(enumerated, r.signal)
		vals := rowValues(vcd, r)
		if len(vals) == 0 {
			t.Errorf("translated row %+v takes no value", r)
		}
		for tm, v := range vals {
			if _, ok := names[r.filter][v]; !ok {
				t.Errorf("%s%v is %d at %d ps, which %s does not name", r.signal, r.bits, v, tm, r.filter)
			}
			seen[r.filter][v] = true
		}
	}
	if len(enumerated) > 0 {
		t.Errorf("enumerated signals without a translate file: %v", enumerated)
	}
	for file, least := range map[string]int{"run.tlp_kind.txt": 2, "run.bth_opcode.txt": 2, "run.decision.txt": 1} {
		if len(seen[file]) < least {
			t.Errorf("%s: the VCD shows %d of its values, want at least %d", file, len(seen[file]), least)
		}
	}

	// GTKWave: the same rows, the window on screen, the names.
	probes := []uint64{6_000_000, 9_500_000, 11_500_000}
	gw := testtool.GTKWaveProbe(t, gtkwPath, probes...)
	if len(gw.Traces) != len(view.rows) {
		t.Fatalf("GTKWave shows %d rows, the save file has %d", len(gw.Traces), len(view.rows))
	}
	if gw.Start > from || gw.End < to || float64(to-from) < 0.8*float64(gw.End-gw.Start) {
		t.Errorf("GTKWave shows %d..%d ps, the traced window is %d..%d", gw.Start, gw.End, from, to)
	}
	if shown := float64(gw.WaveWidth) * math.Pow(2, -view.zoom) / 200; shown < to-from {
		t.Errorf("zoom %f shows %.0f ps in GTKWave's %d pixels, less than the window", view.zoom, shown, gw.WaveWidth)
	}
	checked := 0
	for i, r := range view.rows {
		if r.flags&flagTranslated == 0 || i > closedAt {
			continue
		}
		if gw.Traces[i].Flags&flagTranslated == 0 {
			t.Errorf("GTKWave does not translate row %d (%+v)", i, r)
		}
		vals := rowValues(vcd, r)
		for _, tm := range probes {
			var at uint64
			for ct := range vals {
				if ct <= tm && ct >= at {
					at = ct
				}
			}
			want, ok := names[r.filter][vals[at]]
			if _, known := vals[at]; !known || !ok {
				continue // undefined at tm
			}
			if got := gw.Traces[i].Values[tm]; got != want {
				t.Errorf("row %d (%s%v) at %d ps: GTKWave shows %q, want %q", i, r.signal, r.bits, tm, got, want)
			}
			checked++
		}
	}
	if checked < 5 {
		t.Errorf("only %d translated values checked in GTKWave", checked)
	}
}

// The capture has an interface per wire, named after it; each frame is on
// its wire's interface (the source node's address), at the picosecond the
// wire took it in the VCD (a rising edge of its tx.fire), with the opcode
// the wire's bth_opcode signal shows. scapy reads the times exactly,
// tshark to its nanosecond.
func TestRunCaptureMatchesTrace(t *testing.T) {
	tshark := testtool.Need(t, "tshark")
	testtool.Need(t, "python3")
	dir, _ := runSmall(t) // traces net from 0 to 20 µs
	data, err := os.ReadFile(filepath.Join(dir, "run.vcd"))
	if err != nil {
		t.Fatal(err)
	}
	vcd, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pcap := filepath.Join(dir, "run.pcapng")
	out, err := exec.Command(tshark, testtool.TsharkArgs("-r", pcap, "-T", "fields", "-E", "separator=,",
		"-e", "frame.interface_name", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "infiniband.bth.opcode")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	script := "import sys\nfrom scapy.utils import PcapNgReader\nfor p in PcapNgReader(sys.argv[1]):\n    print(int(p.time * 10**12))\n"
	res, err := exec.Command("/usr/bin/python3", "-c", script, pcap).Output()
	if err != nil {
		t.Fatalf("scapy: %v", err)
	}
	times := strings.Fields(string(res))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(times) || len(lines) < 400 {
		t.Fatalf("tshark reads %d frames, scapy %d", len(lines), len(times))
	}
	src := map[string]string{"net.wire01": "10.0.0.1", "net.wire10": "10.0.1.1"}
	frames := map[string][]uint64{} // per wire, in the window
	for i, line := range lines {
		f := strings.Split(line, ",")
		ps, err := strconv.ParseUint(times[i], 10, 64)
		if err != nil || len(f) != 4 {
			t.Fatalf("frame %d: %q, %q", i+1, line, times[i])
		}
		if want := fmt.Sprintf("%d.%09d", ps/1e12, ps%1e12/1000); f[1] != want {
			t.Fatalf("frame %d: tshark's time %s, scapy's %d ps", i+1, f[1], ps)
		}
		if src[f[0]] != f[2] {
			t.Fatalf("frame %d from %s on interface %q", i+1, f[2], f[0])
		}
		if ps > vcd.End {
			continue
		}
		frames[f[0]] = append(frames[f[0]], ps)
		if op, ok := valueAt(vcd.History(f[0]+".bth_opcode"), ps); !ok || fmt.Sprint(op) != f[3] {
			t.Fatalf("frame %d (opcode %s) at %d ps: %s.bth_opcode is %d (%v)", i+1, f[3], ps, f[0], op, ok)
		}
	}
	for wire := range src {
		var edges []uint64
		for _, c := range vcd.History(wire + ".tx.fire") {
			if c.V == "1" {
				edges = append(edges, c.T)
			}
		}
		if len(edges) == 0 || !slices.Equal(edges, frames[wire]) {
			t.Errorf("%s: frames at %v ps, the wire took frames at %v", wire, frames[wire], edges)
		}
	}
}
