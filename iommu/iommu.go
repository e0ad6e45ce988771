package iommu

import (
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// SPWrite is what the IOMMU's scratchpad port carries: a new visible tail of
// an access log in SP mode, for the CPU's polling hyperthread.
type SPWrite struct {
	Slot uint32
	IUID uint16
	Tail uint64
}

// port is one device side: TLPs from the device's link, completions back.
//
// A link's receive buffer has a lane per class (posted, non-posted,
// completion), and the port takes the oldest TLP the ordering rules let go
// (pcie.NextLane): a non-posted request that must wait — an active get whose
// access log is full, a read with the tag buffer full, a second flush of a
// page — stays at the head of its lane while later posted writes pass it, as
// PCIe requires of a root complex (a full log must not deadlock the NIC's
// writes). A posted request that waits holds back everything behind it: no
// write passes a write, no read or completion passes a write. A device wired
// with a plain channel is one FIFO.
type port struct {
	in, out *sim.Chan[pcie.Packet]
	// Completions and host requests waiting for room on out, a FIFO per
	// class: a completion or a read never passes a posted write down to
	// the device, and over a link with a lane per class a host write
	// passes a host read that waits for non-posted credits.
	queue     *pcie.Outbox[pcie.Packet]
	stalled   [3]bool  // the head TLP of a lane waits (full log, full buffers)
	dataUntil sim.Tick // the port's data path is busy until then
	barBase   uint64   // the device's memory-mapped registers
	barSize   uint64
}

// isStalled reports whether a head TLP of the port waits.
func (p *port) isStalled() bool { return p.stalled[0] || p.stalled[1] || p.stalled[2] }

// canTry reports whether the port has a head TLP not known to wait that the
// ordering rules let go.
func (p *port) canTry() bool {
	return pcie.NextLane(p.in, func(l int, _ *pcie.Packet) bool { return !p.stalled[l] }) >= 0
}

// IOMMU is the extended IOMMU as a cycle-level block. It takes TLPs from
// device ports one at a time, translates and decides, forwards the allowed
// accesses to the memory controller, intercepts the completions coming back
// (tag buffer), writes access-log records, and withholds flow-control
// credits — by not taking the next TLP from a port — when a log is full.
type IOMMU struct {
	u    *sim.Unit
	spec Spec
	mem  *memory.Store

	ports  []*port
	portOf map[tlp.ID]int // where a requester's completions go
	// The last requester recorded in portOf and its port.
	lastReq     tlp.ID
	lastReqPort int
	portKnown   bool

	MemReq *sim.Chan[memory.Req]
	MemCpl *sim.Chan[pcie.Packet]
	Irq    *sim.Chan[pcie.Packet]   // MSIs: fault events, log notifications (optional)
	SP     *sim.Chan[SPWrite]       // scratchpad port (optional)
	host   []*sim.Chan[pcie.Packet] // CPUs' MMIO requests (optional)
	// Completions of the CPUs' uncached reads, by requester ID: one path
	// per core (ConnectHostCompletions).
	hostCpl    map[tlp.ID]*hostPath
	hostPaths  []*hostPath
	hostQueued int // completions waiting in the host paths' queues

	ctxCache *sim.Cache[tlp.ID, ctxEntry]
	// The last context looked up (invalidated with the context cache).
	lastSID      tlp.ID
	lastCtx      ctxEntry
	lastCtxValid bool
	iotlb        *sim.Cache[tlbKey, tlbEntry]
	kinds        *pageKinds // Spec.IOTLBByKind or IOTLBOnly: pages' labels (nil: none)
	logs         *sim.CAM[uint16, *logState]
	tagBuf       *sim.CAM[tagKey, *readCtx]
	flushBuf     *sim.CAM[uint64, *flushEntry]
	faults       faultRegs

	cur       *job
	busyUntil sim.Tick
	rr        int
	// The pipeline (Spec.Slots > 0): the TLPs in flight in the order they
	// were taken, when each port's last one is done, and when each walker
	// is free.
	flight     []*job
	portDone   []sim.Tick
	walkerFree []sim.Tick
	tagPending int // logged reads in flight: their tag-buffer entries to come

	// Requests to the memory controller, a FIFO per class: the IOMMU's own
	// writes and the devices' writes pass reads the controller cannot take
	// yet; a read never passes a write.
	memOut     *pcie.Outbox[memory.Req]
	irqOut     []pcie.Packet
	spOut      []SPWrite
	nextPoll   sim.Tick
	intervals  []intervalTimer
	dataPhases []dataPhase
	commitQ    []*job // accepted requests whose memory side waits its turn
	freeJobs   []*job // finished write jobs, reused

	// OnAccept, when set, sees every TLP the IOMMU takes from a port, in the
	// order it takes them: verification follows the DUT's order with it.
	OnAccept func(port int, p *pcie.Packet)

	last   lastDecision
	recTxn map[uint64]sim.TxnID // (IUID, seq) → the decision that made the record, until handled

	stTLPs, stWrites, stReads, stAtomics, stUnsupported *sim.Counter
	stTLBHits, stTLBMisses, stCtxHits, stCtxMisses      *sim.Counter
	stWalkReads, stFaults, stFaultsDropped, stRecords   *sim.Counter
	stLogHits, stLogMisses, stTailMoves, stLogMSIs      *sim.Counter
	stBlocked, stStallCycles, stHeadPolls, stFlushes    *sim.Counter
	stDataLogged, stHoles                               *sim.Counter
	stDevMSIs                                           *sim.Counter // created on the first device MSI
	// Created on the first uncached read from a CPU, so that the
	// statistics of runs without them stay as they were.
	stHostReads, stHostUR, stHostCpls *sim.Counter
	hLatency                          *sim.Histogram
}

// hostPath is the way back to one core: its completion channel and what
// waits for room in it.
type hostPath struct {
	out   *sim.Chan[pcie.Packet]
	queue []pcie.Packet
}

type intervalTimer struct {
	at   sim.Tick
	iuid uint16
}

// lastDecision is what the traced signals show about the latest TLP.
type lastDecision struct {
	valid                  bool
	kind                   tlp.Kind
	tlbHit                 bool
	walk                   int
	leaf                   uint64
	perform, logged, fault bool
}

// New places an IOMMU called name in clock clk, over memory mem.
func New(clk *sim.Clock, name string, spec Spec, mem *memory.Store) (*IOMMU, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m := &IOMMU{spec: spec, mem: mem, portOf: map[tlp.ID]int{}, recTxn: map[uint64]sim.TxnID{},
		memOut: pcie.NewOutbox(memory.ReqClass)}
	m.u = clk.Add(name, m)
	e := m.u.Engine()
	var err error
	m.ctxCache, err = sim.NewCache[tlp.ID, ctxEntry](spec.CtxSets, spec.CtxWays, spec.CtxEviction,
		func(id tlp.ID) uint64 { return uint64(id) }, e.Rand(name+".context_cache"))
	if err != nil {
		return nil, fmt.Errorf("%s: context cache: %w", name, err)
	}
	m.iotlb, err = sim.NewCache[tlbKey, tlbEntry](spec.IOTLBSets, spec.IOTLBWays, spec.IOTLBEviction,
		func(k tlbKey) uint64 { return k.vpn() }, e.Rand(name+".iotlb"))
	if err != nil {
		return nil, fmt.Errorf("%s: IOTLB: %w", name, err)
	}
	m.logs = sim.NewCAM[uint16, *logState](spec.LogCAMEntries)
	m.tagBuf = sim.NewCAM[tagKey, *readCtx](spec.TagBufferEntries)
	m.flushBuf = sim.NewCAM[uint64, *flushEntry](spec.FlushBufferEntries)
	m.faults = faultRegs{recs: make([]FaultRecord, spec.FaultRecords), im: true}
	if spec.Slots > 0 {
		m.walkerFree = make([]sim.Tick, spec.Walkers)
	}

	s := e.Stats()
	c := func(n, unit, desc string) *sim.Counter { return s.Counter(name+"."+n, unit, desc) }
	m.stTLPs = c("tlps", "TLPs", "TLPs taken from device ports")
	m.stWrites = c("writes", "TLPs", "memory writes (MWr) processed")
	m.stReads = c("reads", "TLPs", "memory reads (MRd) processed")
	m.stAtomics = c("atomics", "TLPs", "AtomicOps processed")
	m.stUnsupported = c("unsupported", "TLPs", "TLPs other than memory requests and AtomicOps (dropped or answered UR)")
	m.stTLBHits = c("iotlb.hits", "lookups", "IOTLB hits")
	m.stTLBMisses = c("iotlb.misses", "lookups", "IOTLB misses (page walks)")
	m.newPageKinds(name, s)
	m.stCtxHits = c("context_cache.hits", "lookups", "context-cache hits")
	m.stCtxMisses = c("context_cache.misses", "lookups", "context-cache misses (root and context entries read)")
	m.stWalkReads = c("walk_reads", "accesses", "paging-entry reads of page walks")
	m.stFaults = c("faults", "faults", "faults recorded in the fault recording registers")
	m.stFaultsDropped = c("faults_dropped", "faults", "faults not recorded: overflow (PFO) or FPD")
	m.stRecords = c("records", "records", "access-log records written")
	m.stDataLogged = c("data_logged", "bytes", "bytes of data copied into access logs")
	m.stLogHits = c("log_table.hits", "lookups", "access-log table (CAM) hits")
	m.stLogMisses = c("log_table.misses", "lookups", "access-log table misses (descriptor read from memory)")
	m.stHoles = c("holes", "records", "records completed while an earlier reservation was still a hole")
	m.stTailMoves = c("tail_updates", "updates", "visible-tail advances written to memory")
	m.stLogMSIs = c("log_msis", "MSIs", "access-log notifications by MSI (Int mode)")
	m.stBlocked = c("blocked", "TLPs", "accesses not performed (blocked writes, UR reads)")
	m.stStallCycles = c("stalls", "edges", "edges at which a port's TLP waited: full access log or buffers (credits withheld)")
	m.stHeadPolls = c("head_polls", "reads", "re-reads of a log's head while waiting for the consumer")
	m.stFlushes = c("flushes", "flushes", "flush gets completed")
	m.hLatency = s.Histogram(name+".latency", "ns", "time a TLP spends in the IOMMU (processing and memory accesses)",
		[]uint64{5, 10, 80, 150, 300, 600})

	m.u.Probe("tlp_kind", 5, func() (uint64, bool) { return uint64(m.last.kind), m.last.valid })
	m.u.Probe("iotlb_hit", 1, func() (uint64, bool) { return b2u(m.last.tlbHit), m.last.valid })
	m.u.Probe("walk_levels", 3, func() (uint64, bool) { return uint64(m.last.walk), m.last.valid })
	m.u.Probe("pte_aa_bits", 5, func() (uint64, bool) { return m.last.leaf >> 7 & 0xf, m.last.valid })
	m.u.Probe("pte_e", 1, func() (uint64, bool) { return m.last.leaf >> 63, m.last.valid })
	m.u.Probe("iuid", 10, func() (uint64, bool) { return m.last.leaf >> 52 & 0x3ff, m.last.valid })
	m.u.Probe("performed", 1, func() (uint64, bool) { return b2u(m.last.perform), m.last.valid })
	m.u.Probe("logged", 1, func() (uint64, bool) { return b2u(m.last.logged), m.last.valid })
	m.u.Probe("fault", 1, func() (uint64, bool) { return b2u(m.last.fault), m.last.valid })
	m.u.Probe("busy", 1, func() (uint64, bool) { return b2u(m.cur != nil || len(m.flight) > 0), true })
	m.u.Probe("stalled", 1, func() (uint64, bool) { return b2u(m.anyStalled()), true })
	m.u.Probe("log_cam_occupancy", 11, func() (uint64, bool) { return uint64(m.logs.Occupancy()), true })
	m.u.Probe("tag_buffer_occupancy", 11, func() (uint64, bool) { return uint64(m.tagBuf.Occupancy()), true })
	m.u.Probe("flush_buffer_active", 8, func() (uint64, bool) { return uint64(m.activeFlushes()), true })
	for i := 0; i < spec.LogCAMEntries && i < 16; i++ {
		slot := i
		get := func(f func(*logState) uint64) func() (uint64, bool) {
			return func() (uint64, bool) {
				_, v, ok := m.logs.Slot(slot)
				if !ok {
					return 0, false
				}
				return f(*v), true
			}
		}
		p := fmt.Sprintf("log%d.", slot)
		m.u.Probe(p+"iuid", 10, get(func(l *logState) uint64 { return uint64(l.iuid) }))
		m.u.Probe(p+"head", 64, get(func(l *logState) uint64 { return l.head }))
		m.u.Probe(p+"reserved", 64, get(func(l *logState) uint64 { return l.reserved }))
		m.u.Probe(p+"tail", 64, get(func(l *logState) uint64 { return l.tail }))
	}
	return m, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Unit is the IOMMU's kernel unit, for the blocks that connect to it.
func (m *IOMMU) Unit() *sim.Unit { return m.u }

// Spec is the configuration.
func (m *IOMMU) Spec() Spec { return m.spec }

// AddPort connects a device side: in carries the device's TLPs (the
// receive buffer of its link; the IOMMU is its consumer), out the
// completions back to the device.
func (m *IOMMU) AddPort(in, out *sim.Chan[pcie.Packet]) int {
	m.ports = append(m.ports, &port{in: in, out: out, queue: pcie.NewOutbox(pcie.PacketClass)})
	m.portDone = append(m.portDone, 0)
	return len(m.ports) - 1
}

// SetBAR gives port pi's device a memory-mapped window (registers, device
// memory): host writes and reads into it are routed down to that device
// (they are not remapped: the IOMMU translates device requests only).
func (m *IOMMU) SetBAR(pi int, base, size uint64) {
	m.ports[pi].barBase, m.ports[pi].barSize = base, size
}

// ConnectHost connects the CPUs' MMIO requests (doorbells, uncached
// stores and loads) to the root complex, which routes them to the device
// whose BAR they hit.
func (m *IOMMU) ConnectHost(in *sim.Chan[pcie.Packet]) { m.host = append(m.host, in) }

// ConnectHostCompletions routes the completions of requester id's uncached
// reads (a core's MRds) to out: the device's completions, once every write
// the device sent before them is performed, and the root complex's own
// Unsupported Request completions for reads no BAR decodes.
func (m *IOMMU) ConnectHostCompletions(id tlp.ID, out *sim.Chan[pcie.Packet]) {
	if m.hostCpl == nil {
		m.hostCpl = map[tlp.ID]*hostPath{}
	}
	h := &hostPath{out: out}
	m.hostCpl[id] = h
	m.hostPaths = append(m.hostPaths, h)
}

// takeHost routes host MMIO requests down to their device.
func (m *IOMMU) takeHost() {
	for _, h := range m.host {
		for h.Valid() {
			m.routeHost(h.Recv())
		}
	}
}

func (m *IOMMU) routeHost(pkt pcie.Packet) {
	read := pkt.TLP.Kind.Class() == tlp.NonPosted
	if read {
		m.hostCounters()
		m.stHostReads.Inc()
	}
	for _, p := range m.ports {
		if a := pkt.TLP.Addr; a >= p.barBase && a < p.barBase+p.barSize {
			p.queue.Push(pkt)
			return
		}
	}
	if !read {
		m.stUnsupported.Inc() // no device decodes the address: dropped (a master abort)
		return
	}
	// A read no device decodes: the root complex completes it with
	// Unsupported Request, and the core's load returns all ones.
	m.stHostUR.Inc()
	if h := m.hostCpl[pkt.TLP.RequesterID]; h != nil {
		tx := m.u.Engine().NewTxn(pkt.ID, "cpl.UR", m.u.Name())
		m.toHost(h, pcie.Packet{Txn: tx, TLP: pcie.ErrorCompletion(&pkt.TLP, m.spec.ID, tlp.UR)})
	}
}

// toHost queues a completion for a core.
func (m *IOMMU) toHost(h *hostPath, p pcie.Packet) {
	h.queue = append(h.queue, p)
	m.hostQueued++
}

// hostCounters declares the statistics of uncached reads on the first one.
func (m *IOMMU) hostCounters() {
	if m.stHostReads != nil {
		return
	}
	s := m.u.Engine().Stats()
	c := func(n, unit, desc string) *sim.Counter { return s.Counter(m.u.Name()+"."+n, unit, desc) }
	m.stHostReads = c("host_reads", "TLPs", "uncached reads (MRd) from the CPUs")
	m.stHostUR = c("host_reads_ur", "TLPs", "uncached reads no BAR decodes, completed with Unsupported Request (the load returns all ones)")
	m.stHostCpls = c("host_completions", "TLPs", "device completions of uncached reads passed to the CPUs")
}

// ConnectMemory connects the memory controller's request and completion
// channels.
func (m *IOMMU) ConnectMemory(req *sim.Chan[memory.Req], cpl *sim.Chan[pcie.Packet]) {
	m.MemReq, m.MemCpl = req, cpl
}

func (m *IOMMU) anyStalled() bool {
	for _, p := range m.ports {
		if p.isStalled() {
			return true
		}
	}
	return false
}

// memWritesFit reports whether the writes waiting for the memory controller
// leave room to take another TLP (Spec.MemQueue). Reads waiting there do not
// count: they are bounded by the devices' tags, and must not hold up writes.
func (m *IOMMU) memWritesFit() bool { return m.memOut.ClassLen(tlp.Posted) < m.spec.MemQueue }

func (m *IOMMU) memWrite(addr uint64, data []byte) {
	m.memOut.Push(memory.Req{Kind: memory.Write, Addr: addr, Data: data})
}

func (m *IOMMU) sendMSI(addr uint64, data uint32, cause sim.TxnID) {
	if m.Irq == nil {
		return
	}
	tx := m.u.Engine().NewTxn(cause, "msi", m.u.Name())
	m.irqOut = append(m.irqOut, pcie.Packet{Txn: tx, TLP: tlp.NewMSI(m.spec.ID, addr, data)})
}

// InterruptWindow reports whether a device write to addr is an interrupt
// request: VT-d never DMA-remaps 0xFEE00000-0xFEEFFFFF, the x86 MSI window.
func InterruptWindow(addr uint64) bool { return addr>>20 == 0xfee }

// deliverInterrupt passes a device's MSI to the CPUs, as the root complex
// does with writes into the interrupt window (interrupt remapping is not
// modelled: the compatibility format goes through as it is).
func (m *IOMMU) deliverInterrupt(j *job) {
	if m.stDevMSIs == nil {
		// Counted only once a device raises one: the statistics of runs
		// without device interrupts stay as they were.
		m.stDevMSIs = m.u.Engine().Stats().Counter(m.u.Name()+".device_msis", "MSIs", "device MSIs passed to the CPUs (writes into the interrupt window)")
	}
	m.stDevMSIs.Inc()
	if m.Irq == nil {
		return
	}
	tx := m.u.Engine().NewTxn(j.p.ID, "msi", m.u.Name())
	m.irqOut = append(m.irqOut, pcie.Packet{Txn: tx, TLP: j.p.TLP})
}

// Tick is one edge of the IOMMU.
func (m *IOMMU) Tick(now sim.Tick) bool {
	m.drain()
	m.takeHost()
	m.takeCompletions(now)
	m.pollHeads(now)
	m.fireIntervals(now)
	m.endDataPhases(now)
	if m.cur != nil && now >= m.busyUntil {
		m.finish(m.cur, now)
		m.cur = nil
	}
	if len(m.flight) > 0 {
		m.finishFlight(now)
	}
	m.commit(now)
	if m.canStart() {
		m.start(now)
	}
	m.drain()
	return m.schedule(now)
}

// drain moves queued outputs into their channels as they have room.
func (m *IOMMU) drain() {
	m.memOut.Drain(m.MemReq)
	for _, p := range m.ports {
		p.queue.Drain(p.out)
	}
	if m.hostQueued > 0 {
		for _, h := range m.hostPaths {
			if n := len(h.queue); n > 0 {
				h.queue = sendQueued(h.out, h.queue)
				m.hostQueued -= n - len(h.queue)
			}
		}
	}
	if m.Irq != nil {
		m.irqOut = sendQueued(m.Irq, m.irqOut)
	}
	if m.SP != nil {
		m.spOut = sendQueued(m.SP, m.spOut)
	} else {
		m.spOut = m.spOut[:0]
	}
}

// sendQueued sends the front of q while ch has room and returns the rest,
// in the same array.
func sendQueued[T any](ch *sim.Chan[T], q []T) []T {
	n := 0
	for n < len(q) && ch.Ready() {
		ch.Send(q[n])
		n++
	}
	return slices.Delete(q, 0, n)
}

// start takes the next TLP, round robin over the ports, that can be
// accepted now. A port whose TLP must wait (its access log is full) keeps it
// — its link gets no credits back for that class — while other ports go on,
// and so do the port's later TLPs that may pass it (pcie.NextLane).
func (m *IOMMU) start(now sim.Tick) {
	for i := 0; i < len(m.ports); i++ {
		pi := (m.rr + i) % len(m.ports)
		p := m.ports[pi]
		if !p.in.Valid() {
			continue // (a lane's stalled flag is cleared when its head is taken)
		}
		if p.dataUntil > now {
			continue // still taking the previous TLP's payload
		}
		var j *job
		waited := false
		l := pcie.NextLane(p.in, func(l int, pkt *pcie.Packet) bool {
			var ok bool
			if j, ok = m.begin(pi, pkt, now); !ok {
				p.stalled[l], waited = true, true
			}
			return ok
		})
		if waited {
			m.stStallCycles.Inc()
		}
		if l < 0 {
			continue
		}
		p.stalled[l] = false
		j.p = p.in.RecvLane(l)
		if m.OnAccept != nil {
			m.OnAccept(pi, &j.p)
		}
		m.rr = (pi + 1) % len(m.ports)
		m.stTLPs.Inc()
		if m.pipelined() {
			m.enter(j, now)
			return
		}
		m.cur = j
		m.busyUntil = now + m.spec.ProcessPS + sim.Tick(j.accesses)*m.spec.MemAccessPS
		if m.spec.Bypass {
			m.busyUntil = now // forwarded at the next edge
		}
		m.hLatency.Observe(uint64((m.busyUntil - now) / sim.NS))
		return
	}
}

// pipelined reports whether TLPs go through the translation pipeline
// (Spec.Slots); a bypassed IOMMU forwards one a cycle whatever Slots says.
func (m *IOMMU) pipelined() bool { return m.spec.Slots > 0 && !m.spec.Bypass }

// canStart reports whether the IOMMU may take a TLP now: one at a time,
// or a free slot of the pipeline; and room for writes at the memory side.
func (m *IOMMU) canStart() bool {
	if m.pipelined() {
		return len(m.flight) < m.spec.Slots && m.memWritesFit()
	}
	return m.cur == nil && m.memWritesFit()
}

// enter puts a taken TLP into the pipeline: an IOTLB hit is done
// ProcessPS later; memory accesses (a walk, a log descriptor) wait for
// the first free walker and take MemAccessPS each; a port's TLPs are done
// in the order they were taken. A write's payload streams in over the
// port's data path from now (the port takes nothing else meanwhile).
func (m *IOMMU) enter(j *job, now sim.Tick) {
	done := now + m.spec.ProcessPS
	if j.accesses > 0 {
		w := 0
		for i, f := range m.walkerFree {
			if f < m.walkerFree[w] {
				w = i
			}
		}
		start := max(now, m.walkerFree[w])
		done = start + m.spec.ProcessPS + sim.Tick(j.accesses)*m.spec.MemAccessPS
		m.walkerFree[w] = done
	}
	done = max(done, m.portDone[j.port])
	m.portDone[j.port] = done
	j.doneAt, j.takenAt = done, now
	if t := &j.p.TLP; t.Kind == tlp.MWr && !j.irq {
		beats := (t.PayloadBytes() + m.spec.DataPathBytes - 1) / m.spec.DataPathBytes
		j.dataAt = now + sim.Tick(max(beats-1, 0))*m.u.Clock().Period()
		m.ports[j.port].dataUntil = j.dataAt
	}
	if t := &j.p.TLP; (t.Kind == tlp.MRd || t.Kind == tlp.MRdLk) && j.ls != nil && j.recData > 0 {
		m.tagPending++
	}
	if j.flush != nil && j.tr.fault == 0 && j.act.perform {
		m.startFlush(j)
	}
	m.flight = append(m.flight, j)
}

// finishFlight finishes, in the order they were taken, the TLPs of the
// pipeline that are done.
func (m *IOMMU) finishFlight(now sim.Tick) {
	k := 0
	for _, j := range m.flight {
		if j.doneAt > now {
			m.flight[k] = j
			k++
			continue
		}
		m.hLatency.Observe(uint64((now - j.takenAt) / sim.NS))
		if t := &j.p.TLP; (t.Kind == tlp.MRd || t.Kind == tlp.MRdLk) && j.ls != nil && j.recData > 0 {
			m.tagPending--
		}
		m.finish(j, now)
	}
	clear(m.flight[k:])
	m.flight = m.flight[:k]
}

// schedule says when the IOMMU next has work.
func (m *IOMMU) schedule(now sim.Tick) bool {
	if m.MemCpl != nil && m.MemCpl.Valid() {
		return true
	}
	for _, h := range m.host {
		if h.Valid() {
			return true
		}
	}
	next := sim.Never
	pending := m.memOut.Sendable(m.MemReq)
	for _, p := range m.ports {
		if p.queue.Sendable(p.out) {
			pending = true
		}
		if m.canStart() && p.dataUntil <= now && p.canTry() {
			pending = true
		}
		if p.dataUntil > now {
			next = min(next, p.dataUntil)
		}
	}
	if m.hostQueued > 0 {
		for _, h := range m.hostPaths {
			if len(h.queue) > 0 && h.out.Ready() {
				pending = true
			}
		}
	}
	if pending || (m.Irq != nil && len(m.irqOut) > 0 && m.Irq.Ready()) || (m.SP != nil && len(m.spOut) > 0 && m.SP.Ready()) {
		return true
	}
	if m.cur != nil {
		next = min(next, m.busyUntil)
	}
	for _, j := range m.flight {
		next = min(next, j.doneAt)
	}
	for _, d := range m.dataPhases {
		next = min(next, d.at)
	}
	if m.waitingOnHead() {
		next = min(next, m.nextPoll)
	}
	for _, t := range m.intervals {
		next = min(next, t.at)
	}
	if next != sim.Never {
		m.u.WakeAt(max(next, now+1))
	}
	return false
}

func (m *IOMMU) waitingOnHead() bool {
	if m.activeFlushes() > 0 {
		return true
	}
	return m.anyStalled()
}

// pollHeads re-reads the head of every log something waits on, every
// HeadPollPS: the consumer moves head in memory, the IOMMU only sees it by
// reading.
func (m *IOMMU) pollHeads(now sim.Tick) {
	if !m.waitingOnHead() {
		m.nextPoll = 0
		return
	}
	if m.nextPoll == 0 {
		m.nextPoll = now + m.spec.HeadPollPS
		return
	}
	if now < m.nextPoll {
		return
	}
	m.nextPoll = now + m.spec.HeadPollPS
	m.logs.Each(func(_ int, iuid uint16, v **logState) {
		ls := *v
		ls.head = m.mem.Load64(m.spec.LogTable + uint64(iuid)*logEntrySize + offHead)
		m.stHeadPolls.Inc()
	})
	for _, p := range m.ports {
		p.stalled = [3]bool{} // retry: start() decides again
	}
	m.releaseFlushes(now)
}

func (m *IOMMU) fireIntervals(now sim.Tick) {
	keep := m.intervals[:0]
	for _, t := range m.intervals {
		if t.at > now {
			keep = append(keep, t)
			continue
		}
		if v, _ := m.logs.Lookup(t.iuid); v != nil {
			ls := *v
			ls.timerSet = false
			if ls.tail > ls.notified {
				ls.notified = ls.tail
				m.sendMSI(ls.msiAddr, ls.msiData, 0)
				m.stLogMSIs.Inc()
			}
		}
	}
	m.intervals = keep
}
