package iommu

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// device is a test device: it sends its packets to the IOMMU in order, as
// fast as the port takes them, and keeps the completions it gets back.
type device struct {
	u     *sim.Unit
	id    tlp.ID
	out   *sim.Chan[pcie.Packet]
	in    *sim.Chan[pcie.Packet]
	send  []pcie.Packet
	i     int
	got   []pcie.Packet
	gotAt []sim.Tick
	// answer, when set, gives what the device sends for a TLP it gets (a
	// host's read: its writes, then its completion), after what it has
	// still to send.
	answer func(p pcie.Packet) []pcie.Packet
}

func (d *device) Tick(now sim.Tick) bool {
	if d.i < len(d.send) && d.out.Ready() {
		d.out.Send(d.send[d.i])
		d.i++
	}
	for d.in.Valid() {
		p := d.in.Recv()
		d.got = append(d.got, p)
		d.gotAt = append(d.gotAt, now)
		if d.answer != nil {
			d.send = append(d.send, d.answer(p)...)
		}
	}
	return d.i < len(d.send)
}

// irqSink counts MSIs.
type irqSink struct {
	in  *sim.Chan[pcie.Packet]
	got []pcie.Packet
}

func (s *irqSink) Tick(sim.Tick) bool {
	for s.in.Valid() {
		s.got = append(s.got, s.in.Recv())
	}
	return false
}

type system struct {
	t    testing.TB
	e    *sim.Engine
	clk  *sim.Clock
	mem  *memory.Store
	m    *IOMMU
	mc   *memory.Controller
	drv  *Driver
	devs []*device
	irq  *irqSink
}

// newSystem builds an IOMMU with a memory controller and n devices
// (01:00.0, 02:00.0, …), each attached to domain 1 unless detached.
func newSystem(t testing.TB, spec Spec, n int) *system {
	t.Helper()
	s := &system{t: t, e: sim.NewEngine(1), mem: memory.NewStore()}
	s.clk = s.e.NewClock("clk", 1000, 0) // 1 GHz
	var err error
	if s.m, err = New(s.clk, "iommu", spec, s.mem); err != nil {
		t.Fatal(err)
	}
	mspec := memory.DefaultSpec()
	if s.mc, err = memory.NewController(s.clk, "mem", mspec, s.mem, s.m.Unit(), s.m.Unit()); err != nil {
		t.Fatal(err)
	}
	s.m.ConnectMemory(s.mc.In, s.mc.Cpl)
	s.irq = &irqSink{}
	iu := s.clk.Add("irq", s.irq)
	s.irq.in = sim.NewChan[pcie.Packet](s.m.Unit(), iu, "iommu.irq", 4)
	s.m.Irq = s.irq.in
	s.m.SetFaultEvent(0xfee0_0000, 0x30, false)
	s.drv = NewDriver(s.m, 0x100_0000, 0x100_0000)
	for i := 0; i < n; i++ {
		d := &device{id: tlp.NewID(uint8(i+1), 0, 0)}
		d.u = s.clk.Add(fmt.Sprintf("dev%d", i), d)
		d.out = sim.NewChan[pcie.Packet](d.u, s.m.Unit(), fmt.Sprintf("dev%d.up", i), 4)
		d.in = sim.NewChan[pcie.Packet](s.m.Unit(), d.u, fmt.Sprintf("dev%d.down", i), 4)
		s.m.AddPort(d.out, d.in)
		if err := s.drv.Attach(d.id, 1); err != nil {
			t.Fatal(err)
		}
		s.devs = append(s.devs, d)
	}
	return s
}

func (s *system) run() { s.e.Run(s.e.Now() + 10*sim.MS) }

func (s *system) send(dev int, ts ...tlp.TLP) {
	for _, t := range ts {
		tx := s.e.NewTxn(0, t.Kind.String(), "test")
		s.devs[dev].send = append(s.devs[dev].send, pcie.Packet{Txn: tx, TLP: t})
	}
	s.devs[dev].u.WakeAt(s.e.Now() + 1)
}

// records reads the visible records of IUID's log, from the consumer's head
// to the tail the IOMMU published, and consumes them (moves head) if asked.
func (s *system) records(iuid uint16, consume bool) []recordWithData {
	a := s.drv.LogEntryAddr(iuid)
	base, size := s.mem.Load64(a+offBase), s.mem.Load64(a+offSize)
	head, tail := s.mem.Load64(a+offHead), s.mem.Load64(a+offTail)
	var out []recordWithData
	for head < tail {
		if skip := record.SkipAtEnd(head, size); skip > 0 {
			head += skip
			continue
		}
		b := make([]byte, record.HeaderSize)
		s.mem.Read(base+head%size, b)
		h, err := record.Parse(b)
		if err != nil {
			s.t.Fatalf("log %d at %d: %v", iuid, head, err)
		}
		r := recordWithData{Header: h}
		if h.DataLen > 0 {
			r.Data = make([]byte, h.DataLen)
			s.mem.Read(base+head%size+record.HeaderSize, r.Data)
		}
		if h.Kind != record.Pad {
			out = append(out, r)
		}
		head += uint64(h.Size())
	}
	if consume {
		s.mem.Store64(a+offHead, head)
	}
	return out
}

type recordWithData struct {
	record.Header
	Data []byte
}

// consumer is a test CPU handler: every period it reads the published tail
// of its log, checks each new record as it becomes visible, and moves head.
type consumer struct {
	s      *system
	u      *sim.Unit
	iuid   uint16
	period sim.Tick
	check  func(r recordWithData, now sim.Tick)
	seen   []recordWithData
	seenAt []sim.Tick
	stop   bool
}

func (c *consumer) Tick(now sim.Tick) bool {
	for _, r := range c.s.records(c.iuid, true) {
		if c.check != nil {
			c.check(r, now)
		}
		c.seen = append(c.seen, r)
		c.seenAt = append(c.seenAt, now)
	}
	if !c.stop {
		c.u.WakeAt(now + c.period)
	}
	return false
}

func (s *system) addConsumer(iuid uint16, period sim.Tick) *consumer {
	c := &consumer{s: s, iuid: iuid, period: period}
	c.u = s.clk.Add(fmt.Sprintf("cpu%d", iuid), c)
	return c
}
