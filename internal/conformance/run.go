// Package conformance runs a verification stimulus through the cycle-level
// IOMMU (with its memory controller) and reports what it did as a
// verify.Observation. It is the bridge between the models and the golden
// model, which must not import the models.
package conformance

import (
	"fmt"
	"io"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verify"
	"github.com/aaemu/aaemu/verify/monitor"
)

// Options of a run.
type Options struct {
	Tracer sim.Tracer // a VCD writer for a failing run, or nil
	Limit  sim.Tick   // simulated time limit (default 100 ms)
}

// device sends its ops in order and reassembles the completions it gets.
type device struct {
	gate  *int // ops from this index wait (a driver call comes first)
	u     *sim.Unit
	out   *sim.Chan[pcie.Packet]
	in    *sim.Chan[pcie.Packet]
	ops   []pcie.Packet
	next  int
	parts map[uint16]*partial
	obs   *verify.Observation
	byTag map[uint16]int // tag → op
}

type partial struct {
	data []byte
	n    int // bytes the request asked for
}

func (d *device) Tick(now sim.Tick) bool {
	if d.next < len(d.ops) && int(d.ops[d.next].ID)-1 < *d.gate && d.out.ReadyFor(&d.ops[d.next]) {
		d.out.Send(d.ops[d.next])
		d.next++
	}
	for d.in.Valid() {
		p := d.in.Recv()
		d.completion(&p.TLP, now)
	}
	// A device whose next TLP the gate holds sleeps until a driver call
	// opens it (open wakes it), rather than asking every cycle.
	return d.next < len(d.ops) && int(d.ops[d.next].ID)-1 < *d.gate
}

func (d *device) completion(c *tlp.TLP, now sim.Tick) {
	op, ok := d.byTag[c.Tag]
	if !ok {
		return
	}
	pt := d.parts[c.Tag]
	if c.Status != tlp.SC {
		d.obs.Completions[op] = verify.Completion{Status: c.Status}
		d.obs.CompletedAt[op] = uint64(now)
		delete(d.byTag, c.Tag)
		return
	}
	skip := int(c.LowerAddr & 3)
	k := min(len(c.Data)-skip, int(c.ByteCount))
	if pt.n > 0 && k > 0 {
		pt.data = append(pt.data, c.Data[skip:skip+k]...)
	}
	if int(c.ByteCount) <= len(c.Data)-skip { // the last completion of the request
		data := pt.data
		if pt.n == 0 {
			data = nil
		} else if len(data) > pt.n {
			data = data[:pt.n]
		}
		d.obs.Completions[op] = verify.Completion{Status: tlp.SC, Data: data}
		d.obs.CompletedAt[op] = uint64(now)
		delete(d.byTag, c.Tag)
	}
}

// consumer drains every log at a period, as a handler would, and notes
// every move of head.
type consumer struct {
	u      *sim.Unit
	mem    *memory.Store
	drv    *iommu.Driver
	logs   []verify.Log // sizes as registered now (a log registered again may have another)
	off    []bool       // unregistered
	bases  []uint64
	heads  []uint64
	period sim.Tick
	obs    *verify.Observation
	err    error
}

func (c *consumer) Tick(now sim.Tick) bool {
	for i, l := range c.logs {
		if c.off[i] {
			continue
		}
		entry := c.drv.LogEntryAddr(l.IUID)
		tail := c.mem.Load64(entry + 24)
		moved := false
		for c.heads[i] < tail {
			if skip := record.SkipAtEnd(c.heads[i], l.Size); skip > 0 {
				c.heads[i] += skip
				c.obs.Skipped = true
				continue
			}
			b := make([]byte, record.HeaderSize)
			c.mem.Read(c.bases[i]+c.heads[i]%l.Size, b)
			h, err := record.Parse(b)
			if err != nil {
				if c.err == nil {
					c.err = fmt.Errorf("IUID %d at %d: %w", l.IUID, c.heads[i], err)
				}
				return false
			}
			r := verify.Record{Header: h}
			if h.DataLen > 0 {
				r.Data = make([]byte, h.DataLen)
				c.mem.Read(c.bases[i]+c.heads[i]%l.Size+record.HeaderSize, r.Data)
			}
			c.obs.Logs[l.IUID] = append(c.obs.Logs[l.IUID], r)
			c.heads[i] += uint64(h.Size())
			moved = true
		}
		if moved {
			c.mem.Store64(entry+16, c.heads[i])
			c.obs.Heads = append(c.obs.Heads, verify.HeadMove{IUID: l.IUID, Head: c.heads[i], At: uint64(now)})
		}
	}
	c.u.WakeAt(now + c.period)
	return false
}

// cpu takes what the IOMMU sends the CPUs, as they would see it: MSIs
// (log notifications, fault events) and scratchpad mirror writes.
type cpu struct {
	irq *sim.Chan[pcie.Packet]
	sp  *sim.Chan[iommu.SPWrite]
	obs *verify.Observation
}

func (c *cpu) Tick(now sim.Tick) bool {
	for c.irq.Valid() {
		p := c.irq.Recv()
		t := &p.TLP
		var data uint32
		for i := len(t.Data) - 1; i >= 0; i-- {
			data = data<<8 | uint32(t.Data[i])
		}
		c.obs.MSIs = append(c.obs.MSIs, verify.MSI{Addr: t.Addr + uint64(t.FirstByteOffset()), Data: data, At: uint64(now)})
	}
	for c.sp.Valid() {
		w := c.sp.Recv()
		c.obs.SP = append(c.obs.SP, verify.SPWrite{Slot: w.Slot, IUID: w.IUID, Tail: w.Tail, At: uint64(now)})
	}
	return false
}

// Run executes the stimulus on the DUT.
func Run(s *verify.Stimulus, o Options) (*verify.Observation, error) {
	if o.Limit == 0 {
		o.Limit = 100 * sim.MS
	}
	obs := &verify.Observation{Memory: map[uint64][]byte{}, Logs: map[uint16][]verify.Record{},
		Completions: map[int]verify.Completion{}, CompletedAt: map[int]uint64{}}
	e := sim.NewEngine(s.Seed)
	clk := e.NewClock("clk", 1000, 0)
	mem := memory.NewStore()
	spec := iommu.DefaultSpec()
	spec.FaultRecords = s.FaultRecords
	spec.LogCAMEntries = 2 // more IUIDs than entries: the table spills to memory
	m, err := iommu.New(clk, "iommu", spec, mem)
	if err != nil {
		return nil, err
	}
	mc, err := memory.NewController(clk, "mem", memory.DefaultSpec(), mem, m.Unit(), m.Unit())
	if err != nil {
		return nil, err
	}
	m.ConnectMemory(mc.In, mc.Cpl)
	cp := &cpu{obs: obs}
	cu := clk.Add("cpu", cp)
	cp.irq = sim.NewChan[pcie.Packet](m.Unit(), cu, "irq", 4)
	cp.sp = sim.NewChan[iommu.SPWrite](m.Unit(), cu, "sp", 4)
	m.Irq, m.SP = cp.irq, cp.sp
	// race makes the racing calls due once the IOMMU has taken every TLP
	// before them (set below).
	race := func() {}
	m.OnAccept = func(_ int, p *pcie.Packet) {
		obs.Accepted = append(obs.Accepted, int(p.ID)-1)
		obs.AcceptedAt = append(obs.AcceptedAt, uint64(e.Now()))
		race()
	}
	drv := iommu.NewDriver(m, 0x100_0000, 0x100_0000)
	m.SetFaultEvent(verify.FaultMSIAddr, verify.FaultMSIData, false)
	frames := verify.Frames(s)
	for _, pa := range frames {
		b := make([]byte, 4096)
		for k := range b {
			b[k] = verify.Pattern(pa + uint64(k))
		}
		mem.Write(pa, b)
	}
	var devs []*device
	// open wakes the devices after the gate moved.
	open := func() {
		for _, d := range devs {
			d.u.WakeIn(1)
		}
	}
	// Ops from gate on wait for the next driver call; with none, none wait.
	gate, nextChange := len(s.Ops), 0
	if len(s.Changes) > 0 {
		gate = s.Changes[0].After
	}
	mlog := monitor.NewLog(100)
	var links []*monitor.PCIeLink
	for i, dv := range s.Devices {
		d := &device{gate: &gate, parts: map[uint16]*partial{}, obs: obs, byTag: map[uint16]int{}}
		d.u = clk.Add(fmt.Sprintf("dev%d", i), d)
		// The root port's receive buffer keeps the classes apart, as a
		// link's does: a read may wait behind a write the IOMMU holds
		// back (its log full), and must not pass it.
		d.out = pcie.NewClassChan(d.u, m.Unit(), fmt.Sprintf("dev%d.up", i), [3]int{4, 4, 4})
		d.in = sim.NewChan[pcie.Packet](m.Unit(), d.u, fmt.Sprintf("dev%d.down", i), 4)
		m.AddPort(d.out, d.in)
		links = append(links, watchDevice(mlog, e, i, d.out, d.in))
		if dv.Attached {
			if err := drv.Attach(dv.ID, dv.Dom()); err != nil {
				return nil, err
			}
		}
		devs = append(devs, d)
	}
	for _, pg := range s.Pages {
		if pg.Mapped {
			if err := drv.Map(pg.Dom(), pg.IOVA, pg.PA, pg.Bytes(), pg.LeafBytes(), iommu.Perm{Bits: pg.Bits, IUID: pg.IUID}); err != nil {
				return nil, err
			}
		}
	}
	c := &consumer{mem: mem, drv: drv, logs: append([]verify.Log(nil), s.Logs...), off: make([]bool, len(s.Logs)), period: sim.Tick(max(s.ConsumerNS, 1)) * sim.NS, obs: obs}
	for i, l := range s.Logs {
		base := uint64(verify.LogBase) + uint64(i)*0x10_0000
		if err := drv.RegisterLog(l.IUID, iommu.LogConfig{Base: base, Size: l.Size, Mode: iommu.Notify(l.Mode), MSIAddr: verify.LogMSIAddr, MSIData: uint32(l.IUID), SPSlot: uint32(l.IUID)}); err != nil {
			return nil, err
		}
		c.bases = append(c.bases, base)
		c.heads = append(c.heads, 0)
	}
	for _, f := range s.Flushes {
		if err := drv.RegisterFlushPage(f.IUID, f.IOVA); err != nil {
			return nil, err
		}
	}
	c.u = clk.Add("consumer", c)
	for i, op := range s.Ops {
		d := devs[op.Dev]
		d.ops = append(d.ops, pcie.Packet{Txn: sim.Txn{ID: sim.TxnID(i + 1)}, TLP: op.TLP})
		if op.TLP.Kind.Class() == tlp.NonPosted {
			_, n := spanOf(&op.TLP)
			d.byTag[op.TLP.Tag] = i
			d.parts[op.TLP.Tag] = &partial{n: n}
		}
	}
	if o.Tracer != nil {
		e.AttachTracer(o.Tracer)
	}
	// Run until every TLP was taken, every completion came back and the
	// consumer has drained every log.
	done := func() bool {
		if len(obs.Accepted) < len(s.Ops) {
			return false
		}
		for _, d := range devs {
			if len(d.byTag) > 0 {
				return false
			}
		}
		for i, l := range s.Logs {
			if mem.Load64(drv.LogEntryAddr(l.IUID)+24) != c.heads[i] {
				return false
			}
		}
		return true
	}
	// change makes the driver calls due at gate once the IOMMU is quiet:
	// every TLP before it taken and completed, every log consumed, twice
	// in a row (records reserved but not yet visible show in between).
	quietAt := -1
	change := func() error {
		for nextChange < len(s.Changes) && done() {
			if quietAt != len(obs.Accepted) {
				quietAt = len(obs.Accepted)
				return nil
			}
			for ; nextChange < len(s.Changes) && s.Changes[nextChange].After == gate; nextChange++ {
				obs.ChangesAt = append(obs.ChangesAt, uint64(e.Now()))
				if err := driverCall(drv, m, c, obs, s, s.Changes[nextChange]); err != nil {
					return fmt.Errorf("changes[%d]: %w", nextChange, err)
				}
			}
			gate = len(s.Ops)
			if nextChange < len(s.Changes) {
				gate = s.Changes[nextChange].After
			}
			quietAt = -1
			open()
		}
		return nil
	}
	// A racing clear of the fault records is made the moment the IOMMU
	// takes the last TLP before it, whatever is still in flight; a racing
	// page call the moment it takes op After-1, whatever TLPs before After
	// are still on their way; the devices hold the TLPs after it until
	// then.
	var raceErr error
	race = func() {
		for nextChange < len(s.Changes) && s.Changes[nextChange].Racing && s.Changes[nextChange].After == gate &&
			(s.Changes[nextChange].RacesTables() && len(obs.Accepted) > 0 && obs.Accepted[len(obs.Accepted)-1] == gate-1 ||
				!s.Changes[nextChange].RacesTables() && len(obs.Accepted) >= gate) {
			obs.ChangesAt = append(obs.ChangesAt, uint64(e.Now()))
			if err := driverCall(drv, m, c, obs, s, s.Changes[nextChange]); err != nil && raceErr == nil {
				raceErr = fmt.Errorf("changes[%d]: %w", nextChange, err)
			}
			nextChange++
			gate = len(s.Ops)
			if nextChange < len(s.Changes) {
				gate = s.Changes[nextChange].After
			}
			quietAt = -1
			open()
		}
	}
	// done, before the last driver call, is quiet at the gate.
	allDone := done
	done = func() bool {
		if len(obs.Accepted) < gate {
			return false
		}
		for _, d := range devs {
			for _, op := range d.byTag {
				if op < gate {
					return false
				}
			}
		}
		for i, l := range s.Logs {
			if mem.Load64(drv.LogEntryAddr(l.IUID)+24) != c.heads[i] {
				return false
			}
		}
		return true
	}
	if err := change(); err != nil {
		return obs, err
	}
	if err := change(); err != nil { // calls before the first TLP: quiet already
		return obs, err
	}
	progress, since := -1, e.Now()
	for e.Now() < o.Limit && !(nextChange == len(s.Changes) && allDone()) {
		if err := change(); err != nil {
			return obs, err
		}
		if raceErr != nil {
			return obs, raceErr
		}
		before := e.Now()
		if e.Run(e.Now()+2*sim.US) == before {
			// Nothing in the window (the devices the gate holds sleep):
			// a call to make, or on to the next event (a consumer's
			// poll); with none, what is missing never comes.
			if nextChange < len(s.Changes) && done() {
				continue
			}
			next := e.Next()
			if next == sim.Never {
				break
			}
			e.Run(next)
		}
		// A millisecond without a TLP taken or a request completed, the
		// consumer draining all along: what is missing never comes.
		if n := len(obs.Accepted) + len(obs.Completions); n != progress {
			progress, since = n, e.Now()
		} else if e.Now()-since > sim.MS {
			break
		}
	}
	// One more consumer period to see anything still in flight, and an
	// Int log's notification of records below its threshold.
	quiet := nextChange == len(s.Changes) && allDone()
	e.Run(e.Now() + c.period + sim.US + spec.NotifyIntervalPS)
	obs.EndPS = uint64(e.Now())
	if quiet {
		for _, l := range links {
			l.Finish(e.Now())
		}
	}
	obs.Monitor, obs.MonitorAt = messages(mlog)
	if c.err != nil {
		return obs, c.err
	}
	for _, pa := range frames {
		b := make([]byte, 4096)
		mem.Read(pa, b)
		obs.Memory[pa] = b
	}
	for _, f := range m.FaultRecords() {
		if f.F {
			obs.Faults = append(obs.Faults, verify.Fault{SID: f.SID, FR: f.FR, Read: f.Read, Page: f.FI})
		}
	}
	obs.Overflow, _, _ = m.FaultStatus()
	if st, ok := e.Stats().Get("iommu.stalls"); ok {
		obs.LogFull = st.(*sim.Counter).Value() > 0
	}
	return obs, nil
}

// driverCall makes a change's driver call on its domain, or software's
// clearing of the fault records (noting what it read), or the removal or
// registration again of a log (whose consumer stops, or starts again from
// an empty ring).
func driverCall(drv *iommu.Driver, m *iommu.IOMMU, cons *consumer, obs *verify.Observation, s *verify.Stimulus, c verify.Change) error {
	switch c.Kind {
	case "clearfaults":
		n := len(obs.Faults)
		for i, f := range m.FaultRecords() {
			if f.F {
				obs.Faults = append(obs.Faults, verify.Fault{SID: f.SID, FR: f.FR, Read: f.Read, Page: f.FI})
				m.ClearFault(i)
			}
		}
		pfo, _, _ := m.FaultStatus()
		if pfo {
			obs.Cleared++
			m.ClearOverflow()
		}
		obs.ClearsRead, obs.ClearsPFO = append(obs.ClearsRead, len(obs.Faults)-n), append(obs.ClearsPFO, pfo)
		return nil
	case "unregister", "register":
		for i, l := range cons.logs {
			if l.IUID != c.IUID {
				continue
			}
			cons.off[i] = c.Kind == "unregister"
			if c.Kind == "unregister" {
				return drv.UnregisterLog(c.IUID)
			}
			cons.logs[i].Size, cons.heads[i] = c.Size, 0
			return drv.RegisterLog(c.IUID, iommu.LogConfig{Base: cons.bases[i], Size: c.Size, Mode: iommu.Notify(l.Mode),
				MSIAddr: verify.LogMSIAddr, MSIData: uint32(l.IUID), SPSlot: uint32(l.IUID)})
		}
		return fmt.Errorf("%s: IUID %d has no log", c.Kind, c.IUID)
	case "setbits":
		return drv.SetBits(c.Dom(), c.IOVA, iommu.Perm{Bits: c.Bits, IUID: c.IUID})
	case "unmap":
		return drv.Unmap(c.Dom(), c.IOVA, 4096)
	case "map", "split", "merge":
		for _, pg := range s.Pages {
			if pg.IOVA == c.IOVA && pg.Dom() == c.Dom() {
				p := iommu.Perm{Bits: c.Bits, IUID: c.IUID}
				if c.Kind == "map" {
					return drv.Map(c.Dom(), c.IOVA, pg.PA, 4096, 4096, p)
				}
				return drv.Remap(c.Dom(), c.IOVA, pg.PA, pg.Bytes(), c.Size, p)
			}
		}
		return fmt.Errorf("%s: %#x is no page of domain %d", c.Kind, c.IOVA, c.Dom())
	case "attach":
		return drv.Attach(s.Devices[c.Dev].ID, s.Devices[c.Dev].Dom())
	case "detach":
		drv.Detach(s.Devices[c.Dev].ID)
		return nil
	}
	return fmt.Errorf("%q is no driver call", c.Kind)
}

func spanOf(t *tlp.TLP) (uint64, int) {
	if t.Kind == tlp.FetchAdd || t.Kind == tlp.Swap || t.Kind == tlp.CAS {
		n := len(t.Data)
		if t.Kind == tlp.CAS {
			n /= 2
		}
		return t.Addr, n
	}
	if t.Length == 1 && t.FirstBE == 0 {
		return t.Addr, 0
	}
	return t.Addr + uint64(t.FirstByteOffset()), t.EnabledBytes()
}

// Check runs a stimulus and compares with the golden model.
func Check(s *verify.Stimulus, o Options) (*verify.Mismatch, *verify.Observation, error) {
	obs, err := Run(s, o)
	if err != nil {
		return nil, obs, err
	}
	if mm := monitorMismatch(obs.Monitor, obs.MonitorAt); mm != nil {
		return mm, obs, nil
	}
	pred := verify.Predict(s, obs.Accepted)
	return verify.Compare(s, pred, obs), obs, nil
}

// Discard is a no-op writer for tracing benchmarks.
var Discard io.Writer = io.Discard
