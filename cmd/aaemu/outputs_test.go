package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An output that cannot be created fails the command before it simulates:
// with --until 1ns every experiment would fail ("did not finish"), so the
// error says which came first.
func TestOutputsCheckedBeforeSimulating(t *testing.T) {
	dir := t.TempDir()
	blocked := func(out, name string) {
		// A directory with a file in it where an output goes: it can be
		// neither removed nor created, even by root.
		if err := os.MkdirAll(filepath.Join(out, name, "keep"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runOut := filepath.Join(dir, "run")
	blocked(runOut, "stats.json")
	_, err := aaemu(t, "run", smallScenario, "--out", runOut, "--until", "1ns")
	if err == nil || !strings.Contains(err.Error(), "stats.json") || strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("run: error %v, want one about stats.json before simulating", err)
	}
	for _, f := range []string{"run.vcd", "run.pcapng", "run.gtkw"} {
		if _, err := os.Stat(filepath.Join(runOut, f)); err == nil {
			t.Errorf("run left an empty %s after failing", f)
		}
	}

	sw := filepath.Join(dir, "sweep.yaml")
	os.WriteFile(sw, []byte("until: 1ns\ngrid:\n  workload.dht.inserts: [10, 20]\n"), 0o644)
	swOut := filepath.Join(dir, "sweep")
	blocked(swOut, "sweep.json")
	_, err = aaemu(t, "sweep", sw, "--out", swOut)
	if err == nil || !strings.Contains(err.Error(), "sweep.json") || strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("sweep: error %v, want one about sweep.json before simulating", err)
	}

	// A file where the output directory should be.
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := aaemu(t, "paper", "9a", "--out", filepath.Join(file, "paper")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("paper: error %v", err)
	}
	if _, err := aaemu(t, "workload", "xor", "--nodes", "2", "--size", "8", "--schemes", "AA-SP", "--json", filepath.Join(file, "x.json")); err == nil ||
		!strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("workload: error %v", err)
	}
}

// The table is printed even when writing an output fails.
func TestTablePrintedWhenWriteFails(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no /dev/full: the test needs a Linux machine, as CI is")
		}
		t.Skip("no /dev/full (not Linux)")
	}
	out, err := aaemu(t, "workload", "xor", "--nodes", "2", "--size", "8", "--schemes", "AA-SP", "--json", "/dev/full")
	if err == nil || !strings.Contains(err.Error(), "/dev/full") {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(out, "AA-SP") {
		t.Fatalf("no table:\n%s", out)
	}
}

// A run removes the outputs an earlier run left that it does not write
// itself, and nothing else.
func TestStaleOutputsRemoved(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	os.WriteFile(keep, []byte("mine"), 0o644)
	if out, err := aaemu(t, "run", smallScenario, "--out", dir, "--txn-log"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range []string{"run.vcd", "run.gtkw", "run.pcapng", "stats.json", "host.json", "txns.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("first run: %v", err)
		}
	}
	if out, err := aaemu(t, "run", smallScenario, "--out", dir, "--no-vcd", "--no-pcap", "--no-host-stats"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range []string{"run.vcd", "run.gtkw", "run.pcapng", "host.json", "txns.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s of the earlier run is still there", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "stats.json")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(keep); string(b) != "mine" {
		t.Fatal("a file aaemu does not write was touched")
	}

	// A sweep's plots of a metric it no longer plots go.
	sw := filepath.Join(t.TempDir(), "s.yaml")
	swOut := t.TempDir()
	for _, y := range []string{"[inserts_per_second, target_polls]", "[inserts_per_second]"} {
		os.WriteFile(sw, []byte("grid:\n  workload.dht.inserts: [10, 20]\nplot:\n  y: "+y+"\n"), 0o644)
		if out, err := aaemu(t, "sweep", sw, "--out", swOut); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(swOut, "sweep-target_polls.png")); err == nil {
		t.Error("the earlier sweep's plot of target_polls is still there")
	}
	if _, err := os.Stat(filepath.Join(swOut, "sweep-inserts_per_second.svg")); err != nil {
		t.Error(err)
	}

	// Figures of an earlier `aaemu paper` that this one does not run go.
	pOut := t.TempDir()
	for _, fig := range []string{"9a", "6c"} {
		if out, err := aaemu(t, "paper", fig, "--out", pOut); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(pOut, "fig9a")); err == nil {
		t.Error("figure 9a of the earlier run is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(pOut, "claims.md")); strings.Contains(string(b), "| 9a |") || !strings.Contains(string(b), "| 6c |") {
		t.Errorf("claims.md:\n%s", b)
	}
}
