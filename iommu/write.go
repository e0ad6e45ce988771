package iommu

import (
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// job is one TLP in the IOMMU: decided when it is taken from its port,
// performed when its processing time has passed.
type job struct {
	port     int
	p        pcie.Packet
	iova     uint64 // first byte accessed
	n        int    // bytes accessed
	tr       translation
	act      action
	accesses int

	// An access-log record reserved for it.
	ls      *logState
	recAddr uint64
	recSeq  uint64
	recEnd  uint64
	recData int // bytes of data the record carries

	irq      bool  // an interrupt request: a write into the interrupt window
	faultFR  uint8 // a record for the fault log (0: none)
	dataDone bool  // its payload is in: it may go to memory
	flush    *flushEntry
	flushLog *logState

	// In the pipeline (Spec.Slots > 0): when the TLP was taken, when its
	// translation is done, and when its payload is in.
	takenAt, doneAt, dataAt sim.Tick
}

// accessed returns the first byte and byte count a memory request touches.
func accessed(t *tlp.TLP) (uint64, int) {
	first := t.Addr + uint64(t.FirstByteOffset())
	if t.Kind.IsAtomic() {
		n := len(t.Data)
		if t.Kind == tlp.CAS {
			n /= 2
		}
		return t.Addr, n
	}
	if t.Length == 1 && t.FirstBE == 0 {
		return first, 0 // zero-length access
	}
	return first, t.EnabledBytes()
}

// begin decides what to do with the TLP at the head of port pi. It returns
// ok=false, changing nothing the TLP depends on, when the TLP must wait:
// its access log is full or a buffer it needs is.
func (m *IOMMU) begin(pi int, pkt *pcie.Packet, now sim.Tick) (*job, bool) {
	var j *job
	if n := len(m.freeJobs); n > 0 {
		j, m.freeJobs = m.freeJobs[n-1], m.freeJobs[:n-1]
	} else {
		j = new(job)
	}
	j.port = pi
	if !m.decide(j, pkt) {
		m.releaseJob(j)
		return nil, false
	}
	return j, true
}

// releaseJob returns a job whose TLP is done to the free list: a steady
// stream of writes and reads allocates no jobs.
func (m *IOMMU) releaseJob(j *job) {
	*j = job{}
	m.freeJobs = append(m.freeJobs, j)
}

// decide fills in j for pkt; false means wait (see begin).
func (m *IOMMU) decide(j *job, pkt *pcie.Packet) bool {
	t := &pkt.TLP
	if !t.Kind.IsMemory() {
		return true // not a DMA request: answered in finish
	}
	if id := t.RequesterID; !m.portKnown || id != m.lastReq || j.port != m.lastReqPort {
		m.portOf[id] = j.port // a stream from one device skips the map
		m.lastReq, m.lastReqPort, m.portKnown = id, j.port, true
	}
	if t.Kind == tlp.MWr && InterruptWindow(t.Addr) {
		j.irq = true // a device's MSI: never DMA-remapped, delivered in finish
		return true
	}
	j.iova, j.n = accessed(t)
	if m.spec.Bypass {
		// No IOMMU: the IO virtual address is the physical one, and every
		// access is performed.
		j.tr = translation{pa: t.Addr, r: true, w: true}
		j.act = action{perform: true}
		return true
	}
	write := t.Kind == tlp.MWr || t.Kind.IsAtomic()
	m.translate(&j.tr, t.RequesterID, t.Addr, write)
	j.accesses = j.tr.accesses
	if j.tr.fault != 0 {
		j.faultFR = j.tr.fault
		return true
	}
	switch {
	case t.Kind == tlp.MWr:
		j.act = decideWrite(j.tr.leaf, j.tr.w)
	case t.Kind.IsAtomic():
		j.act = decideAtomic(j.tr.leaf, j.tr.r, j.tr.w)
	default:
		j.act = decideRead(j.tr.leaf, j.tr.r)
		if fe := m.flushPage(j.iova); fe != nil && j.act.perform {
			if fe.full(&m.spec) {
				return false // the page holds as many flushes as it may
			}
			ls, ok := m.logFor(fe.iuid, &j.accesses)
			if !ok {
				return false
			}
			j.flush, j.flushLog = fe, ls
		}
	}
	if j.act.log == logNone {
		return true
	}
	if !j.act.toAccess {
		j.faultFR = loggedReason(t.Kind, j.act.perform)
		return true
	}
	if j.n > m.spec.MaxActiveBytes {
		j.faultFR = FRAATooLarge
		return true
	}
	iuid := pte.IUID(j.tr.leaf)
	ls, ok := m.logFor(iuid, &j.accesses)
	if !ok {
		return false
	}
	if !ls.present {
		j.faultFR = FRAANoAccessLog // never into another IUID's log
		return true
	}
	if j.act.log == logMetaData {
		j.recData = j.n
		if t.Kind.IsAtomic() {
			j.recData = len(t.Data) // the operands: CAS carries compare and swap
		}
		if t.Kind == tlp.MRd || t.Kind == tlp.MRdLk {
			// A full tag buffer, or a tag still outstanding (a device may
			// not reuse it), makes the read wait.
			// (In the pipeline, logged reads taken but not yet done
			// hold their entries too.)
			if v, _ := m.tagBuf.Lookup(tagKey{t.RequesterID, t.Tag}); m.tagBuf.Full() || v != nil ||
				m.tagPending > 0 && m.tagBuf.Occupancy()+m.tagPending >= m.spec.TagBufferEntries {
				return false
			}
		}
	}
	if 2*uint64(record.Size(j.recData)) > ls.size {
		// A record larger than half the ring could wait forever for room
		// at a bad position of an empty ring: a fault, never a stall.
		j.faultFR = FRAATooLarge
		return true
	}
	addr, seq, ok := m.reserve(ls, record.Size(j.recData), &j.accesses)
	if !ok {
		ls.waiting = true
		return false
	}
	ls.waiting = false
	j.ls, j.recAddr, j.recSeq, j.recEnd = ls, addr, seq, ls.reserved
	return true
}

// describe names a decision for the transaction log.
func (m *IOMMU) describe(j *job) string {
	if j.p.TLP.Kind.IsCompletion() {
		return "completion" // passed on, not translated
	}
	if m.spec.Bypass {
		return "pass,bypass"
	}
	s := "pass"
	switch {
	case j.tr.fault != 0:
		s = fmt.Sprintf("fault(%#x)", j.tr.fault)
	case !j.act.perform:
		s = "blocked"
	}
	if j.ls != nil {
		s += fmt.Sprintf("+record(iuid=%d,seq=%d)", j.ls.iuid, j.recSeq)
	} else if j.faultFR != 0 && j.tr.fault == 0 {
		s += fmt.Sprintf("+faultlog(%#x)", j.faultFR)
	}
	if j.tr.tlbHit {
		return s + ",iotlb-hit"
	}
	return s + ",iotlb-miss"
}

// RecordTxn is the transaction that wrote record seq of IUID's log (0 if
// none did), taken once: the handler that processes the record uses it as
// its cause, so an operation can be followed into the handler.
func (m *IOMMU) RecordTxn(iuid uint16, seq uint64) sim.TxnID {
	k := uint64(iuid)<<48 | seq
	id := m.recTxn[k]
	delete(m.recTxn, k) // a record is handled once: the map holds only records not yet handled
	return id
}

// loggedReason is the fault-log reason of an E=0 record: a standard
// permission fault when the access was blocked, aaemu's AA reason when it
// was performed and only logged.
func loggedReason(k tlp.Kind, performed bool) uint8 {
	read := k == tlp.MRd || k == tlp.MRdLk
	switch {
	case performed && read:
		return FRAALoggedRead
	case performed:
		return FRAALoggedWrite
	case read:
		return FRRead
	}
	return FRWrite
}

// finish performs a decided TLP: the write path for MWr and AtomicOps,
// the read path (read.go) for MRd.
func (m *IOMMU) finish(j *job, now sim.Tick) {
	t := &j.p.TLP
	m.last = lastDecision{valid: true, kind: t.Kind, tlbHit: j.tr.tlbHit, leaf: j.tr.leaf,
		perform: j.tr.fault == 0 && j.act.perform, logged: j.ls != nil || j.faultFR != 0, fault: j.faultFR != 0}
	if !j.tr.tlbHit && j.tr.fault == 0 && j.tr.level > 0 {
		m.last.walk = pte.Levels - j.tr.level + 1
	}
	// The decision is a transaction whether or not a log records it: IDs
	// must not depend on which outputs a run writes. Only its description
	// costs anything, so only a transaction log gets one.
	e := m.u.Engine()
	kind := ""
	if e.TxnLogEnabled() {
		kind = "iommu." + m.describe(j)
	}
	d := e.NewTxn(j.p.ID, kind, m.u.Name())
	if j.ls != nil {
		m.recTxn[uint64(j.ls.iuid)<<48|j.recSeq] = d.ID
	}
	switch {
	case j.irq:
		m.deliverInterrupt(j)
	case t.Kind.IsCompletion() && m.hostCpl[t.RequesterID] != nil:
		// A device's completion of a core's uncached read: it goes to the
		// core behind every write taken before it (commit).
		m.hostCounters()
		m.stHostCpls.Inc()
		j.dataDone = true
		m.commitQ = append(m.commitQ, j)
	case !t.Kind.IsMemory():
		m.stUnsupported.Inc()
		if t.Kind.Class() == tlp.NonPosted {
			m.reply(j, tlp.UR)
		}
		return
	case t.Kind == tlp.MWr:
		m.stWrites.Inc()
		m.finishWrite(j, now)
	case t.Kind.IsAtomic():
		m.stAtomics.Inc()
		m.finishAtomic(j, now)
	default:
		m.stReads.Inc()
		m.finishRead(j, now)
	}
}

// finishWrite starts the data phase of a write: its payload streams in
// over the port's data path, DataPathBytes a cycle, while other ports'
// headers go on. Only then is memory written and the record complete, so
// the records of several ports' writes finish out of reservation order and
// leave holes the visible tail waits at.
func (m *IOMMU) finishWrite(j *job, now sim.Tick) {
	// A fault is recorded when the header is decided, in the order TLPs
	// were taken, not when the payload has streamed in.
	if j.faultFR != 0 {
		m.recordFault(j, now)
		j.faultFR = 0
	}
	if j.tr.fault == 0 && j.act.perform {
		m.commitQ = append(m.commitQ, j)
	}
	if m.pipelined() {
		// The pipeline streamed the payload in from when the TLP was taken.
		if j.dataAt <= now {
			m.writeData(j, now)
			return
		}
		m.dataPhases = append(m.dataPhases, dataPhase{at: j.dataAt, j: j})
		return
	}
	beats := (j.p.TLP.PayloadBytes() + m.spec.DataPathBytes - 1) / m.spec.DataPathBytes
	at := now + sim.Tick(max(beats-1, 0))*m.u.Clock().Period()
	m.ports[j.port].dataUntil = at
	if at <= now {
		m.writeData(j, now)
		return
	}
	m.dataPhases = append(m.dataPhases, dataPhase{at: at, j: j})
}

type dataPhase struct {
	at sim.Tick
	j  *job
}

// endDataPhases completes the writes whose payload has fully arrived.
func (m *IOMMU) endDataPhases(now sim.Tick) {
	keep := m.dataPhases[:0]
	for _, d := range m.dataPhases {
		if d.at > now {
			keep = append(keep, d)
			continue
		}
		m.writeData(d.j, now)
	}
	clear(m.dataPhases[len(keep):])
	m.dataPhases = keep
}

// writeData ends a write's data phase. A blocked write (the active put)
// completes its record now, so records of several ports finish out of order.
// A performed write waits for its turn to go to memory (commit), and its
// record completes after the memory write is on its way, so that a handler
// never sees a record before the data it describes.
func (m *IOMMU) writeData(j *job, now sim.Tick) {
	t := &j.p.TLP
	j.dataDone = true
	if j.tr.fault == 0 && j.act.perform {
		return // commit writes memory, then the record
	}
	m.stBlocked.Inc()
	data := t.Data[t.FirstByteOffset() : t.FirstByteOffset()+j.n]
	m.logRecord(j, record.Put, true, data, now)
	m.releaseJob(j) // a write not performed ends here
}

// commit queues the memory side of accepted requests for the memory
// controller strictly in the order the IOMMU took them: a read sees every
// write taken before it, and writes to one address land in order, whatever
// port they came from and however long their payload took to stream in.
// (On the way a later write may pass a read the controller cannot take yet,
// as PCIe lets posted requests pass non-posted ones; a read never passes a
// write.)
func (m *IOMMU) commit(now sim.Tick) {
	k := 0
	for k < len(m.commitQ) && m.commitQ[k].dataDone {
		j := m.commitQ[k]
		t := &j.p.TLP
		switch {
		case t.Kind == tlp.MWr:
			data := t.Data[t.FirstByteOffset() : t.FirstByteOffset()+j.n]
			if j.n > 0 {
				m.memOut.Push(memory.Req{Txn: j.p.Txn, Kind: memory.Write,
					Addr: j.tr.pa + uint64(t.FirstByteOffset()), Data: data})
			}
			m.logRecord(j, record.Put, false, data, now)
			m.releaseJob(j) // a performed write ends here
		case t.Kind.IsAtomic():
			req := *t
			req.Addr = j.tr.pa
			m.memOut.Push(memory.Req{Txn: j.p.Txn, Kind: memory.DeviceAtomic, TLP: req})
		case t.Kind.IsCompletion():
			// A completion for a core: not to pass the device's writes
			// before it, it leaves through the memory controller's write
			// queue, as soon as they are performed.
			m.memOut.Push(memory.Req{Txn: j.p.Txn, Kind: memory.HostCompletion, TLP: *t})
			m.releaseJob(j)
		default:
			req := *t
			req.Addr = j.tr.pa &^ 3
			m.memOut.Push(memory.Req{Txn: j.p.Txn, Kind: memory.DeviceRead, TLP: req})
			m.releaseJob(j) // a read's job ends here: its completions come back by tag
		}
		m.commitQ[k] = nil
		k++
	}
	m.commitQ = slices.Delete(m.commitQ, 0, k)
}

// finishAtomic performs an AtomicOp at memory when the page has R and W;
// otherwise it answers UR. Records follow the write bits, with the
// operands as data.
func (m *IOMMU) finishAtomic(j *job, now sim.Tick) {
	t := &j.p.TLP
	performed := j.tr.fault == 0 && j.act.perform
	if performed {
		j.dataDone = true
		m.commitQ = append(m.commitQ, j)
	} else {
		m.stBlocked.Inc()
		m.reply(j, tlp.UR)
	}
	m.logRecord(j, record.Atomic, !performed, t.Data, now)
}

// logRecord writes the job's record: whole into its access log, or as a
// fault record.
func (m *IOMMU) logRecord(j *job, kind record.Kind, blocked bool, data []byte, now sim.Tick) {
	if j.faultFR != 0 {
		m.recordFault(j, now)
	}
	if j.ls == nil {
		return
	}
	h := m.header(j, kind, blocked)
	var d []byte
	if j.recData > 0 {
		d = data[:j.recData]
		m.stDataLogged.Add(uint64(j.recData))
	}
	m.writeHeader(j.recAddr, &h, d)
	m.stRecords.Inc()
	m.complete(j.ls, j.recEnd, now)
}

func (m *IOMMU) header(j *job, kind record.Kind, blocked bool) record.Header {
	t := &j.p.TLP
	h := record.Header{Kind: kind, IUID: j.ls.iuid, Requester: uint16(t.RequesterID), Tag: t.Tag,
		IOVA: j.iova, Length: uint32(j.n), DataLen: uint32(j.recData), Seq: j.recSeq}
	if j.recData > 0 {
		h.Flags |= record.FlagData
	}
	if blocked {
		h.Flags |= record.FlagBlocked
	}
	return h
}

// recordFault writes a fault recording register and raises the fault
// event when VT-d says so.
func (m *IOMMU) recordFault(j *job, now sim.Tick) {
	t := &j.p.TLP
	read := t.Kind == tlp.MRd || t.Kind == tlp.MRdLk || t.Kind.IsAtomic()
	event, dropped := m.faults.record(t.RequesterID, j.iova, j.faultFR, read, j.tr.fpd)
	if dropped {
		m.stFaultsDropped.Inc()
	} else {
		m.stFaults.Inc()
	}
	if event {
		m.sendMSI(m.faults.addr, m.faults.data, j.p.ID)
	}
}

// reply sends a completion without data with status st for the job's
// request back to its device.
func (m *IOMMU) reply(j *job, st tlp.Status) {
	t := &j.p.TLP
	if t.Kind.Class() != tlp.NonPosted {
		return
	}
	var c tlp.TLP
	if t.Kind.IsMemory() && !t.Kind.IsAtomic() {
		c = pcie.ErrorCompletion(t, m.spec.ID, st)
	} else {
		c = tlp.NewCompletion(t, m.spec.ID, st, 4, 0, nil)
	}
	tx := m.u.Engine().NewTxn(j.p.ID, "cpl", m.u.Name())
	m.ports[j.port].queue.Push(pcie.Packet{Txn: tx, TLP: c})
}
