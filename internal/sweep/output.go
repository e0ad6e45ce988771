package sweep

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/aaemu/aaemu/aa"
)

// metric is one measured column: its CSV name, axis label and unit.
type metric struct {
	label, unit string
	get         func(aa.DHTResult) float64
	order       int
}

var metrics = map[string]metric{
	"inserts_per_second":    {"DHT insert rate", "inserts/s", func(r aa.DHTResult) float64 { return r.InsertsPerSec }, 0},
	"sim_time_us":           {"simulated time", "µs", func(r aa.DHTResult) float64 { return float64(r.SimTimePS) / 1e6 }, 1},
	"remote_ops_per_insert": {"remote operations per insert", "ops", func(r aa.DHTResult) float64 { return r.RemoteOps }, 2},
	"pcie_tlps_per_insert":  {"PCIe TLPs per insert", "TLPs", func(r aa.DHTResult) float64 { return r.TLPs }, 3},
	"wire_bytes_per_insert": {"wire bytes per insert", "bytes", func(r aa.DHTResult) float64 { return r.WireBytes }, 4},
	"target_polls":          {"target receive-queue polls", "polls", func(r aa.DHTResult) float64 { return float64(r.TargetPolls) }, 5},
	// Inserts, lookups and deletes together (the insert rate when there are
	// no lookups or deletes).
	"ops_per_second": {"DHT operation rate", "ops/s", func(r aa.DHTResult) float64 {
		if r.OpsPerSec == 0 {
			return r.InsertsPerSec
		}
		return r.OpsPerSec
	}, 6},
	"nic_energy_uj": {"NICs' energy", "µJ", func(r aa.DHTResult) float64 { return r.NICEnergyJ * 1e6 }, 7},
}

// metricOrder is the metrics in column order.
var metricOrder = func() []string {
	names := make([]string, 0, len(metrics))
	for n := range metrics {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return metrics[names[i]].order < metrics[names[j]].order })
	return names
}()

func metricNames() []string { return metricOrder }

// unitOf reads the unit a scenario key's name ends in.
func unitOf(key string) string {
	for _, u := range []struct{ suffix, unit string }{
		{"_ns", "ns"}, {"_us", "µs"}, {"_ps", "ps"}, {"_mhz", "MHz"}, {"_mbps", "Mb/s"},
		{"_cycles", "cycles"}, {"_ppm", "ppm"}, {"_entries", "entries"},
	} {
		if strings.HasSuffix(key, u.suffix) {
			return u.unit
		}
	}
	return ""
}

func axisLabel(name, unit string) string {
	if unit == "" {
		return name
	}
	return name + " (" + unit + ")"
}

// WriteCSV writes one line per experiment: the grid keys, scheme,
// collisions, then every metric, with a header.
func (s *Spec) WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	head := []string{}
	for _, a := range s.Grid {
		head = append(head, a.Key)
	}
	head = append(head, "scheme", "collisions")
	head = append(head, metricNames()...)
	head = append(head, "verified")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range rows {
		rec := append([]string{}, r.Point...)
		rec = append(rec, string(r.Result.Scheme), strconv.FormatFloat(r.Result.Collisions, 'g', -1, 64))
		for _, n := range metricNames() {
			rec = append(rec, strconv.FormatFloat(metrics[n].get(r.Result), 'g', 8, 64))
		}
		rec = append(rec, strconv.FormatBool(r.Result.Verified))
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the grid and every row.
func (s *Spec) WriteJSON(w io.Writer, rows []Row) error {
	keys := make([]string, len(s.Grid))
	for i, a := range s.Grid {
		keys[i] = a.Key
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Keys []string `json:"keys"`
		Seed uint64   `json:"seed"`
		Rows []Row    `json:"rows"`
	}{keys, s.base.Seed, rows})
}

// Series is one line of a plot: the points that share every grid value but
// X, and the scheme and collision ratio.
type Series struct {
	Name string
	X, Y []float64
}

// Series groups the rows for plotting metric y against the X key, in order
// of first appearance. X values must be numbers.
func (s *Spec) Series(rows []Row, y string) ([]Series, error) {
	m, ok := metrics[y]
	if !ok {
		return nil, fmt.Errorf("unknown metric %q", y)
	}
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
				parts = append(parts, shortKey(a.Key)+"="+r.Point[i])
			}
		}
		head := []string{string(r.Result.Scheme)}
		if xi >= 0 {
			head = append(head, fmt.Sprintf("%.0f%% coll.", 100*r.Result.Collisions))
		}
		parts = append(head, parts...)
		name := strings.Join(parts, " ")
		i, ok := index[name]
		if !ok {
			i = len(out)
			index[name] = i
			out = append(out, Series{Name: name})
		}
		v := m.get(r.Result)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %s is %v at %s = %v", name, y, v, s.Plot.X, x)
		}
		out[i].X = append(out[i].X, x)
		out[i].Y = append(out[i].Y, v)
	}
	return out, nil
}

// shortKey is the last element of a dotted key, for legends.
func shortKey(k string) string { return k[strings.LastIndex(k, ".")+1:] }

// Metric is the named metric of one result.
func Metric(r aa.DHTResult, name string) float64 { return metrics[name].get(r) }
