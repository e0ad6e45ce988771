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
)

// Req is a request to the memory controller. Addresses are physical.
type Req struct {
	sim.Txn
	Kind ReqKind
	Addr uint64
	Data []byte
	TLP  tlp.TLP // DeviceRead, DeviceAtomic: the request, with Addr translated
}

// Spec configures the controller.
type Spec struct {
	LatencyPS    sim.Tick // access latency (default 70 ns)
	BytesPerNS   int      // bandwidth; 0 = unlimited (default 25: DDR4-3200 one channel)
	Sizes        pcie.Sizes
	CompleterID  tlp.ID // the root complex's ID in completions
	QueueEntries int    // requests in flight (default 64)
}

// DefaultSpec is a single DDR4 channel behind a root complex.
func DefaultSpec() Spec {
	return Spec{LatencyPS: 70 * sim.NS, BytesPerNS: 25, Sizes: pcie.Sizes{MPS: 256, MRRS: 512, RCB: 64}, QueueEntries: 64}
}

// Controller completes memory requests after the access latency, in order,
// limited by its bandwidth. Device reads come back as completions split at
// the Read Completion Boundary.
type Controller struct {
	u     *sim.Unit
	spec  Spec
	Store *Store

	In  *sim.Chan[Req]         // requests
	Cpl *sim.Chan[pcie.Packet] // completions of device reads and AtomicOps

	pending sim.Queue[pendingReq]
	busyTil sim.Tick
	out     sim.Queue[pcie.Packet] // completions waiting for room in Cpl

	reads, writes, bytesRd, bytesWr *sim.Counter
}

type pendingReq struct {
	r  Req
	at sim.Tick
}

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
	c.In = sim.NewChan[Req](src, c.u, name+".req", 2)
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
	if c.In.Valid() && c.pending.Len() < c.spec.QueueEntries {
		r := c.In.Recv()
		start := max(now, c.busyTil)
		if c.spec.BytesPerNS > 0 {
			c.busyTil = start + sim.Tick((c.size(&r)*1000+c.spec.BytesPerNS-1)/c.spec.BytesPerNS)
		}
		c.pending.Push(pendingReq{r: r, at: start + c.spec.LatencyPS})
	}
	for c.pending.Len() > 0 && c.pending.Front().at <= now && c.out.Len() < 64 {
		c.perform(&c.pending.Front().r)
		c.pending.Pop()
	}
	for c.out.Len() > 0 && c.Cpl.Ready() {
		c.Cpl.Send(c.out.Pop())
	}
	if c.In.Valid() || c.out.Len() > 0 && c.Cpl.Ready() {
		return true
	}
	if c.pending.Len() > 0 {
		c.u.WakeAt(max(c.pending.Front().at, now+1))
	}
	return false
}

func (c *Controller) perform(r *Req) {
	switch r.Kind {
	case Write:
		c.Store.Write(r.Addr, r.Data)
		c.writes.Inc()
		c.bytesWr.Add(uint64(len(r.Data)))
	case DeviceRead:
		t := &r.TLP
		cpls := c.spec.Sizes.SplitCompletions(t, c.spec.CompleterID, func(addr uint64, n int) []byte {
			b := make([]byte, n)
			c.Store.Read(addr, b)
			return b
		})
		for _, cp := range cpls {
			c.out.Push(pcie.Packet{Txn: sim.Txn{ID: r.ID, Cause: r.Cause}, TLP: cp})
		}
		c.reads.Inc()
		c.bytesRd.Add(uint64(t.EnabledBytes()))
	case DeviceAtomic:
		c.out.Push(pcie.Packet{Txn: r.Txn, TLP: c.atomic(&r.TLP)})
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
