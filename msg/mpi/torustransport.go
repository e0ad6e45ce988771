package mpi

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TorusConfig configures the transport over Blue Gene/L's message layer
// (seed 002, L81–L83: MPICH's device on the message layer).
type TorusConfig struct {
	// Machine is the Blue Gene/L machine the ranks run on (RunOn with
	// bgl.Host{M: Machine}); one rank a node, on its first core, or in
	// virtual node mode one a core (a task a core, L114).
	Machine *bgl.Machine
	// ML is the message layer's thresholds (zero: bglml.DefaultParams);
	// Costs its software's (zero: bglml.DefaultCosts).
	ML    bglml.Params
	Costs bglml.Costs
	// MPI is MPI's own per-message software beyond the MPI core's (its
	// call and matching costs), by the protocol a message takes (an RTS
	// counts as a rendezvous: MPI's rendezvous is RTS, get, data, FIN):
	// Send when the MPI core hands a message to the transport, Recv when
	// the transport hands one to the MPI core. Zero in the estimated
	// profile; TorusCosts gives the table1 profile's.
	MPI bglml.MessageCosts
	// Force sends every packet of the MPI core by this protocol (Table 1
	// measures each); Auto: the message layer chooses by size.
	Force bglml.Protocol
	// Progress is how each node's message layer makes progress (L94,
	// L111): Polling (the default), the rank's wait loop running the
	// advance loop; Thread, the communication thread on the coprocessor
	// (the machine in coprocessor mode), the rank posting to it and
	// reaping its completions in the scratchpad; Interrupts, the advance
	// loop in the reception interrupt's handler, a waiting rank halted
	// until an interrupt's handler did something.
	Progress bglml.Progress
	// Params: EagerLimit is MPI's eager limit (default: the message
	// layer's EagerMax); longer messages go by MPI's rendezvous, get mode
	// (the RTS is the scout, the get the grant and the adaptively routed
	// data); ChunkBytes the most one get moves (default 1 MB).
	Params Params
}

// Table1MPI is MPI's per-message remainder of Table 1 (the table1
// profile): for each protocol, Table 1's MPI half round trip less the
// model's with the message layer in the table1 profile, on Table 1's
// set-up (two neighbours, MPI's Send then Recv), split half to the sender,
// half to the receiver, then moved by a few tens of cycles where the wait
// loops' passes leave the paper's number between two reachable ones.
// Derived by
// internal/bglpaper's Calibrate; TestCalibration there fails if the
// model moves and these do not.
var Table1MPI = bglml.MessageCosts{
	Send: [4]int{237, 413, 3651, 6854},
	Recv: [4]int{216, 498, 3637, 7122},
}

// WithProfile is c with the message layer's and MPI's costs of profile p
// (Costs and MPI).
func (c TorusConfig) WithProfile(p bglml.CostProfile) TorusConfig {
	c.Costs = p.Costs()
	c.MPI = bglml.MessageCosts{}
	if p == bglml.Table1 {
		c.MPI = Table1MPI
	}
	return c
}

// MaxTorusPayload is the longest packet of the MPI core the transport
// takes (one message-layer message).
const MaxTorusPayload = 1 << 20

func (c TorusConfig) withDefaults() TorusConfig {
	if c.ML == (bglml.Params{}) {
		c.ML = bglml.DefaultParams()
	}
	if c.Costs == (bglml.Costs{}) {
		c.Costs = bglml.DefaultCosts()
	}
	c.Params = fillParams(c.Params, Params{EagerLimit: c.ML.EagerMax, Rendezvous: RendezvousGet, ChunkBytes: MaxTorusPayload, Pipeline: 1})
	return c
}

// Torus is the transport between the ranks of Blue Gene/L nodes (and of a
// rank to itself, a copy):
// each packet of the MPI core is one message of the node's message layer
// (its header the message's info, which the first packet carries), and a
// rendezvous's get is the message layer's get.
func Torus(cfg TorusConfig) TransportMaker {
	return func(s *Setup) (Transport, error) {
		cfg := cfg.withDefaults()
		if cfg.Machine == nil {
			return nil, fmt.Errorf("torus: no Blue Gene/L machine")
		}
		if err := cfg.Params.validate("torus", MaxTorusPayload); err != nil {
			return nil, err
		}
		if cfg.Params.Rendezvous != RendezvousGet {
			return nil, fmt.Errorf("torus: rendezvous mode %v: the message layer's rendezvous is the receiver's get", cfg.Params.Rendezvous)
		}
		if err := cfg.ML.Validate(); err != nil {
			return nil, err
		}
		// An eager message's envelope is EagerWords words; a one-packet
		// message must fit a packet with it and the layer's header.
		if most := torus.MaxPayload - bglml.FirstHeaderBytes - 8*EagerWords; cfg.Force == bglml.OnePacket && cfg.Params.EagerLimit > most {
			return nil, fmt.Errorf("torus: eager limit %d with every message in one packet (at most %d)", cfg.Params.EagerLimit, most)
		}
		if err := cfg.Costs.Validate(); err != nil {
			return nil, err
		}
		if err := cfg.MPI.Validate("mpi.costs.message"); err != nil {
			return nil, err
		}
		tasks := cfg.Machine.Spec.Mode.Tasks()
		seen := make([]int, len(cfg.Machine.Nodes)*tasks)
		for r, p := range s.Places {
			if p.Node < 0 || p.Node >= len(cfg.Machine.Nodes) {
				return nil, fmt.Errorf("torus: rank %d on node %d of %d", r, p.Node, len(cfg.Machine.Nodes))
			}
			if tasks == 1 && p.Core != 0 {
				return nil, fmt.Errorf("torus: rank %d on core %d of node %d (one rank a node, on core 0, in %v mode)", r, p.Core, p.Node, cfg.Machine.Spec.Mode)
			}
			if p.Core < 0 || p.Core >= tasks {
				return nil, fmt.Errorf("torus: rank %d on core %d of node %d", r, p.Core, p.Node)
			}
			if seen[p.Node*tasks+p.Core]++; seen[p.Node*tasks+p.Core] > 1 {
				if tasks == 1 {
					return nil, fmt.Errorf("torus: two ranks on node %d (one a node: coprocessor mode)", p.Node)
				}
				return nil, fmt.Errorf("torus: two ranks on core %d of node %d (one a core: virtual node mode)", p.Core, p.Node)
			}
		}
		t := &torusTransport{cfg: cfg, places: s.Places, tasks: tasks}
		if err := t.start(); err != nil {
			return nil, err
		}
		return t, nil
	}
}

type torusTransport struct {
	cfg    TorusConfig
	places []Place
	tasks  int // a node
	// eps are the endpoints made before the run (a communication thread
	// or an interrupt line is a block of the machine, added before it
	// runs); nil when polling, whose endpoints make their layer in Open.
	eps []*torusEP
}

// start makes, for the thread and interrupts, each rank's layer and
// starts its progress before the run.
func (t *torusTransport) start() error {
	how := t.cfg.Progress
	switch {
	case how == bglml.Polling:
		return nil
	case how > bglml.Interrupts:
		return fmt.Errorf("torus: progress %v (polling, thread, interrupts)", how)
	case how == bglml.Thread && t.cfg.Machine.Spec.Mode != bgl.CoprocessorMode:
		return fmt.Errorf("torus: progress thread on a machine in %v mode (the communication thread needs coprocessor mode)", t.cfg.Machine.Spec.Mode)
	case how == bglml.Interrupts && t.tasks > 1:
		return fmt.Errorf("torus: progress interrupts in virtual node mode (the virtual FIFOs raise no interrupt: polling)")
	case t.cfg.ML.Coprocessor:
		return fmt.Errorf("torus: progress %v with the rendezvous helper (bglml.Params.Coprocessor: polling only)", how)
	}
	for r := range t.places {
		ep, err := t.open(r, t.places[r])
		if err != nil {
			return err
		}
		if how == bglml.Thread {
			if ep.ct, err = ep.ml.StartCommThread(); err != nil {
				return err
			}
		} else if err := ep.ml.StartInterrupts(); err != nil {
			return err
		}
		t.eps = append(t.eps, ep)
	}
	return nil
}

// open makes rank r's endpoint and its layer.
func (t *torusTransport) open(r int, at Place) (*torusEP, error) {
	ep := &torusEP{t: t, nd: t.cfg.Machine.Nodes[at.Node], pool: map[int][]uint64{}}
	var ml *bglml.Layer
	var err error
	if t.tasks > 1 {
		ml, err = bglml.NewTask(t.cfg.Machine, t.task(r), t.cfg.ML, t.cfg.Costs, ep.upcall)
	} else {
		ml, err = bglml.New(t.cfg.Machine, at.Node, t.cfg.ML, t.cfg.Costs, ep.upcall)
	}
	if err != nil {
		return nil, err
	}
	ep.ml = ml
	return ep, nil
}

// task is rank r's address in the message layer: its node, or in virtual
// node mode its task (node × 2 + core).
func (t *torusTransport) task(r int) int { return t.places[r].Node*t.tasks + t.places[r].Core }

func (t *torusTransport) Name() string                { return "torus" }
func (t *torusTransport) Params() Params              { return t.cfg.Params }
func (t *torusTransport) Reaches(from, to Place) bool { return true }

func (t *torusTransport) Open(e Env) (Endpoint, error) {
	if t.eps != nil {
		ep := t.eps[e.Rank]
		ep.env = e
		return ep, nil
	}
	ep, err := t.open(e.Rank, e.Place)
	if err != nil {
		return nil, err
	}
	ep.env = e
	return ep, nil
}

type torusEP struct {
	t     *torusTransport
	env   Env
	nd    *bgl.Node
	ml    *bglml.Layer
	ct    *bglml.CommThread // Progress Thread: the layer runs on it
	ready []torusMsg        // completed messages, in completion order
	pool  map[int][]uint64
	gets  []bool // by handle: done

	// changed: a callback of the layer's ran since the last poll (a
	// message whole, a send's buffer free, a get's data in place); seen
	// is the layer's IrqStats.Worked then (Progress Interrupts).
	changed bool
	seen    uint64
	// owed counts the sends and gets posted to the thread whose
	// completion the rank has not reaped.
	owed int
}

// torusMsg is a received message: the MPI header and its data in a buffer
// of the endpoint's.
type torusMsg struct {
	h    Header
	addr uint64
	n    int
	self bool // a rank's message to itself: a copy, no message layer
}

// upcall is the message layer's upcall for a new message: its data goes
// into a buffer of the endpoint's, which the MPI core copies from (or, for
// a matched receive, into the user's buffer) when the message is whole.
func (e *torusEP) upcall(src int, info []byte, size int) (uint64, func()) {
	var w [HeaderWords]uint64
	for i := 0; i < len(info)/8; i++ {
		w[i] = binary.LittleEndian.Uint64(info[8*i:])
	}
	h := Unpack(&w)
	a := e.buf(size)
	return a, func() {
		e.ready = append(e.ready, torusMsg{h: h, addr: a, n: size})
		e.changed = true
	}
}

func (e *torusEP) buf(n int) uint64 {
	c := sizeClass(n)
	if l := e.pool[c]; len(l) > 0 {
		a := l[len(l)-1]
		e.pool[c] = l[:len(l)-1]
		return a
	}
	return e.nd.Alloc(c)
}

// free gives buf's buffer a of n bytes back to its size class.
func (e *torusEP) free(a uint64, n int) {
	c := sizeClass(n)
	e.pool[c] = append(e.pool[c], a)
}

func (e *torusEP) MaxPayload() int { return MaxTorusPayload }

func (e *torusEP) proc() *cpu.Proc { return e.env.Proc }

// Send posts the packet as a message of the message layer. The core's
// contract is that the data has been taken when Send returns: a message
// the layer could not write at once is copied into a buffer of the
// endpoint's (at the core's copy rate) and sent from there.
func (e *torusEP) Send(dst int, h *Header, src uint64, n int) bool {
	if dst == e.env.Rank {
		a := e.buf(n)
		e.copy(a, src, n)
		e.ready = append(e.ready, torusMsg{h: *h, addr: a, n: n, self: true})
		return true
	}
	w := h.Pack()
	words := HeaderWords
	if h.Kind == Eager {
		words = EagerWords
	}
	info := make([]byte, 8*words)
	for i := 0; i < words; i++ {
		binary.LittleEndian.PutUint64(info[8*i:], w[i])
	}
	if c := e.t.cfg.MPI.SendCost(e.protocol(h)); c > 0 {
		e.proc().Compute(c)
	}
	if e.ct != nil {
		e.postSend(dst, h, info, src, n)
		return true
	}
	sent := false
	m := &bglml.Message{Dst: e.t.task(dst), Info: info, Addr: src, Len: n, Proto: e.t.cfg.Force}
	var copyBuf uint64
	m.Done = func() {
		sent = true
		if copyBuf != 0 {
			e.free(copyBuf, n)
		}
	}
	if err := e.ml.Send(e.proc(), m); err != nil {
		panic(fmt.Sprintf("mpi: torus: %v", err))
	}
	e.kick()
	if !sent && n > 0 {
		copyBuf = e.buf(n)
		e.copy(copyBuf, src, n)
		m.Addr = copyBuf
	}
	return true
}

// protocol is the protocol a packet of the MPI core travels by, for
// MPI's per-message costs: an RTS is MPI's rendezvous; an eager message
// the layer's protocol for its size (both ends choose alike); the others
// (the FIN, a get's data) are a message's continuation and pay nothing.
func (e *torusEP) protocol(h *Header) bglml.Protocol {
	switch h.Kind {
	case RTS:
		return bglml.Rendezvous
	case Eager:
		if f := e.t.cfg.Force; f != bglml.Auto {
			return f
		}
		return e.ml.Choose(h.Len, 8*EagerWords)
	}
	return bglml.Auto
}

// postSend hands the packet to the communication thread. The thread
// sends it after Send has returned, so its data goes from a buffer of the
// endpoint's (a copy, whose lines Post writes back for the coprocessor);
// an RTS's send buffer, which this node's thread streams to the
// receiver's get, is written back from the main core's L1 first (the
// thread's core reads memory: the L1s are not coherent, L34).
func (e *torusEP) postSend(dst int, h *Header, info []byte, src uint64, n int) {
	p := e.proc()
	var a uint64
	if n > 0 {
		a = e.buf(n)
		e.copy(a, src, n)
	}
	if h.Kind == RTS && h.Size > 0 {
		p.Compute(bgl.Lines(h.Addr, h.Size) * e.t.cfg.Machine.Spec.FlushLineCycles)
	}
	m := &bglml.Message{Dst: e.t.task(dst), Info: info, Addr: a, Len: n, Proto: e.t.cfg.Force, Done: func() {
		if n > 0 {
			e.free(a, n)
		}
		e.owed--
		e.changed = true
	}}
	if err := e.ct.Post(p, m); err != nil {
		panic(fmt.Sprintf("mpi: torus: %v", err))
	}
	e.owed++
}

// kick, with the interrupt-driven layer, runs passes of the advance loop
// after a send or a get until one does nothing, as the handler does:
// what the FIFOs take is written, and what they do not waits for their
// room, which raises the line (the rank does not come back to write it).
func (e *torusEP) kick() {
	if e.ml.Interrupts() {
		for e.ml.Advance(e.proc()) {
		}
	}
}

// copy copies n bytes of the node's memory at the paper's rate.
func (e *torusEP) copy(dst, src uint64, n int) {
	if n == 0 {
		return
	}
	b := make([]byte, n)
	e.nd.Mem.Read(src, b)
	e.nd.Mem.Write(dst, b)
	e.proc().Compute(e.nd.PL.CopyCost(n))
}

// Poll runs one pass of the message layer's advance loop and hands the
// messages it completed to deliver.
// With the thread, the pass is a look at the scratchpad's completion
// words (CommThread.Reap); with interrupts, a look at what the handlers
// completed (a pass's software, Costs.Pass: the handlers run the advance
// loop).
func (e *torusEP) Poll(deliver func(h *Header, p Payload)) (int, bool) {
	switch {
	case e.ct != nil:
		return e.polled(e.ct.Reap(e.proc()), deliver)
	case e.ml.Interrupts():
		e.proc().Compute(e.t.cfg.Costs.Pass)
		return e.polled(e.handled(), deliver)
	}
	return e.polled(e.ml.Advance(e.proc()), deliver)
}

// handled reports whether the handlers (or the rank's own passes) did
// something since the last poll.
func (e *torusEP) handled() bool {
	w := e.ml.IrqStats.Worked
	did := e.changed || w != e.seen
	e.changed, e.seen = false, w
	return did
}

// SleepPoll is the wait loop's pause and Poll, dozing through the passes
// that would find nothing (bglml.Layer.SleepAdvance; with the thread,
// CommThread.SleepReap). With interrupts the rank halts instead of
// pausing, until a handler has done something (Layer.WaitInterrupts),
// then polls.
func (e *torusEP) SleepPoll(pause sim.Tick, deliver func(h *Header, p Payload)) (int, bool) {
	switch {
	case e.ct != nil:
		return e.polled(e.ct.SleepReap(e.proc(), pause), deliver)
	case e.ml.Interrupts():
		e.ml.WaitInterrupts(e.proc(), func() bool { return e.changed || e.ml.IrqStats.Worked != e.seen || len(e.ready) > 0 })
		return e.Poll(deliver)
	}
	return e.polled(e.ml.SleepAdvance(e.proc(), pause), deliver)
}

// ComputeSlice is, with interrupts, the cycles of the rank's computation
// between two points where an interrupt can be taken
// (bglml.ComputeSlice); 0 otherwise.
func (e *torusEP) ComputeSlice() int {
	if e.ml.Interrupts() {
		return bglml.ComputeSlice
	}
	return 0
}

// Passive reports whether the endpoint's Done and Poll change nothing
// until the thread or the handlers have done something, so that the
// rank's wait loop may doze (or halt) while a get of its is moving.
func (e *torusEP) Passive() bool { return e.ct != nil || e.ml.Interrupts() }

// polled hands the messages a pass completed to deliver.
func (e *torusEP) polled(worked bool, deliver func(h *Header, p Payload)) (int, bool) {
	n := 0
	for len(e.ready) > 0 {
		m := e.ready[0]
		e.ready = e.ready[1:]
		if c := e.t.cfg.MPI.RecvCost(e.protocol(&m.h)); c > 0 && !m.self {
			e.proc().Compute(c)
		}
		deliver(&m.h, Payload{Addr: m.addr, Len: m.h.Len})
		e.free(m.addr, m.n)
		n++
	}
	if worked {
		e.env.Moved()
	}
	return n, worked
}

func (e *torusEP) Put(int, uint64, uint64, int) (int, bool) {
	panic("mpi: torus: the message layer's rendezvous is a get")
}

// Get is the message layer's get: a grant to the sender's node, whose
// layer streams the data adaptively, each packet placed by its index.
func (e *torusEP) Get(src int, local, remote uint64, n int) (int, bool) {
	id := len(e.gets)
	e.gets = append(e.gets, false)
	if src == e.env.Rank {
		e.copy(local, remote, n)
		e.gets[id] = true
		return id, true
	}
	if e.ct != nil {
		e.postGet(id, src, local, remote, n)
		return id, true
	}
	if err := e.ml.Get(e.proc(), e.t.task(src), remote, local, n, func() { e.gets[id] = true; e.changed = true }); err != nil {
		panic(fmt.Sprintf("mpi: torus: %v", err))
	}
	e.kick()
	return id, true
}

// postGet hands a get to the communication thread. The thread writes
// whole L1 lines (it writes back what it received, the main core
// invalidates it: a line shared with the rank's other data would be
// written back over it), so a buffer that is not whole lines is received
// into one of the endpoint's and copied to its place by the main core.
func (e *torusEP) postGet(id, src int, local, remote uint64, n int) {
	p := e.proc()
	to, bounce := local, uint64(0)
	if n > 0 && (local%bgl.LineBytes != 0 || n%bgl.LineBytes != 0) {
		bounce = e.buf(n)
		to = bounce
	}
	done := func() {
		if bounce != 0 {
			e.copy(local, bounce, n)
			e.free(bounce, n)
		}
		e.gets[id] = true
		e.owed--
		e.changed = true
	}
	if err := e.ct.PostGet(p, e.t.task(src), remote, to, n, done); err != nil {
		panic(fmt.Sprintf("mpi: torus: %v", err))
	}
	e.owed++
}

// Done runs a pass of the advance loop if the get has not ended (what it
// completes waits for the next Poll); with the thread or interrupts it
// only looks (the get ends in their callbacks).
func (e *torusEP) Done(op int) (bool, error) {
	if !e.gets[op] && !e.Passive() && e.ml.Advance(e.proc()) {
		e.env.Moved()
	}
	return e.gets[op], nil
}

// Busy: with the thread, what the rank posted and has not reaped (the
// thread's layer runs on by itself).
func (e *torusEP) Busy() bool {
	if e.ct != nil {
		return e.owed > 0 || len(e.ready) > 0
	}
	return !e.ml.Idle() || len(e.ready) > 0
}

// RunTorus runs body as the program of one rank on each node of machine
// m, rank r on node nodeOf[r] (nil: rank r on node r, the XYZT order),
// over the torus transport (cfg.Transports and cfg.Place are set here).
// In virtual node mode there is a rank on each core, and nodeOf[r] is
// rank r's task, node × 2 + core (bgl.XYZTTasks, bgl.ReadMappingTasks;
// nil: XYZT).
func RunTorus(m *bgl.Machine, cfg Config, tc TorusConfig, nodeOf []int, body func(c *Comm)) (*Result, error) {
	tc.Machine = m
	cfg.Transports = []TransportMaker{Torus(tc)}
	tasks := m.Spec.Mode.Tasks()
	if nodeOf == nil && tasks > 1 {
		nodeOf = bgl.XYZTTasks(m.Torus.Spec.Dims, tasks)
	}
	if _, ok := cfg.Collectives.(BGL); ok && tc.Progress != bglml.Polling {
		// The tree, the deposit broadcast and the global barrier are run
		// by the rank's own passes of the layer.
		return nil, fmt.Errorf("mpi: Blue Gene/L's collectives (mpi.BGL) with progress %v: they run the layer on the main core (polling only; the collective network raises no interrupt)", tc.Progress)
	}
	if _, ok := cfg.Collectives.(BGL); ok {
		// BGL's collectives on MPI_COMM_WORLD use the collective network.
		if _, err := m.Collective(); err != nil {
			return nil, err
		}
	}
	cfg.Ranks = len(m.Nodes)
	if nodeOf != nil {
		cfg.Ranks = len(nodeOf)
	}
	cfg.Place = func(r int) Place {
		if nodeOf != nil {
			return Place{Node: nodeOf[r] / tasks, Core: nodeOf[r] % tasks}
		}
		return Place{Node: r}
	}
	return RunOn(bgl.Host{M: m}, cfg, body)
}
