package machine

import (
	"slices"

	"github.com/aaemu/aaemu/nic"
)

// WorkRequests is the driver's record of a queue's work requests from
// their posting until their completions are taken (what libibverbs users
// keep beside an ibv_qp): the destination of each, and the completion
// entries reaped before a Wait asked for them.
//
// A queue's work-request ids are its send queue's producer index at
// posting, 0, 1, 2, …, so the record is a window of consecutive ids in a
// ring (a power of two long, as long as the window ever was), indexed by
// id minus the window's first, not a map: posting appends, taking the
// oldest advances the window. Completions come back in
// posting order per destination only, so a few may be taken late; one
// reaped but never taken (a put nobody waits for) would hold the window
// open, and is moved out of it, into a map of stragglers, once the window
// is more than twice the send queue long. A work request not yet reaped
// is never that far behind: the send queue holds at most Size of them.
type WorkRequests struct {
	first uint64    // id of ring[head]
	ring  []wrEntry // ids first … first+n-1 from ring[head] on, wrapping
	head  int
	n     int
	late  map[uint64]wrEntry // reaped and not taken, behind the window
	keep  int                // the window's length before stragglers move out
	open  int                // recorded and not taken
}

// wrEntry is a work request's record: its completion entry without the
// id (which its place says), in 32 bytes, since a 1,024-node run holds
// millions.
type wrEntry struct {
	value, seq     uint64
	status, length uint32
	dst            int32
	state          uint8
}

func (e *wrEntry) setCQE(c nic.CQE) {
	e.value, e.seq, e.status, e.length = c.Value, c.Seq, c.Status, c.Length
}

func (e *wrEntry) cqe(id uint64) nic.CQE {
	return nic.CQE{WRID: id, Status: e.status, Length: e.length, Value: e.value, Seq: e.seq}
}

// The states of a work request in the record.
const (
	wrPosted uint8 = iota // posted, its completion not reaped
	wrReaped              // its completion reaped, not taken
	wrTaken               // its completion taken (or never recorded)
)

func newWorkRequests(sqSize int) WorkRequests { return WorkRequests{keep: 2 * max(sqSize, 1)} }

// newQueueWorkRequests is the record of a core's srd queue, which every
// peer's work requests share and which runs as full as its send queue:
// the ring starts at the send queue's length (a power of two at or above
// it) rather than growing there through every smaller one, each of whose
// arrays would be garbage (a connected QP's record starts empty: there is
// one per peer and most stay short).
func newQueueWorkRequests(sqSize int) WorkRequests {
	r := newWorkRequests(sqSize)
	r.ring = make([]wrEntry, ringLen(sqSize))
	return r
}

// ringLen is the power of two at or above n, at least 8.
func ringLen(n int) int {
	l := 8
	for l < n {
		l *= 2
	}
	return l
}

// Post records work request id (the next id: the queue's producer index)
// to node dst.
func (r *WorkRequests) Post(id uint64, dst int) {
	if r.n == 0 {
		r.first = id
	}
	if id != r.first+uint64(r.n) {
		panic("machine: work requests posted out of order")
	}
	for r.n >= r.keep && r.ring[r.head].state == wrReaped {
		if r.late == nil {
			r.late = map[uint64]wrEntry{}
		}
		r.late[r.first] = r.ring[r.head]
		r.advance()
	}
	if r.n == len(r.ring) {
		grown := make([]wrEntry, max(8, 2*len(r.ring)))
		for k := 0; k < r.n; k++ {
			grown[k] = r.ring[(r.head+k)&(len(r.ring)-1)]
		}
		r.ring, r.head = grown, 0
	}
	r.ring[(r.head+r.n)&(len(r.ring)-1)] = wrEntry{dst: int32(dst)}
	r.n++
	r.open++
}

func (r *WorkRequests) len() int { return r.n }

// at is id's entry in the window, or nil.
func (r *WorkRequests) at(id uint64) *wrEntry {
	if id < r.first || id-r.first >= uint64(r.n) {
		return nil
	}
	return &r.ring[(r.head+int(id-r.first))&(len(r.ring)-1)]
}

// advance drops the window's first entry.
func (r *WorkRequests) advance() {
	r.head = (r.head + 1) & (len(r.ring) - 1)
	r.first++
	r.n--
}

// trim drops the taken entries at the front of the window.
func (r *WorkRequests) trim() {
	for r.n > 0 && r.ring[r.head].state == wrTaken {
		r.advance()
	}
}

// Reaped files the completion entry of its work request, and returns
// that request's destination (-1 when it was not recorded: a completion
// of a work request posted past the verbs).
func (r *WorkRequests) Reaped(cqe nic.CQE) int {
	e := r.at(cqe.WRID)
	if e == nil || e.state != wrPosted {
		// Not posted through the record: kept among the stragglers, as
		// a map by id would.
		if r.late == nil {
			r.late = map[uint64]wrEntry{}
		}
		if e != nil && e.state == wrReaped {
			e.setCQE(cqe)
			return int(e.dst)
		}
		if old, ok := r.late[cqe.WRID]; ok {
			old.setCQE(cqe)
			r.late[cqe.WRID] = old
			return int(old.dst)
		}
		x := wrEntry{dst: -1, state: wrReaped}
		x.setCQE(cqe)
		r.late[cqe.WRID] = x
		r.open++
		return -1
	}
	e.setCQE(cqe)
	e.state = wrReaped
	return int(e.dst)
}

// Done reports whether id's completion has been reaped and not yet taken.
func (r *WorkRequests) Done(id uint64) bool {
	if e := r.at(id); e != nil {
		return e.state == wrReaped
	}
	_, ok := r.late[id]
	return ok
}

// Unreaped reports whether id was posted and its completion not yet
// reaped.
func (r *WorkRequests) Unreaped(id uint64) bool {
	e := r.at(id)
	return e != nil && e.state == wrPosted
}

// Take returns id's completion and forgets the work request; the zero
// entry if it was not reaped or was taken already.
func (r *WorkRequests) Take(id uint64) nic.CQE {
	if e := r.at(id); e != nil {
		if e.state == wrTaken {
			return nic.CQE{}
		}
		var cqe nic.CQE
		if e.state == wrReaped {
			cqe = e.cqe(id)
		}
		e.state = wrTaken
		r.open--
		r.trim()
		return cqe
	}
	if e, ok := r.late[id]; ok {
		delete(r.late, id)
		r.open--
		return e.cqe(id)
	}
	return nic.CQE{}
}

// TakeReaped forgets every work request whose completion was reaped and
// not taken (the rc Flush: it took them all).
func (r *WorkRequests) TakeReaped() {
	for k := 0; k < r.n; k++ {
		if e := &r.ring[(r.head+k)&(len(r.ring)-1)]; e.state == wrReaped {
			e.state = wrTaken
			r.open--
		}
	}
	r.open -= len(r.late)
	clear(r.late)
	r.trim()
}

// Outstanding returns the id of a work request to dst whose completion has
// not been reaped, from id from on: ok false if there is none.
func (r *WorkRequests) Outstanding(dst int, from uint64) (id uint64, ok bool) {
	k := 0
	if from > r.first {
		if from-r.first >= uint64(r.n) {
			return 0, false
		}
		k = int(from - r.first)
	}
	for ; k < r.n; k++ {
		if e := &r.ring[(r.head+k)&(len(r.ring)-1)]; e.state == wrPosted && int(e.dst) == dst {
			return r.first + uint64(k), true
		}
	}
	return 0, false
}

// ReapedTo lists, in id order, the work requests to dst whose completions
// were reaped and not taken.
func (r *WorkRequests) ReapedTo(dst int) []uint64 {
	var ids []uint64
	for k := 0; k < r.n; k++ {
		if e := &r.ring[(r.head+k)&(len(r.ring)-1)]; e.state == wrReaped && int(e.dst) == dst {
			ids = append(ids, r.first+uint64(k))
		}
	}
	if len(r.late) > 0 {
		for id, e := range r.late {
			if int(e.dst) == dst {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids) // the stragglers' map order must not decide anything
	}
	return ids
}

// Open is the number of work requests recorded and not taken.
func (r *WorkRequests) Open() int { return r.open }
