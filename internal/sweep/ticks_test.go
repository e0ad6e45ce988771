package sweep

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

// labelled lists the ticks that have a label, as "value=label".
func labelled(ts []plot.Tick) []string {
	var out []string
	for _, t := range ts {
		if t.Label != "" {
			out = append(out, strconv.FormatFloat(t.Value, 'g', -1, 64)+"="+t.Label)
		}
	}
	return out
}

func unlabelled(ts []plot.Tick) []float64 {
	var out []float64
	for _, t := range ts {
		if t.Label == "" {
			out = append(out, t.Value)
		}
	}
	return out
}

// An axis over few X values has a tick at each, labelled in the axis's
// unit where there is room; the title carries the prefix the labels use.
func TestDataTicks(t *testing.T) {
	for _, c := range []struct {
		name    string
		log     bool
		unit    string
		values  []float64
		lo, hi  float64
		title   string
		want    []string  // the labelled ticks
		minor   []float64 // some of the unlabelled ones
		noMinor bool      // no unlabelled ticks at all
	}{
		{name: "nodes", values: []float64{2, 4, 8, 2, 4, 8}, lo: 2, hi: 8,
			title: "nodes", want: []string{"2=2", "4=4", "8=8"}, noMinor: true},
		{name: "compute between inserts", unit: "cycles", values: []float64{0, 1000, 2000, 4000, 8000}, lo: 0, hi: 8000,
			title: "compute between inserts (cycles)", want: []string{"0=0", "1000=1k", "2000=2k", "4000=4k", "8000=8k"}, noMinor: true},
		{name: "wire rate", unit: "Mb/s", values: []float64{1000, 10000, 40000}, lo: 1000, hi: 40000,
			title: "wire rate (Gb/s)", want: []string{"1000=1", "10000=10", "40000=40"}, noMinor: true},
		// Each label its own prefix over three decades of bytes; minor
		// ticks at 1…9 × 10^k between them.
		{name: "message size", log: true, unit: "B", values: []float64{64, 256, 1024, 4096, 16384, 65536}, lo: 64, hi: 65536,
			title: "message size", want: []string{"64=64 B", "256=256 B", "1024=1 KiB", "4096=4 KiB", "16384=16 KiB", "65536=64 KiB"},
			minor: []float64{100, 200, 500, 1000, 2000, 9000, 60000}},
		{name: "IOTLB ways", log: true, values: []float64{1, 2, 4, 8, 16}, lo: 1, hi: 16,
			title: "IOTLB ways", want: []string{"1=1", "2=2", "4=4", "8=8", "16=16"}, minor: []float64{3, 5, 9, 10}},
		// 101 is too close to 100 for a label of its own: a bare tick.
		{name: "crowded", values: []float64{100, 101, 200}, lo: 100, hi: 200,
			title: "crowded", want: []string{"100=100", "200=200"}, minor: []float64{101}},
		{name: "one value", values: []float64{4}, lo: 4, hi: 4, title: "one value", want: []string{"4=4"}, noMinor: true},
	} {
		tk := newAxisTicks(c.log, parseUnit(c.unit), c.values)
		if got := tk.title(c.name, c.lo, c.hi); got != c.title {
			t.Errorf("%s: title %q, want %q", c.name, got, c.title)
		}
		ts := tk.Ticks(c.lo, c.hi)
		if got := labelled(ts); !slices.Equal(got, c.want) {
			t.Errorf("%s: labelled ticks %q, want %q", c.name, got, c.want)
		}
		minor := unlabelled(ts)
		for _, m := range c.minor {
			if !slices.ContainsFunc(minor, func(v float64) bool { return near(v, m, 1e-9) }) {
				t.Errorf("%s: no unlabelled tick at %v (have %v)", c.name, m, minor)
			}
		}
		if c.noMinor && len(minor) > 0 {
			t.Errorf("%s: unlabelled ticks %v", c.name, minor)
		}
		if !slices.IsSortedFunc(ts, func(a, b plot.Tick) int { return int(math.Copysign(1, a.Value-b.Value)) }) {
			t.Errorf("%s: ticks out of order: %v", c.name, ts)
		}
	}
}

// More X values than maxDataTicks: the ticks go at round values.
func TestManyValuesRoundTicks(t *testing.T) {
	var vs []float64
	for i := 1; i <= maxDataTicks+1; i++ {
		vs = append(vs, float64(3*i))
	}
	tk := newAxisTicks(false, parseUnit(""), vs)
	tk.title("x", 3, vs[len(vs)-1])
	got := labelled(tk.Ticks(3, vs[len(vs)-1]))
	if len(got) == 0 || len(got) >= len(vs) {
		t.Fatalf("labelled ticks %q", got)
	}
	for _, l := range got {
		v, _ := strconv.ParseFloat(strings.Split(l, "=")[0], 64)
		if math.Mod(v, 5) != 0 {
			t.Errorf("tick %s is not at a round value", l)
		}
	}
}

// Log axes label 1, 2 and 5 × 10^k, not only the decades; 1 and 3 over
// more decades, decades alone over very many; a narrow range has every
// 1…9 × 10^k labelled, a narrower one gonum's linear ticks.
func TestLogTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64 // the labelled values
		all    int       // ticks in all, labelled or not (0: unchecked)
	}{
		{1, 1000, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}, 28},
		{64, 65536, []float64{100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000}, 0},
		{1.3e7, 1.2e8, []float64{2e7, 5e7, 1e8}, 9},
		{1, 1e6, []float64{1, 3, 10, 30, 100, 300, 1000, 3000, 1e4, 3e4, 1e5, 3e5, 1e6}, 55},
		{1, 1e9, []float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}, 82},
		{150, 300, []float64{200, 300}, 2},
		{0.002, 0.011, []float64{0.002, 0.005, 0.01}, 0},
	} {
		ts := logTicks(c.lo, c.hi)
		var got []float64
		for _, tk := range ts {
			if tk.Label != "" {
				got = append(got, tk.Value)
			}
			if !within(tk.Value, c.lo, c.hi) {
				t.Errorf("[%v, %v]: tick %v outside", c.lo, c.hi, tk.Value)
			}
		}
		if !slices.EqualFunc(got, c.want, func(a, b float64) bool { return near(a, b, 1e-9) }) {
			t.Errorf("[%v, %v]: labelled %v, want %v", c.lo, c.hi, got, c.want)
		}
		if c.all > 0 && len(ts) != c.all {
			t.Errorf("[%v, %v]: %d ticks, want %d", c.lo, c.hi, len(ts), c.all)
		}
	}
	// No 1…9 × 10^k inside: gonum's ticks, two or more, in the range.
	ts := logTicks(150, 190)
	if n := len(labelled(ts)); n < 2 {
		t.Errorf("[150, 190]: %d labels: %v", n, ts)
	}
	for _, tk := range ts {
		if !within(tk.Value, 150, 190) {
			t.Errorf("[150, 190]: tick %v outside", tk.Value)
		}
	}
}

// Y axes: round ticks written with the prefix of the largest, the title
// saying which; never a k on a unit that takes a prefix.
func TestValueAxisTicks(t *testing.T) {
	for _, c := range []struct {
		log         bool
		words, unit string
		lo, hi      float64
		title       string
		want        []string // some of the labelled ticks
	}{
		{false, "NICs' energy", "µJ", 2000, 35000, "NICs' energy (mJ)", nil},
		{false, "inserts per second", "", 1e5, 9.5e6, "inserts per second", nil},
		{true, "payload bandwidth", "B/s", 1.3e7, 1.2e8, "payload bandwidth (MB/s)", []string{"2e+07=20", "5e+07=50", "1e+08=100"}},
		{false, "simulated time", "µs", 0, 0.8, "simulated time (ns)", nil},
		{false, "IOTLB hit rate", "", 0.2, 0.9, "IOTLB hit rate", nil},
	} {
		tk := newAxisTicks(c.log, parseUnit(c.unit), nil)
		if got := tk.title(c.words, c.lo, c.hi); got != c.title {
			t.Errorf("%s: title %q, want %q", c.words, got, c.title)
		}
		got := labelled(tk.Ticks(c.lo, c.hi))
		if len(got) < 2 {
			t.Errorf("%s: labels %q", c.words, got)
		}
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: no tick %q in %q", c.words, w, got)
			}
		}
		for _, l := range got {
			v, lab, _ := strings.Cut(l, "=")
			x, err := strconv.ParseFloat(lab, 64)
			if c.unit != "" && (err != nil || math.Abs(x) >= 1000) {
				t.Errorf("%s: tick %s=%s is not a number below 1000", c.words, v, lab)
			}
		}
	}
}
