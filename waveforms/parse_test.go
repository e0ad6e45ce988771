package waveforms

import (
	"strings"
	"testing"
)

const validVCD = `$date Mon Jan  1 00:00:00 2024 $end
$version hand-written $end
$timescale 1ns $end
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
b00000000 "
1$
#10
0!
b1001010 "
r0.25 #
#15
1!
bzzzz0101 "
x$
#20
0!
b10x1 "
r1.5e-3 #
0$
#25
`

func TestParseValid(t *testing.T) {
	f, err := Parse(strings.NewReader(validVCD))
	if err != nil {
		t.Fatal(err)
	}
	if f.Timescale != "1ns" || len(f.Vars) != 4 || f.End != 25 {
		t.Fatalf("timescale %q, %d vars, end %d", f.Timescale, len(f.Vars), f.End)
	}
	got := f.History("top.pcie.tlp_fmt_type")
	want := []string{"xxxxxxxx", "00000000", "01001010", "zzzz0101", "000010x1"}
	if len(got) != len(want) {
		t.Fatalf("history %v", got)
	}
	for i := range want {
		if got[i].V != want[i] {
			t.Errorf("change %d = %q, want %q (left extension)", i, got[i].V, want[i])
		}
	}
	if h := f.History("top.pcie.link_util"); h[2].V != "0.0015" {
		t.Errorf("real history %v", h)
	}
}

// Every fault the lenient viewers let through (and more) is an error that
// names the line.
func TestParseRejectsMalformed(t *testing.T) {
	cases := []struct {
		name, from, to, wantErr string
	}{
		{"undefined id", "x$\n#20", "x%\n#20", `undeclared identifier "%"`},
		{"change before enddefinitions", "$enddefinitions $end", "1!\n$enddefinitions $end", `"1!" before $enddefinitions`},
		{"bad vector char", `b10x1 "`, `b10q1 "`, "want 0, 1, x or z"},
		{"bad scalar char", "0$\n#25", "2$\n#25", `unexpected "2$"`},
		{"vector wider than declared", `b10x1 "`, `b111111111 "`, "9 bits wide"},
		{"bad real", "r0.25 #", "r0.2.5q #", "does not parse"},
		{"time backwards", "#20", "#12", "time 12 does not come after 15"},
		{"non-numeric time", "#20", "#1x5", "bad timestamp"},
		{"missing upscope", "$upscope $end\n$upscope $end", "$upscope $end", "scope(s) still open"},
		{"var without end", "$var wire 1 ! clk $end", "$var wire 1 ! clk", "found $scope before $end"},
		{"no space in vector", `b1001010 "`, `b1001010"`, `undeclared identifier "r0.25"`},
		{"no enddefinitions", "$enddefinitions $end\n", "", "before $enddefinitions"},
		{"extra upscope", "$enddefinitions", "$upscope $end\n$enddefinitions", "$upscope without an open $scope"},
		{"bad timescale", "$timescale 1ns $end", "$timescale 3ns $end", "want 1, 10 or 100"},
		{"unknown var type", "$var wire 1 ! clk $end", "$var bogus 1 ! clk $end", `unknown type "bogus"`},
		{"change before first time", "#0\n$dumpvars", "$dumpvars", "before the first timestamp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(validVCD, tc.from) {
				t.Fatalf("test case does not apply: %q not in the valid file", tc.from)
			}
			bad := strings.Replace(validVCD, tc.from, tc.to, 1)
			_, err := Parse(strings.NewReader(bad))
			if err == nil {
				t.Fatalf("accepted:\n%s", bad)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error %q, want it to contain %q and a line number", err, tc.wantErr)
			}
		})
	}
	if _, err := Parse(strings.NewReader("")); err == nil {
		t.Fatal("empty file accepted")
	}
}

func TestParseErrorLine(t *testing.T) {
	bad := strings.Replace(validVCD, "#15", "#5", 1)
	_, err := Parse(strings.NewReader(bad))
	if err == nil || !strings.HasPrefix(err.Error(), "vcd line 28:") {
		t.Fatalf("error %v, want it at line 28", err)
	}
}

// FuzzParse: the strict reader never panics, and whatever it accepts it
// accepts again after a write-back through the writer.
func FuzzParse(f *testing.F) {
	f.Add(validVCD)
	f.Add("$timescale 1ps $end $scope module a $end $var wire 3 ! b [2:0] $end $upscope $end $enddefinitions $end #0 b1 ! #1 bx !")
	f.Add("$var real 64 ! r $end $enddefinitions $end #0 r1e9 !")
	f.Fuzz(func(t *testing.T, s string) {
		file, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, v := range file.Vars {
			if v.Width < 1 {
				t.Fatalf("accepted a var of width %d", v.Width)
			}
		}
		for code, ch := range file.Changes {
			for i := 1; i < len(ch); i++ {
				if ch[i].T < ch[i-1].T {
					t.Fatalf("changes of %q go back in time", code)
				}
			}
		}
	})
}
