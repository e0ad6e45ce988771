package paper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/aaemu/aaemu/energy"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/workload"
)

// Energy holds the power figures of Figures 8a and 8b (energy's defaults
// are assumptions; the command line can set them).
var Energy = energy.DefaultParams()

// The sort of Figures 9b, 8a and 8b: 4 processes per node of 32768 keys
// (256 KB) each, 10 Gb/s.
const (
	sortProcs = 4
	sortKeys  = 32768
	sortRate  = 10000 // Mb/s, cluster()'s links
)

var sortSchemes = []workload.Scheme{workload.NoFT, workload.AAPoll, workload.AM, workload.RMA}

// sortRuns keeps each (nodes, scheme) sort once a process has run it: the
// three figures read the same runs.
var sortRuns struct {
	sync.Mutex
	m map[sortKey]*sortEntry
}

type sortKey struct {
	nodes  int
	scheme workload.Scheme
}

type sortEntry struct {
	once sync.Once
	res  workload.SortResult
	err  error
}

func sortResult(ctx context.Context, nodes int, s workload.Scheme) (workload.SortResult, error) {
	sortRuns.Lock()
	if sortRuns.m == nil {
		sortRuns.m = map[sortKey]*sortEntry{}
	}
	e := sortRuns.m[sortKey{nodes, s}]
	if e == nil {
		e = &sortEntry{}
		sortRuns.m[sortKey{nodes, s}] = e
	}
	sortRuns.Unlock()
	e.once.Do(func() {
		c, err := cluster(nodes)
		if err != nil {
			e.err = err
			return
		}
		st, err := workload.SetupSort(c, workload.SortConfig{Scheme: s, Keys: sortKeys, Procs: sortProcs, Seed: 1})
		if err != nil {
			e.err = err
			return
		}
		if e.err = runFor(ctx, c, st.Progress); e.err != nil {
			return
		}
		e.res = st.Result()
		if !e.res.Verified {
			e.err = fmt.Errorf("the sort is wrong: %s", e.res.Problem)
		}
	})
	if errors.Is(e.err, runctl.ErrInterrupted) {
		// Not kept: a later call runs it again.
		sortRuns.Lock()
		if sortRuns.m[sortKey{nodes, s}] == e {
			delete(sortRuns.m, sortKey{nodes, s})
		}
		sortRuns.Unlock()
	}
	return e.res, e.err
}

// nicEnergy is the NICs' energy over the exchange, in µJ.
func nicEnergy(r workload.SortResult) float64 {
	t := float64(r.CommTimePS) / 1e12
	e := 0.0
	for _, b := range r.SentBytes {
		e += Energy.NIC(b, sortRate, t)
	}
	return e * 1e6
}

// perNodes formats f at every node count of the figure.
func perNodes(ns []int, f func(n int) string) string {
	var parts []string
	for _, n := range ns {
		parts = append(parts, fmt.Sprintf("%d nodes %s", n, f(n)))
	}
	return strings.Join(parts, ", ")
}

var sortNodes = []int{2, 4, 8}

var sortTimeFigure = &Figure{
	Name:  "9b",
	Title: "Fault-tolerant sort: time of the exchange, 4 processes per node × 256 KB of keys, 10 Gb/s",
	Custom: &Custom{
		X:       sortNodes,
		Schemes: sortSchemes,
		YLabel:  "communication time",
		YUnit:   "µs",
		run: func(ctx context.Context, nodes int, _ string, s workload.Scheme) (float64, error) {
			r, err := sortResult(ctx, nodes, s)
			return float64(r.CommTimePS) / 1e6, err
		},
	},
	PointClaims: []PointClaim{
		{Text: "AA close to No-FT", Paper: "< 1 %", Tolerance: "within ±1 % at every size", Measure: func(pts []Point) (string, bool) {
			ok := true
			m := perNodes(sortNodes, func(n int) string {
				r := at(pts, n, workload.AAPoll) / at(pts, n, workload.NoFT)
				ok = ok && within(r, 0.99, 1.01)
				return pct(r)
			})
			return "AA vs No-FT: " + m, ok
		}},
		{Text: "AA's time below AM's", Paper: "≈ −50 %", Tolerance: "−35 % to −65 % at every size", Measure: func(pts []Point) (string, bool) {
			ok := true
			m := perNodes(sortNodes, func(n int) string {
				r := at(pts, n, workload.AAPoll) / at(pts, n, workload.AM)
				ok = ok && within(r, 0.35, 0.65)
				return pct(r)
			})
			return m, ok
		}},
		{Text: "AA's time below RMA's", Paper: "≈ −80 %", Tolerance: "−70 % to −90 % at every size", Measure: func(pts []Point) (string, bool) {
			ok := true
			m := perNodes(sortNodes, func(n int) string {
				r := at(pts, n, workload.AAPoll) / at(pts, n, workload.RMA)
				ok = ok && within(r, 0.1, 0.3)
				return pct(r)
			})
			return m, ok
		}},
	},
}

var nicEnergyFigure = &Figure{
	Name:  "8a",
	Title: "Fault-tolerant sort: NICs' energy over the exchange (idle power, and active power while sending), 10 Gb/s",
	Custom: &Custom{
		X:       sortNodes,
		Schemes: sortSchemes,
		YLabel:  "NIC energy",
		YUnit:   "µJ",
		run: func(ctx context.Context, nodes int, _ string, s workload.Scheme) (float64, error) {
			r, err := sortResult(ctx, nodes, s)
			return nicEnergy(r), err
		},
	},
	PointClaims: []PointClaim{
		{Text: "AA sends what No-FT sends", Paper: "same bytes", Tolerance: "within ±1 % at every size", Measure: func([]Point) (string, bool) {
			ok := true
			m := perNodes(sortNodes, func(n int) string {
				a, _ := sortResult(context.Background(), n, workload.AAPoll)
				b, _ := sortResult(context.Background(), n, workload.NoFT)
				r := float64(a.WireBytes) / float64(b.WireBytes)
				ok = ok && within(r, 0.99, 1.01)
				return pct(r)
			})
			return "AA's bytes vs No-FT's: " + m, ok
		}},
		{Text: "AA's NIC energy the lowest of the logging schemes", Paper: "yes", Tolerance: "strictly below AM and RMA at every size", Measure: func(pts []Point) (string, bool) {
			ok := true
			m := perNodes(sortNodes, func(n int) string {
				a, am, rma := at(pts, n, workload.AAPoll), at(pts, n, workload.AM), at(pts, n, workload.RMA)
				ok = ok && a < am && a < rma
				return fmt.Sprintf("AM %.2f×, RMA %.2f×", am/a, rma/a)
			})
			return "vs AA: " + m, ok
		}},
	},
}

// routerNodes is the machine of Figure 8b: the sort's largest.
const routerNodes = 8

var routerEnergyFigure = &Figure{
	Name:  "8b",
	Title: fmt.Sprintf("Fault-tolerant sort: routers' energy over the exchange on each topology, %d nodes (bytes sent × mean routers crossed)", routerNodes),
	Custom: &Custom{
		X:             []int{routerNodes},
		Categories:    topologyNames(),
		CategoryLabel: "topology",
		Schemes:       sortSchemes,
		YLabel:        "router energy",
		YUnit:         "µJ",
		run: func(ctx context.Context, nodes int, topo string, s workload.Scheme) (float64, error) {
			r, err := sortResult(ctx, nodes, s)
			if err != nil {
				return 0, err
			}
			n, err := energy.Build(energy.Topology(topo), nodes)
			if err != nil {
				return 0, err
			}
			return Energy.Routers(r.WireBytes, n.AvgRouters()) * 1e6, nil
		},
	},
	PointClaims: []PointClaim{
		{Text: "AA's router energy the lowest in every topology", Paper: "yes", Tolerance: "strictly below AM and RMA in every topology", Measure: func(pts []Point) (string, bool) {
			ok := true
			am, rma := math.Inf(1), math.Inf(1) // the smallest ratios to AA's
			for _, t := range topologyNames() {
				a := atCat(pts, routerNodes, t, workload.AAPoll)
				m, r := atCat(pts, routerNodes, t, workload.AM), atCat(pts, routerNodes, t, workload.RMA)
				ok = ok && a < m && a < r
				am, rma = min(am, m/a), min(rma, r/a)
			}
			return fmt.Sprintf("over %d topologies AM at least %.3f×, RMA at least %.2f× AA's", len(topologyNames()), am, rma), ok
		}},
	},
}

func topologyNames() []string {
	var out []string
	for _, t := range energy.Topologies {
		out = append(out, string(t))
	}
	return out
}
