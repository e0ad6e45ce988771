package torus

import (
	"math/bits"

	"github.com/aaemu/aaemu/sim"
)

// Port is one of a router's six link ports, by the direction its output
// goes: XPlus sends towards x+1 (and its input receives from x+1).
type Port uint8

const (
	XPlus Port = iota
	XMinus
	YPlus
	YMinus
	ZPlus
	ZMinus
	NumLinkPorts
	// Local is the node itself: the injection FIFOs.
	Local = NumLinkPorts
)

var portNames = [...]string{"xp", "xm", "yp", "ym", "zp", "zm", "local"}

func (p Port) String() string { return portNames[p] }

func portOf(dim int, dir int8) Port {
	if dir > 0 {
		return Port(2 * dim)
	}
	return Port(2*dim + 1)
}

// opposite is the port a packet sent on p arrives on at the neighbour.
func (p Port) opposite() Port { return p ^ 1 }

func (p Port) dim() int { return int(p) / 2 }

// Tokens returns buffer space to the upstream router: chunks freed per
// virtual channel of the input port the link feeds.
type Tokens struct {
	Chunks [NumVCs]uint16
}

// Router is one node's torus router: six input ports with a buffer per
// virtual channel, six output ports each driving a link, the injection
// FIFOs as further inputs and the reception FIFOs as further outputs.
//
// Packets move by virtual cut-through: a packet takes an output when the
// next router has room (tokens) for all of it on the chosen channel, and
// its head leaves RouterCycles after it arrived; its chunks then stream at
// the link rate, and each chunk's token goes back upstream when the chunk
// has left. The datapath is Tick: take arrivals and tokens, stream out,
// route and allocate.
//
// The router costs per event, not per edge: allocation runs only at an
// edge where a grant can have become possible (a head became eligible,
// tokens came back, an output or a reception path freed, a reception FIFO
// was read), and routes only the heads such an event can help: a head
// that found no room is blocked, remembering the outputs and reception
// paths it waits for, until one of them frees, gets the tokens it needs
// or is read. Routing a blocked head again would fail again with no
// effect, so skipping it changes nothing (TestRouterMatchesReference).
type Router struct {
	u    *sim.Unit
	spec *Spec
	net  *Network
	node int
	at   Coord

	in  [NumLinkPorts]*inPort
	out [NumLinkPorts]*outPort
	// Inj holds the injection FIFOs: InjFIFOs normal ones, then the
	// high-priority ones (per FIFO set). Rec holds the reception FIFOs:
	// one per input port (packets arrive in order per port), then the
	// high-priority one, per FIFO set (Spec.Groups).
	Inj []*FIFO
	Rec []*FIFO
	rec []stream // the paths into the reception FIFOs
	rr  int      // round-robin start among the sources

	// allocAt is the first edge at which allocation can grant anything:
	// before it, nothing a head waits for can have changed.
	allocAt sim.Tick
	stalled bool // a link was found full: allocate again at the next edge
	// blocked is the sources whose head was routed, found no room, and
	// has seen nothing since that could give it some: allocation skips
	// them. wait[i] is the blocked heads that wait for stream i (an
	// output, then the reception paths: the output or path to free, its
	// tokens, the reception FIFO to be read), and waits[src] the streams
	// source src waits for.
	blocked srcSet
	wait    [numStreams]srcSet
	waits   [maxSources]uint32
	// need is, per output and channel, the fewest tokens a blocked head
	// that found too few there needs: tokens that leave a channel below
	// it cannot make a grant possible.
	need [NumLinkPorts][NumVCs]int
	// streaming is the streams with chunks still to leave (bit i: output
	// i, then reception path i-NumLinkPorts), busy those whose output or
	// path may still be busy, pending the input ports with tokens to send,
	// and popped the reception FIFOs read since the allocation last saw it.
	streaming, busy uint32
	pending         uint8
	popped          uint16
	strm            [numStreams]*stream // stream i (stream)
	wakeAt          sim.Tick            // the last wake schedule asked for
	// occ is the sources (input channels and injection FIFOs) that hold
	// a packet, and eligAt the first time after the last allocation at
	// which a head becomes eligible: the router's own wake-up.
	occ    srcSet
	eligAt sim.Tick
	prio   srcSet // the high-priority channels and injection FIFOs
	// arrived is the links with an arrival this edge: bit i for packets
	// on input i, bit 6+o for tokens on output o.
	arrived uint16

	period, chunkPS, localPS sim.Tick

	delivered, deposited, forwarded, escaped *sim.Counter
	minTokens                                int // the fewest tokens any output had (tests)
}

// inPort is the receiving side of a link: a buffer per virtual channel.
type inPort struct {
	port   Port              // the router's port it is
	link   *sim.Chan[Packet] // packets from the upstream router
	tokens *sim.Chan[Tokens] // freed chunks back to it
	vc     [NumVCs]sim.Queue[held]
	used   [NumVCs]int      // chunks held, and reserved by packets being read out
	free   [NumVCs]sim.Tick // when the channel's read side has finished the last packet taken
	pend   Tokens           // tokens not yet sent
	npend  int
}

type held struct {
	p  Packet
	at sim.Tick // head arrival
}

// outPort is the sending side of a link.
type outPort struct {
	link   *sim.Chan[Packet]
	tokens *sim.Chan[Tokens]
	avail  [NumVCs]int // the downstream buffer's free chunks (tokens)
	// inRing is, per channel, the chunks of each packet sent into the
	// downstream buffer whose tokens have not all come back, oldest first
	// (the buffer is a FIFO, so tokens return in that order), and back the
	// tokens returned towards the oldest. The bubble rule counts the
	// escape and high-priority buffers in slots of a full packet: free
	// chunks scattered over a ring's routers, each too few for the packet
	// waiting there, would otherwise deadlock it with room in total.
	inRing [NumVCs][]uint8
	back   [NumVCs]int
	s      stream

	packets, payload, wireBytes, busyPS *sim.Counter
}

// sent notes a packet of n chunks sent on channel vc.
func (op *outPort) sent(vc, n int) { op.inRing[vc] = append(op.inRing[vc], uint8(n)) }

// returned counts n tokens back on channel vc: the oldest packets whose
// chunks have all come back have left the downstream buffer.
func (op *outPort) returned(vc, n int) {
	op.back[vc] += n
	q := op.inRing[vc]
	for len(q) > 0 && op.back[vc] >= int(q[0]) {
		op.back[vc] -= int(q[0])
		q = q[1:]
	}
	if len(q) == 0 {
		q = op.inRing[vc][:0] // reuse the array
	}
	op.inRing[vc] = q
}

// freeSlots is the full-packet slots of channel vc's downstream buffer of
// size chunks that no packet holds.
func (op *outPort) freeSlots(vc, size int) int { return size/MaxChunks - len(op.inRing[vc]) }

// bubbleRoom reports whether a packet of n chunks may go on bubble
// channel vc of output op: tokens for itself and, entering a ring, a full
// packet more; and, on a ring, a free slot for itself and, entering, one
// more. Slots make the bubble whole: the ring always keeps a slot where
// any packet fits, so some packet on it can always move.
func bubbleRoom(op *outPort, vc, n, size int, entering, ring bool) bool {
	need, slots := n, 1
	if entering && ring {
		need += MaxChunks
		slots = 2
	}
	if op.avail[vc] < need {
		return false
	}
	return !ring || op.freeSlots(vc, size) >= slots
}

// stream is a packet being read out of an input buffer onto an output
// (a link or the path into a reception FIFO): its chunks leave one per
// out period, none before it has arrived, and each frees a token.
type stream struct {
	busyUntil sim.Tick
	due       sim.Tick // when the next chunk leaves (nextFree), while active
	active    bool
	from      Port // the input it is read from (Local: an injection FIFO)
	vc        int
	n, freed  int
	head      sim.Tick // head arrival at this router
	start     sim.Tick
	inPS      sim.Tick // chunk period of the input (0: already all here)
	outPS     sim.Tick
	cur       Packet // for the probes: the packet on the output
	curVC     uint8  // and the channel it goes on
}

// freedBy is the number of the stream's chunks that have left by now.
func (s *stream) freedBy(now sim.Tick) int {
	k := int((now - s.start) / s.outPS)
	if s.inPS > 0 {
		k = min(k, int((now-s.head)/s.inPS))
	}
	return min(k, s.n)
}

// nextFree is when its next chunk leaves.
func (s *stream) nextFree() sim.Tick {
	k := sim.Tick(s.freed + 1)
	t := s.start + k*s.outPS
	if s.inPS > 0 {
		t = max(t, s.head+k*s.inPS)
	}
	return t
}

// end is when its last chunk has left.
func (s *stream) end() sim.Tick {
	n := sim.Tick(s.n)
	t := s.start + n*s.outPS
	if s.inPS > 0 {
		t = max(t, s.head+n*s.inPS)
	}
	return t
}

// numStreams bounds the streams: an output per link port, then a path
// per reception FIFO.
const numStreams = int(NumLinkPorts) + maxRec

// The bit sets hold every stream (streaming, busy, waits: 32 bits), input
// port (pending: 8) and reception FIFO (popped: 16); an array of negative
// length stops the build if a constant outgrows its set.
var (
	_ [32 - numStreams]struct{}
	_ [8 - int(NumLinkPorts)]struct{}
	_ [16 - maxRec]struct{}
)

// stream is stream i: output i, or the path into reception FIFO
// i-NumLinkPorts.
func (r *Router) stream(i int) *stream { return r.strm[i] }

// Tick is the router's datapath for one edge.
func (r *Router) Tick(now sim.Tick) bool {
	r.takeArrivals(now)
	for m := r.streaming; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		if s := r.stream(i); s.due <= now {
			r.drain(now, i, s)
		}
	}
	r.sendTokens()
	r.allocate(now)
	return r.schedule(now)
}

// takeArrivals moves arrived packets into their channels' buffers (their
// space was reserved upstream) and counts the tokens that came back. The
// links say which of them have something (arrived, set by OnArrive).
func (r *Router) takeArrivals(now sim.Tick) {
	for m := r.arrived; m != 0; m &= m - 1 {
		k := bits.TrailingZeros16(m)
		if k < int(NumLinkPorts) {
			r.takePackets(now, r.in[k])
		} else {
			r.takeTokens(now, Port(k-int(NumLinkPorts)))
		}
	}
	r.arrived = 0
}

func (r *Router) takePackets(now sim.Tick, ip *inPort) {
	for ip.link.Valid() {
		p := ip.link.Recv()
		if ip.vc[p.vc].Len() == 0 {
			r.headAt(int(ip.port)*NumVCs+int(p.vc), max(now+r.hopDelay(), ip.free[p.vc]))
		}
		ip.vc[p.vc].Push(held{p: p, at: now})
		ip.used[p.vc] += int(p.chunks)
	}
}

// takeTokens adds the tokens that came back on output o, and lets
// allocation run if a waiting head now has enough.
func (r *Router) takeTokens(now sim.Tick, o Port) {
	op := r.out[o]
	for op.tokens.Valid() {
		t := op.tokens.Recv()
		for vc, n := range t.Chunks {
			op.avail[vc] += int(n)
			op.returned(vc, int(n))
			if n > 0 && op.avail[vc] >= r.need[o][vc] {
				r.wakeAlloc(now)
				r.unblock(int(o))
			}
		}
	}
}

// drain frees the tokens of the chunks stream i (s) has sent by now: it
// is called when its next chunk is due (before that, none has left).
func (r *Router) drain(now sim.Tick, i int, s *stream) {
	k := s.freedBy(now)
	if d := k - s.freed; d > 0 && s.from != Local {
		ip := r.in[s.from]
		ip.used[s.vc] -= d
		ip.pend.Chunks[s.vc] += uint16(d)
		ip.npend += d
		r.pending |= 1 << s.from
	}
	s.freed = k
	if k == s.n {
		s.active = false
		r.streaming &^= 1 << i
	} else {
		s.due = s.nextFree()
	}
}

// sendTokens returns freed chunks upstream, one token message per input
// port and edge (kept for the next edge if the token link is full).
func (r *Router) sendTokens() {
	for m := r.pending; m != 0; m &= m - 1 {
		i := bits.TrailingZeros8(m)
		ip := r.in[i]
		if !ip.tokens.Ready() {
			continue
		}
		ip.tokens.Send(ip.pend)
		ip.pend, ip.npend = Tokens{}, 0
		r.pending &^= 1 << i
	}
}

// head is source src's candidate for the crossbar, if it has one now: the
// head of an input channel (src = port·4 + channel) or of an injection
// FIFO (the sources after those), with its arrival time.
func (r *Router) head(now sim.Tick, src int) (p *Packet, at sim.Tick, from Port, vc int) {
	nvc := int(NumLinkPorts) * NumVCs
	if src < nvc {
		from, vc = Port(src/NumVCs), src%NumVCs
		ip := r.in[from]
		if ip == nil || ip.vc[vc].Len() == 0 || ip.free[vc] > now {
			return nil, 0, from, vc
		}
		h := ip.vc[vc].Front()
		return &h.p, h.at, from, vc
	}
	f := r.Inj[src-nvc]
	p = f.head(now)
	if p == nil {
		return nil, 0, Local, 0
	}
	return p, f.q.Front().vis, Local, 0
}

// allocate routes the head of every input and grants outputs: the
// high-priority channel and FIFOs first, then the rest, each round starting
// after the source granted first last time.
func (r *Router) allocate(now sim.Tick) {
	if now < r.allocAt {
		return
	}
	r.unblockFreed(now)
	nsrc := int(NumLinkPorts)*NumVCs + len(r.Inj)
	var taken [NumLinkPorts]bool
	var recTaken [maxRec]bool
	var granted srcSet
	r.stalled = false
	first := -1
	for pass := 0; pass < 2; pass++ {
		// The sources holding a packet and not blocked, from rr round (a
		// grant only empties sources: none joins during the pass);
		// high-priority packets are only ever in the priority sources.
		// A blocked head would find no room again: skipping it changes
		// neither the grants nor their order.
		set := r.occ.minus(&r.blocked)
		if pass == 0 {
			set = set.and(&r.prio)
		} else {
			set = set.minus(&r.prio)
		}
		var buf [maxSources]uint8
		order := set.list(r.rr, nsrc, buf[:0])
		order = set.list(0, r.rr, order)
		for _, s := range order {
			src := int(s)
			p, at, from, vc := r.head(now, src)
			if p == nil || p.Priority != (pass == 0) || at+r.hopDelay() > now {
				continue
			}
			if w, ok := r.route(now, p, at, from, vc, src, &taken, &recTaken); ok {
				granted.add(src)
				if first < 0 {
					first = src
				}
			} else {
				r.block(src, w)
			}
		}
	}
	if first >= 0 {
		r.rr = (first + 1) % nsrc
	}
	r.allocAt, r.eligAt = r.nextAlloc(now, &granted)
}

// srcSet is a set of sources: input channel i·NumVCs + vc, then the
// injection FIFOs (at most 128).
type srcSet [(maxSources + 63) / 64]uint64

func (s *srcSet) add(i int)      { s[i/64] |= 1 << (i % 64) }
func (s *srcSet) del(i int)      { s[i/64] &^= 1 << (i % 64) }
func (s *srcSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

func (s *srcSet) and(o *srcSet) (r srcSet) {
	for i := range s {
		r[i] = s[i] & o[i]
	}
	return r
}

func (s *srcSet) minus(o *srcSet) (r srcSet) {
	for i := range s {
		r[i] = s[i] &^ o[i]
	}
	return r
}

// list appends the members in [from, to) to out, in increasing order.
func (s *srcSet) list(from, to int, out []uint8) []uint8 {
	for w := from / 64; w*64 < to; w++ {
		m := s[w]
		if lo := from - w*64; lo > 0 {
			m &^= 1<<lo - 1
		}
		if hi := to - w*64; hi < 64 {
			m &= 1<<hi - 1
		}
		for ; m != 0; m &= m - 1 {
			out = append(out, uint8(w*64+bits.TrailingZeros64(m)))
		}
	}
	return out
}

// maxSources bounds the sources: the input channels and 128 FIFOs.
const maxSources = int(NumLinkPorts)*NumVCs + 128

// maxRec bounds the reception FIFOs: one per input port and a
// high-priority one, per FIFO set.
const maxRec = MaxGroups * NumRecFIFOs

// noNeed is a channel's need when no head waits for its tokens.
const noNeed = 1 << 30

// waitTokens notes that a head needs n tokens on channel vc of output o.
func (r *Router) waitTokens(o Port, vc, n int) { r.need[o][vc] = min(r.need[o][vc], n) }

// block notes that the head of source src found no room and waits for
// the streams in w (bit i: stream i).
func (r *Router) block(src int, w uint32) {
	r.blocked.add(src)
	r.waits[src] = w
	for ; w != 0; w &= w - 1 {
		r.wait[bits.TrailingZeros32(w)].add(src)
	}
}

// unblock lets allocation route again the heads that wait for stream i:
// it freed, got tokens or had its reception FIFO read. Those heads note
// their needs again when they are routed, so output i's are forgotten.
func (r *Router) unblock(i int) {
	set := r.wait[i]
	var buf [maxSources]uint8
	for _, s := range set.list(0, maxSources, buf[:0]) {
		for w := r.waits[s]; w != 0; w &= w - 1 {
			r.wait[bits.TrailingZeros32(w)].del(int(s))
		}
		r.waits[s] = 0
		r.blocked.del(int(s))
	}
	if i < int(NumLinkPorts) {
		r.need[i] = [NumVCs]int{noNeed, noNeed, noNeed, noNeed}
	}
}

// unblockFreed, at the start of an allocation, unblocks the heads that
// wait for an output or reception path that has freed by now or a
// reception FIFO read since the last allocation, and all of them after a
// link was found full. A FIFO read now has room from the next edge: its
// heads are unblocked again then.
func (r *Router) unblockFreed(now sim.Tick) {
	if r.stalled {
		for i := range r.wait {
			r.unblock(i)
		}
	}
	for m := r.busy; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		if r.stream(i).busyUntil <= now {
			r.busy &^= 1 << i
			r.unblock(i)
		}
	}
	for m := r.popped; m != 0; m &= m - 1 {
		k := bits.TrailingZeros16(m)
		r.unblock(int(NumLinkPorts) + k)
		if r.Rec[k].popAt < now {
			r.popped &^= 1 << k
		}
	}
}

// headAt notes that source src, empty until now, has a head that becomes
// eligible at t.
func (r *Router) headAt(src int, t sim.Tick) {
	r.occ.add(src)
	r.wakeAlloc(t)
	r.eligAt = min(r.eligAt, t)
}

// wakeAlloc makes allocation run at the first edge at or after t.
func (r *Router) wakeAlloc(t sim.Tick) { r.allocAt = min(r.allocAt, t) }

// nextAlloc is, after an allocation, the first edge at which another can
// grant something (alloc), and the first time a head becomes eligible
// (elig). A head that was routed and found no room waits for an output,
// a reception path or tokens: outputs and paths free at their busyUntil,
// a reception FIFO read now has room at the next edge, tokens reaching a
// head's need wake allocation as they arrive (takeTokens). A head not yet
// eligible becomes so at its time. A head that a grant just uncovered was
// not routed: the next edge. A full link: the next edge (the links are
// deep enough that it does not happen; were it to, the link's stall count
// must see every attempt the reference makes). Events up to the next
// allocation only bring alloc and elig earlier (headAt, wakeAlloc).
func (r *Router) nextAlloc(now sim.Tick, granted *srcSet) (alloc, elig sim.Tick) {
	alloc, elig = sim.Never, sim.Never
	if r.stalled {
		alloc = now + 1
	}
	// Blocked heads are eligible and were not granted.
	var buf [maxSources]uint8
	set := r.occ.minus(&r.blocked)
	for _, s := range set.list(0, maxSources, buf[:0]) {
		e := r.eligible(int(s))
		if e > now {
			elig = min(elig, e)
		} else if granted.has(int(s)) {
			alloc = now + 1
		}
	}
	alloc = min(alloc, elig)
	for m := r.busy; m != 0; m &= m - 1 {
		if t := r.stream(bits.TrailingZeros32(m)).busyUntil; t > now {
			alloc = min(alloc, t)
		}
	}
	// Space the message layer freed now is the router's next edge.
	if r.popped != 0 {
		alloc = min(alloc, now+1)
	}
	return alloc, elig
}

// eligible is when the head of source src (which holds a packet) may be
// routed: its pipeline delay passed and its channel's read side free.
func (r *Router) eligible(src int) sim.Tick {
	nvc := int(NumLinkPorts) * NumVCs
	if src < nvc {
		ip, vc := r.in[src/NumVCs], src%NumVCs
		return max(ip.vc[vc].Front().at+r.hopDelay(), ip.free[vc])
	}
	return r.Inj[src-nvc].q.Front().vis + r.hopDelay()
}

// hopDelay is the router's pipeline: a head may leave this long after it
// arrived.
func (r *Router) hopDelay() sim.Tick { return sim.Tick(r.spec.RouterCycles) * r.period }

// remaining is the hops left in dimension d in the packet's direction.
func (r *Router) remaining(p *Packet, d int) int {
	if p.dir[d] == 0 {
		return 0
	}
	// Both coordinates are in [0, n): the difference is in (-n, n).
	h := (p.Dst[d] - r.at[d]) * int(p.dir[d])
	if h < 0 {
		h += r.spec.Dims[d]
	}
	return h
}

// route tries to move the head p: into a reception FIFO at its
// destination, or onto an output with room downstream. It reports whether
// it moved and, if not, the streams it waits for (bit i: stream i): the
// outputs it may take and the reception path it needs, whichever was
// busy, taken or short of tokens or room.
func (r *Router) route(now sim.Tick, p *Packet, at sim.Tick, from Port, vc, src int,
	taken *[NumLinkPorts]bool, recTaken *[maxRec]bool) (uint32, bool) {
	// The packet's reception FIFO here: its input port's, or the
	// high-priority one, of its FIFO set.
	ri := int(p.Group)*NumRecFIFOs + int(from)
	if p.Dst == r.at {
		if p.Priority {
			ri = int(p.Group)*NumRecFIFOs + int(NumLinkPorts)
		}
		if recTaken[ri] || r.rec[ri].busyUntil > now || r.Rec[ri].Room(now) < int(p.chunks) {
			return 1 << (int(NumLinkPorts) + ri), false
		}
		recTaken[ri] = true
		r.deliver(now, p, at, from, vc, ri, false)
		r.release(now, src)
		return 0, true
	}
	n := int(p.chunks)
	// The deterministic way: the first dimension with hops left.
	dd := 0
	for r.remaining(p, dd) == 0 {
		dd++
	}
	det := portOf(dd, p.dir[dd])
	w := uint32(1) << det
	bestPort, bestVC, bestKey := Port(0), -1, -1
	if p.Dynamic {
		// Minimal adaptive: any dimension with hops left, on a dynamic
		// channel the packet fits in whole, chosen by the selection
		// (the most tokens by default); ties to the lowest dimension.
		// An ordered selection takes only its preferred dimension with
		// room, waiting while that output is busy.
		pd := r.preferred(p, n)
		for d := 0; d < 3; d++ {
			h := r.remaining(p, d)
			if h == 0 {
				continue
			}
			o := portOf(d, p.dir[d])
			w |= 1 << o
			if taken[o] || !r.linkFree(now, o) {
				continue
			}
			for v := VCDynamic0; v <= VCDynamic1; v++ {
				if a := r.out[o].avail[v]; a < n {
					r.waitTokens(o, v, n)
				} else if k := r.selectKey(d, h, a); k > bestKey && (pd < 0 || d == pd) {
					bestPort, bestVC, bestKey = o, v, k
				}
			}
		}
		if pd >= 0 && bestVC < 0 {
			// Its output is busy or taken: wait for it, not the escape
			// channel (which is for a packet with no room anywhere).
			return w, false
		}
	}
	if bestVC < 0 {
		// The escape (or high-priority) channel, deterministic, under the
		// bubble rule: entering a ring takes room for this packet and a
		// full one more, so a ring never fills up.
		esc := VCEscape
		if p.Priority {
			esc = VCPriority
		}
		if taken[det] || !r.linkFree(now, det) {
			return w, false
		}
		entering := from == Local || vc != esc || from.dim() != dd
		if !bubbleRoom(r.out[det], esc, n, r.spec.VCChunks[esc], entering, r.spec.wraps(dd)) {
			// Tokens coming back may free a slot before they reach any
			// count of chunks: any of them unblocks the head.
			r.waitTokens(det, esc, 0)
			return w, false
		}
		bestPort, bestVC = det, esc
		if p.Dynamic {
			r.escaped.Inc()
		}
	}
	// A deposit packet leaves a copy here on its way.
	if p.Deposit && from != Local {
		if recTaken[ri] || r.rec[ri].busyUntil > now || r.Rec[ri].Room(now) < n {
			return w | 1<<(int(NumLinkPorts)+ri), false
		}
		recTaken[ri] = true
		r.deliver(now, p, at, from, vc, ri, true)
	}
	taken[bestPort] = true
	r.send(now, p, at, from, vc, bestPort, bestVC)
	r.release(now, src)
	return 0, true
}

// selectKey ranks a dynamic channel with room, a tokens, in dimension d
// with h hops left: the highest key is taken (Spec.Selection). Tokens
// are at most 4096 (Validate), so a dimension's rank above them
// dominates.
func (r *Router) selectKey(d, h, a int) int {
	if r.spec.Selection == SelectHops {
		const over = 1 << 13
		return h*over + a
	}
	return a
}

// preferred is, under an ordered selection (SelectXFirst, SelectXLast),
// the dimension the packet of n chunks must take: the first in the
// selection's order with hops left and a dynamic channel with room,
// whether or not its output is free now; -1 under the others, or when
// no dimension has room (the escape channel).
func (r *Router) preferred(p *Packet, n int) int {
	sel := r.spec.Selection
	if sel != SelectXFirst && sel != SelectXLast {
		return -1
	}
	for i := 0; i < 3; i++ {
		d := i
		if sel == SelectXLast {
			d = 2 - i
		}
		if r.remaining(p, d) == 0 {
			continue
		}
		o := r.out[portOf(d, p.dir[d])]
		if o.avail[VCDynamic0] >= n || o.avail[VCDynamic1] >= n {
			return d
		}
	}
	return -1
}

// linkFree reports whether output o can start a packet now.
func (r *Router) linkFree(now sim.Tick, o Port) bool {
	op := r.out[o]
	if op.s.busyUntil > now {
		return false
	}
	if !op.link.Ready() {
		r.stalled = true
		return false
	}
	return true
}

// send starts p on output o's link into the next router's channel vc.
func (r *Router) send(now sim.Tick, p *Packet, at sim.Tick, from Port, vc int, o Port, nvc int) {
	op := r.out[o]
	n := int(p.chunks)
	op.avail[nvc] -= n
	op.sent(nvc, n)
	r.minTokens = min(r.minTokens, op.avail[nvc])
	q := *p
	q.vc = uint8(nvc)
	q.inPort = uint8(o.opposite())
	q.Hops++
	op.link.Send(q)
	if w := r.net.Watch; w != nil {
		w(r.node, o, p)
	}
	r.startStream(now, int(o), p, at, from, vc, r.chunkPS)
	op.s.curVC = uint8(nvc)
	op.s.busyUntil = now + sim.Tick(r.spec.PacketCycles(n))*r.period
	r.busy |= 1 << o
	op.packets.Inc()
	op.payload.Add(uint64(len(p.Payload)))
	op.wireBytes.Add(uint64(r.spec.WireBytes(n)))
	op.busyPS.Add(uint64(op.s.busyUntil - now))
	if from != Local {
		r.forwarded.Inc()
	}
}

// deliver writes p (or, passing by with the deposit bit, a copy of it)
// into reception FIFO ri. The message layer sees it once its last byte
// and the link's check bytes are in.
func (r *Router) deliver(now sim.Tick, p *Packet, at sim.Tick, from Port, vc, ri int, copyOnly bool) {
	i := int(NumLinkPorts) + ri
	s := &r.rec[ri]
	q := new(Packet)
	*q = *p
	vis := now
	if from != Local {
		vis = at + sim.Tick(r.spec.PacketCycles(int(p.chunks)))*r.period
	}
	r.busy |= 1 << i
	if copyOnly {
		r.deposited.Inc()
		r.Rec[ri].push(q, now, vis)
		// The copy is written as the packet streams through: the path is
		// busy, the buffer is freed by the output.
		s.busyUntil = max(now+sim.Tick(p.chunks)*r.localPS, at+sim.Tick(p.chunks)*r.chunkPS)
		return
	}
	r.startStream(now, i, p, at, from, vc, r.localPS)
	vis = max(vis, s.end())
	s.busyUntil = s.end()
	r.Rec[ri].push(q, now, vis)
	r.delivered.Inc()
}

// startStream starts stream i reading p out of its input.
func (r *Router) startStream(now sim.Tick, i int, p *Packet, at sim.Tick, from Port, vc int, outPS sim.Tick) {
	s := r.stream(i)
	*s = stream{active: true, from: from, vc: vc, n: int(p.chunks), head: at, start: now, outPS: outPS, cur: *p}
	if from != Local {
		s.inPS = r.chunkPS
		// The channel's read side is busy until this packet has left.
		r.in[from].free[vc] = s.end()
	}
	s.due = s.nextFree()
	r.streaming |= 1 << i
}

// release takes the granted head off its input channel or injection FIFO.
func (r *Router) release(now sim.Tick, src int) {
	nvc := int(NumLinkPorts) * NumVCs
	if src < nvc {
		q := &r.in[src/NumVCs].vc[src%NumVCs]
		if q.Pop(); q.Len() == 0 {
			r.occ.del(src)
		}
		return
	}
	f := r.Inj[src-nvc]
	if f.pop(now); f.q.Len() == 0 {
		r.occ.del(src)
	}
}

// schedule asks for the next edge at which something can change without
// an arrival: a stream's next chunk, an output or reception path freeing,
// a head's pipeline delay passing, a token message waiting for its link.
func (r *Router) schedule(now sim.Tick) bool {
	if r.pending != 0 {
		return true
	}
	// The next head to become eligible (eligAt is kept exact by the
	// allocation, which runs whenever now reaches it, and by arrivals).
	next := r.eligAt
	if next <= now {
		next = sim.Never
	}
	for m := r.streaming; m != 0; m &= m - 1 {
		// After the drain every due is ahead.
		next = min(next, r.stream(bits.TrailingZeros32(m)).due)
	}
	for m := r.busy; m != 0; m &= m - 1 {
		if t := r.stream(bits.TrailingZeros32(m)).busyUntil; t > now {
			next = min(next, t)
		}
	}
	// A wake asked for before and still ahead is pending: the kernel
	// does not cancel wakes.
	if next != sim.Never && next != r.wakeAt {
		r.u.WakeAt(next)
		r.wakeAt = next
	}
	return false
}
