package conformance

import (
	"testing"

	"github.com/aaemu/aaemu/verify"
)

// Many seeds agree with the golden model.
func TestSeedsAgree(t *testing.T) {
	for seed := uint64(1); seed <= 2000; seed++ {
		s := verify.Generate(seed)
		mm, _, err := Check(s, Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if mm != nil {
			t.Fatalf("seed %d: %v", seed, mm)
		}
	}
}
