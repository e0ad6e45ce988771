// Package sweep runs a scenario over a grid of parameter values: any scenario
// key, named by its dotted YAML path, takes each of a list of values; every
// point of the cross product runs every experiment of the scenario. Points
// run in parallel, but results are kept in grid order, so the tables and
// plots of two runs are byte-identical whatever the scheduling.
package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

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

	base scenario.Scenario
}

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

// Parse reads a sweep file. dir is where the base scenario is looked up.
func Parse(name string, data []byte, dir string) (*Spec, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want a mapping with scenario, grid and plot", name)
	}
	s := &Spec{Until: "10s"}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		switch k.Value {
		case "scenario", "until":
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s:%d: %s: want a string", name, v.Line, k.Value)
			}
			if k.Value == "scenario" {
				s.Scenario = v.Value
			} else {
				s.Until = v.Value
			}
		case "plot":
			dec := yaml.NewDecoder(bytes.NewReader(mustMarshal(v)))
			dec.KnownFields(true)
			if err := dec.Decode(&s.Plot); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s:%d: plot: %v", name, v.Line, err)
			}
		case "grid":
			if v.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s:%d: grid: want a mapping from scenario keys to lists of values", name, v.Line)
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				gk, gv := v.Content[j], v.Content[j+1]
				if gv.Kind != yaml.SequenceNode || len(gv.Content) == 0 {
					return nil, fmt.Errorf("%s:%d: grid: %s: want a non-empty list of values", name, gv.Line, gk.Value)
				}
				s.Grid = append(s.Grid, Axis{Key: gk.Value, Values: gv.Content})
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q (want scenario, grid, plot, until)", name, k.Line, k.Value)
		}
	}
	if len(s.Grid) == 0 {
		return nil, fmt.Errorf("%s: grid: no keys to sweep", name)
	}
	if s.Scenario == "" {
		s.base = scenario.DefaultScenario()
	} else {
		p := s.Scenario
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: scenario: %w", name, err)
		}
		if s.base, err = scenario.ParseScenario(p, b); err != nil {
			return nil, err
		}
	}
	// The base scenario's outputs are for `aaemu run`; a sweep writes tables.
	s.base.Outputs.VCD, s.base.Outputs.Pcap = false, false
	if s.Plot.X == "" {
		s.Plot.X = s.Grid[0].Key
	}
	if s.axis(s.Plot.X) < 0 && (s.Plot.X != CollisionsX || s.base.Workload.Kind != scenario.KindDHT) {
		return nil, fmt.Errorf("%s: plot.x: %q is not a grid key", name, s.Plot.X)
	}
	if s.axis("workload.kind") >= 0 {
		return nil, fmt.Errorf("%s: grid: workload.kind cannot vary (the workloads measure different things): one sweep per workload", name)
	}
	ms, names := s.metricSet()
	if len(s.Plot.Y) == 0 {
		s.Plot.Y = names[:1]
	}
	for _, y := range s.Plot.Y {
		if _, ok := ms[y]; !ok {
			return nil, fmt.Errorf("%s: plot.y: unknown metric %q (want one of %s)", name, y, strings.Join(names, ", "))
		}
	}
	if _, err := sim.ParseTick(s.Until); err != nil {
		return nil, fmt.Errorf("%s: until: %w", name, err)
	}
	n := 1
	for _, a := range s.Grid {
		if n *= len(a.Values); n > MaxPoints {
			return nil, fmt.Errorf("%s: grid: more than %d points; split the sweep", name, MaxPoints)
		}
	}
	// Check every point now, so a bad value fails before hours of running.
	for _, p := range s.Points() {
		if _, err := s.scenarioAt(p); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
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

// scenarioAt is the base scenario with each grid key set to the point's
// value: the scenario is written out as YAML, the keys are replaced in the
// tree, and the result is parsed and validated like any scenario file.
func (s *Spec) scenarioAt(p Point) (scenario.Scenario, error) {
	var root yaml.Node
	b, err := yaml.Marshal(s.base)
	if err != nil {
		return scenario.Scenario{}, err
	}
	if err := yaml.Unmarshal(b, &root); err != nil {
		return scenario.Scenario{}, err
	}
	for i, a := range s.Grid {
		var v yaml.Node
		if err := yaml.Unmarshal([]byte(p[i]), &v); err != nil {
			return scenario.Scenario{}, fmt.Errorf("grid: %s: %v", a.Key, err)
		}
		if err := set(root.Content[0], a.Key, v.Content[0]); err != nil {
			return scenario.Scenario{}, fmt.Errorf("grid: %w", err)
		}
	}
	out, err := yaml.Marshal(&root)
	if err != nil {
		return scenario.Scenario{}, err
	}
	// The tree holds every key of the scenario, so it decodes over nothing.
	var sc scenario.Scenario
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(&sc); err != nil {
		return scenario.Scenario{}, fmt.Errorf("grid point %s: %v", s.label(p), err)
	}
	if key, err := sc.Validate(); err != nil {
		return scenario.Scenario{}, fmt.Errorf("grid point %s: %s: %w", s.label(p), key, err)
	}
	sc.Outputs.VCD, sc.Outputs.Pcap = false, false
	return sc, nil
}

// set replaces the value at a dotted key path in a YAML mapping.
func set(m *yaml.Node, key string, v *yaml.Node) error {
	path := strings.Split(key, ".")
	for d, name := range path {
		if m.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: %s is not a section", key, strings.Join(path[:d], "."))
		}
		found := false
		var have []string
		for i := 0; i+1 < len(m.Content); i += 2 {
			have = append(have, m.Content[i].Value)
			if m.Content[i].Value != name {
				continue
			}
			found = true
			if d == len(path)-1 {
				if v.Kind == yaml.MappingNode && m.Content[i+1].Kind == yaml.MappingNode {
					// A mapping sets several keys of a section together
					// (16 sets × 4 ways, then 64 × 1): merged, not replaced.
					for j := 0; j+1 < len(v.Content); j += 2 {
						if err := set(m.Content[i+1], v.Content[j].Value, v.Content[j+1]); err != nil {
							return fmt.Errorf("%s: %w", key, err)
						}
					}
					return nil
				}
				m.Content[i+1] = v
				return nil
			}
			m = m.Content[i+1]
			break
		}
		if !found {
			where := strings.Join(path[:d], ".")
			if where == "" {
				where = "the scenario"
			}
			return fmt.Errorf("%s: no key %q in %s (it has %s)", key, name, where, strings.Join(have, ", "))
		}
	}
	return nil
}

func (s *Spec) label(p Point) string {
	parts := make([]string, len(p))
	for i, a := range s.Grid {
		parts[i] = a.Key + "=" + p[i]
	}
	return strings.Join(parts, " ")
}

// Run simulates every experiment at every point on jobs workers. done is
// called after each point (for a progress bar) from the worker's goroutine.
func (s *Spec) Run(jobs int, done func()) ([]Row, error) {
	var all []Row
	err := s.RunStream(context.Background(), jobs, func(rows []Row) { all = append(all, rows...) }, done)
	if err != nil {
		return nil, err
	}
	return all, nil
}

// Experiments is the number of experiments the sweep runs: each point's
// schemes times its collision ratios.
func (s *Spec) Experiments() int {
	n := 0
	for _, p := range s.Points() {
		sc, err := s.scenarioAt(p)
		if err == nil {
			n += len(sc.Experiments())
		}
	}
	return n
}

// RunStream simulates every experiment at every point on jobs workers and
// hands emit the rows of each finished point in grid order, as soon as
// every point before it has finished or failed, so that a caller can write
// them as they come (emit calls come one at a time, from the workers). done,
// if not nil, is called after each point. When ctx is cancelled RunStream
// starts no more points and stops the running ones between time slices;
// the points finished by then are still emitted, in grid order. It returns
// the error of the first failed point in grid order, else
// runctl.ErrInterrupted if ctx was cancelled before every point finished.
func (s *Spec) RunStream(ctx context.Context, jobs int, emit func(rows []Row), done func()) error {
	pts := s.Points()
	until, _ := sim.ParseTick(s.Until)
	rows := make([][]Row, len(pts))
	errs := make([]error, len(pts))
	finished := Ordered(ctx, len(pts), jobs, func(i int) bool {
		rows[i], errs[i] = s.runPoint(ctx, pts[i], until)
		if done != nil {
			done()
		}
		return errs[i] == nil
	}, func(i int) { emit(rows[i]) })
	for i := range pts {
		if errs[i] != nil && !errors.Is(errs[i], runctl.ErrInterrupted) {
			return fmt.Errorf("%s: %w", s.label(pts[i]), errs[i])
		}
	}
	if finished < len(pts) {
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

// Parallel calls f(0..n-1) on jobs workers (at least one) and done after
// each. Each call writes only its own index's results, so the caller reads
// them in order afterwards, whatever the scheduling.
func Parallel(n, jobs int, f func(i int), done func()) {
	Ordered(context.Background(), n, jobs, func(i int) bool {
		f(i)
		if done != nil {
			done()
		}
		return true
	}, func(int) {})
}

// runPoint runs the experiments of one point; it stops with
// runctl.ErrInterrupted when ctx is cancelled.
func (s *Spec) runPoint(ctx context.Context, p Point, until sim.Tick) ([]Row, error) {
	sc, err := s.scenarioAt(p)
	if err != nil {
		return nil, err
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
		name := s.label(p) + " " + x.Label(sc.Workload.Kind == scenario.KindDHT)
		end, stopped := runctl.Run(ctx, pr.Sys.Cluster, name, until, pr.Progress)
		if stopped {
			return nil, runctl.ErrInterrupted
		}
		o, err := pr.Finish(end)
		if err != nil {
			return nil, err
		}
		rows = append(rows, Row{Point: p, Result: o.DHT, Workload: o.Workload})
	}
	return rows, nil
}
