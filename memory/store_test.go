package memory

import (
	"bytes"
	"testing"
)

func TestStoreAcrossPages(t *testing.T) {
	s := NewStore()
	data := make([]byte, 9000)
	for i := range data {
		data[i] = byte(i * 13)
	}
	s.Write(0x1ff0, data)
	got := make([]byte, 9000)
	s.Read(0x1ff0, got)
	if !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	z := make([]byte, 16)
	s.Read(0x100000, z)
	if !bytes.Equal(z, make([]byte, 16)) {
		t.Fatal("untouched memory is not zero")
	}
	s.Store64(0x5000, 0x1122334455667788)
	if s.Load64(0x5000) != 0x1122334455667788 {
		t.Fatal("64-bit word")
	}
	a, b := NewStore(), NewStore()
	a.Write(0x3000, []byte{1})
	b.Write(0x3000, []byte{1})
	if a.Checksum() != b.Checksum() {
		t.Fatal("equal memories, different checksums")
	}
	b.Write(0x3001, []byte{1})
	if a.Checksum() == b.Checksum() {
		t.Fatal("different memories, equal checksums")
	}
}

// A flat store behaves as a sparse one, inside and across its flat region,
// both when it is small (the Go heap) and when it is large enough to be
// mapped with huge pages; words that straddle the end of the flat region
// read and write through both parts.
func TestFlatStore(t *testing.T) {
	for _, size := range []uint64{3 * 4096, 3<<20 + 4096} {
		f, s := NewFlatStore(size), NewStore()
		data := make([]byte, 9000)
		for i := range data {
			data[i] = byte(i*5 + 3)
		}
		edge := size - 4 // a word across the end of the flat region
		for _, st := range []*Store{f, s} {
			st.Write(size-0x1010, data) // crosses out of the flat region
			st.Store64(0x100, 0xdeadbeef)
			st.Store64(edge+64, 0x0102030405060708)
			st.Store64(edge, 0x1122334455667788)
		}
		a, b := make([]byte, 9000), make([]byte, 9000)
		f.Read(size-0x1010, a)
		s.Read(size-0x1010, b)
		if !bytes.Equal(a, b) || f.Load64(0x100) != 0xdeadbeef {
			t.Fatalf("size %#x: flat store differs", size)
		}
		if got := f.Load64(edge); got != 0x1122334455667788 {
			t.Fatalf("size %#x: word across the flat end reads %#x", size, got)
		}
		if f.FNV1a64(0, size+0x4000) != s.FNV1a64(0, size+0x4000) {
			t.Fatalf("size %#x: FNV over the same bytes differs", size)
		}
	}
}

// A watch is told of every write that touches its word's 64-byte line,
// in a paged or a flat store, and of no other.
func TestWatchSeesWritesToItsLine(t *testing.T) {
	cases := []struct {
		name    string
		flat    bool
		watch   uint64
		addr    uint64 // the write
		n       int
		written bool
	}{
		{"the word", false, 0x1008, 0x1008, 8, true},
		{"a neighbour in the line", false, 0x1008, 0x1030, 8, true},
		{"the line before", false, 0x1008, 0xfc0, 64, false},
		{"ending on the line's first byte", false, 0x1008, 0xfc1, 64, true},
		{"the next line", false, 0x1008, 0x1040, 8, false},
		{"a long write across it", false, 0x1008, 0x0, 0x3000, true},
		{"an empty write", false, 0x1008, 0x1008, 0, false},
		{"another page", false, 0x1008, 0x2008, 8, false},
		{"flat: the word", true, 0x1008, 0x1008, 8, true},
		{"flat: elsewhere", true, 0x1008, 0x1808, 8, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore()
			if tc.flat {
				s = NewFlatStore(1 << 20)
			}
			w := s.Watch(tc.watch)
			if !w.Written {
				t.Fatal("a new watch is not Written: its first look would be skipped")
			}
			w.Written = false
			s.Write(tc.addr, make([]byte, tc.n))
			if w.Written != tc.written {
				t.Fatalf("Written = %v after a write of %d bytes at %#x, want %v", w.Written, tc.n, tc.addr, tc.written)
			}
		})
	}
}

// Moving a watch leaves its old line; stopping it leaves the store without
// watches (writes skip the lookup again); two watches on one line both see
// a write.
func TestWatchMoveAndStop(t *testing.T) {
	s := NewStore()
	a, b := s.Watch(0x1000), s.Watch(0x1010)
	a.Move(0x2000)
	a.Written, b.Written = false, false
	s.Store64(0x1000, 1)
	if a.Written || !b.Written {
		t.Fatalf("after a write to the old line: moved watch %v, other %v; want false, true", a.Written, b.Written)
	}
	s.Store64(0x2038, 1)
	if !a.Written {
		t.Fatal("the moved watch missed a write to its new line")
	}
	c := s.Watch(0x2000)
	a.Written, c.Written = false, false
	s.Store64(0x2000, 2)
	if !a.Written || !c.Written {
		t.Fatalf("two watches of a line: %v, %v", a.Written, c.Written)
	}
	a.Stop()
	b.Stop()
	c.Stop()
	a.Stop()
	if len(s.watches) != 0 {
		t.Fatalf("%d lines still watched after every watch stopped", len(s.watches))
	}
}
