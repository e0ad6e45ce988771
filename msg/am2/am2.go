// Package am2 is Active Messages II (seed 000): endpoints with global
// names, destination tables, 64-bit endpoint tags, handler tables,
// request/reply with a reply token, short messages of up to 8 32-bit
// arguments and bulk transfers of up to 8 kB, on a cluster of SMPs.
//
// Two protocols carry the messages. Between endpoints of one SMP node,
// shared memory: every endpoint has a shared-memory queue block in its
// node's memory laid out as the paper's Figure 3 (a tag line, then for each
// of the request and reply queues a tail line, a head line, a packet ring
// of one cache line per packet, the bulk blocks' valid flags and the 8 kB
// bulk blocks). Senders write into the receiver's block directly; every
// step is a costed load, store, CAS or copy of the process (cpu.Proc), so
// the node's coherence model prices it. Between nodes, the network
// (net.go): the node's NIU, whose FIFOs in NIC memory are the network
// queues. A poll looks at the shared-memory queues and, as the polling
// policy says (poll.go), the network.
package am2

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Limits of the interface (seed 000, L62–L68).
const (
	MaxArgs     = 8    // 32-bit arguments of a message
	MaxBulk     = 8192 // bytes of a bulk transfer
	MaxHandlers = 256  // handler table entries; 0 handles returned messages
	MaxDests    = 256  // destination table entries
	LineBytes   = 64   // a packet: one cache line
)

// Errors a send returns; nothing is delivered when a send fails.
var (
	ErrRemote    = errors.New("am2: destination endpoint on another node: the system has no network (shared memory only, or nodes without an NIU)")
	ErrLocal     = errors.New("am2: destination endpoint on the sender's node: the system is network-only")
	ErrInHandler = errors.New("am2: a request from inside a handler (handlers may only reply)")
)

// Packet types: the handshake state of a packet slot (the low byte of its
// type word; the rest is the slot's ticket, so a slot is free for one lap).
const (
	typeFree      = 0
	typeClaimed   = 1
	typeReady     = 2
	typeReadyBulk = 3
)

// Queue structures of a block.
const (
	qRequest = 0
	qReply   = 1
)

// Spec is the shape of an endpoint's queues and its back-off.
type Spec struct {
	Slots      int     // packets per queue structure (default 256)
	Blocks     int     // bulk blocks per queue structure (default 16)
	BackoffMin int     // first back-off when a queue is full, cycles (default 16)
	BackoffMax int     // longest back-off, cycles (default 4096)
	Net        NetSpec // the network protocol's shape (zero: its defaults)
	Poll       Policy  // the protocols, and when a poll polls the network (zero: both, adaptive)
}

// DefaultSpec is the inferred depth of seed 000's block (message-layers
// §1.3): 256 packets and 16 bulk blocks of 8 kB per queue, ≈ 293 kB.
func DefaultSpec() Spec { return Spec{Slots: 256, Blocks: 16, BackoffMin: 16, BackoffMax: 4096} }

// Validate checks the spec.
func (s Spec) Validate() error {
	switch {
	case s.Slots < 1 || s.Slots > 1<<20:
		return fmt.Errorf("am2: %d packet slots per queue, want 1..%d", s.Slots, 1<<20)
	case s.Blocks < 1 || s.Blocks > 0xfffe:
		return fmt.Errorf("am2: %d bulk blocks per queue, want 1..65534", s.Blocks)
	case s.BackoffMin < 1 || s.BackoffMax < s.BackoffMin:
		return fmt.Errorf("am2: back-off %d..%d cycles, want 1 ≤ min ≤ max", s.BackoffMin, s.BackoffMax)
	}
	if err := s.Net.withDefaults().Validate(); err != nil {
		return err
	}
	return s.Poll.Validate()
}

// Queue structure layout, from its base: tail line, head line, ring,
// one flag line per bulk block, the blocks.
func (s Spec) ringOff() uint64   { return 2 * LineBytes }
func (s Spec) flagsOff() uint64  { return s.ringOff() + uint64(s.Slots)*LineBytes }
func (s Spec) blocksOff() uint64 { return s.flagsOff() + uint64(s.Blocks)*LineBytes }
func (s Spec) queueBytes() uint64 {
	return s.blocksOff() + uint64(s.Blocks)*MaxBulk
}

// BlockBytes is the size of an endpoint's shared-memory queue block: the
// tag line and two queue structures.
func (s Spec) BlockBytes() uint64 { return LineBytes + 2*s.queueBytes() }

// Name is an endpoint's global name.
type Name struct{ Node, Index int }

func (n Name) String() string { return fmt.Sprintf("(%d,%d)", n.Node, n.Index) }

// System is the endpoints of a cluster.
type System struct {
	c       *machine.Cluster
	spec    Spec
	policy  Policy
	eps     [][]*Endpoint // per node, by index
	net     []*netNode    // per NIU, by network address (nil: no network)
	perNode int           // NIUs a node
	chans   map[[2]Name]*channel
}

// New makes an AM-II system on cluster c.
func New(c *machine.Cluster, s Spec) (*System, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	// Endpoints' global names resolve through one table of all nodes.
	c.Serial("am2: the endpoints of all nodes share one name table")
	s.Net = s.Net.withDefaults()
	sys := &System{c: c, spec: s, policy: s.Poll, eps: make([][]*Endpoint, len(c.Nodes)), chans: map[[2]Name]*channel{}}
	if err := sys.initNet(); err != nil {
		return nil, err
	}
	return sys, nil
}

// Network reports whether the system reaches other nodes.
func (sys *System) Network() bool { return sys.net != nil && sys.policy.Protocols != ShmOnly }

// Spec is the system's queue shape.
func (sys *System) Spec() Spec { return sys.spec }

// Endpoint returns the endpoint of a name, or nil.
func (sys *System) Endpoint(n Name) *Endpoint {
	if n.Node < 0 || n.Node >= len(sys.eps) || n.Index < 0 || n.Index >= len(sys.eps[n.Node]) {
		return nil
	}
	return sys.eps[n.Node][n.Index]
}

// NewEndpoint creates an endpoint on node with its tag, allocating and
// initialising its queue block in the node's memory (set-up, not costed).
func (sys *System) NewEndpoint(node int, tag uint64) (*Endpoint, error) {
	if node < 0 || node >= len(sys.eps) {
		return nil, fmt.Errorf("am2: node %d of %d", node, len(sys.eps))
	}
	n := sys.c.Nodes[node]
	s := sys.spec
	e := &Endpoint{sys: sys, node: n, name: Name{node, len(sys.eps[node])}, tag: tag}
	if err := sys.checkNetEndpoint(e); err != nil {
		return nil, err
	}
	e.base = n.Alloc(s.BlockBytes())
	e.inbox = n.Alloc(64 * LineBytes)
	if err := sys.initNetEndpoint(e); err != nil {
		return nil, err
	}
	n.Mem.Store64(e.base, tag)
	for q := 0; q < 2; q++ {
		for i := 0; i < s.Slots; i++ {
			n.Mem.Store64(e.slot(q, uint64(i)), uint64(i)<<8|typeFree)
		}
	}
	sys.eps[node] = append(sys.eps[node], e)
	return e, nil
}

// Handler runs a message on the receiving endpoint's process. The token
// replies (request handlers only); m is valid until the handler returns
// (its bulk data is in the receiver's queue block until then).
type Handler func(t *Token, m *Message)

// Message is what a handler gets.
type Message struct {
	Handler  int      // the handler index the sender named
	Args     []uint32 // up to MaxArgs
	Data     uint64   // bulk data in node memory (Len > 0)
	Len      int      // bulk bytes
	Reply    bool     // a reply (else a request)
	Returned bool     // returned to the sender (to handler 0): its tag did not match
	From     Name     // the sender (for a returned message: its destination)
}

// Stats counts an endpoint's activity.
type Stats struct {
	Sent, Received, Returned uint64
	Full                     uint64 // failed slot or block claims: the queue was full
	Backoffs                 uint64 // back-off waits
	BackoffCycles            uint64
	NetSent                  uint64 // messages sent over the network (also in Sent)
	NetPolls                 uint64 // polls that polled the network
	Dropped                  uint64 // network messages for no endpoint
	// Send is where the time of the shared-memory requests went
	// (seed 000's Figure 4).
	Send SendCost
}

// SendCost splits the time of shared-memory requests by the steps of a
// send: the poll on every send (PollNet: the part of it that polled the
// network), the tag check (the load of the destination's tag), the tail
// (its load and CAS: a ticket), the claim of the slot (its CAS, which
// brings the packet's line), and the packet's fill and mark-ready; a bulk
// block's claim and copy are in Bulk, back-offs in Wait. Sends counts the
// requests.
type SendCost struct {
	Sends                                               uint64
	Poll, PollNet, Check, Tail, Claim, Fill, Bulk, Wait sim.Tick
}

// Total is the time of the sends.
func (c SendCost) Total() sim.Tick {
	return c.Poll + c.Check + c.Tail + c.Claim + c.Fill + c.Bulk + c.Wait
}

// Minus is c less an earlier reading d of the same counters.
func (c SendCost) Minus(d SendCost) SendCost {
	return SendCost{Sends: c.Sends - d.Sends, Poll: c.Poll - d.Poll, PollNet: c.PollNet - d.PollNet, Check: c.Check - d.Check,
		Tail: c.Tail - d.Tail, Claim: c.Claim - d.Claim, Fill: c.Fill - d.Fill, Bulk: c.Bulk - d.Bulk, Wait: c.Wait - d.Wait}
}

type dest struct {
	name Name
	tag  uint64
	ok   bool
}

// Endpoint is an AM-II endpoint: its control block (handler and destination
// tables, private) and its shared-memory queue block.
type Endpoint struct {
	sys      *System
	node     *machine.Node
	name     Name
	tag      uint64
	base     uint64
	p        *cpu.Proc
	handlers [MaxHandlers]Handler
	dests    [MaxDests]dest
	head     [2]uint64
	inHandle int
	returned []Message
	stats    Stats
	cost     *SendCost // the request being sent's steps are timed into it (nil: none)
	// netPollTime is the time spent reading the NIU in polls.
	netPollTime sim.Tick

	// The network side: staging blocks and the NIU's running count at which
	// each is free again, messages taken from the NIU (by priority), the
	// inbox line they are handed over through, and the polling state.
	nd         *netNode // its NIU
	staging    uint64
	stagingEnd []uint64
	pending    [2][]*netMsg
	inbox      uint64
	poller     poller
}

// Name is the endpoint's global name; Tag its tag.
func (e *Endpoint) Name() Name { return e.name }

// Tag is the endpoint's tag.
func (e *Endpoint) Tag() uint64 { return e.tag }

// Stats is what the endpoint counted.
func (e *Endpoint) Stats() Stats { return e.stats }

// Proc is the endpoint's receiver process (nil before Attach).
func (e *Endpoint) Proc() *cpu.Proc { return e.p }

// Attach makes p the endpoint's one process: the receiver, and the sender
// of its messages. p must run on a core of the endpoint's node.
func (e *Endpoint) Attach(p *cpu.Proc) error {
	if e.p != nil && e.p != p {
		return fmt.Errorf("am2: endpoint %v already has its receiver %s", e.name, e.p.Name())
	}
	for _, c := range e.node.Cores {
		if p.Core() == c {
			e.p = p
			return nil
		}
	}
	return fmt.Errorf("am2: process %s is not on node %d, endpoint %v's", p.Name(), e.name.Node, e.name)
}

// SetHandler puts h at index i of the handler table (i = 0: returned
// messages).
func (e *Endpoint) SetHandler(i int, h Handler) error {
	if i < 0 || i >= MaxHandlers {
		return fmt.Errorf("am2: handler index %d, want 0..%d", i, MaxHandlers-1)
	}
	e.handlers[i] = h
	return nil
}

// Map puts endpoint name with tag at index i of the destination table.
func (e *Endpoint) Map(i int, name Name, tag uint64) error {
	if i < 0 || i >= MaxDests {
		return fmt.Errorf("am2: destination index %d, want 0..%d", i, MaxDests-1)
	}
	to := e.sys.Endpoint(name)
	if to == nil {
		return fmt.Errorf("am2: no endpoint %v", name)
	}
	if to.name.Node != e.name.Node && e.sys.net != nil {
		if _, err := e.sys.channelTo(e, to); err != nil {
			return err
		}
	}
	e.dests[i] = dest{name: name, tag: tag, ok: true}
	return nil
}

// Addresses in the queue block.
func (e *Endpoint) queue(q int) uint64 { return e.base + LineBytes + uint64(q)*e.sys.spec.queueBytes() }
func (e *Endpoint) tail(q int) uint64  { return e.queue(q) }
func (e *Endpoint) headAddr(q int) uint64 {
	return e.queue(q) + LineBytes
}
func (e *Endpoint) slot(q int, ticket uint64) uint64 {
	return e.queue(q) + e.sys.spec.ringOff() + (ticket%uint64(e.sys.spec.Slots))*LineBytes
}
func (e *Endpoint) flag(q, b int) uint64 {
	return e.queue(q) + e.sys.spec.flagsOff() + uint64(b)*LineBytes
}
func (e *Endpoint) block(q, b int) uint64 {
	return e.queue(q) + e.sys.spec.blocksOff() + uint64(b)*MaxBulk
}

// BulkValid reports, uncosted, whether bulk block b of the endpoint's
// request (reply false) or reply queue is claimed.
func (e *Endpoint) BulkValid(reply bool, b int) bool {
	q := qRequest
	if reply {
		q = qReply
	}
	return e.node.Mem.Load64(e.flag(q, b)) != 0
}

// Request sends a short request to destination index dst, handler h.
func (e *Endpoint) Request(dst, h int, args ...uint32) error {
	return e.request(dst, h, 0, 0, args)
}

// RequestBulk sends a bulk request: n ≤ MaxBulk bytes of node memory at
// src, copied into a bulk block of the destination's queue.
func (e *Endpoint) RequestBulk(dst, h int, src uint64, n int, args ...uint32) error {
	if n < 1 {
		return fmt.Errorf("am2: a bulk transfer of %d bytes, want 1..%d", n, MaxBulk)
	}
	return e.request(dst, h, src, n, args)
}

func (e *Endpoint) request(dst, h int, src uint64, n int, args []uint32) error {
	if e.p == nil {
		return fmt.Errorf("am2: endpoint %v has no process (Attach)", e.name)
	}
	if e.inHandle > 0 {
		return ErrInHandler
	}
	if dst < 0 || dst >= MaxDests || !e.dests[dst].ok {
		return fmt.Errorf("am2: destination index %d not in endpoint %v's table", dst, e.name)
	}
	d := e.dests[dst]
	to := e.sys.Endpoint(d.name)
	if err := e.check(to, h, n, args); err != nil {
		return err
	}
	t0 := e.p.Now()
	net0 := e.netPollTime
	e.Poll() // poll on every send
	if to.name.Node == e.name.Node {
		e.stats.Send.Poll += e.p.Now() - t0
		e.stats.Send.PollNet += e.netPollTime - net0
		e.cost = &e.stats.Send
		defer func() { e.cost = nil }()
	}
	if to.name.Node != e.name.Node {
		return e.netSend(to, kindMsg, qRequest, d.tag, h, src, n, args, -1)
	}
	return e.send(to, qRequest, d.tag, h, src, n, args)
}

// check validates a message to endpoint to before anything is sent.
func (e *Endpoint) check(to *Endpoint, h, n int, args []uint32) error {
	if to.name.Node != e.name.Node && !e.sys.Network() {
		return fmt.Errorf("%w (%v from %v)", ErrRemote, to.name, e.name)
	}
	if to.name.Node == e.name.Node && e.sys.policy.Protocols == NetOnly {
		return fmt.Errorf("%w (%v from %v)", ErrLocal, to.name, e.name)
	}
	if len(args) > MaxArgs {
		return fmt.Errorf("am2: %d arguments, want at most %d", len(args), MaxArgs)
	}
	if n < 0 || n > MaxBulk {
		return fmt.Errorf("am2: a bulk transfer of %d bytes, want 1..%d", n, MaxBulk)
	}
	// Full trust inside an SMP: the sender sees the receiver's table. To
	// another node, the name service that resolved the destination has
	// its table too; the receiver checks again (a message for a handler
	// it no longer has goes back to handler 0).
	if h < 1 || h >= MaxHandlers || to.handlers[h] == nil {
		return fmt.Errorf("am2: handler index %d not in endpoint %v's table", h, to.name)
	}
	return nil
}

// send puts a message into queue q of endpoint to: check the tag, claim a
// bulk block, claim a slot, fill it, mark it ready. While a queue is full
// it backs off exponentially, polling its own endpoint (replies only while
// sending a reply: reply handlers do not send, so replies always drain).
func (e *Endpoint) send(to *Endpoint, q int, tag uint64, h int, src uint64, n int, args []uint32) error {
	p := e.p
	c := e.cost
	if c != nil {
		c.Sends++
	}
	mark := p.Now()
	step := func(into *sim.Tick) {
		if c != nil {
			now := p.Now()
			*into += now - mark
			mark = now
		}
	}
	var skip sim.Tick
	if p.Load64(to.base) != tag {
		m := Message{Handler: h, Args: append([]uint32(nil), args...), Data: src, Len: n, Reply: q == qReply, Returned: true, From: to.name}
		e.returned = append(e.returned, m)
		e.stats.Returned++
		step(&skip)
		return nil
	}
	if c != nil {
		step(&c.Check)
	}
	bo := e.sys.spec.BackoffMin
	wait := func() {
		e.stats.Full++
		e.stats.Backoffs++
		e.stats.BackoffCycles += uint64(bo)
		p.Compute(bo)
		bo = min(2*bo, e.sys.spec.BackoffMax)
		saved := e.cost
		e.cost = nil // the handlers the poll runs may reply: not this send
		if q == qReply {
			e.pollReplies()
		} else {
			e.Poll()
		}
		e.cost = saved
		if c != nil {
			step(&c.Wait)
		}
	}
	block := -1
	for n > 0 && block < 0 {
		if block = to.claimBlock(p, q); block < 0 {
			wait()
		}
	}
	if block >= 0 {
		p.Memcpy(to.block(q, block), src, uint64(n))
	}
	if c != nil {
		step(&c.Bulk)
	}
	t := p.Load64(to.tail(q))
	for {
		old := p.CAS(to.tail(q), t, t+1)
		if old == t {
			break
		}
		t = old
	}
	if c != nil {
		step(&c.Tail)
	}
	slot := to.slot(q, t)
	for p.CAS(slot, t<<8|typeFree, t<<8|typeClaimed) != t<<8|typeFree {
		if c != nil {
			step(&c.Claim)
		}
		wait() // the slot holds the last lap's packet: full
	}
	if c != nil {
		step(&c.Claim)
	}
	var line [LineBytes - 8]byte
	meta := uint64(h) | uint64(len(args))<<8 | uint64(block+1)<<16 | uint64(n)<<32
	binary.LittleEndian.PutUint64(line[0:], meta)
	binary.LittleEndian.PutUint64(line[8:], uint64(e.name.Index)) // inverse mapping
	for i, a := range args {
		binary.LittleEndian.PutUint32(line[16+4*i:], a)
	}
	binary.LittleEndian.PutUint64(line[48:], e.tag)
	p.Write(slot+8, line[:])
	ty := uint64(typeReady)
	if block >= 0 {
		ty = typeReadyBulk
	}
	p.Store64(slot, t<<8|ty)
	if c != nil {
		step(&c.Fill)
	}
	e.stats.Sent++
	return nil
}

// claimBlock claims a free bulk block of queue q (its valid flag 0 → 1).
func (e *Endpoint) claimBlock(p *cpu.Proc, q int) int {
	for b := 0; b < e.sys.spec.Blocks; b++ {
		if p.Load64(e.flag(q, b)) != 0 {
			continue
		}
		if p.CAS(e.flag(q, b), 0, 1) == 0 {
			return b
		}
	}
	return -1
}

// Poll runs the handlers of the messages waiting at the endpoint: returned
// messages, then the request and reply queues, each until its head packet
// is not ready. It returns the number of handlers run.
func (e *Endpoint) Poll() int {
	k := 0
	for len(e.returned) > 0 {
		m := e.returned[0]
		e.returned = e.returned[1:]
		if h := e.handlers[0]; h != nil {
			e.inHandle++
			h(&Token{ep: e}, &m)
			e.inHandle--
		}
		k++
	}
	if e.sys.policy.Protocols != NetOnly {
		k += e.poll(qRequest) + e.poll(qReply)
	}
	if e.sys.Network() {
		k += e.netPoll(true)
	}
	return k
}

// pollReplies polls only for replies (and the network's other high-
// priority messages): what a sender of a reply does while it waits.
func (e *Endpoint) pollReplies() int {
	k := 0
	if e.sys.policy.Protocols != NetOnly {
		k += e.poll(qReply)
	}
	if e.sys.Network() {
		k += e.netPoll(false)
	}
	return k
}

// poll drains queue q of the endpoint.
func (e *Endpoint) poll(q int) int {
	p := e.p
	s := e.sys.spec
	k := 0
	for k < s.Slots {
		h := e.head[q]
		addr := e.slot(q, h)
		ty := p.Load64(addr)
		if ty != h<<8|typeReady && ty != h<<8|typeReadyBulk {
			break
		}
		var line [LineBytes - 8]byte
		p.Read(addr+8, line[:])
		e.head[q] = h + 1
		p.Store64(e.headAddr(q), h+1)
		meta := binary.LittleEndian.Uint64(line[0:])
		m := Message{Handler: int(meta & 0xff), Reply: q == qReply, Args: make([]uint32, meta>>8&0xff)}
		block := int(meta>>16&0xffff) - 1
		from := int(binary.LittleEndian.Uint64(line[8:]))
		for i := range m.Args {
			m.Args[i] = binary.LittleEndian.Uint32(line[16+4*i:])
		}
		m.From = Name{e.name.Node, from}
		if block >= 0 {
			m.Data, m.Len = e.block(q, block), int(meta>>32)
		}
		tok := &Token{ep: e, from: e.sys.eps[e.name.Node][from], fromTag: binary.LittleEndian.Uint64(line[48:]), request: q == qRequest}
		e.stats.Received++
		e.inHandle++
		e.handlers[m.Handler](tok, &m)
		e.inHandle--
		tok.ep = nil
		p.Store64(addr, (h+uint64(s.Slots))<<8|typeFree)
		if block >= 0 {
			p.Store64(e.flag(q, block), 0)
		}
		k++
	}
	return k
}

// Token names the requester of the message a handler runs; a request
// handler replies with it, at most once, while it runs.
type Token struct {
	ep      *Endpoint
	from    *Endpoint
	fromTag uint64
	request bool
	replied bool
}

// Endpoint is the endpoint running the handler.
func (t *Token) Endpoint() *Endpoint { return t.ep }

// Reply sends a short reply to the requester, handler h.
func (t *Token) Reply(h int, args ...uint32) error { return t.reply(h, 0, 0, args) }

// ReplyBulk sends a bulk reply: n ≤ MaxBulk bytes at src.
func (t *Token) ReplyBulk(h int, src uint64, n int, args ...uint32) error {
	if n < 1 {
		return fmt.Errorf("am2: a bulk transfer of %d bytes, want 1..%d", n, MaxBulk)
	}
	return t.reply(h, src, n, args)
}

func (t *Token) reply(h int, src uint64, n int, args []uint32) error {
	switch {
	case t.ep == nil:
		return errors.New("am2: a token used after its handler returned")
	case !t.request:
		return errors.New("am2: a reply from a handler that is not a request handler")
	case t.replied:
		return errors.New("am2: a second reply to one request")
	}
	if err := t.ep.check(t.from, h, n, args); err != nil {
		return err
	}
	t.replied = true
	if t.from.name.Node != t.ep.name.Node {
		return t.ep.netSend(t.from, kindMsg, qReply, t.fromTag, h, src, n, args, -1)
	}
	return t.ep.send(t.from, qReply, t.fromTag, h, src, n, args)
}
