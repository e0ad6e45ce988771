package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"

	"github.com/aaemu/aaemu/scenario"
)

// Tables writes a sweep's CSV and JSON tables as its rows come: each Add
// writes its rows through to the writers, so a sweep that is stopped keeps
// the rows that finished. The JSON is complete once Close has written its
// end; a sweep that did not finish says so there ("complete": false).
type Tables struct {
	s     *Spec
	csv   *csv.Writer
	json  io.Writer
	names []string
	rows  int
	err   error
}

// NewTables starts the tables on csvW and jsonW (either may be nil): the
// CSV's header and the JSON up to its rows are written at once.
func (s *Spec) NewTables(csvW, jsonW io.Writer) *Tables {
	t := &Tables{s: s, json: jsonW}
	_, t.names = s.metricSet()
	if csvW != nil {
		t.csv = csv.NewWriter(csvW)
		head := []string{}
		for _, a := range s.Grid {
			head = append(head, a.Key)
		}
		if len(s.Seeds) > 0 {
			head = append(head, "seed")
		}
		head = append(head, "scheme")
		if s.base.Workload.Kind == scenario.KindDHT {
			head = append(head, "collisions")
		}
		head = append(head, t.names...)
		head = append(head, "verified")
		t.writeCSV(head)
	}
	if jsonW != nil {
		keys := make([]string, len(s.Grid))
		for i, a := range s.Grid {
			keys[i] = a.Key
		}
		head := struct {
			Keys  []string `json:"keys"`
			Seed  uint64   `json:"seed"`
			Seeds []uint64 `json:"seeds,omitempty"` // a run per point and seed
		}{keys, s.base.Seed, s.Seeds}
		if len(s.Seeds) > 0 {
			head.Seed = s.Seeds[0]
		}
		b, err := json.MarshalIndent(head, "", "  ")
		if err != nil {
			t.err = err
			return t
		}
		b = bytes.TrimSuffix(b, []byte("\n}"))
		t.writeJSON(append(b, ",\n  \"rows\": "...))
	}
	return t
}

func (t *Tables) writeCSV(rec []string) {
	if t.err == nil {
		t.err = t.csv.Write(rec)
	}
}

func (t *Tables) writeJSON(b []byte) {
	if t.err == nil {
		_, t.err = t.json.Write(b)
	}
}

// Add writes rows to both tables; it returns the first error met so far.
func (t *Tables) Add(rows []Row) error {
	ms, _ := t.s.metricSet()
	dht := t.s.base.Workload.Kind == scenario.KindDHT
	for _, r := range rows {
		if t.csv != nil {
			rec := append([]string{}, r.Point...)
			if len(t.s.Seeds) > 0 && r.Seed != nil {
				rec = append(rec, strconv.FormatUint(*r.Seed, 10))
			}
			rec = append(rec, string(r.scheme()))
			if dht {
				rec = append(rec, strconv.FormatFloat(r.Result.Collisions, 'g', -1, 64))
			}
			for _, n := range t.names {
				rec = append(rec, strconv.FormatFloat(ms[n].get(r), 'g', 8, 64))
			}
			rec = append(rec, strconv.FormatBool(r.Result.Verified || r.Workload.Verified))
			t.writeCSV(rec)
		}
		if t.json != nil {
			b, err := json.MarshalIndent(r, "    ", "  ")
			if err != nil && t.err == nil {
				t.err = err
			}
			sep := ",\n    "
			if t.rows == 0 {
				sep = "[\n    "
			}
			t.writeJSON(append([]byte(sep), b...))
		}
		t.rows++
	}
	if t.csv != nil {
		t.csv.Flush()
		if t.err == nil {
			t.err = t.csv.Error()
		}
	}
	return t.err
}

// Close ends the JSON; complete false adds "complete": false (a sweep
// that was stopped or failed). It returns the first error met.
func (t *Tables) Close(complete bool) error {
	if t.json != nil {
		end := "\n  ]"
		if t.rows == 0 {
			end = "null"
		}
		if !complete {
			end += ",\n  \"complete\": false"
		}
		t.writeJSON([]byte(end + "\n}\n"))
	}
	return t.err
}

// MetricNames lists every metric a sweep of any workload can plot.
func MetricNames() []string {
	return append(append([]string{}, dhtOrder...), workloadOrder...)
}
