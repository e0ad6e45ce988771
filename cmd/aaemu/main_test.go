package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/waveforms"
)

func aaemu(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(&out, &errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String() + errb.String(), err
}

// `aaemu run` with no scenario runs the built-in one and writes a VCD that a
// strict reader accepts, a save file and the statistics.
func TestRunDefaultScenario(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "demo", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "items delivered  64 of 64") {
		t.Fatalf("summary:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.vcd"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.ByPath("demo.sink.in.valid"); !ok {
		t.Fatal("the sink's input channel is not traced")
	}
	gtkw, _ := os.ReadFile(filepath.Join(dir, "run.gtkw"))
	if !bytes.Contains(gtkw, []byte(`[dumpfile] "run.vcd"`)) || !bytes.Contains(gtkw, []byte("demo.stage0.hold[31:0]")) {
		t.Fatalf("save file:\n%s", gtkw)
	}
	var stats struct {
		Format        string
		FormatVersion int `json:"format_version"`
		Seed          uint64
		Config        map[string]any
		Simulation    struct{ Transactions uint64 }
		Stats         map[string]struct {
			Kind, Unit, Desc string
			Value            uint64
		}
		Host *struct {
			WallSeconds  float64 `json:"wall_seconds"`
			PeakRSSBytes uint64  `json:"peak_rss_bytes"`
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err := json.Unmarshal(raw, &stats); err != nil {
		t.Fatal(err)
	}
	tr := stats.Stats["demo.sink.in.transfers"]
	if stats.Format != "aaemu-stats" || stats.FormatVersion != 1 || stats.Seed != 1 || stats.Simulation.Transactions != 64 ||
		tr.Value != 64 || tr.Unit == "" || tr.Desc == "" || stats.Config["pipeline"] == nil {
		t.Fatalf("stats.json:\n%s", raw)
	}
	if stats.Host == nil || stats.Host.WallSeconds <= 0 || stats.Host.PeakRSSBytes == 0 {
		t.Fatalf("host speed missing:\n%s", raw)
	}
}

// Same configuration and seed: byte-identical VCD, save file and statistics.
func TestRunIsDeterministic(t *testing.T) {
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var dirs []string
	for _, seed := range []string{"9", "9", "10"} {
		d := t.TempDir()
		if out, err := aaemu(t, "demo", "--out", d, "--seed", seed, "--no-host-stats"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		dirs = append(dirs, d)
	}
	for _, name := range []string{"run.vcd", "run.gtkw", "stats.json"} {
		if !bytes.Equal(read(dirs[0], name), read(dirs[1], name)) {
			t.Errorf("%s differs between two runs with the same seed", name)
		}
	}
	if bytes.Equal(read(dirs[0], "run.vcd"), read(dirs[2], "run.vcd")) {
		t.Error("another seed gave the same waveforms: the seed is not used")
	}
}

func TestRunTraceSelectionAndWindow(t *testing.T) {
	dir := t.TempDir()
	if out, err := aaemu(t, "demo", "--out", dir, "--trace", "demo.stage1", "--trace-from", "100ns", "--trace-to", "200ns", "--txn-log"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "run.vcd"))
	f, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range f.Vars {
		if !strings.HasPrefix(v.Path, "demo.stage1.") {
			t.Errorf("%s dumped, only demo.stage1 was asked for", v.Path)
		}
	}
	for code, ch := range f.Changes {
		for _, c := range ch {
			if c.T < 100_000 || c.T > 200_000 {
				t.Fatalf("change of %s at %d ps, outside the window", code, c.T)
			}
		}
	}
	txns, _ := os.ReadFile(filepath.Join(dir, "txns.jsonl"))
	if n := bytes.Count(txns, []byte("\n")); n != 64 {
		t.Fatalf("txns.jsonl has %d records, want 64", n)
	}
}

// Bad input gets one clear error that says what and where.
func TestBadInputGivesClearErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown field", []string{"demo", "--out", dir, "--config", write("a.yaml", "stages: 3\nstagez: 4\n")}, "line 2: field stagez not found"},
		{"bad value", []string{"demo", "--out", dir, "--config", write("b.yaml", "depth: 0\n")}, "b.yaml: depth: 0 out of 1..65536"},
		{"wrong type", []string{"demo", "--out", dir, "--config", write("c.yaml", "items: many\n")}, "line 1: cannot unmarshal"},
		{"missing file", []string{"demo", "--config", filepath.Join(dir, "nope.yaml")}, "no such file"},
		{"bad time", []string{"demo", "--out", dir, "--until", "3 parsecs"}, "--until"},
		{"window backwards", []string{"demo", "--out", dir, "--trace-from", "2us", "--trace-to", "1us"}, "lies before"},
		{"bad pattern", []string{"demo", "--out", dir, "--trace", "demo..x"}, "signal pattern"},
		{"bad log level", []string{"--log-level", "loud", "version"}, "--log-level"},
		{"malformed vcd", []string{"vcd", "check", write("bad.vcd", "$timescale 1ps $end\n$scope module a $end\n$var wire 1 ! b $end\n$upscope $end\n$enddefinitions $end\n#0\n1?\n")}, "vcd line 7: value change for undeclared identifier"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := aaemu(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans several lines: %q", err)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out, err := aaemu(t, "version")
	if err != nil || !strings.HasPrefix(out, "aaemu ") {
		t.Fatalf("%q %v", out, err)
	}
}

// FuzzParseConfig: scenario files never crash the loader, and what it
// accepts is a valid configuration.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("stages: 3\ndepth: 4\n"))
	f.Add([]byte("items: 10\nsink_ready_pct: 50\n"))
	f.Add([]byte("{stages: [1, 2]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseConfig("fuzz.yaml", data)
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("accepted an invalid configuration: %v", verr)
			}
		}
	})
}
