// Package cpu models CPU cores as timing models, not instruction-set
// simulators: workload code is ordinary sequential Go that calls costed
// operations (compute, local memory access, local atomic, MMIO, polling).
// Each process runs as a coroutine that the core resumes from its clock edge
// and that yields back with the time its next operation takes, so processes
// are scheduled deterministically by the kernel and never run concurrently.
package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Spec is a core's timing.
type Spec struct {
	PeriodPS       sim.Tick // clock period (default 500 ps: 2 GHz)
	MemAccessPS    sim.Tick // a local memory access that misses the caches (default 70 ns)
	AtomicPS       sim.Tick // a local atomic (default 100 ns)
	MMIOPS         sim.Tick // issuing an MMIO write (default 100 ns; see UncachedWritePS)
	InterruptPS    sim.Tick // interrupt entry until the handler runs (default 3 µs)
	ScratchpadPS   sim.Tick // a scratchpad access (default 15 ns)
	PollIntervalPS sim.Tick // time between two checks of a polling loop (default 50 ns)
	// UncachedWritePS, when set, is the core's cost of issuing an uncached
	// store (MMIOWrite) in place of MMIOPS: the posted write leaves through
	// the core's write buffer, so the store costs its issue, not the trip.
	UncachedWritePS sim.Tick
}

// DefaultSpec are the timings of DESIGN.md §3.
func DefaultSpec() Spec {
	return Spec{PeriodPS: 500, MemAccessPS: 70 * sim.NS, AtomicPS: 100 * sim.NS, MMIOPS: 100 * sim.NS,
		InterruptPS: 3 * sim.US, ScratchpadPS: 15 * sim.NS, PollIntervalPS: 50 * sim.NS}
}

// Core runs processes and interrupt handlers, one operation at a time.
type Core struct {
	u     *sim.Unit
	spec  Spec
	mem   *memory.Store
	id    tlp.ID
	procs []*Proc // handlers first when runnable, then processes in order

	Host *sim.Chan[pcie.Packet] // MMIO requests to the root complex: posted writes, uncached reads
	Cpl  *sim.Chan[pcie.Packet] // completions of the core's uncached reads, from the root complex (optional)
	Irq  *sim.Chan[pcie.Packet] // MSIs from the IOMMU (optional)

	irqHandlers []irqHandler
	busyUntil   sim.Tick
	rr          int             // index of the process that ran last (round-robin)
	inPoll      bool            // a polling condition is being checked (checkPoll)
	smp         *SMP            // the node's coherence model (nil: none)
	smpID       int             // the core's cache in it
	req         *pcie.Requester // tags of uncached reads (made on the first)
	reading     *Proc           // the process whose uncached read stalls the core
	dozing      *Proc           // the process dozing through a polling loop (Doze)
	loadEvery   bool            // PollWord loads its word on every check (SetPollWatch)
	generalOnly bool            // no fast path for a lone polling process (tests)
	noSleep     bool            // check a lone PollWord loop on every edge (SetPollSleep)

	// The polling loops the core sleeps through (sleepPoll): the process
	// whose check was made last (nil: awake), the indices in procs of the
	// polling processes in the order of their checks from the first not
	// made yet (round-robin), that check's edge, the time between two
	// checks' edges (the loops' interval rounded up to whole clock
	// periods) and what a check costs (the interval itself). settled: the
	// OnRunEnd hook is registered. lastRun: the process the core ran last.
	sleeper    *Proc
	sleepRing  []int
	sleepNext  sim.Tick
	sleepEvery sim.Tick
	sleepCost  sim.Tick
	settled    bool
	lastRun    *Proc
	// sameEdgeWakes counts writes that woke the sleeping core on their own
	// step (tests check that they happen).
	sameEdgeWakes int

	stOps, stIrqs, stBusy *sim.Counter
	stReads, stReadURs    *sim.Counter // declared on the first uncached read
}

type irqHandler struct {
	addr uint64
	data uint32
	name string
	run  func(p *Proc)
}

// Proc is a process or a handler running on a core.
type Proc struct {
	core    *Core
	name    string
	handler bool
	next    func() (sim.Tick, bool)
	stop    func()
	yield   func(sim.Tick) bool
	wakeAt  sim.Tick
	done    bool
	idle    bool // the last operation waits without using the core
	daemon  bool
	Txn     sim.Txn // the operation the process is in, for causal IDs

	// A polling loop the core runs for the process (spin): the condition
	// and the time between checks.
	poll      func() bool
	pollEvery sim.Tick
	// The word a PollWord loop looks at: its watch and the value last
	// loaded.
	watch    *memory.Watch
	word     uint64
	wordVal  uint64
	pollWord bool    // poll is a PollWord loop's: a write to its watch can change it
	notify   *Notify // poll is a ScratchpadPollNotified loop's: only notify's Changed can change it

	// A PollLoad64 the core runs for the process while its loads hit
	// (Core.spinLoad): the word, its predicate, the value of the load in
	// flight, and what the process does when it resumes.
	lspin *loadSpin
	// A polling loop the process dozes through (Doze), and the costed
	// operations it has run.
	doze *doze
	ops  uint64
	// halted: the process waits for an interrupt (Halt) and runs again
	// only once a handler's Notify says so.
	halted bool

	// An uncached read the process waits for: issued at since; the
	// completion's data or error.
	cplWait  bool
	cplSince sim.Tick
	cplData  []byte
	cplErr   error
}

// NewCore places a core called name in clk, over node memory mem.
func NewCore(clk *sim.Clock, name string, spec Spec, mem *memory.Store) *Core {
	c := &Core{spec: spec, mem: mem}
	c.u = clk.Add(name, c)
	st := c.u.Engine().Stats()
	c.stOps = st.Counter(name+".ops", "operations", "costed operations executed")
	c.stIrqs = st.Counter(name+".interrupts", "interrupts", "MSIs taken")
	c.stBusy = st.Counter(name+".busy_ps", "ps", "time the core spent executing operations")
	c.u.Probe("running", 8, func() (uint64, bool) {
		for i, p := range c.procs {
			if !p.done && p.wakeAt <= c.u.Engine().Now() {
				return uint64(i), true
			}
		}
		return 0, false
	})
	return c
}

// Unit is the core's kernel unit.
func (c *Core) Unit() *sim.Unit { return c.u }

// Spec is the core's timing.
func (c *Core) Spec() Spec { return c.spec }

// SetRequesterID gives the core the PCIe requester ID its MMIO requests
// carry: the root complex routes the completions of its uncached reads
// back to it by this ID.
func (c *Core) SetRequesterID(id tlp.ID) {
	if c.reading != nil {
		panic(fmt.Sprintf("cpu: %s: requester ID changed during an uncached read", c.u.Name()))
	}
	c.id, c.req = id, nil
}

// RequesterID is the requester ID of the core's MMIO requests.
func (c *Core) RequesterID() tlp.ID { return c.id }

// Spawn starts body as a process on the core.
func (c *Core) Spawn(name string, body func(p *Proc)) *Proc {
	p := c.newProc(name, body, false)
	c.procs = append(c.procs, p)
	c.u.WakeAt(c.u.Engine().Now() + 1)
	return p
}

func (c *Core) newProc(name string, body func(p *Proc), handler bool) *Proc {
	p := &Proc{core: c, name: name, handler: handler}
	seq := func(yield func(sim.Tick) bool) {
		p.yield = yield
		defer func() {
			if r := recover(); r != nil && r != errStopped {
				panic(r)
			}
		}()
		body(p)
	}
	p.next, p.stop = iter.Pull(seq)
	return p
}

// errStopped unwinds a process that Close ended while it waited.
var errStopped = errors.New("cpu: process stopped")

// Close ends every process of the core that has not finished, as a
// machine's power-off does: each unwinds from where it waits (deferred
// calls run) and frees what it held. The core runs nothing afterwards.
func (c *Core) Close() {
	for _, p := range c.procs {
		if !p.done {
			p.done = true
			p.stop()
		}
	}
}

// OnInterrupt runs handler, after the interrupt latency, whenever an MSI
// with this address and data arrives.
func (c *Core) OnInterrupt(addr uint64, data uint32, name string, handler func(p *Proc)) {
	c.irqHandlers = append(c.irqHandlers, irqHandler{addr: addr, data: data, name: name, run: handler})
}

// Raise takes an interrupt from a device of the core's own chip (not an
// MSI): handler runs from the core's next edge, ahead of the processes,
// between two of their operations. What the interrupt costs the core
// (saving and restoring the context) is the handler's to spend. Raise is
// called from a block of the core's clock domain.
func (c *Core) Raise(name string, handler func(p *Proc)) {
	now := c.u.Engine().Now()
	c.stIrqs.Inc()
	p := c.newProc(name, handler, true)
	p.wakeAt = now + 1
	p.Txn = c.u.Engine().NewTxn(0, "irq."+name, c.u.Name())
	c.procs = append(c.procs, p)
	c.u.WakeAt(p.wakeAt)
}

// Tick resumes the first runnable process for one operation.
func (c *Core) Tick(now sim.Tick) bool {
	if c.sleeper != nil {
		c.rouse(now)
	}
	if c.dozing != nil && !c.wake(now) {
		return false
	}
	if c.Irq != nil {
		for c.Irq.Valid() {
			m := c.Irq.Recv()
			c.interrupt(&m, now)
		}
	}
	if c.Cpl != nil {
		for c.Cpl.Valid() {
			m := c.Cpl.Recv()
			c.completion(&m, now)
		}
	}
	if now < c.busyUntil {
		if c.busyUntil != sim.Never && !c.sleepPoll(c.busyUntil) { // (stalled on an uncached read: its completion wakes the core)
			c.u.WakeAt(c.busyUntil)
		}
		return false
	}
	// The common edge of a core that runs one process, polling: a check
	// that finds the condition false is counted and the next one set, as
	// the general path below does.
	if len(c.procs) == 1 && c.reading == nil && !c.generalOnly {
		if p := c.procs[0]; p.poll != nil && !p.done && !p.handler && p.wakeAt <= now && !c.checkPoll(p) {
			d := max(p.pollEvery, c.spec.PeriodPS)
			c.rr, c.lastRun = 0, p
			c.stOps.Inc()
			p.ops++
			p.wakeAt, c.busyUntil = now+d, now+d
			c.stBusy.Add(uint64(d))
			if !c.sleepPoll(now + d) {
				c.u.WakeAt(now + d)
			}
			return false
		}
	}
	// Handlers first, oldest first (nested interrupts finish in order);
	// among processes, round-robin from the one after the last that ran,
	// so a busy-polling process cannot starve the others.
	var run *Proc
	for _, p := range c.procs {
		if p.handler && !p.done && p.wakeAt <= now {
			run = p
			break
		}
	}
	if run == nil && c.reading != nil && !c.reading.cplWait {
		// The load that stalled the core is done: its process goes on.
		run, c.reading = c.reading, nil
		for j, p := range c.procs {
			if p == run {
				c.rr = j
			}
		}
	}
	if run == nil {
		n := len(c.procs)
		for i := 0; i < n; i++ {
			j := (c.rr + 1 + i) % n
			if p := c.procs[j]; !p.done && p.wakeAt <= now {
				run, c.rr = p, j
				break
			}
		}
	}
	if run != nil {
		c.lastRun = run
		var d sim.Tick
		ok := true
		switch {
		case run.poll != nil && !c.checkPoll(run):
			d = run.pollEvery // still false: another check, as the loop would
		case run.lspin != nil && c.spinLoad(run, now):
			d = run.lspin.d // a load that hit, as the loop would make it
		default:
			d, ok = run.next()
			// The process stopped in PollLoad64 where its loop makes the next
			// load: the core makes it if it hits, else the process does.
			for ok && run.lspin != nil && run.lspin.fresh {
				if c.spinLoad(run, now) {
					d = run.lspin.d
					break
				}
				d, ok = run.next()
			}
		}
		switch {
		case !ok:
			run.done = true
		case run.cplWait:
			// An uncached read: the core stalls until its completion.
			c.stOps.Inc()
			run.wakeAt, c.busyUntil, run.cplSince = sim.Never, sim.Never, now
			c.reading = run
		case run.halted:
			// The wait instruction: one operation, not busy; the process
			// runs again when a handler calls its Notify's Changed.
			c.stOps.Inc()
			run.ops++
			run.wakeAt, run.idle = sim.Never, false
		case run.doze != nil:
			// Doze: the core stays the process's until the pass that
			// sees a change ends (wake).
			run.wakeAt, c.busyUntil = sim.Never, sim.Never
			c.dozing = run
			c.wake(now) // a change already on its way: its pass's end
		default:
			c.stOps.Inc()
			run.ops++
			d = max(d, c.spec.PeriodPS)
			run.wakeAt = now + d
			if !run.idle {
				c.busyUntil = now + d
				c.stBusy.Add(uint64(d))
			}
			run.idle = false
		}
	}
	// Drop finished handlers; keep processes for their names.
	k := 0
	for _, p := range c.procs {
		if !(p.done && p.handler) {
			c.procs[k] = p
			k++
		}
	}
	clear(c.procs[k:])
	c.procs = c.procs[:k]
	next := sim.Never
	for _, p := range c.procs {
		if !p.done {
			next = min(next, max(p.wakeAt, c.busyUntil))
		}
	}
	if next != sim.Never && (next <= now || !c.sleepPoll(next)) {
		c.u.WakeAt(max(next, now+1))
	}
	return false
}

// completion takes a completion of the core's uncached read: once the read
// has all its data (or failed), its process runs again from this edge on.
func (c *Core) completion(m *pcie.Packet, now sim.Tick) {
	p := c.reading
	if p == nil || !p.cplWait || c.req == nil {
		return // no read waits: dropped
	}
	done, data, err := c.req.Complete(&m.TLP)
	if !done {
		return // more completions to come (or a malformed one, dropped)
	}
	if err != nil {
		c.readCounters()
		c.stReadURs.Inc()
	}
	p.cplWait, p.cplData, p.cplErr = false, data, err
	p.wakeAt, c.busyUntil = now, now
	c.stBusy.Add(uint64(now - p.cplSince))
}

// readCounters declares the statistics of uncached reads on the first one,
// so that the statistics of runs without them stay as they were.
func (c *Core) readCounters() {
	if c.stReads != nil {
		return
	}
	st := c.u.Engine().Stats()
	c.stReads = st.Counter(c.u.Name()+".uncached_reads", "reads", "uncached reads of device memory (MRd round trips)")
	c.stReadURs = st.Counter(c.u.Name()+".uncached_read_errors", "reads",
		"uncached reads completed with an error, such as Unsupported Request for an address no BAR decodes: the load returned all ones")
}

func (c *Core) interrupt(m *pcie.Packet, now sim.Tick) {
	t := &m.TLP
	if len(t.Data) < 4 {
		return
	}
	data := uint32(t.Data[0]) | uint32(t.Data[1])<<8 | uint32(t.Data[2])<<16 | uint32(t.Data[3])<<24
	for _, h := range c.irqHandlers {
		if h.addr == t.Addr && h.data == data {
			c.stIrqs.Inc()
			p := c.newProc(h.name, h.run, true)
			p.wakeAt = now + c.spec.InterruptPS
			p.Txn = c.u.Engine().NewTxn(m.ID, "irq."+h.name, c.u.Name())
			c.procs = append(c.procs, p)
			c.u.WakeAt(p.wakeAt)
		}
	}
}

// AppsDone reports whether every process spawned as an application (not a
// handler, not a daemon) has finished.
func (c *Core) AppsDone() bool {
	for _, p := range c.procs {
		if !p.done && !p.handler && !p.daemon {
			return false
		}
	}
	return true
}

// SpawnDaemon starts body as a background process (a log poller) that does
// not keep a run going.
func (c *Core) SpawnDaemon(name string, body func(p *Proc)) *Proc {
	p := c.Spawn(name, body)
	p.daemon = true
	return p
}

// --- costed operations, called from process code ---

// checkPoll checks p's polling condition and ends the loop when it holds.
func (c *Core) checkPoll(p *Proc) bool {
	c.inPoll = true
	held := p.poll()
	c.inPoll = false
	if held {
		p.poll = nil
	}
	return held
}

func (p *Proc) wait(d sim.Tick) {
	if p.core.inPoll {
		panic(fmt.Sprintf("cpu: process %s: a polling condition ran a costed operation; a condition may only look", p.name))
	}
	if !p.yield(d) {
		panic(errStopped) // Close: the process unwinds and ends
	}
}

// Now is the current simulated time.
func (p *Proc) Now() sim.Tick { return p.core.u.Engine().Now() }

// Name of the process.
func (p *Proc) Name() string { return p.name }

// Core the process runs on.
func (p *Proc) Core() *Core { return p.core }

// Compute spends n core cycles.
func (p *Proc) Compute(cycles int) { p.wait(sim.Tick(cycles) * p.core.spec.PeriodPS) }

// Sleep waits d without using the core.
func (p *Proc) Sleep(d sim.Tick) {
	p.idle = true
	p.wait(d)
}

// Load64 reads a 64-bit word of local memory. In an SMP (Core.SMP), this
// and the other memory operations cost what the coherence model says.
func (p *Proc) Load64(addr uint64) uint64 {
	v := p.core.mem.Load64(addr)
	if p.core.smp != nil {
		p.smpAccess(addr, 8, accLoad)
		return v
	}
	p.wait(p.core.spec.MemAccessPS)
	return v
}

// Store64 writes a 64-bit word of local memory.
func (p *Proc) Store64(addr, v uint64) {
	p.core.mem.Store64(addr, v)
	if p.core.smp != nil {
		p.smpAccess(addr, 8, accStore)
		return
	}
	p.wait(p.core.spec.MemAccessPS)
}

// Read copies local memory into b (one access per 64-byte line; in an SMP,
// the coherence model's cost of each line in turn).
func (p *Proc) Read(addr uint64, b []byte) {
	p.core.mem.Read(addr, b)
	if p.core.smp != nil {
		p.smpAccess(addr, len(b), accLoad)
		return
	}
	p.wait(p.core.spec.MemAccessPS * sim.Tick((len(b)+63)/64))
}

// Write copies b into local memory (one access per 64-byte line; in an
// SMP, the coherence model's cost of each line in turn).
func (p *Proc) Write(addr uint64, b []byte) {
	p.core.mem.Write(addr, b)
	if p.core.smp != nil {
		p.smpAccess(addr, len(b), accStore)
		return
	}
	p.wait(p.core.spec.MemAccessPS * sim.Tick((len(b)+63)/64))
}

// CAS is a local compare-and-swap on a 64-bit word; it returns the old value.
func (p *Proc) CAS(addr, cmp, swap uint64) uint64 {
	old := p.core.mem.Load64(addr)
	if old == cmp {
		p.core.mem.Store64(addr, swap)
	}
	if p.core.smp != nil {
		p.smpAccess(addr, 8, accAtomic)
		return old
	}
	p.wait(p.core.spec.AtomicPS)
	return old
}

// FetchAdd is a local fetch-and-add; it returns the old value.
func (p *Proc) FetchAdd(addr, v uint64) uint64 {
	old := p.core.mem.Load64(addr)
	p.core.mem.Store64(addr, old+v)
	if p.core.smp != nil {
		p.smpAccess(addr, 8, accAtomic)
		return old
	}
	p.wait(p.core.spec.AtomicPS)
	return old
}

// MMIOWrite writes data to a device register or device memory with an
// uncached store: a posted memory write down the root complex. It costs
// its issue (Spec.UncachedWritePS, or MMIOPS when that is not set): the
// write leaves through the core's write buffer, Host, and only a full one
// holds the core up. cause is the operation it belongs to.
func (p *Proc) MMIOWrite(addr uint64, data []byte, cause sim.TxnID) sim.Txn {
	c := p.core
	for !c.Host.Ready() {
		p.wait(c.spec.PeriodPS)
	}
	t := tlp.NewMemWrite(c.id, 0, addr, data)
	tx := c.u.Engine().NewTxn(cause, "tlp.MWr.doorbell", p.name)
	c.Host.Send(pcie.Packet{Txn: tx, TLP: t})
	issue := c.spec.MMIOPS
	if c.spec.UncachedWritePS != 0 {
		issue = c.spec.UncachedWritePS
	}
	p.wait(issue)
	return tx
}

// MaxMMIORead is the largest uncached read: one MRd of a 4 KB page.
const MaxMMIORead = 4096

// MMIORead reads n bytes of device memory at addr (1 to MaxMMIORead bytes
// within one 4 KB page) with an uncached load: an MRd with the core's
// requester ID and a tag goes to the root complex on Host (waiting, as a
// store does, while Host is full), and the core stalls — running nothing
// else, interrupts included — until the completion is back on Cpl. The
// load costs the whole round trip: the root complex, the link both ways,
// the device's access and the way back, which a read never passes the
// device's earlier writes on. A read no device decodes, or that the device
// fails, returns all ones, as on hardware.
func (p *Proc) MMIORead(addr uint64, n int) []byte {
	c := p.core
	if c.Host == nil || c.Cpl == nil {
		panic(fmt.Sprintf("cpu: %s: an uncached read needs the core's paths to the root complex and back (Host, Cpl)", c.u.Name()))
	}
	if n < 1 || n > MaxMMIORead || addr>>12 != (addr+uint64(n)-1)>>12 {
		panic(fmt.Sprintf("cpu: %s: uncached read of %d bytes at %#x: want 1 to %d bytes within a 4 KB page", c.u.Name(), n, addr, MaxMMIORead))
	}
	for !c.Host.Ready() {
		p.wait(c.spec.PeriodPS)
	}
	if c.req == nil {
		c.req, _ = pcie.NewRequester(c.id, 5)
	}
	t, _ := c.req.Issue(addr, n) // the core stalls: one read at a time
	tx := c.u.Engine().NewTxn(p.Txn.ID, "tlp.MRd.uncached", p.name)
	c.Host.Send(pcie.Packet{Txn: tx, TLP: t})
	c.readCounters()
	c.stReads.Inc()
	p.cplWait, p.cplData, p.cplErr = true, nil, nil
	p.wait(0) // resumed by the completion (Core.completion)
	if p.cplErr != nil {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0xff
		}
		return b
	}
	data := p.cplData
	p.cplData = nil
	return data
}

// MMIORead32 reads the little-endian 32-bit word of device memory at addr
// with an uncached load (MMIORead).
func (p *Proc) MMIORead32(addr uint64) uint32 {
	return binary.LittleEndian.Uint32(p.MMIORead(addr, 4))
}

// MMIORead64 reads the little-endian 64-bit word of device memory at addr
// with an uncached load (MMIORead).
func (p *Proc) MMIORead64(addr uint64) uint64 {
	return binary.LittleEndian.Uint64(p.MMIORead(addr, 8))
}

// Poll checks cond every PollIntervalPS (each check costs a memory access)
// until it holds. cond must only look (it runs on the core's edges, outside
// the process): calling the process's costed operations in it panics.
func (p *Proc) Poll(cond func() bool) { p.spin(cond, p.core.spec.PollIntervalPS) }

// PollWord is Poll for a condition on the 64-bit word at addr of the
// core's memory (and on Go state): cond gets the word's value. The core
// loads the word again only after a write touched its line
// (memory.Watch), so a check that finds the word unchanged costs no page
// lookup; what each check sees, and when, is what Poll's would.
func (p *Proc) PollWord(addr uint64, cond func(v uint64) bool) {
	v := p.core.mem.Load64(addr)
	if cond(v) {
		return
	}
	p.pollOnWord(addr, v, nil, cond)
}

// pollOnWord runs a PollWord loop whose first check (at the call) found
// cond false of v, the word's value; n, if not nil, is the Notify of the
// condition's other state.
func (p *Proc) pollOnWord(addr, v uint64, n *Notify, cond func(v uint64) bool) {
	c := p.core
	if p.watch == nil {
		p.watch = c.mem.Watch(addr)
	} else {
		p.watch.Move(addr)
	}
	p.watch.Written = false
	p.word, p.wordVal = addr, v
	p.pollWord, p.notify = true, n
	p.poll = func() bool {
		if p.watch.Written || c.loadEvery {
			p.watch.Written = false
			p.wordVal = c.mem.Load64(p.word)
		}
		return cond(p.wordVal)
	}
	p.pollEvery = c.spec.PollIntervalPS
	p.wait(p.pollEvery)
}

// PollWordNotified is PollWord for a condition that also reads Go state
// that others change (a flag set when a run stops): whoever changes it
// calls n.Changed at the time of the change, so that a core sleeping
// through the loop's checks runs the one that sees it.
func (p *Proc) PollWordNotified(addr uint64, n *Notify, cond func(v uint64) bool) {
	v := p.core.mem.Load64(addr)
	if cond(v) {
		return
	}
	n.changed = false
	p.pollOnWord(addr, v, n, func(v uint64) bool {
		n.changed = false
		return cond(v)
	})
}

// SetPollWatch chooses whether the core's PollWord loops load their word
// only after a write to its line (on, the default) or on every check, as
// Poll does: the outputs are the same; tests compare the two.
func (c *Core) SetPollWatch(on bool) { c.loadEvery = !on }

// SetPollSleep chooses whether a core whose one process waits in a
// PollWord loop sleeps through the checks that cannot see a change (on,
// the default) or makes every check: the outputs are the same, only the
// evaluations differ; tests compare the two.
func (c *Core) SetPollSleep(on bool) { c.noSleep = !on }

// sleepPoll lets the core sleep through the checks of its processes'
// polling loops, the next due at next (its check is the first edge at or
// after), when nothing else can need the core: no timer for the checks,
// the checks that find nothing counted when the core next runs (rouse) or
// the run ends, and a write to a watched word's line, a Notify, an MSI
// (the Irq channel) or a new process waking it on the check the loops
// would have made. It reports whether the core sleeps.
//
// The core may sleep when the process it ran last has just checked (or
// begun) a loop that only a known event can end (PollWord,
// ScratchpadPollNotified, PollWordNotified), and each of its other
// processes waits in such a loop of the same interval or sleeps (Sleep)
// past the next check: the checks then go round-robin over the polling
// processes, one a period of the loops, each finding nothing, until a
// write or the first of the sleeping processes' wakes (a timer on the
// first check at or after it). What a loop's condition reads besides its
// word is its process's own Go state (the verbs' completion counts, a
// log's head), which only the core's processes change: none while they
// all wait.
func (c *Core) sleepPoll(next sim.Tick) bool {
	if c.noSleep || c.reading != nil || c.dozing != nil || c.sleeper != nil {
		return false
	}
	n := len(c.procs)
	if c.rr >= n || c.procs[c.rr] != c.lastRun {
		return false
	}
	last := c.lastRun
	if !sleepable(last) || last.wakeAt != next || c.busyUntil != next {
		return false
	}
	d := max(last.pollEvery, c.spec.PeriodPS)
	period := c.u.Clock().Period()
	first, every := c.u.Clock().EdgeAtOrAfter(next), (d+period-1)/period*period
	// The processes in the order the round-robin checks them, from the
	// one after the last that ran.
	ring, limit := c.sleepRing[:0], sim.Never
	for i := 1; i <= n; i++ {
		j := (c.rr + i) % n
		p := c.procs[j]
		switch {
		case p.done:
		case p.handler || p.lspin != nil || p.doze != nil || p.cplWait:
			return false
		case p.poll == nil:
			// Sleeping (Sleep) past the first check: the core checks up
			// to its wake, then runs as before.
			if p.wakeAt <= first {
				return false
			}
			limit = min(limit, p.wakeAt)
		case !sleepable(p) || max(p.pollEvery, c.spec.PeriodPS) != d:
			return false
		case p.pollWord && p.watch.Written, p.notify != nil && p.notify.changed:
			return false // changed since its check: the next one sees it
		default:
			ring = append(ring, j)
		}
	}
	c.sleepRing = ring
	if !c.settled {
		c.settled = true
		c.u.Engine().OnRunEnd(c.settle)
	}
	for _, j := range ring {
		p := c.procs[j]
		if p.pollWord && p.watch.OnWrite == nil {
			p.watch.OnWrite = c.pollWritten
		}
		if p.notify != nil {
			p.notify.wake = c.pollWritten
		}
	}
	c.sleeper, c.sleepCost, c.sleepNext, c.sleepEvery = last, d, first, every
	if limit != sim.Never {
		c.u.WakeAt(first + (limit-first+every-1)/every*every)
	}
	return true
}

// sleepable reports whether p waits in a polling loop that only a known
// event can end: a write to its watched word's line or its Notify.
func sleepable(p *Proc) bool {
	return !p.done && !p.handler && p.poll != nil && (p.pollWord || p.notify != nil) &&
		p.lspin == nil && p.doze == nil && !p.cplWait
}

// pollWritten is the watch's OnWrite (and a Notify's): the sleeping core runs the first
// check its loops make at or after now, or the next one when that check's
// turn in the current time step has passed.
func (c *Core) pollWritten() {
	if c.sleeper == nil {
		return
	}
	now := c.u.Engine().Now()
	at := c.sleepNext
	if at < now {
		at += (now - at + c.sleepEvery - 1) / c.sleepEvery * c.sleepEvery
	}
	if at == now {
		if c.u.WakeThisEdge() {
			c.sameEdgeWakes++
			return
		}
		at += c.sleepEvery
	}
	c.u.WakeAt(at)
}

// skip counts the checks of the sleeping loops before t, as the loops
// would have counted them (round-robin over the ring), leaves each
// process as its last check left it, and returns the time of the last
// check (0 if none).
func (c *Core) skip(t sim.Tick) sim.Tick {
	if t <= c.sleepNext {
		return 0
	}
	k := (t - c.sleepNext + c.sleepEvery - 1) / c.sleepEvery
	c.stOps.Add(uint64(k))
	c.stBusy.Add(uint64(k * c.sleepCost))
	m := sim.Tick(len(c.sleepRing))
	for i := sim.Tick(0); i < m && i < k; i++ {
		// The ring's i-th process makes checks i, i+m, i+2m… of the k.
		p := c.procs[c.sleepRing[i]]
		checks := (k-1-i)/m + 1
		p.ops += uint64(checks)
		p.wakeAt = c.sleepNext + (i+(checks-1)*m)*c.sleepEvery + c.sleepCost
	}
	lastIdx := int((k - 1) % m)
	c.rr = c.sleepRing[lastIdx]
	c.sleeper, c.lastRun = c.procs[c.rr], c.procs[c.rr]
	// The ring from the process after the last checked.
	if r := int(k % m); r != 0 {
		slices.Reverse(c.sleepRing[:r])
		slices.Reverse(c.sleepRing[r:])
		slices.Reverse(c.sleepRing)
	}
	c.sleepNext += k * c.sleepEvery
	return c.sleepNext - c.sleepEvery
}

// rouse ends the sleep at now: the checks before now are counted, and the
// loops' next check is the first at or after now.
func (c *Core) rouse(now sim.Tick) {
	c.skip(now)
	c.busyUntil = c.sleepDue()
	c.sleeper = nil
}

// sleepDue is when the core is free again, as the last check set it: that
// check's edge plus the interval (the next check is the first edge at or
// after it, sleepNext).
func (c *Core) sleepDue() sim.Tick { return c.sleepNext - c.sleepEvery + c.sleepCost }

// settle is the core's OnRunEnd hook: the checks a sleeping core skipped
// before the run's end are counted, the core sleeping on.
func (c *Core) settle(end sim.Tick) sim.Tick {
	if c.sleeper == nil || end == sim.Never {
		return 0 // (a run without a limit would check for ever)
	}
	last := c.skip(end)
	c.busyUntil = c.sleepDue()
	return last
}

// ScratchpadPoll checks cond every scratchpad access time until it holds:
// the polling hyperthread of the SP notification mode.
func (p *Proc) ScratchpadPoll(cond func() bool) { p.spin(cond, p.core.spec.ScratchpadPS) }

// spin is a polling loop that costs what checking cond every d costs. The
// core checks cond itself on the edges the loop would have checked it, and
// resumes the process only once it holds: a spinning process costs an
// evaluation of its core per check, not two coroutine switches too.
func (p *Proc) spin(cond func() bool, d sim.Tick) {
	if cond() {
		return
	}
	p.poll, p.pollEvery, p.pollWord, p.notify = cond, d, false, nil
	p.wait(d)
}

// A Notify is how what a polling loop looks at tells the loop's core that
// it may have changed (ScratchpadPollNotified, PollWordNotified): a core
// sleeping through the loop's checks then runs the check that would have
// seen it, and one that is not does not sleep before that check.
type Notify struct {
	wake    func()
	changed bool // since the loop's last check
}

// Changed says that what the loop looks at may have changed now.
func (n *Notify) Changed() {
	n.changed = true
	if n.wake != nil {
		n.wake()
	}
}

// ScratchpadPollNotified is ScratchpadPoll for a condition that only
// changes when n.Changed is called (at the time of the change): a core
// whose one process waits in it may sleep through the checks, as in
// PollWord (SetPollSleep).
func (p *Proc) ScratchpadPollNotified(n *Notify, cond func() bool) {
	if cond() {
		return
	}
	n.changed = false
	p.poll = func() bool {
		n.changed = false
		return cond()
	}
	p.pollEvery, p.pollWord, p.notify = p.core.spec.ScratchpadPS, false, n
	p.wait(p.pollEvery)
}

// Halt waits for an interrupt (a wait-for-interrupt state): until cond
// holds, the process executes a wait instruction (one operation, a cycle
// of the core not counted busy) and runs again only after a handler of its
// core has called n.Changed, then looks at cond again. The core is free
// meanwhile: its handlers run, and a process that halts costs no
// evaluation of the simulation until one does. cond may depend only on
// what the core's handlers change (and announce with n.Changed), and
// n.Changed must be called from a handler (or process) of the same core.
func (p *Proc) Halt(n *Notify, cond func() bool) {
	for !cond() {
		n.changed = false
		n.wake = func() {
			if p.halted {
				p.halted = false
				p.wakeAt = p.Now()
			}
		}
		p.halted = true
		p.wait(p.core.spec.PeriodPS)
		if p.halted {
			panic(fmt.Sprintf("cpu: process %s: ran while halted", p.name))
		}
	}
}

// doze is a polling loop whose passes the process does not run: each
// costs ops operations and every, the first began at from, and each ends
// with a look at something that next says when it changes.
type doze struct {
	from, every, busy sim.Tick
	ops               int
	next              func() sim.Tick
}

// Doze is a polling loop run without running it. The process has just
// ended a pass of a loop that found nothing: ops costed operations that
// took every, the pass's last operation a look whose result only changes
// at the times next reports (the earliest time the looked-at state
// differs, sim.Never while nothing is coming). The loop would repeat
// that pass unchanged until the first pass whose look is at or after
// that time; Doze returns at the end of that pass's look, with the
// core's operations and busy time counted as if every pass had run, so
// the run is the same to the byte as the loop's. Whatever changes the
// looked-at state must wake the core (Unit) at the time it becomes
// visible, so that Doze learns of it; next is asked on every wake.
func (p *Proc) Doze(every sim.Tick, ops int, next func() sim.Tick) {
	p.DozeBusy(every, every, ops, next)
}

// DozeBusy is Doze for a loop whose passes keep the core busy for busy
// of their every (the rest of a pass a Sleep, as a wait loop's pause).
func (p *Proc) DozeBusy(every, busy sim.Tick, ops int, next func() sim.Tick) {
	if every <= 0 || ops < 1 || busy < 0 || busy > every {
		panic(fmt.Sprintf("cpu: process %s: doze through passes of %d ps (%d busy) and %d operations", p.name, every, busy, ops))
	}
	p.doze = &doze{from: p.Now(), every: every, busy: busy, ops: ops, next: next}
	p.wait(0)
}

// wake decides at now whether the dozing process's loop has reached the
// pass that sees a change; it reports whether the core goes on with this
// edge (the process runnable again, the skipped passes counted).
func (c *Core) wake(now sim.Tick) bool {
	p := c.dozing
	d := p.doze
	e := d.next()
	if e == sim.Never {
		return false
	}
	k := max(1, (e-d.from+d.every-1)/d.every)
	at := d.from + k*d.every
	if now < at {
		c.u.WakeAt(at)
		return false
	}
	if now > at {
		panic(fmt.Sprintf("cpu: process %s: a change visible at %d reached its dozing core only at %d", p.name, e, now))
	}
	// The passes that would have run: their operations and busy time.
	c.stOps.Add(uint64(k) * uint64(d.ops))
	c.stBusy.Add(uint64(k * d.busy))
	p.ops += uint64(k) * uint64(d.ops)
	p.doze, c.dozing = nil, nil
	p.wakeAt, c.busyUntil = now, now
	return true
}

// Ops is the number of costed operations the process has run.
func (p *Proc) Ops() uint64 { return p.ops }

// Op starts a new operation of the process (a put, an insert): its
// transaction becomes the cause of what the process does next.
func (p *Proc) Op(kind string) sim.Txn {
	p.Txn = p.core.u.Engine().NewOp(kind, p.name)
	return p.Txn
}
