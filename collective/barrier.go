package collective

import "github.com/aaemu/aaemu/sim"

// barrier is one node's part of the global barrier network: a wired AND
// up the tree and the release back down. A node's level goes up once the
// node has armed the barrier and every child's level has gone up; the
// root, seeing all of them, releases, and the release reaches every node
// one hop delay per level later.
type barrier struct {
	u            *sim.Unit
	arm, release *sim.Chan[struct{}]
	up, fromUp   *sim.Chan[struct{}] // to and from the parent (nil at the root)
	fromKids     []*sim.Chan[struct{}]
	toKids       []*sim.Chan[struct{}]

	armed   bool
	arrived int // children whose level went up in this round
	rounds  *sim.Counter
}

func newBarrier(name string, client *sim.Unit, spec *Spec) *barrier {
	b := &barrier{}
	b.u = client.Clock().Add(name, b)
	b.arm = sim.NewChan[struct{}](client, b.u, name+".arm", 1)
	b.release = sim.NewChan[struct{}](b.u, client, name+".release", 1)
	b.rounds = client.Engine().Stats().Counter(name+".rounds", "barriers", "barriers this node took part in")
	return b
}

// Tick takes the node's arm and the children's levels, raises its own
// when all are up, and passes a release down.
func (b *barrier) Tick(now sim.Tick) bool {
	if !b.armed && b.arm.Valid() {
		b.arm.Recv()
		b.armed = true
	}
	for _, ch := range b.fromKids {
		if ch.Valid() {
			ch.Recv()
			b.arrived++
		}
	}
	if b.armed && b.arrived == len(b.fromKids) {
		if b.up == nil {
			if b.down() {
				b.armed, b.arrived = false, 0
			}
		} else if b.up.Ready() {
			b.up.Send(struct{}{})
			b.armed, b.arrived = false, 0
		}
	}
	if b.fromUp != nil && b.fromUp.Valid() && b.downReady() {
		b.fromUp.Recv()
		b.down()
	}
	return false
}

func (b *barrier) downReady() bool {
	if !b.release.Ready() {
		return false
	}
	for _, ch := range b.toKids {
		if !ch.Ready() {
			return false
		}
	}
	return true
}

// down releases the node and its children.
func (b *barrier) down() bool {
	if !b.downReady() {
		return false
	}
	for _, ch := range b.toKids {
		ch.Send(struct{}{})
	}
	b.release.Send(struct{}{})
	b.rounds.Inc()
	return true
}

// BarrierLatency is the time from the last node arming the barrier to
// every node released, in cycles, for a tree of the given depth: the
// level rises through every tree level and the release comes back down.
func (s Spec) BarrierLatency(depth int) int { return 2 * depth * s.BarrierHopCycles }
