package lcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// The protocol's active-message handlers; user handlers take ids from
// AMUser on.
const (
	amTag  uint8 = iota + 1 // a tagged message: eager data or a rendezvous request
	amAck                   // RPUT: the receiver matched; here is its buffer
	amFin                   // RPUT: a rail's fragments are in place; RGET: the receiver has read them
	AMUser = 16
)

// The kinds of a tagged message, in its immediate's top bits.
const (
	kindShift = 62
	kindEager = 0
	kindRPUT  = 1
	kindRGET  = 2
	sizeMask  = uint64(1)<<kindShift - 1
)

// AnySource and AnyTag are the wildcards of a receive.
const (
	AnySource = -1
	AnyTag    = -1
)

// ErrTruncate is a message longer than its receive buffer: its first bytes
// arrive, the receive's Status.Err wraps this.
var ErrTruncate = errors.New("lcp: message truncated")

// Buf is registered memory of a rank's node.
type Buf struct {
	Addr uint64
	Len  int
}

// Slice is n bytes of b from off.
func (b Buf) Slice(off, n int) Buf {
	if off < 0 || n < 0 || off+n > b.Len {
		panic(fmt.Sprintf("lcp: slice [%d, +%d) of a %d-byte buffer", off, n, b.Len))
	}
	return Buf{Addr: b.Addr + uint64(off), Len: n}
}

// Status is a finished receive's source, tag and byte count.
type Status struct {
	Source, Tag, Count int
	Err                error
}

// rdvInfo is a rendezvous request's contents: the sender's request, its
// buffer (RGET) and the message's size.
type rdvInfo struct {
	id, addr uint64
	size     int
}

// state is where a request is in its protocol.
type state uint8

const (
	stPost     state = iota // a send to try (eager packet or rendezvous request)
	stMatch                 // a receive posted, waiting for its message
	stAck                   // RPUT receiver: the ACK to send; then FINs to wait for
	stWaitAck               // RPUT sender: waiting for the ACK
	stFrags                 // RPUT sender: fragments to post (and FINs); RGET receiver: reads to post
	stWaitOps               // waiting for posted fragments to complete
	stFin                   // RGET receiver: its FIN to send
	stWaitFins              // RPUT receiver: FINs to come; RGET sender: the FIN
	stDone
)

// Request is an Isend or Irecv in progress: the state machine the progress
// engine steps.
type Request struct {
	send   bool
	id     uint64
	peer   int // destination, or the source asked for (AnySource)
	tag    int
	buf    Buf
	st     state
	status Status
	// The rendezvous.
	proto    Protocol
	remoteID uint64
	remote   uint64 // the peer's buffer
	size     int    // bytes moved
	frags    int
	next     int // the next fragment to post
	nextOff  int // and the offset in it of its next work request
	ops      []*verbs.Posted
	finSent  []bool // RPUT sender: per rail
	fins     int    // FINs still to come
	reg      []bool // PerNIC: rails whose descriptor exists
	what     string
	postedAt sim.Tick // a receive: when it was posted
}

// Done reports whether the request has finished.
func (q *Request) Done() bool { return q.st == stDone }

// Stats counts what a rank's protocol layer did.
type Stats struct {
	Eager, Rendezvous uint64
	// Fragments is the fragments this rank posted (RPUT writes, RGET
	// reads) per rail.
	Fragments []uint64
	// Registrations is the memory descriptors this rank created.
	Registrations uint64
	// Unexpected is the tagged messages that found no posted receive.
	Unexpected uint64
	// Searched is the list entries the rank's matching units examined.
	Searched uint64
	// ZeroCopy is the eager messages delivered into their receive's
	// buffer by the NIC (matching on arrival, the receive posted first).
	ZeroCopy uint64
}

// Endpoint is the protocol endpoint towards one peer: a transport endpoint
// per rail, with the configuration they share (the eager limit, the
// rendezvous every rail supports, the fragment size). Control messages
// and eager data go on its first rail, so that matching sees a pair's
// messages in the order they were sent; fragments go round-robin over all
// of them.
type Endpoint struct {
	Peer  int
	Rails []*Iface
}

// Proc is a rank: its process, its transport endpoints and the
// controller's pending requests.
type Proc struct {
	w        *world
	rank     int
	place    Place
	node     *machine.Node
	cp       *cpu.Proc
	ifaces   []*Iface
	eps      []*Endpoint
	handlers [256]Handler
	pending  []*Request
	sends    map[uint64]*Request // rendezvous sends by id, until done
	recvs    map[uint64]*Request // rendezvous receives by id, until done
	nextID   uint64
	stats    Stats
	waiting  string
	finish   sim.Tick
	finished bool
}

// Rank is the process's rank; Size the number of ranks.
func (p *Proc) Rank() int { return p.rank }

// Size is the number of ranks.
func (p *Proc) Size() int { return len(p.w.places) }

// Proc is the rank's process (its costed operations).
func (p *Proc) Proc() *cpu.Proc { return p.cp }

// Node is the rank's node.
func (p *Proc) Node() *machine.Node { return p.node }

// Now is the simulated time.
func (p *Proc) Now() sim.Tick { return p.cp.Now() }

// Compute spends cycles of the rank's core.
func (p *Proc) Compute(cycles int) { p.cp.Compute(cycles) }

// Rails is the number of rails the rank stripes over.
func (p *Proc) Rails() int { return len(p.ifaces) }

// Iface is the rank's transport endpoint on rail r.
func (p *Proc) Iface(r int) *Iface { return p.ifaces[r] }

// Endpoint is the protocol endpoint towards rank dst.
func (p *Proc) Endpoint(dst int) *Endpoint { return p.eps[dst] }

// SetHandler installs h for active messages with id am (AMUser or more).
func (p *Proc) SetHandler(am uint8, h Handler) {
	if am < AMUser {
		panic(fmt.Sprintf("lcp: handler id %d is the protocol's (user ids from %d)", am, AMUser))
	}
	p.handlers[am] = h
}

// Alloc takes n bytes of the rank's node memory, pinned and mapped for
// every NIC of the node (one IOMMU domain): buffers of 2 MB or more on
// 2 MB pages, as an MPI runtime backs large buffers with huge pages (with
// 4 KB pages, the IOTLB misses of four NICs streaming at once keep the
// node's one IOMMU walking page tables).
func (p *Proc) Alloc(n int) Buf {
	var a uint64
	var err error
	if n >= 2<<20 {
		a, err = p.node.RegisterHuge(uint64(n), rw)
	} else {
		a, err = alloc(p.node, uint64(n))
	}
	if err != nil {
		panic(fmt.Sprintf("lcp: rank %d: %v", p.rank, err))
	}
	return Buf{Addr: a, Len: n}
}

// Write stores data at b (the core's costed stores).
func (p *Proc) Write(b Buf, data []byte) { p.cp.Write(b.Addr, data[:min(len(data), b.Len)]) }

// Read loads b (the core's costed loads).
func (p *Proc) Read(b Buf) []byte {
	out := make([]byte, b.Len)
	p.cp.Read(b.Addr, out)
	return out
}

// waitUnit waits until a matching unit's search ends.
func (p *Proc) waitUnit(t sim.Tick) {
	if now := p.cp.Now(); t > now {
		p.cp.Sleep(t - now)
	}
}

func (p *Proc) checkPeer(r int, wild bool, what string) error {
	if wild && r == AnySource {
		return nil
	}
	if r < 0 || r >= p.Size() {
		return fmt.Errorf("lcp: %s rank %d out of 0..%d", what, r, p.Size()-1)
	}
	if r == p.rank {
		return fmt.Errorf("lcp: rank %d: messages to itself are not supported", r)
	}
	return nil
}

func checkTag(tag int, wild bool) error {
	if wild && tag == AnyTag {
		return nil
	}
	if tag < 0 || tag > int(userTagMask>>1) {
		return fmt.Errorf("lcp: tag %d out of 0..%d", tag, userTagMask>>1)
	}
	return nil
}

// Isend starts sending b to rank dst with tag.
func (p *Proc) Isend(b Buf, dst, tag int) (*Request, error) {
	if err := errors.Join(p.checkPeer(dst, false, "destination"), checkTag(tag, false)); err != nil {
		return nil, err
	}
	p.cp.Compute(p.w.cfg.CallCycles)
	p.nextID++
	q := &Request{send: true, id: p.nextID, peer: dst, tag: tag, buf: b, st: stPost,
		what: fmt.Sprintf("Isend(%d bytes to %d, tag %d)", b.Len, dst, tag)}
	if b.Len >= p.w.cfg.EagerLimit {
		q.proto = p.w.cfg.Protocol
		p.stats.Rendezvous++
		p.sends[q.id] = q
		if q.proto == RGET {
			// The receiver reads the fragments: the sender's descriptors
			// exist before the request leaves.
			q.size, q.frags = b.Len, p.fragments(b.Len)
			p.register(q, q.frags)
		}
	} else {
		p.stats.Eager++
	}
	// A pair's messages leave in the order they were posted (matching
	// relies on it): an earlier send still waiting for credit goes first.
	queued := p.queued(dst)
	p.pending = append(p.pending, q)
	if !queued {
		p.step(q)
	}
	return q, nil
}

// queued reports whether a send to dst is still waiting to leave.
func (p *Proc) queued(dst int) bool {
	for _, q := range p.pending {
		if q.send && q.peer == dst && q.st == stPost {
			return true
		}
	}
	return false
}

// Irecv starts a receive into b from rank src (or AnySource) with tag (or
// AnyTag).
func (p *Proc) Irecv(b Buf, src, tag int) (*Request, error) {
	if err := errors.Join(p.checkPeer(src, true, "source"), checkTag(tag, true)); err != nil {
		return nil, err
	}
	p.cp.Compute(p.w.cfg.CallCycles)
	p.nextID++
	q := &Request{id: p.nextID, peer: src, tag: tag, buf: b, st: stMatch, postedAt: p.cp.Now(),
		what: fmt.Sprintf("Irecv(%d bytes from %s, tag %s)", b.Len, wildName(src, AnySource), wildName(tag, AnyTag))}
	p.pending = append(p.pending, q)
	// The matching unit sees what has arrived before this receive: the
	// rails are drained first, so that an arrived message is matched in
	// arrival order, as the NIC's unit would have taken it.
	for _, t := range p.ifaces {
		for t.poll(8) {
		}
	}
	var want, ign uint64
	want = MakeTag(0, max(src, 0), max(tag, 0))
	if src == AnySource {
		ign |= srcMask
	}
	if tag == AnyTag {
		ign |= userTagMask
	}
	if m := p.ifaces[0].RecvTag(want, ign, q); m != nil {
		p.matched(p.ifaces[0], q, m)
	}
	return q, nil
}

func wildName(v, wild int) string {
	if v == wild {
		return "ANY"
	}
	return fmt.Sprint(v)
}

// Wait runs the progress engine until q has finished.
func (p *Proc) Wait(q *Request) (Status, error) {
	p.waiting = q.what
	for !q.Done() {
		p.progress()
	}
	p.waiting = ""
	return q.status, q.status.Err
}

// Waitall waits for every request; the first error is returned.
func (p *Proc) Waitall(qs ...*Request) error {
	var first error
	for _, q := range qs {
		if _, err := p.Wait(q); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Send is Isend and Wait.
func (p *Proc) Send(b Buf, dst, tag int) error {
	q, err := p.Isend(b, dst, tag)
	if err != nil {
		return err
	}
	_, err = p.Wait(q)
	return err
}

// Recv is Irecv and Wait.
func (p *Proc) Recv(b Buf, src, tag int) (Status, error) {
	q, err := p.Irecv(b, src, tag)
	if err != nil {
		return Status{}, err
	}
	return p.Wait(q)
}

// fragments is the fragments of an n-byte rendezvous (none for no bytes:
// a receive buffer of 0 bytes truncates to nothing).
func (p *Proc) fragments(n int) int {
	f := p.w.cfg.FragmentBytes
	return (n + f - 1) / f
}

// fragment is fragment i of q: its offset and length.
func (p *Proc) fragment(q *Request, i int) (int, int) {
	f := p.w.cfg.FragmentBytes
	return i * f, min(f, q.size-i*f)
}

// register creates the memory descriptors of a rendezvous of frags
// fragments on this side: one per fragment, or one per rail carrying
// fragments (Config.Registration).
func (p *Proc) register(q *Request, frags int) {
	n := frags
	if p.w.cfg.Registration == PerNIC {
		n = min(frags, len(p.ifaces))
	}
	p.stats.Registrations += uint64(n)
	p.cp.Compute(n * p.w.cfg.RegCycles)
}

// progress is one pass of the controller: poll every rail (handlers run to
// completion there), then step every pending request's state machine;
// after a pass that did nothing the rank pauses a poll interval.
func (p *Proc) progress() {
	worked := false
	for _, t := range p.ifaces {
		if t.poll(8) {
			worked = true
		}
	}
	var blocked []int // peers with a send that could not leave in this pass
	for _, q := range p.pending {
		if q.st == stPost && slices.Contains(blocked, q.peer) {
			continue
		}
		if p.step(q) {
			worked = true
		} else if q.st == stPost {
			blocked = append(blocked, q.peer)
		}
	}
	live := p.pending[:0]
	for _, q := range p.pending {
		if !q.Done() {
			live = append(live, q)
		}
	}
	clear(p.pending[len(live):])
	p.pending = live
	if !worked {
		p.cp.Sleep(p.cp.Core().Spec().PollIntervalPS)
	}
}

// step advances q as far as it can go now; it reports whether it did.
func (p *Proc) step(q *Request) bool {
	ep := p.eps[max(q.peer, 0)]
	switch q.st {
	case stPost:
		t := ep.Rails[0]
		tag := MakeTag(0, p.rank, q.tag)
		if q.proto == 0 {
			if !t.SendTag(q.peer, tag, uint64(q.buf.Len), q.buf.Addr, q.buf.Len) {
				return false
			}
			q.st = stDone
			return true
		}
		kind := uint64(kindRPUT)
		q.st = stWaitAck
		if q.proto == RGET {
			kind, q.st = kindRGET, stWaitFins
			q.fins = 1
		}
		if !t.sendTagged(q.peer, tag, kind<<kindShift|uint64(q.buf.Len), rdvInfo{id: q.id, addr: q.buf.Addr, size: q.buf.Len}, 0, 0) {
			q.st = stPost
			return false
		}
		return true
	case stAck:
		var h [32]byte
		binary.LittleEndian.PutUint64(h[0:], q.remoteID)
		binary.LittleEndian.PutUint64(h[8:], q.id)
		binary.LittleEndian.PutUint64(h[16:], q.buf.Addr)
		binary.LittleEndian.PutUint64(h[24:], uint64(q.size))
		if !ep.Rails[0].SendAM(q.status.Source, amAck, h[:], 0, 0) {
			return false
		}
		q.st = stWaitFins
		if q.fins == 0 { // nothing to move (a receive of no bytes)
			q.st = stDone
			delete(p.recvs, q.id)
		}
		return true
	case stFrags:
		return p.postFragments(q)
	case stWaitOps:
		for len(q.ops) > 0 && q.ops[0].Done {
			if err := q.ops[0].Err; err != nil {
				panic(fmt.Sprintf("lcp: rank %d: a fragment failed: %v", p.rank, err))
			}
			q.ops = q.ops[1:]
		}
		if len(q.ops) > 0 {
			return false
		}
		if q.send {
			q.st = stDone
			delete(p.sends, q.id)
		} else {
			q.st = stFin
			return p.step(q) || true
		}
		return true
	case stFin:
		var h [8]byte
		binary.LittleEndian.PutUint64(h[:], q.remoteID)
		if !p.eps[q.status.Source].Rails[0].SendAM(q.status.Source, amFin, h[:], 0, 0) {
			return false
		}
		q.st = stDone
		delete(p.recvs, q.id)
		return true
	}
	return false
}

// postFragments posts q's fragments round-robin over the rails as far as
// the send queues take them: fragment i on rail i mod rails, each with its
// descriptor, as work requests of at most ChunkBytes. An RPUT sender
// follows a rail's last fragment with a FIN on that rail (after the data
// on the same QP).
func (p *Proc) postFragments(q *Request) bool {
	peer := q.peer
	if !q.send {
		peer = q.status.Source
	}
	ep := p.eps[peer]
	nr := len(ep.Rails)
	worked := false
	for q.next < q.frags {
		i := q.next
		r := i % nr
		t := ep.Rails[r]
		off, n := p.fragment(q, i)
		c := min(p.w.cfg.ChunkBytes, n-q.nextOff)
		at := uint64(off + q.nextOff)
		// Batched: a fragment's work requests but its first and last go by
		// the NICs' bulk paths; the first brings the rail's pipeline to its
		// steady state and the last ends it, on the blocks.
		bulk := p.w.bulk && q.nextOff > 0 && q.nextOff+c < n
		post := (*verbs.Ctx).Get
		switch {
		case q.send && bulk:
			post = (*verbs.Ctx).PutBulk
		case q.send:
			post = (*verbs.Ctx).Put
		case bulk:
			post = (*verbs.Ctx).GetBulk
		}
		op := t.rdma(peer, q.buf.Addr+at, q.remote+at, c, post)
		if op == nil {
			return worked
		}
		if q.nextOff == 0 {
			if q.send && p.w.cfg.Registration == PerFragment {
				p.register(q, 1) // the source fragment's descriptor, as it is posted
			} else if q.send && !q.reg[r] {
				q.reg[r] = true
				p.register(q, 1)
			}
			p.stats.Fragments[r]++
		}
		q.ops = append(q.ops, op)
		worked = true
		if q.nextOff += c; q.nextOff == n {
			q.next, q.nextOff = q.next+1, 0
		}
	}
	if q.send {
		for r := 0; r < min(nr, q.frags); r++ {
			if q.finSent[r] {
				continue
			}
			var h [8]byte
			binary.LittleEndian.PutUint64(h[:], q.remoteID)
			if !ep.Rails[r].SendAM(peer, amFin, h[:], 0, 0) {
				return worked
			}
			q.finSent[r] = true
			worked = true
		}
	}
	q.st = stWaitOps
	return true
}

// matched handles a tagged message that matched receive q: eager data is
// copied in (the unexpected copy, or the receive slot), a rendezvous
// request starts the receiver's side.
func (p *Proc) matched(t *Iface, q *Request, m *unexpected) {
	kind := m.imm >> kindShift
	size := int(m.imm & sizeMask)
	q.status = Status{Source: m.src, Tag: int(uint32(m.tag)), Count: min(size, q.buf.Len)}
	if size > q.buf.Len {
		q.status.Err = fmt.Errorf("%w: %d bytes into a receive of %d", ErrTruncate, size, q.buf.Len)
	}
	if kind == kindEager {
		switch {
		case q.status.Count > 0 && m.direct:
			// The NIC's DMA wrote these bytes at the same time as it wrote
			// them into the slot: they move without the core.
			buf := make([]byte, q.status.Count)
			p.node.Mem.Read(m.addr, buf)
			p.node.Mem.Write(q.buf.Addr, buf)
			p.stats.ZeroCopy++
		case q.status.Count > 0:
			p.cp.Memcpy(q.buf.Addr, m.addr, uint64(q.status.Count))
		}
		if m.pooled {
			p.w.ubufs[p.rank] = append(p.w.ubufs[p.rank], m.addr)
		}
		q.st = stDone
		return
	}
	p.stats.Rendezvous++
	q.remoteID, q.remote, q.size = m.rdv.id, m.rdv.addr, q.status.Count
	q.frags = p.fragments(q.size)
	p.recvs[q.id] = q
	p.register(q, q.frags) // the receive side's descriptors, before the data can come
	if kind == kindRPUT {
		q.proto = RPUT
		q.fins = min(q.frags, len(p.eps[m.src].Rails))
		q.st = stAck
	} else {
		q.proto = RGET
		q.st = stFrags
	}
	p.step(q)
}

// onTag is the handler of tagged messages: the rail's matching unit looks
// for a posted receive; with none, the message joins its unexpected list
// (eager data copied out of the receive slot first).
func (p *Proc) onTag(t *Iface, src int, hdr []byte, pl Payload) {
	m := &unexpected{src: src, tag: binary.LittleEndian.Uint64(hdr[0:]), imm: binary.LittleEndian.Uint64(hdr[8:]),
		addr: pl.Addr, n: pl.Len, rdv: rdvInfo{id: binary.LittleEndian.Uint64(hdr[16:]), addr: binary.LittleEndian.Uint64(hdr[24:]),
			size: int(binary.LittleEndian.Uint64(hdr[32:]))}}
	q, n := t.unit.arrive(m.tag)
	// On arrival the unit searched when the message came in (t.arrivedAt),
	// on poll it searches now; the rank waits for what is left of it.
	p.waitUnit(t.unit.search(t.arrivedAt, n, p.w.cfg.MatchPS))
	if q != nil {
		// BXI's zero copy: the NIC put the eager data of a receive posted
		// before the message arrived straight into its buffer.
		m.direct = p.w.cfg.Matching == OnArrival && q.postedAt <= t.arrivedAt
		p.matched(t, q, m)
		return
	}
	p.stats.Unexpected++
	if m.n > 0 {
		b := p.unexpectedBuf(m.n)
		p.cp.Memcpy(b, pl.Addr, uint64(m.n))
		m.addr, m.pooled = b, true
	}
	t.unit.umq = append(t.unit.umq, m)
}

// unexpectedBuf is memory for an unexpected message's data: a block of the
// eager limit, reused once its message matched.
func (p *Proc) unexpectedBuf(n int) uint64 {
	if len(p.w.ubufs[p.rank]) > 0 {
		b := p.w.ubufs[p.rank][len(p.w.ubufs[p.rank])-1]
		p.w.ubufs[p.rank] = p.w.ubufs[p.rank][:len(p.w.ubufs[p.rank])-1]
		return b
	}
	return p.node.Alloc(uint64(p.w.cfg.EagerLimit))
}

// onAck is the RPUT sender's handler of the receiver's ACK: the fragments
// may go (the progress engine posts them, not the handler).
func (p *Proc) onAck(t *Iface, src int, hdr []byte, _ Payload) {
	q := p.sends[binary.LittleEndian.Uint64(hdr[0:])]
	if q == nil || q.st != stWaitAck {
		panic(fmt.Sprintf("lcp: rank %d: an ACK from %d for no rendezvous waiting for one", p.rank, src))
	}
	q.remoteID = binary.LittleEndian.Uint64(hdr[8:])
	q.remote, q.size = binary.LittleEndian.Uint64(hdr[16:]), int(binary.LittleEndian.Uint64(hdr[24:]))
	q.frags = p.fragments(q.size)
	nr := len(p.eps[q.peer].Rails)
	q.finSent, q.reg = make([]bool, nr), make([]bool, nr)
	q.st = stFrags
}

// onFin is the handler of FINs: a rail's fragments of an RPUT are in
// place, or (RGET) the receiver has read the sender's buffer.
func (p *Proc) onFin(t *Iface, src int, hdr []byte, _ Payload) {
	id := binary.LittleEndian.Uint64(hdr)
	q := p.recvs[id]
	if q == nil {
		q = p.sends[id]
	}
	if q == nil || q.st != stWaitFins {
		panic(fmt.Sprintf("lcp: rank %d: a FIN from %d for no rendezvous waiting for one", p.rank, src))
	}
	if q.fins--; q.fins == 0 {
		q.st = stDone
		delete(p.recvs, id)
		delete(p.sends, id)
	}
}
