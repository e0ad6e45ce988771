package memory

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// ReqKind is what a memory request does.
type ReqKind uint8

// Memory request kinds.
const (
	Write        ReqKind = iota // write Data at Addr (a DMA write or the IOMMU's own)
	DeviceRead                  // a device's MRd, already translated: complete it
	DeviceAtomic                // a device's AtomicOp, already translated: perform and complete it
	// HostCompletion is a device's completion for a CPU (an uncached read
	// of the device's memory) that must not pass the device's earlier
	// writes: it waits among the writes, leaves on Cpl as soon as every
	// write taken before it is performed, and costs no access of its own.
	HostCompletion
)

// Req is a request to the memory controller. Addresses are physical.
type Req struct {
	sim.Txn
	Kind ReqKind
	Addr uint64
	Data []byte
	TLP  tlp.TLP // DeviceRead, DeviceAtomic: the request, with Addr translated; HostCompletion: the completion
}

// Spec configures the controller.
type Spec struct {
	LatencyPS    sim.Tick // access latency (default 70 ns)
	BytesPerNS   int      // bandwidth; 0 = unlimited (default 25: DDR4-3200 one channel)
	Sizes        pcie.Sizes
	CompleterID  tlp.ID // the root complex's ID in completions
	QueueEntries int    // writes in flight, and reads and AtomicOps in flight (default 64 each)
}

// DefaultSpec is a single DDR4 channel behind a root complex.
func DefaultSpec() Spec {
	return Spec{LatencyPS: 70 * sim.NS, BytesPerNS: 25, Sizes: pcie.Sizes{MPS: 256, MRRS: 512, RCB: 64}, QueueEntries: 64}
}

// Controller completes memory requests after the access latency, in order,
// limited by its bandwidth. Device reads come back as completions split at
// the Read Completion Boundary.
//
// Writes and the requests that complete (reads, AtomicOps) wait in separate
// queues, as a memory controller's write and read pending queues, and come
// in through separate lanes: a read whose completions find no room holds up
// the reads behind it but not the writes (posted requests pass non-posted
// ones), while a read never passes an earlier write, so its data is never
// older than a write taken before it.
type Controller struct {
	u     *sim.Unit
	spec  Spec
	Store *Store

	In  *sim.Chan[Req]         // requests: a lane for writes, one for reads and AtomicOps
	Cpl *sim.Chan[pcie.Packet] // completions of device reads and AtomicOps

	pending [2]sim.Queue[pendingReq] // writes, reads and AtomicOps; by arrival within each
	seq     uint64
	busyTil sim.Tick
	out     sim.Queue[pcie.Packet] // completions waiting for room in Cpl
	cpls    []tlp.TLP              // scratch: a read's completions, before they join out

	reads, writes, bytesRd, bytesWr *sim.Counter

	onWrite func(addr, n uint64)
}

type pendingReq struct {
	r   Req
	at  sim.Tick
	seq uint64 // arrival order across the two queues
}

// outMax bounds the completions waiting for room in Cpl: a read (or an
// AtomicOp) is performed only while there is room for its completions.
const outMax = 64

// ReqClass is a request's PCIe ordering class, which is also its lane in
// In: a write is posted, a read or AtomicOp non-posted (it completes). A
// host completion travels with the writes: it must not pass them.
func ReqClass(r *Req) tlp.Class {
	if r.Kind == Write || r.Kind == HostCompletion {
		return tlp.Posted
	}
	return tlp.NonPosted
}

func reqLane(r *Req) int { return int(ReqClass(r)) }

// NewController places a memory controller in clk. src is the unit that
// sends requests, dst the one that takes completions.
func NewController(clk *sim.Clock, name string, spec Spec, store *Store, src, dst *sim.Unit) (*Controller, error) {
	if err := spec.Sizes.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if spec.QueueEntries < 1 {
		return nil, fmt.Errorf("%s: queue of %d entries", name, spec.QueueEntries)
	}
	c := &Controller{spec: spec, Store: store}
	c.u = clk.Add(name, c)
	c.In = sim.NewLanedChan(src, c.u, name+".req", []int{2, 2}, reqLane)
	c.Cpl = sim.NewChan[pcie.Packet](c.u, dst, name+".cpl", 4)
	s := c.u.Engine().Stats()
	c.reads = s.Counter(name+".reads", "requests", "device reads completed")
	c.writes = s.Counter(name+".writes", "requests", "writes performed")
	c.bytesRd = s.Counter(name+".bytes_read", "bytes", "bytes read")
	c.bytesWr = s.Counter(name+".bytes_written", "bytes", "bytes written")
	return c, nil
}

// Unit is the controller's kernel unit.
func (c *Controller) Unit() *sim.Unit { return c.u }

// OnWrite registers f to run whenever the controller writes memory for the
// I/O side — a device's DMA write or AtomicOp, the IOMMU's own writes —
// with the bytes it writes: caches that hold those lines drop them (an SMP
// node's coherence model), as a snooping root complex makes them.
func (c *Controller) OnWrite(f func(addr, n uint64)) { c.onWrite = f }

func (c *Controller) size(r *Req) int {
	switch r.Kind {
	case Write:
		return len(r.Data)
	case DeviceRead:
		return r.TLP.EnabledBytes()
	}
	return len(r.TLP.Data)
}

// Tick accepts one request and finishes those whose latency has passed.
func (c *Controller) Tick(now sim.Tick) bool {
	// Completions that waited for room.
	for c.out.Len() > 0 && c.Cpl.Ready() {
		c.Cpl.Send(c.out.Pop())
	}
	// The oldest request whose queue has room: a write never waits for
	// room among the reads, a read never enters ahead of an earlier write.
	if l := pcie.NextLane(c.In, func(l int, _ *Req) bool { return c.pending[l].Len() < c.spec.QueueEntries }); l >= 0 {
		r := c.In.RecvLane(l)
		at := now // a host completion: no access, due once the writes ahead of it are
		if r.Kind != HostCompletion {
			start := max(now, c.busyTil)
			if c.spec.BytesPerNS > 0 {
				c.busyTil = start + sim.Tick((c.size(&r)*1000+c.spec.BytesPerNS-1)/c.spec.BytesPerNS)
			}
			at = start + c.spec.LatencyPS
		}
		c.seq++
		c.pending[l].Push(pendingReq{r: r, at: at, seq: c.seq})
	}
	// Due requests in arrival order (their times rise with it, so an
	// earlier write is always due before a later read; a host completion,
	// due at once, waits behind the writes ahead of it and may pass reads),
	// except that a read without room for its completions lets the writes
	// behind it go.
	for {
		w, rd := c.due(0, now), c.due(1, now) && c.out.Len() < outMax
		if !w && !rd {
			break
		}
		i := 0
		if rd && (!w || c.pending[1].Front().seq < c.pending[0].Front().seq) {
			i = 1
		}
		c.perform(&c.pending[i].Front().r)
		c.pending[i].Pop()
	}
	for c.out.Len() > 0 && c.Cpl.Ready() {
		c.Cpl.Send(c.out.Pop())
	}
	if c.In.Valid() || c.out.Len() > 0 && c.Cpl.Ready() {
		return true
	}
	next := sim.Never
	for i := range c.pending {
		if c.pending[i].Len() > 0 {
			next = min(next, c.pending[i].Front().at)
		}
	}
	if next != sim.Never {
		c.u.WakeAt(max(next, now+1))
	}
	return false
}

// due reports whether the front of pending queue i has waited out its
// latency.
func (c *Controller) due(i int, now sim.Tick) bool {
	return c.pending[i].Len() > 0 && c.pending[i].Front().at <= now
}

func (c *Controller) perform(r *Req) {
	switch r.Kind {
	case Write:
		c.Store.Write(r.Addr, r.Data)
		c.writes.Inc()
		c.bytesWr.Add(uint64(len(r.Data)))
		if c.onWrite != nil {
			c.onWrite(r.Addr, uint64(len(r.Data)))
		}
	case DeviceRead:
		t := &r.TLP
		c.cpls = c.spec.Sizes.AppendSplitCompletions(c.cpls[:0], t, c.spec.CompleterID, func(addr uint64, n int) []byte {
			b := make([]byte, n)
			c.Store.Read(addr, b)
			return b
		})
		for _, cp := range c.cpls {
			c.out.Push(pcie.Packet{Txn: sim.Txn{ID: r.ID, Cause: r.Cause}, TLP: cp})
		}
		// The pushed packets hold the completions (copied) and their data;
		// the scratch slice must not keep the data alive after them.
		clear(c.cpls)
		c.reads.Inc()
		c.bytesRd.Add(uint64(t.EnabledBytes()))
	case DeviceAtomic:
		c.out.Push(pcie.Packet{Txn: r.Txn, TLP: c.atomic(&r.TLP)})
	case HostCompletion:
		c.out.Push(pcie.Packet{Txn: r.Txn, TLP: r.TLP})
	}
}

// atomic performs an AtomicOp and returns its completion carrying the
// original value (little-endian operands, as PCIe carries them).
func (c *Controller) atomic(t *tlp.TLP) tlp.TLP {
	size := len(t.Data)
	if t.Kind == tlp.CAS {
		size /= 2
	}
	old := make([]byte, size)
	c.Store.Read(t.Addr, old)
	if c.onWrite != nil {
		// The root complex takes the line for the read-modify-write, CAS
		// that fails or not.
		c.onWrite(t.Addr, uint64(size))
	}
	switch t.Kind {
	case tlp.FetchAdd:
		var sum []byte
		if size == 4 {
			sum = binary.LittleEndian.AppendUint32(nil, binary.LittleEndian.Uint32(old)+binary.LittleEndian.Uint32(t.Data))
		} else {
			sum = binary.LittleEndian.AppendUint64(nil, binary.LittleEndian.Uint64(old)+binary.LittleEndian.Uint64(t.Data))
		}
		c.Store.Write(t.Addr, sum)
	case tlp.Swap:
		c.Store.Write(t.Addr, t.Data)
	case tlp.CAS:
		cmp, swap := t.Data[:size], t.Data[size:]
		if string(cmp) == string(old) {
			c.Store.Write(t.Addr, swap)
		}
	}
	c.writes.Inc()
	data := make([]byte, (size+3)&^3)
	copy(data, old)
	return tlp.NewCompletion(t, c.spec.CompleterID, tlp.SC, size, uint8(t.Addr&0x7f), data)
}

// BulkRead reads len(b) bytes at addr for a device's bulk DMA path,
// counting the reqs read requests it stands for.
func (c *Controller) BulkRead(addr uint64, b []byte, reqs uint64) {
	c.Store.Read(addr, b)
	c.reads.Add(reqs)
	c.bytesRd.Add(uint64(len(b)))
}

// BulkWrite writes data at addr for a device's bulk DMA path, counting the
// writes it stands for; the write observers see it as one range.
func (c *Controller) BulkWrite(addr uint64, data []byte, writes uint64) {
	c.Store.Write(addr, data)
	c.writes.Add(writes)
	c.bytesWr.Add(uint64(len(data)))
	if c.onWrite != nil {
		c.onWrite(addr, uint64(len(data)))
	}
}
