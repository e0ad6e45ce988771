package paper

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/msg/lcp"
)

// The multirail figures at a reduced scale (64 kB fragments, messages up
// to 32 of them): every point runs; the mechanisms the claims rest on show
// (one fragment: the NIC count does not matter; more NICs carry a many-
// fragment message faster; one registration per NIC is never slower than
// one per fragment; eager sizes are the same under RPUT and RGET;
// PingPing no faster than PingPong); every claim is measured.
func TestMultirailReduced(t *testing.T) {
	const frag, maxFrags = 64 << 10, 32
	figs := multirailFigures(frag, maxFrags, lcp.OnPoll, lcp.Cycle, IOMMUOn)
	if len(figs) != 3 || figs[0].Name != "5a" || figs[1].Name != "5b" || figs[2].Name != "rails" {
		t.Fatalf("figures %v", figs)
	}
	big := frag * maxFrags
	for _, f := range figs {
		pts, err := f.Custom.Run(2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(pts) != f.Custom.Experiments() {
			t.Fatalf("figure %s: %d points of %d", f.Name, len(pts), f.Custom.Experiments())
		}
		for _, p := range pts {
			if !(p.Y > 0) && f.Name != "rails" { // a rail is idle before the rendezvous and after the message
				t.Errorf("figure %s: %s at %d bytes: %v MB/s", f.Name, p.Scheme, p.X, p.Y)
			}
		}
		res := f.CheckPoints(pts)
		for _, r := range res {
			if r.Measured == "" {
				t.Errorf("claim %q measured nothing", r.Claim.Text)
			}
		}
		byName := func(prefix string) Result {
			for _, r := range res {
				if strings.HasPrefix(r.Claim.Text, prefix) {
					return r
				}
			}
			t.Fatalf("figure %s has no claim %s", f.Name, prefix)
			return Result{}
		}
		switch f.Name {
		case "5a":
			if r := byName("M4"); !r.Holds {
				t.Errorf("one fragment goes over one NIC whatever the NIC count, yet %s", r.Measured)
			}
			if r := byName("M9"); !r.Holds {
				t.Errorf("PingPing faster than PingPong: %s", r.Measured)
			}
			for n := 2; n <= 4; n++ {
				if a, b := pp(pts, big, n), pp(pts, big, n-1); a <= 1.1*b {
					t.Errorf("%d fragments: %d NICs %.0f MB/s, not 10 %% above %d NICs' %.0f", maxFrags, n, a, n-1, b)
				}
			}
			for n := 1; n <= 2; n++ {
				for _, x := range xs(pts) {
					if x >= 8192 && mrAt(pts, x, "PingPong", n, lcp.PerNIC) < 0.995*pp(pts, x, n) {
						t.Errorf("%d NICs, %d bytes: one registration per NIC slower than one per fragment", n, x)
					}
				}
			}
		case "5b":
			if r := byName("M5"); !r.Holds {
				t.Errorf("eager sizes differ between RPUT and RGET: %s", r.Measured)
			}
			byName("M6")
		case "rails":
			if r := byName("the rails carry one message together"); !r.Holds {
				t.Errorf("the rails do not carry the message together: %s", r.Measured)
			}
		}
	}
}

// Paper is registered under its name, with both figures.
func TestMultirailRegistered(t *testing.T) {
	p, figs, err := Select([]string{"multirail", "fig5b"})
	if err != nil || p != Multirail || len(figs) != 1 || figs[0].Name != "5b" {
		t.Fatalf("Select: %v %v %v", p, figs, err)
	}
	if _, _, err := Select([]string{"multirail", "6c"}); err == nil || !strings.Contains(err.Error(), "multirail") {
		t.Errorf("a figure of another paper: %v", err)
	}
}

// MultirailAt takes fragment sizes that are positive multiples of the path
// MTU and largest messages of a power of two of them up to 4 GB; it
// refuses the rest with the flag's name.
func TestMultirailAt(t *testing.T) {
	for _, tc := range []struct {
		frag, frags int
		want        string // "" accepted
	}{
		{64 << 20, 64, ""}, {4096, 1, ""}, {1 << 20, 16, ""},
		{0, 64, "--fragment 0: want a positive multiple of the path MTU (4096 bytes)"},
		{-4096, 64, "--fragment -4096: want a positive"},
		{4095, 64, "--fragment 4095: not a multiple of the path MTU (4096 bytes)"},
		{6144, 64, "not a multiple of the path MTU"},
		{1 << 20, 0, "--fragments 0: want a power of two in 1..64"},
		{1 << 20, 48, "--fragments 48"},
		{1 << 20, 128, "--fragments 128"},
		{128 << 20, 64, "want at most 4294967296"},
	} {
		p, err := MultirailAt(tc.frag, tc.frags, lcp.OnPoll, lcp.Cycle, IOMMUOn)
		switch {
		case tc.want == "" && (err != nil || p.Name != "multirail"):
			t.Errorf("MultirailAt(%d, %d): %v", tc.frag, tc.frags, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("MultirailAt(%d, %d): %v, want %q", tc.frag, tc.frags, err, tc.want)
		}
	}
	if _, err := MultirailAt(1<<20, 64, 7, lcp.Cycle, IOMMUOn); err == nil || !strings.Contains(err.Error(), "--matching matching7: want on-poll or on-arrival") {
		t.Errorf("matching 7: %v", err)
	}
	// Fragments below IMB's 16 KB: the sizes stay distinct and increasing.
	sz := mrSizes(4096, 8)
	for i := 1; i < len(sz); i++ {
		if sz[i] <= sz[i-1] {
			t.Fatalf("sizes %v", sz)
		}
	}
}

// A reduced Figure 5a through the bulk DMA path: fragments of 1 MB (four
// work requests, the middle two by the bulk path), messages up to 8 of
// them, every series and size; every point runs, every claim is measured,
// and the mechanisms hold as TLP by TLP (TestMultirailReduced).
func TestMultirailReducedBulk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 300 MB through the NICs")
	}
	const frag, maxFrags = 1 << 20, 8
	f := multirailFigures(frag, maxFrags, lcp.OnPoll, lcp.Batched, IOMMUOn)[0]
	if !strings.Contains(f.Title, "fragments by the bulk DMA path") {
		t.Fatalf("title %q", f.Title)
	}
	pts, err := f.Custom.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != f.Custom.Experiments() {
		t.Fatalf("%d points of %d", len(pts), f.Custom.Experiments())
	}
	for _, p := range pts {
		if !(p.Y > 0) {
			t.Errorf("%s at %d bytes: %v MB/s", p.Scheme, p.X, p.Y)
		}
	}
	for _, r := range f.CheckPoints(pts) {
		if r.Measured == "" {
			t.Errorf("claim %q measured nothing", r.Claim.Text)
		}
		if (strings.HasPrefix(r.Claim.Text, "M4") || strings.HasPrefix(r.Claim.Text, "M9")) && !r.Holds {
			t.Errorf("%s: %s", r.Claim.Text, r.Measured)
		}
	}
	big := frag * maxFrags
	for n := 2; n <= 4; n++ {
		if a, b := pp(pts, big, n), pp(pts, big, n-1); a <= 1.1*b {
			t.Errorf("%d fragments: %d NICs %.0f MB/s, not 10 %% above %d NICs' %.0f", maxFrags, n, a, n-1, b)
		}
	}
}
