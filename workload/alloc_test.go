package workload

import (
	"runtime"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// allocated is the bytes f allocates on the Go heap (the simulated
// memory's pages included).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A workload allocates memory as it uses it, not all up front: a DHT of
// 16M cells per shard with a few keys allocates for the keys (its table
// is only as large as the pages the keys touch), and a stream keeps no
// copy of the data it puts in the source's memory.
func TestSetupAllocatesAsUsed(t *testing.T) {
	for _, sc := range []Scheme{AASP, RMA} {
		c := newCluster(t, nil)
		var err error
		n := allocated(func() {
			_, err = SetupDHT(c, DHTConfig{Scheme: sc, Inserts: 1000, Cells: 1 << 24, Collisions: 0.05, Seed: 1})
		})
		if err != nil {
			t.Fatal(err)
		}
		// The cells' key counts alone were 16M × 9 bytes.
		if n > 48<<20 {
			t.Errorf("%s: setting up 1000 keys in 16M cells allocated %d MiB", sc, n>>20)
		}
	}
	const size = 16 << 20
	c := newCluster(t, func(sp *machine.Spec) { sp.Wire.RateMbps = 100_000 })
	var s *stream
	var err error
	n := allocated(func() {
		s, err = SetupStream(c, StreamConfig{Op: StreamWrite, MsgBytes: 1 << 16, Messages: size >> 16, Outstanding: 16, Seed: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n > size+size/4 {
		t.Errorf("a %d MiB stream's set-up allocated %d MiB", size>>20, n>>20)
	}
	c.Run(10*sim.S, c.AppsDone)
	if r := s.Result(); !r.Verified {
		t.Fatalf("the stream: %s", r.Problem)
	}
}
