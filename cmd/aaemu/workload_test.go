package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/scenario"
)

// `aaemu workload KIND` runs every scheme of each non-DHT workload, each
// checking its own result, and writes the rows as JSON; bad kinds and
// schemes are errors that name them.
func TestWorkloadCommand(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		rows  int
		wants []string
	}{
		{"counter", 5, []string{"No-Cnt", "AA-Poll", "A-KV", "Allreduce", "accesses/s"}},
		{"getlog", 3, []string{"No-FT", "gets/s", "wire bytes per get"}},
		{"checkpoint", 1, []string{"pages copied per checkpoint"}},
		{"xor", 2, []string{"AA-SP", "TLPs at the checksum's node"}},
		{"stream", 2, []string{"no-iommu", "e-iommu", "B/s", "20 writes of 4096 B, 1 in flight"}},
		{"sort", 4, []string{"No-FT", "AM", "bytes got from other nodes", "logged"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "rows.json")
			out, err := aaemu(t, "workload", tc.kind, "--nodes", "3", "--ops", "20", "--json", js)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
			data, err := os.ReadFile(js)
			if err != nil {
				t.Fatal(err)
			}
			var rows []scenario.WorkloadResult
			if err := json.Unmarshal(data, &rows); err != nil || len(rows) != tc.rows {
				t.Fatalf("%d rows, %v", len(rows), err)
			}
			for _, r := range rows {
				if !r.Verified || r.Rate <= 0 {
					t.Fatalf("row %+v", r)
				}
			}
		})
	}
	for _, bad := range [][]string{{"workload", "quicksort"}, {"workload", "counter", "--schemes", "AM"}, {"workload", "stream", "--op", "get"}, {"workload", "sort", "--schemes", "AA-SP"}} {
		if out, err := aaemu(t, bad...); err == nil {
			t.Errorf("%v ran:\n%s", bad, out)
		}
	}
}

// A-KV's 32 servers on node 0, one per source core, count into one array.
// At 8 nodes × 32 processes two of them once took the same element within
// a memory access of each other, and an increment by load and store lost
// one (three elements counted one short): the run checks every count.
func TestAKVCountsEveryAccessAtScale(t *testing.T) {
	file := filepath.Join(t.TempDir(), "akv.yaml")
	if err := os.WriteFile(file, []byte(`seed: 1
machine: {nodes: 8, cores: 32, transport: srd, wire: {rate_mbps: 10000}}
workload:
  kind: counter
  counter: {schemes: [A-KV], procs_per_node: 32, elements: 4096, accesses: 100}
outputs: {vcd: false, pcap: false}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := aaemu(t, "run", file, "--out", t.TempDir(), "--no-host-stats", "--until", "100ms"); err != nil || !strings.Contains(out, "22400 accesses") {
		t.Fatalf("%v\n%s", err, out)
	}
}
