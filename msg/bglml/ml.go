// Package bglml is Blue Gene/L's message layer (seed 002, L88–L141) on the
// packet layer of package bgl: active messages with non-blocking
// primitives and callbacks, an advance loop over a send queue, and the
// paper's four point-to-point protocols.
//
//   - one-packet: the message and its header in one deterministically
//     routed packet (L132);
//   - eager: deterministic routing and FIFO pinning keep a message's
//     packets in order, so only the first carries a header and the
//     receiver places the rest with an offset counter (L125–L129);
//   - rendezvous: an ordered scout, the receiver's grant, then the data
//     adaptively routed, every packet carrying its place (L133–L137);
//   - adaptive eager: every packet adaptive and placed by its index, and a
//     confirmation token per matched message that the sender waits for
//     before its next message to that receiver (L138–L141).
//
// Every step costs the core what the packet layer's operations cost (a
// status look, a peek, a read, a write, a copy) plus the software's own
// steps (Costs), which the paper does not give: each is an estimate of the
// routine's instructions, stated with Costs, not a value fitted to the
// paper's Table 1.
package bglml

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// Protocol is how a message travels.
type Protocol uint8

// The protocols; Auto chooses by size (Params).
const (
	Auto Protocol = iota
	OnePacket
	Eager
	AdaptiveEager
	Rendezvous
)

// Protocols is the four protocols in Table 1's order.
var Protocols = []Protocol{OnePacket, Eager, AdaptiveEager, Rendezvous}

func (p Protocol) String() string {
	switch p {
	case Auto:
		return "auto"
	case OnePacket:
		return "one-packet"
	case Eager:
		return "eager"
	case AdaptiveEager:
		return "adaptive-eager"
	case Rendezvous:
		return "rendezvous"
	}
	return fmt.Sprintf("protocol%d", uint8(p))
}

// ParseProtocol reads a protocol's name.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range append([]Protocol{Auto}, Protocols...) {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("protocol %q (one-packet, eager, adaptive-eager, rendezvous, auto)", s)
}

// Params choose a message's protocol by its size; the paper gives no
// thresholds (they are parameters to sweep).
type Params struct {
	// EagerMax: messages that do not fit one packet and have at most this
	// many bytes go eagerly; longer ones by rendezvous (default 1,200:
	// five full packets).
	EagerMax int
	// Adaptive sends the eager ones by adaptive eager.
	Adaptive bool
	// Batch is the most packets one pass of the advance loop reads, and
	// the most it writes (default 8).
	Batch int
	// Spin runs every pass of Until's advance loop, even those that can
	// only find the reception FIFOs empty again; by default such passes
	// are dozed through (cpu.Proc.Doze) with the same result to the byte.
	Spin bool
	// Interleave writes one packet of each send-queue entry in turn
	// (round-robin from where the last pass stopped) instead of an
	// entry's packets back to back: a node's packets then go to all its
	// destinations at once, over all its links (the optimised alltoall's
	// injection order, L156).
	Interleave bool
	// Pace, if not 0, is the least mean interval between the node's
	// message packets (a message's data, a rendezvous's scout and data;
	// not grants or tokens): the k-th is written no earlier than Pace × k
	// after the first, so that a node injects no faster than its share
	// of what the network drains (the optimised alltoall, AlltoallPace)
	// and catches up after a stall as far as its injection FIFOs take
	// it. A pass that meets the pace writes nothing more.
	Pace sim.Tick
	// PaceStrict writes each paced packet at least Pace after the node's
	// one before: a node held back (its FIFOs full, its core reading)
	// does not catch up.
	PaceStrict bool
	// Window, if not 0, clocks the paced packets (as Pace counts them) by
	// the node's own reception: the node writes one only while it has
	// written fewer than Window more than the message packets it has
	// read. In an exchange where every node sends as many packets as it
	// receives (an alltoall), a network that delivers slower than the
	// nodes inject shows at each node as reception falling behind its
	// writes, and the window holds the writes back to what is delivered
	// instead of filling the network (the optimised alltoall,
	// AlltoallWindow). A pass held by the window writes nothing more and
	// waits for a packet to read. Only for such exchanges: a node that
	// reads fewer message packets than it writes stops once it is
	// Window ahead.
	Window int
	// Coprocessor has the node's second core receive rendezvous (and
	// get) data into buffers of whole L1 lines (L135–L137): the grant
	// asks for the data in the second FIFO set, which the coprocessor's
	// permanent work unit reads; the node must be in coprocessor mode.
	Coprocessor bool
}

// Costs are the message layer's own software steps, in core cycles. The
// paper gives none of them; each is our estimate of the routine's
// instructions at about one a cycle (the PPC440 issues up to two, but
// this code is loads, compares and branches that depend on each other),
// with its L1-resident data.
type Costs struct {
	// Post: a non-blocking send: fill a message object (about ten
	// fields), choose the protocol, append it to the send queue (40).
	Post int
	// Pass: one pass of the advance loop: its loop, the send queue's
	// head checked (20).
	Pass int
	// Header: compose a packet's hardware and software headers before
	// its stores (destination, routing bits, type, source, place) (20).
	Header int
	// Dispatch: decode a received packet's software header and call its
	// type's handler through a table (30).
	Dispatch int
	// Lookup: find the message a packet belongs to (a per-source slot or
	// a small hash by message number) and advance its count (20).
	Lookup int
	// Upcall: call the upper layer with a new message's info to learn
	// where its data goes (30; the upper layer's work is its own).
	Upcall int
	// Callback: call a done() callback (15).
	Callback int
	// Message is the software a message pays once, by its protocol, on
	// top of the steps above: zero in the estimated profile, Table 1's
	// remainder in the table1 profile (CostProfile).
	Message MessageCosts
}

// MessageCosts are per-message software costs by protocol, indexed by
// Protocol − 1 (one-packet, eager, adaptive eager, rendezvous): Send on
// the sending core when the message is posted, Recv on the receiving core
// when its first packet (a rendezvous's scout) is matched, before the
// upcall.
type MessageCosts struct {
	Send, Recv [4]int
}

// SendCost is what posting a message of protocol p costs.
func (m MessageCosts) SendCost(p Protocol) int {
	if p < OnePacket || p > Rendezvous {
		return 0
	}
	return m.Send[p-1]
}

// RecvCost is what matching a message of protocol p costs.
func (m MessageCosts) RecvCost(p Protocol) int {
	if p < OnePacket || p > Rendezvous {
		return 0
	}
	return m.Recv[p-1]
}

// Validate names the first cost out of range; prefix is the key of the
// costs (bglml.costs.message).
func (m MessageCosts) Validate(prefix string) error {
	for _, side := range []struct {
		k string
		v [4]int
	}{{"send", m.Send}, {"recv", m.Recv}} {
		for i, v := range side.v {
			if v < 0 || v > 1<<20 {
				return fmt.Errorf("%s.%s.%s: %d out of range (0 to 2^20 cycles)", prefix, side.k, Protocols[i], v)
			}
		}
	}
	return nil
}

// CostProfile is where the layer's (and MPI's) per-message software
// costs come from: Estimated, our per-step estimates alone (the
// default); Table1, those plus the per-message remainder that makes the
// model's half round trips Table 1's (L171–L179), derived from the model
// itself (internal/bglpaper's calibration; its test recomputes them).
type CostProfile uint8

// The cost profiles.
const (
	Estimated CostProfile = iota
	Table1
)

// CostProfiles is every profile, the default first.
var CostProfiles = []CostProfile{Estimated, Table1}

func (c CostProfile) String() string {
	switch c {
	case Estimated:
		return "estimated"
	case Table1:
		return "table1"
	}
	return fmt.Sprintf("profile%d", uint8(c))
}

// ParseCostProfile reads a profile's name.
func ParseCostProfile(s string) (CostProfile, error) {
	for _, c := range CostProfiles {
		if c.String() == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("cost profile %q (estimated or table1)", s)
}

// Costs are the message layer's costs in profile c.
func (c CostProfile) Costs() Costs {
	d := DefaultCosts()
	if c == Table1 {
		d.Message = Table1Message
	}
	return d
}

// Table1Message is the message layer's per-message remainder of Table 1
// (the table1 profile): for each protocol, Table 1's message-layer half
// round trip less the model's with the estimated costs, on Table 1's
// set-up (bglml.PingPong, two neighbours), split half to the sender,
// half to the receiver, then moved by a few tens of cycles where the poll
// loops' passes leave the paper's number between two reachable ones.
// Derived by
// internal/bglpaper's Calibrate; TestCalibration there fails if the
// model's half round trips move and these do not.
var Table1Message = MessageCosts{
	Send: [4]int{571, 1095, 1354, 5305},
	Recv: [4]int{583, 1095, 1397, 5363},
}

// DefaultCosts are the estimates above.
func DefaultCosts() Costs {
	return Costs{Post: 40, Pass: 20, Header: 20, Dispatch: 30, Lookup: 20, Upcall: 30, Callback: 15}
}

// DefaultParams: eager up to 1,200 bytes, deterministic; 8 packets a pass.
func DefaultParams() Params { return Params{EagerMax: 1200, Batch: 8} }

// Validate names the first field out of range.
func (p Params) Validate() error {
	switch {
	case p.EagerMax < 0 || p.EagerMax > 1<<30:
		return fmt.Errorf("bglml.eager_max: %d out of range (0 to 2^30)", p.EagerMax)
	case p.Batch < 1 || p.Batch > 1024:
		return fmt.Errorf("bglml.batch: %d out of range (1 to 1024)", p.Batch)
	case p.Pace > sim.S:
		return fmt.Errorf("bglml.pace: %d ps out of range (0 to 1 s)", p.Pace)
	case p.Window < 0 || p.Window > 1<<20:
		return fmt.Errorf("bglml.window: %d out of range (0 to 2^20 packets)", p.Window)
	}
	return nil
}

// Validate names the first cost out of range.
func (c Costs) Validate() error {
	for _, f := range []struct {
		k string
		v int
	}{{"post", c.Post}, {"pass", c.Pass}, {"header", c.Header}, {"dispatch", c.Dispatch},
		{"lookup", c.Lookup}, {"upcall", c.Upcall}, {"callback", c.Callback}} {
		if f.v < 0 || f.v > 1<<20 {
			return fmt.Errorf("bglml.costs.%s: %d out of range (0 to 2^20 cycles)", f.k, f.v)
		}
	}
	return c.Message.Validate("bglml.costs.message")
}

// InfoMax is the most bytes of upper-layer information (MPI's envelope)
// a message carries in its first packet.
const InfoMax = 64

// MaxMessage is the longest message (1 GB): a packet's index has 24 bits.
const MaxMessage = 1 << 30

// Handler is the upcall for a new message (L122): the sending node, the
// upper layer's info and the message's size; it answers where the data
// goes in the node's memory and what to call once all of it is there.
type Handler func(src int, info []byte, size int) (addr uint64, done func())

// Message is a send: Len bytes at Addr of the node's memory to node Dst,
// with Info for the receiver's upcall. Done is called when the buffer may
// be used again.
type Message struct {
	Dst   int
	Info  []byte
	Addr  uint64
	Len   int
	Proto Protocol // Auto: by size
	Done  func()
	// Unordered says that the message need not arrive in order with the
	// others to Dst (the optimised alltoall sends one to each node): a
	// one-packet message is then routed adaptively, and an adaptive-eager
	// one takes no confirmation.
	Unordered bool
}

// Packet types, in the software header's first byte.
const (
	tOne        = 1 + iota // one-packet message
	tEagerFirst            // eager: the first packet, with the header
	tEagerData             // eager: the next ones, placed by the offset counter
	tAdaptive              // adaptive eager: any packet, placed by its index
	tScout                 // rendezvous: the request
	tGrant                 // rendezvous or get: the receiver asks for the data
	tData                  // rendezvous or get data, placed by its index
	tToken                 // adaptive eager: the confirmation
	tBcast                 // torus broadcast: a packet of a route, placed by its index
)

// FirstHeaderBytes is the message header at the start of a first
// packet's payload: size (4 bytes), the message's place among the
// sender's messages to this receiver (2, counting from 1 and wrapping; 0
// for a Message.Unordered one, which is matched as it comes), info length
// (1), flags (1).
const FirstHeaderBytes = 8

// hdrUnordered, in the header's flags, marks a Message.Unordered one: an
// adaptive-eager message then takes no confirmation.
const hdrUnordered = 1

const firstHdr = FirstHeaderBytes

// Layer is one node's message layer, run by one process (the node's main
// core): Send and Get post, Advance makes progress.
type Layer struct {
	fifos  int // normal injection FIFOs
	nd     *bgl.Node
	bs     *bgl.Spec
	nodes  []*bgl.Node
	params Params
	costs  Costs
	up     Handler
	plb    uint64 // an aligned buffer first packets are read into

	sendq  []*out
	msgq   [][]*out // per destination: its messages on the send queue, in order
	nextID uint16
	tokens []int // per destination: confirmations awaited
	// sendSeq is per destination the last message's place, recvSeq per
	// source the last one matched, held per source its first packets
	// that came before a message sent earlier (an adaptive-eager
	// message's first packet can overtake the deterministic messages sent
	// before it): the upcalls come in send order (MPI's matching order).
	sendSeq, recvSeq []uint16
	held             [][]heldFirst
	nheld            int
	grants           map[uint16]*Message // rendezvous sends waiting for their grant, by number

	eagerIn []*rx                // per source: its eager message under way
	adapt   map[uint32]*rx       // adaptive-eager messages by source and number
	rdv     map[uint16]*rx       // rendezvous and get data by our number
	early   map[uint32][]*staged // adaptive packets that came before their first
	nextRx  uint16
	bc      *bcast                   // the torus broadcast under way
	tree    *treeOp                  // the collective-network operation under way
	gbar    *gbarrier                // the global barrier under way
	bcEarly map[uint32][]bcastStaged // broadcast packets that came before their broadcast, by key
	vnEarly []*torus.Packet          // (virtual node mode, task 1) copy notices before its Bcast
	bcFwd   int                      // broadcast forwards queued
	full    []bool                   // injection FIFOs found full in this pass of the advance loop
	looks   int                      // looks at an injection FIFO's room in this pass
	rr      int                      // Interleave: the send-queue entry to write from next
	nfull   int                      // injection FIFOs found full in this pass
	pin     []int                    // per destination: its pinned FIFO (pinned)
	// queued is, per injection FIFO, the send-queue entries pinned to it
	// and nqueued the FIFOs with any: once that many are found full in a
	// pass (without Interleave), the rest of the send queue can write
	// nothing and costs nothing to skip.
	queued  [64]int
	nqueued int
	// dirs is, per destination, the FIFOs of the first links of minimal
	// routes there (spread), and queuedAny and nqueuedAny count the
	// entries by any of them: with Interleave, the stop's condition.
	dirs       [][3]uint8
	ndirs      []uint8
	queuedAny  [64]int
	nqueuedAny int
	meshed     bool // the torus has no wrap-around links
	// byFIFO is per injection FIFO the send-queue entries whose next
	// packet goes into it, in send-queue order (seq: an entry appended
	// takes the next number, one put first the one before the first), so
	// that the send half of a pass finds the next entry that can write
	// without stepping past those whose FIFO is full (nextWritable).
	byFIFO       [64][]*out
	seqLo, seqHi int64
	// Pacing (Params.Pace): the time the first paced packet was written
	// (paceN > 0), the paced packets written, and whether this pass met
	// the pace (its send half then stops).
	paceFrom  sim.Tick
	paceN     uint64
	paceFound bool
	// The reception window (Params.Window): the paced packets written,
	// the message packets read, and whether this pass met the window
	// (its send half then stops until a packet is read).
	winOut, winIn uint64
	winFound      bool
	// notified: the torus wakes the core Until runs on when a packet
	// arrives (so that it can doze).
	notified bool
	// Coprocessor mode: the second core's packet layer (FIFO set 1), the
	// transfers it has completed (visible to the main core from their
	// doneAt, in order), and the main core's unit to wake then.
	cpl    *bgl.PacketLayer
	ct     *CommThread // the communication thread that runs the layer (StartCommThread)
	irq    *irqLine    // the interrupt line that runs it on reception (StartInterrupts)
	masked int         // the layer is being run (its interrupt held off)
	coNext int         // the coprocessor's next FIFO to look at first
	coDone []*rx
	main   *sim.Unit

	// pl is the packet layer the layer reads and writes: the node's first
	// FIFO set, or in virtual node mode its task's set and the virtual
	// FIFOs to and from the other task (vnPort). self is the layer's
	// address (its node, or in virtual node mode its task: node × 2 +
	// core), tasks the tasks a node and ends the addresses.
	pl                port
	self, tasks, ends int

	Stats    Stats
	IrqStats IrqStats
}

// Stats counts what the layer did.
type Stats struct {
	Messages  [5]uint64 // sent, by protocol
	Packets   uint64    // written
	Read      uint64    // packets taken from the reception FIFOs
	Received  uint64    // messages completed
	Staged    uint64    // adaptive packets that arrived before their message's first
	Held      uint64    // first packets held for a message sent before theirs
	FullPolls uint64    // writes that found the FIFO full
	CoPackets uint64    // data packets the coprocessor received
	CoRecv    uint64    // transfers the coprocessor received
	// Copied counts the messages and gets received from the other task
	// of the node by copying from its memory (virtual node mode, L144).
	Copied uint64
	// ScanStops counts the passes whose send half stopped before the end
	// of the send queue, every FIFO it could write being full (work of
	// the simulator saved; nothing simulated changes).
	ScanStops uint64
	// Jumps counts the jumps of a pass's send half over entries that
	// could not write (nextWritable; nothing simulated changes).
	Jumps uint64
	// TreeOps counts the collective-network operations the node took part
	// in, TreePackets the results it read.
	TreeOps, TreePackets uint64
	// Barriers counts the global barriers the node took part in.
	Barriers uint64
	// Bcasts counts the torus broadcasts the node took part in,
	// BcastStaged their packets that came before it had posted theirs.
	Bcasts, BcastStaged uint64
}

// out is a send-queue entry: packets to one destination.
type out struct {
	forward  bool // a broadcast packet forwarded (Layer.Forwarding)
	dst      int
	message  bool // a message (gated by the tokens and the order to dst)
	n, next  int
	build    func(k int) *torus.Packet
	from     bgl.Source
	ready    bool          // may start (a rendezvous's data: its grant came)
	adaptive bool          // its packets are adaptively routed
	sent     func()        // after the last packet is written
	seq      int64         // its place in the send queue (increasing along it)
	in       int           // 1 + the FIFO of byFIFO it is in, 0 if none
	pk       *torus.Packet // its next packet, built for a look that found no room
}

// rx is a message being received.
type rx struct {
	src       int
	id        uint16
	addr      uint64
	size, got int
	first     int // data bytes in the first packet (adaptive eager)
	done      func()
	token     bool
	co        bool     // received by the coprocessor
	doneAt    sim.Tick // (co) its completion visible to the main core
}

// heldFirst is a first packet that came before a message sent earlier.
type heldFirst struct {
	t   byte
	id  uint16
	seq uint16
	pk  *torus.Packet
}

type staged struct {
	idx  int
	data []byte
}

// New makes the message layer of node i of machine m; up is its upcall
// for arriving messages.
func New(m *bgl.Machine, i int, params Params, costs Costs, up Handler) (*Layer, error) {
	if m.Spec.Mode == bgl.VirtualNodeMode {
		return nil, fmt.Errorf("bglml: node %d is in virtual node mode: a layer a task (NewTask)", i)
	}
	return newLayer(m, i, 0, params, costs, up)
}

// newLayer makes the layer of task t of node i.
func newLayer(m *bgl.Machine, i, t int, params Params, costs Costs, up Handler) (*Layer, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if err := costs.Validate(); err != nil {
		return nil, err
	}
	if i < 0 || i >= len(m.Nodes) {
		return nil, fmt.Errorf("bglml: node %d of %d", i, len(m.Nodes))
	}
	if len(m.Nodes) > 1<<16 {
		return nil, fmt.Errorf("bglml: %d nodes (the software header names at most 65,536)", len(m.Nodes))
	}
	nd, nodes := m.Nodes[i], m.Nodes
	if params.Coprocessor && nd.Co == nil {
		return nil, fmt.Errorf("bglml.coprocessor: node %d is in %v mode (coprocessor mode needed)", i, m.Spec.Mode)
	}
	tasks := m.Spec.Mode.Tasks()
	ends := len(nodes) * tasks
	if ends > 1<<16 {
		return nil, fmt.Errorf("bglml: %d tasks (the software header names at most 65,536)", ends)
	}
	l := &Layer{meshed: m.Spec.Torus.Mesh, fifos: m.Spec.Torus.InjFIFOs, full: make([]bool, m.Spec.Torus.InjFIFOs+tasks-1), nd: nd, bs: &m.Spec, nodes: nodes, params: params, costs: costs, up: up, plb: nd.Alloc(torus.MaxPacketBytes),
		pl: nd.PL, self: i*tasks + t, tasks: tasks, ends: ends,
		tokens: make([]int, ends), sendSeq: make([]uint16, ends), recvSeq: make([]uint16, ends), held: make([][]heldFirst, ends), msgq: make([][]*out, ends), grants: map[uint16]*Message{}, eagerIn: make([]*rx, ends),
		adapt: map[uint32]*rx{}, rdv: map[uint16]*rx{}, early: map[uint32][]*staged{}}
	if tasks > 1 {
		l.pl = newVNPort(nd, t, l.fifos, &m.Spec)
	}
	l.pin = make([]int, ends)
	l.dirs, l.ndirs = make([][3]uint8, ends), make([]uint8, ends)
	for d := range ends {
		if d != l.self {
			l.pin[d] = l.pinnedOf(d)
			l.dirs[d], l.ndirs[d] = l.spreadOf(d)
		}
	}
	if params.Coprocessor {
		l.cpl = nd.PLs[1]
		l.cpl.NotifyReceive(nd.Co.Core().Unit())
		// The rendezvous helper (L110): a permanent work unit that reads
		// the data packets of the second FIFO set.
		err := nd.Co.AddPermanent(&bgl.Permanent{Name: "rendezvous", LookCycles: m.Spec.StatusCycles,
			Ready: func() bool { return l.cpl.Seen() >= 0 }, Next: l.cpl.NextVisible, Run: l.coReceive})
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Params are the layer's thresholds.
func (l *Layer) Params() Params { return l.params }

// Choose is the protocol Auto gives a message of n bytes and info bytes
// of info.
func (l *Layer) Choose(n, info int) Protocol {
	switch {
	case firstHdr+info+n <= torus.MaxPayload:
		return OnePacket
	case n > l.params.EagerMax:
		return Rendezvous
	case l.params.Adaptive:
		return AdaptiveEager
	}
	return Eager
}

// Idle reports whether the layer has nothing to send and nothing under
// way (no grant, token or data awaited).
func (l *Layer) Idle() bool {
	if len(l.sendq) > 0 || l.nheld > 0 || len(l.grants) > 0 || len(l.adapt) > 0 || len(l.rdv) > 0 || l.bc != nil || l.tree != nil || l.gbar != nil || len(l.coDone) > 0 {
		return false
	}
	for _, t := range l.tokens {
		if t > 0 {
			return false
		}
	}
	for _, r := range l.eagerIn {
		if r != nil {
			return false
		}
	}
	return true
}

// pinned is the injection FIFO of the packets to dst: the one of the
// first link of the deterministic route there (x, then y, then z, the
// shorter way round in a torus, ties +; towards it in a mesh). One FIFO per destination keeps ordered
// packets in order (FIFO pinning, L101); one per direction keeps packets
// for different links from blocking each other at the heads of shared
// FIFOs. Adaptive packets take the same FIFO (any will do, L100).
func (l *Layer) pinned(dst int) int { return l.pin[dst] }

// pinnedOf computes pinned's FIFO.
func (l *Layer) pinnedOf(dst int) int {
	if l.peer(dst) {
		return l.fifos // the virtual FIFO to the other task
	}
	a, b := l.nd.Torus.At, l.coord(dst)
	dims := l.dims()
	for d := 0; d < 3; d++ {
		if a[d] == b[d] {
			continue
		}
		delta := b[d] - a[d]
		fwd := (delta + dims[d]) % dims[d]
		neg := 0
		if l.meshed && delta < 0 || !l.meshed && fwd > dims[d]-fwd {
			neg = 1
		}
		return (2*d + neg) % l.fifos
	}
	return 0
}

// spread is the injection FIFO of an adaptive packet with
// Params.Interleave: the k-th packet to dst takes the FIFO of the k-th
// (mod their number) of the first links of minimal routes there, so that
// a node's packets leave on all the links that lead towards their
// destinations rather than on the deterministic route's first (the
// optimised alltoall's even injection, L156).
func (l *Layer) spread(dst, k int) int {
	n := int(l.ndirs[dst])
	if n == 0 {
		return l.pin[dst] // the other task of the node
	}
	return int(l.dirs[dst][k%n])
}

// spreadOf computes the FIFOs spread takes in turn to dst.
func (l *Layer) spreadOf(dst int) (dirs [3]uint8, n uint8) {
	a, b := l.nd.Torus.At, l.coord(dst)
	dims := l.dims()
	for d := 0; d < 3; d++ {
		if a[d] == b[d] {
			continue
		}
		fwd := (b[d] - a[d] + dims[d]) % dims[d]
		neg := 0
		if l.meshed && b[d] < a[d] || !l.meshed && fwd > dims[d]-fwd {
			neg = 1
		}
		dirs[n] = uint8((2*d + neg) % l.fifos)
		n++
	}
	return dirs, n
}

// soft is a software header: type, source node, number, packet index.
func soft(t byte, src int, id uint16, idx int) (s [torus.SoftHeaderSize]byte) {
	s[0] = t
	binary.LittleEndian.PutUint16(s[1:], uint16(src))
	binary.LittleEndian.PutUint16(s[3:], id)
	s[5], s[6], s[7] = byte(idx), byte(idx>>8), byte(idx>>16)
	return s
}

func unsoft(s *[torus.SoftHeaderSize]byte) (t byte, src int, id uint16, idx int) {
	return s[0], int(binary.LittleEndian.Uint16(s[1:])), binary.LittleEndian.Uint16(s[3:]),
		int(s[5]) | int(s[6])<<8 | int(s[7])<<16
}

// first is a first packet's payload: the message header (seq: its place
// among the messages to its receiver, nextSeq), the info and up to room
// bytes of data from addr.
func (l *Layer) first(seq uint16, m *Message, n int) []byte {
	b := make([]byte, firstHdr+len(m.Info)+n)
	binary.LittleEndian.PutUint32(b, uint32(m.Len))
	binary.LittleEndian.PutUint16(b[4:], seq)
	b[6] = byte(len(m.Info))
	if m.Unordered {
		b[7] = hdrUnordered
	}
	copy(b[firstHdr:], m.Info)
	l.nd.Mem.Read(m.Addr, b[firstHdr+len(m.Info):])
	return b
}

func (l *Layer) data(addr uint64, n int) []byte {
	b := make([]byte, n)
	l.nd.Mem.Read(addr, b)
	return b
}

func (l *Layer) coord(i int) torus.Coord { return l.nodes[i/l.tasks].Torus.At }

// Send posts message m (non-blocking; m.Done is called when its buffer is
// free). A one-packet message is written at once if its FIFO has room and
// nothing is queued before it.
func (l *Layer) Send(p *cpu.Proc, m *Message) error {
	defer l.mask()()
	if err := l.validSend(m); err != nil {
		return err
	}
	proto := m.Proto
	if proto == Auto {
		proto = l.Choose(m.Len, len(m.Info))
	}
	if proto == Rendezvous && l.peer(m.Dst) {
		return l.sendCopy(p, m) // the virtual node mode protocol (L144)
	}
	l.Stats.Messages[proto]++
	if c := l.costs.Message.SendCost(proto); c > 0 {
		p.Compute(c)
	}
	from := bgl.FromCache
	if m.Len > torus.MaxPayload {
		from = bgl.FromMemory // assumed: a one-packet-sized message was just written, a longer one is in memory
	}
	dst := l.coord(m.Dst)
	room := torus.MaxPayload - firstHdr - len(m.Info)
	var seq uint16 // 0: unordered
	if !m.Unordered {
		seq = l.nextSeq(m.Dst)
	}
	switch proto {
	case OnePacket:
		o := &out{dst: m.Dst, message: true, n: 1, from: from, ready: true, sent: m.Done, adaptive: m.Unordered,
			build: func(int) *torus.Packet {
				return &torus.Packet{Dst: dst, Dynamic: m.Unordered, Soft: soft(tOne, l.self, 0, 0), Payload: l.first(seq, m, m.Len)}
			}}
		// No message object: the packet goes now if it can (L132).
		l.enqueue(o)
		l.clearFull() // a new call looks again
		if l.startable(o) && l.pushN(p, o, 1) == 1 {
			l.sendq = l.sendq[:len(l.sendq)-1]
			l.unqueued(o)
			l.msgq[o.dst] = l.msgq[o.dst][1:]
			l.finish(p, o)
			return nil
		}
		p.Compute(l.costs.Post)
	case Eager:
		p.Compute(l.costs.Post)
		n := 1 + max(0, (m.Len-min(room, m.Len)+torus.MaxPayload-1)/torus.MaxPayload)
		id := l.id()
		l.enqueue(&out{dst: m.Dst, message: true, n: n, from: from, ready: true, sent: m.Done,
			build: func(k int) *torus.Packet {
				if k == 0 {
					return &torus.Packet{Dst: dst, Soft: soft(tEagerFirst, l.self, id, 0), Payload: l.first(seq, m, min(room, m.Len))}
				}
				off := room + (k-1)*torus.MaxPayload
				return &torus.Packet{Dst: dst, Soft: soft(tEagerData, l.self, id, k),
					Payload: l.data(m.Addr+uint64(off), min(torus.MaxPayload, m.Len-off))}
			}})
	case AdaptiveEager:
		p.Compute(l.costs.Post)
		n := 1 + max(0, (m.Len-min(room, m.Len)+torus.MaxPayload-1)/torus.MaxPayload)
		id := l.id()
		done := m.Done
		l.enqueue(&out{dst: m.Dst, message: true, n: n, from: from, ready: true, adaptive: true,
			sent: func() {
				if !m.Unordered {
					l.tokens[m.Dst]++ // the next message to dst waits for the confirmation
				}
				if done != nil {
					done()
				}
			},
			build: func(k int) *torus.Packet {
				pk := &torus.Packet{Dst: dst, Dynamic: true, Soft: soft(tAdaptive, l.self, id, k)}
				if k == 0 {
					pk.Payload = l.first(seq, m, min(room, m.Len))
				} else {
					off := room + (k-1)*torus.MaxPayload
					pk.Payload = l.data(m.Addr+uint64(off), min(torus.MaxPayload, m.Len-off))
				}
				return pk
			}})
	case Rendezvous:
		p.Compute(l.costs.Post)
		id := l.id()
		l.grants[id] = m
		scout := *m
		scout.Len = 0
		l.enqueue(&out{dst: m.Dst, message: true, n: 1, from: bgl.FromCache, ready: true,
			build: func(int) *torus.Packet {
				pl := l.first(seq, &scout, 0)
				binary.LittleEndian.PutUint32(pl, uint32(m.Len))
				return &torus.Packet{Dst: dst, Soft: soft(tScout, l.self, id, 0), Payload: pl}
			}})
	default:
		return fmt.Errorf("bglml: protocol %v", proto)
	}
	return nil
}

// id numbers a message (never 0: a grant for number 0 is a get's).
// validSend is Send's refusals.
func (l *Layer) validSend(m *Message) error {
	if m.Dst < 0 || m.Dst >= l.ends || m.Dst == l.self {
		return fmt.Errorf("bglml: %s: send to %s %d (0 to %d, not itself)", l.name(), l.unit(), m.Dst, l.ends-1)
	}
	if len(m.Info) > InfoMax || m.Len < 0 || m.Len > MaxMessage {
		return fmt.Errorf("bglml: node %d: message of %d bytes with %d bytes of info (at most %d bytes and %d of info)", l.nd.Index, m.Len, len(m.Info), MaxMessage, InfoMax)
	}
	proto := m.Proto
	if proto == Auto {
		proto = l.Choose(m.Len, len(m.Info))
	}
	if proto == OnePacket && firstHdr+len(m.Info)+m.Len > torus.MaxPayload {
		return fmt.Errorf("bglml: node %d: a one-packet message of %d bytes and %d of info (at most %d together)",
			l.nd.Index, m.Len, len(m.Info), torus.MaxPayload-firstHdr)
	}
	return nil
}

// nextSeq numbers a message to dst: its place among the messages to dst
// (wrapping; 0 is skipped so that a zeroed header is never a place).
func (l *Layer) nextSeq(dst int) uint16 {
	if l.sendSeq[dst]++; l.sendSeq[dst] == 0 {
		l.sendSeq[dst] = 1
	}
	return l.sendSeq[dst]
}

func (l *Layer) id() uint16 {
	if l.nextID++; l.nextID == 0 {
		l.nextID = 1
	}
	return l.nextID
}

// enqueue appends message entry o to the send queue and to its
// destination's queue of messages.
func (l *Layer) enqueue(o *out) {
	l.queue(o)
	l.msgq[o.dst] = append(l.msgq[o.dst], o)
}

// queue appends o to the send queue.
func (l *Layer) queue(o *out) {
	l.sendq = append(l.sendq, o)
	l.queued1(o)
	l.seqHi++
	o.seq = l.seqHi
	l.index(o)
}

// queueFront puts o first in the send queue.
func (l *Layer) queueFront(o *out) {
	l.sendq = append([]*out{o}, l.sendq...)
	l.queued1(o)
	l.seqLo--
	o.seq = l.seqLo
	l.index(o)
}

// fifoOf is the injection FIFO of o's next packet (as pushN chooses it).
func (l *Layer) fifoOf(o *out) int {
	if l.params.Interleave && o.adaptive {
		return l.spread(o.dst, o.next)
	}
	return l.pinned(o.dst)
}

// index puts queued entry o into byFIFO under its next packet's FIFO.
func (l *Layer) index(o *out) {
	f := l.fifoOf(o)
	s := l.byFIFO[f]
	k := sort.Search(len(s), func(j int) bool { return s[j].seq > o.seq })
	s = append(s, nil)
	copy(s[k+1:], s[k:])
	s[k] = o
	l.byFIFO[f] = s
	o.in = f + 1
}

// unindex takes o out of byFIFO.
func (l *Layer) unindex(o *out) {
	if o.in == 0 {
		return
	}
	f := o.in - 1
	s := l.byFIFO[f]
	k := sort.Search(len(s), func(j int) bool { return s[j].seq >= o.seq })
	if k == len(s) || s[k] != o {
		panic(fmt.Sprintf("bglml: node %d: send-queue entry %d not under FIFO %d", l.nd.Index, o.seq, f))
	}
	l.byFIFO[f] = append(s[:k], s[k+1:]...)
	o.in = 0
}

// nextWritable is, for the send half of a pass at send-queue entry i
// with r steps left, how many steps on (fewer than r; cyclically if wrap,
// as Interleave's round goes) the first entry is that a step would write
// or look for: startable, its next packet's FIFO not found full in this
// pass; −1 if none. The steps before it do nothing (pushN stops at a
// FIFO found full before any cost), so the pass may jump there: what the
// whole walk would do, without stepping past every entry whose FIFO is
// full.
func (l *Layer) nextWritable(i, r int, wrap bool) int {
	n := len(l.sendq)
	s0 := l.sendq[i].seq
	var best *out
	bestKey := uint64(0)
	for f := range l.full { // the torus's FIFOs and, in virtual node mode, the virtual one
		s := l.byFIFO[f]
		if l.full[f] || len(s) == 0 {
			continue
		}
		k0 := sort.Search(len(s), func(j int) bool { return s[j].seq >= s0 })
		m := len(s)
		if !wrap {
			m -= k0
		}
		for j := 0; j < m; j++ {
			o := s[(k0+j)%len(s)]
			key := uint64(o.seq - s0) // entries before i wrap to the top
			if best != nil && key >= bestKey {
				break // later in the walk than the best one found
			}
			if l.startable(o) {
				best, bestKey = o, key
				break
			}
		}
	}
	if best == nil {
		return -1
	}
	j := sort.Search(n, func(k int) bool { return l.sendq[k].seq >= best.seq })
	if d := (j - i + n) % n; d < r {
		return d
	}
	return -1
}

// queued1 counts o on the send queue for its pinned FIFO, and for every
// FIFO spread may give it.
func (l *Layer) queued1(o *out) {
	f := l.pinned(o.dst)
	if l.queued[f]++; l.queued[f] == 1 {
		l.nqueued++
	}
	l.countAny(o.dst, f, 1)
}

// unqueued uncounts o, off the send queue.
func (l *Layer) unqueued(o *out) {
	f := l.pinned(o.dst)
	if l.queued[f]--; l.queued[f] == 0 {
		l.nqueued--
	}
	l.countAny(o.dst, f, -1)
}

// countAny adds by to queuedAny of each distinct FIFO among dst's pinned
// one and its spread ones.
func (l *Layer) countAny(dst, pinned, by int) {
	var seen [64]bool
	add := func(f int) {
		if seen[f] {
			return
		}
		seen[f] = true
		before := l.queuedAny[f]
		l.queuedAny[f] += by
		switch {
		case before == 0 && l.queuedAny[f] > 0:
			l.nqueuedAny++
		case before > 0 && l.queuedAny[f] == 0:
			l.nqueuedAny--
		}
	}
	add(pinned)
	for k := 0; k < int(l.ndirs[dst]); k++ {
		add(int(l.dirs[dst][k]))
	}
}

// remove takes entry i (all written) off the send queue.
func (l *Layer) remove(i int) {
	o := l.sendq[i]
	l.sendq = append(l.sendq[:i], l.sendq[i+1:]...)
	l.unqueued(o)
	l.unindex(o)
	if o.message {
		l.msgq[o.dst] = l.msgq[o.dst][1:]
	}
}

// startable reports whether o may write its next packet now: its data
// was granted, and a message waits for the confirmations awaited from its
// destination and for the messages queued before it to the same
// destination (so that messages match in order).
func (l *Layer) startable(o *out) bool {
	if !o.ready {
		return false
	}
	if !o.message || o.next > 0 {
		return true
	}
	if l.tokens[o.dst] > 0 {
		return false
	}
	return l.msgq[o.dst][0] == o
}

// pushN writes o's packets while its FIFO has room, up to budget
// packets; it returns the packets written.
//
// A look at a FIFO's room comes first; a FIFO found without room is not
// looked at again in the same pass of the advance loop (full), so that a
// long send queue blocked on a few FIFOs costs a look a FIFO, not a look
// an entry.
func (l *Layer) pushN(p *cpu.Proc, o *out, budget int) int {
	n := 0
	paced := l.params.Pace > 0 && (o.message || o.adaptive)
	windowed := l.params.Window > 0 && (o.message || o.adaptive)
	for o.next < o.n && n < budget {
		fifo := l.pinned(o.dst)
		if l.params.Interleave && o.adaptive {
			fifo = l.spread(o.dst, o.next)
		}
		if l.full[fifo] {
			break
		}
		// (After the FIFO found full: the pass stops at the first entry
		// that could write, whether it goes entry by entry or jumps.)
		if paced && l.paceN > 0 && p.Now() < l.paceAt() {
			l.paceFound = true
			break
		}
		if windowed && l.winOut >= l.winIn+uint64(l.params.Window) {
			l.winFound = true
			break
		}
		// A packet built for a look that found no room is kept for the
		// next look: its data is the sender's buffer, which is not
		// written before the message's done() (nor a control packet's).
		pk := o.pk
		if pk == nil {
			pk = o.build(o.next)
			o.pk = pk
		}
		l.looks++
		if l.tasks > 1 {
			pk.Group = uint8(o.dst % l.tasks) // the destination task's FIFO set
		}
		room, err := l.pl.Room(p, fifo)
		if err == nil && room < pk.Chunks() {
			l.full[fifo] = true
			l.nfull++
			l.Stats.FullPolls++
			break
		}
		p.Compute(l.costs.Header)
		if err == nil {
			err = l.pl.Store(p, fifo, pk, o.from)
		}
		if err != nil {
			panic(fmt.Sprintf("bglml: node %d: %v", l.nd.Index, err))
		}
		l.Stats.Packets++
		if paced {
			if l.paceN == 0 || l.params.PaceStrict {
				l.paceFrom, l.paceN = p.Now(), 0
			}
			l.paceN++
		}
		if windowed {
			l.winOut++
		}
		o.pk = nil
		if o.in != 0 {
			l.unindex(o)
			o.next++
			if o.next < o.n {
				l.index(o)
			}
		} else {
			o.next++
		}
		n++
	}
	return n
}

// paceAt is the earliest time the next paced packet may be written.
func (l *Layer) paceAt() sim.Tick { return l.paceFrom + sim.Tick(l.paceN)*l.params.Pace }

// finish ends an entry whose packets are all written.
func (l *Layer) finish(p *cpu.Proc, o *out) {
	if o.forward {
		l.bcFwd-- // the layer's own count, no callback
	}
	if o.sent != nil {
		p.Compute(l.costs.Callback)
		o.sent()
	}
}

// control sends a one-packet control message (a grant, a token) now if
// its FIFO has room, else queues it.
func (l *Layer) control(p *cpu.Proc, dst int, pk *torus.Packet) {
	o := &out{dst: dst, n: 1, from: bgl.FromCache, ready: true, build: func(int) *torus.Packet { return pk }}
	if l.pushN(p, o, 1) == 0 {
		if l.params.Interleave {
			// A round writes a packet of every entry: it comes in turn.
			l.queue(o)
			return
		}
		// First in the send queue: behind a long stream of data to the
		// same FIFO (whose entry takes the FIFO's room first in every
		// pass) it would wait for all of it.
		l.queueFront(o)
	}
}

// Get asks node src for n bytes at remote in its memory, to be placed at
// local here; done is called when they all are. The request is a grant
// packet; src's layer streams the data adaptively (as a rendezvous's).
func (l *Layer) Get(p *cpu.Proc, src int, remote, local uint64, n int, done func()) error {
	defer l.mask()()
	if src < 0 || src >= l.ends || src == l.self || n < 0 || n > MaxMessage {
		return fmt.Errorf("bglml: %s: get of %d bytes from %s %d", l.name(), n, l.unit(), src)
	}
	if l.peer(src) {
		return l.getCopy(p, src, remote, local, n, done) // L144's copy
	}
	p.Compute(l.costs.Post)
	r := &rx{src: src, addr: local, size: n, done: done}
	rid := l.rxID(r)
	l.toCoprocessor(p, r)
	l.grant(p, src, 0, r, remote, n)
	if n == 0 {
		l.complete(p, r)
		delete(l.rdv, rid)
	}
	return nil
}

func (l *Layer) rxID(r *rx) uint16 {
	for {
		l.nextRx++
		if _, used := l.rdv[l.nextRx]; !used && l.nextRx != 0 {
			r.id = l.nextRx
			l.rdv[l.nextRx] = r
			return l.nextRx
		}
	}
}

// toCoprocessor decides whether the coprocessor receives transfer r: in
// coprocessor mode, a buffer of whole L1 lines (L137: aligned, contiguous,
// so that no line is shared with data the main core writes). The main
// core writes the transfer's record into the scratchpad.
func (l *Layer) toCoprocessor(p *cpu.Proc, r *rx) {
	if !l.params.Coprocessor || r.size == 0 || r.addr%bgl.LineBytes != 0 || r.size%bgl.LineBytes != 0 {
		return
	}
	r.co = true
	p.Compute(2 * l.bs.ScratchpadCycles) // the record: where and how much
}

// grant sends a grant: for the sender's rendezvous message id, or (id 0)
// for n bytes at addr; the data comes back numbered r.id, into the FIFO
// set of the core that receives it.
func (l *Layer) grant(p *cpu.Proc, to int, id uint16, r *rx, addr uint64, n int) {
	pl := make([]byte, 16)
	binary.LittleEndian.PutUint16(pl, r.id)
	if r.co {
		pl[2] = 1
	}
	binary.LittleEndian.PutUint32(pl[4:], uint32(n))
	binary.LittleEndian.PutUint64(pl[8:], addr)
	l.control(p, to, &torus.Packet{Dst: l.coord(to), Soft: soft(tGrant, l.self, id, 0), Payload: pl})
}

// Advance is one pass of the advance loop (L94): read what has arrived
// (up to Batch packets, each dispatched by its type), then write what the
// send queue holds while the FIFOs take it (up to Batch packets). It
// reports whether it did anything.
func (l *Layer) Advance(p *cpu.Proc) bool {
	defer l.mask()()
	if l.cpl != nil {
		// and a look at the scratchpad's completion words, which the
		// pass reads with the FIFOs' status
		p.Compute(l.costs.Pass + l.bs.ScratchpadCycles)
	} else {
		p.Compute(l.costs.Pass)
	}
	l.clearFull()
	l.looks = 0
	return l.afterLook(p, l.pl.Pending(p))
}

// afterLook is the rest of a pass once its first look at the reception
// FIFOs found f (−1: none).
func (l *Layer) afterLook(p *cpu.Proc, f int) bool {
	did := l.coComplete(p)
	if l.treeStep(p) {
		did = true
	}
	if l.barrierStep(p) {
		did = true
	}
	for k := 0; k < l.params.Batch; k++ {
		if k > 0 {
			f = l.pl.Pending(p)
		}
		if f < 0 {
			break
		}
		l.receive(p, f)
		did = true
	}
	if l.params.Interleave {
		return l.interleave(p) || did
	}
	budget := l.params.Batch
	for i := 0; i < len(l.sendq) && budget > 0 && !l.paceFound && !l.winFound; i++ {
		if l.nfull >= l.nqueued && !scanAll {
			l.Stats.ScanStops++
			break
		}
		if !scanAll {
			// Jump over the entries that cannot write (nothing happens
			// at them) to the next that can.
			d := l.nextWritable(i, len(l.sendq)-i, false)
			if d < 0 {
				l.Stats.Jumps++
				break
			}
			if d > 0 {
				l.Stats.Jumps++
			}
			i += d
		}
		o := l.sendq[i]
		if !l.startable(o) {
			continue
		}
		w := l.pushN(p, o, budget)
		budget -= w
		if w > 0 {
			did = true
		}
		if o.next == o.n {
			l.remove(i)
			i--
			l.finish(p, o)
		}
	}
	return did
}

// scanAll makes the send half of a pass look at every entry of the send
// queue even when every FIFO it could write is full (the equivalence
// test's reference).
var scanAll = false

// interleave is the send half of a pass with Params.Interleave: one
// packet of each startable entry in turn, from entry rr on, up to Batch
// packets, once round the queue at most.
func (l *Layer) interleave(p *cpu.Proc) bool {
	did := false
	budget := l.params.Batch
	n := len(l.sendq)
	if l.rr >= n {
		l.rr = 0
	}
	i := l.rr
	for left := n; left > 0 && budget > 0 && len(l.sendq) > 0 && l.nfull < len(l.full) && !l.paceFound && !l.winFound; left-- {
		if l.nfull >= l.nqueuedAny && !scanAll {
			// Every FIFO an entry could write is full: the rest of the
			// round would only step past the entries, to where it ends.
			l.Stats.ScanStops++
			i = (i + left) % len(l.sendq)
			break
		}
		if !scanAll {
			// Jump over the entries that cannot write (nothing happens at
			// them) to the next that can, or to the round's end.
			d := l.nextWritable(i, left, true)
			if d < 0 {
				l.Stats.Jumps++
				i = (i + left) % len(l.sendq)
				break
			}
			if d > 0 {
				l.Stats.Jumps++
			}
			i = (i + d) % len(l.sendq)
			left -= d
		}
		o := l.sendq[i]
		i++
		if l.startable(o) && l.pushN(p, o, 1) == 1 {
			budget--
			did = true
			if o.next == o.n {
				i--
				l.remove(i)
				l.finish(p, o)
			}
		} else if l.paceFound || l.winFound {
			i-- // the entry that met the pace (or window) goes first in the next round
		}
		if i >= len(l.sendq) {
			i = 0
		}
	}
	l.rr = i
	return did
}

// receive takes the packet at the head of reception FIFO f: a peek at its
// header says what it is and where its data goes, then it is read there.
func (l *Layer) receive(p *cpu.Proc, f int) {
	hd, err := l.pl.Peek(p, f)
	if err != nil || hd == nil {
		panic(fmt.Sprintf("bglml: node %d: FIFO %d: %v", l.nd.Index, f, err))
	}
	l.Stats.Read++
	p.Compute(l.costs.Dispatch)
	t, src, id, idx := unsoft(&hd.Soft)
	switch t {
	case tOne, tEagerFirst, tEagerData, tAdaptive, tScout, tData:
		l.winIn++ // a packet its sender paced (Params.Window)
	}
	switch t {
	case tEagerData:
		p.Compute(l.costs.Lookup)
		r := l.eagerIn[src]
		if r == nil {
			panic(fmt.Sprintf("bglml: node %d: eager data from node %d with no message under way", l.nd.Index, src))
		}
		l.place(p, f, r, r.got)
		if r.got == r.size {
			l.eagerIn[src] = nil
			l.complete(p, r)
		}
	case tData:
		p.Compute(l.costs.Lookup)
		r := l.rdv[id]
		if r == nil {
			panic(fmt.Sprintf("bglml: node %d: data for unknown transfer %d from node %d", l.nd.Index, id, src))
		}
		l.place(p, f, r, idx*torus.MaxPayload)
		if r.got == r.size {
			delete(l.rdv, id)
			l.complete(p, r)
		}
	case tAdaptive:
		p.Compute(l.costs.Lookup)
		key := uint32(src)<<16 | uint32(id)
		r := l.adapt[key]
		if idx > 0 {
			if r == nil {
				// Before its first packet: nowhere to put it yet, so it
				// is read into memory of the layer's, to be copied later
				// (the copies reordering costs, L53).
				pk := l.read(p, f)
				l.Stats.Staged++
				l.early[key] = append(l.early[key], &staged{idx: idx, data: pk.Payload})
				return
			}
			l.place(p, f, r, r.first+(idx-1)*torus.MaxPayload)
			if r.got == r.size {
				delete(l.adapt, key)
				l.complete(p, r)
			}
		} else {
			l.firstIn(p, t, src, id, l.read(p, f))
		}
	case tOne, tEagerFirst, tScout:
		l.firstIn(p, t, src, id, l.read(p, f))
	case tGrant:
		pk := l.read(p, f)
		rid := binary.LittleEndian.Uint16(pk.Payload)
		group := pk.Payload[2]
		n := int(binary.LittleEndian.Uint32(pk.Payload[4:]))
		addr := binary.LittleEndian.Uint64(pk.Payload[8:])
		var sent func()
		if id != 0 {
			p.Compute(l.costs.Lookup)
			m := l.grants[id]
			if m == nil {
				panic(fmt.Sprintf("bglml: node %d: grant for unknown message %d from node %d", l.nd.Index, id, src))
			}
			delete(l.grants, id)
			addr, n, sent = m.Addr, m.Len, m.Done
		}
		l.stream(src, rid, group, addr, n, sent)
	case tBcast:
		l.onBcast(p, f, uint32(src)|uint32(id)<<16, idx)
	case tVNAddr, tVNFree, tVNGet, tVNFlushed, tVNBcast, tVNBcastDone:
		l.onVirtual(p, f, t, src, id)
	case tToken:
		l.pl.Read(p, f, true)
		p.Compute(l.costs.Lookup)
		l.tokens[src]--
	default:
		panic(fmt.Sprintf("bglml: node %d: packet of type %d from node %d", l.nd.Index, t, src))
	}
}

// firstIn takes a message's first packet pk (read): matched now if every
// message src sent before it to this task has been, else held until they
// are. Only an adaptive-eager message's first packet can come early (the
// others are deterministically routed through one FIFO, in order, and the
// message after an adaptive-eager one waits for its confirmation, L140),
// so a held packet is never followed by packets that need it matched.
func (l *Layer) firstIn(p *cpu.Proc, t byte, src int, id uint16, pk *torus.Packet) {
	seq := binary.LittleEndian.Uint16(pk.Payload[4:])
	if seq == 0 { // Message.Unordered: no place among the others
		l.match(p, t, src, id, pk)
		return
	}
	if seq != nextPlace(l.recvSeq[src]) {
		// Out of the packet buffer into memory of the layer's, as an
		// early adaptive packet is (the copies reordering costs, L53).
		p.Compute(l.pl.CopyCost(len(pk.Payload)))
		l.held[src] = append(l.held[src], heldFirst{t: t, id: id, seq: seq, pk: pk})
		l.nheld++
		l.Stats.Held++
		return
	}
	for {
		l.recvSeq[src] = seq
		l.match(p, t, src, id, pk)
		seq = nextPlace(seq)
		k := 0
		for k < len(l.held[src]) && l.held[src][k].seq != seq {
			k++
		}
		if k == len(l.held[src]) {
			return
		}
		h := l.held[src][k]
		l.held[src] = append(l.held[src][:k], l.held[src][k+1:]...)
		l.nheld--
		p.Compute(l.costs.Lookup)
		t, id, pk = h.t, h.id, h.pk
	}
}

// protocolOf is the protocol of a message whose first packet has type t.
func protocolOf(t byte) Protocol {
	switch t {
	case tOne:
		return OnePacket
	case tEagerFirst:
		return Eager
	case tAdaptive:
		return AdaptiveEager
	case tScout:
		return Rendezvous
	}
	return Auto
}

// nextPlace is the place after seq (nextSeq's).
func nextPlace(seq uint16) uint16 {
	if seq++; seq == 0 {
		seq = 1
	}
	return seq
}

// match starts receiving the message whose first packet is pk (its turn
// come): the upcall, and what its protocol does then.
func (l *Layer) match(p *cpu.Proc, t byte, src int, id uint16, pk *torus.Packet) {
	if c := l.costs.Message.RecvCost(protocolOf(t)); c > 0 {
		p.Compute(c)
	}
	switch t {
	case tAdaptive:
		key := uint32(src)<<16 | uint32(id)
		r := l.open(p, src, pk.Payload)
		r.token = pk.Payload[7]&hdrUnordered == 0 // an unordered one needs no confirmation
		r.id = id
		l.adapt[key] = r
		for _, s := range l.early[key] {
			off := r.first + (s.idx-1)*torus.MaxPayload
			p.Compute(l.pl.CopyCost(len(s.data)))
			l.nd.Mem.Write(r.addr+uint64(off), s.data)
			r.got += len(s.data)
		}
		delete(l.early, key)
		if r.got == r.size {
			delete(l.adapt, key)
			l.complete(p, r)
		}
	case tOne, tEagerFirst:
		r := l.open(p, src, pk.Payload)
		if r.got < r.size {
			if t == tOne {
				panic(fmt.Sprintf("bglml: node %d: a one-packet message from node %d short of its size", l.nd.Index, src))
			}
			if l.eagerIn[src] != nil {
				panic(fmt.Sprintf("bglml: node %d: a second eager message from node %d before the first ended", l.nd.Index, src))
			}
			l.eagerIn[src] = r
			return
		}
		l.complete(p, r)
	case tScout:
		size := int(binary.LittleEndian.Uint32(pk.Payload))
		info := pk.Payload[firstHdr : firstHdr+int(pk.Payload[6])]
		p.Compute(l.costs.Upcall)
		addr, done := l.up(src, info, size)
		r := &rx{src: src, addr: addr, size: size, done: done}
		rid := l.rxID(r)
		l.toCoprocessor(p, r)
		l.grant(p, src, id, r, 0, size)
		if size == 0 {
			delete(l.rdv, rid)
			l.complete(p, r)
		}
	case tVNAddr:
		l.matchCopy(p, src, id, pk)
	}
}

// stream queues the data of a rendezvous or a get: n bytes at addr to
// node dst, adaptively routed, each packet numbered for rid and placed by
// its index.
func (l *Layer) stream(dst int, rid uint16, group uint8, addr uint64, n int, sent func()) {
	if n == 0 {
		if sent != nil {
			sent()
		}
		return
	}
	to := l.coord(dst)
	l.queue(&out{dst: dst, n: (n + torus.MaxPayload - 1) / torus.MaxPayload, from: bgl.FromMemory, ready: true, adaptive: true, sent: sent,
		build: func(k int) *torus.Packet {
			off := k * torus.MaxPayload
			return &torus.Packet{Dst: to, Dynamic: true, Group: group, Soft: soft(tData, l.self, rid, k),
				Payload: l.data(addr+uint64(off), min(torus.MaxPayload, n-off))}
		}})
}

// read reads the packet at the head of FIFO f into the layer's aligned
// packet buffer.
func (l *Layer) read(p *cpu.Proc, f int) *torus.Packet {
	pk, err := l.pl.Read(p, f, true)
	if err != nil || pk == nil {
		panic(fmt.Sprintf("bglml: node %d: FIFO %d: %v", l.nd.Index, f, err))
	}
	l.nd.Mem.Write(l.plb, pk.Payload)
	return pk
}

// open starts receiving the message whose first packet's payload is pl:
// the upcall says where it goes, and the first packet's data is copied
// there from the packet buffer.
func (l *Layer) open(p *cpu.Proc, src int, pl []byte) *rx {
	size := int(binary.LittleEndian.Uint32(pl))
	ni := int(pl[6])
	info := pl[firstHdr : firstHdr+ni]
	p.Compute(l.costs.Upcall)
	addr, done := l.up(src, info, size)
	data := pl[firstHdr+ni:]
	r := &rx{src: src, addr: addr, size: size, done: done, first: len(data)}
	if len(data) > 0 {
		p.Compute(l.pl.CopyCost(len(data)))
		l.nd.Mem.Write(addr, data)
		r.got = len(data)
	}
	return r
}

// place reads the packet at the head of FIFO f straight into r's buffer
// at off (a realigning copy if that is not 16-byte aligned).
func (l *Layer) place(p *cpu.Proc, f int, r *rx, off int) {
	pk, err := l.pl.Read(p, f, (r.addr+uint64(off))%16 == 0)
	if err != nil || pk == nil {
		panic(fmt.Sprintf("bglml: node %d: FIFO %d: %v", l.nd.Index, f, err))
	}
	if off+len(pk.Payload) > r.size {
		panic(fmt.Sprintf("bglml: node %d: %d bytes at %d of a %d-byte message from node %d", l.nd.Index, len(pk.Payload), off, r.size, r.src))
	}
	l.nd.Mem.Write(r.addr+uint64(off), pk.Payload)
	r.got += len(pk.Payload)
}

// complete ends a received message: its done() callback, and for an
// adaptive-eager one the confirmation to its sender.
func (l *Layer) complete(p *cpu.Proc, r *rx) {
	l.Stats.Received++
	if r.done != nil {
		p.Compute(l.costs.Callback)
		r.done()
	}
	if r.token {
		l.control(p, r.src, &torus.Packet{Dst: l.coord(r.src), Dynamic: true, Soft: soft(tToken, l.self, r.id, 0)})
	}
}

// clearFull forgets the FIFOs found full: a new pass or call looks again.
func (l *Layer) clearFull() {
	clear(l.full)
	l.nfull = 0
	l.paceFound, l.winFound = false, false
}
