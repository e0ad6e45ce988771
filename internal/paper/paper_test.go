package paper

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/workload"
)

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string // figure names, or the error's text
	}{
		{nil, "6c 6d 7a 7b 7c"},
		{[]string{"all"}, "6c 6d 7a 7b 7c"},
		{[]string{"Fig7c", "6c"}, "7c 6c"},
		{[]string{"9b", "8a", "8b"}, "9b 8a 8b"},
		{nil, "7c 7d 8a 8b 9a 9b"},
		{[]string{"7d", "9a"}, "7d 9a"},
		{[]string{"6b", "fig6A"}, "6b 6a"},
		{[]string{"all"}, "6a 6b 6c 6d 7a 7b 7c 7d 8a 8b 9a 9b"},
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

func row(nodes string, s workload.Scheme, rate float64) sweep.Row {
	return sweep.Row{Point: sweep.Point{nodes}, Result: workload.DHTResult{Scheme: s, InsertsPerSec: rate, Collisions: 0.05}}
}

// The claim checks read the rows they are given: the same claim holds on
// data shaped like the paper's and fails on data that is not.
func TestScaleClaims(t *testing.T) {
	f := scaleFigure("7a", 0.05, nil)
	paperLike := []sweep.Row{
		row("8", workload.AASP, 2.02), row("8", workload.AAPoll, 2.0), row("8", workload.AAInt, 1.0), row("8", workload.AM, 1.0),
		row("8", workload.AMExp, 0.9), row("8", workload.AMOnload, 1.05), row("8", workload.RMA, 0.5), row("8", workload.AMInt, 0.95),
	}
	flat := []sweep.Row{
		row("8", workload.AASP, 1.0), row("8", workload.AAPoll, 0.6), row("8", workload.AAInt, 1.0), row("8", workload.AM, 1.0),
		row("8", workload.AMExp, 0.9), row("8", workload.AMOnload, 1.2), row("8", workload.RMA, 0.5), row("8", workload.AMInt, 0.4),
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

// AM-Onload is compared at its best C, as the paper words it: one C
// that beats AA-SP at one size fails the claim, whichever C the figure's
// other schemes ran with, and the measurement names that C.
func TestScaleClaimOnloadBestC(t *testing.T) {
	f := scaleFigure("7a", 0.05, nil)
	onload := func(c string, rate float64) sweep.Row {
		return sweep.Row{Point: sweep.Point{"8", "{schemes: [AM-Onload], am_onload_cores: " + c + "}"},
			Result: workload.DHTResult{Scheme: workload.AMOnload, InsertsPerSec: rate, Collisions: 0.05}}
	}
	sp := sweep.Row{Point: sweep.Point{"8", "{schemes: [AA-SP], am_onload_cores: 11}"}, Result: workload.DHTResult{Scheme: workload.AASP, InsertsPerSec: 2}}
	for _, tc := range []struct {
		rows  []sweep.Row
		holds bool
		bestC string
	}{
		{[]sweep.Row{sp, onload("11", 1), onload("4", 0.5), onload("24", 1.5)}, true, "C = 24"},
		{[]sweep.Row{sp, onload("11", 1), onload("4", 0.5), onload("24", 2.5)}, false, "C = 24"},
		{[]sweep.Row{sp, onload("8", 2.1), onload("11", 1)}, false, "C = 8"},
	} {
		for _, r := range f.Check(tc.rows) {
			if r.Claim.Text != "AM-Onload, even at its best C, does not beat AA-SP" {
				continue
			}
			if r.Holds != tc.holds || !strings.Contains(r.Measured, tc.bestC) {
				t.Errorf("holds %v (%s), want %v and %s", r.Holds, r.Measured, tc.holds, tc.bestC)
			}
		}
	}
}

// 6d's "C = 11" holds only within the tolerance it states (11 ± 3).
func TestBestCClaim(t *testing.T) {
	fs, err := Lookup([]string{"6d"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		best  string
		holds bool
	}{{"11", true}, {"8", true}, {"16", false}, {"4", false}, {"24", false}} {
		var rows []sweep.Row
		for _, c := range []string{"1", "4", "8", "11", "16", "24", "31"} {
			rate := 1.0
			if c == tc.best {
				rate = 2
			}
			rows = append(rows, sweep.Row{Point: sweep.Point{c}, Result: workload.DHTResult{Scheme: workload.AMOnload, InsertsPerSec: rate}})
		}
		r := fs[0].Check(rows)[0]
		if r.Holds != tc.holds {
			t.Errorf("best C = %s: holds %v (%s; tolerance %s), want %v", tc.best, r.Holds, r.Measured, r.Claim.Tolerance, tc.holds)
		}
	}
}

// Every claim states the tolerance its verdict used.
func TestClaimsStateTolerance(t *testing.T) {
	for _, f := range Figures() {
		for _, c := range f.Claims {
			if c.Tolerance == "" {
				t.Errorf("figure %s: %q states no tolerance", f.Name, c.Text)
			}
		}
		for _, c := range f.PointClaims {
			if c.Tolerance == "" {
				t.Errorf("figure %s: %q states no tolerance", f.Name, c.Text)
			}
		}
	}
}

func pt(n int, cat string, s workload.Scheme, y float64) Point {
	return Point{X: n, Category: cat, Scheme: s, Y: y}
}

// The sort's time claims read the points: shaped like the paper's they
// hold, with AA no better than the others they fail.
func TestSortTimeClaims(t *testing.T) {
	var paperLike, flat []Point
	for _, n := range sortNodes {
		paperLike = append(paperLike, pt(n, "", workload.NoFT, 100), pt(n, "", workload.AAPoll, 100.5), pt(n, "", workload.AM, 200), pt(n, "", workload.RMA, 500))
		flat = append(flat, pt(n, "", workload.NoFT, 100), pt(n, "", workload.AAPoll, 130), pt(n, "", workload.AM, 130), pt(n, "", workload.RMA, 130))
	}
	for i, pts := range [][]Point{paperLike, flat} {
		for _, r := range sortTimeFigure.CheckPoints(pts) {
			if r.Holds != (i == 0) {
				t.Errorf("data set %d, %q: holds %v (%s)", i, r.Claim.Text, r.Holds, r.Measured)
			}
		}
	}
}

// 8b's claim compares the schemes within each topology.
func TestRouterClaim(t *testing.T) {
	var good, bad []Point
	for k, topo := range topologyNames() {
		y := float64(10 + k)
		good = append(good, pt(routerNodes, topo, workload.NoFT, y), pt(routerNodes, topo, workload.AAPoll, y), pt(routerNodes, topo, workload.AM, y*1.1), pt(routerNodes, topo, workload.RMA, y*2))
		am := y * 1.1
		if k == 3 {
			am = y * 0.9 // AM below AA in one topology
		}
		bad = append(bad, pt(routerNodes, topo, workload.NoFT, y), pt(routerNodes, topo, workload.AAPoll, y), pt(routerNodes, topo, workload.AM, am), pt(routerNodes, topo, workload.RMA, y*2))
	}
	if r := routerEnergyFigure.CheckPoints(good)[0]; !r.Holds {
		t.Errorf("paper-like: %s", r.Measured)
	}
	if r := routerEnergyFigure.CheckPoints(bad)[0]; r.Holds {
		t.Errorf("AM below AA in one topology, yet it holds: %s", r.Measured)
	}
}

// A figure with categories writes them as a column and plots X as their
// index; one without keeps the node count.
func TestCustomCategories(t *testing.T) {
	c := &Custom{X: []int{8}, Categories: []string{"A", "B"}, CategoryLabel: "topology", Schemes: []workload.Scheme{workload.NoFT, workload.AAPoll}, YLabel: "router energy", YUnit: "µJ",
		run: func(ctx context.Context, n int, cat string, s workload.Scheme) (float64, error) {
			return float64(n) + float64(len(cat)) + float64(len(s)), nil
		}}
	pts, err := c.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := c.WriteCSV(&b, pts); err != nil {
		t.Fatal(err)
	}
	want := "nodes,topology,scheme,router_energy\n8,A,No-FT,14\n8,A,AA-Poll,16\n8,B,No-FT,14\n8,B,AA-Poll,16\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant\n%s", b.String(), want)
	}
	sr := c.Series(pts)
	if len(sr) != 2 || len(sr[0].X) != 2 || sr[0].X[0] != 0 || sr[0].X[1] != 1 {
		t.Errorf("series %+v", sr)
	}
	if ax := c.Axes("t"); c.Unit() != "µJ" || (&Custom{}).Unit() != "1/s" || (&Custom{}).xName() != "nodes" ||
		ax.XLabel != "topology" || ax.YLabel != "router energy (µJ)" || len(ax.XNames) != 2 {
		t.Errorf("units and labels: %+v", ax)
	}
	if _, _, err := sweep.Draw(sr, c.Axes("t")); err != nil {
		t.Errorf("bars: %v", err)
	}
}

// Figure 7c's claims read the hit rate by (key stream, eviction, ways,
// entries): lru against random at the same associative IOTLB and size only
// (a direct-mapped one has no choice of victim, so a tie there is no
// failure), associativity in the order a1, a2, a4, af (ways 0), and the
// sweep parses into the full grid.
func TestIOTLBClaims(t *testing.T) {
	f := iotlbFigure([]int{16, 64}, 10, "")
	s, err := sweep.Parse("7c", []byte(f.Sweep), ".")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Points()); n != 2*2*4*2 {
		t.Fatalf("7c: %d points", n)
	}
	// hit(keys, ev, ways, entries) builds rows from a rule.
	mk := func(hit func(k, ev, ways, e string) float64) []sweep.Row {
		var rows []sweep.Row
		for _, k := range []string{keysUniform, keysZipf} {
			for _, ev := range []string{"lru", "random"} {
				for _, w := range []string{"1", "2", "4", "0"} {
					for _, e := range []string{"16", "64"} {
						rows = append(rows, sweep.Row{Point: sweep.Point{k, ev, w, e}, Result: workload.DHTResult{IOTLBHitRate: hit(k, ev, w, e), InsertsPerSec: 1e6}})
					}
				}
			}
		}
		return rows
	}
	assoc := map[string]float64{"1": 0, "2": 0.01, "4": 0.02, "0": 0.03}
	good := func(k, ev, w, e string) float64 {
		h := 0.3 + assoc[w]
		if e == "64" {
			h += 0.4
		}
		if ev == "lru" && w != "1" {
			h += 0.05
		}
		return h
	}
	byText := func(text string) Claim {
		for _, c := range f.Claims {
			if strings.HasPrefix(c.Text, text) {
				return c
			}
		}
		t.Fatalf("no claim %q", text)
		return Claim{}
	}
	for _, c := range []struct {
		claim string
		hit   func(k, ev, w, e string) float64
		holds bool
		want  string
	}{
		{"lru's hit rate above random's, every associativity and size (random keys)", good, true, "higher in 6 of 6"},
		{"lru's hit rate above random's, every associativity and size (Zipf", good, true, "higher in 6 of 6"},
		{"lru's hit rate above random's, every associativity and size (Zipf", func(k, ev, w, e string) float64 {
			if k == keysZipf && ev == "random" && w == "0" && e == "16" {
				return 0.9
			}
			return good(k, ev, w, e)
		}, false, "higher in 5 of 6; not at af 16"},
		{"a larger IOTLB helps", good, true, "largest drop 0.0 points"},
		{"a larger IOTLB helps", func(k, ev, w, e string) float64 {
			if e == "64" && w == "2" && ev == "random" {
				return 0.1
			}
			return good(k, ev, w, e)
		}, false, "random_a2 at 64 entries"},
		{"higher associativity helps", good, true, "in 0 of 12 steps"},
		{"higher associativity helps", func(k, ev, w, e string) float64 {
			if w == "0" && ev == "lru" && e == "16" && k == keysUniform {
				return 0.2
			}
			return good(k, ev, w, e)
		}, false, "in 1 of 12 steps"},
	} {
		m, ok := byText(c.claim).Measure(mk(c.hit))
		if ok != c.holds || !strings.Contains(m, c.want) {
			t.Errorf("%s: %q holds %v, want %v and %q", c.claim, m, ok, c.holds, c.want)
		}
	}
	// The rate claim: lru_af over lru_a4 in each key stream.
	rows := mk(good)
	for i := range rows {
		if p := rows[i].Point; p[axEviction] == "lru" && p[axWays] == "0" && p[axEntries] == "16" {
			rows[i].Result.InsertsPerSec = 1.16e6
		}
	}
	if m, ok := byText("lru_af vs lru_a4").Measure(rows); !ok || !strings.Contains(m, "random keys up to +16.0 % (16 entries); Zipf 0.99 up to +16.0 %") {
		t.Errorf("rate claim: %q %v", m, ok)
	}
}

// At scale, exactly the figures whose axis is the machine's size (7a, 7b,
// 7d, 9a) run on the given node counts × 32 processes over srd: the DHT
// figures' sweeps parse with that grid and fit the memory limit at 256
// nodes; the custom figures' X is the node counts, and their claims read
// every size the points have (a claim failing only at the largest size
// fails).
func TestFiguresAtScale(t *testing.T) {
	nodes := ScaleNodes(256)
	if fmt.Sprint(nodes) != "[2 4 8 16 32 64 128 256]" || fmt.Sprint(ScaleNodes(100)) != "[2 4 8 16 32 64]" {
		t.Fatalf("ScaleNodes: %v", nodes)
	}
	var scaled []string
	for _, f := range Figures() {
		if f.AtScale == nil {
			continue
		}
		scaled = append(scaled, f.Name)
		g := f.AtScale(nodes)
		if g.Name != f.Name || !strings.Contains(g.Title, "srd transport") || !strings.Contains(g.Title, "32 processes") {
			t.Errorf("%s at scale: %q", f.Name, g.Title)
		}
		if g.Custom != nil {
			if fmt.Sprint(g.Custom.X) != fmt.Sprint(nodes) {
				t.Errorf("%s at scale: X %v", f.Name, g.Custom.X)
			}
			continue
		}
		s, err := sweep.Parse("figure "+g.Name, []byte(g.Sweep), ".")
		if err != nil {
			t.Fatalf("%s at scale: %v", f.Name, err)
		}
		if got := len(s.Points()); got != len(nodes)*5 {
			t.Errorf("%s at scale: %d points, want %d", f.Name, got, len(nodes)*5)
		}
		if !strings.Contains(g.Sweep, "machine.nodes: [2, 4, 8, 16, 32, 64, 128, 256]") || !strings.Contains(g.Sweep, "machine.transport: [srd]") {
			t.Errorf("%s at scale: sweep\n%s", f.Name, g.Sweep)
		}
	}
	if strings.Join(scaled, " ") != "7a 7b 7d 9a" {
		t.Errorf("figures with a machine-size axis: %v", scaled)
	}
	// 9a's claims at every size of the points, the largest included.
	g := getLogFigure(nodes)
	var pts []Point
	for _, n := range nodes {
		rma := 1.0
		if n == 256 {
			rma = 3 // AA behind RMA at the largest size only
		}
		pts = append(pts, Point{X: n, Scheme: workload.NoFT, Y: 2}, Point{X: n, Scheme: workload.AAPoll, Y: 2}, Point{X: n, Scheme: workload.RMA, Y: rma})
	}
	for _, c := range g.PointClaims {
		m, ok := c.Measure(pts)
		if c.Text == "AA the best of the logging schemes" && (ok || !strings.Contains(m, "256 nodes 0.67×")) {
			t.Errorf("%q: %s, holds %v", c.Text, m, ok)
		}
	}
}

// A paper's name first picks its figures; without one the names are the
// Active Access paper's; a name no paper has is an error naming what there
// is.
func TestSelectPapers(t *testing.T) {
	other := &Paper{Name: "other-test", Title: "a test paper", Figures: func() []*Figure {
		return []*Figure{{Name: "table1"}, {Name: "6c"}}
	}}
	Register(other)
	defer func() { papers = papers[:len(papers)-1] }()
	for _, tc := range []struct {
		args  []string
		paper *Paper
		figs  string
		err   string
	}{
		{nil, AA, "6a 6b 6c 6d 7a 7b 7c 7d 8a 8b 9a 9b", ""},
		{[]string{"6c", "fig9a"}, AA, "6c 9a", ""},
		{[]string{"aa", "7a"}, AA, "7a", ""},
		{[]string{"other-test"}, other, "table1 6c", ""},
		{[]string{"OTHER-TEST", "6c"}, other, "6c", ""},
		{[]string{"other-test", "7a"}, nil, "", `other-test: figure "7a": the paper has no such figure aaemu models (have table1, 6c)`},
		{[]string{"table1"}, nil, "", `figure "table1": the paper has no such figure aaemu models (have 6a, 6b, 6c, 6d, 7a, 7b, 7c, 7d, 8a, 8b, 9a, 9b); other papers: `}, // then every registered one
	} {
		p, figs, err := Select(tc.args)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) || strings.HasSuffix(tc.err, "other papers: ") && !strings.Contains(err.Error(), "other-test") {
				t.Errorf("%v: %v, want %s", tc.args, err, tc.err)
			}
			continue
		}
		var names []string
		for _, f := range figs {
			names = append(names, f.Name)
		}
		if err != nil || p != tc.paper || strings.Join(names, " ") != tc.figs {
			t.Errorf("%v: %v %v %v", tc.args, p.Name, names, err)
		}
	}
}
