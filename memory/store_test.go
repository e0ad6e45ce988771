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

// A flat store behaves as a sparse one, inside and across its flat region.
func TestFlatStore(t *testing.T) {
	f, s := NewFlatStore(3*4096), NewStore()
	data := make([]byte, 9000)
	for i := range data {
		data[i] = byte(i*5 + 3)
	}
	for _, st := range []*Store{f, s} {
		st.Write(0x1ff0, data) // crosses out of the flat region
		st.Store64(0x100, 0xdeadbeef)
	}
	a, b := make([]byte, 9000), make([]byte, 9000)
	f.Read(0x1ff0, a)
	s.Read(0x1ff0, b)
	if !bytes.Equal(a, data) || !bytes.Equal(b, data) || f.Load64(0x100) != 0xdeadbeef {
		t.Fatal("flat store differs")
	}
	if f.FNV1a64(0, 0x4000) != s.FNV1a64(0, 0x4000) {
		t.Fatal("FNV over the same bytes differs")
	}
}
