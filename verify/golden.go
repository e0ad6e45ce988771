package verify

import (
	"encoding/binary"
	"slices"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// Fault reasons the golden model predicts (VT-d legacy, and aaemu's AA
// reasons in the implementation-specific range, README "The IOMMU").
const (
	frRootNotPresent = 0x1
	frCtxNotPresent  = 0x2
	frWrite          = 0x5
	frRead           = 0x6
	frLoggedWrite    = 0x80
	frLoggedRead     = 0x81
	frNoLog          = 0x82
	frTooLarge       = 0x83
)

// Record is a predicted or observed access-log record.
type Record struct {
	record.Header
	Data []byte
}

// Fault is a fault record: source, reason, read or write, page.
type Fault struct {
	SID  tlp.ID
	FR   uint8
	Read bool
	Page uint64
}

// Completion is what a non-posted request got back: the status and, for a
// successful read or AtomicOp, the bytes it asked for.
type Completion struct {
	Status tlp.Status
	Data   []byte
}

// FlushWait says that op's completion may arrive only after the consumer of
// IUID's log has moved head to Target bytes.
type FlushWait struct {
	Op     int
	IUID   uint16
	Target uint64
	Since  int // the change that registered the log again last before the flush, or -1 (its ring since then)
	// Removed: the log was unregistered when the flush came (nothing to
	// wait for).
	Removed bool
}

// Prediction is everything the golden model expects.
type Prediction struct {
	Memory      map[uint64][]byte   // frame PA → its 4 KB at the end
	Logs        map[uint16][]Record // per IUID, every record in order (PAD included)
	Completions map[int]Completion  // by op index
	Faults      []Fault             // the fault records software read: at each clearfaults and at the end, each time in register order
	Overflow    bool                // PFO at the end
	Cleared     int                 // clearfaults calls that found PFO set (and cleared it)
	ClearsRead  []int               // how many records software read at each clearfaults
	ClearsPFO   []bool              // whether it found PFO set at each
	FaultEvents int                 // fault event MSIs: a fault recorded while none was pending
	Flushes     []FlushWait
	// LogEnds are, per IUID, the bytes each registration of its log
	// reserved in its ring (records, PADs and skips): the set-up's, then
	// one per register call.
	LogEnds map[uint16][]uint64
	// What the driver calls led to (coverage): an access that would have
	// logged into a log unregistered before it, a record in a log
	// registered again, a fault recorded after software cleared PFO.
	NoLogAfterRemoval, RecordAfterRegister, FaultAfterOverflowCleared bool
	// The faults in the order the IOMMU meets them and where software
	// cleared the records among them: Compare places a racing clear
	// (Change.Racing) where the observation says it came.
	faultSeq []Fault
	clears   []clearPoint
	nregs    int // fault recording registers
	// RacedFaults: a racing clear came before a fault of a TLP taken before
	// it (the fault was still in flight), as Compare placed it.
	RacedFaults bool
}

// clearPoint is software clearing the fault records after the first at
// faults of faultSeq (a racing clear: at most at).
type clearPoint struct {
	at     int
	racing bool
}

// faultRegs are VT-d's fault recording registers as software sees them: a
// fixed set used round robin; a fault that finds the next one pending is
// dropped and sets PFO, and none is recorded until software clears PFO; a
// fault recorded while none is pending raises the fault event.
type faultRegs struct {
	recs    []Fault
	pending []bool
	next    int
	pfo     bool
	cleared bool // software cleared PFO at least once
}

func (f *faultRegs) record(p *Prediction, r Fault) {
	if f.pfo {
		return
	}
	if f.pending[f.next] {
		f.pfo = true
		return
	}
	if !slices.Contains(f.pending, true) {
		p.FaultEvents++
	}
	p.FaultAfterOverflowCleared = p.FaultAfterOverflowCleared || f.cleared
	f.recs[f.next], f.pending[f.next] = r, true
	f.next = (f.next + 1) % len(f.recs)
}

// read is software reading every pending record, in register order, and
// (clear) writing 1 to each F and to PFO.
func (f *faultRegs) read(p *Prediction, clear bool) {
	n := len(p.Faults)
	for i, r := range f.recs {
		if f.pending[i] {
			p.Faults = append(p.Faults, r)
			f.pending[i] = !clear
		}
	}
	if !clear {
		return
	}
	p.ClearsRead, p.ClearsPFO = append(p.ClearsRead, len(p.Faults)-n), append(p.ClearsPFO, f.pfo)
	if f.pfo {
		p.Cleared++
		f.pfo, f.cleared = false, true
	}
}

// placeClears finds where each racing clear came among the faults so
// that what software read at every clear (reads: how many records each
// read, in o.Faults; pfo: whether it found PFO set), what is pending at the
// end, PFO and the fault events are what the observation has. A racing
// clear is made when the IOMMU takes a TLP; the faults of the TLPs before
// it may reach the registers before or after it, those of later TLPs
// after it: so it lies between the clear before it and its place at a
// quiet point. A depth-first search over those places (the reads prune
// it). It returns false when no placing gives the observation; else the
// prediction's fault fields become the placing's.
func (p *Prediction) placeClears(o *Observation, events int) bool {
	type state struct {
		regs  faultRegs
		pred  Prediction // Faults, FaultEvents, Cleared, FaultAfterOverflowCleared
		read  int        // records of o.Faults read so far
		raced bool
	}
	clone := func(st state) state {
		c := st
		c.regs.recs = slices.Clone(st.regs.recs)
		c.regs.pending = slices.Clone(st.regs.pending)
		c.pred.Faults = slices.Clone(st.pred.Faults)
		return c
	}
	n := len(p.faultSeq)
	// After a clear every register is free and PFO clear, so what follows
	// depends on these alone: a place that failed once fails again (the
	// search stays polynomial whatever a replay file holds).
	type key struct {
		j, from, next, events int
		cleared, after        bool
	}
	failed := map[key]bool{}
	var search, find func(j, from int, st state) *state
	search = func(j, from int, st state) *state {
		k := key{j, from, st.regs.next, st.pred.FaultEvents, st.regs.cleared, st.pred.FaultAfterOverflowCleared}
		if failed[k] {
			return nil
		}
		if got := find(j, from, st); got != nil {
			return got
		}
		failed[k] = true
		return nil
	}
	find = func(j, from int, st state) *state {
		if j == len(p.clears) {
			for _, f := range p.faultSeq[from:] {
				st.regs.record(&st.pred, f)
			}
			st.regs.read(&st.pred, false)
			if st.regs.pfo != o.Overflow || st.pred.FaultEvents != events || !slices.Equal(st.pred.Faults, o.Faults) || st.pred.Cleared != o.Cleared {
				return nil
			}
			return &st
		}
		c := p.clears[j]
		lo := c.at
		if c.racing {
			lo = from
		}
		for at := lo; at <= c.at && at <= n; at++ {
			try := clone(st)
			for _, f := range p.faultSeq[from:at] {
				try.regs.record(&try.pred, f)
			}
			wasCleared := try.pred.Cleared
			try.regs.read(&try.pred, true)
			if j >= len(o.ClearsRead) || len(try.pred.Faults)-try.read != o.ClearsRead[j] ||
				!slices.Equal(try.pred.Faults[try.read:], o.Faults[try.read:min(len(o.Faults), try.read+o.ClearsRead[j])]) ||
				(try.pred.Cleared > wasCleared) != (j < len(o.ClearsPFO) && o.ClearsPFO[j]) {
				continue
			}
			try.read = len(try.pred.Faults)
			try.raced = try.raced || at < c.at
			if got := search(j+1, at, try); got != nil {
				return got
			}
		}
		return nil
	}
	st := state{regs: faultRegs{recs: make([]Fault, p.nregs), pending: make([]bool, p.nregs)}}
	got := search(0, 0, st)
	if got == nil {
		return false
	}
	p.Faults, p.FaultEvents, p.Cleared, p.Overflow = got.pred.Faults, got.pred.FaultEvents, got.pred.Cleared, got.regs.pfo
	p.ClearsRead, p.ClearsPFO = got.pred.ClearsRead, got.pred.ClearsPFO
	p.FaultAfterOverflowCleared, p.RacedFaults = got.pred.FaultAfterOverflowCleared, got.raced
	return true
}

type goldLog struct {
	size, reserved, seq uint64
}

// Predict runs the stimulus's TLPs through the golden model in order (the
// order in which the DUT accepted them: op indices).
func Predict(s *Stimulus, order []int) *Prediction {
	p := &Prediction{Memory: map[uint64][]byte{}, Logs: map[uint16][]Record{}, Completions: map[int]Completion{}}
	doms := map[uint16]map[uint64]*Page{1: {}, 2: {}} // each domain's page table
	for i := range s.Pages {
		pg := new(Page)
		*pg = s.Pages[i] // a copy: driver calls change it
		doms[pg.Dom()][pg.IOVA] = pg
	}
	for _, pa := range Frames(s) {
		m := make([]byte, 4096)
		for k := range m {
			m[k] = Pattern(pa + uint64(k))
		}
		p.Memory[pa] = m
	}
	logs := map[uint16]*goldLog{}
	for _, l := range s.Logs {
		logs[l.IUID] = &goldLog{size: l.Size}
		p.Logs[l.IUID] = nil
	}
	flush := map[uint64]uint16{}
	for _, f := range s.Flushes {
		flush[f.IOVA] = f.IUID
	}
	buses := map[uint8]bool{}
	for _, d := range s.Devices {
		if d.Attached {
			buses[d.ID.Bus()] = true
		}
	}
	regs := &faultRegs{recs: make([]Fault, s.FaultRecords), pending: make([]bool, s.FaultRecords)}
	p.nregs = s.FaultRecords
	fault := func(f Fault) {
		regs.record(p, f)
		p.faultSeq = append(p.faultSeq, f)
	}
	devices := append([]Device(nil), s.Devices...)
	removed, again := map[uint16]bool{}, map[uint16]bool{}
	since := map[uint16]int{} // the register call of each log's ring, or -1
	for _, l := range s.Logs {
		since[l.IUID] = -1
	}
	p.LogEnds = map[uint16][]uint64{}
	next := 0 // the next driver call
	// call is the driver call next's effect: the harness makes each once
	// every earlier TLP is done, so it is visible to every later TLP and
	// to no earlier one.
	call := func() {
		switch c := s.Changes[next]; c.Kind {
		case "clearfaults":
			regs.read(p, true)
			p.clears = append(p.clears, clearPoint{len(p.faultSeq), c.Racing})
		case "unregister":
			if l := logs[c.IUID]; l != nil {
				p.LogEnds[c.IUID] = append(p.LogEnds[c.IUID], l.reserved)
			}
			delete(logs, c.IUID)
			removed[c.IUID] = true
		case "register":
			logs[c.IUID] = &goldLog{size: c.Size}
			again[c.IUID], since[c.IUID] = true, next
		default:
			applyChange(c, doms, devices, buses)
		}
	}
	last := -1 // the op taken before this one
	for _, i := range order {
		// A racing page call: the harness makes it the moment the IOMMU
		// takes op After-1, so it is visible to every TLP taken after
		// that one, those before After still in flight included, and to
		// none taken before.
		for ; next < len(s.Changes) && s.Changes[next].RacesTables() && s.Changes[next].After-1 == last; next++ {
			call()
		}
		last = i
		// The driver calls made before this TLP: the harness makes each
		// once every earlier TLP is done, so they are visible to every
		// later one and to no earlier one.
		for ; next < len(s.Changes) && s.Changes[next].After <= i; next++ {
			call()
		}
		op := s.Ops[i]
		t := op.TLP
		dev := devices[op.Dev]
		read := t.Kind == tlp.MRd
		atomic := t.Kind == tlp.FetchAdd || t.Kind == tlp.Swap || t.Kind == tlp.CAS
		first, n := span(&t)
		nonPosted := read || atomic
		// Context: no root entry for the bus, or none for the device.
		if !dev.Attached {
			fr := uint8(frCtxNotPresent)
			if !buses[dev.ID.Bus()] {
				fr = frRootNotPresent
			}
			fault(Fault{SID: dev.ID, FR: fr, Read: read || atomic, Page: first &^ 0xfff})
			if nonPosted {
				p.Completions[i] = Completion{Status: tlp.UR}
			}
			continue
		}
		pg := pageOf(doms[dev.Dom()], t.Addr)
		if pg == nil || !pg.Mapped {
			fr := uint8(frWrite)
			if read {
				fr = frRead
			}
			fault(Fault{SID: dev.ID, FR: fr, Read: read || atomic, Page: first &^ 0xfff})
			if nonPosted {
				p.Completions[i] = Completion{Status: tlp.UR}
			}
			continue
		}
		mem := p.Memory[pg.PA+t.Addr&^0xfff-pg.IOVA] // the 4 KB frame, in a large page too
		b := pg.Bits
		r, w := b&pte.R != 0, b&pte.W != 0
		e := b&pte.E != 0
		// DESIGN.md §2.2 and §2.3, from the tables.
		var allowed, meta, data bool
		kind := record.Put
		switch {
		case read:
			kind = record.Get
			allowed = r
			meta = b&(pte.RL|pte.RLD) != 0
			data = r && b&pte.RLD != 0
		case atomic:
			kind = record.Atomic
			allowed = r && w
			meta = b&(pte.WL|pte.WLD) != 0
			data = b&pte.WLD != 0
		default:
			allowed = w
			meta = b&(pte.WL|pte.WLD) != 0
			data = b&pte.WLD != 0
		}
		off := first & 0xfff
		var logData []byte
		switch {
		case read && allowed:
			got := append([]byte(nil), mem[off:off+uint64(n)]...)
			if n == 0 {
				got = nil
			}
			p.Completions[i] = Completion{Status: tlp.SC, Data: got}
			logData = got
			if iuid, ok := flush[t.Addr&^0xfff]; ok {
				target := uint64(0)
				if l := logs[iuid]; l != nil {
					target = l.reserved
				}
				p.Flushes = append(p.Flushes, FlushWait{Op: i, IUID: iuid, Target: target, Since: since[iuid], Removed: logs[iuid] == nil})
			}
		case read:
			p.Completions[i] = Completion{Status: tlp.UR}
		case atomic && allowed:
			p.Completions[i] = Completion{Status: tlp.SC, Data: doAtomic(&t, mem, off)}
			logData = operands(&t)
		case atomic:
			p.Completions[i] = Completion{Status: tlp.UR}
			logData = operands(&t)
		default:
			payload := t.Data[t.FirstByteOffset() : t.FirstByteOffset()+n]
			if allowed {
				copy(mem[off:], payload)
			}
			logData = payload
		}
		if !meta {
			continue
		}
		if !e {
			fr := map[[2]bool]uint8{{false, true}: frLoggedWrite, {false, false}: frWrite, {true, true}: frLoggedRead, {true, false}: frRead}[[2]bool{read, allowed}]
			fault(Fault{SID: dev.ID, FR: fr, Read: read || atomic, Page: first &^ 0xfff})
			continue
		}
		l := logs[pg.IUID]
		if l == nil {
			p.NoLogAfterRemoval = p.NoLogAfterRemoval || removed[pg.IUID]
			fault(Fault{SID: dev.ID, FR: frNoLog, Read: read || atomic, Page: first &^ 0xfff})
			continue
		}
		p.RecordAfterRegister = p.RecordAfterRegister || again[pg.IUID]
		dataLen := 0
		if data {
			dataLen = len(logData)
		}
		if 2*uint64(record.Size(dataLen)) > l.size { // §2.4 as aaemu bounds it: at most half the ring

			fault(Fault{SID: dev.ID, FR: frTooLarge, Read: read || atomic, Page: first &^ 0xfff})
			continue
		}
		h := record.Header{Kind: kind, IUID: pg.IUID, Requester: uint16(dev.ID), Tag: t.Tag, IOVA: first, Length: uint32(n)}
		if !allowed {
			h.Flags |= record.FlagBlocked
		}
		var d []byte
		if data {
			d = logData
			h.DataLen = uint32(len(d))
			if len(d) > 0 {
				h.Flags |= record.FlagData
			}
		}
		p.Logs[pg.IUID] = l.append(p.Logs[pg.IUID], h, d)
	}
	// The calls after the last TLP (the harness makes them too).
	for ; next < len(s.Changes); next++ {
		call()
	}
	for _, l := range s.Logs {
		if g := logs[l.IUID]; g != nil {
			p.LogEnds[l.IUID] = append(p.LogEnds[l.IUID], g.reserved)
		}
	}
	regs.read(p, false)
	p.Overflow = regs.pfo
	return p
}

// applyChange is a driver call's effect on the tables the golden model
// keeps: a page's bits and IUID, whether it is mapped, what pages map a
// large page (whose 4 KB pages all take the bits of a split to them),
// whether a device has a context entry (Attach gives its bus a root entry;
// Detach leaves it).
func applyChange(c Change, doms map[uint16]map[uint64]*Page, devices []Device, buses map[uint8]bool) {
	switch c.Kind {
	case "setbits", "map":
		pg := doms[c.Dom()][c.IOVA]
		pg.Mapped, pg.Bits, pg.IUID = true, c.Bits, c.IUID
	case "split", "merge":
		pg := doms[c.Dom()][c.IOVA]
		pg.Bits, pg.IUID, pg.Leaf = c.Bits, c.IUID, c.Size
	case "unmap":
		doms[c.Dom()][c.IOVA].Mapped = false
	case "attach":
		devices[c.Dev].Attached = true
		buses[devices[c.Dev].ID.Bus()] = true
	case "detach":
		devices[c.Dev].Attached = false
	}
}

// append places a record in the ring as §2.4 says: a PAD to the end of the
// ring when it does not fit before the end (no PAD when less than a header
// remains: the reader skips), sequence numbers counting PADs.
func (l *goldLog) append(recs []Record, h record.Header, d []byte) []Record {
	size := uint64(record.Size(len(d)))
	pos := l.reserved % l.size
	if pos+size > l.size {
		rest := l.size - pos
		if rest >= record.HeaderSize {
			recs = append(recs, Record{Header: record.Header{Kind: record.Pad, IUID: h.IUID, Length: uint32(rest), Seq: l.seq}})
			l.seq++
		}
		l.reserved += rest
	}
	h.Seq = l.seq
	l.seq++
	l.reserved += size
	return append(recs, Record{Header: h, Data: d})
}

// span is the first byte and the number of bytes a request accesses.
func span(t *tlp.TLP) (uint64, int) {
	if t.Kind == tlp.FetchAdd || t.Kind == tlp.Swap || t.Kind == tlp.CAS {
		n := len(t.Data)
		if t.Kind == tlp.CAS {
			n /= 2
		}
		return t.Addr, n
	}
	first := t.Addr + uint64(t.FirstByteOffset())
	if t.Length == 1 && t.FirstBE == 0 {
		return first, 0
	}
	return first, t.EnabledBytes()
}

func operands(t *tlp.TLP) []byte { return append([]byte(nil), t.Data...) }

// doAtomic performs an AtomicOp on a page and returns the original value.
func doAtomic(t *tlp.TLP, mem []byte, off uint64) []byte {
	_, n := span(t)
	old := append([]byte(nil), mem[off:off+uint64(n)]...)
	switch t.Kind {
	case tlp.FetchAdd:
		if n == 8 {
			binary.LittleEndian.PutUint64(mem[off:], binary.LittleEndian.Uint64(old)+binary.LittleEndian.Uint64(t.Data))
		} else {
			binary.LittleEndian.PutUint32(mem[off:], binary.LittleEndian.Uint32(old)+binary.LittleEndian.Uint32(t.Data))
		}
	case tlp.Swap:
		copy(mem[off:], t.Data)
	case tlp.CAS:
		if string(old) == string(t.Data[:n]) {
			copy(mem[off:], t.Data[n:])
		}
	}
	return old
}
