package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `aaemu paper mpi-start table3 --reduced` runs Table 3 of the MPI-StarT
// paper on reduced sizes into OUT/mpi-start/: the points, the plot and the
// claims with the paper's ratios, aaemu's and a verdict. A paper without
// reduced figures, and a figure mpi-start does not have, are refused.
func TestPaperMPIStart(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "mpi-start", "table3", "--reduced", "--out", dir, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure table3", "a round of 8 KB broadcasts", "S11 original / two-stage round time, block placement",
		"1.0, 1.68, 2.09, 1.93", "1+1 1.00, 2+2 ", "S12 two-stage round time per doubling"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"figtable3/points.csv", "figtable3/figtable3.png", "figtable3/figtable3.svg", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, "mpi-start", f)); err != nil || st.Size() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "mpi-start", "figtable3", "points.csv"))
	if err != nil || !strings.HasPrefix(string(csv), "ranks_per_SMP,scheme,round_time\n1,\"original, block\",") || strings.Count(string(csv), "\n") != 1+3*4 {
		t.Fatalf("points.csv: %v\n%s", err, csv)
	}
	for _, args := range [][]string{{"paper", "multirail", "5a", "--reduced"}, {"paper", "mpi-start", "table9", "--reduced"}} {
		if out, err := aaemu(t, append(args, "--out", dir)...); err == nil {
			t.Fatalf("%v ran:\n%s", args, out)
		} else if !strings.Contains(err.Error(), "reduced") && !strings.Contains(err.Error(), "table9") {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

// `aaemu paper mpi-start --scenario FILE` runs the figures on the file's
// machine with machine.startx: a slower Arctic line makes Table 1's one-way
// times longer; a machine without machine.startx is refused.
func TestPaperMPIStartScenario(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow.yaml")
	plain := filepath.Join(dir, "plain.yaml")
	for f, body := range map[string]string{slow: "machine:\n  startx: {line: {rate_mbps: 100}}\n", plain: "machine: {nodes: 2}\n"} {
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oneWay := func(args ...string) string {
		t.Helper()
		out, err := aaemu(t, append([]string{"paper", "mpi-start", "table1", "--out", dir}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		csv, err := os.ReadFile(filepath.Join(dir, "mpi-start", "figtable1", "points.csv"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(csv), "\n") {
			if strings.HasPrefix(l, `2,"c: 64 B, stda/ldda",one way,`) {
				return l
			}
		}
		t.Fatalf("no one-way time of row c:\n%s", csv)
		return ""
	}
	if a, b := oneWay(), oneWay("--scenario", slow); a == b {
		t.Errorf("the same one-way time on a 100 Mb/s line as on the default: %s", a)
	}
	if _, err := aaemu(t, "paper", "mpi-start", "table1", "--scenario", plain, "--out", dir); err == nil || !strings.Contains(err.Error(), "machine.startx") {
		t.Fatalf("a machine without machine.startx: %v", err)
	}
}
