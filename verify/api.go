package verify

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
)

// The API level: one process on node 0 issues puts, gets and active flushes
// to node 1 through one reliable connection, so their order at the target is
// the order of issue. The golden model predicts node 1's memory, every
// record of its logs and what each get returns, from DESIGN.md §2 and the
// transport's segmentation rules: a put reaches the target as packets of
// PMTU bytes, each written as MWr TLPs of at most MPS bytes on MPS-aligned
// boundaries (one record each); a get is read as MRd requests of at most MRRS
// bytes on MRRS-aligned boundaries (one record each).

// APIPage is a page of node 1 (registered one to one).
type APIPage struct {
	Addr uint64 `json:"addr"`
	Bits uint64 `json:"bits"`
	IUID uint16 `json:"iuid"`
}

// APIOp is one verb the process calls.
type APIOp struct {
	Kind   string `json:"kind"`   // put, get, flush, fadd, cas, send
	Remote uint64 `json:"remote"` // send: the receive buffer node 1 posts for it
	Len    int    `json:"len"`
	Data   []byte `json:"data,omitempty"`
	IUID   uint16 `json:"iuid,omitempty"` // flush: whose log
	// Rail is the NIC of node 0 (and of node 1) the operation goes
	// through (APIStimulus.NICs).
	Rail int `json:"rail,omitempty"`
	// An atomic's operands: fadd adds Operand; cas swaps in Operand when
	// the word is Compare.
	Operand uint64 `json:"operand,omitempty"`
	Compare uint64 `json:"compare,omitempty"`
}

// APIStimulus is one API-level test.
type APIStimulus struct {
	Level string    `json:"level"` // "api": what tells its replay file from the IOMMU level's
	Seed  uint64    `json:"seed"`
	Pages []APIPage `json:"pages"`
	Logs  []Log     `json:"logs"`
	Ops   []APIOp   `json:"ops"`
	PMTU  int       `json:"pmtu"`
	MPS   int       `json:"mps"`
	MRRS  int       `json:"mrrs"`
	// Link stresses the transport: a real down link, small credits, lossy
	// wires (nil: the machine's defaults).
	Link *APILink `json:"link,omitempty"`
	// NICs is the NICs of each node (0 is 1): with two, each operation
	// goes through its rail's, and the two rails' operations are not
	// ordered with each other.
	NICs int `json:"nics,omitempty"`
	// RecvAhead is how many receive requests node 1's process keeps
	// posted ahead of the sends it has reaped, on each rail (0: all of
	// them at the start); a send that finds none is refused with a
	// receiver-not-ready NAK and sent again.
	RecvAhead int `json:"recv_ahead,omitempty"`
	// RecvLateNS is how long node 1's process sleeps before it posts its
	// first receive requests: sends that come earlier are refused with
	// receiver-not-ready NAKs and sent again.
	RecvLateNS int `json:"recv_late_ns,omitempty"`
	// HandlerNS is how long node 1's handler takes over each record: a
	// slow consumer fills a small log, the IOMMU holds back the accesses
	// that would log into it, and posted writes pass the reads it holds.
	HandlerNS int `json:"handler_ns,omitempty"`
}

// APILink is the stress an API-level stimulus puts on the links and wires.
type APILink struct {
	Down    bool   `json:"down"`     // the root port → NIC direction a PCIe link too
	PH      int    `json:"ph"`       // posted header credits of both directions (0: the default)
	NPH     int    `json:"nph"`      // non-posted header credits (0: the default)
	LossPPM uint32 `json:"loss_ppm"` // frames each wire loses per million
	// Frames each wire delivers twice, and holds back for the next one to
	// overtake, per million.
	DupPPM     uint32 `json:"dup_ppm,omitempty"`
	ReorderPPM uint32 `json:"reorder_ppm,omitempty"`
	// LatencyNS is the PCIe links' latency, credits' return included
	// (0: the default 100 ns).
	LatencyNS int `json:"latency_ns,omitempty"`
}

// APIBase is where the generated pages of node 1 start.
const APIBase = 0x7000_0000

// GenerateAPI draws an API-level stimulus.
func GenerateAPI(seed uint64) *APIStimulus {
	r := rand.New(rand.NewPCG(seed, 0xa91))
	s := &APIStimulus{Level: APILevel, Seed: seed, PMTU: 1024, MPS: 256, MRRS: 512,
		Logs: []Log{{IUID: 1, Size: 64 << 10, Mode: 0}, {IUID: 2, Size: 32 << 10, Mode: 2}}}
	kinds := []uint64{pte.R | pte.W, pte.W | pte.WL | pte.E, pte.W | pte.WLD | pte.E, pte.WL | pte.WLD | pte.E,
		pte.R | pte.RL | pte.E, pte.R | pte.RLD | pte.E, pte.R | pte.W | pte.RLD | pte.WLD | pte.E, pte.R | pte.W | pte.WL | pte.RL | pte.E}
	n := 4 + r.IntN(5)
	for i := 0; i < n; i++ {
		s.Pages = append(s.Pages, APIPage{Addr: APIBase + uint64(i)*4096, Bits: kinds[r.IntN(len(kinds))], IUID: uint16(1 + r.IntN(2))})
	}
	span := uint64(n) * 4096
	nops := 5 + r.IntN(25)
	for i := 0; i < nops; i++ {
		switch k := r.IntN(10); {
		case k < 5:
			l := 1 + r.IntN(4096)
			if r.IntN(3) == 0 {
				l = 1 + r.IntN(64)
			}
			at := APIBase + uint64(r.IntN(int(span)-l+1))
			// RC lets a WRITE pass an earlier READ at the responder
			// (posted requests pass non-posted ones waiting for room in
			// a log or for credits; IB orders a READ before a later
			// WRITE only with a fence), so a put onto the bytes of an
			// earlier get is a race whose outcome the program does not
			// fix: the stimulus draws race-free programs.
			for try := 0; try < 8 && overlapsGet(s.Ops, at, l); try++ {
				at = APIBase + uint64(r.IntN(int(span)-l+1))
			}
			if overlapsGet(s.Ops, at, l) {
				continue
			}
			d := make([]byte, l)
			for j := range d {
				d[j] = byte(r.Uint32())
			}
			s.Ops = append(s.Ops, APIOp{Kind: "put", Remote: at, Len: l, Data: d})
		case k < 9:
			l := 1 + r.IntN(2048)
			at := APIBase + uint64(r.IntN(int(span)-l+1))
			s.Ops = append(s.Ops, APIOp{Kind: "get", Remote: at, Len: l})
		default:
			s.Ops = append(s.Ops, APIOp{Kind: "flush", IUID: uint16(1 + r.IntN(2))})
		}
	}
	// Drawn from streams of their own, so the operations above stay those
	// of the seed before links, wires and log sizes were drawn.
	lr := rand.New(rand.NewPCG(seed, 0x11e4))
	if lr.IntN(2) == 0 {
		s.Link = &APILink{Down: lr.IntN(2) == 0, PH: 2 + lr.IntN(6), NPH: 1 + lr.IntN(4)}
	}
	// A long down link with one or two posted header credits: the CPU's
	// doorbells wait for credits while the completions of the NIC's reads
	// queue behind them, which must not pass them (D2a).
	if pl := rand.New(rand.NewPCG(seed, 0x9c1e)); s.Link != nil && s.Link.Down && pl.IntN(2) == 0 {
		s.Link.LatencyNS, s.Link.PH = 1000*(1+pl.IntN(3)), 1+pl.IntN(2)
	}
	// Wires that lose, duplicate and reorder frames: RC's retransmission,
	// its duplicate handling and its sequence NAKs run. A READ sent again
	// is read again, and its records repeat (CompareAPI accepts that).
	wr := rand.New(rand.NewPCG(seed, 0x3e7))
	if wr.IntN(2) == 0 {
		if s.Link == nil {
			s.Link = &APILink{}
		}
		ppm := []uint32{0, 10_000, 30_000}
		s.Link.LossPPM, s.Link.DupPPM = ppm[wr.IntN(3)], ppm[wr.IntN(3)]
		s.Link.ReorderPPM = []uint32{0, 30_000, 100_000}[wr.IntN(3)] // a frame held back waits for the next: most are alone
	}
	// Logs of a few records wrap (PAD records, sequence numbers counting
	// them) and fill, so the IOMMU stalls the NIC's writes and the stall
	// goes back through the link and the wire. A record is at most a
	// header and MRRS bytes; a log holds at least two.
	lg := rand.New(rand.NewPCG(seed, 0x10c5))
	for i := range s.Logs {
		s.Logs[i].Size = []uint64{2048, 4096, 8192, 64 << 10}[lg.IntN(4)]
	}
	extendAPI(s, rand.New(rand.NewPCG(seed, 0x5e2d)))
	if hr := rand.New(rand.NewPCG(seed, 0x4a4d)); hr.IntN(2) == 0 {
		s.HandlerNS = []int{1_000, 5_000, 20_000}[hr.IntN(3)]
	}
	if fr := rand.New(rand.NewPCG(seed, 0xf111)); fr.IntN(3) == 0 {
		fillAPILog(s, fr)
	}
	return s
}

// extendAPI draws, from a stream of its own, Int logs, a second NIC a node,
// atomics and sends among the operations drawn before (which stay, in
// their order, unless the rails make one a race). Half the seeds give log
// 1 Int notification (its MSI runs the handler on the CPU), half of those
// log 2 too, so that two vectors share the core's MSI address; half give
// each node a second NIC and each operation a rail: the two rails' queue
// pairs are not ordered with each other, so an operation that would race
// with one of the other rail (one of them writing bytes the other
// touches) takes the other's rail, or is dropped when both rails have
// one.
func extendAPI(s *APIStimulus, r *rand.Rand) {
	if r.IntN(2) == 0 {
		s.Logs[0].Mode = 1
		if r.IntN(2) == 0 {
			s.Logs[1].Mode = 1
		}
	}
	rails := 1
	if r.IntN(2) == 0 {
		s.NICs, rails = 2, 2
	}
	var writable []APIPage
	for _, pg := range s.Pages {
		if pg.Bits&pte.W != 0 {
			writable = append(writable, pg)
		}
	}
	matchCAS := map[int]bool{} // a cas whose compare is the word's value then
	var ops []APIOp
	add := func(op APIOp) {
		first := r.IntN(rails)
		for _, rail := range []int{first, 1 - first}[:rails] {
			op.Rail = rail
			if !apiRaces(ops, op) {
				ops = append(ops, op)
				return
			}
		}
	}
	extra := func() {
		switch k := r.IntN(10); {
		case k < 3: // an atomic, on any page (one without R or W refuses it)
			pg := s.Pages[r.IntN(len(s.Pages))]
			op := APIOp{Kind: "fadd", Remote: pg.Addr + 8*uint64(r.IntN(512)), Len: 8, Operand: r.Uint64() >> uint(r.IntN(64))}
			if r.IntN(2) == 0 {
				op.Kind, op.Compare = "cas", r.Uint64()
				if r.IntN(2) == 0 {
					matchCAS[len(ops)] = true
				}
			}
			add(op)
		case k < 5 && len(writable) > 0: // a send into a buffer of a writable page
			pg := writable[r.IntN(len(writable))]
			l := 1 + r.IntN(2048)
			if r.IntN(3) == 0 {
				l = 1 + r.IntN(64)
			}
			d := make([]byte, l)
			for j := range d {
				d[j] = byte(r.Uint32())
			}
			add(APIOp{Kind: "send", Remote: pg.Addr + uint64(r.IntN(4096-l+1)), Len: l, Data: d})
		}
	}
	for _, op := range s.Ops {
		extra()
		add(op)
	}
	extra()
	s.Ops = ops
	// A cas that swaps: its compare is the word as the operations before it
	// leave it (those of the other rail touch other bytes).
	for i := range s.Ops {
		if !matchCAS[i] || s.Ops[i].Kind != "cas" {
			continue
		}
		pre := *s
		pre.Ops = s.Ops[:i]
		op := s.Ops[i]
		s.Ops[i].Compare = binary.LittleEndian.Uint64(PredictAPI(&pre).Memory[op.Remote&^0xfff][op.Remote&0xfff:])
	}
	if r.IntN(2) == 0 {
		s.RecvAhead = 1 + r.IntN(2)
	}
	if r.IntN(2) == 0 {
		s.RecvLateNS = []int{2_000, 10_000, 30_000}[r.IntN(3)]
	}
}

// fillAPILog ends the operations with a log that a slow handler keeps
// full: a put of 2 KB whose records carry its data into a log of 2 KB,
// then a get on a page that logs its reads into it, then a short put into
// it again. The IOMMU holds the get's read until the handler frees room,
// and the put's write may pass it (as PCIe lets a posted request pass a
// non-posted one), which the golden model must accept. Nothing when no
// log has such pages.
func fillAPILog(s *APIStimulus, r *rand.Rand) {
	for li := range s.Logs {
		iuid := s.Logs[li].IUID
		var wp, rp []APIPage
		for _, pg := range s.Pages {
			if pg.IUID != iuid || pg.Bits&pte.E == 0 {
				continue
			}
			if pg.Bits&(pte.W|pte.WLD) == pte.W|pte.WLD {
				wp = append(wp, pg)
			}
			if pg.Bits&pte.R != 0 && pg.Bits&(pte.RL|pte.RLD) != 0 {
				rp = append(rp, pg)
			}
		}
		if len(wp) == 0 || len(rp) == 0 {
			continue
		}
		w, g := wp[r.IntN(len(wp))], rp[r.IntN(len(rp))]
		ops := []APIOp{
			{Kind: "put", Remote: w.Addr, Len: 2048},
			{Kind: "get", Remote: g.Addr + 2048 + uint64(r.IntN(1024)), Len: 1 + r.IntN(512)},
			{Kind: "put", Remote: w.Addr + 2048 - 64, Len: 64},
		}
		for _, op := range ops {
			if op.Kind == "put" {
				op.Data = make([]byte, op.Len)
				for j := range op.Data {
					op.Data[j] = byte(r.Uint32())
				}
			}
			if apiRaces(s.Ops, op) {
				return
			}
			s.Ops = append(s.Ops, op)
		}
		s.Logs[li].Size, s.HandlerNS = 2048, 20_000
		return
	}
}

// apiWrites reports whether an operation writes node 1's memory.
func apiWrites(op APIOp) bool {
	return op.Kind == "put" || op.Kind == "send" || op.Kind == "fadd" || op.Kind == "cas"
}

// apiRaces reports whether op, issued after ops, races with one of them:
// on its own rail, a write onto the bytes of an earlier get (RC lets a
// posted write pass a read, and the stimulus does not lean on an atomic
// waiting for one); on the other rail, any two operations on the same
// bytes of which one writes (the rails are not ordered).
func apiRaces(ops []APIOp, op APIOp) bool {
	if op.Kind == "flush" {
		return false
	}
	for _, e := range ops {
		if e.Kind == "flush" || op.Remote >= e.Remote+uint64(e.Len) || e.Remote >= op.Remote+uint64(op.Len) {
			continue
		}
		if e.Rail == op.Rail && e.Kind == "get" && apiWrites(op) {
			return true
		}
		if e.Rail != op.Rail && (apiWrites(op) || apiWrites(e)) {
			return true
		}
	}
	return false
}

// overlapsGet reports whether n bytes at addr overlap a get among ops.
func overlapsGet(ops []APIOp, addr uint64, n int) bool {
	for _, op := range ops {
		if op.Kind == "get" && addr < op.Remote+uint64(op.Len) && op.Remote < addr+uint64(n) {
			return true
		}
	}
	return false
}

// APIPrediction is what the golden model expects at the API level.
type APIPrediction struct {
	Memory  map[uint64][]byte   // page → its 4 KB on node 1 at the end
	Logs    map[uint16][]Record // records in order (GET records with Tag 0: tags are the NIC's choice)
	Gets    map[int][]byte      // what each successful get returned
	Failed  map[int]bool        // gets the target refused (a page without R)
	Flushes map[int]int         // flush op → records of its log that precede it
	// Reads is what each get read, by op: a READ sent again (its response
	// lost, or the request delivered twice) is read again by the
	// responder, as RC has it, and logged again.
	Reads map[int][]Record
	// Writes is what each put and send logged, by op.
	Writes map[int][]Record
	// Atomics is the word each atomic the target executed returned (its
	// records are among Reads: an atomic is non-posted, as a read is,
	// but executed once, never again for a duplicate).
	Atomics map[int]uint64
	// Recvs is the receive request each send fills: the sends of a rail
	// take node 1's receive requests of that rail in posting order.
	Recvs map[int]APIRecv
}

// APIRecv is a receive completion as node 1's process reaps it.
type APIRecv struct {
	Index  uint64 // the receive request, in posting order on its rail
	Len    int
	Status uint32
}

// APIRequester is the requester ID of node 1's NIC, as records show it.
const APIRequester = 0x0100

// APIRequesterOf is the requester ID of node 1's NIC of rail r (bus 1+r,
// behind a root port of its own).
func APIRequesterOf(r int) uint16 { return uint16(1+r) << 8 }

// apiOperands is what an atomic's AtomicOp carries: the addend, or the
// compare and the swap value.
func apiOperands(op APIOp) []byte {
	b := binary.LittleEndian.AppendUint64(nil, op.Compare)
	if op.Kind == "fadd" {
		b = b[:0]
	}
	return binary.LittleEndian.AppendUint64(b, op.Operand)
}

// PredictAPI runs the API-level golden model.
func PredictAPI(s *APIStimulus) *APIPrediction {
	p := &APIPrediction{Memory: map[uint64][]byte{}, Logs: map[uint16][]Record{}, Gets: map[int][]byte{}, Failed: map[int]bool{}, Flushes: map[int]int{},
		Reads: map[int][]Record{}, Writes: map[int][]Record{}, Atomics: map[int]uint64{}, Recvs: map[int]APIRecv{}}
	posted := map[int]uint64{} // receive requests taken, by rail
	pages := map[uint64]APIPage{}
	for _, pg := range s.Pages {
		pages[pg.Addr] = pg
		m := make([]byte, 4096)
		for k := range m {
			m[k] = Pattern(pg.Addr + uint64(k))
		}
		p.Memory[pg.Addr] = m
	}
	logs := map[uint16]*goldLog{}
	for _, l := range s.Logs {
		logs[l.IUID] = &goldLog{size: l.Size}
		p.Logs[l.IUID] = nil
	}
	rec := func(pg APIPage, h record.Header, d []byte) {
		h.IUID = pg.IUID
		l := logs[pg.IUID]
		p.Logs[pg.IUID] = l.append(p.Logs[pg.IUID], h, d)
	}
	for i, op := range s.Ops {
		switch op.Kind {
		case "put", "send":
			if op.Kind == "send" {
				p.Recvs[i] = APIRecv{Index: posted[op.Rail], Len: op.Len}
				posted[op.Rail]++
			}
			for _, c := range putChunks(op.Remote, op.Len, s.PMTU, s.MPS) {
				pg := pages[c.addr&^0xfff]
				data := op.Data[c.addr-op.Remote : c.addr-op.Remote+uint64(c.n)]
				w := pg.Bits&pte.W != 0
				if w {
					copy(p.Memory[pg.Addr][c.addr&0xfff:], data)
				}
				if pg.Bits&(pte.WL|pte.WLD) == 0 || pg.Bits&pte.E == 0 {
					continue
				}
				h := record.Header{Kind: record.Put, Requester: APIRequesterOf(op.Rail), IOVA: c.addr, Length: uint32(c.n)}
				var d []byte
				if pg.Bits&pte.WLD != 0 {
					d, h.DataLen, h.Flags = data, uint32(c.n), record.FlagData
				}
				if !w {
					h.Flags |= record.FlagBlocked
				}
				rec(pg, h, d)
				h.IUID = pg.IUID
				p.Writes[i] = append(p.Writes[i], Record{Header: h, Data: d})
			}
		case "get":
			var got []byte
			failed := false
			for _, c := range alignedChunks(op.Remote, op.Len, s.MRRS) {
				pg := pages[c.addr&^0xfff]
				r := pg.Bits&pte.R != 0
				data := append([]byte(nil), p.Memory[pg.Addr][c.addr&0xfff:c.addr&0xfff+uint64(c.n)]...)
				if !r {
					failed = true
				} else {
					got = append(got, data...)
				}
				if pg.Bits&(pte.RL|pte.RLD) == 0 || pg.Bits&pte.E == 0 {
					continue
				}
				h := record.Header{Kind: record.Get, Requester: APIRequesterOf(op.Rail), IOVA: c.addr, Length: uint32(c.n)}
				var d []byte
				if r && pg.Bits&pte.RLD != 0 {
					d, h.DataLen, h.Flags = data, uint32(c.n), record.FlagData
				}
				if !r {
					h.Flags |= record.FlagBlocked
				}
				rec(pg, h, d)
				h.IUID = pg.IUID
				p.Reads[i] = append(p.Reads[i], Record{Header: h, Data: d})
			}
			if failed {
				p.Failed[i] = true
			} else {
				p.Gets[i] = got
			}
		case "fadd", "cas":
			// DESIGN.md §2.2: an atomic needs R and W, and is logged as a
			// write (its operands the data).
			pg := pages[op.Remote&^0xfff]
			allowed := pg.Bits&pte.R != 0 && pg.Bits&pte.W != 0
			if allowed {
				m := p.Memory[pg.Addr][op.Remote&0xfff:]
				old := binary.LittleEndian.Uint64(m)
				switch {
				case op.Kind == "fadd":
					binary.LittleEndian.PutUint64(m, old+op.Operand)
				case old == op.Compare:
					binary.LittleEndian.PutUint64(m, op.Operand)
				}
				p.Atomics[i] = old
			} else {
				p.Failed[i] = true
			}
			if pg.Bits&(pte.WL|pte.WLD) == 0 || pg.Bits&pte.E == 0 {
				continue
			}
			h := record.Header{Kind: record.Atomic, Requester: APIRequesterOf(op.Rail), IOVA: op.Remote, Length: 8}
			var d []byte
			if pg.Bits&pte.WLD != 0 {
				d = apiOperands(op)
				h.DataLen, h.Flags = uint32(len(d)), record.FlagData
			}
			if !allowed {
				h.Flags |= record.FlagBlocked
			}
			rec(pg, h, d)
			h.IUID = pg.IUID
			p.Reads[i] = append(p.Reads[i], Record{Header: h, Data: d})
		case "flush":
			// The records of the operations issued before it on its
			// rail: the other rail's are not ordered with it.
			n := 0
			for j, e := range s.Ops[:i] {
				if e.Rail != op.Rail {
					continue
				}
				for _, rs := range [][]Record{p.Writes[j], p.Reads[j]} {
					for _, r := range rs {
						if r.IUID == op.IUID {
							n++
						}
					}
				}
			}
			p.Flushes[i] = n
		}
	}
	return p
}

type chunk struct {
	addr uint64
	n    int
}

// alignedChunks splits n bytes at addr at multiples of max.
func alignedChunks(addr uint64, n, max int) []chunk {
	var out []chunk
	for n > 0 {
		c := min(max-int(addr%uint64(max)), n)
		out = append(out, chunk{addr, c})
		addr += uint64(c)
		n -= c
	}
	return out
}

// putChunks is how an RDMA WRITE reaches the target's memory: packets of
// PMTU bytes from addr, each split at MPS-aligned boundaries.
func putChunks(addr uint64, n, pmtu, mps int) []chunk {
	var out []chunk
	for off := 0; off < n; off += pmtu {
		out = append(out, alignedChunks(addr+uint64(off), min(pmtu, n-off), mps)...)
	}
	return out
}

// APIObservation is what the machine did at the API level.
type APIObservation struct {
	Memory    map[uint64][]byte
	Logs      map[uint16][]Record // as the handlers got them (PAD records are not handed over)
	Gets      map[int][]byte
	Failed    map[int]bool
	Flushes   map[int]int     // flush op → records the handler had processed when the flush returned
	Atomics   map[int]uint64  // what each atomic that succeeded returned
	Recvs     map[int]APIRecv // send op → the receive completion node 1's process reaped for it
	EndPS     uint64          // when the run ended
	Monitor   []string        // the protocol monitors' reports, in time order
	MonitorAt uint64          // ps: when the first happened
	// Events counts what the run went through, for coverage, by the
	// statistic's last name summed over blocks (lost, duplicated,
	// reordered, retransmissions, naks, duplicates, stalls,
	// credit_stall_posted, ...) and by link direction (down.credit_stall_posted).
	Events map[string]uint64
	// Scored is what the scoreboard matched beyond the predicted order.
	Scored APIScore
}

// APIScore counts what CompareAPI accepted beyond the order of issue.
type APIScore struct {
	ReadAgain  int // get runs logged again (a READ sent again, read again)
	PutsPassed int // put records ahead of an earlier get's
	Wraps      int // rings that wrapped
}

// CompareAPI checks node 1's memory, every record its handlers got (GET
// records without their tag), what every get returned, and that every
// active flush returned only after the handler had processed every record
// issued before it.
func CompareAPI(s *APIStimulus, p *APIPrediction, o *APIObservation) *Mismatch {
	for i := range s.Ops {
		want, got := p.Gets[i], o.Gets[i]
		if p.Failed[i] != o.Failed[i] {
			return &Mismatch{Block: "api.get", Op: i, What: fmt.Sprintf("failed = %v, want %v", o.Failed[i], p.Failed[i])}
		}
		if !bytes.Equal(want, got) {
			return &Mismatch{Block: "api.get", Op: i, What: fmt.Sprintf("data differs at byte %d", firstDiff(got, want))}
		}
		if n, ok := p.Flushes[i]; ok && o.Flushes[i] < n {
			return &Mismatch{Block: "api.flush", Op: i, What: fmt.Sprintf("returned after %d records were handled, %d came before it", o.Flushes[i], n)}
		}
		if v, ok := p.Atomics[i]; ok && o.Atomics[i] != v {
			return &Mismatch{Block: "api.atomic", Op: i, What: fmt.Sprintf("%s returned %#x, want %#x", s.Ops[i].Kind, o.Atomics[i], v)}
		}
		if r, ok := p.Recvs[i]; ok && o.Recvs[i] != r {
			return &Mismatch{Block: "api.send", Op: i, What: fmt.Sprintf("received as %+v, want %+v (rail %d)", o.Recvs[i], r, s.Ops[i].Rail)}
		}
	}
	// The MSIs as the CPU sees them: each Int log's MSI runs its own
	// handler, once (node 1's cores run no other interrupt handler).
	if o.Events["interrupts"] != o.Events["log_msis"] {
		return &Mismatch{Block: "api.msi", Op: -1, What: fmt.Sprintf("the cores ran %d interrupt handlers for the IOMMU's %d log MSIs, want one each: a handler of another vector ran, or none", o.Events["interrupts"], o.Events["log_msis"])}
	}
	iuids := make([]uint16, 0, len(p.Logs))
	for iuid := range p.Logs {
		iuids = append(iuids, iuid)
	}
	slices.Sort(iuids)
	size := map[uint16]uint64{}
	for _, l := range s.Logs {
		size[l.IUID] = l.Size
	}
	for _, iuid := range iuids {
		if mm := compareLog(s, p, iuid, size[iuid], o.Logs[iuid], &o.Scored); mm != nil {
			return mm
		}
	}
	pages := make([]uint64, 0, len(p.Memory))
	for a := range p.Memory {
		pages = append(pages, a)
	}
	slices.Sort(pages)
	for _, a := range pages {
		if d := firstDiff(o.Memory[a], p.Memory[a]); d >= 0 {
			return &Mismatch{Block: "api.memory", Op: -1, What: fmt.Sprintf("node 1 memory at %#x differs", a+uint64(d))}
		}
	}
	return nil
}

// compareLog checks the records IUID's handler got against the predicted
// ones. Each rail's records (told apart by their requester ID: the NIC
// that wrote or read) keep the order of issue on that rail, but for two
// freedoms RC and PCIe give the responder: a put's (or a send's) records
// may come before those of an earlier get (a posted write passes a read
// waiting for room in the log or for credits; never the reverse), and a
// get's whole run of records on this log may come again, equal to the
// first, after that run (a READ sent again, its response lost or the
// request delivered twice, is read again; an atomic never is: a duplicate
// is answered with the saved result). The two rails' records interleave
// freely. Sequence numbers count every record and PAD in the order the
// log took them, repeats included, so they are predicted here by placing
// the records in a ring of the log's size.
func compareLog(s *APIStimulus, p *APIPrediction, iuid uint16, size uint64, got []Record, sc *APIScore) *Mismatch {
	rails := max(s.NICs, 1)
	for j := range got {
		if r := int(got[j].Requester>>8) - 1; r < 0 || r >= rails || got[j].Requester&0xff != 0 {
			return &Mismatch{Block: "api.log", Op: -1, What: fmt.Sprintf("IUID %d record %d: requester %#04x is none of the %d NICs' of node 1", iuid, j, got[j].Requester, rails)}
		}
	}
	matched := make([]Record, len(got)) // the predicted record each one is
	for rail := 0; rail < rails; rail++ {
		var idx []int
		for j := range got {
			if got[j].Requester == APIRequesterOf(rail) {
				idx = append(idx, j)
			}
		}
		if mm := matchRail(s, p, iuid, rail, got, idx, matched, sc); mm != nil {
			return mm
		}
	}
	ring := &goldLog{size: size}
	for j, w := range matched {
		recs := ring.append(nil, w.Header, w.Data)
		if want := recs[len(recs)-1].Seq; got[j].Seq != want {
			return &Mismatch{Block: "api.log", Op: -1, What: fmt.Sprintf("IUID %d record %d: sequence number %d, want %d", iuid, j, got[j].Seq, want)}
		}
	}
	if ring.reserved > ring.size {
		sc.Wraps++
	}
	return nil
}

// matchRail matches the records of one rail, got[idx[0]], got[idx[1]], ...,
// with that rail's predicted ones (compareLog), writing each one's
// prediction into matched.
func matchRail(s *APIStimulus, p *APIPrediction, iuid uint16, rail int, got []Record, idx []int, matched []Record, sc *APIScore) *Mismatch {
	// The predicted records in two streams that keep their own order: the
	// posted writes' (puts, sends) and the non-posted requests' (gets,
	// atomics), with the op of each.
	type rec struct {
		Record
		op int
	}
	var puts, gets []rec
	runOf := map[int][]Record{}
	for i, op := range s.Ops {
		if op.Rail != rail {
			continue
		}
		for _, r := range p.Writes[i] {
			if r.IUID == iuid {
				puts = append(puts, rec{r, i})
			}
		}
		for _, r := range p.Reads[i] {
			if r.IUID == iuid {
				runOf[i] = append(runOf[i], r)
				gets = append(gets, rec{r, i})
			}
		}
	}
	same := func(g, w Record) bool {
		h, wh := g.Header, w.Header
		if h.Kind == record.Get || h.Kind == record.Atomic {
			h.Tag = 0 // the NIC's tag choice is not part of the semantics
		}
		h.Seq, wh.Seq = 0, 0
		return h == wh && bytes.Equal(g.Data, w.Data)
	}
	pi, gi, k := 0, 0, 0
	place := func(w Record) {
		matched[idx[k]] = w
		k++
	}
	// again holds the gets being read again, each with the next record of
	// its run: a run read again keeps its order, but a later put's
	// records may come among it (a posted write passes the reads the
	// IOMMU holds, as in the first run).
	type rerun struct{ op, n int }
	var again []rerun
	// startAgain is a get whose first run is complete and whose run starts
	// with r, or -1.
	startAgain := func(r Record) int {
		for _, g := range gets[:gi] {
			if s.Ops[g.op].Kind == "get" && !(gi < len(gets) && gets[gi].op == g.op) && same(r, runOf[g.op][0]) {
				return g.op
			}
		}
		return -1
	}
	for k < len(idx) {
		r := got[idx[k]]
		// A get's record, once every put issued before it is in.
		if gi < len(gets) && (pi == len(puts) || puts[pi].op > gets[gi].op) && same(r, gets[gi].Record) {
			place(gets[gi].Record)
			gi++
			continue
		}
		// A put's, passing the gets before it, not an atomic: the
		// process waits for an atomic's result before it goes on.
		if pi < len(puts) && (gi == len(gets) || gets[gi].op > puts[pi].op || s.Ops[gets[gi].op].Kind == "get") && same(r, puts[pi].Record) {
			place(puts[pi].Record)
			if gi < len(gets) && gets[gi].op < puts[pi].op {
				sc.PutsPassed++
			}
			pi++
			continue
		}
		if j := slices.IndexFunc(again, func(a rerun) bool { return same(r, runOf[a.op][a.n]) }); j >= 0 {
			place(runOf[again[j].op][again[j].n])
			if again[j].n++; again[j].n == len(runOf[again[j].op]) {
				again = slices.Delete(again, j, j+1)
			}
			continue
		}
		if g := startAgain(r); g >= 0 {
			sc.ReadAgain++
			place(runOf[g][0])
			if len(runOf[g]) > 1 {
				again = append(again, rerun{g, 1})
			}
			continue
		}
		w := "nothing more"
		switch {
		case gi < len(gets) && (pi == len(puts) || puts[pi].op > gets[gi].op):
			w = fmt.Sprintf("%+v of op %d", gets[gi].Header, gets[gi].op)
			if pi < len(puts) {
				w += fmt.Sprintf(" or %+v of op %d", puts[pi].Header, puts[pi].op)
			}
		case pi < len(puts):
			w = fmt.Sprintf("%+v of op %d", puts[pi].Header, puts[pi].op)
		}
		return &Mismatch{Block: "api.log", Op: -1, What: fmt.Sprintf("IUID %d record %d (rail %d): %+v, want %s (or a get's records again)", iuid, idx[k], rail, r.Header, w)}
	}
	if pi < len(puts) || gi < len(gets) {
		return &Mismatch{Block: "api.log", Op: -1, What: fmt.Sprintf("IUID %d, rail %d: %d records handled, want %d", iuid, rail, pi+gi, len(puts)+len(gets))}
	}
	if len(again) > 0 {
		a := again[0]
		return &Mismatch{Block: "api.log", Op: a.op, What: fmt.Sprintf("IUID %d, rail %d: the get read again handed %d of its %d records", iuid, rail, a.n, len(runOf[a.op]))}
	}
	return nil
}
