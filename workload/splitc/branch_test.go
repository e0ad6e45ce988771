package splitc

import (
	"testing"
)

// On a NOW whose tree gathers b consecutive workstations in a branch, the
// EM3D messages that leave a branch are those a thinned upper level
// would carry. Seed 000 finds the naive layout faster on its NOW from
// that thinning (000:L228) without saying the branch's size; here, with
// the ranks numbered block by block as on the Clump, the good layout
// sends no more messages out of a branch than the naive one (as many
// with branches of 2, far fewer from 4 up) and no more from its busiest
// workstation, for every branch of 2 to 16 workstations: thinning alone
// would not turn the order round.
func TestEM3DBranches(t *testing.T) {
	count := func(good bool, b int) (pct, busiest float64) {
		g, blk, err := grid(32, good)
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEM3D(EM3DConfig{Nodes: 500, Degree: 20, Remote: 0.4, Steps: 1, Grid: g, Block: blk, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		tal, err := Tally(32, e.Program())
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Check(); err != nil {
			t.Fatal(err)
		}
		l := Layout{Nodes: 32 / b, PerNode: b}
		var out, all float64
		for i, c := range tal.Counts {
			x := c.Split(l, i)
			out += float64(x.NetShort)
			all += float64(x.NetShort + x.LocalShort)
			busiest = max(busiest, float64(x.NetShort))
		}
		return 100 * out / all, busiest
	}
	for _, b := range []int{2, 4, 8, 16} {
		n, nm := count(false, b)
		g, gm := count(true, b)
		t.Logf("branches of %2d: out of a branch naive %.1f %%, good %.1f %%; busiest workstation naive %.0f, good %.0f", b, n, g, nm, gm)
		if g > n+0.5 || gm > nm {
			t.Errorf("branches of %d: the good layout sends %.1f %% out of a branch (busiest %.0f), the naive one %.1f %% (%.0f)", b, g, gm, n, nm)
		}
	}
}
