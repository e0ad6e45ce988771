// Package sweep runs a scenario over a grid of parameter values: any scenario
// key, named by its dotted YAML path, takes each of a list of values; every
// point of the cross product runs every experiment of the scenario. Points
// run in parallel, but results are kept in grid order, so the tables and
// plots of two runs are byte-identical whatever the scheduling.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// MaxPoints bounds a grid's cross product.
const MaxPoints = 100_000

// Spec is a sweep file.
type Spec struct {
	// Scenario is the base scenario file, relative to the sweep file; empty
	// means the built-in default.
	Scenario string `yaml:"scenario"`
	// Grid lists the swept keys in order; the first varies slowest.
	Grid []Axis   `yaml:"-"`
	Plot PlotSpec `yaml:"plot"`
	// Until bounds each experiment's simulated time ("10s" by default).
	Until string `yaml:"until"`
	// Seeds, when given, runs every point once per seed: a randomised
	// workload measured on one seed is an anecdote. The tables then have a
	// seed column and a summary of the mean and its confidence interval.
	Seeds []uint64 `yaml:"-"`

	// Partitions is the goroutines each point's cluster runs its nodes on
	// (a run option: it never changes a result).
	Partitions int `yaml:"-"`
	// CheckEveryPoll makes each point's cores run every check of their
	// polling loops (scenario.Scenario.CheckEveryPoll): a run option that
	// never changes a result.
	CheckEveryPoll bool `yaml:"-"`
	// Run options: Parts, when not empty, is a directory where every task
	// leaves its rows and manifest as it finishes, and from which a task
	// already done with the same inputs is taken instead of run (resume);
	// Shard runs only the tasks whose index is Shard.I modulo Shard.N.
	Parts string `yaml:"-"`
	Shard Shard  `yaml:"-"`

	base     scenario.Scenario
	file     string               // the sweep file, for errors
	gridLine int                  // the line of grid
	baseFile string               // the base scenario's path, or ""
	baseLine func(key string) int // lines of the base scenario's keys
	data     []byte               // the sweep file
	baseData []byte               // the base scenario file, or nil
}

// MaxSeeds bounds a sweep's seeds per point.
const MaxSeeds = 1000

// Axis is one swept key and its values, kept as YAML so that a value can be
// anything the key takes (a number, a string, a list of schemes).
type Axis struct {
	Key    string
	Values []*yaml.Node
}

// CollisionsX as plot.x puts each experiment's collision ratio (from the
// scenario's list) on the X axis.
const CollisionsX = "collisions"

// PlotSpec says what the plots show: one plot per Y metric against the X
// key, one line per combination of the other keys, scheme and collisions.
type PlotSpec struct {
	X    string   `yaml:"x"`
	Y    []string `yaml:"y"`
	LogX bool     `yaml:"log_x"`
	LogY bool     `yaml:"log_y"`
}

// Point is one grid point: the value of each axis, as written in the file.
type Point []string

// Row is one experiment at one point: a DHT result, or another workload's.
type Row struct {
	Point    Point                   `json:"point"`
	Seed     *uint64                 `json:"seed,omitempty"` // with Spec.Seeds
	Result   workload.DHTResult      `json:"result,omitzero"`
	Workload scenario.WorkloadResult `json:"workload,omitzero"`
}

// scheme is the row's scheme, whatever its workload.
func (r *Row) scheme() workload.Scheme {
	if r.Workload.Workload != "" {
		return r.Workload.Scheme
	}
	return r.Result.Scheme
}

// Scheme is the row's scheme, whatever its workload.
func (r Row) Scheme() workload.Scheme { return r.scheme() }

// Kind is the workload the sweep runs.
func (s *Spec) Kind() string { return s.base.Workload.Kind }

// topKeys are the keys of a sweep file.
var topKeys = []string{"scenario", "grid", "plot", "until", "seeds"}

// Parse reads a sweep file. dir is where the base scenario is looked up.
func Parse(name string, data []byte, dir string) (*Spec, error) {
	return ParseWith(name, data, func(p string) (string, []byte, error) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := os.ReadFile(p)
		return p, b, err
	})
}

// ParseWith is Parse with the base scenario read by load, which is given
// the sweep's scenario value and returns its path and contents.
// Every mistake is an error "file:line: dotted.key: what is wrong (what is
// allowed)", a grid's keys and values named as grid.KEY and grid.KEY[i];
// every point of the grid is checked as a scenario before anything runs.
func ParseWith(name string, data []byte, load func(scenario string) (string, []byte, error)) (*Spec, error) {
	root, err := input.YAMLTree(name, data)
	if err != nil {
		return nil, err
	}
	s := &Spec{Until: "10s", file: name}
	fail := func(line int, key, allowed, format string, a ...any) error {
		return &input.Error{File: name, Line: line, Key: key, Problem: fmt.Sprintf(format, a...), Allowed: allowed}
	}
	m := input.Resolve(root)
	if m == nil || m.Kind != yaml.MappingNode {
		line := 0
		if m != nil {
			line = m.Line
		}
		return nil, fail(line, "", "a section of scenario, grid, plot, until and seeds", "not a section of keys")
	}
	lines := map[string]int{}
	var plotDec *input.Decoder
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := input.Resolve(m.Content[i]), input.Resolve(m.Content[i+1])
		if k == nil || k.Kind != yaml.ScalarNode {
			return nil, fail(m.Line, "", "scenario, grid, plot, until", "a key that is not a name")
		}
		if first, ok := lines[k.Value]; ok {
			return nil, fail(k.Line, k.Value, fmt.Sprintf("once; first at line %d", first), "given twice")
		}
		lines[k.Value] = k.Line
		if v == nil {
			continue
		}
		switch k.Value {
		case "scenario", "until":
			if v.Kind != yaml.ScalarNode {
				what := "a scenario file, relative to the sweep file"
				if k.Value == "until" {
					what = "a time such as 10s"
				}
				return nil, fail(v.Line, k.Value, what, "not a single value")
			}
			if k.Value == "scenario" {
				s.Scenario = v.Value
			} else {
				s.Until = v.Value
			}
		case "seeds":
			if v.Kind != yaml.SequenceNode || len(v.Content) == 0 || len(v.Content) > MaxSeeds {
				return nil, fail(v.Line, "seeds", fmt.Sprintf("a list of 1 to %d seeds", MaxSeeds), "not a list of seeds")
			}
			for i, n := range v.Content {
				seed, err := strconv.ParseUint(n.Value, 10, 64)
				key := fmt.Sprintf("seeds[%d]", i)
				if n.Kind != yaml.ScalarNode || err != nil {
					return nil, fail(n.Line, key, "a whole number from 0 to 2^64−1", "%q is not a seed", n.Value)
				}
				if slices.Contains(s.Seeds, seed) {
					return nil, fail(n.Line, key, "each seed once", "%d given twice", seed)
				}
				s.Seeds = append(s.Seeds, seed)
			}
		case "plot":
			plotDec = &input.Decoder{File: name, Tag: "yaml"}
			if err := plotDec.Decode(v, "plot", &s.Plot); err != nil {
				return nil, err
			}
		case "grid":
			s.gridLine = k.Line
			if v.Kind != yaml.MappingNode {
				return nil, fail(v.Line, "grid", "a section from scenario keys to lists of values", "not a section")
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				gk, gv := input.Resolve(v.Content[j]), input.Resolve(v.Content[j+1])
				if gk == nil || gk.Kind != yaml.ScalarNode {
					return nil, fail(v.Line, "grid", "scenario keys", "a key that is not a name")
				}
				key := "grid." + gk.Value
				if e := scenario.KeyProblem(gk.Value); e != nil {
					e.File, e.Line, e.Key = name, gk.Line, key
					return nil, e
				}
				if s.axis(gk.Value) >= 0 {
					return nil, fail(gk.Line, key, "each key once", "given twice")
				}
				if gk.Value == "workload.kind" {
					return nil, fail(gk.Line, key, "one sweep per workload: they measure different things", "cannot vary")
				}
				if gv == nil || gv.Kind != yaml.SequenceNode || len(gv.Content) == 0 {
					line := gk.Line
					if gv != nil {
						line = gv.Line
					}
					return nil, fail(line, key, "a non-empty list of the key's values", "not a list of values")
				}
				s.Grid = append(s.Grid, Axis{Key: gk.Value, Values: gv.Content})
			}
		default:
			allowed := "the keys of a sweep: " + strings.Join(topKeys, ", ")
			if sug := input.Suggest(k.Value, topKeys); sug != "" {
				allowed = fmt.Sprintf("did you mean %q?", sug)
			}
			return nil, fail(k.Line, k.Value, allowed, "unknown key")
		}
	}
	if len(s.Grid) == 0 {
		return nil, fail(lines["grid"], "grid", "a section from scenario keys to lists of values", "no keys to sweep")
	}
	if len(s.Seeds) > 0 && s.axis("seed") >= 0 {
		return nil, fail(lines["seeds"], "seeds", "either: grid.seed makes each seed a point of its own, seeds a mean over them", "given with grid.seed")
	}
	if s.Scenario == "" {
		s.base = scenario.DefaultScenario()
		s.baseData = nil
	} else {
		p, b, err := load(s.Scenario)
		if err != nil {
			return nil, fail(lines["scenario"], "scenario", "a scenario file, relative to the sweep file", "%v", err)
		}
		if s.base, s.baseLine, err = scenario.ParseScenarioLines(p, b); err != nil {
			return nil, err
		}
		s.baseFile, s.baseData = p, b
	}
	s.data = data
	// The base scenario's outputs are for `aaemu run`; a sweep writes tables.
	s.base.Outputs.VCD, s.base.Outputs.Pcap = false, false
	plotLine := func(key string) int {
		if plotDec != nil {
			return plotDec.Line(key)
		}
		return 0
	}
	if s.Plot.X == "" {
		s.Plot.X = s.Grid[0].Key
	}
	dht := s.base.Workload.Kind == scenario.KindDHT
	if s.axis(s.Plot.X) < 0 && (s.Plot.X != CollisionsX || !dht) {
		keys := make([]string, len(s.Grid))
		for i, a := range s.Grid {
			keys[i] = a.Key
		}
		if dht {
			keys = append(keys, CollisionsX)
		}
		allowed := "a grid key: " + strings.Join(keys, ", ")
		if sug := input.Suggest(s.Plot.X, keys); sug != "" {
			allowed = fmt.Sprintf("did you mean %q? %s", sug, allowed)
		}
		return nil, fail(plotLine("plot.x"), "plot.x", allowed, "%q is not a grid key", s.Plot.X)
	}
	ms, names := s.metricSet()
	if len(s.Plot.Y) == 0 {
		s.Plot.Y = names[:1]
	}
	for i, y := range s.Plot.Y {
		if _, ok := ms[y]; !ok {
			allowed := "a metric of the " + s.base.Workload.Kind + " workload: " + strings.Join(names, ", ")
			if sug := input.Suggest(y, names); sug != "" {
				allowed = fmt.Sprintf("did you mean %q? %s", sug, allowed)
			}
			key := fmt.Sprintf("plot.y[%d]", i)
			return nil, fail(plotLine(key), key, allowed, "%q is not a metric", y)
		}
	}
	if _, err := sim.ParseTick(s.Until); err != nil {
		return nil, fail(lines["until"], "until", "a whole number with unit ps, ns, us, ms or s", "%q is not a time", s.Until)
	}
	n := 1
	for _, a := range s.Grid {
		if n *= len(a.Values); n > MaxPoints {
			return nil, fail(s.gridLine, "grid", fmt.Sprintf("at most %d; split the sweep", MaxPoints), "more than %d points", MaxPoints)
		}
	}
	// Check every point now, so a bad value fails before hours of running.
	for _, p := range s.Points() {
		if _, err := s.scenarioAt(p); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func mustMarshal(n *yaml.Node) []byte {
	b, err := yaml.Marshal(n)
	if err != nil {
		panic(err) // a node that came from the parser always marshals
	}
	return b
}

func (s *Spec) axis(key string) int {
	for i, a := range s.Grid {
		if a.Key == key {
			return i
		}
	}
	return -1
}

// Points lists the grid's cross product, the first axis varying slowest.
func (s *Spec) Points() []Point {
	pts := []Point{{}}
	for _, a := range s.Grid {
		var next []Point
		for _, p := range pts {
			for _, v := range a.Values {
				q := append(append(Point{}, p...), flow(v))
				next = append(next, q)
			}
		}
		pts = next
	}
	return pts
}

// flow renders a value on one line, as a table cell.
func flow(v *yaml.Node) string {
	if v.Kind == yaml.ScalarNode {
		return v.Value
	}
	c := *v
	c.Style = yaml.FlowStyle
	return strings.TrimSpace(string(mustMarshal(&c)))
}

// value is the index of the point's value on axis i.
func (s *Spec) value(p Point, i int) int {
	for j, v := range s.Grid[i].Values {
		if flow(v) == p[i] {
			return j
		}
	}
	return -1
}

// scenarioAt is the base scenario with each grid key set to the point's
// value, decoded as the key's value in a scenario file would be, and
// checked like any scenario. Errors name the grid's value (grid.KEY[i]) or,
// when the key at fault is not a grid key, the base scenario's key, with
// the point.
func (s *Spec) scenarioAt(p Point) (scenario.Scenario, error) {
	sc := s.base.Clone() // points are built concurrently: none may write into the base
	sc.Partitions = s.Partitions
	sc.CheckEveryPoll = s.CheckEveryPoll
	if len(s.Seeds) > 0 {
		sc.Seed = s.Seeds[0]
	}
	for i, a := range s.Grid {
		j := s.value(p, i)
		if j < 0 {
			return scenario.Scenario{}, fmt.Errorf("grid: %s: %q is not one of its values", a.Key, p[i])
		}
		if err := sc.Set(s.file, fmt.Sprintf("grid.%s[%d]", a.Key, j), a.Key, a.Values[j]); err != nil {
			return scenario.Scenario{}, err
		}
	}
	if key, err := sc.Validate(); err != nil {
		return scenario.Scenario{}, s.placeError(p, key, err)
	}
	sc.Outputs.VCD, sc.Outputs.Pcap = false, false
	return sc, nil
}

// placeError places a point's validation error: at the grid's value when
// the key at fault is a grid key (or under one), else at the key in the
// base scenario (the grid's line with the built-in one), with the point.
func (s *Spec) placeError(p Point, key string, err error) error {
	e := input.Place(err, "", key, nil)
	for i, a := range s.Grid {
		if rest, ok := strings.CutPrefix(key, a.Key); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			j := s.value(p, i)
			e.File, e.Line, e.Key = s.file, a.Values[j].Line, fmt.Sprintf("grid.%s[%d]%s", a.Key, j, rest)
			if len(s.Grid) > 1 {
				e.Problem = "at " + s.label(p) + ": " + e.Problem
			}
			return e
		}
	}
	e.File, e.Line = s.file, s.gridLine
	if s.baseFile != "" {
		e.File, e.Line = s.baseFile, s.baseLine(key)
	}
	e.Problem = "at grid point " + s.label(p) + ": " + e.Problem
	return e
}

func (s *Spec) label(p Point) string {
	parts := make([]string, len(p))
	for i, a := range s.Grid {
		parts[i] = a.Key + "=" + p[i]
	}
	return strings.Join(parts, " ")
}

// Run simulates every experiment at every point on jobs workers. done is
// called after each task (for a progress bar) from the worker's goroutine.
func (s *Spec) Run(jobs int, done func()) ([]Row, error) {
	var all []Row
	err := s.RunStream(context.Background(), jobs, func(rows []Row) { all = append(all, rows...) }, done)
	if err != nil {
		return nil, err
	}
	return all, nil
}

// Experiments is the number of experiments the sweep (its shard) runs:
// each task's schemes times its collision ratios.
func (s *Spec) Experiments() int {
	n := 0
	for _, t := range s.shardTasks() {
		sc, err := s.scenarioAt(t.Point)
		if err == nil {
			n += len(sc.Experiments())
		}
	}
	return n
}

// RunStream simulates every experiment of every task of the sweep (of its
// shard) on jobs workers and hands emit the rows of each finished task in
// task order, as soon as every task before it has finished or failed, so
// that a caller can write them as they come (emit calls come one at a
// time, from the workers). With Parts, a task done before with the same
// inputs is read back instead of run, and every task run leaves its part.
// done, if not nil, is called after each task. When ctx is cancelled
// RunStream starts no more tasks and stops the running ones between time
// slices; the tasks finished by then are still emitted, in order. It
// returns the error of the first failed task in order, else
// runctl.ErrInterrupted if ctx was cancelled before every task finished.
func (s *Spec) RunStream(ctx context.Context, jobs int, emit func(rows []Row), done func()) error {
	ts := s.shardTasks()
	until, _ := sim.ParseTick(s.Until)
	rows := make([][]Row, len(ts))
	errs := make([]error, len(ts))
	finished := Ordered(ctx, len(ts), jobs, func(i int) bool {
		rows[i], errs[i] = s.runTask(ctx, ts[i], until)
		if done != nil {
			done()
		}
		return errs[i] == nil
	}, func(i int) { emit(rows[i]) })
	for i, t := range ts {
		if errs[i] != nil && !errors.Is(errs[i], runctl.ErrInterrupted) {
			return fmt.Errorf("%s: %w", s.taskLabel(t), errs[i])
		}
	}
	if finished < len(ts) {
		return runctl.ErrInterrupted
	}
	return nil
}

// Ordered calls f(0..n-1) on jobs workers (at least one) and emit(i) for
// every i whose f returned true, in order of i: as soon as f has returned
// for i and every index before it. emit calls come one at a time. Once ctx
// is cancelled no further index starts; when the running calls have
// returned, emit is called for the successful indices that an unfinished
// one held back, still in order. It returns how many calls returned true.
func Ordered(ctx context.Context, n, jobs int, f func(i int) bool, emit func(i int)) int {
	state := make([]int8, n) // 0: not returned; 1: succeeded; -1: failed
	var mu sync.Mutex
	next, ok := 0, 0
	flush := func() {
		for next < n && state[next] != 0 {
			if state[next] > 0 {
				emit(next)
			}
			next++
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(jobs, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := f(i)
				mu.Lock()
				if r {
					state[i] = 1
					ok++
				} else {
					state[i] = -1
				}
				flush()
				mu.Unlock()
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			break
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	for ; next < n; next++ {
		if state[next] > 0 {
			emit(next)
		}
	}
	return ok
}

// runPoint runs the experiments of one point at one seed; it stops with
// runctl.ErrInterrupted when ctx is cancelled.
func (s *Spec) runPoint(ctx context.Context, t Task, until sim.Tick) ([]Row, error) {
	sc, err := s.scenarioAt(t.Point)
	if err != nil {
		return nil, err
	}
	var seed *uint64
	if len(s.Seeds) > 0 {
		sc.Seed = t.Seed
		seed = &t.Seed
	}
	var rows []Row
	for _, x := range sc.Experiments() {
		if ctx.Err() != nil {
			return nil, runctl.ErrInterrupted
		}
		pr, err := sc.PrepareRun(sim.NewEngine(sc.Seed), x)
		if err != nil {
			return nil, err
		}
		name := s.taskLabel(t) + " " + x.Label(sc.Workload.Kind == scenario.KindDHT)
		end, stopped := runctl.Run(ctx, pr.Sys.Cluster, name, until, pr.Progress)
		if stopped {
			return nil, runctl.ErrInterrupted
		}
		o, err := pr.Finish(end)
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{Point: t.Point, Seed: seed, Result: o.DHT, Workload: o.Workload})
	}
	return rows, nil
}
