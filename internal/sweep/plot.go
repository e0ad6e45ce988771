package sweep

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette is colour-blind safe (Okabe–Ito), so lines stay apart in print.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{86, 180, 233, 255},
	color.RGBA{240, 228, 66, 255}, color.RGBA{0, 0, 0, 255},
}

// Figure draws metric y against the X key, one line per series; the
// legend is returned apart, to go under the plot rather than over the lines.
func (s *Spec) Figure(rows []Row, y string) (*plot.Plot, *plot.Legend, error) {
	series, err := s.Series(rows, y)
	if err != nil {
		return nil, nil, err
	}
	m, _ := s.metricOf(y, rows)
	return Draw(series, Axes{
		Title:  fmt.Sprintf("%s vs %s", m.label, shortKey(s.Plot.X)),
		XLabel: axisLabel(s.Plot.X, unitOf(s.Plot.X)),
		YLabel: axisLabel(m.label, m.unit),
		LogX:   s.Plot.LogX, LogY: s.Plot.LogY,
	})
}

// Axes are a plot's title, axis labels (with units) and scales. With
// XNames the X axis is those categories (a series' X is the index) and the
// series are bars grouped by category.
type Axes struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	XNames                []string
}

// Draw plots the series, one line each, and returns the legend apart.
func Draw(series []Series, ax Axes) (*plot.Plot, *plot.Legend, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = ax.Title, ax.XLabel, ax.YLabel
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	p.X.Tick.Marker, p.Y.Tick.Marker = siTicks{}, siTicks{}
	if ax.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	}
	if ax.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	}
	if ax.XNames != nil {
		return bars(p, &leg, series, ax)
	}
	for i, sr := range series {
		xys := make(plotter.XYs, len(sr.X))
		for j := range sr.X {
			if (ax.LogX && sr.X[j] <= 0) || (ax.LogY && sr.Y[j] <= 0) {
				return nil, nil, fmt.Errorf("%s: (%v, %v) cannot go on a log axis", sr.Name, sr.X[j], sr.Y[j])
			}
			xys[j].X, xys[j].Y = sr.X[j], sr.Y[j]
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sr.Name, err)
		}
		c := palette[i%len(palette)]
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.5)
		points.Shape = shapes[(i/len(palette))%len(shapes)]
		p.Add(line, points)
		leg.Add(sr.Name, line, points)
	}
	return p, &leg, nil
}

// bars draws each series as bars, side by side within each category.
func bars(p *plot.Plot, leg *plot.Legend, series []Series, ax Axes) (*plot.Plot, *plot.Legend, error) {
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
		b.Color = palette[i%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(series)-1)/2) * w
		p.Add(b)
		leg.Add(sr.Name, b)
	}
	p.NominalX(ax.XNames...)
	p.Y.Min, p.Y.Max = 0, top*1.08 // room above the tallest bar
	p.X.Min, p.X.Max = -0.5, float64(len(ax.XNames))-0.5
	p.X.Tick.Label.Font.Size = vg.Points(8)
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

// siTicks are gonum's default ticks labelled with SI prefixes (2.5M, not
// 2500000.00).
type siTicks struct{}

func (siTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = si(ts[i].Value)
		}
	}
	return ts
}

func si(v float64) string {
	a := math.Abs(v)
	for _, p := range []struct {
		f float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= p.f {
			return strconv.FormatFloat(v/p.f, 'g', 4, 64) + p.s
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}

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
	rowH := leg.TextStyle.Font.Size * 1.4
	legH := rowH*vg.Length(countEntries(leg)) + vg.Points(10)
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

// countEntries counts a legend's lines (gonum keeps them private): the
// height of its rectangle over one line's.
func countEntries(l *plot.Legend) int {
	c := draw.New(vgimg.New(100, 100))
	r := l.Rectangle(c)
	one := l.TextStyle.Rectangle("M")
	return max(1, int(math.Round(float64(r.Size().Y/(one.Size().Y)))))
}
