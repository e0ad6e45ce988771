package mpicheck

import (
	"encoding/binary"
	"strings"
	"testing"
)

func msg(id uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(id*13 + uint64(i))
	}
	if n >= 8 {
		binary.LittleEndian.PutUint64(b, id)
	}
	return b
}

func snd(rank, op, dst, tag, comm int, data []byte) Event {
	return Event{Kind: Send, Rank: rank, Op: op, Peer: dst, Tag: tag, Comm: comm, Size: len(data), Data: data}
}

func rcv(rank, op, src, tag, comm, size int) Event {
	return Event{Kind: Recv, Rank: rank, Op: op, Peer: src, Tag: tag, Comm: comm, Size: size}
}

// done completes receive op of rank with what message data (sent by src
// with tag) leaves in a buffer of room bytes.
func done(rank, op, src, tag int, data []byte, room int) Event {
	n := min(len(data), room)
	return Event{Kind: Done, Rank: rank, Op: op, Source: src, StatusTag: tag, Count: n, Truncated: len(data) > room,
		Data: append([]byte(nil), data[:n]...)}
}

// A correct log: two messages of one tag and pair in order, a wildcard
// receive, a zero-byte message, an unexpected one, a truncation, another
// communicator with the same tag.
func good() []Event {
	a, b, c, z, t, o := msg(1, 16), msg(2, 100), msg(3, 8), msg(4, 0), msg(5, 40), msg(6, 8)
	return []Event{
		rcv(1, 0, 0, 5, 0, 128),
		rcv(1, 1, Any, 5, 0, 128),
		snd(0, 0, 1, 5, 0, a),
		snd(0, 1, 1, 5, 0, b),
		snd(2, 0, 1, 9, 0, c),
		snd(0, 2, 1, 5, 7, o), // another communicator, same tag
		snd(2, 1, 1, 3, 0, z),
		done(1, 0, 0, 5, a, 128),
		done(1, 1, 0, 5, b, 128),
		rcv(1, 2, Any, Any, 0, 8),
		done(1, 2, 2, 9, c, 8),
		rcv(1, 3, 2, Any, 0, 0),
		done(1, 3, 2, 3, z, 0),
		snd(0, 3, 1, 6, 0, t),
		rcv(1, 4, 0, 6, 0, 10),
		done(1, 4, 0, 6, t, 10),
		rcv(1, 5, 0, 5, 7, 8),
		done(1, 5, 0, 5, o, 8),
	}
}

func TestCheck(t *testing.T) {
	if rep := Check(good()); !rep.OK() || rep.Delivered != 6 {
		t.Fatalf("the good log: %v", &rep)
	}
	cases := []struct {
		name   string
		break_ func(l []Event) []Event
		want   string
	}{
		{"reordered", func(l []Event) []Event {
			// The first two receives get the pair's messages the wrong way round.
			l[7], l[8] = done(1, 0, 0, 5, msg(2, 100), 128), done(1, 1, 0, 5, msg(1, 16), 128)
			return l
		}, "non-overtaking"},
		{"lost", func(l []Event) []Event { return append(l[:8], l[9:]...) }, "never delivered"},
		{"twice", func(l []Event) []Event {
			l[8] = done(1, 1, 0, 5, msg(1, 16), 128)
			return l
		}, "delivered already"},
		{"wrong-tag-status", func(l []Event) []Event {
			l[10].StatusTag = 8
			return l
		}, "status"},
		{"not-matching", func(l []Event) []Event {
			l[15] = done(1, 4, 0, 5, msg(6, 8), 10) // tag 6 receive in the world gets comm 7's tag 5
			return l
		}, "does not match"},
		{"truncation-hidden", func(l []Event) []Event {
			l[15].Truncated = false
			return l
		}, "truncated"},
		{"corrupt", func(l []Event) []Event {
			l[7].Data[12]++
			return l
		}, "bytes that arrived"},
		{"before-send", func(l []Event) []Event {
			e := l[4] // the send of c, moved after its delivery
			l = append(l[:4], l[5:]...)
			return append(l[:10], append([]Event{e}, l[10:]...)...)
		}, "before it was sent"},
		{"never-completed", func(l []Event) []Event { return append(l[:12], l[13:]...) }, "never completed"},
		{"never-posted", func(l []Event) []Event {
			return append(l, done(3, 0, 0, 1, nil, 0))
		}, "never posted"},
		{"zero-byte-ghost", func(l []Event) []Event {
			l[12] = done(1, 3, 2, 4, nil, 0) // a zero-byte message of a tag nobody sent
			return l
		}, "no message"},
	}
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			rep := Check(k.break_(good()))
			if rep.OK() || !strings.Contains(rep.String(), k.want) {
				t.Errorf("want a violation with %q, got %v", k.want, &rep)
			}
		})
	}
}
