package am2

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/sim"
)

// The network protocol runs on the node's NIU (machine.Spec.StartX, set up
// with Myrinet's figures by Myrinet): its receive FIFOs are the network
// queue block, in NIC memory, so a network poll is an uncached load over
// the NIU's PCIe link, and a message is written with uncached stores into
// a transmit FIFO. Requests travel at low priority, replies, returned
// messages and bulk credits at high priority: the NIU's line gives each
// priority its own credits, so requests can never hold replies back, and
// as reply handlers do not send, replies always drain (no deadlock when
// endpoints flood each other). Bulk data moves by the NIU's DMA (RDMA
// mode) from a staging block of the sender's endpoint into a block the
// receiver set aside for that sender (a channel: per endpoint pair and
// queue, NetSpec.Blocks blocks, whose credits come back as the receiver's
// handlers return), with a stamp after the data that tells the receiver it
// has all landed.

// NetSpec is the network protocol's shape.
type NetSpec struct {
	// Blocks is the bulk blocks a channel has: per pair of endpoints on two
	// nodes, at the receiver for the sender's bulk requests and at the
	// sender for the receiver's bulk replies (default 4).
	Blocks int
	// Staging is an endpoint's send staging blocks, which the NIU's DMA
	// reads (default 2: one is filled while the other is read).
	Staging int
	// Pending bounds the requests an endpoint takes from the NIU ahead of
	// running them (default 32); more stay in the receive FIFO, whose line
	// credits then hold the senders back.
	Pending int
	// Block makes the uncached accesses 64-byte block loads and stores;
	// default 8-byte ones.
	Block bool
}

func (s NetSpec) withDefaults() NetSpec {
	if s.Blocks == 0 {
		s.Blocks = 4
	}
	if s.Staging == 0 {
		s.Staging = 2
	}
	if s.Pending == 0 {
		s.Pending = 32
	}
	return s
}

// Validate checks a network spec (after its defaults).
func (s NetSpec) Validate() error {
	switch {
	case s.Blocks < 1 || s.Blocks > 1024:
		return fmt.Errorf("am2: %d bulk blocks per channel, want 1..1024", s.Blocks)
	case s.Staging < 1 || s.Staging > 16:
		return fmt.Errorf("am2: %d staging blocks per endpoint, want 1..16", s.Staging)
	case s.Pending < 1 || s.Pending > 1<<16:
		return fmt.Errorf("am2: %d pending requests, want 1..65536", s.Pending)
	}
	return nil
}

// Myrinet is the NIU as seed 000's Myricom M2F (000:L40, L51–L53): the
// figures the seed gives, and the rest the StarT-X defaults, each stated.
// Its host side is the machine's PCIe link (on the E5000 preset
// calibrated so an uncached 32-bit read costs Table 1's 152 cycles) and a
// 38 MB/s cap on its DMA, the SBus.
func Myrinet() startx.Spec {
	s := startx.DefaultSpec()
	s.AccessPS = 27 * sim.NS // one cycle of the 37.5 MHz LANai (000:L40); the seed gives no SRAM access time
	s.DMAMBps = 38           // SBus, 38 MB/s observed host-NIC (000:L40, L53)
	s.RDMACommands = 64      // the most the NIU queues: every endpoint's staging blocks
	s.RDMAPacketBytes = 64
	s.RDMAReads = 2 // one DMA on the bus while the next is asked for
	// The LANai stages a packet in its SRAM: DMA in, then the network,
	// then DMA out (store and forward); an AM-II bulk packet is up to 8 kB
	// of data, here with its stamp, one line more.
	s.RDMAFrameBytes = MaxBulk + LineBytes
	return s
}

// MyrinetLine is a Myrinet link: 160 MB/s each way (000:L40); its latency
// (cable, switch, the receiving LANai) is the StarT-X default, 500 ns, an
// assumption: the seed gives none.
func MyrinetLine() startx.LineSpec {
	l := startx.DefaultLineSpec()
	l.RateMbps = 1280
	return l
}

// ClumpNICs is the Myrinet NICs of each of the Clump's SMPs (000:L40):
// machine.Spec.StartXNICs for it.
const ClumpNICs = 3

// WithMyrinet gives spec a Myrinet NIU in every node when it has none
// (spec.StartXNICs of them: ClumpNICs for the Clump's SMPs).
func WithMyrinet(spec machine.Spec) machine.Spec {
	if spec.StartX == nil {
		s := Myrinet()
		spec.StartX = &s
		spec.StartXLine = MyrinetLine()
		spec.StartXCrossbar = true
	}
	return spec
}

// Message kinds on the network (header word 1, bits 13..15).
const (
	kindMsg      = 0 // a request or reply
	kindReturned = 1 // a message returned to its sender: the tag did not match
	kindCredit   = 2 // a bulk block of a channel is free again
)

// netPayload is the words before the arguments: source endpoint and bulk
// block, bulk length, the destination's tag (as the sender believes it),
// the sender's tag, the bulk stamp.
const netPayload = 7

// stampMagic marks the word after a bulk transfer's data.
const stampMagic = 0xa2 << 56

// slotBytes is a bulk block with its stamp, line aligned.
const slotBytes = MaxBulk + LineBytes

// netNode is what a node's endpoints share for the NIU: its port (whose
// transmit credits are the FIFO's), the lock that keeps one endpoint's
// stores and loads of the FIFOs together, the status words its DMA
// writes, and the RDMA commands queued (under the lock).
type netNode struct {
	n       *machine.Node
	port    *startx.Port
	lock    uint64 // ticket lock: next ticket, served ticket (one line)
	sstatus uint64 // bytes of RDMA sends the NIU has read (written by its DMA)
	rstatus uint64
	addr    int      // the NIU's network address
	sent    uint64   // bytes of RDMA sends queued
	ends    []uint64 // the queued commands' running ends, oldest first
	cmdMax  int
}

// channel is the bulk blocks of a pair of endpoints on two nodes: the
// requester's bulk requests land in blocks at the responder, its bulk
// replies in blocks at the requester. free holds the blocks the sender of
// each queue may use (its credits); seq numbers the transfers for stamps.
type channel struct {
	id        uint64
	req, resp *Endpoint
	base      [2]uint64 // the blocks of queue q: at resp for requests, at req for replies
	free      [2][]int
	seq       [2]uint64
}

// netMsg is a message taken from the NIU, waiting at its endpoint.
type netMsg struct {
	src   int // node
	words []uint32
}

func (m *netMsg) h1() uint32        { return m.words[1] }
func (m *netMsg) kind() int         { return int(m.h1() >> 13 & 7) }
func (m *netMsg) q() int            { return int(m.h1() >> 12 & 1) }
func (m *netMsg) handler() int      { return int(m.h1() & 0xff) }
func (m *netMsg) nargs() int        { return int(m.h1() >> 8 & 0xf) }
func (m *netMsg) dst() int          { return int(m.h1() >> 16) }
func (m *netMsg) w(i int) uint32    { return m.words[startx.HeaderWords+i] }
func (m *netMsg) from() int         { return int(m.w(0) & 0xffff) }
func (m *netMsg) block() int        { return int(m.w(0)>>16) - 1 }
func (m *netMsg) n() int            { return int(m.w(1)) }
func (m *netMsg) tag() uint64       { return uint64(m.w(2)) | uint64(m.w(3))<<32 }
func (m *netMsg) senderTag() uint64 { return uint64(m.w(4)) | uint64(m.w(5))<<32 }
func (m *netMsg) seq() uint32       { return m.w(6) }
func (m *netMsg) args() []uint32    { return m.words[startx.HeaderWords+netPayload:] }
func (m *netMsg) pri() startx.Priority {
	if m.kind() == kindMsg && m.q() == qRequest {
		return startx.Low
	}
	return startx.High
}

// initNet sets up the network protocol when the nodes have NIUs (two
// nodes joined directly, more through the NIUs' switch): per node the
// lock and status words, registered for the NIU's DMA, and the receiver
// armed, at boot, for every sender's bulk data anywhere in its memory
// (the IOMMU admits only what endpoints registered).
func (sys *System) initNet() error {
	c := sys.c
	if c.Nodes[0].NIU == nil {
		return nil
	}
	sys.perNode = c.Spec.StartXPerNode()
	for _, n := range c.Nodes {
		for _, niu := range n.NIUs {
			nd := &netNode{n: n, port: &startx.Port{NIU: niu, Block: sys.spec.Net.Block}, cmdMax: niu.Spec().RDMACommands, addr: niu.Spec().Node}
			words := n.Alloc(4096)
			nd.lock, nd.sstatus, nd.rstatus = words, words+LineBytes, words+2*LineBytes
			if err := n.Register(words, 4096, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
				return err
			}
			niu.BootSendStatus(nd.sstatus)
			niu.BootArm(-1, 0, 1<<47, nd.rstatus)
			sys.net = append(sys.net, nd)
		}
	}
	return nil
}

// niuOf is the NIU a new endpoint gets: the node's NIUs in turn, so
// eight endpoints share three as 3 + 3 + 2 (000:L168).
func (sys *System) niuOf(e *Endpoint) *netNode {
	return sys.net[e.name.Node*sys.perNode+e.name.Index%sys.perNode]
}

// checkNetEndpoint refuses an endpoint whose staging blocks its NIU
// cannot queue RDMA commands for (before anything is allocated).
func (sys *System) checkNetEndpoint(e *Endpoint) error {
	if sys.net == nil {
		return nil
	}
	nd, s := sys.niuOf(e), sys.spec.Net
	if k := (e.name.Index/sys.perNode + 1) * s.Staging; k > nd.cmdMax {
		return fmt.Errorf("am2: endpoint %v: %d endpoints × %d staging blocks exceed the %d RDMA commands its NIU queues",
			e.name, e.name.Index/sys.perNode+1, s.Staging, nd.cmdMax)
	}
	return nil
}

// initNetEndpoint gives a new endpoint its NIU and its staging blocks.
func (sys *System) initNetEndpoint(e *Endpoint) error {
	if sys.net == nil {
		return nil
	}
	s := sys.spec.Net
	e.nd = sys.niuOf(e)
	size := uint64(s.Staging) * slotBytes
	e.staging = e.node.Alloc(size)
	e.stagingEnd = make([]uint64, s.Staging)
	return e.node.Register(e.staging, size, iommu.Perm{Bits: pte.R | pte.W})
}

// channelTo is the channel of requester e and responder to, made (blocks
// allocated and registered, set-up) the first time.
func (sys *System) channelTo(e, to *Endpoint) (*channel, error) {
	k := [2]Name{e.name, to.name}
	if ch := sys.chans[k]; ch != nil {
		return ch, nil
	}
	s := sys.spec.Net
	size := uint64(s.Blocks) * slotBytes
	ch := &channel{id: uint64(len(sys.chans)), req: e, resp: to}
	for q, at := range [2]*Endpoint{to, e} {
		ch.base[q] = at.node.Alloc(size)
		if err := at.node.Register(ch.base[q], size, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
			return nil, err
		}
		for b := 0; b < s.Blocks; b++ {
			ch.free[q] = append(ch.free[q], b)
		}
	}
	sys.chans[k] = ch
	return ch, nil
}

// sendChannel is the channel that carries queue q from e to peer: e's
// requests to a responder, or its replies to a requester. A credit or a
// returned message for queue q, which comes back to q's sender, names the
// same channel.
func (sys *System) sendChannel(e *Endpoint, q int, peer Name) *channel {
	if q == qRequest {
		return sys.chans[[2]Name{e.name, peer}]
	}
	return sys.chans[[2]Name{peer, e.name}]
}

// recvChannel is the channel that brought queue q's message from peer to e.
func (sys *System) recvChannel(e *Endpoint, q int, peer Name) *channel {
	if q == qRequest {
		return sys.chans[[2]Name{peer, e.name}]
	}
	return sys.chans[[2]Name{e.name, peer}]
}

func (ch *channel) slot(q, b int) uint64 { return ch.base[q] + uint64(b)*slotBytes }

// acquire takes the node's NIU lock (a fair ticket lock, as the MPI
// core's StarT-X transport's); release passes it on.
func (nd *netNode) acquire(p *cpu.Proc) uint64 {
	t := p.FetchAdd(nd.lock, 1)
	// A load and 4 cycles a turn, the core spinning while the line stays.
	p.PollLoad64Every(nd.lock+8, 4, func(v uint64) bool { return v == t })
	return t
}

func (nd *netNode) release(p *cpu.Proc, t uint64) { p.Store64(nd.lock+8, t+1) }

// netSend sends a message to endpoint to over the network: for bulk, a
// channel credit, a staging block, the copy and the RDMA command; then
// the message into the transmit FIFO. A wait (no credit, no staging
// block, no command slot, a full FIFO) backs off polling the own endpoint
// (replies only while sending at high priority).
//
// A credit names the freed block in cblock; a returned message the block
// its bulk data had (the sender frees it), or -1.
func (e *Endpoint) netSend(to *Endpoint, kind, q int, tag uint64, h int, src uint64, n int, args []uint32, cblock int) error {
	p := e.p
	nd := e.nd
	bo := e.sys.spec.BackoffMin
	pri := startx.High
	if kind == kindMsg && q == qRequest {
		pri = startx.Low
	}
	wait := func() {
		e.stats.Full++
		e.stats.Backoffs++
		e.stats.BackoffCycles += uint64(bo)
		p.Compute(bo)
		bo = min(2*bo, e.sys.spec.BackoffMax)
		if pri == startx.High {
			e.pollReplies()
		} else {
			e.Poll()
		}
	}
	block, seq := cblock, uint32(0)
	if n > 0 && kind == kindMsg {
		ch := e.sys.sendChannel(e, q, to.name)
		if ch == nil {
			return fmt.Errorf("am2: no channel from %v to %v (a bug)", e.name, to.name)
		}
		for len(ch.free[q]) == 0 {
			wait()
		}
		block, ch.free[q] = ch.free[q][0], ch.free[q][1:]
		ch.seq[q]++
		seq = uint32(ch.seq[q])
		// A staging block the NIU has read.
		st := int(e.stats.Sent % uint64(len(e.stagingEnd)))
		for e.stagingEnd[st] > p.Load64(nd.sstatus) {
			wait()
		}
		stage := e.staging + uint64(st)*slotBytes
		p.Memcpy(stage, src, uint64(n))
		var stamp [8]byte
		binary.LittleEndian.PutUint64(stamp[:], stampMagic|ch.id<<32|uint64(seq))
		p.Write(stage+uint64(n), stamp[:])
		for {
			t := nd.acquire(p)
			done := p.Load64(nd.sstatus)
			for len(nd.ends) > 0 && nd.ends[0] <= done {
				nd.ends = nd.ends[1:]
			}
			if len(nd.ends) < nd.cmdMax {
				nd.sent += uint64(n + 8)
				nd.ends = append(nd.ends, nd.sent)
				e.stagingEnd[st] = nd.sent
				nd.port.RDMASend(p, to.nd.addr, stage, ch.slot(q, block), n+8)
				nd.release(p, t)
				break
			}
			// Not reached while every endpoint of the NIU has at most its
			// Staging commands queued (checkNetEndpoint): no poll runs, so
			// no reply of a handler can take the filled staging block.
			nd.release(p, t)
			wait()
		}
	}
	payload := make([]uint32, netPayload, netPayload+len(args))
	payload[0] = uint32(e.name.Index) | uint32(block+1)<<16
	payload[1] = uint32(n)
	payload[2], payload[3] = uint32(tag), uint32(tag>>32)
	payload[4], payload[5] = uint32(e.tag), uint32(e.tag>>32)
	payload[6] = seq
	payload = append(payload, args...)
	h1 := uint32(h) | uint32(len(args))<<8 | uint32(q)<<12 | uint32(kind)<<13 | uint32(to.name.Index)<<16
	for {
		t := nd.acquire(p)
		ok := nd.port.TrySend(p, pri, to.nd.addr, h1, payload)
		nd.release(p, t)
		if ok {
			break
		}
		wait()
	}
	if kind == kindMsg {
		e.stats.Sent++
		e.stats.NetSent++
	}
	return nil
}

// netPoll runs the endpoint's network messages: those taken already, and
// when the policy says the network is due, what its FIFOs hold (all
// priorities, or only high while a reply waits to be sent).
func (e *Endpoint) netPoll(all bool) int {
	k := e.runPending(startx.High)
	if all {
		k += e.runPending(startx.Low)
	}
	if !e.poller.due(e.sys.policy) {
		return k
	}
	t0 := e.p.Now()
	took := e.netRead(all)
	e.netPollTime += e.p.Now() - t0
	e.poller.took(e.sys.policy, took)
	e.stats.NetPolls++
	k += e.runPending(startx.High)
	if all {
		k += e.runPending(startx.Low)
	}
	return k
}

// netRead is one network poll: under the NIU lock, an uncached load of
// the head of each receive FIFO — the reply (high priority) queue, then,
// unless only replies are polled, the request queue — as Myrinet AM-II
// reads the head of each receive queue in NIC memory; a valid head is read
// on to its end, and the next one looked at, up to the poll's budget. Each
// message goes to the pending list of the endpoint it names; a request
// stays in the FIFO when its endpoint has Pending requests waiting. It
// returns the messages taken.
func (e *Endpoint) netRead(all bool) int {
	p := e.p
	sys := e.sys
	nd := e.nd
	t := nd.acquire(p)
	defer nd.release(p, t)
	budget := e.poller.budget(sys.policy, sys.spec.Slots)
	took := 0
	for pri := startx.High; pri <= startx.Low; pri++ {
		if pri == startx.Low && !all {
			break
		}
		for took < budget {
			m, ok := e.readMsg(pri)
			if !ok {
				break
			}
			took++
			to := sys.Endpoint(Name{e.name.Node, m.dst()})
			if to == nil {
				e.stats.Dropped++ // a message for no endpoint: the sender's name table is wrong
				continue
			}
			to.pending[pri] = append(to.pending[pri], m)
			if to != e {
				// Handed over through the receiver's inbox in shared memory.
				line := to.inbox + uint64(len(to.pending[pri])%64)*LineBytes
				p.Write(line, make([]byte, min(4*len(m.words), LineBytes)))
			}
		}
	}
	return took
}

// readMsg reads the head message of receive FIFO pri with uncached loads
// (false: empty, or a request whose endpoint has Pending requests
// waiting, left in the FIFO).
func (e *Endpoint) readMsg(pri startx.Priority) (*netMsg, bool) {
	p := e.p
	nd := e.nd
	chunk := 8
	if nd.port.Block {
		chunk = 64
	}
	base := nd.port.NIU.RXAddr(pri)
	b := p.MMIORead(base, chunk)
	h0 := binary.LittleEndian.Uint32(b)
	if !startx.Valid(h0) {
		return nil, false
	}
	if pri == startx.Low {
		to := e.sys.Endpoint(Name{e.name.Node, int(binary.LittleEndian.Uint32(b[4:]) >> 16)})
		if to != nil && len(to.pending[pri]) >= e.sys.spec.Net.Pending {
			return nil, false
		}
	}
	words := startx.HeaderWords + startx.PayloadWords(h0)
	for len(b) < 4*words {
		b = append(b, p.MMIORead(base+uint64(len(b)), min(chunk, 4*words-len(b)))...)
	}
	m := &netMsg{src: startx.Node(h0) / e.sys.perNode, words: make([]uint32, words)}
	for i := range m.words {
		m.words[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return m, true
}

// runPending runs the endpoint's waiting messages of priority pri in
// order, up to a bulk one whose data has not all landed.
func (e *Endpoint) runPending(pri startx.Priority) int {
	k := 0
	for len(e.pending[pri]) > 0 {
		m := e.pending[pri][0]
		if m.kind() == kindMsg && m.block() >= 0 && m.tag() == e.tag {
			ch := e.sys.recvChannel(e, m.q(), Name{m.src, m.from()})
			if ch == nil {
				e.pending[pri] = e.pending[pri][1:]
				e.stats.Dropped++
				continue
			}
			at := ch.slot(m.q(), m.block()) + uint64(m.n())
			var stamp [8]byte
			e.p.Read(at, stamp[:])
			if binary.LittleEndian.Uint64(stamp[:]) != stampMagic|ch.id<<32|uint64(m.seq()) {
				break // its data is still on the way
			}
		}
		e.pending[pri] = e.pending[pri][1:]
		if len(e.pending[pri]) == 0 {
			e.pending[pri] = nil
		}
		if e.inbox != 0 {
			e.p.Load64(e.inbox) // the inbox line: taken messages are read from shared memory
		}
		e.runNet(m)
		k++
	}
	return k
}

// runNet runs one network message: a credit, a returned message (to
// handler 0, at the next poll), or a request or reply — whose tag is
// checked first, a mismatch going back to its sender.
func (e *Endpoint) runNet(m *netMsg) {
	from := Name{m.src, m.from()}
	switch m.kind() {
	case kindCredit:
		if ch := e.sys.sendChannel(e, m.q(), from); ch != nil {
			ch.free[m.q()] = append(ch.free[m.q()], m.block())
		}
		return
	case kindReturned:
		if m.block() >= 0 {
			if ch := e.sys.sendChannel(e, m.q(), from); ch != nil {
				ch.free[m.q()] = append(ch.free[m.q()], m.block())
			}
		}
		e.returned = append(e.returned, Message{Handler: m.handler(), Args: append([]uint32(nil), m.args()...), Len: m.n(),
			Reply: m.q() == qReply, Returned: true, From: from})
		e.stats.Returned++
		return
	}
	sender := e.sys.Endpoint(from)
	if m.tag() != e.tag || m.handler() < 1 || e.handlers[m.handler()] == nil || sender == nil {
		if sender != nil {
			// Back to the sender, with the bulk block (if any) as its credit.
			e.netSend(sender, kindReturned, m.q(), 0, m.handler(), 0, m.n(), m.args(), m.block())
		}
		return
	}
	msg := Message{Handler: m.handler(), Reply: m.q() == qReply, Args: append([]uint32(nil), m.args()...), From: from}
	var ch *channel
	if m.block() >= 0 {
		ch = e.sys.recvChannel(e, m.q(), from)
		msg.Data, msg.Len = ch.slot(m.q(), m.block()), m.n()
	}
	tok := &Token{ep: e, from: sender, fromTag: m.senderTag(), request: m.q() == qRequest}
	e.stats.Received++
	e.inHandle++
	e.handlers[m.handler()](tok, &msg)
	e.inHandle--
	tok.ep = nil
	if ch != nil {
		// The block is free: its credit goes back to the sender.
		e.netSend(sender, kindCredit, m.q(), 0, 0, 0, 0, nil, m.block())
	}
}
