package nic

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aaemu/aaemu/pcie"
)

// readPart issues exactly the pieces the former segmentation of the whole
// rest of the buffer did, cut to the free tags: the same MRd TLPs, so the
// same run, only without the quadratic work.
func TestReadPartMatchesWholeSegmentation(t *testing.T) {
	for _, mrrs := range []int{128, 512, 4096} {
		s := pcie.Sizes{MPS: 256, MRRS: mrrs, RCB: 64}
		for _, addr := range []uint64{0, 4, 100, 4096 - 8, 1 << 21} {
			for _, size := range []int{1, 511, 512, 513, 4097, 256 << 10} {
				for _, from := range []int{0, 1, 300, size / 2, size - 1} {
					if from < 0 || from >= size {
						continue
					}
					for _, free := range []int{0, 1, 2, 7, 256, 1024} {
						t.Run(fmt.Sprintf("mrrs=%d,addr=%d,size=%d,from=%d,free=%d", mrrs, addr, size, from, free), func(t *testing.T) {
							all := s.ReadChunks(addr+uint64(from), size-from)
							want := all[:min(len(all), free)]
							if got := readPart(s, addr, from, size, free, nil); !slices.Equal(got, want) {
								t.Fatalf("got %v, want %v", got, want)
							}
						})
					}
				}
			}
		}
	}
}
