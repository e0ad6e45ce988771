package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPaperBGLVirtualNode runs `aaemu paper bgl 5a --reduced`: Figure 5a's
// stand-in, coprocessor against virtual node mode and interrupts, with
// B15's claims and L94's, its CSV and plots.
func TestPaperBGLVirtualNode(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "bgl", "5a", "--reduced", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure 5a", "B15 per-task slowdown in virtual node mode", "B15 total throughput", "L94 interrupts", "BT-like", "MG-like"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"points.csv", "fig5a.png", "fig5a.svg"} {
		if st, err := os.Stat(filepath.Join(dir, "bgl", "fig5a", f)); err != nil || st.Size() == 0 {
			t.Errorf("bgl/fig5a/%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "bgl", "fig5a", "points.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+6 || !strings.Contains(string(csv), "virtual node (two tasks a node)") || !strings.Contains(string(csv), "interrupts (a task a node, heater)") {
		t.Errorf("points.csv:\n%s", csv)
	}
}

// TestPaperBGLOverlap runs `aaemu paper bgl overlap --reduced`: the
// compute-and-communicate figure under polling, the communication thread
// and interrupts, with its claims, CSV and plots.
func TestPaperBGLOverlap(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "bgl", "overlap", "--reduced", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure overlap", "communication thread hides a 16384 B exchange", "interrupt-driven reception hides", "the thread's hand-offs cost", "interrupts cost eager messages"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " NO ") {
		t.Errorf("a claim disagrees:\n%s", out)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "bgl", "figoverlap", "points.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+3*6 || !strings.Contains(string(csv), `"thread, 16384 B"`) || !strings.Contains(string(csv), `"interrupts, 1024 B"`) {
		t.Errorf("points.csv:\n%s", csv)
	}
}
