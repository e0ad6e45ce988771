package pcie

import (
	"fmt"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Ordering between the three classes, as a port's transaction layer keeps
// it (PCIe Base Specification, "Ordering Rules Summary"; row = the later
// TLP, column = the earlier one):
//
//   - a posted request does not pass a posted request (A2a), and nothing
//     passes a posted request: a read must see the writes before it (B2a,
//     C2a) and read data never overtakes earlier writes (D2a);
//   - posted requests and completions must be able to pass non-posted
//     requests (A3, A4, D3, D4): a non-posted request that waits — for
//     credits, for room in an access log — must not block them, or a full
//     buffer could deadlock the fabric;
//   - a posted request may pass a completion (A5), a non-posted request a
//     completion and a completion a non-posted request of another
//     transaction (B5, D5a).
//
// Only the "must not pass" and "must pass" rules are enforced here: the
// relaxed-ordering and ID-based exceptions are options (Y/N), which a
// transmitter may take (Dir does, for RO and IDO) and a receiver need not.
//
// Blocks keep the classes apart with channels that have one lane per class
// (NewClassChan: lane i carries class tlp.Class(i)), take from them with
// NextLane, and queue what they send in an Outbox.

// ClassLane is a TLP's lane in a class channel: its flow-control class.
func ClassLane(p *Packet) int { return int(p.TLP.Kind.Class()) }

// NewClassChan creates a channel from prod to cons with one lane per class:
// depths are the posted, non-posted and completion lanes' depths in TLPs.
func NewClassChan(prod, cons *sim.Unit, name string, depths [3]int, opts ...sim.ChanOption) *sim.Chan[Packet] {
	return sim.NewLanedChan(prod, cons, name, depths[:], ClassLane, opts...)
}

// NextLane is the lane of ch whose head a receiver takes next, or -1: it
// offers the valid heads to try oldest first and returns the first lane
// whose head try accepts. Lane i carries class tlp.Class(i) (a channel
// without lanes is one FIFO: lane 0). A head try refuses holds back the rest
// of its lane; a refused posted request also holds back every later TLP of
// the other lanes (nothing passes a posted request), while a refused
// non-posted request or completion lets later TLPs of the other lanes pass.
// NextLane changes nothing itself: the caller receives the head.
func NextLane[T any](ch *sim.Chan[T], try func(lane int, v *T) bool) int {
	// Most of the time the oldest head goes.
	first := ch.OldestLane()
	if first < 0 {
		return -1
	}
	if try(first, ch.PeekLane(first)) {
		return first
	}
	n := ch.Lanes()
	if n == 1 || tlp.Class(first) == tlp.Posted {
		return -1
	}
	if n > 3 {
		panic(fmt.Sprintf("pcie: %s: %d lanes, want at most one per class", ch.Name(), n))
	}
	// The valid heads in arrival order (at most three: an insertion sort).
	var lanes [3]int
	var arr [3]uint64
	k := 0
	for i := 0; i < n; i++ {
		a, ok := ch.Arrival(i)
		if !ok {
			continue
		}
		j := k
		for j > 0 && arr[j-1] > a {
			lanes[j], arr[j] = lanes[j-1], arr[j-1]
			j--
		}
		lanes[j], arr[j] = i, a
		k++
	}
	for _, i := range lanes[1:k] { // after the oldest, refused above
		if try(i, ch.PeekLane(i)) {
			return i
		}
		if tlp.Class(i) == tlp.Posted {
			return -1
		}
	}
	return -1
}

// Outbox is a block's queue of outgoing requests and completions, one FIFO
// per class, sent in arrival order except where a class cannot go: a posted
// request or completion passes a non-posted request that waits for room in
// its lane of the channel (and a posted request a completion), but nothing
// passes a posted request that waits. Over a channel with a lane per class
// a stalled read never holds up a write; over a plain channel the outbox is
// one FIFO.
type Outbox[T any] struct {
	classOf func(v *T) tlp.Class
	q       [3]sim.Queue[outItem[T]]
	n       int // items queued, all classes
	seq     uint64
	scratch T
}

type outItem[T any] struct {
	v   T
	seq uint64
}

// NewOutbox makes an empty outbox; classOf names an item's class.
func NewOutbox[T any](classOf func(v *T) tlp.Class) *Outbox[T] {
	return &Outbox[T]{classOf: classOf}
}

// PacketClass is a packet's flow-control class, for an Outbox of TLPs.
func PacketClass(p *Packet) tlp.Class { return p.TLP.Kind.Class() }

// Push queues v behind everything queued before it.
func (o *Outbox[T]) Push(v T) {
	o.seq++
	o.n++
	// classOf looks at v through a pointer; one into the outbox keeps v
	// from escaping to the heap on every Push.
	o.scratch = v
	c := o.classOf(&o.scratch)
	var zero T
	o.scratch = zero
	o.q[c].Push(outItem[T]{v: v, seq: o.seq})
}

// Len is the number of items queued.
func (o *Outbox[T]) Len() int { return o.n }

// ClassLen is the number of items of class c queued.
func (o *Outbox[T]) ClassLen(c tlp.Class) int { return o.q[c].Len() }

// Drain sends what the ordering rules and the room in ch allow, oldest
// first, and returns how many it sent.
func (o *Outbox[T]) Drain(ch *sim.Chan[T]) int {
	if o.n == 0 {
		return 0
	}
	sent := 0
	var blocked [3]bool
	for {
		c := o.oldest(&blocked)
		if c < 0 {
			return sent
		}
		if !ch.ReadyLane(c) {
			if tlp.Class(c) == tlp.Posted || ch.Lanes() == 1 {
				return sent // nothing passes a waiting posted request
			}
			blocked[c] = true
			continue
		}
		ch.SendLane(c, o.q[c].Pop().v)
		o.n--
		sent++
	}
}

// Sendable reports whether Drain would send something into ch now. Like
// Drain it asks ch for room, so a full lane wakes the producer when it
// drains.
func (o *Outbox[T]) Sendable(ch *sim.Chan[T]) bool {
	if o.n == 0 {
		return false
	}
	var blocked [3]bool
	for {
		c := o.oldest(&blocked)
		if c < 0 {
			return false
		}
		if ch.ReadyLane(c) {
			return true
		}
		if tlp.Class(c) == tlp.Posted || ch.Lanes() == 1 {
			return false
		}
		blocked[c] = true
	}
}

// oldest is the class whose head was queued first among those not blocked,
// -1 if none.
func (o *Outbox[T]) oldest(blocked *[3]bool) int {
	c := -1
	for i := range o.q {
		if o.q[i].Len() > 0 && !blocked[i] && (c < 0 || o.q[i].Front().seq < o.q[c].Front().seq) {
			c = i
		}
	}
	return c
}
