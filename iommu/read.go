package iommu

import (
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
	"slices"
)

// tagKey identifies an outstanding read: two devices use the same tags, so
// the requester ID is part of the key.
type tagKey struct {
	rid tlp.ID
	tag uint16
}

// readCtx is a tag-buffer entry: where the completions' data goes in the
// access log, and how much is still to come.
type readCtx struct {
	ls       *logState
	recAddr  uint64 // record header
	recEnd   uint64
	expected int
	got      int
}

// flushEntry is a flushing-buffer entry: the flushing page of one IUID's
// log and the flush gets it holds (Spec.FlushWaiters at once), each with
// the requester and tag whose completion is withheld and the log position
// the consumer must pass.
type flushEntry struct {
	iuid  uint16
	page  uint64
	waits []*flushWait
}

// flushWait is one flush get held by a flushing page.
type flushWait struct {
	released bool
	rid      tlp.ID
	tag      uint16
	target   uint64 // reservation pointer when the flush arrived
	held     []pcie.Packet
	port     int
}

// full reports whether the page holds as many flushes as it may: a
// further one waits at the head of its port.
func (fe *flushEntry) full(spec *Spec) bool { return len(fe.waits) >= max(spec.FlushWaiters, 1) }

// done removes w, whose last completion has gone to its device.
func (fe *flushEntry) done(w *flushWait) {
	for i, x := range fe.waits {
		if x == w {
			fe.waits = slices.Delete(fe.waits, i, i+1)
			return
		}
	}
}

func (m *IOMMU) addFlushPage(iuid uint16, page uint64) error {
	_, err := m.flushBuf.Insert(page, &flushEntry{iuid: iuid, page: page})
	return err
}

func (m *IOMMU) flushPage(iova uint64) *flushEntry {
	if v, _ := m.flushBuf.Lookup(iova &^ 0xfff); v != nil {
		return *v
	}
	return nil
}

func (m *IOMMU) flushWaitsOn(iuid uint16) bool {
	w := false
	m.flushBuf.Each(func(_ int, _ uint64, v **flushEntry) { w = w || (len((*v).waits) > 0 && (*v).iuid == iuid) })
	return w
}

func (m *IOMMU) activeFlushes() int {
	if m.flushBuf.Occupancy() == 0 {
		return 0 // every edge asks: skip the scan when nothing is buffered
	}
	n := 0
	m.flushBuf.Each(func(_ int, _ uint64, v **flushEntry) {
		for _, w := range (*v).waits {
			if !w.released {
				n++
			}
		}
	})
	return n
}

// finishRead is the read path. A blocked read gets an Unsupported Request
// completion. An allowed one goes to memory translated; its completions
// come back through takeCompletions, which copies the data into the reserved
// record when the page says RLD. A read of a flushing page is held there
// until the log is consumed.
func (m *IOMMU) finishRead(j *job, now sim.Tick) {
	t := &j.p.TLP
	performed := j.tr.fault == 0 && j.act.perform
	if !performed {
		m.stBlocked.Inc()
		m.reply(j, tlp.UR)
		m.logRecord(j, record.Get, true, nil, now)
		return
	}
	j.dataDone = true
	m.commitQ = append(m.commitQ, j) // to memory after every write taken before it
	if j.flush != nil && !m.pipelined() {
		m.startFlush(j)
	}
	if j.faultFR != 0 {
		m.recordFault(j, now)
	}
	if j.ls == nil {
		return
	}
	h := m.header(j, record.Get, false)
	m.stRecords.Inc()
	if j.recData == 0 {
		m.writeHeader(j.recAddr, &h, nil)
		m.complete(j.ls, j.recEnd, now)
		return
	}
	// Header now, data as the completions pass; the record stays a hole
	// until the last byte is in.
	m.writeHeader(j.recAddr, &h, nil)
	m.tagBuf.Insert(tagKey{t.RequesterID, t.Tag}, &readCtx{ls: j.ls, recAddr: j.recAddr, recEnd: j.recEnd, expected: j.recData})
}

// startFlush makes j's flushing page active: its completion is withheld
// until the consumer passes the log's reservation pointer of now. One at
// a time, when the read is done; in the pipeline, when it is taken, so
// that a second flush of the page taken meanwhile waits.
func (m *IOMMU) startFlush(j *job) {
	t := &j.p.TLP
	j.flush.waits = append(j.flush.waits, &flushWait{rid: t.RequesterID, tag: t.Tag, port: j.port, target: j.flushLog.reserved})
}

// takeCompletions intercepts completions from memory on their way to the
// device: the tag buffer matches them to their reads, logged data is copied
// into the access log, and a flush's completion is withheld.
func (m *IOMMU) takeCompletions(now sim.Tick) {
	if m.MemCpl == nil {
		return
	}
	for m.MemCpl.Valid() {
		c := &m.MemCpl.Peek().TLP
		key := tagKey{c.RequesterID, c.Tag}
		if v, _ := m.tagBuf.Lookup(key); v != nil {
			rc := *v
			if c.Status == tlp.SC && len(c.Data) > 0 {
				off := rc.expected - int(c.ByteCount) // bytes of the read already seen
				skip := int(c.LowerAddr & 3)
				n := min(len(c.Data)-skip, int(c.ByteCount), rc.expected-off)
				if n > 0 && off >= 0 {
					m.memWrite(rc.recAddr+record.HeaderSize+uint64(off), append([]byte(nil), c.Data[skip:skip+n]...))
					rc.got += n
					m.stDataLogged.Add(uint64(n))
				}
			}
			if rc.got >= rc.expected || c.Status != tlp.SC {
				m.tagBuf.Remove(key)
				m.complete(rc.ls, rc.recEnd, now)
			}
		}
		pkt := m.MemCpl.Recv()
		last := int(pkt.TLP.ByteCount) <= len(pkt.TLP.Data)-int(pkt.TLP.LowerAddr&3) || pkt.TLP.Status != tlp.SC
		if fe, w := m.heldBy(key); w != nil {
			if !w.released {
				w.held = append(w.held, pkt)
				continue
			}
			if last {
				fe.done(w)
				m.stFlushes.Inc()
			}
		}
		pi, ok := m.portOf[pkt.TLP.RequesterID]
		if !ok {
			if h := m.hostCpl[pkt.TLP.RequesterID]; h != nil {
				// A device's completion of a core's uncached read, past
				// the device's earlier writes (commit): on to the core.
				m.toHost(h, pkt)
			}
			continue // (or no port ever sent a request with this ID)
		}
		m.ports[pi].queue.Push(pkt)
	}
}

func (m *IOMMU) heldBy(k tagKey) (*flushEntry, *flushWait) {
	var fe *flushEntry
	var out *flushWait
	m.flushBuf.Each(func(_ int, _ uint64, v **flushEntry) {
		for _, w := range (*v).waits {
			if w.rid == k.rid && w.tag == k.tag {
				fe, out = *v, w
			}
		}
	})
	return fe, out
}

// releaseFlushes lets go of the withheld completions of every flush whose
// log the consumer has drained up to the flush's target.
func (m *IOMMU) releaseFlushes(now sim.Tick) {
	m.flushBuf.Each(func(_ int, _ uint64, v **flushEntry) {
		fe := *v
		if len(fe.waits) == 0 {
			return
		}
		lv, _ := m.logs.Lookup(fe.iuid)
		if lv == nil {
			return // a log with an active flush stays in the table
		}
		// In arrival order; a wait done here leaves the slice, and the
		// next one takes its index (no copy: this runs at every head
		// poll).
		for i := 0; i < len(fe.waits); {
			w := fe.waits[i]
			if w.released || (*lv).head < w.target {
				i++
				continue
			}
			w.released = true
			p := m.ports[w.port]
			done := false
			for _, pkt := range w.held {
				p.queue.Push(pkt)
				c := &pkt.TLP
				if int(c.ByteCount) <= len(c.Data)-int(c.LowerAddr&3) || c.Status != tlp.SC {
					fe.done(w)
					m.stFlushes.Inc()
					done = true
				}
			}
			w.held = w.held[:0]
			if !done {
				i++
			}
		}
	})
}
