package iommu

import (
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/sim"
)

// logState is one access log as the IOMMU's access-log table holds it.
// Pointers are free-running byte counts: the ring position is count mod size.
type logState struct {
	iuid     uint16
	present  bool // a log is registered (size > 0)
	base     uint64
	size     uint64
	head     uint64 // consumer's pointer, as last read from memory
	reserved uint64 // reservation pointer: space handed out
	tail     uint64 // visible tail: only over complete records
	seq      uint64
	mode     Notify
	thresh   uint64
	msiAddr  uint64
	msiData  uint32 // SP: scratchpad slot

	pend     []resv // reservations not yet visible, in reservation order
	notified uint64 // tail at the last notification (Int)
	timerSet bool
	waiting  bool // something waits for the consumer to move head
}

// resv is one reserved record; the visible tail moves over it once done.
type resv struct {
	end  uint64 // free-running end of the record
	done bool
}

// logFor returns IUID's log from the access-log table (the on-chip CAM),
// fetching its descriptor from memory on a miss (one memory access, and
// evicting an idle entry when the CAM is full). ok is false when the CAM is
// full of logs with records in flight: the request must wait.
func (m *IOMMU) logFor(iuid uint16, accesses *int) (ls *logState, ok bool) {
	if v, _ := m.logs.Lookup(iuid); v != nil {
		m.stLogHits.Inc()
		return *v, true
	}
	m.stLogMisses.Inc()
	if m.logs.Full() {
		victim := -1
		m.logs.Each(func(slot int, k uint16, v **logState) {
			if victim < 0 && len((*v).pend) == 0 && !(*v).waiting && !m.flushWaitsOn(k) {
				victim = int(k)
			}
		})
		if victim < 0 {
			return nil, false
		}
		v, _ := m.logs.Remove(uint16(victim))
		// An Int log's records not yet notified are notified as the entry
		// leaves: its notification state (notified, the interval timer)
		// lives only in the CAM, and a reloaded entry starts notified up
		// to its tail, so they would wait for an MSI that never comes.
		if v.mode == Int && v.tail > v.notified {
			v.notified = v.tail
			m.sendMSI(v.msiAddr, v.msiData, 0)
			m.stLogMSIs.Inc()
		}
		// Write back the IOMMU's private fields. (The visible tail's own
		// write may still be on its way to memory; it is the CPU's copy and
		// is never read back.)
		a := m.spec.LogTable + uint64(victim)*logEntrySize
		m.mem.Store64(a+offSeq, v.seq)
		m.mem.Store64(a+offReserved, v.reserved)
	}
	a := m.spec.LogTable + uint64(iuid)*logEntrySize
	*accesses++
	ls = &logState{iuid: iuid, base: m.mem.Load64(a + offBase), size: m.mem.Load64(a + offSize),
		head: m.mem.Load64(a + offHead), tail: m.mem.Load64(a + offReserved), seq: m.mem.Load64(a + offSeq),
		msiAddr: m.mem.Load64(a + offMSIAddr), msiData: uint32(m.mem.Load64(a + offMSIData))}
	mode := m.mem.Load64(a + offMode)
	ls.mode, ls.thresh = Notify(mode&0xff), mode>>32
	if ls.thresh == 0 {
		ls.thresh = 1
	}
	ls.present = ls.size != 0
	ls.reserved, ls.notified = ls.tail, ls.tail
	m.logs.Insert(iuid, ls)
	return ls, true
}

// InvalidateLog drops IUID's entry from the access-log table (after the
// driver changed its descriptor).
func (m *IOMMU) InvalidateLog(iuid uint16) { m.logs.Remove(iuid) }

// reserve hands out space for a record of size bytes, with a PAD record
// first when it does not fit before the end of the ring. It re-reads head
// from memory when the log looks full; ok is false when it is full. Records
// are at most half the ring (begin faults larger ones), so a drained ring
// always has room on one side or the other of the consumer's position.
func (m *IOMMU) reserve(ls *logState, size int, accesses *int) (addr, seq uint64, ok bool) {
	need := uint64(size)
	pos := ls.reserved % ls.size
	pad := uint64(0)
	if pos+need > ls.size {
		pad = ls.size - pos
	}
	if pad+need > ls.size-(ls.reserved-ls.head) {
		ls.head = m.mem.Load64(m.spec.LogTable + uint64(ls.iuid)*logEntrySize + offHead)
		*accesses++
		if pad+need > ls.size-(ls.reserved-ls.head) {
			return 0, 0, false
		}
	}
	if pad > 0 {
		m.placePad(ls, pos, pad)
	}
	addr = ls.base + ls.reserved%ls.size
	seq = ls.seq
	ls.seq++
	ls.reserved += need
	ls.pend = append(ls.pend, resv{end: ls.reserved})
	return addr, seq, true
}

// placePad fills the rest of the ring from pos with a PAD record (or, with
// less room than a header, nothing: readers skip, record.SkipAtEnd).
func (m *IOMMU) placePad(ls *logState, pos, pad uint64) {
	if pad >= record.HeaderSize {
		h := record.Header{Kind: record.Pad, IUID: ls.iuid, Length: uint32(pad), Seq: ls.seq}
		m.writeHeader(ls.base+pos, &h, nil)
		ls.seq++
	}
	ls.reserved += pad
	ls.pend = append(ls.pend, resv{end: ls.reserved, done: true})
}

// writeHeader queues the record header (and data, if any) for memory.
func (m *IOMMU) writeHeader(addr uint64, h *record.Header, data []byte) {
	b := make([]byte, record.Size(len(data)))
	h.Put(b)
	copy(b[record.HeaderSize:], data)
	if h.Kind == record.Pad {
		b = b[:record.HeaderSize]
	}
	m.memWrite(addr, b)
}

// complete marks the record ending at end as fully written and moves the
// visible tail over every complete record at the front, in reservation
// order: the consumer never sees a hole.
func (m *IOMMU) complete(ls *logState, end uint64, now sim.Tick) {
	for i := range ls.pend {
		if ls.pend[i].end == end {
			ls.pend[i].done = true
			if i > 0 && !ls.pend[0].done {
				m.stHoles.Inc() // finished behind an unfinished record
			}
			break
		}
	}
	old := ls.tail
	n := 0
	for n < len(ls.pend) && ls.pend[n].done {
		ls.tail = ls.pend[n].end
		n++
	}
	if n == 0 {
		return
	}
	ls.pend = append(ls.pend[:0], ls.pend[n:]...)
	if ls.tail == old {
		return
	}
	// The tail goes to memory after the records (one FIFO to memory keeps
	// them in order), then to the CPU by the log's notification mode.
	var b [8]byte
	putLE64(b[:], ls.tail)
	m.memWrite(m.spec.LogTable+uint64(ls.iuid)*logEntrySize+offTail, b[:])
	m.stTailMoves.Inc()
	switch ls.mode {
	case SP:
		m.spOut = append(m.spOut, SPWrite{Slot: ls.msiData, IUID: ls.iuid, Tail: ls.tail})
	case Int:
		m.maybeNotify(ls, now)
	}
}

// maybeNotify sends the log's MSI once Threshold bytes of records have
// become visible since the last one; fewer wait for the notification
// interval.
func (m *IOMMU) maybeNotify(ls *logState, now sim.Tick) {
	if ls.tail-ls.notified >= ls.thresh {
		ls.notified = ls.tail
		m.sendMSI(ls.msiAddr, ls.msiData, 0)
		m.stLogMSIs.Inc()
		return
	}
	if ls.tail > ls.notified && !ls.timerSet && m.spec.NotifyIntervalPS > 0 {
		ls.timerSet = true
		m.intervals = append(m.intervals, intervalTimer{at: now + m.spec.NotifyIntervalPS, iuid: ls.iuid})
		m.u.WakeAt(now + m.spec.NotifyIntervalPS)
	}
}

func putLE64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}
