package sweep

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/plot"
)

// maxDataTicks is the most X values an axis puts its ticks at; with more
// the ticks go at round values.
const maxDataTicks = 12

// Crowding of the labels at data ticks: a label takes about labelChar per
// character of the X axis's length (11 pt letters, on some 440 pt), and
// two labels keep labelGap characters between them.
const (
	labelChar = 5.5 / 440
	labelGap  = 2
)

// axisTicks places an axis's ticks and labels them in its unit. With
// values (an X axis and its data's X values, few enough) the ticks are at
// those, a label on each that has room; else they are at round values:
// gonum's on a linear axis, 1, 2 and 5 × 10^k on a log one.
type axisTicks struct {
	log    bool
	values []float64 // sorted and distinct
	unit   unit
	// Set by title: the prefix every label is written with, or each
	// label with its own (a log axis over decades of a unit: 64 B, 4 KiB).
	sc   scale
	each bool
}

// newAxisTicks is an axis's ticker; values are the data's X values when
// the ticks should go there (nil on a Y axis).
func newAxisTicks(log bool, u unit, values []float64) *axisTicks {
	vs := slices.Clone(values)
	sort.Float64s(vs)
	vs = slices.Compact(vs)
	if len(vs) > maxDataTicks {
		vs = nil
	}
	return &axisTicks{log: log, values: vs, unit: u, sc: scale{1, u.name}}
}

// title is the axis's title over [lo, hi] (the words and the unit with the
// prefix the labels take) and fixes that prefix for Ticks.
func (t *axisTicks) title(words string, lo, hi float64) string {
	t.choose(t.place(lo, hi))
	if t.each {
		return words
	}
	return axisTitle(words, t.sc.unit)
}

// choose picks the labels' prefix from the values they label.
func (t *axisTicks) choose(ts []plot.Tick) {
	var vs []float64
	lo, hi := math.Inf(1), 0.0
	for _, tk := range ts {
		if tk.Label != "" {
			vs = append(vs, tk.Value)
			if a := math.Abs(tk.Value); a > 0 {
				lo, hi = min(lo, a), max(hi, a)
			}
		}
	}
	t.sc = scaleFor(t.unit, vs)
	t.each = t.log && t.unit.base != "" && hi/lo >= 1000
}

// Ticks implements plot.Ticker.
func (t *axisTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := t.place(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = t.label(ts[i].Value)
		}
	}
	return ts
}

// label writes a tick's value in the axis's unit.
func (t *axisTicks) label(v float64) string {
	switch {
	case t.each:
		return formatQuantity(v, t.unit.name)
	case t.unit.base == "":
		return count(v)
	default:
		return number(v / t.sc.div)
	}
}

// place puts the ticks on [lo, hi]; the labelled ones have some label, to
// be replaced by the value in the axis's unit.
func (t *axisTicks) place(lo, hi float64) []plot.Tick {
	if math.IsInf(lo, 0) { // no data: gonum's range
		lo = 0
	}
	if math.IsInf(hi, 0) {
		hi = 0
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	if lo == hi {
		lo, hi = lo-1, hi+1 // as gonum widens an empty range
	}
	if len(t.values) > 0 {
		return t.dataTicks(lo, hi)
	}
	if t.log {
		return logTicks(lo, hi)
	}
	return plot.DefaultTicks{}.Ticks(lo, hi)
}

// dataTicks are a tick at each data value in [lo, hi], labelled from the
// left where the label has room; on a log axis, unlabelled ticks at 1…9 ×
// 10^k give the scale.
func (t *axisTicks) dataTicks(lo, hi float64) []plot.Tick {
	pos := func(v float64) float64 {
		if t.log {
			return (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
		}
		return (v - lo) / (hi - lo)
	}
	// Measure the labels as written with every value labelled.
	var all []plot.Tick
	for _, v := range t.values {
		if within(v, lo, hi) {
			all = append(all, plot.Tick{Value: v, Label: "·"})
		}
	}
	probe := *t
	probe.choose(all)
	var ts []plot.Tick
	last, lastLen := math.Inf(-1), 0
	for _, tk := range all {
		n := len([]rune(probe.label(tk.Value)))
		need := (float64(lastLen+n)/2 + labelGap) * labelChar
		if pos(tk.Value)-last < need {
			tk.Label = "" // no room: a tick without a label
		} else {
			last, lastLen = pos(tk.Value), n
		}
		ts = append(ts, tk)
	}
	if t.log && lo > 0 {
		for _, m := range logTicks(lo, hi) {
			if !slices.ContainsFunc(ts, func(d plot.Tick) bool { return near(d.Value, m.Value, 1e-9) }) {
				ts = append(ts, plot.Tick{Value: m.Value})
			}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Value < ts[j].Value })
	}
	return ts
}

// logTicks are ticks at 1…9 × 10^k on [lo, hi], labelled at 1, 2 and 5 ×
// 10^k (1 and 3 over more than 3.5 decades, decades over more than 7). A
// range that holds fewer than two of those has every tick labelled, or,
// narrower still, gonum's linear ones.
func logTicks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return plot.DefaultTicks{}.Ticks(lo, max(hi, lo+1))
	}
	decades := math.Log10(hi / lo)
	labelled := []int{1, 2, 5}
	switch {
	case decades > 7:
		labelled = []int{1}
	case decades > 3.5:
		labelled = []int{1, 3}
	}
	var ts []plot.Tick
	n := 0
	for k := int(math.Floor(math.Log10(lo))); k <= int(math.Ceil(math.Log10(hi))); k++ {
		for m := 1; m <= 9; m++ {
			v := float64(m) * math.Pow10(k)
			if !within(v, lo, hi) {
				continue
			}
			tk := plot.Tick{Value: v}
			if slices.Contains(labelled, m) {
				tk.Label = "·"
				n++
			}
			ts = append(ts, tk)
		}
	}
	if n < 2 {
		if len(ts) < 2 {
			return plot.DefaultTicks{}.Ticks(lo, hi)
		}
		for i := range ts {
			ts[i].Label = "·"
		}
	}
	return ts
}

// within: v is in [lo, hi], give or take rounding.
func within(v, lo, hi float64) bool {
	e := 1e-9 * max(math.Abs(lo), math.Abs(hi))
	return v >= lo-e && v <= hi+e
}
