// Package memory is a node's main memory: a sparse byte-addressed store and
// a memory controller block that completes DMA requests with a latency.
package memory

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
)

const pageBits = 12

// Store is a sparse, byte-addressed memory. Untouched bytes read as zero.
// Pages of the low 4 GB are found through a directly indexed slice (grown to
// the highest page touched), others through a map.
type Store struct {
	flat []byte // [0, len(flat)) directly, when the store was made with one
	// flatWords is the first address whose 64-bit word does not lie wholly
	// in flat: one comparison on the hot path.
	flatWords uint64
	// dense holds the pages of the low 4 GB in two levels, a chunk of
	// chunkPages page pointers per 2 MB region touched: a node whose heap
	// starts at 256 MB holds a few chunks, not a pointer for every page
	// below its highest (which, over a thousand nodes, is gigabytes).
	dense []*[chunkPages]*[1 << pageBits]byte
	pages map[uint64]*[1 << pageBits]byte
	last  uint64 // page number of the last access (a one-entry lookup cache)
	lastP *[1 << pageBits]byte
	// watches are the Watches by 64-byte line.
	watches map[uint64][]*Watch
}

// A Watch tells a reader that polls a word whether it may have changed
// since the reader last loaded it: every write that touches the word's
// 64-byte line sets Written. A polling loop loads the word again only then.
type Watch struct {
	s       *Store
	line    uint64
	on      bool
	Written bool
	// OnWrite, when set, runs at every write that sets Written: a core
	// sleeping through its polling checks is woken by it.
	OnWrite func()
}

// Watch returns a watch on the line of addr, Written until cleared.
func (s *Store) Watch(addr uint64) *Watch {
	w := &Watch{s: s}
	w.Move(addr)
	return w
}

// Move makes w watch the line of addr instead, Written until cleared.
func (w *Watch) Move(addr uint64) {
	w.Written = true
	if w.on && w.line == addr>>6 {
		return
	}
	w.Stop()
	if w.s.watches == nil {
		w.s.watches = map[uint64][]*Watch{}
	}
	w.line, w.on = addr>>6, true
	w.s.watches[w.line] = append(w.s.watches[w.line], w)
}

// Stop ends the watch.
func (w *Watch) Stop() {
	if !w.on {
		return
	}
	ws := w.s.watches[w.line]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(w.s.watches, w.line)
	} else {
		w.s.watches[w.line] = ws
	}
	w.on = false
}

// written tells the watches of the lines of [addr, addr+n) that they were
// written.
func (s *Store) written(addr uint64, n int) {
	if n == 0 {
		return
	}
	for l := addr >> 6; l <= (addr+uint64(n)-1)>>6; l++ {
		for _, w := range s.watches[l] {
			w.Written = true
			if w.OnWrite != nil {
				w.OnWrite()
			}
		}
	}
}

const (
	denseLimit = 1 << 20 // pages: the low 4 GB
	chunkBits  = 9
	chunkPages = 1 << chunkBits
)

// NewStore returns an empty memory.
func NewStore() *Store { return &Store{pages: map[uint64]*[1 << pageBits]byte{}, last: ^uint64(0)} }

// NewFlatStore returns a memory whose first size bytes are one contiguous
// array (no page lookup on the hot path), the rest sparse.
func NewFlatStore(size uint64) *Store {
	s := NewStore()
	s.flat = flatBytes((size + 1<<pageBits - 1) &^ (1<<pageBits - 1))
	if len(s.flat) >= 8 {
		s.flatWords = uint64(len(s.flat)) - 7
	}
	return s
}

func (s *Store) page(pn uint64, create bool) *[1 << pageBits]byte {
	if pn == s.last {
		return s.lastP
	}
	if pn < uint64(len(s.flat))>>pageBits {
		return (*[1 << pageBits]byte)(s.flat[pn<<pageBits:])
	}
	var p *[1 << pageBits]byte
	if pn < denseLimit {
		c := pn >> chunkBits
		var chunk *[chunkPages]*[1 << pageBits]byte
		if c < uint64(len(s.dense)) {
			chunk = s.dense[c]
		}
		if chunk != nil {
			p = chunk[pn&(chunkPages-1)]
		}
		if p == nil {
			if !create {
				return nil
			}
			if c >= uint64(len(s.dense)) {
				s.dense = append(s.dense, make([]*[chunkPages]*[1 << pageBits]byte, int(c)+1-len(s.dense))...)
			}
			if chunk == nil {
				chunk = new([chunkPages]*[1 << pageBits]byte)
				s.dense[c] = chunk
			}
			p = new([1 << pageBits]byte)
			chunk[pn&(chunkPages-1)] = p
		}
	} else {
		p = s.pages[pn]
		if p == nil {
			if !create {
				return nil
			}
			p = new([1 << pageBits]byte)
			s.pages[pn] = p
		}
	}
	s.last, s.lastP = pn, p
	return p
}

// Read copies len(b) bytes at addr into b.
func (s *Store) Read(addr uint64, b []byte) {
	for len(b) > 0 {
		off := addr & (1<<pageBits - 1)
		n := min(uint64(len(b)), 1<<pageBits-off)
		if p := s.page(addr>>pageBits, false); p != nil {
			copy(b[:n], p[off:off+n])
		} else {
			clear(b[:n])
		}
		b, addr = b[n:], addr+n
	}
}

// Write copies data to addr.
func (s *Store) Write(addr uint64, data []byte) {
	if len(s.watches) > 0 {
		s.written(addr, len(data))
	}
	if f := s.flat; addr < uint64(len(f)) && uint64(len(f))-addr >= uint64(len(data)) {
		copy(f[addr:], data)
		return
	}
	s.writePaged(addr, data)
}

func (s *Store) writePaged(addr uint64, data []byte) {
	if off := addr & (1<<pageBits - 1); off+uint64(len(data)) <= 1<<pageBits {
		copy(s.page(addr>>pageBits, true)[off:], data) // within one page: the common case
		return
	}
	for len(data) > 0 {
		off := addr & (1<<pageBits - 1)
		n := min(uint64(len(data)), 1<<pageBits-off)
		copy(s.page(addr>>pageBits, true)[off:off+n], data[:n])
		data, addr = data[n:], addr+n
	}
}

// Load64 reads a little-endian 64-bit word. The flat case is small enough
// to be inlined into a page walk.
func (s *Store) Load64(addr uint64) uint64 {
	if addr < s.flatWords {
		return binary.LittleEndian.Uint64(s.flat[addr:])
	}
	return s.load64Paged(addr)
}

func (s *Store) load64Paged(addr uint64) uint64 {
	if off := addr & (1<<pageBits - 1); off <= 1<<pageBits-8 {
		p := s.page(addr>>pageBits, false)
		if p == nil {
			return 0
		}
		return binary.LittleEndian.Uint64(p[off:])
	}
	var b [8]byte
	s.Read(addr, b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// Store64 writes a little-endian 64-bit word.
func (s *Store) Store64(addr, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	s.Write(addr, b[:])
}

// FNV1a64 is FNV-1a 64 over size bytes from addr, untouched bytes counting
// as zero: the anchor workload's checksum of its memory.
func (s *Store) FNV1a64(addr, size uint64) uint64 {
	h := uint64(14695981039346656037)
	var zero [1 << pageBits]byte
	for off := uint64(0); off < size; {
		a := addr + off
		po := a & (1<<pageBits - 1)
		n := min(size-off, 1<<pageBits-po)
		b := zero[:n]
		if p := s.page(a>>pageBits, false); p != nil {
			b = p[po : po+n]
		}
		for _, c := range b {
			h = (h ^ uint64(c)) * 1099511628211
		}
		off += n
	}
	return h
}

// Checksum is FNV-1a 64 over every page that was ever written, in address
// order, with its page number: equal contents give equal sums.
func (s *Store) Checksum() uint64 {
	keys := make([]uint64, 0, len(s.pages)+len(s.dense))
	for k := uint64(0); k < uint64(len(s.flat))>>pageBits; k++ {
		keys = append(keys, k) // the flat region always exists
	}
	for c, chunk := range s.dense {
		if chunk == nil {
			continue
		}
		for i, p := range chunk {
			if p != nil {
				keys = append(keys, uint64(c)<<chunkBits|uint64(i))
			}
		}
	}
	for k := range s.pages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := fnv.New64a()
	var pn [8]byte
	for _, k := range keys {
		binary.LittleEndian.PutUint64(pn[:], k)
		h.Write(pn[:])
		h.Write(s.page(k, false)[:])
	}
	return h.Sum64()
}
