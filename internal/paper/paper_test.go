package paper

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/internal/sweep"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string // figure names, or the error's text
	}{
		{nil, "6c 6d 7a 7b 7c"},
		{[]string{"all"}, "6c 6d 7a 7b 7c"},
		{[]string{"Fig7c", "6c"}, "7c 6c"},
		{[]string{"9b"}, "the fault-tolerant sort is not built yet"},
		{[]string{"7d", "9a"}, "7d 9a"},
		{[]string{"6b", "fig6A"}, "6b 6a"},
		{[]string{"all"}, "6a 6b 6c 6d 7a 7b 7c 7d 9a"},
		{[]string{"12"}, `figure "12": the paper has no such figure`},
	} {
		figs, err := Lookup(tc.names)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			var ns []string
			for _, f := range figs {
				ns = append(ns, f.Name)
			}
			got = strings.Join(ns, " ")
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("Lookup(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

// Every figure's sweep is a valid sweep file.
func TestFiguresParse(t *testing.T) {
	for _, f := range Figures() {
		if f.Custom != nil {
			continue
		}
		if _, err := sweep.Parse("figure "+f.Name, []byte(f.Sweep), "."); err != nil {
			t.Errorf("figure %s: %v", f.Name, err)
		}
	}
}

func row(nodes string, s aa.Scheme, rate float64) sweep.Row {
	return sweep.Row{Point: sweep.Point{nodes}, Result: aa.DHTResult{Scheme: s, InsertsPerSec: rate, Collisions: 0.05}}
}

// The claim checks read the rows they are given: the same claim holds on
// data shaped like the paper's and fails on data that is not.
func TestScaleClaims(t *testing.T) {
	f := scaleFigure("7a", 0.05)
	paperLike := []sweep.Row{
		row("8", aa.AASP, 2.02), row("8", aa.AAPoll, 2.0), row("8", aa.AAInt, 1.0), row("8", aa.AM, 1.0),
		row("8", aa.AMExp, 0.9), row("8", aa.AMOnload, 1.05), row("8", aa.RMA, 0.5), row("8", aa.AMInt, 0.95),
	}
	flat := []sweep.Row{
		row("8", aa.AASP, 1.0), row("8", aa.AAPoll, 0.6), row("8", aa.AAInt, 1.0), row("8", aa.AM, 1.0),
		row("8", aa.AMExp, 0.9), row("8", aa.AMOnload, 1.2), row("8", aa.RMA, 0.5), row("8", aa.AMInt, 0.4),
	}
	want := map[string][2]bool{ // claim → holds on paperLike, on flat
		"AA-SP and AA-Poll vs the best other scheme, largest machine":     {true, false},
		"AA-SP vs the best active-message or RMA scheme, largest machine": {true, false},
		"AM-Onload, even at its best C, does not beat AA-SP":              {true, false},
		"AA-Int ≈ AM-Int":  {true, false},
		"AA-SP vs AA-Poll": {true, false},
	}
	for i, rows := range [][]sweep.Row{paperLike, flat} {
		for _, r := range f.Check(rows) {
			w, ok := want[r.Claim.Text]
			if !ok {
				t.Fatalf("unexpected claim %q", r.Claim.Text)
			}
			if r.Holds != w[i] {
				t.Errorf("data set %d, %q: holds %v (%s), want %v", i, r.Claim.Text, r.Holds, r.Measured, w[i])
			}
		}
	}
}
