package sweep

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/aaemu/aaemu/scenario"
)

// metric is one measured column: its CSV name, axis label and unit.
type metric struct {
	label, unit string
	get         func(Row) float64
	order       int
}

// dhtMetrics are the DHT's columns.
var dhtMetrics = map[string]metric{
	"inserts_per_second":    {"DHT insert rate", "inserts/s", func(r Row) float64 { return r.Result.InsertsPerSec }, 0},
	"sim_time_us":           {"simulated time", "µs", func(r Row) float64 { return float64(r.Result.SimTimePS) / 1e6 }, 1},
	"remote_ops_per_insert": {"remote operations per insert", "ops", func(r Row) float64 { return r.Result.RemoteOps }, 2},
	"pcie_tlps_per_insert":  {"PCIe TLPs per insert", "TLPs", func(r Row) float64 { return r.Result.TLPs }, 3},
	"wire_bytes_per_insert": {"wire bytes per insert", "bytes", func(r Row) float64 { return r.Result.WireBytes }, 4},
	"target_polls":          {"target receive-queue polls", "polls", func(r Row) float64 { return float64(r.Result.TargetPolls) }, 5},
	// Inserts, lookups and deletes together (the insert rate when there are
	// no lookups or deletes).
	"ops_per_second": {"DHT operation rate", "ops/s", func(r Row) float64 {
		if r.Result.OpsPerSec == 0 {
			return r.Result.InsertsPerSec
		}
		return r.Result.OpsPerSec
	}, 6},
	"nic_energy_uj":    {"NICs' energy", "µJ", func(r Row) float64 { return r.Result.NICEnergyJ * 1e6 }, 7},
	"router_energy_uj": {"switches' energy", "µJ", func(r Row) float64 { return r.Result.RouterEnergyJ * 1e6 }, 8},
	"iotlb_hit_rate":   {"IOTLB hit rate", "", func(r Row) float64 { return r.Result.IOTLBHitRate }, 9},
}

// workloadMetrics are the columns of the other workloads: the rate is in
// the workload's own unit (accesses/s, gets/s, B/s…), which the rows carry.
var workloadMetrics = map[string]metric{
	"rate":             {"rate", "", func(r Row) float64 { return r.Workload.Rate }, 0},
	"sim_time_us":      {"simulated time", "µs", func(r Row) float64 { return float64(r.Workload.SimTimePS) / 1e6 }, 1},
	"nic_energy_uj":    {"NICs' energy", "µJ", func(r Row) float64 { return r.Workload.NICEnergyJ * 1e6 }, 2},
	"router_energy_uj": {"switches' energy", "µJ", func(r Row) float64 { return r.Workload.RouterEnergyJ * 1e6 }, 3},
}

// ordered lists a metric set's names in column order.
func ordered(ms map[string]metric) []string {
	names := make([]string, 0, len(ms))
	for n := range ms {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return ms[names[i]].order < ms[names[j]].order })
	return names
}

var dhtOrder, workloadOrder = ordered(dhtMetrics), ordered(workloadMetrics)

// metricSet is the sweep's workload's metrics and their column order.
func (s *Spec) metricSet() (map[string]metric, []string) {
	if s.base.Workload.Kind != scenario.KindDHT {
		return workloadMetrics, workloadOrder
	}
	return dhtMetrics, dhtOrder
}

// metricOf is the named metric with its unit: a workload's rate takes the
// unit its rows report.
func (s *Spec) metricOf(name string, rows []Row) (metric, bool) {
	ms, _ := s.metricSet()
	m, ok := ms[name]
	if ok && name == "rate" {
		m.label = s.base.Workload.Kind + " rate"
		if len(rows) > 0 {
			m.unit = rows[0].Workload.Unit
		}
	}
	return m, ok
}

// WriteCSV writes one line per experiment: the grid keys, scheme,
// collisions, then every metric, with a header.
func (s *Spec) WriteCSV(w io.Writer, rows []Row) error {
	t := s.NewTables(w, nil)
	t.Add(rows)
	return t.Close(true)
}

// WriteJSON writes the grid and every row.
func (s *Spec) WriteJSON(w io.Writer, rows []Row) error {
	t := s.NewTables(nil, w)
	t.Add(rows)
	return t.Close(true)
}

// Series is one line of a plot: the points that share every grid value but
// X, and the scheme and collision ratio.
type Series struct {
	Name string
	X, Y []float64
	// Err, with seeds, is the half width of each Y's confidence interval
	// (Y is then the mean over the seeds).
	Err []float64
}

// Series groups the rows for plotting metric y against the X key, in order
// of first appearance. X values must be numbers.
func (s *Spec) Series(rows []Row, y string) ([]Series, error) {
	m, ok := s.metricOf(y, rows)
	if !ok {
		return nil, fmt.Errorf("unknown metric %q", y)
	}
	dht := s.base.Workload.Kind == scenario.KindDHT
	xi := s.axis(s.Plot.X)
	var out []Series
	index := map[string]int{}
	for _, r := range rows {
		var x float64
		var err error
		if xi < 0 { // CollisionsX
			x = r.Result.Collisions
		} else if x, err = strconv.ParseFloat(r.Point[xi], 64); err != nil {
			return nil, fmt.Errorf("plot.x: %s = %q is not a number", s.Plot.X, r.Point[xi])
		}
		var parts []string
		for i, a := range s.Grid {
			if i != xi && len(a.Values) > 1 { // a fixed key names no series
				parts = append(parts, legendPart(a.Key, r.Point[i]))
			}
		}
		head := []string{string(r.scheme())}
		if xi >= 0 && dht {
			head = append(head, collisionsPart(r.Result.Collisions))
		}
		parts = append(head, parts...)
		name := strings.Join(parts, ", ")
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, Series{Name: name})
		}
		v := m.get(r)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %s is %v at %s = %v", name, y, v, s.Plot.X, x)
		}
		out[i].X = append(out[i].X, x)
		out[i].Y = append(out[i].Y, v)
	}
	if len(s.Seeds) > 1 {
		for i := range out {
			out[i] = meanOverSeeds(out[i])
		}
	}
	return out, nil
}

// meanOverSeeds makes each X of a series one point: the mean of its
// values (one per seed) and their confidence interval.
func meanOverSeeds(sr Series) Series {
	out := Series{Name: sr.Name}
	var xs []float64
	vals := map[float64][]float64{}
	for j, x := range sr.X {
		if _, ok := vals[x]; !ok {
			xs = append(xs, x)
		}
		vals[x] = append(vals[x], sr.Y[j])
	}
	for _, x := range xs {
		m, h := MeanCI(vals[x])
		out.X, out.Y, out.Err = append(out.X, x), append(out.Y, m), append(out.Err, h)
	}
	return out
}

// Metric is the named metric of one row.
func (s *Spec) Metric(r Row, name string) float64 {
	m, _ := s.metricOf(name, nil)
	return m.get(r)
}
