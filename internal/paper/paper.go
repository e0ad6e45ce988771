// Package paper holds the sweeps that correspond to the Active Access
// paper's figures and checks the paper's claims against what they measure.
// The machines are scaled to what one host simulates in minutes (8
// processes per node instead of 32 where noted); each figure says so.
package paper

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/workload"
)

// Figure is one of the paper's figures as a sweep and its claims.
type Figure struct {
	Name   string // as the paper numbers it: 6c, 6d, 7a…
	Title  string
	Sweep  string // the sweep file (DHT figures)
	Claims []Claim
	// Custom runs figures of the other workloads; PointClaims are theirs.
	Custom      *Custom
	PointClaims []PointClaim
	// AtScale, for the figures whose axis is the machine's size, is the
	// figure on the given node counts with 32 processes per node on the
	// srd transport (aaemu paper --max-nodes).
	AtScale func(nodes []int) *Figure
	// OnMachine, for the two-node figures (6a–6c), is the figure on a
	// two-node machine preset (aaemu paper --machine gem5).
	OnMachine func(p *Preset) *Figure
	// Scenario, when set, is the base scenario the sweep names (on a
	// machine preset, aaemu paper --machine).
	Scenario *Preset
	// Extra draws pictures of a custom figure's runs besides its plot
	// (a link heat map), into dir, after its points; ExtraFiles names
	// them.
	Extra      func(dir string) error
	ExtraFiles []string
	// Notes, for a sweep figure, is a breakdown printed after its claims
	// (7c's IOTLB lookups by kind of page); "" for none.
	Notes func(rows []sweep.Row) string
}

// NotDrawn is what a figure's Extra returns when runs it draws from were
// left out (aaemu paper --runs): it drew the others; Files are the ones it
// did not write, Why says which runs they lack.
type NotDrawn struct {
	Files []string
	Why   string
}

func (e *NotDrawn) Error() string {
	return fmt.Sprintf("not drawn: %s: %s", strings.Join(e.Files, ", "), e.Why)
}

// Claim is one qualitative statement of the paper and how to measure it.
type Claim struct {
	Text  string
	Paper string
	// Tolerance is what the check accepts, in words: the verdict says
	// what it checked, not only the paper's value.
	Tolerance string
	Measure   func(rows []sweep.Row) (measured string, holds bool)
}

// Result is a claim with what was measured.
type Result struct {
	Claim    Claim
	Measured string
	Holds    bool
	// Calibrated: the claim's value was an input of the model, so Holds
	// checks the calibration, not a prediction (PointClaim.Calibrated).
	Calibrated bool
}

// Verdict is how a result is printed: yes, NO, or for a calibrated claim
// "calibrated" (or "NO (calibration)" if the model does not reproduce
// its input).
func (r Result) Verdict() string {
	switch {
	case r.Calibrated && r.Holds:
		return "calibrated"
	case r.Calibrated:
		return "NO (calibration)"
	case r.Holds:
		return "yes"
	}
	return "NO"
}

// Check measures every claim of f on its rows.
func (f *Figure) Check(rows []sweep.Row) []Result {
	out := make([]Result, len(f.Claims))
	for i, c := range f.Claims {
		m, ok := c.Measure(rows)
		out[i] = Result{Claim: c, Measured: m, Holds: ok}
	}
	return out
}

// Figures lists the Active Access paper's figures aaemu models, in the
// paper's order.
func Figures() []*Figure { return figures }

// Missing names the figures of the paper aaemu does not model yet, and why.
var Missing = map[string]string{}

// Paper is one of the source papers whose figures aaemu reproduces: the
// Active Access paper (AA, the default) and the message-layer papers it is
// weighed against, each registered by its package under a short name
// (aaemu paper NAME [FIGURE...]).
type Paper struct {
	Name  string // on the command line: aa, am2, mpi-start, bgl, multirail
	Title string
	// Figures lists its figures in the paper's order.
	Figures func() []*Figure
	// Reduced, if not nil, lists the same figures on reduced sizes, as
	// the test suite runs them (aaemu paper --reduced).
	Reduced func() []*Figure
}

// AtReduced is the paper with its reduced figures in place of its own.
func (p *Paper) AtReduced() (*Paper, error) {
	if p.Reduced == nil {
		return nil, fmt.Errorf("--reduced: the %s paper has no reduced figures", p.Name)
	}
	q := *p
	q.Figures = p.Reduced
	return &q, nil
}

// AA is the Active Access paper.
var AA = &Paper{Name: "aa", Title: "Active Access (the paper aaemu models first)", Figures: Figures, Reduced: reducedFigures}

// reducedFigures are the figures with 7c on two IOTLB sizes and fewer
// inserts, as the test suite runs it; the others are as they are.
func reducedFigures() []*Figure {
	out := slices.Clone(figures)
	for i, f := range out {
		if f.Name == "7c" {
			out[i] = iotlbFigure(iotlbReducedEntries, iotlbReducedInserts, "")
		}
	}
	return out
}

var papers = []*Paper{AA}

// Register adds a paper (at init); its name must be new.
func Register(p *Paper) {
	for _, q := range papers {
		if q.Name == p.Name {
			panic("paper: " + p.Name + " registered twice")
		}
	}
	papers = append(papers, p)
}

// Papers lists the registered papers, AA first, then by registration.
func Papers() []*Paper { return papers }

// Find is the paper called name, or nil.
func Find(name string) *Paper {
	for _, p := range papers {
		if p.Name == strings.ToLower(name) {
			return p
		}
	}
	return nil
}

// Select reads a command line's figure arguments: a paper's name first
// picks that paper (its figures follow, or all of them), else they are AA's
// figures.
func Select(args []string) (*Paper, []*Figure, error) {
	p := AA
	if len(args) > 0 {
		if q := Find(args[0]); q != nil {
			p, args = q, args[1:]
		}
	}
	figs, err := p.Lookup(args)
	return p, figs, err
}

// Lookup finds the paper's figures by name; none or "all" is every one.
func (p *Paper) Lookup(names []string) ([]*Figure, error) {
	all := p.Figures()
	if len(names) == 0 || len(names) == 1 && names[0] == "all" {
		return all, nil
	}
	var out []*Figure
	for _, n := range names {
		n = strings.TrimPrefix(strings.ToLower(n), "fig")
		found := false
		for _, f := range all {
			if f.Name == n {
				out = append(out, f)
				found = true
			}
		}
		if !found {
			if why, ok := Missing[n]; ok && p == AA {
				return nil, fmt.Errorf("figure %s: %s", n, why)
			}
			var have []string
			for _, f := range all {
				have = append(have, f.Name)
			}
			msg := fmt.Sprintf("figure %q: the paper has no such figure aaemu models (have %s)", n, strings.Join(have, ", "))
			if p == AA {
				var names []string
				for _, q := range papers[1:] {
					names = append(names, q.Name)
				}
				if len(names) > 0 {
					msg += "; other papers: " + strings.Join(names, ", ")
				}
			} else {
				msg = p.Name + ": " + msg
			}
			return nil, errors.New(msg)
		}
	}
	return out, nil
}

// Lookup finds the Active Access paper's figures by name; "all" is every
// modelled one.
func Lookup(names []string) ([]*Figure, error) { return AA.Lookup(names) }

// rate is the insert rate of scheme at the points whose grid value at
// axis is v ("" for any): the best, when the grid runs the scheme in
// several configurations there (AM-Onload at every C, as the paper
// compares it "in its best configuration").
func rate(rows []sweep.Row, scheme workload.Scheme, axis int, v string) float64 {
	best := 0.0
	for _, r := range rows {
		if r.Result.Scheme == scheme && (v == "" || r.Point[axis] == v) {
			best = max(best, r.Result.InsertsPerSec)
		}
	}
	return best
}

var onloadCores = regexp.MustCompile(`am_onload_cores: (\d+)`)

// bestOnloadC is the C of AM-Onload's best configuration at the points
// whose grid value at axis is v.
func bestOnloadC(rows []sweep.Row, axis int, v string) string {
	best, c := 0.0, "?"
	for _, r := range rows {
		if r.Result.Scheme != workload.AMOnload || r.Point[axis] != v || r.Result.InsertsPerSec <= best {
			continue
		}
		best = r.Result.InsertsPerSec
		for _, p := range r.Point {
			if m := onloadCores.FindStringSubmatch(p); m != nil {
				c = m[1]
			}
		}
	}
	return c
}

// values lists the distinct grid values at axis in order of appearance.
func values(rows []sweep.Row, axis int) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Point[axis]] {
			seen[r.Point[axis]] = true
			out = append(out, r.Point[axis])
		}
	}
	return out
}

// collisions lists the experiments' collision ratios in order.
func collisions(rows []sweep.Row) []float64 {
	var out []float64
	for _, r := range rows {
		if !slices.Contains(out, r.Result.Collisions) {
			out = append(out, r.Result.Collisions)
		}
	}
	return out
}

// rateAt is scheme's insert rate at collision ratio c.
func rateAt(rows []sweep.Row, scheme workload.Scheme, c float64) float64 {
	for _, r := range rows {
		if r.Result.Scheme == scheme && r.Result.Collisions == c {
			return r.Result.InsertsPerSec
		}
	}
	return math.NaN()
}

func within(x, lo, hi float64) bool { return x >= lo && x <= hi }

func pct(x float64) string { return fmt.Sprintf("%+.1f %%", 100*(x-1)) }

var figures = []*Figure{
	dhtTwoNode(nil),
	{
		Name:  "6d",
		Title: "AM-Onload: the best number C of a node's 32 cores that only serve (4 nodes, 10 Gb/s)",
		Sweep: `
grid:
  workload.dht.am_onload_cores: [1, 4, 8, 11, 16, 24, 31]
  workload.dht.schemes: [[AM-Onload]]
  machine.nodes: [4]
  machine.cores: [32]
  machine.wire.rate_mbps: [10000]
  workload.dht.procs_per_node: [32]
  workload.dht.compute_cycles: [2000]
  workload.dht.collisions: [[0.05]]
  workload.dht.inserts: [50]
plot:
  x: workload.dht.am_onload_cores
  y: [inserts_per_second]
`,
		Claims: []Claim{
			{Text: "best C for AM-Onload (of 32 cores)", Paper: "C = 11", Tolerance: "best C within 11 ± 3 (8–14)", Measure: func(rows []sweep.Row) (string, bool) {
				best, bestC := 0.0, ""
				for _, c := range values(rows, 0) {
					if r := rate(rows, workload.AMOnload, 0, c); r > best {
						best, bestC = r, c
					}
				}
				c, _ := strconv.Atoi(bestC)
				return fmt.Sprintf("C = %s (%.3g inserts/s)", bestC, best), within(float64(c), 8, 14)
			}},
		},
	},
	scaleFigure("7a", 0.05, nil),
	scaleFigure("7b", 0.25, nil),
	iotlbFigure(iotlbEntries, iotlbInserts, ""),
}

func init() {
	figures = append(figures, counterFigure(nil), nicEnergyFigure, routerEnergyFigure, getLogFigure(nil), sortTimeFigure)
}

// scaleFigure is Figure 7a/7b: every scheme as the machine grows, at one
// collision ratio: on 2, 4 and 8 nodes over rc, or (at scale) on the given
// node counts over srd.
func scaleFigure(name string, coll float64, nodes []int) *Figure {
	others := []workload.Scheme{workload.AAInt, workload.AM, workload.AMExp, workload.AMOnload, workload.RMA, workload.AMInt}
	machineSize, transport, base, net := "2 to 8 nodes × 32 processes", "", "", ", 10 Gb/s"
	var on *Preset
	if nodes != nil {
		machineSize = fmt.Sprintf("%d to %d nodes × 32 processes (P = %d to %d), srd transport", nodes[0], nodes[len(nodes)-1], 32*nodes[0], 32*nodes[len(nodes)-1])
		transport = "\n  machine.transport: [srd]\n  machine.wire.rate_mbps: [10000]"
		if on = Machine; on != nil {
			// The preset's machine: its network, transport and access
			// logs (aa_logs), the node count of each point.
			base, transport = "scenario: "+on.Name+"\n", ""
			machineSize = fmt.Sprintf("%d to %d nodes × 32 processes (P = %d to %d)", nodes[0], nodes[len(nodes)-1], 32*nodes[0], 32*nodes[len(nodes)-1])
			net = fmt.Sprintf(", on %s (%s, access logs: %s)", on.Name, on.network(), on.logs())
		}
	} else {
		nodes = []int{2, 4, 8}
		transport = "\n  machine.wire.rate_mbps: [10000]"
	}
	return &Figure{
		Name:     name,
		AtScale:  func(n []int) *Figure { return scaleFigure(name, coll, n) },
		Scenario: on,
		Title:    fmt.Sprintf("DHT at %.0f %% collisions, every scheme, %s (AM-Onload: the best of C = 4, 8, 11, 16, 24 serving; AA-Int and AM-Int: an interrupt every 10 inserts, as the paper reports)%s", 100*coll, machineSize, net),
		Sweep: fmt.Sprintf(`%s
grid:
  machine.nodes: %s
  machine.cores: [32]%s
  workload.dht.procs_per_node: [32]
  workload.dht.aa_int_records: [10]
  workload.dht.compute_cycles: [2000]
  # AM-Onload at every C of 6d's curve around its peak: the paper compares
  # it "even in its best configuration".
  workload.dht:
    - {schemes: [AA-SP, AA-Poll, AA-Int, AM, AM-Exp, AM-Onload, RMA, AM-Int], am_onload_cores: 11}
    - {schemes: [AM-Onload], am_onload_cores: 4}
    - {schemes: [AM-Onload], am_onload_cores: 8}
    - {schemes: [AM-Onload], am_onload_cores: 16}
    - {schemes: [AM-Onload], am_onload_cores: 24}
  workload.dht.collisions: [[%v]]
  workload.dht.inserts: [25]
plot:
  x: machine.nodes
  y: [inserts_per_second, target_polls]
`, base, yamlInts(nodes), transport, coll),
		Claims: []Claim{
			{Text: "AA-SP and AA-Poll vs the best other scheme, largest machine", Paper: "≈2×", Tolerance: "both 1.5×–3× (AM-Onload at its best C)", Measure: func(rows []sweep.Row) (string, bool) {
				ns := values(rows, 0)
				n := ns[len(ns)-1]
				sp := rate(rows, workload.AASP, 0, n)
				poll := rate(rows, workload.AAPoll, 0, n)
				best, who := 0.0, workload.Scheme("")
				for _, s := range others {
					if r := rate(rows, s, 0, n); r > best {
						best, who = r, s
					}
				}
				return fmt.Sprintf("AA-SP %.2f×, AA-Poll %.2f× (best other: %s)", sp/best, poll/best, who), within(sp/best, 1.5, 3) && within(poll/best, 1.5, 3)
			}},
			{Text: "AA-SP vs the best active-message or RMA scheme, largest machine", Paper: "≈2×", Tolerance: "1.5×–3× (AM-Onload at its best C)", Measure: func(rows []sweep.Row) (string, bool) {
				ns := values(rows, 0)
				n := ns[len(ns)-1]
				sp := rate(rows, workload.AASP, 0, n)
				best, who := 0.0, workload.Scheme("")
				for _, s := range []workload.Scheme{workload.AM, workload.AMExp, workload.AMOnload, workload.RMA, workload.AMInt} {
					if r := rate(rows, s, 0, n); r > best {
						best, who = r, s
					}
				}
				return fmt.Sprintf("%.2f× (%s)", sp/best, who), within(sp/best, 1.5, 3)
			}},
			{Text: "AM-Onload, even at its best C, does not beat AA-SP", Paper: "yes", Tolerance: "AA-SP strictly ahead of AM-Onload's best C at every size", Measure: func(rows []sweep.Row) (string, bool) {
				ok := true
				var parts []string
				for _, n := range values(rows, 0) {
					sp := rate(rows, workload.AASP, 0, n)
					on := rate(rows, workload.AMOnload, 0, n)
					parts = append(parts, fmt.Sprintf("%s nodes %.2f× (C = %s)", n, sp/on, bestOnloadC(rows, 0, n)))
					ok = ok && sp > on
				}
				return "AA-SP/AM-Onload at its best C: " + strings.Join(parts, ", "), ok
			}},
			{Text: "AA-Int ≈ AM-Int", Paper: "comparable", Tolerance: "0.67×–1.5× at every size", Measure: func(rows []sweep.Row) (string, bool) {
				var parts []string
				ok := true
				for _, n := range values(rows, 0) {
					ai, mi := rate(rows, workload.AAInt, 0, n), rate(rows, workload.AMInt, 0, n)
					parts = append(parts, fmt.Sprintf("%s nodes %.2f×", n, ai/mi))
					ok = ok && within(ai/mi, 2.0/3, 1.5)
				}
				return "AA-Int/AM-Int " + strings.Join(parts, ", "), ok
			}},
			{Text: "AA-SP vs AA-Poll", Paper: "≈ +1 %", Tolerance: "0 to +5 % at every size", Measure: func(rows []sweep.Row) (string, bool) {
				var parts []string
				ok := true
				for _, n := range values(rows, 0) {
					sp := rate(rows, workload.AASP, 0, n)
					poll := rate(rows, workload.AAPoll, 0, n)
					parts = append(parts, n+" nodes "+pct(sp/poll))
					ok = ok && within(sp/poll, 1.0, 1.05)
				}
				return strings.Join(parts, ", "), ok
			}},
		},
	}
}

// yamlInts is a YAML flow list of ns.
func yamlInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ScaleNodes is the node counts of a figure at scale: the powers of two
// from 2 to max.
func ScaleNodes(max int) []int {
	var ns []int
	for n := 2; n <= max; n *= 2 {
		ns = append(ns, n)
	}
	return ns
}

// dhtTwoNode is Figure 6c: one process inserting into the other node's
// table, AA against RMA as collisions rise; on the built-in machine (p
// nil) or on a two-node preset (the gem5 set-up).
func dhtTwoNode(p *Preset) *Figure {
	title, base := "DHT, one process inserting into a remote table over 1 GbE: AA against RMA as collisions rise", "\n"
	if p != nil {
		title = fmt.Sprintf("DHT, one process inserting into a remote table on %s (%d Mb/s wire, PCIe Gen%d x%d, CPU at %d MHz): AA against RMA as collisions rise",
			p.Name, p.sc.Machine.Wire.RateMbps, p.sc.Machine.PCIe.Gen, p.sc.Machine.PCIe.Width, p.cpuMHz())
		base = "scenario: " + p.Name + "\n"
	}
	f := &Figure{
		Name:  "6c",
		Title: title,
		Sweep: base + `grid:
  workload.dht.collisions: [[0.05, 0.15, 0.25, 0.35, 0.5]]
  workload.dht.schemes: [[AA-SP, RMA]]
  workload.dht.inserts: [1000]
plot:
  x: collisions
  y: [inserts_per_second]
`,
		Claims: []Claim{
			{Text: "AA vs RMA on the two-node DHT", Paper: "≈3×", Tolerance: "2×–4.5× at every collision ratio", Measure: func(rows []sweep.Row) (string, bool) {
				lo, hi := math.Inf(1), 0.0
				for _, c := range collisions(rows) {
					a, r := rateAt(rows, workload.AASP, c), rateAt(rows, workload.RMA, c)
					lo, hi = min(lo, a/r), max(hi, a/r)
				}
				return fmt.Sprintf("%.1f× to %.1f×", lo, hi), within(lo, 2, 4.5) && within(hi, 2, 4.5)
			}},
			{Text: "both slow down as collisions rise", Paper: "yes", Tolerance: "each scheme slower at the highest ratio than at the lowest", Measure: func(rows []sweep.Row) (string, bool) {
				cs := collisions(rows)
				c0, c1 := cs[0], cs[len(cs)-1]
				a0, a1 := rateAt(rows, workload.AASP, c0), rateAt(rows, workload.AASP, c1)
				r0, r1 := rateAt(rows, workload.RMA, c0), rateAt(rows, workload.RMA, c1)
				return fmt.Sprintf("AA %s, RMA %s from %.0f %% to %.0f %%", pct(a1/a0), pct(r1/r0), 100*c0, 100*c1), a1 < a0 && r1 < r0
			}},
		},
	}
	f.Scenario = p
	f.OnMachine = dhtTwoNode
	return f
}
