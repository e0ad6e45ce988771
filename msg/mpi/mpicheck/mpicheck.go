// Package mpicheck is a golden model of MPI point-to-point delivery,
// independent of the model under test (it imports nothing of it): it reads
// a log of what the ranks' programs did (sends and receives posted,
// receives completed with their status and the bytes that arrived) and
// checks MPI's rules on it:
//
//   - every message is delivered exactly once, every receive completes;
//   - a message goes to a receive of its destination and communicator
//     whose source and tag (or wildcards) match it, after it was sent;
//   - the status names the message's source and tag, counts min(message,
//     buffer) bytes and reports truncation exactly when the message was
//     longer than the buffer; the bytes are the message's;
//   - non-overtaking: if two messages from one source to one destination
//     in one communicator both match a receive, the one sent first is
//     matched first — its receive was posted before the other's.
//
// Which message a receive got is read from the bytes that arrived: the
// program writes a unique identity into the first 8 bytes of every message
// that has them. Shorter messages are told apart by their envelope: such a
// completion takes the first undelivered message of its source, tag and
// communicator that fits what arrived.
package mpicheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// Any is the wildcard source or tag of a receive.
const Any = -1

// Kind is what an event records.
type Kind int

// The events.
const (
	Send Kind = 1 + iota // a send posted
	Recv                 // a receive posted
	Done                 // a receive completed
)

func (k Kind) String() string {
	switch k {
	case Send:
		return "send"
	case Recv:
		return "recv"
	case Done:
		return "done"
	}
	return fmt.Sprintf("kind%d", int(k))
}

// Event is one entry of the log. The log lists events in the order they
// happened; a rank's events are in its program order. Ranks are world
// ranks; a communicator is any number that names it.
type Event struct {
	Kind Kind
	Rank int // the sender (Send) or the receiver (Recv, Done)
	Op   int // the operation's number at its rank; a Done names its Recv's
	Comm int
	Peer int // Send: the destination; Recv: the source accepted (or Any)
	Tag  int // Send: the tag; Recv: the tag accepted (or Any)
	Size int // Send: the message's bytes; Recv: the buffer's
	// Data: the message (Send); the bytes that arrived (Done).
	Data []byte
	// Done: the status.
	Source, StatusTag, Count int
	Truncated                bool
}

func (e *Event) String() string {
	switch e.Kind {
	case Send:
		return fmt.Sprintf("rank %d send #%d (dest %d, tag %d, comm %d, %d bytes)", e.Rank, e.Op, e.Peer, e.Tag, e.Comm, e.Size)
	case Recv:
		return fmt.Sprintf("rank %d recv #%d (source %s, tag %s, comm %d, %d-byte buffer)", e.Rank, e.Op, wild(e.Peer), wild(e.Tag), e.Comm, e.Size)
	}
	return fmt.Sprintf("rank %d done #%d (source %d, tag %d, %d bytes, truncated %v)", e.Rank, e.Op, e.Source, e.StatusTag, e.Count, e.Truncated)
}

func wild(v int) string {
	if v == Any {
		return "ANY"
	}
	return fmt.Sprint(v)
}

// Report is the outcome of a check.
type Report struct {
	Sends, Receives, Delivered int
	Violations                 []string
}

// OK reports whether the log obeys every rule.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

func (r *Report) String() string {
	s := fmt.Sprintf("%d sends, %d receives, %d delivered", r.Sends, r.Receives, r.Delivered)
	if r.OK() {
		return s + ": ok"
	}
	v := r.Violations
	more := ""
	if len(v) > 20 {
		v, more = v[:20], fmt.Sprintf("\n  … and %d more", len(r.Violations)-20)
	}
	return fmt.Sprintf("%s: %d violation(s):\n  %s%s", s, len(r.Violations), strings.Join(v, "\n  "), more)
}

type send struct {
	ev   *Event
	at   int   // index in the log
	recv *recv // the receive it went to
}

type recv struct {
	ev   *Event
	at   int
	done *Event
	msg  *send
}

type opKey struct{ rank, op int }
type pairKey struct{ src, dst, comm int }

// Check checks a log.
func Check(log []Event) Report {
	var rep Report
	bad := func(format string, a ...any) { rep.Violations = append(rep.Violations, fmt.Sprintf(format, a...)) }
	sends := map[opKey]*send{}
	recvs := map[opKey]*recv{}
	byID := map[uint64]*send{}
	pairs := map[pairKey][]*send{} // in send order
	var pairOrder []pairKey
	var allSends []*send
	var allRecvs []*recv
	// First every posted operation, then the completions in order.
	for i := range log {
		e := &log[i]
		k := opKey{e.Rank, e.Op}
		switch e.Kind {
		case Send:
			if sends[k] != nil {
				bad("event %d: %v: the operation number is taken", i, e)
				continue
			}
			if len(e.Data) != e.Size {
				bad("event %d: %v: %d bytes of data", i, e, len(e.Data))
			}
			s := &send{ev: e, at: i}
			sends[k] = s
			allSends = append(allSends, s)
			pk := pairKey{e.Rank, e.Peer, e.Comm}
			if _, ok := pairs[pk]; !ok {
				pairOrder = append(pairOrder, pk)
			}
			pairs[pk] = append(pairs[pk], s)
			if e.Size >= 8 {
				id := binary.LittleEndian.Uint64(e.Data)
				if o := byID[id]; o != nil {
					bad("event %d: %v: identity %d is also %v's", i, e, id, o.ev)
				}
				byID[id] = s
			}
		case Recv:
			if recvs[k] != nil {
				bad("event %d: %v: the operation number is taken", i, e)
				continue
			}
			r := &recv{ev: e, at: i}
			recvs[k] = r
			allRecvs = append(allRecvs, r)
		case Done:
		default:
			bad("event %d: kind %v", i, e.Kind)
		}
	}
	for i := range log {
		e := &log[i]
		if e.Kind != Done {
			continue
		}
		r := recvs[opKey{e.Rank, e.Op}]
		switch {
		case r == nil:
			bad("event %d: %v completes a receive never posted", i, e)
			continue
		case r.at > i:
			bad("event %d: %v completes a receive posted later", i, e)
		case r.done != nil:
			bad("event %d: %v completes a receive a second time", i, e)
			continue
		}
		r.done = e
		s := identify(e, i, r.ev.Comm, byID, pairs)
		if s == nil {
			bad("event %d: %v: no message sent to it fits what arrived", i, e)
			continue
		}
		if s.recv != nil {
			bad("event %d: %v: %v was delivered already, to %v", i, e, s.ev, s.recv.ev)
			continue
		}
		s.recv, r.msg = r, s
		rep.Delivered++
		checkDelivery(r, s, i, bad)
	}
	rep.Sends, rep.Receives = len(allSends), len(allRecvs)
	for _, s := range allSends {
		if s.recv == nil {
			bad("%v was never delivered", s.ev)
		}
	}
	for _, r := range allRecvs {
		if r.done == nil {
			bad("%v never completed", r.ev)
		}
	}
	// Non-overtaking.
	for _, pk := range pairOrder {
		ss := pairs[pk]
		for i, a := range ss {
			if a.recv == nil {
				continue
			}
			for _, b := range ss[i+1:] {
				if b.recv != nil && accepts(b.recv.ev, a.ev) && b.recv.at < a.recv.at {
					bad("non-overtaking: %v overtook %v: %v took it though it matches the earlier message, which went to the later %v",
						b.ev, a.ev, b.recv.ev, a.recv.ev)
				}
			}
		}
	}
	return rep
}

// identify finds the message the completion at log index at received: by
// its identity, or the first undelivered one of its envelope that fits
// (sent before it, if one is).
func identify(d *Event, at, comm int, byID map[uint64]*send, pairs map[pairKey][]*send) *send {
	if d.Count >= 8 && len(d.Data) >= 8 {
		return byID[binary.LittleEndian.Uint64(d.Data)]
	}
	var late *send
	for _, s := range pairs[pairKey{d.Source, d.Rank, comm}] {
		if s.recv != nil || s.ev.Tag != d.StatusTag {
			continue
		}
		if s.ev.Size == d.Count && !d.Truncated || s.ev.Size > d.Count && d.Truncated {
			if s.at < at {
				return s
			}
			if late == nil {
				late = s
			}
		}
	}
	return late
}

// accepts reports whether receive r matches message s's envelope.
func accepts(r, s *Event) bool {
	return r.Rank == s.Peer && r.Comm == s.Comm && (r.Peer == Any || r.Peer == s.Rank) && (r.Tag == Any || r.Tag == s.Tag)
}

func checkDelivery(r *recv, s *send, i int, bad func(string, ...any)) {
	d := r.done
	if !accepts(r.ev, s.ev) {
		bad("event %d: %v went to %v, which does not match it", i, s.ev, r.ev)
	}
	if s.at > i {
		bad("event %d: %v was received before it was sent", i, s.ev)
	}
	count := min(s.ev.Size, r.ev.Size)
	trunc := s.ev.Size > r.ev.Size
	if d.Source != s.ev.Rank || d.StatusTag != s.ev.Tag || d.Count != count || d.Truncated != trunc {
		bad("event %d: %v: status (source %d, tag %d, %d bytes, truncated %v) for %v into %v (want source %d, tag %d, %d bytes, truncated %v)",
			i, d, d.Source, d.StatusTag, d.Count, d.Truncated, s.ev, r.ev, s.ev.Rank, s.ev.Tag, count, trunc)
	}
	n := min(count, len(d.Data))
	if len(d.Data) != count || !bytes.Equal(d.Data[:n], s.ev.Data[:n]) {
		bad("event %d: %v: the bytes that arrived are not %v's first %d", i, d, s.ev, count)
	}
}
