package tlp

import (
	"bytes"
	"testing"
)

// An in-place MWr encodes to the same bytes as a copying one, shares the
// caller's payload, and refuses what it cannot carry without a copy.
func TestNewMemWriteInPlace(t *testing.T) {
	payload := bytes.Repeat([]byte{0xa5, 1, 2, 3}, 16)
	for _, c := range []struct {
		addr uint64
		n    int
		ok   bool
	}{
		{0x1000, 64, true},
		{0x1_0000_0040, 64, true}, // 4DW header
		{0xffc, 4, true},
		{0x1002, 64, false}, // not DW-aligned
		{0x1000, 62, false}, // not whole DWs
		{0x1000, 0, false},
		{0x1000, 4100, false},
	} {
		data := bytes.Repeat(payload, 65)[:c.n]
		got, err := NewMemWriteInPlace(NewID(1, 2, 3), 7, c.addr, data)
		if (err == nil) != c.ok {
			t.Fatalf("%#x+%d: error %v, want ok=%v", c.addr, c.n, err, c.ok)
		}
		if !c.ok {
			continue
		}
		want := NewMemWrite(NewID(1, 2, 3), 7, c.addr, data)
		a, errA := got.Encode()
		b, errB := want.Encode()
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%#x+%d: in place %x (%v), copying %x (%v)", c.addr, c.n, a, errA, b, errB)
		}
		if &got.Data[0] != &data[0] {
			t.Fatalf("%#x+%d: the payload was copied", c.addr, c.n)
		}
	}
}
