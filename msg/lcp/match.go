package lcp

import "github.com/aaemu/aaemu/sim"

// A tag is 64 bits: the communicator context (16), the source rank (16)
// and the user's tag (32). An ignore mask's set bits are not compared, so
// a receive from any source ignores the source field.
const (
	tagBits     = 32
	srcShift    = 32
	ctxShift    = 48
	maxRanks    = 1 << 16
	srcMask     = uint64(maxRanks-1) << srcShift
	userTagMask = uint64(1)<<tagBits - 1
)

// MakeTag packs a context, a source rank and a user tag.
func MakeTag(ctx, src, tag int) uint64 {
	return uint64(ctx)<<ctxShift | uint64(src)<<srcShift | uint64(uint32(tag))
}

// matches reports whether a message's tag matches an entry's tag under
// the entry's ignore mask.
func matches(msg, tag, ign uint64) bool { return (msg^tag)&^ign == 0 }

// posted is a receive in a matching unit's posted-receive list: its tag,
// ignore mask and the context handed back on a match (tag_ctx).
type posted struct {
	tag, ign uint64
	ctx      *Request
}

// unexpected is a tagged message that found no posted receive: its tag,
// immediate, and where its data waits (a copy out of the receive slot).
type unexpected struct {
	src      int
	tag, imm uint64
	addr     uint64 // the data's copy in node memory (eager), or 0
	n        int
	pooled   bool    // addr is a block of the rank's unexpected pool
	rdv      rdvInfo // a rendezvous request's contents
	direct   bool    // matched on arrival to a receive posted before it: eager data delivered in place
}

// matchUnit is a NIC's tag-matching unit (BXI's, Portals 4's): a
// posted-receive list (PRQ) and an unexpected-message list (UMQ), searched
// in order, one entry per MatchPS. It is one unit per NIC, serial: a
// search waits for the one before it. The model stands in for the NIC's
// hardware as the protocol layer sees it: the process that hands it a
// message or a receive waits until the unit's search ends (the unit's
// time, not the core's cycles).
type matchUnit struct {
	prq  []posted
	umq  []*unexpected
	busy sim.Tick // when the unit finishes its last search
	// searched counts the entries examined (statistics).
	searched uint64
}

// search charges a search of n entries starting when both the caller and
// the unit are free, and returns when it ends.
func (u *matchUnit) search(now sim.Tick, n int, per sim.Tick) sim.Tick {
	start := max(now, u.busy)
	u.busy = start + sim.Tick(max(n, 1))*per
	u.searched += uint64(n)
	return u.busy
}

// arrive matches a message against the posted receives: the first that
// matches, in posting order, is taken. It returns the receive (nil when
// none matched) and the entries examined.
func (u *matchUnit) arrive(tag uint64) (*Request, int) {
	for i, p := range u.prq {
		if matches(tag, p.tag, p.ign) {
			u.prq = append(u.prq[:i], u.prq[i+1:]...)
			return p.ctx, i + 1
		}
	}
	return nil, len(u.prq)
}

// post matches a new receive against the unexpected messages (the first
// that matches, in arrival order) and, with none, appends it to the
// posted-receive list.
func (u *matchUnit) post(tag, ign uint64, ctx *Request) (*unexpected, int) {
	for i, m := range u.umq {
		if matches(m.tag, tag, ign) {
			u.umq = append(u.umq[:i], u.umq[i+1:]...)
			return m, i + 1
		}
	}
	u.prq = append(u.prq, posted{tag: tag, ign: ign, ctx: ctx})
	return nil, len(u.umq)
}
