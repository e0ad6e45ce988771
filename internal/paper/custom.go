package paper

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// Custom is a figure whose workload is not the DHT scenario: it runs its own
// experiments, one per (X, scheme), and plots Y against X: the node count
// unless XLabel names another quantity (a message size). With Categories it
// runs one per (X, category, scheme) and draws bars grouped by category.
type Custom struct {
	X       []int // the node counts, or the values XLabel names
	Schemes []workload.Scheme
	// XLabel names X in the plot and the CSV ("" is "nodes"); XUnit is
	// its unit for the axis label ("" for none).
	XLabel, XUnit string
	LogX          bool
	// Categories are the plot's X axis instead of X (topologies);
	// CategoryLabel says what they are.
	Categories    []string
	CategoryLabel string
	YLabel        string
	YUnit         string // "" is "1/s": a rate of operations
	run           func(ctx context.Context, x int, category string, s workload.Scheme) (y float64, err error)
}

// NewCustom is c with the function that runs one experiment: how a
// paper registered from another package (Register) makes its figures.
func NewCustom(c Custom, run func(ctx context.Context, x int, category string, s workload.Scheme) (float64, error)) *Custom {
	c.run = run
	return &c
}

// Name is the label of the experiment running under ctx (for a progress
// display), "" outside a figure.
func Name(ctx context.Context) string {
	name, _ := ctx.Value(nameKey{}).(string)
	return name
}

// Point is one experiment of a custom figure.
type Point struct {
	X        int
	Category string
	Scheme   workload.Scheme
	Y        float64
}

func (c *Custom) xName() string {
	if c.XLabel == "" {
		return "nodes"
	}
	return c.XLabel
}

// Unit is the Y axis's unit.
func (c *Custom) Unit() string {
	if c.YUnit == "" {
		return "1/s"
	}
	return c.YUnit
}

// Axes are the plot's axes: labels with units and scales, or the
// categories as named bars.
func (c *Custom) Axes(title string) sweep.Axes {
	y := c.YLabel + " (" + c.Unit() + ")"
	if c.Categories != nil {
		return sweep.Axes{Title: title, XLabel: c.CategoryLabel, YLabel: y, XNames: c.Categories}
	}
	x := c.xName()
	if c.XUnit != "" {
		x += " (" + c.XUnit + ")"
	}
	return sweep.Axes{Title: title, XLabel: x, YLabel: y, LogX: c.LogX}
}

func (c *Custom) categories() []string {
	if c.Categories == nil {
		return []string{""}
	}
	return c.Categories
}

// Experiments is the number of points Run simulates.
func (c *Custom) Experiments() int { return len(c.X) * len(c.categories()) * len(c.Schemes) }

// Run runs every experiment on jobs workers; the points come back in order.
func (c *Custom) Run(jobs int, done func()) ([]Point, error) {
	var pts []Point
	err := c.RunStream(context.Background(), jobs, func(p Point) { pts = append(pts, p) }, done)
	if err != nil {
		return nil, err
	}
	return pts, nil
}

// points lists the experiments in order.
func (c *Custom) points() []Point {
	var pts []Point
	for _, x := range c.X {
		for _, cat := range c.categories() {
			for _, s := range c.Schemes {
				pts = append(pts, Point{X: x, Category: cat, Scheme: s})
			}
		}
	}
	return pts
}

type nameKey struct{}

// RunStream runs every experiment on jobs workers and hands emit each
// finished point in order, as soon as the points before it have finished
// or failed (one call at a time). done, if not nil, is called after each
// experiment. When ctx is cancelled no further experiment starts and the
// running ones stop between time slices; the points finished by then are
// still emitted, in order. It returns the first failed point's error, else
// runctl.ErrInterrupted if ctx was cancelled before all finished.
func (c *Custom) RunStream(ctx context.Context, jobs int, emit func(Point), done func()) error {
	return c.RunSome(ctx, jobs, nil, nil, emit, done)
}

// Label names an experiment, as the progress display shows it and
// aaemu paper --runs matches it: "processors 32 EM3D/naive Clump,
// multi-protocol".
func (c *Custom) Label(p Point) string {
	name := fmt.Sprintf("%s %d", c.xName(), p.X)
	if p.Category != "" {
		name += " " + p.Category
	}
	return name + " " + string(p.Scheme)
}

// Labels lists the figure's experiments' labels in order.
func (c *Custom) Labels() []string {
	var out []string
	for _, p := range c.points() {
		out = append(out, c.Label(p))
	}
	return out
}

// Plan is what RunSome runs: the points it would run, and the points it
// takes from have instead.
func (c *Custom) Plan(have []Point, only func(Point) bool) (run, kept int) {
	for _, p := range c.points() {
		switch {
		case findPoint(have, p) >= 0:
			kept++
		case only == nil || only(p):
			run++
		}
	}
	return run, kept
}

func findPoint(pts []Point, p Point) int {
	for i, q := range pts {
		if q.X == p.X && q.Category == p.Category && q.Scheme == p.Scheme {
			return i
		}
	}
	return -1
}

// RunSome is RunStream over part of the experiments: a point in have
// (from an earlier run's CSV, ReadCSV) is emitted with its value and not
// run; of the others only those only accepts (nil: all) run. The points
// come out in the figure's order, the skipped ones left out; done is
// called after each point run.
func (c *Custom) RunSome(ctx context.Context, jobs int, have []Point, only func(Point) bool, emit func(Point), done func()) error {
	var pts []Point
	var kept []bool
	for _, p := range c.points() {
		if i := findPoint(have, p); i >= 0 {
			pts, kept = append(pts, have[i]), append(kept, true)
		} else if only == nil || only(p) {
			pts, kept = append(pts, p), append(kept, false)
		}
	}
	errs := make([]error, len(pts))
	ok := sweep.Ordered(ctx, len(pts), jobs, func(i int) bool {
		if kept[i] {
			return true
		}
		p := &pts[i]
		p.Y, errs[i] = c.run(context.WithValue(ctx, nameKey{}, c.Label(*p)), p.X, p.Category, p.Scheme)
		if done != nil {
			done()
		}
		return errs[i] == nil
	}, func(i int) { emit(pts[i]) })
	for i, err := range errs {
		if err != nil && !errors.Is(err, runctl.ErrInterrupted) {
			return fmt.Errorf("%s %d, %s: %w", c.xName(), pts[i].X, pts[i].Scheme, err)
		}
	}
	if ok < len(pts) {
		return runctl.ErrInterrupted
	}
	return nil
}

// ReadCSV reads the points an earlier run of the figure wrote (WriteCSV,
// or the CSV a figure writes as its points finish), for RunSome's have:
// its header must be the figure's, each line one of its experiments, at
// most once, with a finite value. name is the file's, for the errors.
func (c *Custom) ReadCSV(name string, r io.Reader) ([]Point, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted here, with the line
	head, err := cr.Read()
	if err == io.EOF {
		return nil, nil // created, nothing written yet
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !slices.Equal(head, c.CSVHeader()) {
		return nil, fmt.Errorf("%s:1: header %q, want %q (another figure's points?)", name, strings.Join(head, ","), strings.Join(c.CSVHeader(), ","))
	}
	all := c.points()
	var out []Point
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d (%s)", name, line, len(rec), len(head), strings.Join(head, ","))
		}
		var p Point
		if p.X, err = strconv.Atoi(rec[0]); err != nil {
			return nil, fmt.Errorf("%s:%d: %s %q: want an integer", name, line, c.CSVHeader()[0], rec[0])
		}
		i := 1
		if c.Categories != nil {
			p.Category, i = rec[1], 2
		}
		p.Scheme = workload.Scheme(rec[i])
		if p.Y, err = strconv.ParseFloat(rec[i+1], 64); err != nil || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
			return nil, fmt.Errorf("%s:%d: %s %q: want a finite number", name, line, c.CSVHeader()[i+1], rec[i+1])
		}
		if findPoint(all, p) < 0 {
			return nil, fmt.Errorf("%s:%d: %q is not an experiment of the figure (it has %s)", name, line, c.Label(p), strings.Join(c.Labels(), "; "))
		}
		if findPoint(out, p) >= 0 {
			return nil, fmt.Errorf("%s:%d: %q a second time", name, line, c.Label(p))
		}
		out = append(out, p)
	}
}

// runFor runs c for at most a simulated second, or until ctx is cancelled
// (runctl.ErrInterrupted); progress is the workload's, for the display. It
// fails, saying why (Cluster.NotFinished), if the processes did not finish:
// a result read from a run cut short is not a measurement.
func runFor(ctx context.Context, c *aa.System, progress func() float64) error {
	name, _ := ctx.Value(nameKey{}).(string)
	end, stopped := runctl.Run(ctx, c.Cluster, name, sim.S, progress)
	if stopped {
		return runctl.ErrInterrupted
	}
	if !c.AppsDone() {
		return errors.New(c.NotFinished(end))
	}
	return nil
}

// WriteCSV writes X, the category if any, the scheme and the measured
// value, one line a point.
func (c *Custom) WriteCSV(w io.Writer, pts []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(c.CSVHeader()); err != nil {
		return err
	}
	for _, p := range pts {
		if err := cw.Write(c.CSVRecord(p)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// CSVHeader is the CSV's first line.
func (c *Custom) CSVHeader() []string {
	head := []string{strings.ReplaceAll(c.xName(), " ", "_")}
	if c.Categories != nil {
		head = append(head, strings.ReplaceAll(c.CategoryLabel, " ", "_"))
	}
	return append(head, "scheme", strings.ReplaceAll(c.YLabel, " ", "_"))
}

// CSVRecord is a point's line of the CSV.
func (c *Custom) CSVRecord(p Point) []string {
	row := []string{strconv.Itoa(p.X)}
	if c.Categories != nil {
		row = append(row, p.Category)
	}
	return append(row, string(p.Scheme), strconv.FormatFloat(p.Y, 'g', 8, 64))
}

// Series groups the points by scheme for plotting; with categories X is
// the category's index.
func (c *Custom) Series(pts []Point) []sweep.Series {
	var out []sweep.Series
	for _, s := range c.Schemes {
		sr := sweep.Series{Name: string(s)}
		for _, p := range pts {
			if p.Scheme != s {
				continue
			}
			x := float64(p.X)
			if c.Categories != nil {
				x = float64(slices.Index(c.Categories, p.Category))
			}
			sr.X, sr.Y = append(sr.X, x), append(sr.Y, p.Y)
		}
		out = append(out, sr)
	}
	return out
}

func at(pts []Point, x int, s workload.Scheme) float64 { return atCat(pts, x, "", s) }

func atCat(pts []Point, x int, cat string, s workload.Scheme) float64 {
	for _, p := range pts {
		if p.X == x && p.Category == cat && p.Scheme == s {
			return p.Y
		}
	}
	return 0
}

// Partitions is the goroutines each figure's clusters run their nodes on
// (aaemu paper --partitions): set before the figures run. It never
// changes a result.
var Partitions = 1

// CheckEveryPoll makes the figures' cores run every check of their
// polling loops (aaemu paper --check-every-poll; machine.Cluster.
// SetPollSleep): set before the figures run. It never changes a result.
var CheckEveryPoll bool

// Configure applies the run options (Partitions, CheckEveryPoll) to a
// figure's cluster.
func Configure(c *machine.Cluster) {
	c.SetPartitions(Partitions)
	PollOption(c)
}

// PollOption applies CheckEveryPoll alone, to a cluster that keeps one
// partition.
func PollOption(c *machine.Cluster) { c.SetPollSleep(!CheckEveryPoll) }

// cluster is the machine of the custom figures: 4 cores per node, 10 Gb/s.
func cluster(nodes int) (*aa.System, error) { return clusterOf(nodes, 4, "") }

// clusterOf is a machine of nodes × cores on the transport, 10 Gb/s.
func clusterOf(nodes, cores int, transport string) (*aa.System, error) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores, spec.Transport = nodes, cores, transport
	spec.Wire.RateMbps = 10000
	c, err := aa.New(sim.NewEngine(1), spec)
	if err == nil {
		Configure(c.Cluster)
	}
	return c, err
}

// counterFigure is Figure 7d: on 2, 4 and 8 nodes × 4 processes over rc,
// or (at scale) on the given node counts × 32 processes over srd.
func counterFigure(nodes []int) *Figure {
	procs, transport, size, net := 4, "", "4 processes per node", ", 10 Gb/s"
	var on *Preset
	if nodes != nil {
		procs, transport, size = 32, machine.TransportSRD, fmt.Sprintf("32 processes per node (P = %d to %d), srd transport", 32*(nodes[0]-1), 32*(nodes[len(nodes)-1]-1))
		if on = Machine; on != nil {
			size, net = fmt.Sprintf("32 processes per node (P = %d to %d)", 32*(nodes[0]-1), 32*(nodes[len(nodes)-1]-1)), fmt.Sprintf(", on %s (%s)", on.Name, on.network())
		}
	} else {
		nodes = []int{2, 4, 8}
	}
	return &Figure{
		Name:    "7d",
		AtScale: counterFigure,
		Title:   "Access counter: accesses per second, " + size + " on the other nodes writing node 0's array" + net,
		Custom: &Custom{
			X:       nodes,
			Schemes: []workload.Scheme{workload.NoCnt, workload.AAPoll, workload.AKV, workload.Allreduce, workload.RMA},
			YLabel:  "accesses per second",
			run: func(ctx context.Context, nodes int, _ string, s workload.Scheme) (float64, error) {
				c, err := clusterOn(on, nodes, procs, transport)
				if err != nil {
					return 0, err
				}
				k, err := workload.SetupCounter(c, workload.CounterConfig{Scheme: s, Elements: 4096, Accesses: 100, Procs: procs, Seed: 1})
				if err != nil {
					return 0, err
				}
				if err := runFor(ctx, c, k.Progress); err != nil {
					return 0, err
				}
				r := k.Result()
				if !r.Verified {
					return 0, fmt.Errorf("the counts are wrong: %s", r.Problem)
				}
				return r.AccessesPerSec, nil
			},
		},
		PointClaims: []PointClaim{
			{Text: "AA-Poll outperforms A-KV, RMA and Allreduce", Paper: "yes", Tolerance: "strictly ahead of each at every size", Measure: func(pts []Point) (string, bool) {
				ok := true
				var parts []string
				for _, n := range xs(pts) {
					a := at(pts, n, workload.AAPoll)
					best, who := 0.0, workload.Scheme("")
					for _, s := range []workload.Scheme{workload.AKV, workload.RMA, workload.Allreduce} {
						if v := at(pts, n, s); v > best {
							best, who = v, s
						}
					}
					parts = append(parts, fmt.Sprintf("%d nodes %.2f× %s", n, a/best, who))
					ok = ok && a > best
				}
				return "AA-Poll vs the best of them: " + strings.Join(parts, ", "), ok
			}},
		},
	}
}

// getLogFigure is Figure 9a: on 2, 4 and 8 nodes × 4 processes over rc,
// or (at scale) on the given node counts × 32 processes over srd.
func getLogFigure(nodes []int) *Figure {
	procs, transport, size, net := 4, "", "4 processes per node", ", 10 Gb/s"
	var on *Preset
	if nodes != nil {
		procs, transport, size = 32, machine.TransportSRD, fmt.Sprintf("32 processes per node (P = %d to %d), srd transport", 32*nodes[0], 32*nodes[len(nodes)-1])
		if on = Machine; on != nil {
			size, net = fmt.Sprintf("32 processes per node (P = %d to %d)", 32*nodes[0], 32*nodes[len(nodes)-1]), fmt.Sprintf(", on %s (%s)", on.Name, on.network())
		}
	} else {
		nodes = []int{2, 4, 8}
	}
	return &Figure{
		Name:    "9a",
		AtScale: getLogFigure,
		Title:   "Logging gets: gets per second, " + size + " getting from random other nodes" + net,
		Custom: &Custom{
			X:       nodes,
			Schemes: []workload.Scheme{workload.NoFT, workload.AAPoll, workload.RMA},
			YLabel:  "gets per second",
			run: func(ctx context.Context, nodes int, _ string, s workload.Scheme) (float64, error) {
				c, err := clusterOn(on, nodes, procs, transport)
				if err != nil {
					return 0, err
				}
				g, err := workload.SetupGetLog(c, workload.GetLogConfig{Scheme: s, Gets: 50, Procs: procs, Words: 64, Seed: 1})
				if err != nil {
					return 0, err
				}
				if err := runFor(ctx, c, g.Progress); err != nil {
					return 0, err
				}
				r := g.Result()
				if !r.Verified {
					return 0, fmt.Errorf("the logs are wrong: %s", r.Problem)
				}
				return r.GetsPerSec, nil
			},
		},
		PointClaims: []PointClaim{
			{Text: "AA close to No-FT", Paper: "close", Tolerance: "at least 90 % of No-FT's rate at every size", Measure: func(pts []Point) (string, bool) {
				ok := true
				var parts []string
				for _, n := range xs(pts) {
					r := at(pts, n, workload.AAPoll) / at(pts, n, workload.NoFT)
					parts = append(parts, fmt.Sprintf("%d nodes %s", n, pct(r)))
					ok = ok && r >= 0.9
				}
				return "AA vs No-FT: " + strings.Join(parts, ", "), ok
			}},
			{Text: "AA the best of the logging schemes", Paper: "yes", Tolerance: "strictly ahead of RMA at every size", Measure: func(pts []Point) (string, bool) {
				ok := true
				var parts []string
				for _, n := range xs(pts) {
					r := at(pts, n, workload.AAPoll) / at(pts, n, workload.RMA)
					parts = append(parts, fmt.Sprintf("%d nodes %.2f×", n, r))
					ok = ok && r > 1
				}
				return "AA vs RMA: " + strings.Join(parts, ", "), ok
			}},
		},
	}
}

// PointClaim is a claim measured on a custom figure's points.
type PointClaim struct {
	Text, Paper, Tolerance string
	Measure                func(pts []Point) (string, bool)
	// Calibrated marks a claim whose paper's value was an input of the
	// model (a calibration), not a prediction: its verdict is
	// "calibrated" (Measure's bool then says whether the calibration
	// reproduces it), never "yes".
	Calibrated bool
}

// CheckPoints measures every claim of a custom figure.
func (f *Figure) CheckPoints(pts []Point) []Result {
	out := make([]Result, len(f.PointClaims))
	for i, c := range f.PointClaims {
		m, ok := c.Measure(pts)
		out[i] = Result{Claim: Claim{Text: c.Text, Paper: c.Paper, Tolerance: c.Tolerance}, Measured: m, Holds: ok, Calibrated: c.Calibrated}
	}
	return out
}

// xs lists the points' X values in order.
func xs(pts []Point) []int {
	var out []int
	for _, p := range pts {
		if !slices.Contains(out, p.X) {
			out = append(out, p.X)
		}
	}
	return out
}
