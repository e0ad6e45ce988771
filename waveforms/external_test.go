package waveforms_test

// Independent acceptance: tools that are not ours must read back what the
// writer produced, value for value. `make deps` installs them; under CI a
// missing tool fails the test instead of skipping it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/demo"
	"github.com/aaemu/aaemu/internal/testtool"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/waveforms"
)

// tee records what the model traced, per signal path, one value per time
// step (the last one), while the VCD writer writes the file.
type tee struct {
	w       *waveforms.Writer
	paths   []string
	widths  []int
	history map[string][]waveforms.Change
	ids     []int
}

func (tr *tee) Declare(path string, width int) (int, bool) {
	id, ok := tr.w.Declare(path, width)
	if ok {
		tr.paths = append(tr.paths, path)
		tr.widths = append(tr.widths, width)
	}
	return id, ok
}

func (tr *tee) record(t uint64, id int, v string) {
	p := tr.paths[id]
	h := tr.history[p]
	if n := len(h); n > 0 && h[n-1].T == t {
		h[n-1].V = v
		if n > 1 && h[n-2].V == v {
			h = h[:n-1]
		}
	} else if n == 0 || h[n-1].V != v {
		h = append(h, waveforms.Change{T: t, V: v})
	}
	tr.history[p] = h
}

func (tr *tee) Set(t uint64, id int, v uint64) {
	tr.w.Set(t, id, v)
	tr.record(t, id, fmt.Sprintf("%0*b", tr.widths[id], v))
}

func (tr *tee) SetXZ(t uint64, id int, z bool) {
	tr.w.SetXZ(t, id, z)
	c := "x"
	if z {
		c = "z"
	}
	tr.record(t, id, strings.Repeat(c, tr.widths[id]))
}

// traceDemo runs the demonstration pipeline and returns the VCD path and
// what the model traced.
func traceDemo(t *testing.T) (string, *tee) {
	t.Helper()
	e := sim.NewEngine(42)
	cfg := demo.DefaultConfig()
	cfg.Items = 40
	p, err := demo.Build(e, "top", cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.vcd")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := &tee{w: waveforms.NewWriter(f, waveforms.Options{Version: "aaemu test", Comment: "seed 42"}), history: map[string][]waveforms.Change{}}
	e.AttachTracer(tr)
	end := e.Run(sim.MS)
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	if err := tr.w.Close(uint64(end)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path, tr
}

func compareHistories(t *testing.T, who string, want map[string][]waveforms.Change, got func(path string) []waveforms.Change) {
	t.Helper()
	if len(want) == 0 {
		t.Fatal("nothing traced")
	}
	changes := 0
	for path, w := range want {
		g := got(path)
		if len(g) != len(w) {
			t.Fatalf("%s: %s has %d value changes, the model traced %d\n got %v\nwant %v", who, path, len(g), len(w), g, w)
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatalf("%s: %s change %d is %v, the model traced %v", who, path, i, g[i], w[i])
			}
		}
		changes += len(w)
	}
	t.Logf("%s: %d signals, %d value changes identical", who, len(want), changes)
}

// Our strict reader agrees with the model (a baseline for the others).
func TestStrictReaderReadsModelTrace(t *testing.T) {
	path, tr := traceDemo(t)
	f := mustParse(t, path)
	compareHistories(t, "strict reader", tr.history, f.History)
}

func mustParse(t *testing.T, path string) *waveforms.File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// GTKWave: vcd2fst then fst2vcd must keep every value change.
func TestGTKWaveFSTRoundTrip(t *testing.T) {
	vcd2fst := testtool.Need(t, "vcd2fst")
	fst2vcd := testtool.Need(t, "fst2vcd")
	path, tr := traceDemo(t)
	fst := strings.TrimSuffix(path, ".vcd") + ".fst"
	if out, err := exec.Command(vcd2fst, path, fst).CombinedOutput(); err != nil {
		t.Fatalf("vcd2fst: %v\n%s", err, out)
	}
	back, err := exec.Command(fst2vcd, fst).Output()
	if err != nil {
		t.Fatalf("fst2vcd: %v", err)
	}
	f, err := waveforms.Parse(bytes.NewReader(back))
	if err != nil {
		t.Fatalf("fst2vcd output: %v", err)
	}
	compareHistories(t, "vcd2fst+fst2vcd", tr.history, f.History)
}

// vcd-stream (WaveDrom's parser, Node.js) reads the same values.
func TestVCDStreamReadsModelTrace(t *testing.T) {
	node := testtool.Need(t, "node")
	script, _ := filepath.Abs("../tools/vcdstream/parse.js")
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "vcd-stream")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("vcd-stream is not installed; `make deps` installs it")
		}
		t.Skip("vcd-stream is not installed; run `make deps`")
	}
	path, tr := traceDemo(t)
	out, err := exec.Command(node, script, path).Output()
	if err != nil {
		t.Fatalf("vcd-stream: %v", err)
	}
	var res struct {
		Vars []struct {
			Path  string
			Width int
			Code  string
		}
		Changes [][3]any
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("vcd-stream output: %v", err)
	}
	byCode := map[string][]waveforms.Change{}
	for _, c := range res.Changes {
		code, tm, v := c[0].(string), uint64(c[1].(float64)), c[2].(string)
		h := byCode[code]
		if n := len(h); n > 0 && h[n-1].V == v {
			continue
		}
		byCode[code] = append(h, waveforms.Change{T: tm, V: v})
	}
	codeOf := map[string]string{}
	for _, v := range res.Vars {
		codeOf[v.Path] = v.Code
	}
	compareHistories(t, "vcd-stream", tr.history, func(p string) []waveforms.Change { return byCode[codeOf[p]] })
}

// GTKWave's own loaders open the file without a warning.
func TestGTKWaveLoadsWithoutWarnings(t *testing.T) {
	xvfb := testtool.Need(t, "xvfb-run")
	testtool.Need(t, "gtkwave")
	vcd2lxt2 := testtool.Need(t, "vcd2lxt2")
	path, _ := traceDemo(t)
	bad := regexp.MustCompile(`Unknown (VCD )?identifier|backtracking|parse error|malformed|glitch`)
	for _, args := range [][]string{{"-a", "gtkwave", "-x", path}, {"-a", "gtkwave", "-L", "-x", path}} {
		out, err := exec.Command(xvfb, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("gtkwave %v: %v\n%s", args, err, out)
		}
		if m := bad.Find(out); m != nil {
			t.Fatalf("gtkwave %v warns %q:\n%s", args, m, out)
		}
	}
	out, err := exec.Command(vcd2lxt2, path, path+".lxt2").CombinedOutput()
	if err != nil || regexp.MustCompile(`Unknown|Exiting`).Match(out) {
		t.Fatalf("vcd2lxt2: %v\n%s", err, out)
	}
}

// The screenshot script renders the VCD with its save file in GTKWave on a
// virtual display: the picture a person sees.
func TestGTKWaveScreenshot(t *testing.T) {
	testtool.Need(t, "xvfb-run")
	testtool.Need(t, "gtkwave")
	testtool.Need(t, "import")
	path, tr := traceDemo(t)
	gtkw := strings.TrimSuffix(path, ".vcd") + ".gtkw"
	from, to := tr.w.Window()
	if err := (waveforms.SaveFile{DumpFile: filepath.Base(path), Signals: tr.w.Signals(), From: from, To: to}).Write(gtkw); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(t.TempDir(), "wave.png")
	script, _ := filepath.Abs("../tools/gtkwave/screenshot.sh")
	if out, err := exec.Command(script, path, gtkw, png).CombinedOutput(); err != nil {
		t.Fatalf("screenshot: %v\n%s", err, out)
	}
	data, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) || len(data) < 10_000 {
		t.Fatalf("wave.png is not a picture of a waveform (%d bytes)", len(data))
	}
}

// x, z and real values survive GTKWave's FST round trip too.
func TestGTKWaveFSTRoundTripFourStateAndReal(t *testing.T) {
	vcd2fst := testtool.Need(t, "vcd2fst")
	fst2vcd := testtool.Need(t, "fst2vcd")
	path := filepath.Join(t.TempDir(), "fourstate.vcd")
	f, _ := os.Create(path)
	w := waveforms.NewWriter(f, waveforms.Options{})
	bus, _ := w.Declare("top.bus", 8)
	bit, _ := w.Declare("top.oe", 1)
	util, _ := w.DeclareReal("top.util")
	w.SetXZ(0, bus, false)
	w.SetXZ(0, bit, true)
	w.SetReal(0, util, 0)
	w.Set(10, bus, 0xa5)
	w.Set(10, bit, 1)
	w.SetReal(10, util, 0.375)
	w.SetXZ(20, bus, true)
	w.SetXZ(20, bit, false)
	w.SetReal(20, util, 1.5e-3)
	if err := w.Close(30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ours := mustParse(t, path)
	fst := path + ".fst"
	if out, err := exec.Command(vcd2fst, path, fst).CombinedOutput(); err != nil {
		t.Fatalf("vcd2fst: %v\n%s", err, out)
	}
	back, err := exec.Command(fst2vcd, fst).Output()
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := waveforms.Parse(bytes.NewReader(back))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"top.bus", "top.oe", "top.util"} {
		a, b := fmt.Sprint(ours.History(p)), fmt.Sprint(theirs.History(p))
		if a != b || a == "[]" {
			t.Errorf("%s: ours %s, after FST %s", p, a, b)
		}
	}
}

// GTKWave opens the save file alone, from another directory, on the traced
// window; the signals that never change sit in closed groups after the
// others; an enumerated signal and three bits joined into one show names.
func TestGTKWaveOpensTheSavedView(t *testing.T) {
	const us = 1_000_000
	dir := t.TempDir()
	vcd := filepath.Join(dir, "view.vcd")
	f, err := os.Create(vcd)
	if err != nil {
		t.Fatal(err)
	}
	w := waveforms.NewWriter(f, waveforms.Options{From: 10 * us, To: 30 * us})
	clk, _ := w.Declare("top.clk", 1)
	kind, _ := w.Declare("top.pcie.kind", 5)
	still, _ := w.Declare("top.pcie.still", 8)
	w.Declare("top.log1.head", 64) // never set
	perf, _ := w.Declare("top.iommu.performed", 1)
	logged, _ := w.Declare("top.iommu.logged", 1)
	fault, _ := w.Declare("top.iommu.fault", 1)
	kinds := []uint64{0, 2, 12}
	decisions := []uint64{0b001, 0b011, 0b110} // pass, pass+record, blocked+faultlog
	for i := uint64(0); i < 40; i++ {
		w.Set(i*us, clk, i%2)
		w.Set(i*us, kind, kinds[i%3])
		w.Set(i*us, still, 7)
		d := decisions[i%3]
		w.Set(i*us, fault, d>>2)
		w.Set(i*us, logged, d>>1&1)
		w.Set(i*us, perf, d&1)
	}
	if err := w.Close(40 * us); err != nil {
		t.Fatal(err)
	}
	f.Close()
	from, to := w.Window()
	if from != 10*us || to != 30*us {
		t.Fatalf("window %d..%d", from, to)
	}
	enums := []waveforms.Enum{
		{Name: "kind", Signals: []string{"**.pcie.kind"}, Values: map[uint64]string{0: "MRd", 2: "MWr", 12: "CplD"}},
		{Name: "decision", Signals: []string{"**.iommu"}, Bits: []string{"fault", "logged", "performed"},
			Values: map[uint64]string{1: "pass", 3: "pass+record", 6: "blocked+faultlog"}},
	}
	gtkw := filepath.Join(dir, "view.gtkw")
	if err := (waveforms.SaveFile{DumpFile: "view.vcd", Signals: w.Signals(), From: from, To: to, Enums: enums}).Write(gtkw); err != nil {
		t.Fatal(err)
	}
	probe := []uint64{12*us + 500, 20*us + 500, 28*us + 500}
	view := testtool.GTKWaveProbe(t, gtkw, probe...)
	if view.Start > from || view.End < to || float64(to-from) < 0.8*float64(view.End-view.Start) {
		t.Errorf("GTKWave shows %d..%d, the traced window is %d..%d", view.Start, view.End, from, to)
	}
	const closedBegin = 0xc00200
	closedAt := -1
	row := map[string]int{}
	for i, tr := range view.Traces {
		if tr.Flags == closedBegin && closedAt < 0 {
			closedAt = i
		}
		row[tr.Name] = i
	}
	if closedAt < 0 {
		t.Fatalf("no closed group: %+v", view.Traces)
	}
	for name, changes := range map[string]bool{"clk": true, "kind[4:0]": true, "decision": true, "performed": true,
		"still[7:0]": false, "head[63:0]": false} {
		i, ok := row[name]
		if !ok || (i < closedAt) != changes {
			t.Errorf("row %q at %d (found %v), the closed group begins at %d", name, i, ok, closedAt)
		}
	}
	for k, tm := range probe {
		i := tm / us
		if got, want := view.Traces[row["kind[4:0]"]].Values[tm], enums[0].Values[kinds[i%3]]; got != want {
			t.Errorf("at %d kind shows %q, want %q", tm, got, want)
		}
		if got, want := view.Traces[row["decision"]].Values[tm], enums[1].Values[decisions[i%3]]; got != want {
			t.Errorf("probe %d: at %d the decision shows %q, want %q", k, tm, got, want)
		}
	}
}
