package sweep

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// Two series coincide when they have the same points, in any order, each
// Y within the tolerance of the larger.
func TestCoincide(t *testing.T) {
	a := Series{Name: "a", X: []float64{1, 2, 3}, Y: []float64{10, 20, 30}}
	scaled := func(f ...float64) Series {
		s := Series{X: slices.Clone(a.X), Y: slices.Clone(a.Y)}
		for i := range f {
			s.Y[i] *= f[i]
		}
		return s
	}
	for _, c := range []struct {
		name string
		b    Series
		want bool
	}{
		{"equal", scaled(), true},
		{"within the tolerance", scaled(1+5e-4, 1-9e-4, 1), true},
		{"one point beyond it", scaled(1, 1, 1+2e-3), false},
		{"shorter", Series{X: []float64{1, 2}, Y: []float64{10, 20}}, false},
		{"other X", Series{X: []float64{1, 2, 4}, Y: []float64{10, 20, 30}}, false},
		{"X within the tolerance", Series{X: []float64{1, 2, 3.0001}, Y: []float64{10, 20, 30}}, true},
		{"in another order", Series{X: []float64{3, 1, 2}, Y: []float64{30, 10, 20}}, true},
		{"Ys swapped", Series{X: []float64{1, 2, 3}, Y: []float64{20, 10, 30}}, false},
		{"empty", Series{}, false},
	} {
		if got := coincide(a, c.b, coincideTol); got != c.want {
			t.Errorf("%s: coincide = %v, want %v", c.name, got, c.want)
		}
		if got := coincide(c.b, a, coincideTol); got != c.want {
			t.Errorf("%s, the other way: coincide = %v, want %v", c.name, got, c.want)
		}
	}
	zero := Series{X: []float64{1, 2}, Y: []float64{0, 0}}
	if !coincide(zero, zero, coincideTol) || coincide(zero, Series{X: []float64{1, 2}, Y: []float64{0, 1e-12}}, coincideTol) {
		t.Error("zeros: equal to zeros only")
	}
	neg := Series{X: []float64{1}, Y: []float64{-100}}
	if !coincide(neg, Series{X: []float64{1}, Y: []float64{-100.05}}, coincideTol) || coincide(neg, Series{X: []float64{1}, Y: []float64{100}}, coincideTol) {
		t.Error("negative values")
	}
	if coincide(Series{}, Series{}, coincideTol) {
		t.Error("two empty series coincide")
	}
}

// The legend names each series that coincides with an earlier one after
// the first such.
func TestLegendNames(t *testing.T) {
	mk := func(name string, ys ...float64) Series {
		return Series{Name: name, X: []float64{1, 2}, Y: ys}
	}
	for _, c := range []struct {
		series []Series
		want   []string
	}{
		{[]Series{mk("no-iommu", 5, 6), mk("e-iommu", 5, 6.001)}, []string{"no-iommu", "e-iommu (= no-iommu)"}},
		{[]Series{mk("A", 1, 2), mk("B", 3, 4), mk("C", 1, 2), mk("D", 3, 4.0001), mk("E", 1.0001, 2)},
			[]string{"A", "B", "C (= A)", "D (= B)", "E (= A)"}},
		{[]Series{mk("A", 1, 2), mk("B", 1, 2.1)}, []string{"A", "B"}},
		{nil, []string{}},
	} {
		if got := legendNames(c.series); !slices.Equal(got, c.want) {
			t.Errorf("legendNames = %q, want %q", got, c.want)
		}
	}
}

// Series look different from each other: the first six in colour, marker
// and dash pattern all three, the first 48 in at least one.
func TestStylesDistinct(t *testing.T) {
	id := func(i int) [3]int {
		s := styleOf(i)
		return [3]int{
			slices.IndexFunc(palette, func(c color.Color) bool { return c == s.colour }),
			slices.IndexFunc(markers, func(m marker) bool { return reflect.DeepEqual(m, s.marker) }),
			slices.IndexFunc(dashes, func(d []vg.Length) bool { return slices.Equal(d, s.dashes) }),
		}
	}
	seen := map[[3]int]int{}
	for i := range 48 {
		k := id(i)
		if j, ok := seen[k]; ok {
			t.Errorf("series %d and %d look alike: %v", j, i, k)
		}
		seen[k] = i
		for j := range min(i, 6) {
			if i < 6 {
				o := id(j)
				if o[0] == k[0] || o[1] == k[1] || o[2] == k[2] {
					t.Errorf("series %d and %d share a colour, marker or dash pattern: %v %v", j, i, o, k)
				}
			}
		}
	}
}

// svgPath is one <path> of an SVG: its vertices, commands and style.
type svgPath struct {
	cmds  string // the commands' letters: "MLLLZ", "MAAZ"
	pts   [][2]float64
	style map[string]string
}

func (p svgPath) colour() string {
	if c := p.style["stroke"]; c != "" && c != "none" {
		return c
	}
	return p.style["fill"]
}

// box is the path's bounding box's size and centre.
func (p svgPath) box() (w, h, cx, cy float64) {
	x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, q := range p.pts {
		x0, y0, x1, y1 = min(x0, q[0]), min(y0, q[1]), max(x1, q[0]), max(y1, q[1])
	}
	return x1 - x0, y1 - y0, (x0 + x1) / 2, (y0 + y1) / 2
}

// parseSVG reads an SVG's paths and texts.
func parseSVG(t *testing.T, data []byte) (paths []svgPath, texts []string) {
	t.Helper()
	num := regexp.MustCompile(`[A-Za-z]|-?[0-9.]+(?:e-?[0-9]+)?`)
	dec := xml.NewDecoder(bytes.NewReader(data))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			switch e.Name.Local {
			case "text":
				inText = true
				texts = append(texts, "")
			case "path":
				p := svgPath{style: map[string]string{}}
				for _, a := range e.Attr {
					switch a.Name.Local {
					case "style":
						for _, kv := range strings.Split(a.Value, ";") {
							if k, v, ok := strings.Cut(kv, ":"); ok {
								p.style[strings.TrimSpace(k)] = strings.TrimSpace(v)
							}
						}
					case "d":
						var xs []float64
						flush := func() { // an arc's last two numbers are its end
							if len(xs) >= 2 {
								p.pts = append(p.pts, [2]float64{xs[len(xs)-2], xs[len(xs)-1]})
							}
							xs = nil
						}
						for _, tk := range num.FindAllString(a.Value, -1) {
							if c := tk[0]; c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
								flush()
								p.cmds += tk
								continue
							}
							v, err := strconv.ParseFloat(tk, 64)
							if err != nil {
								t.Fatalf("path %q: %v", a.Value, err)
							}
							xs = append(xs, v)
						}
						flush()
					}
				}
				paths = append(paths, p)
			}
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(e)
			}
		case xml.EndElement:
			if e.Name.Local == "text" {
				inText = false
			}
		}
	}
	return paths, texts
}

// drawn is how the SVG draws one colour's series: its line (the path
// through n points), and its markers (small paths) as signatures and
// centres.
type drawn struct {
	lines   []svgPath
	markers map[string]int // signature → paths
	centres [][2]float64
}

func seriesIn(paths []svgPath, colour string, n int) drawn {
	d := drawn{markers: map[string]int{}}
	for _, p := range paths {
		if !strings.EqualFold(p.colour(), colour) {
			continue
		}
		w, h, cx, cy := p.box()
		switch {
		case strings.Count(p.cmds, "M")+strings.Count(p.cmds, "L") == n && !strings.Contains(p.cmds, "Z") && w > 20:
			d.lines = append(d.lines, p)
		case w <= 16 && h <= 16:
			kind := "filled"
			if p.style["fill"] == "none" {
				kind = "outline"
			}
			d.markers[fmt.Sprintf("%s %s %.1f×%.1f", kind, p.cmds, w, h)]++
			d.centres = append(d.centres, [2]float64{cx, cy})
		}
	}
	return d
}

// The end-to-end test: a sweep whose two series coincide is plotted; the
// SVG shows both lines, in their own colour and dash pattern, both sets
// of markers, of different shapes, at the same places, and the legend
// says that one equals the other; the axes are titled in words with
// units, and the labels take the prefixes that suit the data.
func TestCoincidingSeriesPlotted(t *testing.T) {
	s, err := Parse("s.yaml", []byte(`
grid:
  machine.wire.latency_ns: [100, 2000]
  workload.dht.compute_cycles: [0, 2000, 8000]
  workload.dht.schemes: [[RMA]]
plot:
  x: workload.dht.compute_cycles
  y: [inserts_per_second, nic_energy_uj]
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	// The rows as a run would give them: the wire's latency changes
	// nothing (within 0.01 %).
	var js []string
	for _, lat := range []string{"100", "2000"} {
		for i, cc := range []string{"0", "2000", "8000"} {
			f := 1.0
			if lat == "2000" {
				f = 1.0001
			}
			js = append(js, fmt.Sprintf(`{"point": [%q, %q, "[RMA]"], "result": {"scheme": "RMA", "collisions": 0.05, "inserts_per_second": %v, "nic_energy_j": %v}}`,
				lat, cc, 1e6*float64(3-i)*f, 0.035*float64(i+1)*f))
		}
	}
	var rows []Row
	if err := json.Unmarshal([]byte("["+strings.Join(js, ",")+"]"), &rows); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := s.SavePlots(rows, dir, "sweep")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("wrote %v", files)
	}
	const first, second = "RMA, 5 % collisions, wire latency = 100 ns", "RMA, 5 % collisions, wire latency = 2 µs"
	for _, c := range []struct {
		file   string
		titles []string
	}{
		{"sweep-inserts_per_second.svg", []string{"inserts per second vs compute between inserts", "inserts per second", "compute between inserts (cycles)"}},
		{"sweep-nic_energy_uj.svg", []string{"NICs' energy vs compute between inserts", "NICs' energy (mJ)", "compute between inserts (cycles)"}},
	} {
		data, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		paths, texts := parseSVG(t, data)
		for _, want := range append(c.titles, first, second+" (= "+first+")", "0", "2k", "8k") {
			if !slices.Contains(texts, want) {
				t.Errorf("%s: no text %q in %q", c.file, want, texts)
			}
		}
		for _, txt := range texts {
			if strings.Contains(txt, "_") || strings.Contains(txt, "k µ") || strings.HasSuffix(txt, "kµJ") {
				t.Errorf("%s: text %q", c.file, txt)
			}
		}
		a, b := seriesIn(paths, "#0072B2", 3), seriesIn(paths, "#D55E00", 3)
		if len(a.lines) != 1 || len(b.lines) != 1 {
			t.Fatalf("%s: %d and %d lines through the 3 points, want one each", c.file, len(a.lines), len(b.lines))
		}
		da, db := a.lines[0].style["stroke-dasharray"], b.lines[0].style["stroke-dasharray"]
		if da == db {
			t.Errorf("%s: both lines dashed %q", c.file, da)
		}
		// Three markers on the line and one in the legend, each.
		count := func(d drawn) int {
			n := 0
			for _, k := range d.markers {
				n += k
			}
			return n
		}
		if count(a) < 4 || count(b) < 4 {
			t.Errorf("%s: markers %v and %v", c.file, a.markers, b.markers)
		}
		for sig := range a.markers {
			if b.markers[sig] > 0 {
				t.Errorf("%s: both series' markers are %s", c.file, sig)
			}
		}
		// The second's markers lie on the first's: both drawn.
		hits := 0
		for _, p := range a.centres {
			if slices.ContainsFunc(b.centres, func(q [2]float64) bool { return math.Hypot(p[0]-q[0], p[1]-q[1]) < 1 }) {
				hits++
			}
		}
		if hits < 3 {
			t.Errorf("%s: %d of the first's markers have the second's on them, want 3 or more", c.file, hits)
		}
	}
	// The output is the same every time.
	again := t.TempDir()
	if _, err := s.SavePlots(rows, again, "sweep"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		x, _ := os.ReadFile(f)
		y, _ := os.ReadFile(filepath.Join(again, filepath.Base(f)))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs", filepath.Base(f))
		}
	}
}

// The paper's streaming figure: the 32-in-flight series coincide; the log
// X axis is labelled at every message size in bytes with its own prefix,
// the Y axis in MB/s, and 1/s is no unit worth naming after "per second".
func TestStreamLikeFigure(t *testing.T) {
	sizes := []float64{64, 256, 1024, 4096, 16384, 65536}
	var series []Series
	for _, c := range []struct {
		name string
		f    float64
	}{{"no-iommu, 1 in flight", 1}, {"e-iommu, 1 in flight", 0.99}, {"no-iommu, 32 in flight", 2}, {"e-iommu, 32 in flight", 2.0001}} {
		sr := Series{Name: c.name}
		for _, x := range sizes {
			sr.X, sr.Y = append(sr.X, x), append(sr.Y, c.f*1e7*math.Log2(x))
		}
		series = append(series, sr)
	}
	p, leg, err := Draw(series, Axes{Title: "Figure 6a", XLabel: "message size (B)", YLabel: "payload bandwidth (B/s)", LogX: true})
	if err != nil {
		t.Fatal(err)
	}
	files, err := SaveFigure(p, leg, filepath.Join(t.TempDir(), "fig"))
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, files[0])
	data, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	paths, texts := parseSVG(t, data)
	for _, want := range []string{"message size", "payload bandwidth (MB/s)", "64 B", "256 B", "1 KiB", "4 KiB", "16 KiB", "64 KiB",
		"no-iommu, 1 in flight", "e-iommu, 1 in flight", "e-iommu, 32 in flight (= no-iommu, 32 in flight)"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
	dash := map[string]bool{}
	for i, c := range []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7"} {
		d := seriesIn(paths, c, len(sizes))
		if len(d.lines) != 1 {
			t.Fatalf("series %d: %d lines", i, len(d.lines))
		}
		dash[d.lines[0].style["stroke-dasharray"]] = true
	}
	if len(dash) != 4 {
		t.Errorf("dash patterns %v, want 4", dash)
	}

	q, _, err := Draw(series[:1], Axes{XLabel: "nodes", YLabel: "accesses per second (1/s)"})
	if err != nil {
		t.Fatal(err)
	}
	if q.Y.Label.Text != "accesses per second" || q.X.Label.Text != "nodes" {
		t.Errorf("titles %q, %q", q.X.Label.Text, q.Y.Label.Text)
	}
}
