package verify

import (
	"bytes"
	"fmt"
	"slices"
)

// Observation is what the DUT did, as the conformance harness saw it.
type Observation struct {
	Accepted    []int               // op indices in the order the IOMMU took them
	AcceptedAt  []uint64            // simulated time (ps) of each
	Memory      map[uint64][]byte   // frame PA → its 4 KB at the end
	Logs        map[uint16][]Record // records the consumer read, in order
	Completions map[int]Completion  // by op index
	CompletedAt map[int]uint64      // ps
	Faults      []Fault             // the pending records software read: at each clearfaults and at the end
	Overflow    bool                // PFO at the end
	Cleared     int                 // clearfaults calls that found PFO set
	ClearsRead  []int               // how many records software read at each clearfaults, in order
	ClearsPFO   []bool              // whether it found PFO set at each
	Heads       []HeadMove          // every move of a log's head by the consumer
	EndPS       uint64
	LogFull     bool      // the IOMMU held a TLP back because its log was full
	Skipped     bool      // a reader skipped the end of a ring too short for a PAD
	MSIs        []MSI     // every MSI the CPUs got, in order
	SP          []SPWrite // every scratchpad mirror write, in order
	// Monitor is what the protocol monitors on the DUT's links reported,
	// in time order (verify/monitor); a run with any does not conform.
	Monitor   []string
	MonitorAt uint64 // ps: when the first report happened
	// ChangesAt is when (ps) the harness made each driver call, in order.
	ChangesAt []uint64
}

// MSI is a message-signalled interrupt as the CPUs see it.
type MSI struct {
	Addr uint64
	Data uint32
	At   uint64
}

// SPWrite is the IOMMU mirroring IUID's tail into scratchpad slot Slot.
type SPWrite struct {
	Slot uint32
	IUID uint16
	Tail uint64
	At   uint64
}

// Where the harness programs the notifications: every log's MSI at
// LogMSIAddr with its IUID as data (whatever its mode: only Int may send
// it) and its IUID as its scratchpad slot, the fault event at
// FaultMSIAddr with FaultMSIData.
const (
	LogMSIAddr   = 0xfee0_0000
	FaultMSIAddr = 0xfee0_1000
	FaultMSIData = 0xfa17
)

// HeadMove is the consumer moving IUID's head to Head at time At.
type HeadMove struct {
	IUID uint16
	Head uint64
	At   uint64
}

// Mismatch is the first divergence between the DUT and the golden model.
type Mismatch struct {
	Block string // where it shows: iommu.memory, iommu.log, iommu.completion, iommu.faults, iommu.flush
	Op    int    // the operation involved, or -1
	At    uint64 // simulated time (ps) when the DUT did it, if known
	What  string
}

func (m *Mismatch) Error() string {
	op := ""
	if m.Op >= 0 {
		op = fmt.Sprintf(", op %d", m.Op)
	}
	return fmt.Sprintf("%s%s at %d ps: %s", m.Block, op, m.At, m.What)
}

// Compare checks every observable effect against the prediction and
// returns the first divergence, or nil.
func Compare(s *Stimulus, p *Prediction, o *Observation) *Mismatch {
	if len(o.Accepted) != len(s.Ops) {
		return &Mismatch{Block: "iommu", Op: -1, At: o.EndPS, What: fmt.Sprintf("the IOMMU took %d of %d TLPs", len(o.Accepted), len(s.Ops))}
	}
	seen := make([]bool, len(s.Ops))
	for _, i := range o.Accepted {
		if i < 0 || i >= len(s.Ops) || seen[i] {
			return &Mismatch{Block: "iommu", Op: i, What: "a TLP taken twice or unknown"}
		}
		seen[i] = true
	}
	// Completions: every non-posted request gets exactly the predicted one.
	keys := make([]int, 0, len(p.Completions))
	for k := range p.Completions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		want := p.Completions[k]
		got, ok := o.Completions[k]
		if !ok {
			return &Mismatch{Block: "iommu.completion", Op: k, At: o.EndPS, What: "no completion arrived"}
		}
		if got.Status != want.Status {
			return &Mismatch{Block: "iommu.completion", Op: k, At: o.CompletedAt[k], What: fmt.Sprintf("status %v, want %v", got.Status, want.Status)}
		}
		if want.Status == 0 && !bytes.Equal(got.Data, want.Data) {
			return &Mismatch{Block: "iommu.completion", Op: k, At: o.CompletedAt[k], What: fmt.Sprintf("data differs at byte %d", firstDiff(got.Data, want.Data))}
		}
	}
	for k := range o.Completions {
		if _, ok := p.Completions[k]; !ok {
			return &Mismatch{Block: "iommu.completion", Op: k, At: o.CompletedAt[k], What: "a completion for a request that expects none"}
		}
	}
	// Logs: every record, in order, nothing lost or duplicated.
	iuids := make([]int, 0, len(p.Logs))
	for k := range p.Logs {
		iuids = append(iuids, int(k))
	}
	slices.Sort(iuids)
	for _, k := range iuids {
		want, got := p.Logs[uint16(k)], o.Logs[uint16(k)]
		for i := 0; i < len(want) || i < len(got); i++ {
			switch {
			case i >= len(got):
				return &Mismatch{Block: "iommu.log", Op: -1, At: o.EndPS, What: fmt.Sprintf("IUID %d: record %d (seq %d) missing: %d of %d arrived", k, i, want[i].Seq, len(got), len(want))}
			case i >= len(want):
				return &Mismatch{Block: "iommu.log", Op: -1, At: o.EndPS, What: fmt.Sprintf("IUID %d: %d records, want %d (record %d extra: %+v)", k, len(got), len(want), i, got[i].Header)}
			case got[i].Header != want[i].Header:
				return &Mismatch{Block: "iommu.log", Op: -1, At: o.EndPS, What: fmt.Sprintf("IUID %d record %d: header %+v, want %+v", k, i, got[i].Header, want[i].Header)}
			case !bytes.Equal(got[i].Data, want[i].Data):
				return &Mismatch{Block: "iommu.log", Op: -1, At: o.EndPS, What: fmt.Sprintf("IUID %d record %d (seq %d): data differs at byte %d", k, i, want[i].Seq, firstDiff(got[i].Data, want[i].Data))}
			}
		}
	}
	for k := range o.Logs {
		if _, ok := p.Logs[k]; !ok && len(o.Logs[k]) > 0 {
			return &Mismatch{Block: "iommu.log", Op: -1, At: o.EndPS, What: fmt.Sprintf("records in IUID %d's log, which has none registered", k)}
		}
	}
	// Fault recording registers. A clear that raced the faults in flight
	// came where the observation says, if some place among them gives it;
	// if none does, the comparison with the clears at their quiet places
	// names the first difference.
	if p.racing() {
		p.placeClears(o, faultEvents(o))
	}
	if len(o.Faults) != len(p.Faults) {
		return &Mismatch{Block: "iommu.faults", Op: -1, At: o.EndPS, What: fmt.Sprintf("%d fault records, want %d", len(o.Faults), len(p.Faults))}
	}
	for i := range p.Faults {
		if o.Faults[i] != p.Faults[i] {
			return &Mismatch{Block: "iommu.faults", Op: -1, At: o.EndPS, What: fmt.Sprintf("fault record %d is %+v, want %+v", i, o.Faults[i], p.Faults[i])}
		}
	}
	if !slices.Equal(o.ClearsRead, p.ClearsRead) || !slices.Equal(o.ClearsPFO, p.ClearsPFO) {
		return &Mismatch{Block: "iommu.faults", Op: -1, At: o.EndPS, What: fmt.Sprintf("software read %v records at its clears, finding PFO %v; want %v, %v", o.ClearsRead, o.ClearsPFO, p.ClearsRead, p.ClearsPFO)}
	}
	if o.Overflow != p.Overflow {
		return &Mismatch{Block: "iommu.faults", Op: -1, At: o.EndPS, What: fmt.Sprintf("overflow flag %v, want %v", o.Overflow, p.Overflow)}
	}
	if o.Cleared != p.Cleared {
		return &Mismatch{Block: "iommu.faults", Op: -1, At: o.EndPS, What: fmt.Sprintf("software found the overflow flag set at %d of its clears, want %d", o.Cleared, p.Cleared)}
	}
	// Memory.
	pas := make([]uint64, 0, len(p.Memory))
	for pa := range p.Memory {
		pas = append(pas, pa)
	}
	slices.Sort(pas)
	for _, pa := range pas {
		if d := firstDiff(o.Memory[pa], p.Memory[pa]); d >= 0 {
			return &Mismatch{Block: "iommu.memory", Op: -1, At: o.EndPS, What: fmt.Sprintf("memory at %#x differs", pa+uint64(d))}
		}
	}
	if mm := compareNotifications(s, p, o); mm != nil {
		return mm
	}
	// Flushes complete no earlier than the consumer passed their target.
	for _, f := range p.Flushes {
		at, ok := o.CompletedAt[f.Op]
		if !ok {
			continue // reported above as a missing completion
		}
		if f.Target == 0 {
			continue // nothing was reserved before the flush: nothing to wait for
		}
		// The consumer's moves in the flush's ring: since the log was
		// registered again, if it was.
		from := uint64(0)
		if f.Since >= 0 {
			from = changeAt(o, f.Since)
		}
		var passed uint64
		found := false
		for _, h := range o.Heads {
			if h.IUID == f.IUID && h.Head >= f.Target && h.At >= from {
				passed, found = h.At, true
				break
			}
		}
		if !found || at < passed {
			return &Mismatch{Block: "iommu.flush", Op: f.Op, At: at, What: fmt.Sprintf("flush completed at %d ps, before the consumer reached %d bytes of IUID %d's log (at %d ps)", at, f.Target, f.IUID, passed)}
		}
	}
	return nil
}

// changeAt is when the harness made change j (never, for a run that
// stopped before it).
func changeAt(o *Observation, j int) uint64 {
	if j < len(o.ChangesAt) {
		return o.ChangesAt[j]
	}
	return ^uint64(0)
}

// faultEvents counts the fault event MSIs the CPUs got.
func faultEvents(o *Observation) int {
	n := 0
	for _, m := range o.MSIs {
		if m.Addr == FaultMSIAddr && m.Data == FaultMSIData {
			n++
		}
	}
	return n
}

// racing says whether a clear of the fault records raced faults in flight.
func (p *Prediction) racing() bool {
	for _, c := range p.clears {
		if c.racing {
			return true
		}
	}
	return false
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// compareNotifications checks what the CPUs saw: an Int log that got
// records got an MSI with its vector at its address, and no other log did;
// a fault event came for each fault recorded while none was pending, and
// not otherwise; an SP
// log's scratchpad slot was written with its IUID's tail only, rising, and
// ending at the bytes the golden model placed in the ring (every record
// and PAD); no other log's was.
func compareNotifications(s *Stimulus, p *Prediction, o *Observation) *Mismatch {
	mode := map[uint16]uint8{}
	for _, l := range s.Logs {
		mode[l.IUID] = l.Mode
	}
	for _, m := range o.MSIs {
		switch {
		case m.Addr == FaultMSIAddr && m.Data == FaultMSIData:
		case m.Addr == LogMSIAddr && m.Data <= 0xffff && mode[uint16(m.Data)] == 1:
		default:
			return &Mismatch{Block: "iommu.msi", Op: -1, At: m.At, What: fmt.Sprintf("MSI to %#x with data %#x: no Int log's nor the fault event's", m.Addr, m.Data)}
		}
	}
	// A fault event for each fault recorded while none was pending: the
	// first, and the first after each time software cleared them all.
	if n := faultEvents(o); n != p.FaultEvents {
		return &Mismatch{Block: "iommu.msi", Op: -1, At: o.EndPS, What: fmt.Sprintf("%d fault events for %d fault records, want %d", n, len(p.Faults), p.FaultEvents)}
	}
	// Per log, the windows of its registrations: from the set-up (or a
	// register call) to the unregister call after it (or the end). An SP
	// log's slot is written in a window only, with the window's ring's
	// tail, rising from 0, ending at the bytes the golden model placed in
	// that ring (records, PADs and skips); an Int log got its MSI in every
	// window whose ring got records, and in none other.
	for _, w := range o.SP {
		if mode[w.IUID] != 2 || w.Slot != uint32(w.IUID) {
			return &Mismatch{Block: "iommu.sp", Op: -1, At: w.At, What: fmt.Sprintf("scratchpad slot %d written with IUID %d's tail: not an SP log's own slot", w.Slot, w.IUID)}
		}
	}
	for _, l := range s.Logs {
		if l.Mode == 0 {
			continue
		}
		type window struct{ from, to uint64 }
		wins := []window{{0, ^uint64(0)}}
		for j, c := range s.Changes {
			switch {
			case c.IUID != l.IUID:
			case c.Kind == "unregister":
				wins[len(wins)-1].to = changeAt(o, j)
			case c.Kind == "register":
				wins = append(wins, window{changeAt(o, j), ^uint64(0)})
			}
		}
		in := func(at uint64) int {
			for k, w := range wins {
				if at >= w.from && at < w.to {
					return k
				}
			}
			return -1
		}
		tails, msis := make([]uint64, len(wins)), make([]int, len(wins))
		for _, w := range o.SP {
			if w.IUID != l.IUID {
				continue
			}
			k := in(w.At)
			switch {
			case k < 0:
				return &Mismatch{Block: "iommu.sp", Op: -1, At: w.At, What: fmt.Sprintf("IUID %d's tail mirrored while its log was removed", l.IUID)}
			case w.Tail <= tails[k]:
				return &Mismatch{Block: "iommu.sp", Op: -1, At: w.At, What: fmt.Sprintf("IUID %d's mirrored tail went from %d to %d", w.IUID, tails[k], w.Tail)}
			}
			tails[k] = w.Tail
		}
		for _, m := range o.MSIs {
			if m.Addr == LogMSIAddr && m.Data == uint32(l.IUID) {
				k := in(m.At)
				if k < 0 {
					return &Mismatch{Block: "iommu.msi", Op: -1, At: m.At, What: fmt.Sprintf("IUID %d's MSI while its log was removed", l.IUID)}
				}
				msis[k]++
			}
		}
		ends := p.LogEnds[l.IUID]
		for k := range wins {
			end := uint64(0)
			if k < len(ends) {
				end = ends[k]
			}
			switch {
			case l.Mode == 1 && end > 0 && msis[k] == 0:
				return &Mismatch{Block: "iommu.msi", Op: -1, At: o.EndPS, What: fmt.Sprintf("IUID %d (Int) got %d bytes of records in its ring %d and no MSI", l.IUID, end, k)}
			case l.Mode == 2 && tails[k] != end:
				return &Mismatch{Block: "iommu.sp", Op: -1, At: o.EndPS, What: fmt.Sprintf("IUID %d's mirrored tail is %d at the end of its ring %d, but its records took %d bytes of the ring", l.IUID, tails[k], k, end)}
			}
		}
	}
	return nil
}
