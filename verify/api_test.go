package verify

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
)

// apiDirected is a get and then a put on one log (the get's data logged),
// and the observation of a machine that did exactly what was predicted.
func apiDirected() (*APIStimulus, *APIPrediction, *APIObservation) {
	s := &APIStimulus{Seed: 1, PMTU: 1024, MPS: 256, MRRS: 512,
		Logs:  []Log{{IUID: 1, Size: 4096}},
		Pages: []APIPage{{Addr: APIBase, Bits: pte.R | pte.W | pte.WLD | pte.RLD | pte.E, IUID: 1}},
		Ops: []APIOp{
			{Kind: "get", Remote: APIBase + 0x100, Len: 600}, // two MRRS pieces: two records
			{Kind: "put", Remote: APIBase + 0x800, Len: 8, Data: []byte("abcdefgh")},
		},
	}
	p := PredictAPI(s)
	o := &APIObservation{Memory: p.Memory, Logs: map[uint16][]Record{}, Gets: p.Gets, Failed: p.Failed, Flushes: map[int]int{}}
	for _, r := range p.Logs[1] {
		if r.Kind != record.Pad {
			o.Logs[1] = append(o.Logs[1], Record{Header: r.Header, Data: append([]byte(nil), r.Data...)})
		}
	}
	return s, p, o
}

// CompareAPI accepts what RC and PCIe allow the responder — a get's
// records again after its first run, a put's records ahead of an earlier
// get's — with the sequence numbers that order gives, and nothing else.
func TestCompareAPIFreedoms(t *testing.T) {
	_, p, _ := apiDirected()
	if n := len(p.Logs[1]); n != 3 {
		t.Fatalf("the directed stimulus logs %d records, want 3 (two of the get, one of the put)", n)
	}
	// reseq numbers the records in the order given, as a log of 4 KB
	// that does not wrap does.
	reseq := func(rs []Record) []Record {
		for i := range rs {
			rs[i].Seq = uint64(i)
		}
		return rs
	}
	cases := []struct {
		name    string
		change  func(l []Record) []Record
		block   string // "" when accepted
		again   int
		passing int
	}{
		{"as predicted", func(l []Record) []Record { return l }, "", 0, 0},
		{"the get read again", func(l []Record) []Record { return reseq(append(l[:2:2], l[0], l[1], l[2])) }, "", 1, 0},
		{"the get read again after the put", func(l []Record) []Record { return reseq(append(l[:3:3], l[0], l[1])) }, "", 1, 0},
		{"the put ahead of the get", func(l []Record) []Record { return reseq([]Record{l[2], l[0], l[1]}) }, "", 0, 1},
		{"the put between the get's records", func(l []Record) []Record { return reseq([]Record{l[0], l[2], l[1]}) }, "", 0, 1},
		{"half the get again", func(l []Record) []Record { return reseq(append(l[:3:3], l[0])) }, "api.log", 0, 0},
		{"the get again before its run ended", func(l []Record) []Record { return reseq([]Record{l[0], l[0], l[1], l[1], l[2]}) }, "api.log", 0, 0},
		{"the get again with other data", func(l []Record) []Record {
			r := l[0]
			r.Data = append([]byte(nil), r.Data...)
			r.Data[0] ^= 1
			return reseq(append(l[:3:3], r, l[1]))
		}, "api.log", 0, 0},
		{"a repeat not counted in the sequence", func(l []Record) []Record { return append(l[:2:2], l[0], l[1], l[2]) }, "api.log", 0, 0},
		{"a put record twice", func(l []Record) []Record { return reseq(append(l[:3:3], l[2])) }, "api.log", 0, 0},
		{"a record lost", func(l []Record) []Record { return l[:2] }, "api.log", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, p, o := apiDirected()
			o.Logs[1] = tc.change(o.Logs[1])
			mm := CompareAPI(s, p, o)
			switch {
			case tc.block == "" && mm != nil:
				t.Fatalf("refused: %v", mm)
			case tc.block != "" && (mm == nil || mm.Block != tc.block):
				t.Fatalf("got %v, want a mismatch of %s", mm, tc.block)
			case tc.block == "" && (o.Scored.ReadAgain != tc.again || o.Scored.PutsPassed != tc.passing):
				t.Fatalf("scored %+v, want %d read again and %d passing", o.Scored, tc.again, tc.passing)
			}
		})
	}
}

// A get after a put may not pass it: reads never pass writes.
func TestCompareAPIGetNeverPassesPut(t *testing.T) {
	s, _, _ := apiDirected()
	s.Ops[0], s.Ops[1] = s.Ops[1], s.Ops[0] // the put first
	p := PredictAPI(s)
	o := &APIObservation{Memory: p.Memory, Logs: map[uint16][]Record{}, Gets: p.Gets, Failed: p.Failed}
	l := p.Logs[1]
	o.Logs[1] = []Record{l[1], l[2], l[0]}
	for i := range o.Logs[1] {
		o.Logs[1][i].Seq = uint64(i)
	}
	if mm := CompareAPI(s, p, o); mm == nil || !strings.Contains(mm.What, "want") {
		t.Fatalf("a get's records ahead of an earlier put accepted: %v", mm)
	}
}
