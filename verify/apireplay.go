package verify

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
)

// An API-level failure is shrunk and written as a replay file, as an
// IOMMU-level one is: the file says "level": "api" and holds the whole
// stimulus (pages, logs, operations, the links' and wires' stress), so it
// replays without the generator.

// APILevel is the value of an API-level replay file's "level" key.
const APILevel = "api"

// Limits of an API-level replay file.
const (
	MaxAPIPages = 256 // from APIBase: 1 MB of node 1, clear of what its node allocates
	MaxAPILogs  = 8
	MaxAPIOps   = 4096
	MaxAPILen   = 1 << 16 // a put's or a get's bytes
	MaxAPIPPM   = 100_000 // 10 % of frames lost, duplicated or held back
	MaxAPILatNS = 10_000
	MaxAPICred  = 64
	MaxAPINICs  = 4 // a node's NICs (machine.MaxNICs)
	// MaxAPILateNS bounds how late node 1 posts its receive requests
	// (each RNR NAK costs the sender 10 µs) and how long its handler
	// takes over a record.
	MaxAPILateNS = 1_000_000
)

// ShrinkAPI reduces a failing API-level stimulus to a small one that still
// fails: delta debugging over its operations (removing a put or a get
// keeps the program race-free), then without the links' and wires' stress
// and the pages no operation touches, if the failure does not need them.
func ShrinkAPI(s *APIStimulus, fails func(*APIStimulus) bool) *APIStimulus {
	cur := s.clone()
	chunk := len(cur.Ops) / 2
	for chunk >= 1 {
		removed := false
		for start := 0; start < len(cur.Ops); {
			end := min(start+chunk, len(cur.Ops))
			try := cur.clone()
			try.Ops = append(append([]APIOp(nil), cur.Ops[:start]...), cur.Ops[end:]...)
			if len(try.Ops) > 0 && fails(try) {
				cur, removed = try, true
				continue // the same start now holds the next chunk
			}
			start = end
		}
		if !removed {
			chunk /= 2
		}
	}
	if cur.Link != nil {
		try := cur.clone()
		try.Link = nil
		if fails(try) {
			cur = try
		}
	}
	// The pages no operation touches, if the failure does not need them.
	try := cur.clone()
	try.Pages = try.Pages[:0]
	for _, pg := range cur.Pages {
		for _, op := range cur.Ops {
			if op.Kind != "flush" && op.Remote < pg.Addr+4096 && pg.Addr < op.Remote+uint64(op.Len) {
				try.Pages = append(try.Pages, pg)
				break
			}
		}
	}
	if len(try.Pages) > 0 && len(try.Pages) < len(cur.Pages) && fails(try) {
		cur = try
	}
	return cur
}

func (s *APIStimulus) clone() *APIStimulus {
	c := *s
	c.Pages = append([]APIPage(nil), s.Pages...)
	c.Logs = append([]Log(nil), s.Logs...)
	c.Ops = append([]APIOp(nil), s.Ops...)
	if s.Link != nil {
		l := *s.Link
		c.Link = &l
	}
	return &c
}

// Save writes the stimulus as a replay file (JSON).
func (s *APIStimulus) Save(path string) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// IsAPIReplay reports whether a replay file's text is an API-level one (its
// "level" key says "api"). Text that is not JSON is not: the IOMMU level's
// parser then names the mistake.
func IsAPIReplay(data []byte) bool {
	var head struct {
		Level string `json:"level"`
	}
	return json.Unmarshal(data, &head) == nil && head.Level == APILevel
}

// ParseAPI reads an API-level replay file: every key one of the
// stimulus's, every value of its type and in its range (ValidateAPI), each
// mistake "file:line: key: what is wrong (what is allowed)".
func ParseAPI(name string, data []byte) (*APIStimulus, error) {
	return parseReplay[APIStimulus](name, data, apiAllowed)
}

var apiAllowed = map[string]string{
	"pages[].iuid": "1..1023: the IUID of one of logs",
	"logs[].iuid":  "1..1023: 10 bits",
	"logs[].mode":  "0: Poll, 1: Int, 2: SP",
	"ops[].kind":   "put, get, flush, fadd, cas or send",
}

func pow2In(v, lo, hi int) bool { return v >= lo && v <= hi && v&(v-1) == 0 }

// Validate checks what a replay file may hold before anything is built:
// the transport's sizes, pages of node 1 from APIBase, a log for every IUID
// a page or a flush names, operations on registered pages only, and a
// race-free program (no put on the bytes of an earlier get: RC lets the
// put pass the get, so the program would have no single right answer).
func (s *APIStimulus) Validate() error {
	bad := func(key, allowed, format string, a ...any) error {
		return &input.Error{Key: key, Problem: fmt.Sprintf(format, a...), Allowed: allowed}
	}
	switch {
	case s.Level != APILevel:
		return bad("level", `"api"`, "%q is not the API level", s.Level)
	case !pow2In(s.PMTU, 256, 4096):
		return bad("pmtu", "256, 512, 1024, 2048 or 4096", "%d is not a path MTU", s.PMTU)
	case !pow2In(s.MPS, 128, 4096):
		return bad("mps", "a power of two from 128 to 4096", "%d is not a payload size", s.MPS)
	case !pow2In(s.MRRS, 128, 4096):
		return bad("mrrs", "a power of two from 128 to 4096", "%d is not a read request size", s.MRRS)
	case len(s.Pages) < 1 || len(s.Pages) > MaxAPIPages:
		return bad("pages", fmt.Sprintf("1..%d pages", MaxAPIPages), "%d pages", len(s.Pages))
	case len(s.Logs) > MaxAPILogs:
		return bad("logs", fmt.Sprintf("0..%d logs", MaxAPILogs), "%d logs", len(s.Logs))
	case len(s.Ops) > MaxAPIOps:
		return bad("ops", fmt.Sprintf("0..%d operations", MaxAPIOps), "%d operations", len(s.Ops))
	case s.RecvAhead < 0 || s.RecvAhead > MaxAPIOps:
		return bad("recv_ahead", fmt.Sprintf("0 (every receive request at the start) to %d", MaxAPIOps), "%d is out of range", s.RecvAhead)
	case s.RecvLateNS < 0 || s.RecvLateNS > MaxAPILateNS:
		return bad("recv_late_ns", fmt.Sprintf("0..%d ns", MaxAPILateNS), "%d is out of range", s.RecvLateNS)
	case s.HandlerNS < 0 || s.HandlerNS > MaxAPILateNS:
		return bad("handler_ns", fmt.Sprintf("0..%d ns", MaxAPILateNS), "%d is out of range", s.HandlerNS)
	case s.NICs < 0 || s.NICs > MaxAPINICs:
		return bad("nics", fmt.Sprintf("0 or 1 (one NIC a node) to %d", MaxAPINICs), "%d is out of range", s.NICs)
	}
	end := uint64(APIBase) + MaxAPIPages*4096
	// A log holds at least two of its largest records.
	minLog := 2 * (record.HeaderSize + uint64(max(s.MPS, s.MRRS)))
	logs := map[uint16]int{}
	for i, l := range s.Logs {
		k := fmt.Sprintf("logs[%d]", i)
		switch {
		case l.IUID < 1 || l.IUID > maxIUID:
			return bad(k+".iuid", "1..1023: 10 bits", "%d is out of range", l.IUID)
		case l.Size < minLog || l.Size > MaxLogSize || l.Size%8 != 0:
			return bad(k+".size", fmt.Sprintf("a multiple of 8 from %d (two records of the largest payload) to %d bytes", minLog, MaxLogSize), "%d is out of range", l.Size)
		case l.Mode > 2:
			return bad(k+".mode", "0: Poll, 1: Int, 2: SP", "%d is not a notification mode", l.Mode)
		}
		if j, ok := logs[l.IUID]; ok {
			return bad(k+".iuid", "a log per IUID", "%d is logs[%d]'s too", l.IUID, j)
		}
		logs[l.IUID] = i
	}
	const bits = pte.R | pte.W | pte.WL | pte.WLD | pte.RL | pte.RLD | pte.E
	pages := map[uint64]int{}
	for i, p := range s.Pages {
		k := fmt.Sprintf("pages[%d]", i)
		switch {
		case p.Addr%4096 != 0 || p.Addr < APIBase || p.Addr >= end:
			return bad(k+".addr", fmt.Sprintf("a multiple of 4096 from %#x to %#x", APIBase, end-4096), "%#x", p.Addr)
		case p.Bits&^bits != 0:
			return bad(k+".bits", "R, W, WL, WLD, RL, RLD and E only", "%#x has other bits", p.Bits)
		}
		if _, ok := logs[p.IUID]; !ok {
			return bad(k+".iuid", "the IUID of one of logs", "%d has no log", p.IUID)
		}
		if j, ok := pages[p.Addr]; ok {
			return bad(k+".addr", "a page once", "%#x is pages[%d]'s too", p.Addr, j)
		}
		pages[p.Addr] = i
	}
	for i, op := range s.Ops {
		k := fmt.Sprintf("ops[%d]", i)
		if op.Rail < 0 || op.Rail >= max(s.NICs, 1) {
			return bad(k+".rail", fmt.Sprintf("0..%d: a NIC of the node (nics)", max(s.NICs, 1)-1), "%d is out of range", op.Rail)
		}
		switch op.Kind {
		case "fadd", "cas":
			if op.Len != 8 || len(op.Data) > 0 {
				return bad(k+".len", "8 and no data: a 64-bit atomic", "%d bytes, %d of data", op.Len, len(op.Data))
			}
			if _, ok := pages[op.Remote&^0xfff]; !ok || op.Remote%8 != 0 {
				return bad(k+".remote", "an aligned word of one of pages", "%#x is not", op.Remote)
			}
			if op.Kind == "fadd" && op.Compare != 0 {
				return bad(k+".compare", "none for a fadd", "%#x", op.Compare)
			}
		case "put", "get", "send":
			if op.Len < 1 || op.Len > MaxAPILen {
				return bad(k+".len", fmt.Sprintf("1..%d bytes", MaxAPILen), "%d is out of range", op.Len)
			}
			if op.Kind != "get" && len(op.Data) != op.Len {
				return bad(k+".len", "the bytes of data", "%d, but data holds %d bytes", op.Len, len(op.Data))
			}
			if op.Kind == "get" && len(op.Data) > 0 {
				return bad(k+".data", "none for a get", "%d bytes", len(op.Data))
			}
			if op.Remote < APIBase || op.Remote >= end || op.Remote+uint64(op.Len) > end {
				return bad(k+".remote", fmt.Sprintf("bytes of pages only, from %#x", APIBase), "%#x+%d is outside them", op.Remote, op.Len)
			}
			for a := op.Remote &^ 0xfff; a < op.Remote+uint64(op.Len); a += 4096 {
				if _, ok := pages[a]; !ok {
					return bad(k+".remote", "bytes of pages only", "%#x+%d reaches page %#x, which is not one of pages", op.Remote, op.Len, a)
				}
				if op.Kind == "send" && s.Pages[pages[a]].Bits&pte.W == 0 {
					return bad(k+".remote", "a receive buffer on pages with W", "%#x+%d reaches page %#x, which has no W", op.Remote, op.Len, a)
				}
			}
		case "flush":
			if _, ok := logs[op.IUID]; !ok {
				return bad(k+".iuid", "the IUID of one of logs", "%d has no log", op.IUID)
			}
		default:
			return bad(k+".kind", "put, get, flush, fadd, cas or send", "%q is no operation", op.Kind)
		}
		if apiRaces(s.Ops[:i], op) {
			for j, e := range s.Ops[:i] {
				if apiRaces([]APIOp{e}, op) {
					return bad(k+".remote", "no byte of an earlier get on its rail (RC lets a write pass a read), none of another rail's operation when one of the two writes (the rails are not ordered)",
						"%#x+%d overlaps ops[%d]", op.Remote, op.Len, j)
				}
			}
		}
	}
	if l := s.Link; l != nil {
		switch {
		case l.PH < 0 || l.PH > MaxAPICred:
			return bad("link.ph", fmt.Sprintf("0 (the default) or 1..%d", MaxAPICred), "%d is out of range", l.PH)
		case l.NPH < 0 || l.NPH > MaxAPICred:
			return bad("link.nph", fmt.Sprintf("0 (the default) or 1..%d", MaxAPICred), "%d is out of range", l.NPH)
		case l.LossPPM > MaxAPIPPM:
			return bad("link.loss_ppm", fmt.Sprintf("0..%d per million", MaxAPIPPM), "%d is out of range", l.LossPPM)
		case l.DupPPM > MaxAPIPPM:
			return bad("link.dup_ppm", fmt.Sprintf("0..%d per million", MaxAPIPPM), "%d is out of range", l.DupPPM)
		case l.ReorderPPM > MaxAPIPPM:
			return bad("link.reorder_ppm", fmt.Sprintf("0..%d per million", MaxAPIPPM), "%d is out of range", l.ReorderPPM)
		case l.LatencyNS < 0 || l.LatencyNS > MaxAPILatNS:
			return bad("link.latency_ns", fmt.Sprintf("0 (the default) or 1..%d ns", MaxAPILatNS), "%d is out of range", l.LatencyNS)
		}
	}
	return nil
}
