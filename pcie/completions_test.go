package pcie

import (
	"testing"

	"github.com/aaemu/aaemu/pcie/tlp"
)

// CompletionPayloads gives the payloads SplitCompletions builds.
func TestCompletionPayloadsMatchSplit(t *testing.T) {
	for _, c := range []struct {
		s    Sizes
		addr uint64
		n    int
	}{
		{Sizes{MPS: 256, MRRS: 512, RCB: 64}, 0x1000, 512},
		{Sizes{MPS: 256, MRRS: 512, RCB: 64}, 0x1004, 500},
		{Sizes{MPS: 128, MRRS: 512, RCB: 128}, 0x10_0000_0040, 448},
		{Sizes{MPS: 512, MRRS: 4096, RCB: 64}, 0x2fff, 1},
		{Sizes{MPS: 256, MRRS: 512, RCB: 64}, 0x3000, 0},
		{Sizes{MPS: 4096, MRRS: 4096, RCB: 64}, 0x5000, 4096},
	} {
		req := tlp.NewMemRead(1, 0, c.addr, c.n)
		var want []int
		for _, cp := range c.s.SplitCompletions(&req, 0, func(_ uint64, n int) []byte { return make([]byte, n) }) {
			want = append(want, cp.PayloadBytes())
		}
		var got []int
		c.s.CompletionPayloads(&req, func(p int) { got = append(got, p) })
		if len(got) != len(want) {
			t.Fatalf("%+v: %v, want %v", c, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%+v: %v, want %v", c, got, want)
			}
		}
	}
}
