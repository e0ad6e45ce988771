package paper

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aaemu/aaemu/workload"
)

// resumable is a custom figure of 2 X × 2 categories × 2 schemes whose
// value is a function of the point (with digits that a CSV's 8 significant
// digits round), counting the experiments it runs.
func resumable() (*Custom, *[]string) {
	var mu sync.Mutex
	var ran []string
	c := NewCustom(Custom{X: []int{8, 32}, XLabel: "processors", Categories: []string{"a", "b/c"}, CategoryLabel: "run",
		Schemes: []workload.Scheme{"one, two", "three"}, YLabel: "run time", YUnit: "s"},
		func(_ context.Context, x int, cat string, s workload.Scheme) (float64, error) {
			mu.Lock()
			ran = append(ran, cat+" "+string(s))
			mu.Unlock()
			return float64(x)/3 + float64(len(cat)) + float64(len(s))/7, nil
		})
	return c, &ran
}

// A figure run in parts, --runs first and --resume after, writes the
// same points.csv to the byte as a whole run, and runs each experiment
// once.
func TestRunSomeResumes(t *testing.T) {
	whole, _ := resumable()
	all, err := whole.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := whole.WriteCSV(&want, all); err != nil {
		t.Fatal(err)
	}

	c, ran := resumable()
	only := func(p Point) bool { return strings.Contains(c.Label(p), "b/c") }
	if run, kept := c.Plan(nil, only); run != 4 || kept != 0 {
		t.Fatalf("plan of the first part: run %d, kept %d; want 4, 0", run, kept)
	}
	var part []Point
	if err := c.RunSome(context.Background(), 2, nil, only, func(p Point) { part = append(part, p) }, nil); err != nil {
		t.Fatal(err)
	}
	if len(part) != 4 || len(*ran) != 4 {
		t.Fatalf("first part: %d points, %d runs; want 4 of category b/c", len(part), len(*ran))
	}
	var first bytes.Buffer
	if err := c.WriteCSV(&first, part); err != nil {
		t.Fatal(err)
	}
	have, err := c.ReadCSV("points.csv", &first)
	if err != nil {
		t.Fatal(err)
	}
	if run, kept := c.Plan(have, nil); run != 4 || kept != 4 {
		t.Fatalf("plan of the rest: run %d, kept %d; want 4, 4", run, kept)
	}
	*ran = nil
	var rest []Point
	if err := c.RunSome(context.Background(), 2, have, nil, func(p Point) { rest = append(rest, p) }, nil); err != nil {
		t.Fatal(err)
	}
	if len(*ran) != 4 || slices.ContainsFunc(*ran, func(s string) bool { return strings.HasPrefix(s, "b/c") }) {
		t.Fatalf("the rest ran %q, want the 4 experiments of category a only", *ran)
	}
	var got bytes.Buffer
	if err := c.WriteCSV(&got, rest); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("resumed points.csv:\n%s\nwant, as a whole run:\n%s", got.String(), want.String())
	}
	// Nothing left: a resume runs nothing.
	have, err = c.ReadCSV("points.csv", strings.NewReader(got.String()))
	if err != nil {
		t.Fatal(err)
	}
	*ran = nil
	if err := c.RunSome(context.Background(), 1, have, nil, func(Point) {}, nil); err != nil || len(*ran) != 0 {
		t.Fatalf("a resume of a whole run ran %q (%v)", *ran, err)
	}
}

func TestReadCSVErrors(t *testing.T) {
	c, _ := resumable()
	head := "processors,run,scheme,run_time\n"
	for _, tc := range []struct{ csv, want string }{
		{"nodes,scheme,y\n", "p.csv:1: header"},
		{head + "8,a,three,1\n8,a,three,2\n", `p.csv:3: "processors 8 a three" a second time`},
		{head + "16,a,three,1\n", `p.csv:2: "processors 16 a three" is not an experiment of the figure`},
		{head + "8,d,three,1\n", "is not an experiment"},
		{head + "8,a,four,1\n", "is not an experiment"},
		{head + "x,a,three,1\n", `p.csv:2: processors "x": want an integer`},
		{head + "8,a,three,NaN\n", `p.csv:2: run_time "NaN": want a finite number`},
		{head + "8,a,three,\n", "want a finite number"},
		{head + "8,a,three\n", "p.csv:2: 3 fields, want 4"},
	} {
		_, err := c.ReadCSV("p.csv", strings.NewReader(tc.csv))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.csv, err, tc.want)
		}
	}
	if pts, err := c.ReadCSV("p.csv", strings.NewReader("")); err != nil || len(pts) != 0 {
		t.Fatalf("an empty file (created, nothing written): %v, %v", pts, err)
	}
}
