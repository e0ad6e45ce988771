package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Wildcards and the null process.
const (
	AnySource = -1 // MPI_ANY_SOURCE: a receive from any rank
	AnyTag    = -1 // MPI_ANY_TAG: a receive of any tag
	ProcNull  = -2 // MPI_PROC_NULL: a send or receive that does nothing
	// Undefined is the color of ranks that want no communicator from Split
	// (MPI_UNDEFINED).
	Undefined = -32766
)

// MaxTag is the largest tag (MPI_TAG_UB).
const MaxTag = math.MaxInt32

// ErrTruncate is MPI_ERR_TRUNCATE: a message longer than the receive
// buffer (its first bytes were received). Errors of receives wrap it.
var ErrTruncate = errors.New("MPI_ERR_TRUNCATE: message truncated")

// Buf is a buffer in the rank's node memory.
type Buf struct {
	Addr uint64
	Len  int
}

// Slice is n bytes of b from off.
func (b Buf) Slice(off, n int) Buf {
	if off < 0 || n < 0 || off+n > b.Len {
		panic(fmt.Sprintf("mpi: slice [%d, %d) of a %d-byte buffer", off, off+n, b.Len))
	}
	return Buf{Addr: b.Addr + uint64(off), Len: n}
}

// Status is what a completed receive says: the source (in the
// communicator), the tag, the bytes received and the request's error.
type Status struct {
	Source, Tag, Count int
	Err                error
}

// Comm is a communicator as one rank sees it: a group of ranks with a
// context of its own, so that its messages match only its receives.
type Comm struct {
	r      *rank
	ctx    uint32
	group  []int       // rank in the communicator → world rank
	index  map[int]int // world rank → rank in the communicator
	me     int
	splits int
	shadow *Comm // the same group in the collective context
	attrs  map[any]any
}

func newComm(r *rank, ctx uint32, group []int) *Comm {
	c := &Comm{r: r, ctx: ctx, group: group, index: map[int]int{}, me: -1}
	for i, w := range group {
		c.index[w] = i
		if w == r.id {
			c.me = i
		}
	}
	c.shadow = &Comm{r: r, ctx: ctx + 1, group: group, index: c.index, me: c.me}
	c.shadow.shadow = c.shadow
	return c
}

// Rank is the calling rank's number in the communicator.
func (c *Comm) Rank() int { return c.me }

// Size is the number of ranks in the communicator.
func (c *Comm) Size() int { return len(c.group) }

// Context is the communicator's context id (0 for the world).
func (c *Comm) Context() int { return int(c.ctx) }

// WorldRank is the world rank of rank r of the communicator.
func (c *Comm) WorldRank(r int) int { return c.group[r] }

// Place is where rank r of the communicator runs.
func (c *Comm) Place(r int) Place { return c.r.w.places[c.group[r]] }

// rankOf is the communicator rank of world rank w.
func (c *Comm) rankOf(w int) int {
	if i, ok := c.index[w]; ok {
		return i
	}
	return -1
}

// Collective is the communicator's twin for collective operations: the
// same group with a context of its own, so that a collective's messages
// never match the program's receives. Collectives implementations send
// and receive on it.
func (c *Comm) Collective() *Comm { return c.shadow }

// Attr returns what SetAttr cached on the communicator under key (MPI's
// attribute caching: a topology-aware collective keeps its
// sub-communicators here).
func (c *Comm) Attr(key any) (any, bool) {
	v, ok := c.attrs[key]
	return v, ok
}

// SetAttr caches v on the communicator under key.
func (c *Comm) SetAttr(key, v any) {
	if c.attrs == nil {
		c.attrs = map[any]any{}
	}
	c.attrs[key] = v
}

// Now is the current simulated time (MPI_Wtime).
func (c *Comm) Now() sim.Tick { return c.r.p.Now() }

// Proc is the rank's process.
func (c *Comm) Proc() *cpu.Proc { return c.r.p }

// Node is the rank's node (nil on a machine that is not a machine.Cluster).
func (c *Comm) Node() *machine.Node { return c.r.node }

// Compute spends cycles of the rank's core on the program's own work.
func (c *Comm) Compute(cycles int) { c.r.compute(cycles) }

// Alloc allocates an n-byte buffer in the rank's node memory, registered
// for the NIC (zero-filled).
func (c *Comm) Alloc(n int) Buf {
	if n < 0 {
		panic(fmt.Sprintf("mpi: Alloc(%d)", n))
	}
	return c.r.alloc(n)
}

// Write writes data into b from its start (the rank's stores, costed).
func (c *Comm) Write(b Buf, data []byte) {
	if len(data) > b.Len {
		panic(fmt.Sprintf("mpi: writing %d bytes into a %d-byte buffer", len(data), b.Len))
	}
	if len(data) > 0 {
		c.r.p.Write(b.Addr, data)
	}
}

// Read returns the contents of b (the rank's loads, costed).
func (c *Comm) Read(b Buf) []byte {
	out := make([]byte, b.Len)
	if b.Len > 0 {
		c.r.p.Read(b.Addr, out)
	}
	return out
}

// WriteUint64s writes v as little-endian words into b.
func (c *Comm) WriteUint64s(b Buf, v []uint64) {
	data := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(data[8*i:], x)
	}
	c.Write(b, data)
}

// Uint64s reads b as little-endian words.
func (c *Comm) Uint64s(b Buf) []uint64 {
	data := c.Read(b)
	v := make([]uint64, len(data)/8)
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(data[8*i:])
	}
	return v
}

// WriteFloat64s writes v as IEEE 754 doubles into b.
func (c *Comm) WriteFloat64s(b Buf, v []float64) {
	u := make([]uint64, len(v))
	for i, x := range v {
		u[i] = math.Float64bits(x)
	}
	c.WriteUint64s(b, u)
}

// Float64s reads b as doubles.
func (c *Comm) Float64s(b Buf) []float64 {
	u := c.Uint64s(b)
	v := make([]float64, len(u))
	for i, x := range u {
		v[i] = math.Float64frombits(x)
	}
	return v
}

// Request is a non-blocking operation under way.
type Request struct {
	comm     *Comm
	send     bool
	blocking bool   // posted by Send or Recv (for the deadlock report)
	arg      int    // the peer as the program gave it (rank in comm, AnySource, ProcNull)
	peer     int    // world rank of the peer (the actual source once matched)
	tag      int    // as given (AnyTag)
	ctx      uint32 // the communicator's context
	buf      Buf
	id       uint32 // its number while packets may refer to it
	done     bool
	status   Status
	err      error

	// protocol state
	tr        int    // transport
	mode      Mode   // rendezvous mode
	size      int    // receive: the matched message's size
	count     int    // bytes moved: min(size, receive buffer)
	peerReq   uint32 // the other side's request
	posted    int    // bytes whose move was started
	got       int    // copy mode: bytes arrived
	remote    uint64 // put/get: the other side's buffer
	get       bool   // the transfer reads (we receive) rather than writes
	ops       []int  // chunks in flight
	xferDone  bool
	finQueued bool
	finSent   bool
}

// Done reports whether the request has completed (without progressing).
func (q *Request) Done() bool { return q.done }

func (q *Request) matches(h *Header) bool {
	return q.ctx == h.Ctx && (q.peer == AnySource || q.peer == h.Src) && (q.tag == AnyTag || q.tag == h.Tag)
}

func (q *Request) args() string {
	peer := fmt.Sprint(q.arg)
	switch q.arg {
	case AnySource:
		peer = "ANY"
	case ProcNull:
		peer = "PROC_NULL"
	}
	tag := fmt.Sprint(q.tag)
	if q.tag == AnyTag {
		tag = "ANY"
	}
	s := fmt.Sprintf("source %s, tag %s", peer, tag)
	if q.send {
		s = fmt.Sprintf("dest %s, tag %s", peer, tag)
	}
	if q.ctx>>1 != 0 {
		s += fmt.Sprintf(", comm %d", q.ctx>>1)
	}
	return s
}

func (q *Request) String() string {
	op := "Irecv"
	if q.send {
		op = "Isend"
	}
	if q.blocking {
		op = op[1:]
	}
	return op + "(" + q.args() + ")"
}

func (c *Comm) enter() { c.r.compute(c.r.w.cfg.CallCycles) }

func (c *Comm) check(peer, tag int, recv bool) error {
	switch {
	case peer == ProcNull:
	case recv && peer == AnySource:
	case peer < 0 || peer >= len(c.group):
		return fmt.Errorf("mpi: rank %d: no rank %d in a communicator of %d", c.r.id, peer, len(c.group))
	}
	if tag < 0 && !(recv && tag == AnyTag) || tag > MaxTag {
		return fmt.Errorf("mpi: rank %d: tag %d out of 0..%d", c.r.id, tag, MaxTag)
	}
	return nil
}

// Isend starts sending b to rank dst with tag (MPI_Isend).
func (c *Comm) Isend(b Buf, dst, tag int) *Request {
	c.enter()
	return c.isend(b, dst, tag, false)
}

func (c *Comm) isend(b Buf, dst, tag int, blocking bool) *Request {
	r := c.r
	q := &Request{comm: c, send: true, blocking: blocking, arg: dst, tag: tag, ctx: c.ctx, buf: b}
	if err := c.check(dst, tag, false); err != nil {
		q.err = err
		r.complete(q)
		return q
	}
	if dst == ProcNull {
		r.complete(q)
		return q
	}
	q.peer = c.group[dst]
	q.tr = r.routes[q.peer]
	pr := r.w.params[q.tr]
	h := Header{Src: r.id, Ctx: c.ctx, Tag: tag, Size: b.Len}
	if b.Len <= pr.EagerLimit {
		h.Kind, h.Len = Eager, b.Len
		r.w.count(q.tr, "eager", b.Len)
		r.enqueue(q.peer, &item{h: h, src: b.Addr, n: b.Len, req: q, sent: func() { r.complete(q) }})
	} else {
		q.mode = pr.Rendezvous
		r.register(q)
		h.Kind, h.Mode, h.SReq = RTS, q.mode, q.id
		if q.mode == RendezvousGet {
			h.Addr = b.Addr
		}
		r.w.count(q.tr, "rendezvous-"+q.mode.String(), b.Len)
		r.enqueue(q.peer, &item{h: h, req: q})
	}
	r.push(q.peer) // try at once
	return q
}

// Irecv starts receiving into b a message from rank src (or AnySource)
// with tag (or AnyTag) (MPI_Irecv).
func (c *Comm) Irecv(b Buf, src, tag int) *Request {
	c.enter()
	return c.irecv(b, src, tag, false)
}

func (c *Comm) irecv(b Buf, src, tag int, blocking bool) *Request {
	r := c.r
	q := &Request{comm: c, blocking: blocking, arg: src, tag: tag, ctx: c.ctx, buf: b, peer: src}
	if err := c.check(src, tag, true); err != nil {
		q.err = err
		r.complete(q)
		return q
	}
	if src == ProcNull {
		q.status = Status{Source: ProcNull, Tag: AnyTag}
		r.complete(q)
		return q
	}
	if src != AnySource {
		q.peer = c.group[src]
	}
	if !r.matchUnexpected(q) {
		r.posted = append(r.posted, q)
	}
	return q
}

// Wait waits for the request to complete (MPI_Wait). A receive's status
// says what arrived; its error wraps ErrTruncate when the message was
// longer than the buffer.
func (c *Comm) Wait(q *Request) (Status, error) {
	c.enter()
	return c.wait("Wait", q)
}

func (c *Comm) wait(call string, q *Request) (Status, error) {
	r := c.r
	r.call, r.waitOn = call, []*Request{q}
	r.waitUntil(func() bool { return q.done })
	return q.status, q.err
}

// Test makes one pass of progress and reports whether the request has
// completed (MPI_Test).
func (c *Comm) Test(q *Request) (bool, Status, error) {
	c.enter()
	if !q.done {
		c.r.progress()
	}
	if !q.done {
		return false, Status{}, nil
	}
	return true, q.status, q.err
}

// Waitall waits for every request (MPI_Waitall). The statuses are in the
// requests' order; the error is the first request's error, if any.
func (c *Comm) Waitall(qs ...*Request) ([]Status, error) {
	c.enter()
	return c.waitall("Waitall", qs)
}

func (c *Comm) waitall(call string, qs []*Request) ([]Status, error) {
	r := c.r
	r.call, r.waitOn = call, slices.Clone(qs)
	r.waitUntil(func() bool {
		for i := 0; i < len(r.waitOn); {
			if r.waitOn[i].done {
				r.waitOn = append(r.waitOn[:i], r.waitOn[i+1:]...)
			} else {
				i++
			}
		}
		return len(r.waitOn) == 0
	})
	st := make([]Status, len(qs))
	var err error
	for i, q := range qs {
		st[i] = q.status
		if q.err != nil && err == nil {
			err = q.err
		}
	}
	return st, err
}

// Send sends b to rank dst with tag and returns when b may be reused
// (MPI_Send: an eager message once it is copied out, a rendezvous one once
// the receiver has it).
func (c *Comm) Send(b Buf, dst, tag int) error {
	c.enter()
	q := c.isend(b, dst, tag, true)
	_, err := c.wait("Send", q)
	return err
}

// Recv receives into b a message from rank src with tag (MPI_Recv).
func (c *Comm) Recv(b Buf, src, tag int) (Status, error) {
	c.enter()
	q := c.irecv(b, src, tag, true)
	return c.wait("Recv", q)
}

// Sendrecv sends sb to dst and receives rb from src at once
// (MPI_Sendrecv).
func (c *Comm) Sendrecv(sb Buf, dst, stag int, rb Buf, src, rtag int) (Status, error) {
	c.enter()
	rq := c.irecv(rb, src, rtag, false)
	sq := c.isend(sb, dst, stag, false)
	st, err := c.waitall("Sendrecv", []*Request{sq, rq})
	return st[1], err
}

// Iprobe makes one pass of progress and reports whether a message from src
// (or AnySource) with tag (or AnyTag) has arrived that a receive would
// match, without receiving it (MPI_Iprobe): its status gives its source,
// tag and size.
func (c *Comm) Iprobe(src, tag int) (bool, Status, error) {
	c.enter()
	if err := c.check(src, tag, true); err != nil {
		return false, Status{}, err
	}
	if src == ProcNull {
		return true, Status{Source: ProcNull, Tag: AnyTag}, nil
	}
	c.r.progress()
	st, ok := c.probe(src, tag)
	return ok, st, nil
}

// Probe waits until a message from src with tag has arrived and returns
// its status without receiving it (MPI_Probe).
func (c *Comm) Probe(src, tag int) (Status, error) {
	c.enter()
	if err := c.check(src, tag, true); err != nil {
		return Status{}, err
	}
	if src == ProcNull {
		return Status{Source: ProcNull, Tag: AnyTag}, nil
	}
	r := c.r
	q := &Request{comm: c, blocking: true, arg: src, tag: tag, ctx: c.ctx, peer: src}
	if src != AnySource {
		q.peer = c.group[src]
	}
	var st Status
	r.call, r.waitOn = "Probe", []*Request{q}
	r.waitUntil(func() bool {
		var ok bool
		st, ok = c.probe(src, tag)
		return ok
	})
	return st, nil
}

// probe looks for a matching unexpected message.
func (c *Comm) probe(src, tag int) (Status, bool) {
	q := Request{ctx: c.ctx, peer: src, tag: tag}
	if src != AnySource {
		q.peer = c.group[src]
	}
	for _, u := range c.r.unexp {
		if q.matches(&u.h) {
			return Status{Source: c.rankOf(u.h.Src), Tag: u.h.Tag, Count: u.h.Size}, true
		}
	}
	return Status{}, false
}
