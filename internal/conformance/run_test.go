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

// API-level: puts, gets and active flushes of one process agree with the
// golden model.
func TestAPISeedsAgree(t *testing.T) {
	records, gets, failed, flushes := 0, 0, 0, 0
	for seed := uint64(1); seed <= 60; seed++ {
		s := verify.GenerateAPI(seed)
		obs, err := RunAPI(s)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		p := verify.PredictAPI(s)
		if mm := verify.CompareAPI(s, p, obs); mm != nil {
			t.Fatalf("seed %d: %v", seed, mm)
		}
		for _, l := range obs.Logs {
			records += len(l)
		}
		gets, failed, flushes = gets+len(obs.Gets), failed+len(obs.Failed), flushes+len(obs.Flushes)
		// A corrupted observation is caught.
		for i, g := range obs.Gets {
			if len(g) > 0 {
				g[0] ^= 1
				if verify.CompareAPI(s, p, obs) == nil {
					t.Fatalf("seed %d: a corrupted get (op %d) was not reported", seed, i)
				}
				break
			}
		}
	}
	if records == 0 || gets == 0 || failed == 0 || flushes == 0 {
		t.Fatalf("the stimuli exercised %d records, %d gets, %d refused gets, %d flushes", records, gets, failed, flushes)
	}
	t.Logf("%d records, %d gets, %d refused gets, %d active flushes agree", records, gets, failed, flushes)
}
