package verify

import (
	"encoding/binary"
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
		{"the put among the get read again", func(l []Record) []Record { return reseq([]Record{l[0], l[1], l[0], l[2], l[1]}) }, "", 1, 0},
		{"the get read again out of order", func(l []Record) []Record { return reseq([]Record{l[0], l[1], l[2], l[1], l[0]}) }, "api.log", 0, 0},
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

// Two NICs, an atomic and a send: the golden model accepts the rails'
// records interleaved either way, and refuses a record of the wrong NIC,
// an atomic's wrong result or record twice, a send in the wrong receive
// request, and interrupt handlers that do not match the log MSIs.
func TestCompareAPIRailsAtomicsSends(t *testing.T) {
	build := func() (*APIStimulus, *APIPrediction, *APIObservation) {
		s := &APIStimulus{Level: APILevel, Seed: 1, PMTU: 1024, MPS: 256, MRRS: 512, NICs: 2,
			Logs:  []Log{{IUID: 1, Size: 4096, Mode: 1}},
			Pages: []APIPage{{Addr: APIBase, Bits: pte.R | pte.W | pte.WLD | pte.E, IUID: 1}},
			Ops: []APIOp{
				{Kind: "put", Remote: APIBase, Len: 8, Data: []byte("abcdefgh")},
				{Kind: "fadd", Remote: APIBase + 0x100, Len: 8, Operand: 5, Rail: 1},
				{Kind: "send", Remote: APIBase + 0x200, Len: 4, Data: []byte("wxyz"), Rail: 1},
				{Kind: "send", Remote: APIBase + 0x300, Len: 4, Data: []byte("WXYZ"), Rail: 1},
			},
		}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		p := PredictAPI(s)
		o := &APIObservation{Memory: p.Memory, Logs: map[uint16][]Record{}, Gets: p.Gets, Failed: p.Failed, Flushes: map[int]int{},
			Atomics: map[int]uint64{}, Recvs: map[int]APIRecv{}, Events: map[string]uint64{"log_msis": 3, "interrupts": 3}}
		for i, v := range p.Atomics {
			o.Atomics[i] = v
		}
		for i, r := range p.Recvs {
			o.Recvs[i] = r
		}
		for _, r := range p.Logs[1] {
			o.Logs[1] = append(o.Logs[1], Record{Header: r.Header, Data: append([]byte(nil), r.Data...)})
		}
		return s, p, o
	}
	_, p, _ := build()
	if l := p.Logs[1]; len(l) != 4 || l[0].Requester != APIRequesterOf(0) || l[1].Kind != record.Atomic || l[1].Requester != APIRequesterOf(1) ||
		p.Recvs[3].Index != 1 || p.Atomics[1] != binary.LittleEndian.Uint64(p.Memory[APIBase][0x100:])-5 {
		t.Fatalf("prediction %+v, %+v, %+v", p.Logs[1], p.Recvs, p.Atomics)
	}
	reseq := func(rs []Record) []Record {
		for i := range rs {
			rs[i].Seq = uint64(i)
		}
		return rs
	}
	cases := []struct {
		name   string
		change func(o *APIObservation)
		block  string
	}{
		{"as predicted", func(o *APIObservation) {}, ""},
		{"rail 1's records first", func(o *APIObservation) { l := o.Logs[1]; o.Logs[1] = reseq([]Record{l[1], l[2], l[0], l[3]}) }, ""},
		{"rail 1's records out of order", func(o *APIObservation) { l := o.Logs[1]; o.Logs[1] = reseq([]Record{l[0], l[2], l[1], l[3]}) }, "api.log"},
		{"the put with the other NIC's requester", func(o *APIObservation) { o.Logs[1][0].Requester = APIRequesterOf(1) }, "api.log"},
		{"a requester of no NIC", func(o *APIObservation) { o.Logs[1][0].Requester = APIRequesterOf(2) }, "api.log"},
		{"the atomic executed twice", func(o *APIObservation) { l := o.Logs[1]; o.Logs[1] = reseq([]Record{l[0], l[1], l[1], l[2], l[3]}) }, "api.log"},
		{"the atomic's result", func(o *APIObservation) { o.Atomics[1]++ }, "api.atomic"},
		{"a send in the next receive request", func(o *APIObservation) { r := o.Recvs[2]; r.Index++; o.Recvs[2] = r }, "api.send"},
		{"a handler run for another vector's MSI", func(o *APIObservation) { o.Events["interrupts"]++ }, "api.msi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, p, o := build()
			tc.change(o)
			mm := CompareAPI(s, p, o)
			switch {
			case tc.block == "" && mm != nil:
				t.Fatalf("refused: %v", mm)
			case tc.block != "" && (mm == nil || mm.Block != tc.block):
				t.Fatalf("got %v, want a mismatch of %s", mm, tc.block)
			}
		})
	}
}
