package conformance

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verify"
)

// FuzzReplayAPI: no API-level replay file makes `aaemu verify --replay`
// panic: a file is refused with an error that names the file, or it is a
// program the two-node machine runs (here for a short simulated time)
// and the golden model predicts.
func FuzzReplayAPI(f *testing.F) {
	for seed := uint64(1); seed <= 3; seed++ {
		b, _ := json.MarshalIndent(verify.GenerateAPI(seed), "", " ")
		f.Add(b)
	}
	f.Add([]byte(`{"level": "api", "pmtu": 1024}`))
	f.Add([]byte(`{"level": "api", "ops": [{"kind": "put", "len": -1}]}`))
	f.Add([]byte(`{"level": "iommu"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := verify.ParseAPI("r.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "r.json") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		if _, _, err := CheckAPIWith(s, nil, Options{Limit: 200 * sim.US}); err != nil && strings.Contains(err.Error(), "panic") {
			t.Fatal(err)
		}
	})
}
