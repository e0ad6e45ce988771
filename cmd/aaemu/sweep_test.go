package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `aaemu sweep` on the example writes the table, JSON and a PNG and SVG per
// metric, and prints one row per experiment; a rerun is byte-identical.
func TestSweepCommand(t *testing.T) {
	var runs [2]string
	for i := range runs {
		dir := t.TempDir()
		out, err := aaemu(t, "sweep", "../../examples/sweep-compute.yaml", "--out", dir, "-j", "2")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "(5 points, 20 experiments") || !strings.Contains(out, "AM-Exp") {
			t.Fatalf("output:\n%s", out)
		}
		for _, f := range []string{"sweep.json", "sweep-inserts_per_second.png", "sweep-inserts_per_second.svg", "sweep-target_polls.png", "sweep-target_polls.svg"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
				t.Fatalf("%s: %v", f, err)
			}
		}
		csv, err := os.ReadFile(filepath.Join(dir, "sweep.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(csv), "\n"); n != 21 {
			t.Fatalf("sweep.csv has %d lines, want a header and 20 rows", n)
		}
		runs[i] = string(csv)
	}
	if runs[0] != runs[1] {
		t.Fatal("two sweeps of the same file wrote different tables")
	}
}
