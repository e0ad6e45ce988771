package bglml

import (
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/torus"
)

func TestZZSweep(t *testing.T) {
	for _, sel := range []torus.Selection{torus.SelectTokens, torus.SelectXFirst, torus.SelectXLast, torus.SelectHops} {
		for _, size := range []int{232, 952, 1912, 4792} {
			spec := bgl.DefaultSpec(4, 4, 4)
			spec.Torus.Mesh = true
			spec.Torus.Selection = sel
			r, err := AlltoallWith(spec, DefaultParams(), DefaultCosts(), size, Spread, 1, AlltoallOptions{Crossings: true})
			if err != nil {
				t.Fatal(err)
			}
			l := loadOf(r.Crossings, spec, size)
			t.Logf("%-6v %5d B: %.1f %%, %d escapes, mean/most %.3f", sel, size, 100*float64(BisectionTime(spec, size))/float64(r.Time), r.Escaped, float64(l.mean)/float64(l.hi))
		}
	}
}
