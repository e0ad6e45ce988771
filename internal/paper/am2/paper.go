// Package am2paper is seed 000 (Lumetta, Mainwaring and Culler,
// multi-protocol Active Messages on a cluster of SMPs) as aaemu paper am2:
// its tables and figures as experiments on E5000 SMPs and U170
// workstations, with the paper's claims (A1–A16 of the reference) checked
// against what they measure. The figures run on reduced sizes with aaemu
// paper --reduced, as the test suite runs them.
package am2paper

import "github.com/aaemu/aaemu/internal/paper"

func init() {
	paper.Register(&paper.Paper{
		Name:    "am2",
		Title:   "Multi-protocol Active Messages on a cluster of SMPs (Lumetta, Mainwaring, Culler)",
		Figures: func() []*paper.Figure { return appFigures(false) },
		Reduced: func() []*paper.Figure { return appFigures(true) },
	})
}
