package paper

import (
	"fmt"
	"testing"
)

// The multirail figures at a reduced scale (64 kB fragments, messages up
// to 32 of them): every point runs, and the claims are measured.
func TestMultirailReduced(t *testing.T) {
	for _, f := range multirailFigures(64<<10, 32) {
		pts, err := f.Custom.Run(2, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			t.Logf("%s %8d %-45s %10.1f", f.Name, p.X, p.Scheme, p.Y)
		}
		for _, r := range f.CheckPoints(pts) {
			t.Log(fmt.Sprintf("%s | %s | %s | %v", r.Claim.Text, r.Claim.Tolerance, r.Measured, r.Holds))
		}
	}
}
