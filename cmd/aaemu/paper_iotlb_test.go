package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPaperIOTLB runs `aaemu paper 7c --reduced`: Figure 7c's grid (the
// IOTLB's entries × a1, a2, a4, af × lru, random × both key streams) on two
// sizes, its hit-rate and rate plots, and its claims with their verdicts,
// in OUT/fig7c as the full figure writes them.
func TestPaperIOTLB(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "7c", "--reduced", "--out", dir, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure 7c", "entries (16 to 64)", "32 experiments",
		"lru's hit rate above random's, every associativity and size (random keys)", "(Zipf 0.99 pages)",
		"a larger IOTLB helps", "higher associativity helps (lru)", "lru_af vs lru_a4, insert rate", "higher in ",
		"IOTLB lookups by kind of page, fully associative, random keys", "table", "queues", "completions", "payload"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"fig7c/sweep.csv", "fig7c/fig7c-iotlb_hit_rate.png", "fig7c/fig7c-iotlb_hit_rate.svg", "fig7c/fig7c-inserts_per_second.png", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "fig7c", "sweep.csv"))
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 1+32 || !strings.HasPrefix(lines[0], "workload.dht.page_zipf,machine.iommu.iotlb_eviction,machine.iommu.iotlb_ways,machine.iommu.iotlb_entries,") {
		t.Errorf("sweep.csv: %d lines, header %q", len(lines), lines[0])
	}
}

// TestPaperIOTLBOnlyTable runs the variant: only the table's pages use the
// IOTLB, so the breakdown has the table alone (every lookup its), and the
// claims are printed with their verdicts.
func TestPaperIOTLBOnlyTable(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "7c", "--reduced", "--iotlb-only", "table", "--out", dir, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"only the table's pages use the IOTLB", "lru's hit rate above random's", "(100 %)", "tolerance"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "queues") {
		t.Errorf("lookups of other kinds with only the table in the IOTLB:\n%s", out)
	}
}
