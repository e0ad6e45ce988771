package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aaemu/aaemu/internal/runctl"
)

// The tables written row by row are byte for byte the tables written at
// once: the JSON the encoder makes of the whole grid, the CSV with a line
// per row.
func TestTablesStreamedAsWhole(t *testing.T) {
	s, err := Parse("s.yaml", []byte(small), ".")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	keys := []string{}
	for _, a := range s.Grid {
		keys = append(keys, a.Key)
	}
	if err := enc.Encode(struct {
		Keys []string `json:"keys"`
		Seed uint64   `json:"seed"`
		Rows []Row    `json:"rows"`
	}{keys, s.base.Seed, rows}); err != nil {
		t.Fatal(err)
	}
	var c, j bytes.Buffer
	tb := s.NewTables(&c, &j)
	for _, r := range rows {
		before := c.Len()
		if err := tb.Add([]Row{r}); err != nil {
			t.Fatal(err)
		}
		if c.Len() == before {
			t.Fatal("a row added to the CSV was not written through")
		}
	}
	if err := tb.Close(true); err != nil {
		t.Fatal(err)
	}
	if j.String() != want.String() {
		t.Fatalf("streamed JSON differs from the encoder's:\n%s\n---\n%s", j.String(), want.String())
	}
	var whole bytes.Buffer
	if err := s.WriteCSV(&whole, rows); err != nil {
		t.Fatal(err)
	}
	if c.String() != whole.String() || strings.Count(c.String(), "\n") != len(rows)+1 {
		t.Fatalf("streamed CSV:\n%s\n---\n%s", c.String(), whole.String())
	}
}

// A sweep cancelled while it runs stops its points between slices, emits
// the points that finished, in grid order, and says it was interrupted; the
// JSON it leaves says it is not complete and parses.
func TestRunStreamInterrupted(t *testing.T) {
	s, err := Parse("s.yaml", []byte(small), ".")
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Run(1, nil)
	if err != nil {
		t.Fatal(err)
	}
	perPoint := len(all) / len(s.Points())
	ctx, cancel := context.WithCancel(context.Background())
	var c, j bytes.Buffer
	tb := s.NewTables(&c, &j)
	var points atomic.Int32
	err = s.RunStream(ctx, 1, func(rows []Row) { tb.Add(rows) }, func() {
		if points.Add(1) == 2 {
			cancel() // after the second point: the rest never starts
		}
	})
	if !errors.Is(err, runctl.ErrInterrupted) {
		t.Fatalf("error %v, want interrupted", err)
	}
	if err := tb.Close(false); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+2*perPoint {
		t.Fatalf("%d CSV lines, want a header and the %d rows of the two finished points", len(recs), 2*perPoint)
	}
	var got struct {
		Rows     []Row
		Complete *bool
	}
	if err := json.Unmarshal(j.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, j.String())
	}
	if len(got.Rows) != 2*perPoint || got.Complete == nil || *got.Complete {
		t.Fatalf("%d rows, complete %v", len(got.Rows), got.Complete)
	}
	for i, r := range got.Rows {
		if !reflect.DeepEqual(r.Result, all[i].Result) {
			t.Fatalf("row %d differs from the uninterrupted sweep's", i)
		}
	}
}

// Ordered emits in index order whatever order the calls finish in, skips
// failed ones, and after a cancel emits what finished behind a gap.
func TestOrderedEmitsInOrder(t *testing.T) {
	var got []int
	n := Ordered(context.Background(), 20, 4, func(i int) bool { return i%7 != 3 }, func(i int) { got = append(got, i) })
	if n != 17 || len(got) != 17 {
		t.Fatalf("%d succeeded, %d emitted", n, len(got))
	}
	for k := 1; k < len(got); k++ {
		if got[k] <= got[k-1] {
			t.Fatalf("emitted out of order: %v", got)
		}
	}
}
