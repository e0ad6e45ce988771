package waveforms

import (
	"bytes"
	"strings"
	"testing"
)

// smallDesign writes a two-scope design with a clock, a vector that starts
// undefined, a tri-stated bit, and a real.
func smallDesign(t *testing.T, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b, opts)
	clk, _ := w.Declare("top.clk", 1)
	bus, _ := w.Declare("top.pcie.tlp_fmt_type", 8)
	util, _ := w.DeclareReal("top.pcie.link_util")
	valid, _ := w.Declare("top.pcie.valid", 1)
	w.SetXZ(0, bus, false)
	w.Set(0, clk, 0)
	w.SetReal(0, util, 0)
	w.SetXZ(0, valid, true)
	w.Set(5, clk, 1)
	w.Set(5, bus, 0)
	w.Set(5, valid, 1)
	w.Set(10, clk, 0)
	w.Set(10, bus, 0x4a)
	w.SetReal(10, util, 0.25)
	w.Set(15, clk, 1)
	w.Set(15, bus, 0x4a) // unchanged: not written
	w.Set(20, clk, 0)
	w.Set(20, bus, 0x7)
	w.Set(20, bus, 0x60) // last value of a time step wins
	w.SetReal(20, util, 1.5e-3)
	w.Set(20, valid, 0)
	if err := w.Close(25); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestVCDExactText(t *testing.T) {
	got := smallDesign(t, Options{Version: "aaemu test", Comment: "seed 1"})
	want := `$version
	aaemu test
$end
$comment
	seed 1
$end
$timescale 1ps $end
$scope module top $end
$var wire 1 ! clk $end
$scope module pcie $end
$var wire 8 " tlp_fmt_type [7:0] $end
$var real 64 # link_util $end
$var wire 1 $ valid $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
0!
bxxxxxxxx "
r0 #
z$
$end
#5
1!
b0 "
1$
#10
0!
b1001010 "
r0.25 #
#15
1!
#20
0!
b1100000 "
r0.0015 #
0$
#25
`
	if got != want {
		t.Fatalf("VCD text differs.\n--- got\n%s\n--- want\n%s", got, want)
	}
	f, err := Parse(strings.NewReader(got))
	if err != nil {
		t.Fatalf("our own strict reader rejects our output: %v", err)
	}
	if h := f.History("top.pcie.tlp_fmt_type"); len(h) != 4 || h[0].V != "xxxxxxxx" || h[2].V != "01001010" || h[3].T != 20 {
		t.Fatalf("history %v", h)
	}
}

func TestVCDFilterAndWindow(t *testing.T) {
	cases := []struct {
		name     string
		include  string
		exclude  string
		from, to uint64
		want     []string // substrings that must appear
		wantNot  []string
	}{
		{"scope selects its block", "top.pcie", "", 0, 0, []string{"tlp_fmt_type", "valid"}, []string{" clk "}},
		{"star within a level", "top.c*", "", 0, 0, []string{" clk "}, []string{"tlp_fmt_type"}},
		{"double star", "**.valid", "", 0, 0, []string{"valid"}, []string{"clk", "tlp_fmt_type"}},
		{"exclude", "", "top.pcie.link_util", 0, 0, []string{"clk", "valid"}, []string{"link_util"}},
		{"window starts between steps", "", "", 12, 0, []string{"#12\n$dumpvars\n0!\nb1001010 "}, []string{"#5\n", "#10\n"}},
		{"window ends", "", "", 0, 12, []string{"#10\n", "#12\n"}, []string{"#15\n", "#20\n", "#25\n"}},
		{"window on a step", "", "", 10, 15, []string{"#10\n$dumpvars\n0!\nb1001010 ", "#15\n1!\n"}, []string{"#20\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFilter(tc.include, tc.exclude, false)
			if err != nil {
				t.Fatal(err)
			}
			got := smallDesign(t, Options{Filter: f, From: tc.from, To: tc.to})
			for _, s := range tc.want {
				if !strings.Contains(got, s) {
					t.Errorf("missing %q in\n%s", s, got)
				}
			}
			for _, s := range tc.wantNot {
				if strings.Contains(got, s) {
					t.Errorf("unexpected %q in\n%s", s, got)
				}
			}
			if _, err := Parse(strings.NewReader(got)); err != nil {
				t.Fatalf("strict reader: %v\n%s", err, got)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		pat, path string
		want      bool
	}{
		{"top.clk", "top.clk", true},
		{"top.*", "top.clk", true},
		{"top.*", "top.pcie.valid", true}, // selects the scope top.pcie
		{"*.valid", "top.pcie.valid", false},
		{"**.valid", "top.pcie.valid", true},
		{"top.p?ie", "top.pcie.valid", true},
		{"top.iommu", "top.iommu_x.valid", false},
		{"cluster.node*.iommu", "cluster.node12.iommu.iotlb.hit", true},
	}
	for _, tc := range cases {
		if got := matchPrefix(tc.pat, tc.path); got != tc.want {
			t.Errorf("%q ~ %q = %v, want %v", tc.pat, tc.path, got, tc.want)
		}
	}
	f, _ := NewFilter("", "", false)
	if f.Match("top._internal.x") || !f.Match("top.x") {
		t.Error("underscore signals must be hidden by default")
	}
	if _, err := NewFilter("top..x", "", false); err == nil {
		t.Error("bad pattern accepted")
	}
}

func TestIDCodes(t *testing.T) {
	for n, want := range map[int]string{0: "!", 93: "~", 94: "!\"", 95: "\"\"", 94*94 + 1: "\"!\""} {
		if got := idCode(n); got != want {
			t.Errorf("idCode(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWriterErrors(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, Options{})
	a, _ := w.Declare("top.a", 1)
	w.Set(10, a, 1)
	w.Set(5, a, 0)
	if err := w.Close(20); err == nil || !strings.Contains(err.Error(), "backwards") {
		t.Fatalf("time going backwards: err = %v", err)
	}
	w = NewWriter(&b, Options{})
	w.Declare("top.a", 65)
	if err := w.Close(0); err == nil {
		t.Fatal("65-bit signal accepted")
	}
	w = NewWriter(&b, Options{})
	a, _ = w.Declare("top.a", 1)
	w.Set(0, a, 1)
	w.Declare("top.b", 1)
	if err := w.Close(0); err == nil {
		t.Fatal("declaration after the header accepted")
	}
}
