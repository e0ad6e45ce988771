package nic

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/aaemu/aaemu/sim"
)

// SwitchSpec configures an Ethernet switch.
type SwitchSpec struct {
	Ports     int
	LatencyPS sim.Tick // from a frame fully received to ready to leave (default 500 ns)
	QueueLen  int      // frames per output queue (default 64)
	// IngressLen is the frames an input port buffers (default 64), in a
	// queue per output (virtual output queues): a frame for a congested
	// output waits there without holding up the frames behind it for other
	// outputs, until the input's buffer is full and it stops its wire.
	IngressLen int
	// Route is the output port of each destination node; nil: the port is
	// the destination node (a switch with every node on its own port).
	Route []int
}

// Switch forwards frames by destination node with one queue per output
// port. A full output queue stops its inputs (lossless, as with PFC), which
// backpressures the senders. An input buffers the frames it takes in a
// queue per output (VOQ), so a congested output holds up only the frames
// for it. Each output grants the room it has to the inputs with frames
// for it in round-robin order from the input it granted last, as a
// switch's arbiter does (iSLIP's grant pointer), so a congested output
// shares itself fairly and no sender starves.
//
// A switch of a thousand ports must cost per frame, not per port: it keeps
// VOQs only while they hold frames and, on an edge, visits only the inputs
// with new frames or new room, the outputs whose head frame is due and the
// outputs that can take a waiting frame. An input connected by SetWirePort
// is visited only after its wire delivered; one connected by SetPort is
// polled on every edge the switch runs.
type Switch struct {
	u    *sim.Unit
	spec SwitchSpec
	In   []*sim.Chan[Frame]
	Out  []*sim.Chan[Frame]

	out  []outPort
	held []int // per input: frames in its VOQs
	// voqs holds the VOQ of (input, output) at input·Ports+output while it
	// has frames: a switch of n ports keeps no n² table. Only looked up,
	// never ranged over, so it cannot make runs differ.
	voqs      map[int]*fifo[queuedFrame]
	spareVOQs []*fifo[queuedFrame]
	spareSets []bitset // emptied per-output input sets, for reuse

	inputs bitset // inputs that may have frames to take, stalled ones aside
	wired  []bool // per input: its wire reports deliveries (SetWirePort)
	// stalled marks the inputs with a full buffer and a frame waiting on
	// the wire; they stay so until arbitration takes a frame of theirs
	// (retry), so an edge counts them without visiting them.
	stalled  []bool
	nStalled int
	retry    []int
	retrying []bool
	// due is the outputs whose head frame may leave now; later holds the
	// others with frames, by the time their head may leave.
	due   bitset
	later outHeap
	// want lists the outputs with room in their queues and frames waiting
	// for them in VOQs: the only ones arbitration has work for.
	want []int

	forwarded, bytes, stalls *sim.Counter
}

// outPort is an output port's queue and arbiter.
type outPort struct {
	q fifo[queuedFrame]
	// from is the set of inputs with VOQ frames for this output (nil while
	// none), which a grant searches a word at a time; waiting counts them.
	from    bitset
	waiting int
	grant   int  // the input this output granted last
	wanted  bool // on Switch.want
}

type queuedFrame struct {
	f  Frame
	at sim.Tick
}

// NewSwitch places a switch in clk; connect In[i] and Out[i] to the wires of
// node i (SetWirePort or SetPort).
func NewSwitch(clk *sim.Clock, name string, spec SwitchSpec) (*Switch, error) {
	if spec.Ports < 2 {
		return nil, fmt.Errorf("%s: %d ports", name, spec.Ports)
	}
	if spec.QueueLen < 1 {
		spec.QueueLen = 64
	}
	for d, p := range spec.Route {
		if p < 0 || p >= spec.Ports {
			return nil, fmt.Errorf("%s: node %d routed to port %d of %d", name, d, p, spec.Ports)
		}
	}
	if spec.IngressLen < 1 {
		spec.IngressLen = 64
	}
	n := spec.Ports
	s := &Switch{spec: spec, In: make([]*sim.Chan[Frame], n), Out: make([]*sim.Chan[Frame], n),
		out: make([]outPort, n), held: make([]int, n), voqs: map[int]*fifo[queuedFrame]{},
		inputs: newBitset(n), wired: make([]bool, n), stalled: make([]bool, n), retrying: make([]bool, n),
		due: newBitset(n)}
	for d := range s.out {
		s.out[d].grant = n - 1 // the first grant goes to input 0
	}
	s.u = clk.Add(name, s)
	st := s.u.Engine().Stats()
	s.forwarded = st.Counter(name+".forwarded", "frames", "frames forwarded")
	s.bytes = st.Counter(name+".forwarded_bytes", "bytes", "bytes of the frames forwarded (Ethernet frames without preamble, FCS or gap)")
	s.stalls = st.Counter(name+".stalls", "edges", "edges at which an input's wire waited for room in the input's buffer")
	for i := 0; i < n && i < 16; i++ {
		s.u.Probe(fmt.Sprintf("queue%d", i), 8, func() (uint64, bool) { return uint64(s.out[i].q.len()), true })
	}
	return s, nil
}

// ForwardedBytes is every byte the switch has forwarded.
func (s *Switch) ForwardedBytes() uint64 { return s.bytes.Value() }

// Unit is the switch's kernel unit.
func (s *Switch) Unit() *sim.Unit { return s.u }

// SetPort connects port i: frames arrive on in and leave on out. The switch
// cannot tell when a frame arrives on in, so it polls in on every edge it
// runs; SetWirePort avoids that.
func (s *Switch) SetPort(i int, in, out *sim.Chan[Frame]) {
	s.In[i], s.Out[i] = in, out
	s.wired[i] = false
	s.inputs.clear(i)
	if in != nil && !s.stalled[i] {
		s.inputs.set(i)
	}
}

// SetWirePort connects port i to wires: frames arrive from in and leave on
// out (either may be nil). The wire in tells the switch when it delivers,
// so an idle port costs the switch nothing.
func (s *Switch) SetWirePort(i int, in, out *Wire) {
	var ic, oc *sim.Chan[Frame]
	if in != nil {
		ic = in.Out
	}
	if out != nil {
		oc = out.In
	}
	s.SetPort(i, ic, oc)
	if in != nil {
		// The wire's link says when a frame arrives, in the switch's
		// domain, before the switch is evaluated.
		in.Out.OnArrive(func() { s.delivered(i) })
		s.wired[i] = true // still marked: frames may already be on the wire
	}
}

// delivered is called as a frame from input i's wire arrives.
func (s *Switch) delivered(i int) { s.inputs.set(i) }

// head is the output input in's head frame goes to, -1 when it has none;
// frames to no port are dropped, as a switch drops an unknown destination.
func (s *Switch) head(in *sim.Chan[Frame]) int {
	for in != nil && in.Valid() {
		d := in.Peek().DstNode
		if s.spec.Route != nil {
			if d >= 0 && d < len(s.spec.Route) {
				return s.spec.Route[d]
			}
		} else if d >= 0 && d < len(s.In) {
			return d
		}
		in.Recv()
	}
	return -1
}

// ingress takes the frames input i's wire delivers into its VOQs while
// its buffer has room, and reports whether the wire still waits.
func (s *Switch) ingress(i int, now sim.Tick) bool {
	in := s.In[i]
	for s.held[i] < s.spec.IngressLen {
		d := s.head(in)
		if d < 0 {
			return false
		}
		s.toVOQ(i, d, queuedFrame{f: in.Recv(), at: now + s.spec.LatencyPS})
		s.held[i]++
	}
	return in != nil && in.Valid()
}

// toVOQ appends a frame to the VOQ of input i for output d.
func (s *Switch) toVOQ(i, d int, qf queuedFrame) {
	k := i*len(s.In) + d
	v := s.voqs[k]
	if v == nil {
		if n := len(s.spareVOQs); n > 0 {
			v, s.spareVOQs = s.spareVOQs[n-1], s.spareVOQs[:n-1]
		} else {
			v = new(fifo[queuedFrame])
		}
		s.voqs[k] = v
		o := &s.out[d]
		if o.from == nil {
			if n := len(s.spareSets); n > 0 {
				o.from, s.spareSets = s.spareSets[n-1], s.spareSets[:n-1]
			} else {
				o.from = newBitset(len(s.In))
			}
		}
		o.from.set(i)
		o.waiting++
		s.wake(d)
	}
	v.push(qf)
}

// wake puts output d on the arbitration list if it has room and frames
// wait for it.
func (s *Switch) wake(d int) {
	o := &s.out[d]
	if !o.wanted && o.waiting > 0 && o.q.len() < s.spec.QueueLen {
		o.wanted = true
		s.want = append(s.want, d)
	}
}

// arbitrate moves frames from the VOQs to the output queues: every output
// with room grants the next input with a frame for it after the one it
// granted last, until it is full or no frame waits for it. Outputs share
// nothing in this, so serving each in turn gives what rounds over all
// outputs would.
func (s *Switch) arbitrate(now sim.Tick) {
	n := len(s.In)
	for _, d := range s.want {
		o := &s.out[d]
		o.wanted = false
		for o.waiting > 0 && o.q.len() < s.spec.QueueLen {
			i := o.from.next(o.grant + 1)
			if i < 0 {
				i = o.from.next(0) // wrap around to the grant pointer
			}
			k := i*n + d
			v := s.voqs[k]
			if o.q.len() == 0 {
				s.schedule(d, v.front().at, now)
			}
			o.q.push(v.pop())
			s.held[i]--
			if s.stalled[i] && !s.retrying[i] {
				s.retrying[i] = true
				s.retry = append(s.retry, i)
			}
			o.grant = i
			if v.len() == 0 {
				delete(s.voqs, k)
				s.spareVOQs = append(s.spareVOQs, v)
				o.from.clear(i)
				if o.waiting--; o.waiting == 0 {
					s.spareSets = append(s.spareSets, o.from) // all clear
					o.from = nil
				}
			}
		}
	}
	s.want = s.want[:0]
}

// schedule files output d, whose head frame may leave at at, as due or
// for later.
func (s *Switch) schedule(d int, at, now sim.Tick) {
	if at <= now {
		s.due.set(d)
	} else {
		s.later.push(outAt{at, d})
	}
}

// stall marks input i as stalled.
func (s *Switch) stall(i int) {
	s.inputs.clear(i) // nothing to take until it has room
	if !s.stalled[i] {
		s.stalled[i] = true
		s.nStalled++
	}
}

// unstall marks input i as no longer stalled; it has room or no frame.
func (s *Switch) unstall(i int) {
	s.stalled[i] = false
	s.nStalled--
	if !s.wired[i] || s.In[i].Len() > 0 {
		s.inputs.set(i)
	}
}

// Tick moves frames from inputs to their VOQs, to output queues and out.
//
// Frames become valid on an input only between edges, and during one only
// the switch's own receives change it, so the second pass (after the
// first arbitration made room) need visit only stalled inputs arbitration
// took a frame from, and a stalled input with no room stays stalled.
func (s *Switch) Tick(now sim.Tick) bool {
	for i := s.inputs.next(0); i >= 0; i = s.inputs.next(i + 1) {
		if s.ingress(i, now) {
			s.stall(i)
		} else if s.wired[i] && s.In[i].Len() == 0 {
			s.inputs.clear(i) // its wire marks it again when it delivers
		}
	}
	s.arbitrate(now)
	slices.Sort(s.retry) // inputs receive in port order
	for _, i := range s.retry {
		s.retrying[i] = false
		if !s.ingress(i, now) { // room the arbitration made
			s.unstall(i)
		}
	}
	s.retry = s.retry[:0]
	s.stalls.Add(uint64(s.nStalled)) // inputs that wait for room in their buffer
	s.arbitrate(now)
	for _, i := range s.retry { // room for the next edge's first pass
		s.retrying[i] = false
		s.unstall(i)
	}
	s.retry = s.retry[:0]
	for s.later.len() > 0 && s.later.min().at <= now {
		s.due.set(s.later.pop().d)
	}
	for d := s.due.next(0); d >= 0; d = s.due.next(d + 1) {
		o, out := &s.out[d], s.Out[d]
		sent := false
		for o.q.len() > 0 && o.q.front().at <= now && out.Ready() {
			qf := o.q.pop()
			out.Send(qf.f)
			s.forwarded.Inc()
			s.bytes.Add(uint64(qf.f.Len()))
			sent = true
		}
		if sent {
			s.wake(d) // egress made room for a waiting frame
		}
		if o.q.len() > 0 {
			if at := o.q.front().at; at > now {
				s.due.clear(d)
				s.later.push(outAt{at, d})
			} else if out.Ready() {
				return true
			}
		} else {
			s.due.clear(d)
		}
	}
	if len(s.want) > 0 {
		return true
	}
	if s.later.len() > 0 {
		s.u.WakeAt(s.later.min().at)
	}
	return false
}

// outAt is an output whose head frame may leave at at.
type outAt struct {
	at sim.Tick
	d  int
}

// outHeap is a min-heap of outputs by time (then port).
type outHeap []outAt

func (h outHeap) len() int   { return len(h) }
func (h outHeap) min() outAt { return h[0] }
func (h outHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].d < h[j].d
}

func (h *outHeap) push(x outAt) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *outHeap) pop() outAt {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		m, l := i, 2*i+1
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r := l + 1; r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// fifo is a queue in a slice: popping advances head, and the slice is
// reused from its start when it empties, or when it is full with at least
// half of it popped, so its capacity stays within a few times the most it
// held and each push or pop costs O(1) amortized.
type fifo[T any] struct {
	s    []T
	head int
}

func (q *fifo[T]) len() int { return len(q.s) - q.head }

// front is the oldest element; the queue must not be empty.
func (q *fifo[T]) front() *T { return &q.s[q.head] }

// back is the newest element; the queue must not be empty.
func (q *fifo[T]) back() *T { return &q.s[len(q.s)-1] }

func (q *fifo[T]) push(v T) {
	if len(q.s) == cap(q.s) && q.head > 0 && 2*q.head >= len(q.s) {
		n := copy(q.s, q.s[q.head:])
		clear(q.s[n:])
		q.s, q.head = q.s[:n], 0
	}
	q.s = append(q.s, v)
}

// pop removes the oldest element; the queue must not be empty.
func (q *fifo[T]) pop() T {
	v := q.s[q.head]
	var zero T
	q.s[q.head] = zero // drop references the frame holds
	q.head++
	if q.head == len(q.s) {
		q.s, q.head = q.s[:0], 0
	}
	return v
}

// bitset is a set of port numbers.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)   { b[i>>6] |= 1 << (i & 63) }
func (b bitset) clear(i int) { b[i>>6] &^= 1 << (i & 63) }

// next is the smallest member at or above i, -1 when there is none: a
// word of 64 ports at a time.
func (b bitset) next(i int) int {
	w := i >> 6
	if w >= len(b) {
		return -1
	}
	x := b[w] &^ (1<<(i&63) - 1)
	for x == 0 {
		if w++; w == len(b) {
			return -1
		}
		x = b[w]
	}
	return w<<6 + bits.TrailingZeros64(x)
}
