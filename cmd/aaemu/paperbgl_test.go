package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/bglpaper"
)

// TestPaperBGL runs `aaemu paper bgl table1 4b --reduced`: Table 1 and the
// link bandwidth figure of the Blue Gene/L paper, with their claims and
// verdicts, into OUT/bgl/, and finds the paper in `aaemu paper --list`.
func TestPaperBGL(t *testing.T) {
	out, err := aaemu(t, "paper", "--list")
	if err != nil || !strings.Contains(out, "bgl") || !strings.Contains(out, "table1 4a 4b") {
		t.Fatalf("paper --list: %v\n%s", err, out)
	}
	dir := t.TempDir()
	out, err = aaemu(t, "paper", "bgl", "table1", "4b", "--reduced", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure table1", "B1 message-layer, one-packet", "B2 mpi: order of the protocols", "B3 MPI's overhead",
		"Figure 4b", "plateau", "≤ 310 MB/s", "half bandwidth at", "aaemu's per-message software"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"fig4b/points.csv", "fig4b/fig4b.png", "fig4b/fig4b.svg", "figtable1/points.csv", "figtable1/figtable1.png", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, "bgl", f)); err != nil || st.Size() == 0 {
			t.Errorf("bgl/%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "bgl", "fig4b", "points.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+2*len(bglpaper.ReducedBandwidth().Sizes) {
		t.Errorf("points.csv has %d lines:\n%s", lines, csv)
	}
}

// TestPaperBGLAlltoall runs `aaemu paper bgl 6 --reduced`: Figure 6's
// efficiencies, B14's verdicts and the two link heat maps.
func TestPaperBGLAlltoall(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "bgl", "6", "--reduced", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure 6", "B14 optimised alltoall efficiency", "B14 MPICH2 alltoall efficiency", "heat-optimised.png"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"points.csv", "fig6.png", "fig6.svg", "heat-optimised.png", "heat-optimised.svg", "heat-mpich2.png", "heat-mpich2.svg"} {
		if st, err := os.Stat(filepath.Join(dir, "bgl", "fig6", f)); err != nil || st.Size() == 0 {
			t.Errorf("bgl/fig6/%s: %v", f, err)
		}
	}
}

// TestPaperBGLAlltoallRuns runs `aaemu paper bgl 6 --reduced --runs X`
// with X each series: the figure exits 0, draws the heat map of the series
// it ran, says which it did not draw, and leaves its claims unjudged.
func TestPaperBGLAlltoallRuns(t *testing.T) {
	for _, tc := range []struct {
		runs, drawn, notDrawn string
	}{
		{"optimised", "heat-optimised", "heat-mpich2"},
		{"MPICH2", "heat-mpich2", "heat-optimised"},
	} {
		t.Run(tc.runs, func(t *testing.T) {
			dir := t.TempDir()
			out, err := aaemu(t, "paper", "bgl", "6", "--reduced", "--runs", tc.runs, "--out", dir)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, want := range []string{"not drawn: " + tc.notDrawn + ".png, " + tc.notDrawn + ".svg: --runs left out", "claims not checked: 2 of its 4"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "B14") {
				t.Errorf("claims judged on half the points:\n%s", out)
			}
			fig := filepath.Join(dir, "bgl", "fig6")
			for _, f := range []string{"points.csv", "fig6.png", tc.drawn + ".png", tc.drawn + ".svg"} {
				if st, err := os.Stat(filepath.Join(fig, f)); err != nil || st.Size() == 0 {
					t.Errorf("bgl/fig6/%s: %v", f, err)
				}
			}
			for _, f := range []string{tc.notDrawn + ".png", tc.notDrawn + ".svg"} {
				if _, err := os.Stat(filepath.Join(fig, f)); err == nil {
					t.Errorf("bgl/fig6/%s drawn without its run", f)
				}
			}
			csv, _ := os.ReadFile(filepath.Join(fig, "points.csv"))
			if lines := strings.Count(string(csv), "\n"); lines != 1+len(bglpaper.ReducedAlltoall().Sizes) {
				t.Errorf("points.csv has %d lines:\n%s", lines, csv)
			}
		})
	}
}

// TestPaperBGLNetwork runs `aaemu paper bgl link tree --reduced`: B5 and
// B6 (the link's and the node's payload rates) and B16 (the collective
// and barrier networks' latency, scaled to 65,536 nodes), all agreeing.
func TestPaperBGLNetwork(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "bgl", "link", "tree", "--reduced", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure link", "B5 link payload bandwidth", "B5 link efficiency", "B6 node payload bandwidth",
		"Figure tree", "B16 collective network latency", "B16 barrier latency", "at 65,536 nodes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, " NO ") {
		t.Errorf("a claim does not hold:\n%s", out)
	}
	for _, f := range []string{"figlink/points.csv", "figtree/points.csv", "figtree/figtree.png"} {
		if st, err := os.Stat(filepath.Join(dir, "bgl", f)); err != nil || st.Size() == 0 {
			t.Errorf("bgl/%s: %v", f, err)
		}
	}
}

// TestPaperBGLCosts runs `aaemu paper bgl table1 4a --reduced --costs
// table1`: Table 1's numbers and 4a's intercept are the calibration's
// inputs and printed "calibrated", 4a's slope still a check; the
// scenario's bglml.costs does the same, and a bad profile, or the flag on
// another paper, is refused.
func TestPaperBGLCosts(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "bgl", "table1", "4a", "--reduced", "--costs", "table1", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "B1" || f[0] == "B2" || f[0] == "B3" || strings.Contains(line, "B4 half round trip at one hop"):
			if f[len(f)-1] != "calibrated" {
				t.Errorf("an input printed as a check: %s", line)
			}
		case strings.Contains(line, "B4 slope"):
			if v := f[len(f)-1]; v != "yes" && v != "NO" {
				t.Errorf("4a's slope: %s", line)
			}
		}
	}
	if !strings.Contains(out, "costs: table1") {
		t.Errorf("the titles do not name the profile:\n%s", out)
	}
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte("bglml:\n  costs: table1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = aaemu(t, "paper", "bgl", "table1", "--reduced", "--scenario", scen, "--out", dir)
	if err != nil || !strings.Contains(out, "calibrated") {
		t.Errorf("bglml.costs: table1 in the scenario: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"paper", "bgl", "table1", "--reduced", "--costs", "fitted"}, `--costs "fitted": want estimated or table1`},
		{[]string{"paper", "am2", "--reduced", "--costs", "table1"}, "applies to the Blue Gene/L paper"},
	} {
		if out, err := aaemu(t, append(c.args, "--out", dir)...); err == nil || !strings.Contains(out+err.Error(), c.want) {
			t.Errorf("%v: %v, want %q\n%s", c.args, err, c.want, out)
		}
	}
}

// TestPaperBGLProgress runs `aaemu paper bgl table1 --reduced` polling
// and with --progress thread and interrupts: the message layer's own
// column is the same, MPI's differs in each mode (the flag is followed),
// and a mode that does not exist, or the flag on another paper, is
// refused.
func TestPaperBGLProgress(t *testing.T) {
	csv := map[string][]string{}
	for _, g := range []string{"polling", "thread", "interrupts"} {
		dir := t.TempDir()
		out, err := aaemu(t, "paper", "bgl", "table1", "--reduced", "--progress", g, "-j", "1", "--out", dir)
		if err != nil {
			t.Fatalf("--progress %s: %v\n%s", g, err, out)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "bgl", "figtable1", "points.csv"))
		csv[g] = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	for _, g := range []string{"thread", "interrupts"} {
		if len(csv[g]) != len(csv["polling"]) {
			t.Fatalf("%s: %d lines, polling %d", g, len(csv[g]), len(csv["polling"]))
		}
		same := 0
		for i, line := range csv[g] {
			mpi := strings.Contains(line, "mpi")
			if (line == csv["polling"][i]) == mpi {
				t.Errorf("%s: %q, polling %q", g, line, csv["polling"][i])
			}
			if line == csv["polling"][i] {
				same++
			}
		}
		if same == 0 {
			t.Errorf("%s: no message-layer line", g)
		}
	}
	for _, c := range [][]string{{"paper", "bgl", "table1", "--progress", "fast"}, {"paper", "6c", "--progress", "thread"}} {
		if out, err := aaemu(t, c...); err == nil || !strings.Contains(out+err.Error(), "--progress") {
			t.Errorf("%v: %v\n%s", c, err, out)
		}
	}
}

// TestPaperBGLCostsProgress runs `aaemu paper bgl table1 4a --reduced
// --costs table1 --progress thread`: the calibration measured MPI
// polling, so MPI's Table 1 claims and 4a's intercept are predictions
// (yes or NO), the message layer's still inputs; the flags together
// work, whatever their order relative to the figures' construction, and
// the titles name both.
func TestPaperBGLCostsProgress(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "bgl", "table1", "4a", "--reduced", "--costs", "table1", "--progress", "thread", "-j", "1", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		v := f[len(f)-1]
		switch {
		case f[0] == "B1":
			seen++
			if v != "calibrated" {
				t.Errorf("the message layer's input printed as a check: %s", line)
			}
		case f[0] == "B2" || f[0] == "B3" || strings.Contains(line, "B4 half round trip at one hop"):
			seen++
			if v != "yes" && v != "NO" {
				t.Errorf("MPI under the thread printed as the calibration's input: %s", line)
			}
		}
	}
	if seen != 13 {
		t.Errorf("%d of Table 1's and 4a's intercept's 13 claims\n%s", seen, out)
	}
	if strings.Count(out, "costs: table1; MPI's layer: thread") != 2 {
		t.Errorf("the titles do not name the profile and the progress:\n%s", out)
	}
}
