package verify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// apiReplayStim is a small API-level stimulus with one of each operation and
// a stressed link, as a replay file holds it.
func apiReplayStim() *APIStimulus {
	return &APIStimulus{Level: APILevel, Seed: 1, PMTU: 1024, MPS: 256, MRRS: 512,
		Pages: []APIPage{{Addr: APIBase, Bits: 3, IUID: 1}, {Addr: APIBase + 4096, Bits: 3, IUID: 2}},
		Logs:  []Log{{IUID: 1, Size: 4096, Mode: 0}, {IUID: 2, Size: 8192, Mode: 2}},
		Ops: []APIOp{
			{Kind: "put", Remote: APIBase + 16, Len: 4, Data: []byte{1, 2, 3, 4}},
			{Kind: "get", Remote: APIBase + 4096, Len: 100},
			{Kind: "flush", IUID: 2},
		},
		Link: &APILink{Down: true, PH: 2, NPH: 1, LossPPM: 10_000, LatencyNS: 1000},
	}
}

// Every mistake in an API-level replay file is "file:line: key: what is
// wrong (what is allowed)", exactly.
func TestAPIReplayErrors(t *testing.T) {
	b, err := json.MarshalIndent(apiReplayStim(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	if _, err := ParseAPI("a.json", b); err != nil {
		t.Fatalf("the directed stimulus: %v", err)
	}
	cases := []struct{ name, old, new, want string }{
		{"unknown key", `"pmtu"`, `"ptmu"`, `ptmu: unknown key (did you mean "pmtu"?)`},
		{"level", `"level": "api"`, `"level": "iommu"`, `level: "iommu" is not the API level ("api")`},
		{"pmtu", `"pmtu": 1024`, `"pmtu": 1000`, "pmtu: 1000 is not a path MTU (256, 512, 1024, 2048 or 4096)"},
		{"mps", `"mps": 256`, `"mps": 64`, "mps: 64 is not a payload size (a power of two from 128 to 4096)"},
		{"mrrs", `"mrrs": 512`, `"mrrs": 8192`, "mrrs: 8192 is not a read request size (a power of two from 128 to 4096)"},
		{"page unaligned", `"addr": 1879048192`, `"addr": 1879048193`, "pages[0].addr: 0x70000001 (a multiple of 4096 from 0x70000000 to 0x700ff000)"},
		{"page twice", `"addr": 1879052288`, `"addr": 1879048192`, "pages[1].addr: 0x70000000 is pages[0]'s too (a page once)"},
		{"page bits", `"bits": 3,`, `"bits": 4,`, "pages[0].bits: 0x4 has other bits (R, W, WL, WLD, RL, RLD and E only)"},
		{"page without a log", `"iuid": 1
  },
  {
   "addr"`, `"iuid": 9
  },
  {
   "addr"`, "pages[0].iuid: 9 has no log (the IUID of one of logs)"},
		{"log too small", `"size": 4096`, `"size": 1024`, "logs[0].size: 1024 is out of range (a multiple of 8 from 1088 (two records of the largest payload) to 1048576 bytes)"},
		{"log mode", `"mode": 2`, `"mode": 3`, "logs[1].mode: 3 is not a notification mode (0: Poll, 1: Int, 2: SP)"},
		{"log iuid 0", `"iuid": 2,
   "size"`, `"iuid": 0,
   "size"`, "logs[1].iuid: 0 is out of range (1..1023: 10 bits)"},
		{"kind", `"kind": "flush"`, `"kind": "swap"`, `ops[2].kind: "swap" is no operation (put, get, flush, fadd, cas or send)`},
		{"put data", `"len": 4`, `"len": 5`, "ops[0].len: 5, but data holds 4 bytes (the bytes of data)"},
		{"off the pages", `"remote": 1879052288`, `"remote": 1879056384`, "ops[1].remote: 0x70002000+100 reaches page 0x70002000, which is not one of pages (bytes of pages only)"},
		{"wrapping around", `"remote": 1879048208`, `"remote": 18446744073709551615`, "ops[0].remote: 0xffffffffffffffff+4 is outside them (bytes of pages only, from 0x70000000)"},
		{"flush without a log", `"iuid": 2
  }
 ],
 "pmtu"`, `"iuid": 5
  }
 ],
 "pmtu"`, "ops[2].iuid: 5 has no log (the IUID of one of logs)"},
		{"credits", `"ph": 2`, `"ph": 100`, "link.ph: 100 is out of range (0 (the default) or 1..64)"},
		{"loss", `"loss_ppm": 10000`, `"loss_ppm": 1000000`, "link.loss_ppm: 1000000 is out of range (0..100000 per million)"},
		{"latency", `"latency_ns": 1000`, `"latency_ns": -1`, "link.latency_ns: -1 is out of range (0 (the default) or 1..10000 ns)"},
		{"wrong type", `"down": true`, `"down": 1`, "link.down: 1 is not true or false (true or false)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Count(good, c.old) < 1 {
				t.Fatalf("%q is not in the file", c.old)
			}
			file := strings.Replace(good, c.old, c.new, 1)
			want := fmt.Sprintf("a.json:%d: %s", lineOf(good, c.old), c.want)
			_, err := ParseAPI("a.json", []byte(file))
			if err == nil || err.Error() != want {
				t.Fatalf("\n got %v\nwant %s", err, want)
			}
		})
	}
	// A put on the bytes of an earlier get has no single right answer.
	s := apiReplayStim()
	s.Ops = append(s.Ops, APIOp{Kind: "put", Remote: APIBase + 4096 + 50, Len: 1, Data: []byte{9}})
	b, _ = json.MarshalIndent(s, "", " ")
	want := "ops[3].remote: 0x70001032+1 overlaps ops[1] (no byte of an earlier get on its rail (RC lets a write pass a read), none of another rail's operation when one of the two writes (the rails are not ordered))"
	if _, err := ParseAPI("a.json", b); err == nil || !strings.HasSuffix(err.Error(), want) || !strings.HasPrefix(err.Error(), "a.json:") {
		t.Fatalf("got %v, want a.json:N: %s", err, want)
	}
}

// Every API-level stimulus the generator makes is a valid replay file, and
// is told from the IOMMU level's.
func TestGeneratedAPIStimuliParse(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		b, err := json.MarshalIndent(GenerateAPI(seed), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if !IsAPIReplay(b) {
			t.Fatalf("seed %d: not seen as an API-level file", seed)
		}
		if _, err := ParseAPI("a.json", b); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	b, _ := json.Marshal(Generate(1))
	if IsAPIReplay(b) || IsAPIReplay([]byte("{")) {
		t.Fatal("an IOMMU-level file, or one that is not JSON, seen as API-level")
	}
}

// ShrinkAPI keeps what the failure needs and drops the rest: operations,
// the links' stress, the pages no operation touches.
func TestShrinkAPI(t *testing.T) {
	for _, c := range []struct {
		name      string
		fails     func(*APIStimulus) bool
		ops       int
		link      bool
		pages     int
		firstKind string
	}{
		{"a get alone", func(s *APIStimulus) bool {
			for _, op := range s.Ops {
				if op.Kind == "get" && op.Len > 1000 {
					return true
				}
			}
			return false
		}, 1, false, 1, "get"},
		{"a put then a flush, on a lossy wire", func(s *APIStimulus) bool {
			put := false
			for _, op := range s.Ops {
				put = put || op.Kind == "put"
				if put && op.Kind == "flush" {
					return s.Link != nil && s.Link.LossPPM > 0
				}
			}
			return false
		}, 2, true, 0, "put"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 40; seed++ {
				s := GenerateAPI(seed)
				if !c.fails(s) {
					continue
				}
				small := ShrinkAPI(s, c.fails)
				if !c.fails(small) || len(small.Ops) != c.ops || (small.Link != nil) != c.link || small.Ops[0].Kind != c.firstKind {
					t.Fatalf("seed %d: shrunk to %+v", seed, small)
				}
				if c.pages > 0 && len(small.Pages) != c.pages && !(len(small.Pages) == 2 && small.Ops[0].Remote&0xfff+uint64(small.Ops[0].Len) > 4096) {
					t.Fatalf("seed %d: %d pages kept", seed, len(small.Pages))
				}
				if err := small.Validate(); err != nil {
					t.Fatalf("seed %d: the shrunk stimulus: %v", seed, err)
				}
				if len(s.Ops) < 2 {
					t.Fatalf("seed %d: the original was not shrunk but cloned", seed)
				}
				return
			}
			t.Fatal("no seed fails")
		})
	}
}
