package sweep

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure draws metric y against the X key, one line per series; the
// legend is returned apart, to go under the plot rather than over the lines.
func (s *Spec) Figure(rows []Row, y string) (*plot.Plot, *plot.Legend, error) {
	series, err := s.Series(rows, y)
	if err != nil {
		return nil, nil, err
	}
	yl := labelOf(y)
	if y == "rate" {
		m, _ := s.metricOf(y, rows)
		yl = rateLabel(s.base.Workload.Kind, m.unit)
	}
	xl := labelOf(s.Plot.X)
	return Draw(series, Axes{
		Title:  yl.words + " vs " + xl.words,
		XLabel: xl.words, XUnit: xl.unit,
		YLabel: yl.words, YUnit: yl.unit,
		LogX: s.Plot.LogX, LogY: s.Plot.LogY,
	})
}

// Axes are a plot's title, axis labels with their units, and scales. A
// label's unit is XUnit (YUnit), or the one it ends in, in brackets
// ("NIC energy (µJ)"); the ticks take the prefix that suits the data (35
// mJ, not 35k µJ), and the label says which. With XNames the X axis is
// those categories (a series' X is the index) and the series are bars
// grouped by category.
type Axes struct {
	Title, XLabel, YLabel string
	XUnit, YUnit          string
	LogX, LogY            bool
	XNames                []string
}

// coincideTol is how close two series' values are, relative to the
// larger, for the legend to call them equal.
const coincideTol = 1e-3

// Draw plots the series, one line each, and returns the legend apart.
// Every series has its own colour, marker and dash pattern, so one that
// lies on another still shows; the legend names each one that coincides
// with an earlier one: "e-iommu (= no-iommu)".
func Draw(series []Series, ax Axes) (*plot.Plot, *plot.Legend, error) {
	p := plot.New()
	p.Title.Text = ax.Title
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.ThumbnailWidth = vg.Points(32)
	leg.Padding = vg.Points(4) // room for the markers
	p.Add(plotter.NewGrid())
	names := legendNames(series)
	if ax.XNames != nil {
		return bars(p, &leg, series, names, ax)
	}
	var lines []*plotter.Line
	var marks []*plotter.Scatter
	var xs []float64
	for i, sr := range series {
		xys := make(plotter.XYs, len(sr.X))
		for j := range sr.X {
			if (ax.LogX && sr.X[j] <= 0) || (ax.LogY && sr.Y[j] <= 0) {
				return nil, nil, fmt.Errorf("%s: (%v, %v) cannot go on a log axis", sr.Name, sr.X[j], sr.Y[j])
			}
			xys[j].X, xys[j].Y = sr.X[j], sr.Y[j]
			xs = append(xs, sr.X[j])
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sr.Name, err)
		}
		st := styleOf(i)
		line.LineStyle = draw.LineStyle{Color: st.colour, Width: vg.Points(1.5), Dashes: st.dashes}
		points.GlyphStyle = draw.GlyphStyle{Color: st.colour, Radius: st.radius, Shape: st.shape}
		lines, marks = append(lines, line), append(marks, points)
		leg.Add(names[i], line, points)
		if sr.Err != nil {
			// The confidence interval over the seeds, as error bars.
			errs := make(plotter.YErrors, len(sr.Err))
			for j, h := range sr.Err {
				errs[j].Low, errs[j].High = h, h
			}
			bars, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{xys, errs})
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", sr.Name, err)
			}
			bars.LineStyle.Color, bars.LineStyle.Width = st.colour, vg.Points(1)
			p.Add(bars)
		}
	}
	// Every line under every marker: a line does not hide a point.
	for _, l := range lines {
		p.Add(l)
	}
	for _, m := range marks {
		p.Add(m)
	}
	setAxis(&p.X, ax.LogX, ax.XLabel, ax.XUnit, xs)
	setAxis(&p.Y, ax.LogY, ax.YLabel, ax.YUnit, nil)
	return p, &leg, nil
}

// setAxis gives an axis its scale, ticks (at values, if any) and title.
// The axis's range is the data's, as the plotters added it.
func setAxis(a *plot.Axis, log bool, title, u string, values []float64) {
	words := title
	if u == "" {
		words, u = splitUnit(title)
	}
	if log {
		a.Scale = plot.LogScale{}
		if a.Min == a.Max && a.Min > 0 { // one value: a decade around it
			a.Min, a.Max = a.Min/math.Sqrt(10), a.Max*math.Sqrt(10)
		}
	}
	t := newAxisTicks(log, parseUnit(u), values)
	a.Tick.Marker = t
	a.Label.Text = t.title(words, a.Min, a.Max)
}

// legendNames are the series' names, each that coincides with an earlier
// series followed by the first such: "e-iommu (= no-iommu)".
func legendNames(series []Series) []string {
	names := make([]string, len(series))
	for i, sr := range series {
		names[i] = sr.Name
		for j := range i {
			if coincide(series[j], sr, coincideTol) {
				names[i] += " (= " + series[j].Name + ")"
				break
			}
		}
	}
	return names
}

// coincide: a and b have the same points, X for X, their Ys equal within
// tol of the larger.
func coincide(a, b Series, tol float64) bool {
	if len(a.X) != len(b.X) || len(a.X) == 0 {
		return false
	}
	pa, pb := sortedPoints(a), sortedPoints(b)
	for i := range pa {
		if !near(pa[i][0], pb[i][0], tol) || !near(pa[i][1], pb[i][1], tol) {
			return false
		}
	}
	return true
}

func sortedPoints(s Series) [][2]float64 {
	ps := make([][2]float64, len(s.X))
	for i := range s.X {
		ps[i] = [2]float64{s.X[i], s.Y[i]}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i][0] < ps[j][0] || ps[i][0] == ps[j][0] && ps[i][1] < ps[j][1] })
	return ps
}

// near: a and b differ by at most tol of the larger magnitude.
func near(a, b, tol float64) bool {
	return a == b || math.Abs(a-b) <= tol*max(math.Abs(a), math.Abs(b))
}

// bars draws each series as bars, side by side within each category.
func bars(p *plot.Plot, leg *plot.Legend, series []Series, names []string, ax Axes) (*plot.Plot, *plot.Legend, error) {
	w := vg.Points(44 / float64(max(len(series), 1)))
	top := 0.0
	for i, sr := range series {
		vs := make(plotter.Values, len(ax.XNames))
		for j, x := range sr.X {
			k := int(x)
			if k < 0 || k >= len(vs) || float64(k) != x {
				return nil, nil, fmt.Errorf("%s: category %v of %d", sr.Name, x, len(vs))
			}
			vs[k] = sr.Y[j]
			top = max(top, sr.Y[j])
		}
		b, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sr.Name, err)
		}
		b.Color = styleOf(i).colour
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(series)-1)/2) * w
		p.Add(b)
		leg.Add(names[i], b)
	}
	p.NominalX(ax.XNames...)
	p.X.Label.Text = axisTitle(ax.XLabel, ax.XUnit)
	p.Y.Min, p.Y.Max = 0, top*1.08 // room above the tallest bar
	p.X.Min, p.X.Max = -0.5, float64(len(ax.XNames))-0.5
	p.X.Tick.Label.Font.Size = vg.Points(8)
	setAxis(&p.Y, false, ax.YLabel, ax.YUnit, nil)
	return p, leg, nil
}

// SaveFigure writes a plot and its legend as path.png and path.svg and
// returns the two paths.
func SaveFigure(p *plot.Plot, leg *plot.Legend, path string) ([]string, error) {
	var out []string
	for _, ext := range []string{"png", "svg"} {
		f := path + "." + ext
		if err := savePlot(p, leg, f, ext); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// SavePlots writes dir/<base>-<metric>.png and .svg for every Y metric and
// returns the paths written.
func (s *Spec) SavePlots(rows []Row, dir, base string) ([]string, error) {
	var paths []string
	for _, y := range s.Plot.Y {
		p, leg, err := s.Figure(rows, y)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", y, err)
		}
		ps, err := SaveFigure(p, leg, filepath.Join(dir, fmt.Sprintf("%s-%s", base, y)))
		if err != nil {
			return nil, err
		}
		paths = append(paths, ps...)
	}
	return paths, nil
}

// savePlot draws the plot with its legend in a band below it.
func savePlot(p *plot.Plot, leg *plot.Legend, path, ext string) error {
	const w, plotH = 18 * vg.Centimeter, 11 * vg.Centimeter
	legH := legendHeight(leg) + vg.Points(10)
	h := plotH + legH
	var canvas interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch ext {
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	case "svg":
		canvas = vgsvg.New(w, h)
	default:
		return fmt.Errorf("%s: no %s writer", path, ext)
	}
	dc := draw.New(canvas)
	p.Draw(draw.Crop(dc, 0, 0, legH, 0))
	band := dc
	band.Max.Y = dc.Min.Y + legH - vg.Points(4)
	band.Min.X += vg.Points(8)
	leg.Draw(band)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// legendHeight is the height of a legend's lines.
func legendHeight(l *plot.Legend) vg.Length {
	return l.Rectangle(draw.New(vgimg.New(100, 100))).Size().Y
}
