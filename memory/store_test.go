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
