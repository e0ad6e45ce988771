package waveforms

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// viewDesign traces signals that change, one that keeps its first value,
// one that stays undefined, an enumerated vector and three bits an enum
// joins, from 0 to 25 (ps).
func viewDesign(t *testing.T, opts Options) *Writer {
	t.Helper()
	w := NewWriter(&bytes.Buffer{}, opts)
	clk, _ := w.Declare("top.clk", 1)
	kind, _ := w.Declare("top.pcie.kind", 5)
	valid, _ := w.Declare("top.pcie.valid", 1)
	util, _ := w.DeclareReal("top.pcie.link_util")
	idle, _ := w.Declare("top.pcie.idle", 1)
	w.Declare("top.log1.head", 64) // never set: x throughout
	perf, _ := w.Declare("top.iommu.performed", 1)
	logged, _ := w.Declare("top.iommu.logged", 1)
	fault, _ := w.Declare("top.iommu.fault", 1)
	tx, _ := w.Declare("top.nic[1].tx", 1)
	for _, id := range []int{clk, valid, idle, tx} {
		w.Set(0, id, 0)
	}
	w.SetXZ(0, kind, false)
	w.SetReal(0, util, 0)
	w.Set(5, clk, 1)
	w.Set(5, kind, 2)
	w.Set(5, valid, 1)
	w.Set(5, perf, 1)
	w.Set(5, logged, 0)
	w.Set(5, fault, 0)
	w.Set(10, clk, 0)
	w.Set(10, kind, 12)
	w.SetReal(10, util, 0.5)
	w.Set(10, idle, 0) // unchanged: not a change
	w.Set(15, tx, 1)
	w.Set(20, kind, 0)
	if err := w.Close(25); err != nil {
		t.Fatal(err)
	}
	return w
}

var testEnums = []Enum{
	{Name: "kind", Signals: []string{"**.pcie.kind"}, Values: map[uint64]string{0: "MRd", 2: "MWr", 12: "CplD"}},
	{Name: "unused", Signals: []string{"**.nothing"}, Values: map[uint64]string{0: "zero"}},
	{Name: "decision", Signals: []string{"**.iommu"}, Bits: []string{"fault", "logged", "performed"},
		Values: map[uint64]string{0: "blocked", 1: "pass", 3: "pass+record"}},
}

func TestWriterCountsChangesAndWindow(t *testing.T) {
	w := viewDesign(t, Options{})
	got := map[string]uint64{}
	for _, s := range w.Signals() {
		got[s.Path] = s.Changes
	}
	want := map[string]uint64{"top.clk": 2, "top.pcie.kind": 3, "top.pcie.valid": 1, "top.pcie.link_util": 1,
		"top.pcie.idle": 0, "top.log1.head": 0, "top.iommu.performed": 1, "top.iommu.logged": 1,
		"top.iommu.fault": 1, "top.nic[1].tx": 1}
	for p, n := range want {
		if got[p] != n {
			t.Errorf("%s: %d changes, want %d", p, got[p], n)
		}
	}
	if from, to := w.Window(); from != 0 || to != 25 {
		t.Errorf("window %d..%d, want 0..25", from, to)
	}
	// A window that opens between two steps and closes before the end.
	w = viewDesign(t, Options{From: 7, To: 22})
	if from, to := w.Window(); from != 7 || to != 22 {
		t.Errorf("window %d..%d, want 7..22", from, to)
	}
	for _, s := range w.Signals() {
		if s.Path == "top.clk" && s.Changes != 1 || s.Path == "top.iommu.performed" && s.Changes != 0 {
			t.Errorf("%s: %d changes in 7..22", s.Path, s.Changes)
		}
	}
	if from, to := NewWriter(&bytes.Buffer{}, Options{}).Window(); from != 0 || to != 0 {
		t.Errorf("an empty writer's window is %d..%d", from, to)
	}
}

func TestGTKWGroupsByBlock(t *testing.T) {
	w := viewDesign(t, Options{})
	from, to := w.Window()
	var b bytes.Buffer
	sf := SaveFile{DumpFile: "run.vcd", SaveName: "run.gtkw", Signals: w.Signals(), From: from, To: to, Enums: testEnums}
	if _, err := sf.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	// 580 pixels of waves show 25 ps: 2^-z ps per 200 pixels.
	want := `[*] GTKWave save file written by aaemu
[dumpfile] "run.vcd"
[savefile] "run.gtkw"
[timestart] 0
[size] 1200 700
[pos] -1 -1
*-3.107804 -1
[treeopen] top.
[treeopen] top.pcie.
[treeopen] top.log1.
[treeopen] top.iommu.
[treeopen] top.nic_1.
[signals_width] 260
[sst_expanded] 1
[sst_width] 240
@800200
-top
@28
top.clk
@1000200
-top
@800200
-top.pcie
@2024
^1 run.kind.txt
top.pcie.kind[4:0]
@28
top.pcie.valid
@8420
top.pcie.link_util
@1000200
-top.pcie
@800200
-top.iommu
@2024
^2 run.decision.txt
#{top.iommu.decision} top.iommu.fault top.iommu.logged top.iommu.performed
@28
top.iommu.performed
top.iommu.logged
top.iommu.fault
@1000200
-top.iommu
@800200
-top.nic_1
@28
top.nic_1.tx
@1000200
-top.nic_1
@c00200
-unchanged in this window (2)
-top.pcie
@28
top.pcie.idle
@1401200
-top.pcie
@c00200
-top.log1
@22
top.log1.head[63:0]
@1401200
-top.log1
-unchanged in this window (2)
`
	if b.String() != want {
		t.Fatalf("gtkw differs:\n%s", b.String())
	}
}

// The zoom fits the window into the wave area, rounded towards more time.
func TestGTKWZoomFits(t *testing.T) {
	for _, span := range []uint64{1, 25, 999, 40_000_000, 10_000_000_000_000} {
		for _, px := range []int{1, 300, 580, 1920} {
			z := gtkwZoom(span, px)
			shown := float64(px) * math.Pow(2, -z) / gtkwFramePixels
			if shown < float64(span) || shown > float64(span)*1.0001 {
				t.Errorf("zoom %f shows %g of a %d-unit window in %d pixels", z, shown, span, px)
			}
		}
	}
}

// Write puts the translate file of every enum in use next to the save
// file, one "value name" line per value in decimal.
func TestSaveFileWritesTranslateFiles(t *testing.T) {
	dir := t.TempDir()
	w := viewDesign(t, Options{})
	sf := SaveFile{DumpFile: "trace.vcd", Signals: w.Signals(), Enums: testEnums}
	if err := sf.Write(filepath.Join(dir, "view.gtkw")); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	if strings.Join(names, " ") != "view.decision.txt view.gtkw view.kind.txt" {
		t.Fatalf("files %v", names)
	}
	kind, _ := os.ReadFile(filepath.Join(dir, "view.kind.txt"))
	if string(kind) != "# kind: GTKWave translate filter file written by aaemu\n0 MRd\n2 MWr\n12 CplD\n" {
		t.Fatalf("view.kind.txt:\n%s", kind)
	}
	gtkw, _ := os.ReadFile(filepath.Join(dir, "view.gtkw"))
	if !bytes.Contains(gtkw, []byte("[savefile] \"view.gtkw\"\n")) || !bytes.Contains(gtkw, []byte("^1 view.kind.txt\n")) {
		t.Fatalf("view.gtkw:\n%s", gtkw)
	}
	if bytes.Contains(gtkw, []byte("\n*")) {
		t.Fatalf("a zoom without a window:\n%s", gtkw)
	}
}
