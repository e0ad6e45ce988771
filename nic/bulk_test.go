package nic

import (
	"testing"

	"github.com/aaemu/aaemu/pcie"
)

// The bulk flag is bit 1 of a work request's flags, beside signaled.
func TestWQEBulkFlag(t *testing.T) {
	for _, w := range []WQE{
		{Opcode: OpWrite, Length: 4096, Bulk: true},
		{Opcode: OpRead, Length: 1, Bulk: true, Signaled: true},
		{Opcode: OpWrite, Length: 8, Signaled: true},
	} {
		var b [WQESize]byte
		w.Put(b[:])
		got, err := ParseWQE(b[:])
		if err != nil || got.Bulk != w.Bulk || got.Signaled != w.Signaled {
			t.Errorf("%+v: parsed %+v, %v", w, got, err)
		}
		if want := byte(0); w.Bulk && b[1]&2 == want || !w.Bulk && b[1]&2 != want {
			t.Errorf("%+v: flags byte %#x", w, b[1])
		}
	}
}

// segments counts the pieces pcie.Sizes segments a transfer into.
func TestBulkTLPsMatchSegmentation(t *testing.T) {
	s := pcie.Sizes{MPS: 256, MRRS: 512, RCB: 64}
	for _, c := range []struct {
		addr uint64
		n    int
	}{{0, 4096}, {0x1004, 4096}, {0xfff, 2}, {0x10_0000_0000, 262144}, {0x2000, 1}, {0x2000, 0}} {
		if got, want := segments(c.addr, c.n, s.MPS), uint64(len(s.WriteChunks(c.addr, c.n))); got != want {
			t.Errorf("writes of %d at %#x: %d, want %d", c.n, c.addr, got, want)
		}
		if got, want := segments(c.addr, c.n, s.MRRS), uint64(len(s.ReadChunks(c.addr, c.n))); got != want {
			t.Errorf("reads of %d at %#x: %d, want %d", c.n, c.addr, got, want)
		}
	}
}
