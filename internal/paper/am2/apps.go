package am2paper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/aaemu/aaemu/examples/machines"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
	"github.com/aaemu/aaemu/workload/splitc"
)

// The application figures (seed 000, Tables 4–6): the Split-C stand-ins
// of workload/splitc on the paper's platforms. Table 4 counts the stores
// of each run on the Clump (the counting runtime: the programs send the
// same stores on the machine, which a test checks); Tables 5 and 6 time
// them on the machine. A platform or protocol aaemu cannot run yet is
// left out of a figure, and the claims that need it say so.

// appSizes are the runs' inputs: Table 3's (EM3D's step count is not in
// the paper: 10), or reduced ones that keep every mechanism and take
// seconds. Table 6's reduced EM3D has 100 nodes a processor, not Table
// 5's 250: its four EM3D runs of 32 processors were three quarters of its
// time, and its two EM3D claims measure the same at both (the good layout
// −12 % against −14 %, the Clump against the NOW +89 % at both).
func appSizes(reduced bool) (table4, table5, table6 splitc.Sizes) {
	if reduced {
		t5 := splitc.Sizes{FFTN: 32, CommSide: 8, CompSide: 40, EM3DNodes: 250, EM3DSteps: 2}
		t6 := t5
		t6.EM3DNodes = 100
		return splitc.Sizes{FFTN: 64, CommSide: 16, CompSide: 80, EM3DNodes: 500, EM3DSteps: 2}, t5, t6
	}
	return splitc.PaperSizes, splitc.PaperSizes, splitc.PaperSizes
}

func appFigures(reduced bool) []*paper.Figure {
	t4, t5, t6 := appSizes(reduced)
	return []*paper.Figure{table4Figure(t4), table5Figure(t5, reduced), table6Figure(t6)}
}

// The statistics of Table 4, per processor (the figure's series).
const (
	netMean   workload.Scheme = "network short, mean"
	netMin    workload.Scheme = "network short, min"
	netMax    workload.Scheme = "network short, max"
	locMean   workload.Scheme = "local short, mean"
	locMin    workload.Scheme = "local short, min"
	locMax    workload.Scheme = "local short, max"
	netBulk   workload.Scheme = "network bulk, mean"
	localBulk workload.Scheme = "local bulk, mean"
)

var table4Stats = []workload.Scheme{netMean, netMin, netMax, locMean, locMin, locMax, netBulk, localBulk}

// tallies caches each run's counts: the figure asks for one statistic a
// point.
type tallies struct {
	mu   sync.Mutex
	runs map[splitc.App]*tallyOnce
}

type tallyOnce struct {
	once   sync.Once
	counts []splitc.Split
	err    error
}

func (t *tallies) get(app splitc.App, z splitc.Sizes) ([]splitc.Split, error) {
	t.mu.Lock()
	o := t.runs[app]
	if o == nil {
		o = &tallyOnce{}
		t.runs[app] = o
	}
	t.mu.Unlock()
	o.once.Do(func() {
		run, err := splitc.NewRun(app, splitc.Clump.Layout, z)
		if err != nil {
			o.err = err
			return
		}
		res, err := splitc.Tally(run.Procs, run.Program)
		if err != nil {
			o.err = err
			return
		}
		if err := run.Check(); err != nil {
			o.err = err
			return
		}
		for i, c := range res.Counts {
			o.counts = append(o.counts, c.Split(splitc.Clump.Layout, i))
		}
	})
	return o.counts, o.err
}

func stat(s []splitc.Split, which workload.Scheme) float64 {
	var vals []float64
	for _, x := range s {
		switch which {
		case netMean, netMin, netMax:
			vals = append(vals, float64(x.NetShort))
		case locMean, locMin, locMax:
			vals = append(vals, float64(x.LocalShort))
		case netBulk:
			vals = append(vals, float64(x.NetBulk))
		case localBulk:
			vals = append(vals, float64(x.LocalBulk))
		}
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range vals {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	switch which {
	case netMin, locMin:
		return lo
	case netMax, locMax:
		return hi
	}
	return sum / float64(len(vals))
}

func appNames() []string {
	var out []string
	for _, a := range splitc.Apps {
		out = append(out, string(a))
	}
	return out
}

func val(pts []paper.Point, cat string, s workload.Scheme) (float64, bool) {
	for _, p := range pts {
		if p.Category == cat && p.Scheme == s {
			return p.Y, true
		}
	}
	return math.NaN(), false
}

// paperTable4 is Table 4 (000:L199–L208): per processor on the Clump.
var paperTable4 = map[splitc.App]struct{ net, netMin, netMax, loc, locMin float64 }{
	splitc.FFT3D:     {3270, 3072, 3468, 954, 896},
	splitc.CONComm:   {67236, 51541, 240919, 50138, 43614},
	splitc.CONComp:   {5993, 5601, 6498, 5890, 5351},
	splitc.EM3DNaive: {608817, 199600, 1015500, 1013094, 804065},
	splitc.EM3DGood:  {407369, 0, 818500, 1216549, 1198407},
}

func localPct(pts []paper.Point, app splitc.App) float64 {
	n, _ := val(pts, string(app), netMean)
	l, _ := val(pts, string(app), locMean)
	return 100 * l / (n + l)
}

// table4Figure is Table 4: each run's messages per processor on the Clump
// (4 E5000s × 8), network and local: short (short stores and the reply
// to every store) and bulk.
func table4Figure(z splitc.Sizes) *paper.Figure {
	t := &tallies{runs: map[splitc.App]*tallyOnce{}}
	scale := math.Pow(float64(z.FFTN)/256, 3)
	return &paper.Figure{
		Name: "table4",
		Title: fmt.Sprintf("Table 4: messages per processor on the Clump (4 × 8), network and local (3D FFT %d³, CON %d³ and %d² a processor, EM3D %d nodes a processor, %d steps)",
			z.FFTN, z.CommSide, z.CompSide, z.EM3DNodes, z.EM3DSteps),
		Custom: paper.NewCustom(paper.Custom{
			X: []int{32}, XLabel: "processors", Categories: appNames(), CategoryLabel: "run",
			Schemes: table4Stats, YLabel: "messages per processor", YUnit: "messages",
		}, func(ctx context.Context, _ int, cat string, s workload.Scheme) (float64, error) {
			if ctx.Err() != nil {
				return 0, runctl.ErrInterrupted
			}
			c, err := t.get(splitc.App(cat), z)
			if err != nil {
				return 0, err
			}
			return stat(c, s), nil
		}),
		PointClaims: []paper.PointClaim{
			{Text: "3D FFT bulk stores per processor, network and local (two transposes, 4 kB each)", Paper: "3,072 and 896",
				Tolerance: fmt.Sprintf("exact: the paper's × (n/256)³ = %.0f and %.0f", 3072*scale, 896*scale), Measure: func(pts []paper.Point) (string, bool) {
					n, _ := val(pts, string(splitc.FFT3D), netBulk)
					l, _ := val(pts, string(splitc.FFT3D), localBulk)
					return fmt.Sprintf("%.0f and %.0f", n, l), n == 3072*scale && l == 896*scale
				}},
			{Text: "3D FFT short messages per processor, network and local, fewest (a reply to each bulk store)", Paper: "3,072 and 896",
				Tolerance: fmt.Sprintf("exact: the paper's × (n/256)³ = %.0f and %.0f", 3072*scale, 896*scale), Measure: func(pts []paper.Point) (string, bool) {
					n, _ := val(pts, string(splitc.FFT3D), netMin)
					l, _ := val(pts, string(splitc.FFT3D), locMin)
					return fmt.Sprintf("%.0f and %.0f", n, l), n == 3072*scale && l == 896*scale
				}},
			{Text: "EM3D: share of local short messages, naive → good layout", Paper: "62.5 % → 74.9 %", Tolerance: "good above naive, each within ±15 points", Measure: func(pts []paper.Point) (string, bool) {
				a, b := localPct(pts, splitc.EM3DNaive), localPct(pts, splitc.EM3DGood)
				return fmt.Sprintf("%.1f %% → %.1f %%", a, b), b > a && within(a, 47.5, 77.5) && within(b, 59.9, 89.9)
			}},
			{Text: "A16 EM3D: the good layout's network maximum per processor against the naive one's, and its minimum", Paper: "×0.81 (1,015,500 → 818,500), min 0",
				Tolerance: "×0.65–0.95, min exactly 0", Measure: func(pts []paper.Point) (string, bool) {
					a, _ := val(pts, string(splitc.EM3DNaive), netMax)
					b, _ := val(pts, string(splitc.EM3DGood), netMax)
					m, _ := val(pts, string(splitc.EM3DGood), netMin)
					return fmt.Sprintf("×%.2f (%.0f → %.0f), min %.0f", b/a, a, b, m), within(b/a, 0.65, 0.95) && m == 0
				}},
			{Text: "CON: share of local short messages, comm-bound and comp-bound", Paper: "42.7 % and 49.5 %", Tolerance: "each within ±15 points", Measure: func(pts []paper.Point) (string, bool) {
				a, b := localPct(pts, splitc.CONComm), localPct(pts, splitc.CONComp)
				return fmt.Sprintf("%.1f %% and %.1f %%", a, b), within(a, 27.7, 57.7) && within(b, 34.5, 64.5)
			}},
			{Text: "CON: the comm-bound run's network messages more imbalanced than the comp-bound run's (max / mean)", Paper: "3.58× vs 1.08×", Tolerance: "comm-bound's ratio the larger", Measure: func(pts []paper.Point) (string, bool) {
				r := func(app splitc.App) float64 {
					mx, _ := val(pts, string(app), netMax)
					mn, _ := val(pts, string(app), netMean)
					return mx / mn
				}
				a, b := r(splitc.CONComm), r(splitc.CONComp)
				return fmt.Sprintf("%.2f× vs %.2f×", a, b), a > b
			}},
		},
	}
}

// Protocols of AM-II the timed runs compare.
type protocol string

const (
	shmOnly protocol = "shared memory only"
	multi   protocol = "multi-protocol"
	netOnly protocol = "Myrinet only"
)

// amConfig is AM-II configured for a config: shared memory only (one
// SMP, no network polls), multi-protocol (shared memory inside an SMP,
// the network between, the network polled by the adaptive policy) or the
// network only (a NOW of single-CPU nodes, no shared-memory polls).
func amConfig(c config) (splitc.AMConfig, error) {
	l := c.platform.Layout
	spec := am2.DefaultSpec()
	switch {
	case c.proto == shmOnly && l.Nodes == 1:
		spec.Poll = am2.Policy{Protocols: am2.ShmOnly}
	case c.proto == multi:
		spec.Poll = am2.Policy{} // adaptive
	case c.proto == netOnly && l.PerNode == 1:
		spec.Poll = am2.Policy{Protocols: am2.NetOnly}
	default:
		return splitc.AMConfig{}, fmt.Errorf("%s on %s: not one of seed 000's configurations", c.proto, l)
	}
	return splitc.AMConfig{Spec: spec}, nil
}

// machineFor is the config's machine: its nodes (E5000s with three
// Myrinet NICs each, 000:L40, or U170s with one) and their network.
func machineFor(c config) (machine.Spec, error) {
	spec, err := nodeSpec(c.platform.NOW)
	if err != nil {
		return machine.Spec{}, err
	}
	spec = am2.WithMyrinet(c.platform.Machine(spec))
	if !c.platform.NOW {
		spec.StartXNICs = am2.ClumpNICs
	}
	return spec, nil
}

// presets are the node specs: the E5000 and the U170.
var presets struct {
	once       sync.Once
	e5000, now machine.Spec
	err        error
}

func nodeSpec(now bool) (machine.Spec, error) {
	presets.once.Do(func() {
		e, err := scenario.ParseScenario("e5000.yaml", machines.E5000)
		if err != nil {
			presets.err = err
			return
		}
		u, err := scenario.ParseScenario("u170.yaml", machines.U170)
		if err != nil {
			presets.err = err
			return
		}
		presets.e5000, presets.now = e.ClusterSpec(), u.ClusterSpec()
	})
	if now {
		return presets.now, presets.err
	}
	return presets.e5000, presets.err
}

// config is a platform under a protocol: a series of Tables 5 and 6.
type config struct {
	name     workload.Scheme
	platform splitc.Platform
	proto    protocol
}

var (
	smpShm   = config{"SMP, shared memory only", splitc.SMP, shmOnly}
	smpMulti = config{"SMP, multi-protocol", splitc.SMP, multi}
	now8     = config{"NOW of 8, multi-protocol", splitc.NOW8, multi}
	now8Net  = config{"NOW of 8, Myrinet only", splitc.NOW8, netOnly}
	clump    = config{"Clump, multi-protocol", splitc.Clump, multi}
	now32    = config{"NOW of 32, Myrinet only", splitc.NOW32, netOnly}
)

// runTimed runs app on the config's machine and returns its run time in
// seconds, its result checked.
func runTimed(ctx context.Context, app splitc.App, c config, z splitc.Sizes) (float64, error) {
	cfg, err := amConfig(c)
	if err != nil {
		return 0, err
	}
	spec, err := machineFor(c)
	if err != nil {
		return 0, err
	}
	cl, err := machine.New(sim.NewEngine(1), spec)
	if err != nil {
		return 0, err
	}
	paper.PollOption(cl)
	run, err := splitc.NewRun(app, c.platform.Layout, z)
	if err != nil {
		return 0, err
	}
	cfg.Stop = func() bool { return ctx.Err() != nil }
	res, err := splitc.RunAM(cl, c.platform.Layout, cfg, run.Program)
	if errors.Is(err, splitc.ErrStopped) {
		return 0, runctl.ErrInterrupted
	}
	if err != nil {
		return 0, err
	}
	if err := run.Check(); err != nil {
		return 0, err
	}
	return float64(res.Elapsed) / float64(sim.S), nil
}

// probes caches whether each config runs: a two-rank exchange on its
// platform's machine under its protocol.
var probes struct {
	mu   sync.Mutex
	errs map[config]error
	done map[config]bool
}

func available(c config) error {
	probes.mu.Lock()
	defer probes.mu.Unlock()
	if probes.done[c] {
		return probes.errs[c]
	}
	if probes.done == nil {
		probes.done, probes.errs = map[config]bool{}, map[config]error{}
	}
	err := probe(c)
	probes.done[c], probes.errs[c] = true, err
	return err
}

// probe runs a store each way between the first rank and the last on the
// config's platform.
func probe(c config) error {
	cfg, err := amConfig(c)
	if err != nil {
		return err
	}
	spec, err := machineFor(c)
	if err != nil {
		return err
	}
	cl, err := machine.New(sim.NewEngine(1), spec)
	if err != nil {
		return err
	}
	paper.PollOption(cl)
	_, err = splitc.RunAM(cl, c.platform.Layout, cfg, func(r splitc.Rank) error {
		if err := r.Handle(1, func(*splitc.Msg) {}); err != nil {
			return err
		}
		if _, err := r.Sync(splitc.Sum, func() uint64 { return 0 }); err != nil {
			return err
		}
		last := r.Procs() - 1
		if r.ID() == 0 || r.ID() == last {
			if err := r.Store(last-r.ID(), 1); err != nil {
				return err
			}
		}
		_, err := r.Sync(splitc.Sum, func() uint64 { return 0 })
		return err
	})
	return err
}

// timedFigure is a figure of run times for the configs that run; the
// claims of those that do not say why.
func timedFigure(name, title string, apps []splitc.App, configs []config, z splitc.Sizes, claims func(missing map[workload.Scheme]error) []paper.PointClaim) (*paper.Figure, error) {
	var schemes []workload.Scheme
	missing := map[workload.Scheme]error{}
	byName := map[workload.Scheme]config{}
	for _, c := range configs {
		byName[c.name] = c
		if err := available(c); err != nil {
			missing[c.name] = err
			continue
		}
		schemes = append(schemes, c.name)
	}
	var cats []string
	for _, a := range apps {
		cats = append(cats, string(a))
	}
	f := &paper.Figure{Name: name, Title: title, PointClaims: claims(missing)}
	if len(schemes) == 0 {
		var rest []string
		for _, c := range configs[1:] {
			rest = append(rest, fmt.Sprintf("%s: %v", c.name, missing[c.name]))
		}
		return f, fmt.Errorf("no platform of table %s runs yet: %s: %w; %s", strings.TrimPrefix(name, "table"), configs[0].name, missing[configs[0].name], strings.Join(rest, "; "))
	}
	f.Custom = paper.NewCustom(paper.Custom{
		X: []int{configs[0].platform.Layout.Procs()}, XLabel: "processors", Categories: cats, CategoryLabel: "run",
		Schemes: schemes, YLabel: "run time", YUnit: "s",
	}, func(ctx context.Context, _ int, cat string, s workload.Scheme) (float64, error) {
		return runTimed(ctx, splitc.App(cat), byName[s], z)
	})
	return f, nil
}

// notMeasured is a claim's verdict when a series it needs does not run.
func notMeasured(missing map[workload.Scheme]error, need ...config) (string, bool) {
	for _, c := range need {
		if err := missing[c.name]; err != nil {
			return fmt.Sprintf("not measured: %s does not run (%v)", c.name, err), true
		}
	}
	return "", false
}

func ratioClaim(text, paperText, tol string, missing map[workload.Scheme]error, a, b config, apps []splitc.App, ok func(app splitc.App, r float64) bool) paper.PointClaim {
	return paper.PointClaim{Text: text, Paper: paperText, Tolerance: tol, Measure: func(pts []paper.Point) (string, bool) {
		if m, skip := notMeasured(missing, a, b); skip {
			return m, false
		}
		var parts []string
		all := true
		for _, app := range apps {
			x, _ := val(pts, string(app), a.name)
			y, _ := val(pts, string(app), b.name)
			r := x / y
			parts = append(parts, fmt.Sprintf("%s %+.0f %%", app, 100*(r-1)))
			all = all && ok(app, r)
		}
		return strings.Join(parts, ", "), all
	}}
}

// table5Apps are Table 5's runs: EM3D in the good layout (2×2×2 on 8).
var table5Apps = []splitc.App{splitc.FFT3D, splitc.CONComm, splitc.CONComp, splitc.EM3DGood}

// paperTable5 is Table 5 (000:L219–L226), seconds: SMP shm, SMP multi,
// NOW multi, NOW Myrinet.
var paperTable5 = map[splitc.App][4]float64{
	splitc.FFT3D:    {8.7, 9.0, 7.0, 6.76},
	splitc.CONComm:  {1.96, 2.1, 4.01, 4.01},
	splitc.CONComp:  {1.40, 1.44, 1.18, 1.19},
	splitc.EM3DGood: {7.7, 8.6, 33.9, 33.8},
}

// table5Figure is Table 5: one E5000 of 8 against a NOW of 8 U170s.
func table5Figure(z splitc.Sizes, reduced bool) *paper.Figure {
	title := fmt.Sprintf("Table 5: run times on one SMP of 8 and a NOW of 8 (3D FFT %d³, CON %d³ and %d² a processor, EM3D %d nodes a processor, %d steps)", z.FFTN, z.CommSide, z.CompSide, z.EM3DNodes, z.EM3DSteps)
	f, err := timedFigure("table5", title, table5Apps, []config{smpShm, smpMulti, now8, now8Net}, z, func(missing map[workload.Scheme]error) []paper.PointClaim {
		return table5Claims(missing, reduced)
	})
	if err != nil {
		failing(f, smpShm, err)
	}
	return f
}

// table5Claims are Table 5's claims; missing holds the series that do
// not run, and why.
func table5Claims(missing map[workload.Scheme]error, reduced bool) []paper.PointClaim {
	cs := []paper.PointClaim{
		ratioClaim("A13 multi-protocol against shared memory only on one SMP", "+3 % to +12 % (FFT +3.4, CON/comm +7.1, CON/comp +2.9, EM3D +11.7)", "0 % to +15 % each",
			missing, smpMulti, smpShm, table5Apps, func(_ splitc.App, r float64) bool { return within(r, 1, 1.15) }),
		ratioClaim("the SMP (multi-protocol) against the NOW (Myrinet only)", "FFT +33 %, CON/comm −48 %, CON/comp +21 %, EM3D −75 %", "each the paper's sign, its ratio within ×/÷ 1.5",
			missing, smpMulti, now8Net, table5Apps, func(app splitc.App, r float64) bool {
				p := paperTable5[app][1] / paperTable5[app][3]
				return (r > 1) == (p > 1) && within(r/p, 1/1.5, 1.5)
			}),
		ratioClaim("multi-protocol against Myrinet only on the NOW", "FFT +4 %, the others ±1 %", "−3 % to +10 % each",
			missing, now8, now8Net, table5Apps, func(_ splitc.App, r float64) bool { return within(r, 0.97, 1.10) }),
	}
	if !reduced {
		cs = append(cs, paper.PointClaim{Text: "run times on one SMP, shared memory only, at Table 3's inputs (EM3D's steps are not in the paper)", Paper: "FFT 8.7 s, CON/comm 1.96 s, CON/comp 1.40 s",
			Tolerance: "each ×0.5–×2 (stand-ins, not the Split-C codes)", Measure: func(pts []paper.Point) (string, bool) {
				var parts []string
				all := true
				for _, app := range table5Apps[:3] {
					x, _ := val(pts, string(app), smpShm.name)
					parts = append(parts, fmt.Sprintf("%s %.2f s", app, x))
					all = all && within(x/paperTable5[app][0], 0.5, 2)
				}
				return strings.Join(parts, ", "), all
			}})
	}
	return cs
}

// failing makes figure f, none of whose series runs, say why when run:
// it stays listed.
func failing(f *paper.Figure, first config, err error) {
	f.Custom = paper.NewCustom(paper.Custom{X: []int{first.platform.Layout.Procs()}, XLabel: "processors", Categories: []string{string(splitc.FFT3D)}, CategoryLabel: "run",
		Schemes: []workload.Scheme{first.name}, YLabel: "run time", YUnit: "s"},
		func(context.Context, int, string, workload.Scheme) (float64, error) { return 0, err })
}

// table6Figure is Table 6: the Clump (4 E5000s × 8, multi-protocol)
// against a NOW of 32 U170s (Myrinet only).
func table6Figure(z splitc.Sizes) *paper.Figure {
	apps := splitc.Apps
	title := fmt.Sprintf("Table 6: run times on the Clump (4 × 8) and a NOW of 32 (3D FFT %d³, CON %d³ and %d² a processor, EM3D %d nodes a processor, %d steps)", z.FFTN, z.CommSide, z.CompSide, z.EM3DNodes, z.EM3DSteps)
	f, err := timedFigure("table6", title, apps, []config{clump, now32}, z, table6Claims)
	if err != nil {
		failing(f, clump, err)
	}
	return f
}

// table6Claims are Table 6's claims; missing holds the series that do
// not run, and why.
func table6Claims(missing map[workload.Scheme]error) []paper.PointClaim {
	get := func(pts []paper.Point, app splitc.App, c config) float64 {
		v, _ := val(pts, string(app), c.name)
		return v
	}
	return []paper.PointClaim{
		ratioClaim("A14 Clump against NOW, 3D FFT (three processors a NIC)", "×3.1 (6.8 s vs 2.2 s)", "×2–×4",
			missing, clump, now32, []splitc.App{splitc.FFT3D}, func(_ splitc.App, r float64) bool { return within(r, 2, 4) }),
		ratioClaim("Clump against NOW, CON", "comm +95 %, comp +108 %", "the Clump slower, each ×1.4–×3",
			missing, clump, now32, []splitc.App{splitc.CONComm, splitc.CONComp}, func(_ splitc.App, r float64) bool { return within(r, 1.4, 3) }),
		{Text: "A15 EM3D on the Clump: the good layout against the naive one", Paper: "−30 % (38 s vs 54 s)", Tolerance: "−15 % to −45 %", Measure: func(pts []paper.Point) (string, bool) {
			if m, skip := notMeasured(missing, clump); skip {
				return m, false
			}
			r := get(pts, splitc.EM3DGood, clump) / get(pts, splitc.EM3DNaive, clump)
			return fmt.Sprintf("%+.0f %%", 100*(r-1)), within(r, 0.55, 0.85)
		}},
		{Text: "EM3D best against best: Clump against NOW", Paper: "−21 % (38 s vs 48 s)", Tolerance: "−10 % to −35 %", Measure: func(pts []paper.Point) (string, bool) {
			if m, skip := notMeasured(missing, clump, now32); skip {
				return m, false
			}
			c := min(get(pts, splitc.EM3DGood, clump), get(pts, splitc.EM3DNaive, clump))
			n := min(get(pts, splitc.EM3DGood, now32), get(pts, splitc.EM3DNaive, now32))
			return fmt.Sprintf("%+.0f %%", 100*(c/n-1)), within(c/n, 0.65, 0.9)
		}},
	}
}
