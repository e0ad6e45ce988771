package anchor

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// The transaction-level form agrees exactly with the peers: their README
// gives hits, misses, simulated time and checksum for N = 10 M; a smaller N
// is checked against the same formulas.
func TestTransactionLevelMatchesThePeers(t *testing.T) {
	cases := []struct {
		n, d, hits, misses, simNS uint64
		sum                       uint64
	}{
		{100_000, 1, 0, 100_000, 100_000 * 350, 0},
		{100_000, 64, 100_000 - 1563, 1563, (100_000-1563)*75 + 1563*350, 0},
	}
	for _, c := range cases {
		r, err := TransactionLevel(c.n, c.d)
		if err != nil {
			t.Fatal(err)
		}
		if r.Hits != c.hits || r.Misses != c.misses || r.SimNS != c.simNS {
			t.Errorf("D=%d: hits %d misses %d sim %d ns; want %d %d %d", c.d, r.Hits, r.Misses, r.SimNS, c.hits, c.misses, c.simNS)
		}
	}
}

// The cycle-level form agrees on hits, misses and the memory checksum.
func TestCycleLevelAgrees(t *testing.T) {
	for _, d := range []uint64{1, 64} {
		tl, err := TransactionLevel(20_000, d)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := CycleLevel(20_000, d)
		if err != nil {
			t.Fatal(err)
		}
		if cl.Hits != tl.Hits || cl.Misses != tl.Misses || cl.Checksum != tl.Checksum {
			t.Fatalf("D=%d: cycle level %d/%d %016x, transaction level %d/%d %016x", d, cl.Hits, cl.Misses, cl.Checksum, tl.Hits, tl.Misses, tl.Checksum)
		}
		t.Logf("D=%d: transaction level %d ns simulated, cycle level %d ns", d, tl.SimNS, cl.SimNS)
	}
}

// The transaction-level path allocates nothing per transaction.
func TestTransactionLevelDoesNotAllocate(t *testing.T) {
	e := sim.NewEngine(1)
	m, mem, err := setup(e.NewClock("clk", 1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	var buf [xferBytes]byte
	i := uint64(0)
	allocs := testing.AllocsPerRun(10_000, func() {
		pa, _, _, _ := m.TranslateTL(dev, iova(i, 1), true)
		mem.Write(pa, buf[:])
		i++
	})
	if allocs != 0 {
		t.Fatalf("%.2f allocations per transaction", allocs)
	}
}

// BenchmarkTransactionLevel is the anchor's loop on the IOMMU translation
// path; one op is one 64 B write (compare ns/op with the peers' 1/txn_per_s).
func BenchmarkTransactionLevel(b *testing.B) {
	for _, d := range []uint64{1, 64} {
		b.Run(fmt.Sprintf("D=%d", d), func(b *testing.B) {
			e := sim.NewEngine(1)
			m, mem, err := setup(e.NewClock("clk", 1000, 0))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := writes(m, mem, uint64(b.N), d); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkCycleLevel runs the cycle-level form; one op is one write
// through the DMA engine, the link, the IOMMU and the memory controller.
func BenchmarkCycleLevel(b *testing.B) {
	for _, d := range []uint64{1, 64} {
		b.Run(fmt.Sprintf("D=%d", d), func(b *testing.B) {
			b.ReportAllocs()
			r, err := CycleLevel(uint64(b.N), d)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(r.Evaluations)/float64(b.N), "evals/op")
		})
	}
}

// The cycle-level blocks allocate nothing per transaction in steady state:
// twice the writes cost no more allocations than setup noise.
func TestCycleLevelAllocationsDoNotGrowWithN(t *testing.T) {
	mallocs := func(n uint64) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		if _, err := CycleLevel(n, 64); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.Mallocs - a.Mallocs
	}
	mallocs(1000) // warm up the runtime
	small, large := mallocs(20_000), mallocs(60_000)
	if extra := int64(large) - int64(small); extra > 400 {
		t.Fatalf("40,000 more writes cost %d more allocations (%d vs %d)", extra, large, small)
	}
}
