package monitor

import (
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// DirSpec describes one direction of a PCIe link as its monitor needs it.
type DirSpec struct {
	Name string
	// Credits the receiver advertises: PH, PD, NPH, NPD, CplH, CplD; 0 is
	// infinite. All zero on a channel that is not a link: no credit check.
	Credits [6]int
	// LatencyPS is the least time from a TLP's start on the wire to its
	// arrival in the receive buffer; UpdateFCPS the time from the receiver
	// freeing a TLP to its credits back at the transmitter; SlackPS the
	// tolerance of a transmitter that starts a TLP up to a clock period
	// before the edge at which it counted its credits.
	LatencyPS, UpdateFCPS, SlackPS sim.Tick
	// MPS bounds every payload sent in this direction and RCB is the read
	// completion boundary of the completer that sends completions in it
	// (0: not checked).
	MPS, RCB int
	// TakeOrder checks that the receiver takes TLPs from its buffer in an
	// order the ordering rules allow, as the root complex and the memory
	// controller must (a read performed before an earlier write breaks
	// producer–consumer ordering however the link carried them).
	TakeOrder bool
}

// PCIeLink monitors the two directions of a PCIe link (or of a pair of
// channels between a device and its port): on each, a TLP never crossing
// 4 KB nor exceeding MPS, the ordering rules between posted requests,
// non-posted requests and completions as TLPs pass each other, credits
// never exceeded and returned only when the receiver frees its buffer; across
// the two, each completion matched to an outstanding request of the other
// direction and split at the RCB with the right Byte Count and Lower
// Address, and no tag reused while outstanding. It keeps state per link; the
// calls for one link must come from one domain.
type PCIeLink struct {
	log  *Log
	dirs [2]*pcieDir
}

type pcieDir struct {
	spec     DirSpec
	seq      uint64
	pending  []seen // entered, not arrived, in order of entry
	buffered []seen // arrived, not taken, in order of arrival
	// per class, the TLPs that arrived, with when they were taken, as long
	// as they may still hold credits
	held [3][]heldTLP
	out  map[txnKey]*request // non-posted requests of this direction awaiting completion
}

type seen struct {
	seq uint64
	id  sim.TxnID
	t   tlp.TLP
}

type heldTLP struct {
	taken     sim.Tick // sim.Never while in the buffer
	hdr, data int
}

type txnKey struct {
	req tlp.ID
	tag uint16
}

type request struct {
	t      tlp.TLP
	id     sim.TxnID
	first  uint64 // address of the first byte asked for
	total  int
	sent   int
	atomic int // operand bytes of an AtomicOp, 0 for reads
}

// NewPCIeLink monitors a link whose direction 0 is a and direction 1 is b
// (completions in one answer requests of the other).
func NewPCIeLink(log *Log, a, b DirSpec) *PCIeLink {
	l := &PCIeLink{log: log}
	for i, s := range []DirSpec{a, b} {
		l.dirs[i] = &pcieDir{spec: s, out: map[txnKey]*request{}}
	}
	return l
}

// Enter is a TLP handed to direction d's transmitter.
func (l *PCIeLink) Enter(d int, at sim.Tick, id sim.TxnID, t *tlp.TLP) {
	dir := l.dirs[d]
	name := dir.spec.Name
	dir.seq++
	x := seen{seq: dir.seq, id: id, t: *t}
	x.t.Data = nil // identity is the header; the payload is not kept
	dir.pending = append(dir.pending, x)

	if err := t.Validate(); err != nil {
		l.log.reportf(name, at, id, "TLP format", "%v is malformed: %v", t, err)
	}
	if t.Kind.IsMemory() && !t.Kind.IsAtomic() && t.Length > 0 {
		if off := t.Addr & 0xfff; off+uint64(t.Length)*4 > 4096 {
			l.log.reportf(name, at, id, "PCIe 4KB", "%v crosses a 4 KB boundary (%d DW from offset %#x)", t, t.Length, off)
		}
	}
	if n := t.PayloadBytes(); dir.spec.MPS > 0 && n > dir.spec.MPS {
		l.log.reportf(name, at, id, "PCIe MPS", "%v carries %d bytes, more than MPS %d", t, n, dir.spec.MPS)
	}
	switch {
	case t.Kind.Class() == tlp.NonPosted && (t.Kind.IsMemory() || t.Kind.IsAtomic()):
		k := txnKey{t.RequesterID, t.Tag}
		if old, ok := dir.out[k]; ok {
			l.log.reportf(name, at, id, "PCIe tag", "%v reuses tag %d of %v while txn %v still awaits its completion", t, t.Tag, t.RequesterID, old.id)
		}
		r := &request{t: x.t, id: id, first: t.Addr + uint64(t.FirstByteOffset()), total: t.EnabledBytes()}
		if t.Kind.IsAtomic() {
			r.atomic = len(t.Data)
			if t.Kind == tlp.CAS {
				r.atomic /= 2
			}
			r.total = r.atomic // byte enables mean nothing to an AtomicOp
		}
		dir.out[k] = r
	case t.Kind.IsCompletion():
		l.completion(d, at, id, t)
	}
}

// completion checks a completion of direction d against the request it
// answers, from the other direction.
func (l *PCIeLink) completion(d int, at sim.Tick, id sim.TxnID, c *tlp.TLP) {
	name := l.dirs[d].spec.Name
	reqs := l.dirs[1-d].out
	k := txnKey{c.RequesterID, c.Tag}
	r, ok := reqs[k]
	if !ok {
		l.log.reportf(name, at, id, "PCIe completion", "%v answers no outstanding request of %v tag %d", c, c.RequesterID, c.Tag)
		return
	}
	bc := int(c.ByteCount)
	if bc == 0 {
		bc = 4096
	}
	remaining := r.total - r.sent
	if c.Status != tlp.SC {
		// Byte Count of an unsuccessful completion: the bytes still to come,
		// or the whole request's, as the project's completers send it; of an
		// AtomicOp's, the operand size or one DW (the IOMMU answers as for
		// I/O and configuration requests: a reading of the specification
		// this monitor leaves open).
		if bc != remaining && bc != r.total && (r.atomic == 0 || bc != 4) {
			l.log.reportf(name, at, id, "PCIe Byte Count", "%v for %v: Byte Count %d, want %d", c, &r.t, bc, remaining)
		}
		delete(reqs, k)
		return
	}
	if r.atomic > 0 {
		switch {
		case c.Kind != tlp.CplD || len(c.Data) != max(r.atomic, 4):
			l.log.reportf(name, at, id, "PCIe AtomicOp completion", "%v for %v: want CplD of %d bytes", c, &r.t, r.atomic)
		case bc != r.atomic:
			l.log.reportf(name, at, id, "PCIe Byte Count", "%v for %v: Byte Count %d, want the operand size %d", c, &r.t, bc, r.atomic)
		}
		delete(reqs, k)
		return
	}
	if c.Kind != tlp.CplD && c.Kind != tlp.CplDLk {
		l.log.reportf(name, at, id, "PCIe completion", "%v for %v: a successful read completion without data", c, &r.t)
		delete(reqs, k)
		return
	}
	addr := r.first + uint64(r.sent)
	if bc != remaining {
		l.log.reportf(name, at, id, "PCIe Byte Count", "%v for %v: Byte Count %d, want %d (the bytes still to come)", c, &r.t, bc, remaining)
	}
	if want := uint8(addr & 0x7f); c.LowerAddr != want {
		l.log.reportf(name, at, id, "PCIe Lower Address", "%v for %v: Lower Address %#x, want %#x (the first byte's address %#x)", c, &r.t, c.LowerAddr, want, addr)
	}
	here := min(int(c.Length)*4-int(addr&3), remaining)
	if here <= 0 {
		l.log.reportf(name, at, id, "PCIe completion", "%v for %v: no byte of the request", c, &r.t)
		delete(reqs, k)
		return
	}
	if here < remaining {
		if rcb := uint64(l.dirs[d].spec.RCB); rcb > 0 && (addr+uint64(here))%rcb != 0 {
			l.log.reportf(name, at, id, "PCIe RCB", "%v for %v: a partial completion ends at %#x, not on a %d-byte RCB boundary", c, &r.t, addr+uint64(here), rcb)
		}
	}
	r.sent += here
	if r.sent >= r.total {
		delete(reqs, k)
	}
}

// Arrive is a TLP entering direction d's receive buffer.
func (l *PCIeLink) Arrive(d int, at sim.Tick, id sim.TxnID, t *tlp.TLP) {
	dir := l.dirs[d]
	i := find(dir.pending, id, t)
	if i < 0 {
		l.log.reportf(dir.spec.Name, at, id, "PCIe link", "%v arrived but never entered the link", t)
		return
	}
	x := dir.pending[i]
	for _, older := range dir.pending[:i] {
		if !mayPass(t, &older.t) {
			l.log.reportf(dir.spec.Name, at, id, "PCIe "+rule(t, &older.t), "%v passed the earlier %v (txn %v) on the link", t, &older.t, older.id)
		}
	}
	dir.pending = append(dir.pending[:i], dir.pending[i+1:]...)
	dir.buffered = append(dir.buffered, x)
	l.credits(dir, at, id, t)
}

// credits checks that the transmitter had credits for t. Each TLP of its
// class that arrived before it holds its credits until the receiver takes
// it, and for UpdateFCPS after; t started at least LatencyPS before it
// arrived, so whatever was still held then was held when t was sent.
func (l *PCIeLink) credits(dir *pcieDir, at sim.Tick, id sim.TxnID, t *tlp.TLP) {
	c := t.Kind.Class()
	hlim, dlim := dir.spec.Credits[2*c], dir.spec.Credits[2*c+1]
	if hlim == 0 && dlim == 0 {
		return
	}
	sent := at - min(at, dir.spec.LatencyPS) + dir.spec.SlackPS // no later than this
	hdr, data := 1, dataCredits(t)
	keep := dir.held[c][:0]
	for _, h := range dir.held[c] {
		if h.taken != sim.Never && h.taken+dir.spec.UpdateFCPS <= sent {
			continue // its credits were back before t went out, and before any later TLP
		}
		keep = append(keep, h)
		hdr += h.hdr
		data += h.data
	}
	dir.held[c] = append(keep, heldTLP{taken: sim.Never, hdr: 1, data: dataCredits(t)})
	switch {
	case hlim > 0 && hdr > hlim:
		l.log.reportf(dir.spec.Name, at, id, "PCIe credits", "%v went out with %d of %d %v header credits held: credits exceeded, or returned before the receiver freed its buffer", t, hdr-1, hlim, c)
	case dlim > 0 && data > dlim:
		l.log.reportf(dir.spec.Name, at, id, "PCIe credits", "%v (%d data credits) went out with %d of %d %v data credits held: credits exceeded, or returned before the receiver freed its buffer", t, dataCredits(t), data-dataCredits(t), dlim, c)
	}
}

func dataCredits(t *tlp.TLP) int { return (t.PayloadBytes() + 15) / 16 }

// Take is the receiver taking a TLP from direction d's receive buffer.
func (l *PCIeLink) Take(d int, at sim.Tick, id sim.TxnID, t *tlp.TLP) {
	dir := l.dirs[d]
	i := find(dir.buffered, id, t)
	if i < 0 {
		l.log.reportf(dir.spec.Name, at, id, "PCIe link", "%v taken from the receive buffer but never arrived", t)
		return
	}
	if dir.spec.TakeOrder {
		for _, older := range dir.buffered[:i] {
			if !mayPass(t, &older.t) {
				l.log.reportf(dir.spec.Name, at, id, "PCIe "+rule(t, &older.t), "the receiver took %v before the earlier %v (txn %v)", t, &older.t, older.id)
			}
		}
	}
	dir.buffered = append(dir.buffered[:i], dir.buffered[i+1:]...)
	c := t.Kind.Class()
	for k := range dir.held[c] {
		if dir.held[c][k].taken == sim.Never {
			dir.held[c][k].taken = at // a class is freed in the order it arrived
			break
		}
	}
}

// Pass is Enter and Arrive at once: a channel without a link between them.
func (l *PCIeLink) Pass(d int, at sim.Tick, id sim.TxnID, t *tlp.TLP) {
	l.Enter(d, at, id, t)
	l.Arrive(d, at, id, t)
}

// Finish reports the requests still awaiting completions and the TLPs
// still on the link, at the end of a run that went quiet.
func (l *PCIeLink) Finish(at sim.Tick) {
	for _, dir := range l.dirs {
		for _, x := range dir.pending {
			l.log.reportf(dir.spec.Name, at, x.id, "PCIe link", "%v entered the link and never arrived", &x.t)
		}
		var open []*request
		for _, r := range dir.out {
			open = append(open, r)
		}
		sortRequests(open)
		for _, r := range open {
			l.log.reportf(dir.spec.Name, at, r.id, "PCIe completion", "%v never completed (%d of %d bytes)", &r.t, r.sent, r.total)
		}
	}
}

// find is the oldest entry that is t.
func find(s []seen, id sim.TxnID, t *tlp.TLP) int {
	for i := range s {
		if s[i].id == id && same(&s[i].t, t) {
			return i
		}
	}
	return -1
}

func same(a, b *tlp.TLP) bool {
	return a.Kind == b.Kind && a.RequesterID == b.RequesterID && a.Tag == b.Tag && a.Addr == b.Addr &&
		a.Length == b.Length && a.FirstBE == b.FirstBE && a.LastBE == b.LastBE && a.ByteCount == b.ByteCount &&
		a.LowerAddr == b.LowerAddr && a.Status == b.Status && a.CompleterID == b.CompleterID
}

// mayPass reports whether TLP b may pass the earlier TLP a (PCIe Base
// Specification, "Ordering Rules Summary"; b is the row, a the column).
func mayPass(b, a *tlp.TLP) bool {
	switch a.Kind.Class() {
	case tlp.Posted:
		idoOther := b.IDO && b.RequesterID != a.RequesterID
		switch {
		case b.Kind.IsCompletion(): // D2
			return b.RO || (b.IDO && b.CompleterID != a.RequesterID)
		case b.Kind.Class() == tlp.NonPosted && !b.Kind.HasData(): // B2: reads may not use RO to pass writes
			return idoOther
		default: // A2, C2
			return b.RO || idoOther
		}
	case tlp.Completion:
		// D5b: completions of one transaction stay in order; the rest of
		// column 5 is allowed.
		return !b.Kind.IsCompletion() || b.RequesterID != a.RequesterID || b.Tag != a.Tag
	}
	return true // column 3 and 4: anything may pass a non-posted request
}

// rule names the ordering rule of b passing a.
func rule(b, a *tlp.TLP) string {
	row := map[tlp.Class]string{tlp.Posted: "A", tlp.NonPosted: "B", tlp.Completion: "D"}[b.Kind.Class()]
	if b.Kind.Class() == tlp.NonPosted && b.Kind.HasData() {
		row = "C"
	}
	if a.Kind.Class() == tlp.Completion {
		return row + "5b ordering"
	}
	return row + "2a ordering"
}
