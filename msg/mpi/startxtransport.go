package mpi

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/shm"
	"github.com/aaemu/aaemu/nic/startx"
)

// StartXConfig configures MPI-StarT's channel device: the transport over
// the StarT-X NIUs (machine.Spec.StartX) between ranks of different SMPs.
type StartXConfig struct {
	// Params: EagerLimit is the PIO→RDMA crossover (default 1024 bytes,
	// 001:L103: messages up to it go by PIO, eagerly; longer ones by a
	// rendezvous whose data moves by RDMA); ChunkBytes is the pinned RDMA
	// buffer (default 16 MB, 001:L113: a longer message moves as a series
	// of transfers of that size).
	Params Params
	// PieceBytes is the copy-and-send step of an RDMA transfer: the sender
	// copies a piece into one of its two pinned halves while the NIU
	// sends the other (default 8 kB).
	PieceBytes int
	// Block makes the PIO accesses 64-byte block stores and loads
	// (stda/ldda); false: 8-byte ones.
	Block bool
	// NoTieBreak drops MPI-StarT's tie-break (001:L111): a rank with an
	// RDMA send waiting for its receiver's consent then refuses every
	// RDMA request, so two ranks sending large messages to each other at
	// once deadlock. For tests only.
	NoTieBreak bool
	// Batch is the most packets one poll takes from the NIU (default 8).
	Batch int
}

// MaxStartXPayload is the longest packet the channel device takes: the
// crossover cannot be set above it.
const MaxStartXPayload = 64 << 10

// DefaultStartXParams: PIO up to 1 kB, then a rendezvous by RDMA (put) in
// 16 MB transfers.
func DefaultStartXParams() Params {
	return Params{EagerLimit: 1024, Rendezvous: RendezvousPut, ChunkBytes: 16 << 20, Pipeline: 1}
}

func (c StartXConfig) withDefaults() StartXConfig {
	c.Params = fillParams(c.Params, DefaultStartXParams())
	if c.PieceBytes == 0 {
		c.PieceBytes = 8192
	}
	if c.Batch == 0 {
		c.Batch = 8
	}
	return c
}

// The channel device's own packets, never handed to the rank: an RDMA
// request (the sender asks for the receiver's NIU) and its consent.
const (
	rdmaREQ Kind = 100 + iota
	rdmaGO
)

// pioBytes is the data a PIO message carries.
const pioBytes = 4 * startx.MaxPayloadWords

// StartX is MPI-StarT's channel device (001:L95–L115) over the StarT-X
// NIUs. Packets (eager messages, RTS, CTS, FIN) go by PIO on the
// low-priority queue pair: the packed header and the data cut into
// messages of up to 88 bytes, which hold a packet's parts together
// because a rank sends and drains a whole packet under its SMP's NIU lock.
// A rank that drains a packet for another rank of its SMP copies it into
// that rank's inbox in shared memory. The data of a rendezvous moves by
// RDMA: the sender asks the receiver's SMP for its NIU (REQ); the
// receiving rank arms its NIU for the sender and its SMP's pinned buffer,
// answers GO and then copies the data into the user's buffer as it
// arrives, busy until the transfer ends; the sender copies the user's data
// into its pinned buffer a piece at a time, overlapped with the NIU
// sending the piece before. A rank whose own RDMA send waits for consent
// takes a request from a higher rank first and defers one from a lower
// (the tie-break: the lower rank's transfer goes first).
func StartX(cfg StartXConfig) TransportMaker {
	return func(s *Setup) (Transport, error) {
		cfg := cfg.withDefaults()
		if err := cfg.Params.validate("startx", MaxStartXPayload); err != nil {
			return nil, err
		}
		switch {
		case cfg.Params.Rendezvous != RendezvousPut:
			return nil, fmt.Errorf("startx: rendezvous mode %v: the channel device moves long messages by RDMA (put)", cfg.Params.Rendezvous)
		case cfg.PieceBytes < 64 || cfg.PieceBytes > cfg.Params.ChunkBytes:
			return nil, fmt.Errorf("startx: piece of %d bytes: want 64 to the chunk's %d", cfg.PieceBytes, cfg.Params.ChunkBytes)
		case cfg.Batch < 1:
			return nil, fmt.Errorf("startx: poll batch %d", cfg.Batch)
		}
		t := &sxTransport{cfg: cfg, places: s.Places, eps: make([]*sxEP, len(s.Places)), nodes: make([]*sxNode, len(s.Cluster.Nodes))}
		for i, n := range s.Cluster.Nodes {
			if n.NIU == nil {
				return nil, fmt.Errorf("startx: node %d has no StarT-X NIU (machine spec StartX)", i)
			}
			nd := &sxNode{n: n, port: &startx.Port{NIU: n.NIU, Block: cfg.Block}}
			words := n.Alloc(4096)
			nd.lock = niuLock(words)
			nd.sstatus, nd.rstatus = words+64, words+128
			nd.recv = n.Alloc(uint64(cfg.Params.ChunkBytes))
			nd.send = n.Alloc(uint64(2 * cfg.PieceBytes))
			for _, r := range [][2]uint64{{words, 4096}, {nd.recv, uint64(cfg.Params.ChunkBytes)}, {nd.send, uint64(2 * cfg.PieceBytes)}} {
				if err := n.Register(r[0], r[1], iommu.Perm{Bits: pte.R | pte.W}); err != nil {
					return nil, err
				}
			}
			t.nodes[i] = nd
		}
		return t, nil
	}
}

type sxTransport struct {
	cfg    StartXConfig
	places []Place
	eps    []*sxEP // by world rank
	nodes  []*sxNode
}

// sxNode is what an SMP's ranks share: the NIU lock word, the status words
// the NIU writes, the pinned receive buffer and send halves, and whether
// the NIU's RDMA send and receive sides are taken (kept under the lock).
type sxNode struct {
	n                *machine.Node
	port             *startx.Port // the SMP's one view of its NIU: its transmit credits are the FIFO's
	lock             niuLock
	sstatus, rstatus uint64
	recv, send       uint64
	sending, recving bool
	sent             uint64 // bytes of RDMA send commands issued: what sstatus will reach
	armedStatus      bool   // the NIU was told where sstatus is
}

func (t *sxTransport) Name() string                { return "startx" }
func (t *sxTransport) Params() Params              { return t.cfg.Params }
func (t *sxTransport) Reaches(from, to Place) bool { return from.Node != to.Node }

func (t *sxTransport) Open(e Env) (Endpoint, error) {
	nd := t.nodes[e.Place.Node]
	ep := &sxEP{t: t, env: e, nd: nd, port: nd.port}
	t.eps[e.Rank] = ep
	if !nd.armedStatus {
		nd.armedStatus = true
		ep.locked(func() { ep.port.SetSendStatus(e.Proc, nd.sstatus) })
	}
	return ep, nil
}

type sxEP struct {
	t     *sxTransport
	env   Env
	nd    *sxNode
	port  *startx.Port
	inbox []sxPacket // packets for this rank, in arrival order
	free  []uint64   // its inbox's free slots in shared memory
	ops   []*sxOp    // RDMA sends by handle
}

// sxPacket is a packet in a rank's inbox: its data in shared memory.
type sxPacket struct {
	h    Header
	addr uint64
}

type sxOp struct {
	dst           int
	local, remote uint64
	n             int
	consent, done bool
}

func (e *sxEP) MaxPayload() int { return MaxStartXPayload }

// locked runs f holding the SMP's NIU lock.
func (e *sxEP) locked(f func()) {
	t := e.nd.lock.acquire(e.env.Proc)
	f()
	e.nd.lock.release(e.env.Proc, t)
}

// niuLock is the lock an SMP's ranks share for their NIU (001:L105): a
// ticket lock in shared memory, two words of one line — the next ticket
// and the ticket served. A rank takes a ticket with a fetch-and-add and
// waits, loading the served word, until it comes up; it releases by
// storing the next ticket into it. It is fair: a rank gets the lock after
// the ranks that asked before it. A test-and-set lock (a CAS of one word)
// is not: ranks waiting in a receive take it to poll an empty FIFO, let
// it go and take it again before a rank that waits to issue an RDMA
// command ever finds it free, and two broadcasts of 4 ranks an SMP then
// never finish (TestStartXLockFair, TestBcastTwoStage at 4+4).
type niuLock uint64

func (l niuLock) next() uint64   { return uint64(l) }
func (l niuLock) served() uint64 { return uint64(l) + 8 }

// acquire waits for the lock and returns the caller's ticket.
func (l niuLock) acquire(p *cpu.Proc) uint64 {
	t := p.FetchAdd(l.next(), 1)
	for p.Load64(l.served()) != t {
		p.Sleep(p.Core().Spec().PollIntervalPS)
	}
	return t
}

// release passes the lock to the holder of ticket t+1.
func (l niuLock) release(p *cpu.Proc, t uint64) { p.Store64(l.served(), t+1) }

// sendPIO sends a packet as PIO messages: the header (two words for an
// eager one) and n bytes of data from b.
func (e *sxEP) sendPIO(dst int, h *Header, b []byte) {
	w := h.Pack()
	words := HeaderWords
	if h.Kind == Eager {
		words = EagerWords
	}
	pk := make([]byte, 0, 8*words+len(b))
	for i := 0; i < words; i++ {
		pk = binary.LittleEndian.AppendUint64(pk, w[i])
	}
	pk = append(pk, b...)
	node := e.t.places[dst].Node
	for off := 0; off < len(pk); off += pioBytes {
		part := pk[off:min(off+pioBytes, len(pk))]
		pl := make([]uint32, max((len(part)+3)/4, startx.MinPayloadWords))
		for i := range part {
			pl[i/4] |= uint32(part[i]) << (8 * (i % 4))
		}
		// With the transmit FIFO full, drain while waiting: the peer may be
		// waiting for room in ours.
		for !e.port.TrySend(e.env.Proc, startx.Low, node, uint32(dst), pl) {
			e.drain()
			e.env.Proc.Sleep(e.env.Proc.Core().Spec().PollIntervalPS)
		}
	}
}

func (e *sxEP) Send(dst int, h *Header, src uint64, n int) bool {
	b := make([]byte, n)
	if n > 0 {
		e.env.Proc.Read(src, b) // the data into the CPU, to store into the FIFO
	}
	e.locked(func() { e.sendPIO(dst, h, b) })
	return true
}

// drain takes up to Batch packets from the NIU (holding the lock): the
// device's own REQ and GO go to their rank's state, the rest into its
// inbox in shared memory.
func (e *sxEP) drain() int {
	got := 0
	p := e.env.Proc
	for got < e.t.cfg.Batch {
		m, ok := e.port.Poll(p, startx.Low)
		if !ok {
			break
		}
		got++
		raw := words(m.Payload)
		var w [HeaderWords]uint64
		k := HeaderWords
		if Kind(binary.LittleEndian.Uint64(raw)&0xff) == Eager {
			k = EagerWords
		}
		for len(raw) < 8*k {
			raw = append(raw, words(e.port.Recv(p, startx.Low).Payload)...)
		}
		for i := 0; i < k; i++ {
			w[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
		h := Unpack(&w)
		data := raw[8*k:]
		for len(data) < h.Len {
			data = append(data, words(e.port.Recv(p, startx.Low).Payload)...)
		}
		to := e.t.eps[int(m.H1)]
		switch h.Kind {
		case rdmaGO:
			to.ops[h.SReq].consent = true
		default:
			pk := sxPacket{h: h}
			if h.Len > 0 {
				pk.addr = to.slot()
				p.Write(pk.addr, data[:h.Len])
			}
			to.inbox = append(to.inbox, pk)
		}
	}
	return got
}

// slot is a free slot of the rank's inbox in its SMP's shared memory.
func (e *sxEP) slot() uint64 {
	if n := len(e.free); n > 0 {
		a := e.free[n-1]
		e.free = e.free[:n-1]
		return a
	}
	return e.env.Node.Alloc(MaxStartXPayload)
}

// words is a message's payload as bytes.
func words(pl []uint32) []byte {
	b := make([]byte, 4*len(pl))
	for i, v := range pl {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func (e *sxEP) Poll(deliver func(h *Header, p Payload)) (int, bool) {
	worked := false
	e.locked(func() {
		if e.drain() > 0 {
			worked = true
		}
	})
	n := 0
	for len(e.inbox) > 0 && n < e.t.cfg.Batch {
		pk := &e.inbox[0]
		if pk.h.Kind == rdmaREQ {
			if !e.serve(&pk.h) {
				break // deferred: what came after it waits too
			}
			worked = true
			e.inbox = e.inbox[1:]
			continue
		}
		deliver(&pk.h, Payload{Addr: pk.addr, Len: pk.h.Len})
		if pk.h.Len > 0 {
			e.free = append(e.free, pk.addr)
		}
		e.inbox = e.inbox[1:]
		n++
	}
	return n, worked
}

// serve answers an RDMA request h unless the tie-break defers it or the
// SMP's NIU is receiving for another rank: it arms the NIU, sends GO and
// copies the data into the user's buffer as it arrives.
//
// The tie-break: a rank defers a request from a higher rank while a
// transfer of its own to that rank waits for consent, so that of two
// ranks sending each other long messages the lower's goes first. And any
// rank defers the request of a rank that has consented to a transfer of
// its own not yet sent: that rank waits in serve for the data, and serving
// it now would keep both in serve, each waiting for data the other never
// sends (two ranks exchanging with Sendrecv, as an allreduce does, came to
// that when the consent arrived between two looks at the request).
func (e *sxEP) serve(h *Header) bool {
	for _, op := range e.ops {
		switch {
		case op == nil || op.done:
		case op.dst == h.Src && op.consent:
			return false
		case op.consent:
		case e.t.cfg.NoTieBreak || op.dst == h.Src && e.env.Rank < h.Src:
			return false
		}
	}
	p := e.env.Proc
	nd := e.nd
	taken := false
	e.locked(func() {
		if nd.recving {
			return
		}
		taken, nd.recving = true, true
		p.Store64(nd.rstatus, 0)
		e.port.Arm(p, e.t.places[h.Src].Node, nd.recv, uint64(h.Size), nd.rstatus)
		e.sendPIO(h.Src, &Header{Kind: rdmaGO, Src: e.env.Rank, SReq: h.SReq}, nil)
	})
	if !taken {
		return false
	}
	// One copy out of the pinned buffer, overlapped with the transfer:
	// the rank is busy until the message ends (001:L111).
	for copied := 0; copied < h.Size; {
		v := int(p.PollLoad64(nd.rstatus, func(v uint64) bool { return int(v) > copied }))
		shm.Copy(p, h.Addr+uint64(copied), nd.recv+uint64(copied), v-copied)
		copied = v
	}
	e.locked(func() { nd.recving = false })
	e.env.Moved()
	return true
}

// Put asks rank dst's SMP for its NIU; the transfer itself happens in Done
// once it consents.
func (e *sxEP) Put(dst int, local, remote uint64, n int) (int, bool) {
	if n > e.t.cfg.Params.ChunkBytes {
		panic(fmt.Sprintf("mpi: startx: a put of %d bytes exceeds the %d-byte pinned buffer", n, e.t.cfg.Params.ChunkBytes))
	}
	op := len(e.ops)
	e.ops = append(e.ops, &sxOp{dst: dst, local: local, remote: remote, n: n})
	e.Send(dst, &Header{Kind: rdmaREQ, Src: e.env.Rank, SReq: uint32(op), Size: n, Addr: remote}, 0, 0)
	return op, true
}

func (e *sxEP) Get(int, uint64, uint64, int) (int, bool) {
	panic("mpi: startx: the channel device moves long messages by put")
}

// Done drains the NIU for the consent and, once it came, sends: the data
// copied into the pinned halves a piece at a time, each sent by an RDMA
// command while the next is copied.
func (e *sxEP) Done(id int) (bool, error) {
	op := e.ops[id]
	if op == nil || op.done {
		return true, nil
	}
	if !op.consent {
		e.locked(func() { e.drain() })
		if !op.consent {
			return false, nil
		}
	}
	p := e.env.Proc
	nd := e.nd
	taken := false
	e.locked(func() {
		if !nd.sending {
			nd.sending, taken = true, true
		}
	})
	if !taken {
		return false, nil
	}
	piece := e.t.cfg.PieceBytes
	node := e.t.places[op.dst].Node
	var ends []uint64 // the send status each piece's command ends at
	for off, i := 0, 0; off < op.n; off, i = off+piece, i+1 {
		k := min(piece, op.n-off)
		half := nd.send + uint64(i%2*piece)
		if i >= 2 { // the half is free once the piece two before is read
			end := ends[i-2]
			p.PollLoad64(nd.sstatus, func(v uint64) bool { return v >= end })
		}
		shm.Copy(p, half, op.local+uint64(off), k)
		e.locked(func() {
			nd.sent += uint64(k)
			ends = append(ends, nd.sent)
			e.port.RDMASend(p, node, half, e.t.nodes[node].recv+uint64(off), k)
		})
	}
	last := ends[len(ends)-1]
	p.PollLoad64(nd.sstatus, func(v uint64) bool { return v >= last })
	e.locked(func() { nd.sending = false })
	op.done = true
	e.ops[id] = nil
	return true, nil
}

func (e *sxEP) Busy() bool { return false }
