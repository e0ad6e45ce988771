package sweep

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/aaemu/aaemu/scenario"
)

// Confidence is the level of the intervals a sweep with several seeds
// reports: the mean's two-sided Student-t interval over the seeds.
const Confidence = 0.95

// MeanCI is the mean of xs and the half width of its confidence interval
// (0 for a single value: one seed says nothing of the spread).
func MeanCI(xs []float64) (mean, half float64) {
	mean = stat.Mean(xs, nil)
	n := len(xs)
	if n < 2 {
		return mean, 0
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-Confidence)/2)
	return mean, t * stat.StdDev(xs, nil) / math.Sqrt(float64(n))
}

// group is one experiment of one point over the sweep's seeds.
type group struct {
	rows []Row // a row per seed, in seed order
}

// groups gathers the rows of each (point, experiment) over the seeds, in
// the order of their first seed: a task's rows are its experiments in the
// scenario's order, the same at every seed.
func (s *Spec) groups(rows []Row) []group {
	type key struct {
		point string
		exp   int
	}
	var out []group
	index := map[key]int{}
	last, n := "", 0 // the task the rows are of, and the row's place in it
	var lastSeed uint64
	for _, r := range rows {
		p := s.label(r.Point)
		var seed uint64
		if r.Seed != nil {
			seed = *r.Seed
		}
		if p != last || seed != lastSeed {
			last, lastSeed, n = p, seed, 0
		}
		k := key{p, n}
		n++
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, group{})
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}

// WriteSummary writes, for a sweep with seeds, one line per point and
// experiment: the grid keys, scheme, collisions, the number of seeds, and
// every metric's mean and the half width of its 95 % confidence interval.
func (s *Spec) WriteSummary(w io.Writer, rows []Row) error {
	ms, names := s.metricSet()
	dht := s.base.Workload.Kind == scenario.KindDHT
	cw := csv.NewWriter(w)
	var head []string
	for _, a := range s.Grid {
		head = append(head, a.Key)
	}
	head = append(head, "scheme")
	if dht {
		head = append(head, "collisions")
	}
	head = append(head, "seeds")
	for _, n := range names {
		head = append(head, n+"_mean", n+"_ci95")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, g := range s.groups(rows) {
		r := g.rows[0]
		rec := append([]string{}, r.Point...)
		rec = append(rec, string(r.scheme()))
		if dht {
			rec = append(rec, strconv.FormatFloat(r.Result.Collisions, 'g', -1, 64))
		}
		rec = append(rec, strconv.Itoa(len(g.rows)))
		for _, n := range names {
			xs := make([]float64, len(g.rows))
			for i, gr := range g.rows {
				xs[i] = ms[n].get(gr)
			}
			m, h := MeanCI(xs)
			rec = append(rec, strconv.FormatFloat(m, 'g', 8, 64), strconv.FormatFloat(h, 'g', 8, 64))
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
