package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every output of a run is the same whatever the number of goroutines the
// nodes run on, and whether the cores sleep through their polling checks
// or run every one (--check-every-poll): statistics, capture, waveforms,
// the transaction log, the table. Host figures are left out
// (--no-host-stats), and so, between sleeping and checking, are the
// kernel's counts of its own work.
func TestPartitionsByteIdentical(t *testing.T) {
	dir := t.TempDir()
	star := filepath.Join(dir, "star.yaml")
	// 16 nodes behind one switch, 4 processes each, with the capture and
	// the waveforms of the first experiment.
	if err := os.WriteFile(star, []byte(`seed: 3
machine:
  nodes: 16
  cores: 4
  transport: srd
  wire: {rate_mbps: 10000, latency_ns: 300}
workload:
  dht:
    inserts: 40
    cells: 1024
    collisions: [0.25]
    schemes: [AA-SP, AA-Poll, RMA]
    procs_per_node: 4
outputs:
  vcd: true
  pcap: true
  trace: "node3.nic0,net.switch,net.up3"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The torus example with two nodes a router (a Gemini's): the
	// adapter of a router takes two nodes' wires, each node its own
	// domain.
	torus2 := filepath.Join(dir, "torus2.yaml")
	ex, err := os.ReadFile("../../examples/dht-torus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	two := bytes.Replace(ex, []byte("torus: {dims: [3, 2, 2]}"), []byte("torus: {dims: [3, 2, 1], nodes_per_router: 2}"), 1)
	if bytes.Equal(two, ex) {
		t.Fatal("examples/dht-torus.yaml: no torus line to change")
	}
	if err := os.WriteFile(torus2, two, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"default", []string{"run", "--txn-log"}},
		{"star", []string{"run", star, "--txn-log"}},
		{"leaf-spine", []string{"run", "../../examples/dht-leaf-spine.yaml"}},
		{"counter", []string{"run", "../../examples/counter.yaml"}},
		{"lossy", []string{"run", "../../examples/dht-lossy-10g.yaml"}},
		{"torus", []string{"run", "../../examples/dht-torus.yaml", "--txn-log"}},
		{"torus two a router", []string{"run", torus2, "--txn-log"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ref map[string][]byte
			var refOut string
			runs := []struct {
				parts int
				check bool // --check-every-poll
			}{{1, false}, {2, false}, {4, false}, {16, false}, {1, true}, {2, true}, {4, true}}
			for _, r := range runs {
				p := r.parts
				out := filepath.Join(dir, fmt.Sprintf("%s-%d-%v", c.name, p, r.check))
				args := append(slices.Clone(c.args), "--out", out, "--no-host-stats", "--partitions", fmt.Sprint(p))
				what := fmt.Sprintf("partitions %d", p)
				if r.check {
					args = append(args, "--check-every-poll")
					what += ", every poll checked"
				}
				text, err := aaemu(t, args...)
				if err != nil {
					t.Fatalf("%s: %v\n%s", what, err, text)
				}
				files := readDir(t, out)
				if p == 1 && !r.check {
					ref, refOut = files, text
					if len(files) == 0 {
						t.Fatal("no outputs")
					}
					continue
				}
				if tableOf(text) != tableOf(refOut) {
					t.Errorf("%s: the table differs from one partition's:\n%s\nwant\n%s", what, text, refOut)
				}
				for name, want := range ref {
					got, ok := files[name]
					if r.check && name == "stats.json" {
						// The kernel's own work differs: the sleep saves
						// evaluations and time steps, nothing else.
						got, want = withoutWork(got), withoutWork(want)
					}
					if !ok || !bytes.Equal(got, want) {
						t.Errorf("%s: %s differs from one partition's (%d bytes, want %d)", what, name, len(got), len(want))
					}
				}
				if len(files) != len(ref) {
					t.Errorf("%s: %d files, one partition wrote %d", what, len(files), len(ref))
				}
			}
		})
	}
}

// withoutWork is a statistics file without the counts of the kernel's
// work (time steps, evaluations, edges evaluated): what sleeping through
// polling checks changes, by design.
func withoutWork(b []byte) []byte {
	var keep [][]byte
	n := 0
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte(`"time_steps":`)) || bytes.Contains(l, []byte(`"unit_evaluations":`)) ||
			bytes.Contains(l, []byte(`"edges_evaluated":`)) {
			n++
			continue
		}
		keep = append(keep, l)
	}
	if n == 0 {
		return append([]byte("no kernel counts in the statistics file\n"), b...)
	}
	return bytes.Join(keep, []byte("\n"))
}

// tableOf is a run's terminal output without what differs from run to run
// by design: the wall time and the output directory.
func tableOf(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "wall time") || strings.Contains(l, "outputs in ") || strings.HasPrefix(strings.TrimSpace(l), "view:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

// --partitions takes a count, or 0 for the automatic choice.
func TestPartitionsFlagRefusesNegative(t *testing.T) {
	out, err := aaemu(t, "run", "--partitions", "-1", "--out", t.TempDir())
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("--partitions -1: want 1 or more goroutines, or 0 to choose by the cluster's size")) {
		t.Fatalf("got %v\n%s", err, out)
	}
}
