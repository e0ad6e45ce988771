package sweep

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette is colour-blind safe (Okabe–Ito), so lines stay apart in print.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{86, 180, 233, 255},
	color.RGBA{240, 228, 66, 255}, color.RGBA{0, 0, 0, 255},
}

// Figure draws metric y against the X key, one line per series.
func (s *Spec) Figure(rows []Row, y string) (*plot.Plot, error) {
	series, err := s.Series(rows, y)
	if err != nil {
		return nil, err
	}
	m := metrics[y]
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s vs %s", m.label, shortKey(s.Plot.X))
	p.X.Label.Text = axisLabel(s.Plot.X, unitOf(s.Plot.X))
	p.Y.Label.Text = axisLabel(m.label, m.unit)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	if s.Plot.LogX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	}
	if s.Plot.LogY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	}
	for i, sr := range series {
		xys := make(plotter.XYs, len(sr.X))
		for j := range sr.X {
			if (s.Plot.LogX && sr.X[j] <= 0) || (s.Plot.LogY && sr.Y[j] <= 0) {
				return nil, fmt.Errorf("%s: (%v, %v) cannot go on a log axis", sr.Name, sr.X[j], sr.Y[j])
			}
			xys[j].X, xys[j].Y = sr.X[j], sr.Y[j]
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sr.Name, err)
		}
		c := palette[i%len(palette)]
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.5)
		points.Shape = shapes[(i/len(palette))%len(shapes)]
		p.Add(line, points)
		p.Legend.Add(sr.Name, line, points)
	}
	return p, nil
}

var shapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}

// SavePlots writes dir/<base>-<metric>.png and .svg for every Y metric and
// returns the paths written.
func (s *Spec) SavePlots(rows []Row, dir, base string) ([]string, error) {
	var paths []string
	for _, y := range s.Plot.Y {
		p, err := s.Figure(rows, y)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", y, err)
		}
		for _, ext := range []string{"png", "svg"} {
			path := filepath.Join(dir, fmt.Sprintf("%s-%s.%s", base, y, ext))
			if err := p.Save(18*vg.Centimeter, 11*vg.Centimeter, path); err != nil {
				return nil, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}
