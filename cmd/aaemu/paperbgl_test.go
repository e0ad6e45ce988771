package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/bglpaper"
)

// TestPaperBGL runs `aaemu paper bgl 4b`: the Blue Gene/L paper's link
// bandwidth figure with its claims and verdicts, into OUT/bgl/, and finds
// the paper in `aaemu paper --list`.
func TestPaperBGL(t *testing.T) {
	out, err := aaemu(t, "paper", "--list")
	if err != nil || !strings.Contains(out, "bgl") || !strings.Contains(out, "4a 4b") {
		t.Fatalf("paper --list: %v\n%s", err, out)
	}
	dir := t.TempDir()
	out, err = aaemu(t, "paper", "bgl", "4b", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure 4b", "plateau", "≤ 310 MB/s", "half bandwidth at", "not modelled yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"fig4b/points.csv", "fig4b/fig4b.png", "fig4b/fig4b.svg", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, "bgl", f)); err != nil || st.Size() == 0 {
			t.Errorf("bgl/%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "bgl", "fig4b", "points.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+len(bglpaper.DefaultBandwidth().Sizes) {
		t.Errorf("points.csv has %d lines:\n%s", lines, csv)
	}
}
