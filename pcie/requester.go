package pcie

import (
	"fmt"
	"math/bits"

	"github.com/aaemu/aaemu/pcie/tlp"
)

// Requester tracks a device's outstanding reads by tag and reassembles their
// completions. The number of tags bounds the reads in flight, which is what
// limits read throughput on a long-latency path.
type Requester struct {
	id   tlp.ID
	base uint16 // first usable tag
	st   []readState
	free []uint16 // free tags, lowest last
	// spare holds read buffers handed back by Recycle, which Issue reuses:
	// a device that consumes each read's data at once (copies or parses
	// it) hands it back, and holds a buffer per read in flight, not one
	// per read made. At most one per tag is kept.
	spare  [][]byte
	poison bool // Recycle overwrites what it is handed (SetPoison)
}

type readState struct {
	busy      bool
	addr      uint64 // first byte requested
	n         int    // bytes requested
	remaining int
	buf       []byte
}

// TagBits is 5 (32 tags), 8 (Extended Tag, 256 tags) or 10 (10-Bit Tag
// Requester, 768 tags: tags with Tag[9:8] = 00 are not used).
func NewRequester(id tlp.ID, tagBits int) (*Requester, error) {
	var base, n int
	switch tagBits {
	case 5:
		base, n = 0, 32
	case 8:
		base, n = 0, 256
	case 10:
		base, n = 256, 768
	default:
		return nil, fmt.Errorf("tag bits %d: want 5, 8 or 10", tagBits)
	}
	r := &Requester{id: id, base: uint16(base), st: make([]readState, n)}
	for i := n - 1; i >= 0; i-- {
		r.free = append(r.free, uint16(base+i))
	}
	return r, nil
}

// Outstanding is the number of reads in flight.
func (r *Requester) Outstanding() int { return len(r.st) - len(r.free) }

// Tags is the number of tags.
func (r *Requester) Tags() int { return len(r.st) }

// Issue builds the MRd for n bytes at addr (at most MRRS, not crossing 4 KB)
// with a free tag; ok is false when every tag is in use.
func (r *Requester) Issue(addr uint64, n int) (req tlp.TLP, ok bool) {
	if len(r.free) == 0 {
		return tlp.TLP{}, false
	}
	tag := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	s := &r.st[tag-r.base]
	*s = readState{busy: true, addr: addr, n: n, remaining: max(n, 1), buf: r.buffer(n)}
	return tlp.NewMemRead(r.id, tag, addr, n), true
}

// IssueNonPosted gives the non-posted request t (an AtomicOp, say) a free
// tag and expects n bytes back at addr; ok is false when every tag is in use.
func (r *Requester) IssueNonPosted(t tlp.TLP, addr uint64, n int) (tlp.TLP, bool) {
	if len(r.free) == 0 {
		return t, false
	}
	tag := r.free[len(r.free)-1]
	r.free = r.free[:len(r.free)-1]
	r.st[tag-r.base] = readState{busy: true, addr: addr, n: n, remaining: n, buf: r.buffer(n)}
	t.RequesterID, t.Tag = r.id, tag
	return t, true
}

// Complete takes one completion. done is true when the read is complete
// (its data is returned) or failed (err says why). A completion that does not
// match an outstanding read, or whose Byte Count or Lower Address disagrees
// with what is still expected, is an error.
func (r *Requester) Complete(c *tlp.TLP) (done bool, data []byte, err error) {
	if !c.Kind.IsCompletion() {
		return false, nil, fmt.Errorf("%v is not a completion", c.Kind)
	}
	if c.RequesterID != r.id {
		return false, nil, fmt.Errorf("completion for requester %v arrived at %v", c.RequesterID, r.id)
	}
	if c.Tag < r.base || int(c.Tag-r.base) >= len(r.st) || !r.st[c.Tag-r.base].busy {
		return false, nil, fmt.Errorf("unexpected completion: tag %d is not outstanding", c.Tag)
	}
	s := &r.st[c.Tag-r.base]
	if c.Status != tlp.SC {
		r.release(c.Tag)
		return true, nil, fmt.Errorf("read of %d bytes at %#x completed with status %v", s.n, s.addr, c.Status)
	}
	next := s.addr + uint64(s.n-s.remaining)
	if s.n == 0 {
		next = s.addr
	}
	if int(c.ByteCount) != s.remaining {
		return false, nil, fmt.Errorf("tag %d: Byte Count %d, expected %d remaining", c.Tag, c.ByteCount, s.remaining)
	}
	if c.LowerAddr != uint8(next&0x7f) {
		return false, nil, fmt.Errorf("tag %d: Lower Address %#x, expected %#x", c.Tag, c.LowerAddr, next&0x7f)
	}
	if s.n == 0 {
		r.release(c.Tag)
		return true, nil, nil
	}
	// The payload starts at next's DW; skip the bytes before next.
	skip := int(next & 3)
	got := min(len(c.Data)-skip, s.remaining)
	if got <= 0 {
		return false, nil, fmt.Errorf("tag %d: completion carries no requested byte", c.Tag)
	}
	copy(s.buf[s.n-s.remaining:], c.Data[skip:skip+got])
	s.remaining -= got
	if s.remaining > 0 {
		return false, nil, nil
	}
	data = s.buf
	r.release(c.Tag)
	return true, data, nil
}

// buffer is a buffer for a read of n bytes: a spare one if it is large
// enough (every byte of it is written before the read returns it), else a
// new one, its capacity rounded up to a power of two so that it fits the
// next reads too.
func (r *Requester) buffer(n int) []byte {
	if k := len(r.spare); k > 0 {
		b := r.spare[k-1]
		r.spare = r.spare[:k-1]
		if cap(b) >= n {
			return b[:n]
		}
	}
	if n == 0 {
		return make([]byte, 0)
	}
	return make([]byte, n, 1<<bits.Len(uint(n-1)))
}

// Recycle hands back the data a completed read returned (Complete), for
// a later read to reuse: the caller must no longer read it, nor keep it.
func (r *Requester) Recycle(data []byte) {
	if cap(data) == 0 || len(r.spare) >= len(r.st) {
		return
	}
	if r.poison {
		data = data[:cap(data)]
		for i := range data {
			data[i] = 0xa5
		}
	}
	r.spare = append(r.spare, data[:0])
}

// SetPoison makes Recycle overwrite every buffer handed back: a reader
// that still held one then reads garbage, and a test of the device that
// hands them back fails. For tests; the outputs are the same without it.
func (r *Requester) SetPoison(on bool) { r.poison = on }

// Spare is the buffers handed back and not yet reused (for tests).
func (r *Requester) Spare() [][]byte { return r.spare }

func (r *Requester) release(tag uint16) {
	r.st[tag-r.base] = readState{}
	r.free = append(r.free, tag)
}
