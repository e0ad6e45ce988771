package sweep

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// palette is colour-blind safe (Okabe–Ito), so lines stay apart in print.
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255}, color.RGBA{213, 94, 0, 255}, color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255}, color.RGBA{230, 159, 0, 255}, color.RGBA{86, 180, 233, 255},
	color.RGBA{240, 228, 66, 255}, color.RGBA{0, 0, 0, 255},
}

// A marker is a glyph and its size. Filled and hollow ones alternate and
// grow, so a later marker on an earlier one leaves it visible: a hollow
// square around a dot.
type marker struct {
	shape  draw.GlyphDrawer
	radius vg.Length
}

var markers = []marker{
	{draw.CircleGlyph{}, vg.Points(3)},
	{outline{square}, vg.Points(4.5)},
	{outline{triangle}, vg.Points(5)},
	{cross{diagonal: true}, vg.Points(5)},
	{outline{diamond}, vg.Points(5.5)},
	{cross{}, vg.Points(5.5)},
	{filled{triangle}, vg.Points(3.5)},
	{outline{circle}, vg.Points(6)},
}

// dashes are the lines' patterns: solid first, then a later line on an
// earlier one shows both colours in turn.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2.5)},
	{vg.Points(8), vg.Points(3), vg.Points(1.5), vg.Points(3)},
	{vg.Points(12), vg.Points(4)},
	{vg.Points(4), vg.Points(2), vg.Points(1.5), vg.Points(2), vg.Points(1.5), vg.Points(2)},
}

// A style is how one series is drawn.
type style struct {
	colour color.Color
	marker
	dashes []vg.Length
}

// styleOf is the i-th series' style. Colours and markers both repeat after
// eight series, but not together (the marker moves on by one each round),
// and dash patterns after six; no two of the first 48 series look alike.
func styleOf(i int) style {
	return style{
		colour: palette[i%len(palette)],
		marker: markers[(i+i/len(palette))%len(markers)],
		dashes: dashes[i%len(dashes)],
	}
}

const sin60 = 0.8660254037844386

// A shape is a glyph's outline: a polygon's corners on the unit circle.
type shape []vg.Point

var (
	square   = shape{{X: -1, Y: -1}, {X: 1, Y: -1}, {X: 1, Y: 1}, {X: -1, Y: 1}}.scaled(math.Sqrt2 / 2 * 1.1)
	triangle = shape{{X: 0, Y: 1}, {X: -sin60, Y: -0.5}, {X: sin60, Y: -0.5}}
	diamond  = shape{{X: 0, Y: 1}, {X: 1, Y: 0}, {X: 0, Y: -1}, {X: -1, Y: 0}}
	circle   shape // an arc, not a polygon
)

func (s shape) scaled(f float64) shape {
	out := make(shape, len(s))
	for i, p := range s {
		out[i] = vg.Point{X: p.X * vg.Length(f), Y: p.Y * vg.Length(f)}
	}
	return out
}

func (s shape) path(sty draw.GlyphStyle, pt vg.Point) vg.Path {
	var p vg.Path
	if s == nil {
		p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
		p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	} else {
		for i, c := range s {
			q := vg.Point{X: pt.X + c.X*sty.Radius, Y: pt.Y + c.Y*sty.Radius}
			if i == 0 {
				p.Move(q)
			} else {
				p.Line(q)
			}
		}
	}
	p.Close()
	return p
}

// outline draws a shape's outline, with a solid line thick enough to
// show over a line of the same colour.
type outline struct{ shape }

func (o outline) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.2)})
	c.Stroke(o.path(sty, pt))
}

// filled draws a shape filled.
type filled struct{ shape }

func (f filled) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.Fill(f.path(sty, pt))
}

// cross draws a plus, or with diagonal an ×.
type cross struct{ diagonal bool }

func (x cross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	r := sty.Radius
	a, b := vg.Point{X: 0, Y: r}, vg.Point{X: r, Y: 0}
	if x.diagonal {
		r *= math.Sqrt2 / 2
		a, b = vg.Point{X: r, Y: r}, vg.Point{X: r, Y: -r}
	}
	for _, d := range []vg.Point{a, b} {
		var p vg.Path
		p.Move(vg.Point{X: pt.X - d.X, Y: pt.Y - d.Y})
		p.Line(vg.Point{X: pt.X + d.X, Y: pt.Y + d.Y})
		c.Stroke(p)
	}
}
