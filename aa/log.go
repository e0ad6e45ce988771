package aa

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/machine"
)

// Record is one access-log record as a handler gets it.
type Record struct {
	record.Header
	Data []byte
	At   uint64 // where the record's data lies in the log
}

// Handler processes one record on the node that owns the log.
type Handler func(c *Ctx, r Record)

// Log is an access log and the handler that consumes it.
type Log struct {
	n         *Node
	IUID      uint16
	Base      uint64
	Size      uint64
	Mode      iommu.Notify
	handler   Handler
	head      uint64
	Processed uint64 // records handled
	entry     uint64 // the descriptor in memory
	stopped   bool
	keepData  bool
	notify    *cpu.Notify // SP, Poll: wakes the polling core (scratchpad writes, Stop)
	// Int: a handler is draining the log, and an MSI came meanwhile. A
	// handler that takes time lets the core take the log's next MSI; that
	// one must not drain from the same head again (it would hand the
	// same records over twice), so it leaves the running drain to read
	// the tail once more.
	draining, again bool
}

// KeepData makes the consumer read only each record's header and hand the
// handler the record without its data, which stays in the log at
// Record.At: for a log that is itself the store (a fault-tolerance log),
// sized so that it never wraps over records still needed.
func (l *Log) KeepData() { l.keepData = true }

// CreateLog gives the node an access log of size bytes for IUID, consumed by
// h with the notification mode: Poll (a process polls the tail in memory on
// core 0), Int (an MSI; the handler runs on core 0 after the interrupt
// latency), SP (a polling hyperthread polls the scratchpad: the node's, or
// the sibling of LogOptions.Core's core, machine.Spec.PollingHyperthreads).
func (n *Node) CreateLog(iuid uint16, size uint64, mode iommu.Notify, h Handler) (*Log, error) {
	return n.CreateLogThreshold(iuid, size, mode, 0, h)
}

// CreateLogThreshold is CreateLog with an Int log's threshold: the IOMMU
// raises the MSI once threshold bytes of records are visible (0: after every
// record), fewer waiting for its notification interval. It moderates
// interrupts as the paper's "an interrupt every 10 inserts".
func (n *Node) CreateLogThreshold(iuid uint16, size uint64, mode iommu.Notify, threshold uint32, h Handler) (*Log, error) {
	return n.CreateLogWith(iuid, size, mode, LogOptions{Threshold: threshold}, h)
}

// LogOptions are a log's less common settings.
type LogOptions struct {
	Threshold uint32 // Int: bytes of records per MSI (0: every record)
	// Core: the core whose process owns the log (default 0). Poll: that
	// core's process polls it; SP with a polling hyperthread a core: that
	// core's sibling polls it.
	Core int
}

// CreateLogWith is CreateLog with options.
func (n *Node) CreateLogWith(iuid uint16, size uint64, mode iommu.Notify, opt LogOptions, h Handler) (*Log, error) {
	threshold := opt.Threshold
	if opt.Core < 0 || opt.Core >= len(n.Cores) {
		return nil, fmt.Errorf("node %d, log of IUID %d: core %d of %d", n.ID, iuid, opt.Core, len(n.Cores))
	}
	if _, dup := n.logs[iuid]; dup {
		return nil, fmt.Errorf("node %d already has a log for IUID %d", n.ID, iuid)
	}
	if n.IOMMU.Spec().Bypass {
		return nil, fmt.Errorf("node %d, log of IUID %d: %w", n.ID, iuid, iommu.ErrBypassed)
	}
	// An SP log's slot is checked before its memory is taken: a refused
	// log leaves the node's heap as it was.
	if mode == iommu.SP && len(n.logs) >= n.SP.Slots() {
		return nil, fmt.Errorf("node %d, log of IUID %d: the scratchpad's %d slots are taken (a slot a log)", n.ID, iuid, n.SP.Slots())
	}
	l := &Log{n: n, IUID: iuid, Base: n.Alloc(size), Size: size, Mode: mode, handler: h, entry: n.Driver.LogEntryAddr(iuid)}
	cfg := iommu.LogConfig{Base: l.Base, Size: size, Mode: mode, Threshold: threshold}
	switch mode {
	case iommu.Int:
		cfg.MSIAddr, cfg.MSIData = 0xfee0_0000|uint64(n.ID)<<12, 0x40+uint32(iuid)
		n.Cores[0].OnInterrupt(cfg.MSIAddr, cfg.MSIData, fmt.Sprintf("log%d", iuid), func(p *cpu.Proc) {
			if l.draining {
				l.again = true
				return
			}
			l.draining = true
			for again := true; again; again = l.again {
				l.again = false
				l.drain(n.Ctx(p, 0))
			}
			l.draining = false
		})
	case iommu.SP:
		cfg.SPSlot = uint32(len(n.logs)) // free: checked above
		// The scratchpad's writes of the log's slot, and Stop, are all
		// that can change what the loop looks at: its core may sleep
		// until one comes. The log's hyperthread is the node's, or the
		// sibling of the owning process's core, which uses that core's
		// connections (machine.Spec.PollingHyperthreads).
		l.notify = &cpu.Notify{}
		n.SP.OnWrite = n.spWritten
		n.spNotify[int(cfg.SPSlot)] = l.notify
		ctxCore := 0
		if n.Pollers != nil {
			ctxCore = opt.Core
		}
		n.PollerOf(opt.Core).SpawnDaemon(fmt.Sprintf("log%d_sp", iuid), func(p *cpu.Proc) {
			c := n.Ctx(p, ctxCore)
			// One condition for every wait: a closure made at each
			// was garbage at every drain.
			ready := func() bool { return l.stopped || n.SP.Read(int(cfg.SPSlot)) > l.head }
			for !l.stopped {
				p.ScratchpadPollNotified(l.notify, ready)
				l.drain(c)
			}
		})
	case iommu.Poll:
		// The IOMMU's write of the tail, and Stop, are all that can
		// change what the loop looks at: its core may sleep until one.
		l.notify = &cpu.Notify{}
		n.Cores[opt.Core].SpawnDaemon(fmt.Sprintf("log%d_poll", iuid), func(p *cpu.Proc) {
			c := n.Ctx(p, 0)
			for !l.stopped {
				p.PollWordNotified(l.entry+24, l.notify, func(tail uint64) bool { return l.stopped || tail > l.head })
				l.drain(c)
			}
		})
	default:
		return nil, fmt.Errorf("notification mode %v", mode)
	}
	if err := n.Driver.RegisterLog(iuid, cfg); err != nil {
		return nil, err
	}
	n.logs[iuid] = l
	return l, nil
}

// drain hands every visible record to the handler and publishes the new
// head: the IOMMU sees it the next time it reads head.
func (l *Log) drain(c *Ctx) {
	p := c.P
	tail := p.Load64(l.entry + 24)
	for l.head < tail {
		if skip := record.SkipAtEnd(l.head, l.Size); skip > 0 {
			l.head += skip
			continue
		}
		hdr := make([]byte, record.HeaderSize)
		p.Read(l.Base+l.head%l.Size, hdr)
		h, err := record.Parse(hdr)
		if err != nil {
			panic(fmt.Sprintf("node %d log %d at %d: %v", l.n.ID, l.IUID, l.head, err))
		}
		r := Record{Header: h, At: l.Base + l.head%l.Size + record.HeaderSize}
		if h.DataLen > 0 && !l.keepData {
			r.Data = make([]byte, h.DataLen)
			p.Read(l.Base+l.head%l.Size+record.HeaderSize, r.Data)
		}
		if h.Kind != record.Pad {
			c.P.Txn = c.N.Eng.NewTxn(l.n.IOMMU.RecordTxn(l.IUID, h.Seq), "handler."+h.Kind.String(), c.P.Name())
			l.handler(c, r)
			l.Processed++
		}
		l.head += uint64(h.Size())
	}
	p.Store64(l.entry+16, l.head)
}

// Records reads every record the log holds from its start, without
// costing time: for checks after a run. It fails if the log has wrapped.
func (l *Log) Records() ([]Record, error) {
	m := l.n.Mem
	tail := m.Load64(l.entry + 24)
	if tail > l.Size {
		return nil, fmt.Errorf("node %d log %d has wrapped (%d bytes written into %d)", l.n.ID, l.IUID, tail, l.Size)
	}
	var out []Record
	for pos := uint64(0); pos < tail; {
		if skip := record.SkipAtEnd(pos, l.Size); skip > 0 {
			pos += skip
			continue
		}
		hdr := make([]byte, record.HeaderSize)
		m.Read(l.Base+pos, hdr)
		h, err := record.Parse(hdr)
		if err != nil {
			return nil, fmt.Errorf("node %d log %d at %d: %w", l.n.ID, l.IUID, pos, err)
		}
		r := Record{Header: h, At: l.Base + pos + record.HeaderSize}
		if h.Kind != record.Pad {
			r.Data = make([]byte, h.DataLen)
			m.Read(r.At, r.Data)
			out = append(out, r)
		}
		pos += uint64(h.Size())
	}
	return out, nil
}

// Stop ends the log's polling consumer (at the end of a run).
func (l *Log) Stop() {
	l.stopped = true
	if l.notify != nil {
		l.notify.Changed()
	}
}

// CreateFlushPage gives IUID's log a flushing page, for ActiveFlush.
func (n *Node) CreateFlushPage(iuid uint16) (uint64, error) {
	page := n.Alloc(4096)
	if err := n.Register(page, 4096, iommu.Perm{Bits: pte.R}); err != nil {
		return 0, err
	}
	if err := n.Driver.RegisterFlushPage(iuid, page); err != nil {
		return 0, err
	}
	if err := n.Label(page, 4096, machine.KindLog); err != nil {
		return 0, err
	}
	n.flush[iuid] = page
	return page, nil
}
