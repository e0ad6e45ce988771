package sim

import "fmt"

// lane is one FIFO of a channel with lanes: its own ring, depth and
// producer-side view of this step's pops, as a plain channel has.
type lane[T any] struct {
	buf     []T
	vis     []Tick
	seq     []uint64 // arrival order across the channel's lanes
	head, n int
	lastPop Tick
	popsNow int
	waiting bool // the producer found this lane full
}

func (l *lane[T]) depth() int { return len(l.buf) }

// NewLanedChan creates a channel whose buffer is split into lanes, one per
// class of transaction, each a FIFO with its own depth: depths[i] for lane
// i, laneOf(v) naming v's lane. It is the receive or transmit buffer of a
// port that keeps classes apart, as PCIe keeps posted requests, non-posted
// requests and completions apart: a lane whose head waits does not block
// another lane.
//
// The producer asks ReadyFor(v) (room in v's lane) or ReadyLane, and sends
// with Send or, knowing the lane, SendLane; Ready is room in every lane. The
// consumer takes the head of any lane with ValidLane, PeekLane and
// RecvLane, and compares the heads' arrival order with Arrival; Valid, Peek
// and Recv take the oldest transaction of all lanes (OldestLane), as from
// one FIFO, and cost what they cost on a plain channel. Visibility, the producer's view of space freed in
// the same step, and OnRecv are those of a plain channel, lane by lane.
func NewLanedChan[T any](prod, cons *Unit, name string, depths []int, laneOf func(v *T) int, opts ...ChanOption) *Chan[T] {
	total := 0
	for i, d := range depths {
		if d < 1 {
			panic(fmt.Sprintf("sim: channel %s: lane %d of depth %d, want at least 1", name, i, d))
		}
		total += d
	}
	if len(depths) == 0 {
		panic(fmt.Sprintf("sim: channel %s: no lanes", name))
	}
	c := NewChan[T](prod, cons, name, total, opts...)
	c.special = true
	c.laneOf = laneOf
	c.lanes = make([]lane[T], len(depths))
	for i, d := range depths {
		c.lanes[i] = lane[T]{buf: make([]T, d), vis: make([]Tick, d), seq: make([]uint64, d), lastPop: Never}
	}
	c.reoldest()
	return c
}

// Lanes is the number of lanes: 1 for a plain channel.
func (c *Chan[T]) Lanes() int {
	if c.lanes == nil {
		return 1
	}
	return len(c.lanes)
}

// LaneOf is the lane v would travel in (0 on a plain channel).
func (c *Chan[T]) LaneOf(v *T) int {
	if c.lanes == nil {
		return 0
	}
	return c.laneOf(v)
}

// LaneDepth is the capacity of lane i (of a plain channel: its depth).
func (c *Chan[T]) LaneDepth(i int) int {
	if c.lanes == nil {
		return c.depth
	}
	return c.lanes[i].depth()
}

// LaneLen is the number of transactions in lane i, visible or not.
func (c *Chan[T]) LaneLen(i int) int {
	if c.lanes == nil {
		return c.n
	}
	return c.lanes[i].n
}

func (c *Chan[T]) laneOccupancyForProducer(l *lane[T]) int {
	if l.lastPop == c.eng.now {
		return l.n + l.popsNow
	}
	return l.n
}

// ReadyFor reports whether the producer may Send v in this cycle: room in
// v's lane (on a plain channel: Ready).
func (c *Chan[T]) ReadyFor(v *T) bool {
	if c.lanes == nil {
		return c.Ready()
	}
	return c.ReadyLane(c.laneOf(v))
}

// ReadyLane reports whether lane i has room for the producer in this cycle
// (on a plain channel: Ready).
func (c *Chan[T]) ReadyLane(i int) bool {
	if c.lanes == nil {
		return c.Ready()
	}
	if c.laneReady(&c.lanes[i]) {
		return true
	}
	c.stalls.Inc()
	return false
}

// laneReady is ReadyLane without the stall count; a full lane arranges for
// the producer to be woken when it drains.
func (c *Chan[T]) laneReady(l *lane[T]) bool {
	if c.laneOccupancyForProducer(l) < l.depth() {
		return true
	}
	if l.n < l.depth() {
		c.prod.wake(c.eng.now + 1) // full only because of this step's pops
	} else {
		l.waiting = true
	}
	return false
}

func (c *Chan[T]) readyAll() bool {
	ok := true
	for i := range c.lanes {
		if !c.laneReady(&c.lanes[i]) {
			ok = false
		}
	}
	if !ok {
		c.stalls.Inc()
	}
	return ok
}

// roomAll is the traced ready signal: room in every lane.
func (c *Chan[T]) roomAll() bool {
	if c.lanes == nil {
		return c.n < c.depth
	}
	for i := range c.lanes {
		if c.lanes[i].n >= c.lanes[i].depth() {
			return false
		}
	}
	return true
}

func (c *Chan[T]) sendLane(v T) {
	// laneOf looks at v through a pointer; one into the channel keeps v
	// from escaping to the heap on every Send.
	c.scratch = v
	i := c.laneOf(&c.scratch)
	var zero T
	c.scratch = zero
	c.SendLane(i, v)
}

// SendLane pushes v into lane i, which must be v's lane and have room
// (ReadyLane): a producer that knows the lane saves Send finding it. On a
// plain channel it is Send.
func (c *Chan[T]) SendLane(i int, v T) {
	if c.lanes == nil {
		c.Send(v)
		return
	}
	l := &c.lanes[i]
	if c.laneOccupancyForProducer(l) >= l.depth() {
		panic(fmt.Sprintf("sim: %s: Send on a full lane %d at %v (check ReadyLane first)", c.name, i, c.eng.now))
	}
	if c.undeclared {
		c.declareStats()
	}
	k := l.head + l.n
	if k >= l.depth() {
		k -= l.depth()
	}
	at := c.eng.now + c.lat
	c.sent++
	l.buf[k], l.vis[k], l.seq[k] = v, at, c.sent
	l.n++
	c.n++
	if c.n == 1 {
		c.reoldest() // the only transaction is the oldest
	}
	c.cons.wake(at)
	if c.watch != nil {
		c.watch.sent(&l.buf[k])
	}
	if traceHooks && c.eng.tr != nil && c.traced() {
		c.trace()
	}
}

// reoldest points buf, vis and head at the lane whose head arrived first.
// Every lane has the same latency, so the oldest head is also the first to
// become visible: Valid and Peek look at it. With every lane empty they
// look at an empty lane (n is 0).
func (c *Chan[T]) reoldest() {
	best := 0
	for i := range c.lanes {
		l := &c.lanes[i]
		if l.n > 0 && (c.lanes[best].n == 0 || l.seq[l.head] < c.lanes[best].seq[c.lanes[best].head]) {
			best = i
		}
	}
	l := &c.lanes[best]
	c.oldest, c.buf, c.vis, c.head = best, l.buf, l.vis, l.head
}

// OldestLane is the lane whose head arrived first, if it is valid (-1
// otherwise): the lane Recv takes from (0 on a plain channel).
func (c *Chan[T]) OldestLane() int {
	if !c.Valid() {
		return -1
	}
	if c.lanes == nil {
		return 0
	}
	return c.oldest
}

// ValidLane reports whether lane i has a transaction at its head for the
// consumer (on a plain channel, lane 0 is the channel).
func (c *Chan[T]) ValidLane(i int) bool {
	if c.lanes == nil {
		return i == 0 && c.Valid()
	}
	if i < 0 {
		return false
	}
	l := &c.lanes[i]
	return l.n > 0 && l.vis[l.head] <= c.eng.now
}

// PeekLane returns a pointer to lane i's head, or nil when it is not valid.
// The pointer is good until that lane's next RecvLane.
func (c *Chan[T]) PeekLane(i int) *T {
	if c.lanes == nil {
		if i != 0 {
			return nil
		}
		return c.Peek()
	}
	if !c.ValidLane(i) {
		return nil
	}
	l := &c.lanes[i]
	return &l.buf[l.head]
}

// Arrival is the arrival number of lane i's valid head: of two heads, the
// one with the smaller number was sent first. ok is false when lane i has no
// valid head.
func (c *Chan[T]) Arrival(i int) (n uint64, ok bool) {
	if c.lanes == nil {
		return 0, i == 0 && c.Valid()
	}
	if !c.ValidLane(i) {
		return 0, false
	}
	l := &c.lanes[i]
	return l.seq[l.head], true
}

// RecvLane takes lane i's head. Receiving when it is not valid panics.
func (c *Chan[T]) RecvLane(i int) T {
	if c.lanes == nil {
		if i != 0 {
			panic(fmt.Sprintf("sim: %s: RecvLane(%d) on a channel without lanes", c.name, i))
		}
		return c.Recv()
	}
	if !c.ValidLane(i) {
		panic(fmt.Sprintf("sim: %s: RecvLane(%d) with nothing valid at %v", c.name, i, c.eng.now))
	}
	now := c.eng.now
	l := &c.lanes[i]
	if c.onRecv != nil {
		c.onRecv(&l.buf[l.head])
	}
	if c.watch != nil {
		c.watch.taken(&l.buf[l.head])
	}
	v := l.buf[l.head]
	var zero T
	l.buf[l.head] = zero
	l.head++
	if l.head == l.depth() {
		l.head = 0
	}
	l.n--
	c.n--
	c.reoldest()
	if l.lastPop != now {
		l.lastPop, l.popsNow = now, 0
	}
	l.popsNow++
	c.transfers.Inc()
	if l.waiting {
		l.waiting = false
		c.prod.wake(now + 1)
	}
	if traceHooks && c.eng.tr != nil && c.traced() {
		c.eng.startPulse(c.sigFire, c.cons.clk.period)
		c.trace()
	}
	return v
}
