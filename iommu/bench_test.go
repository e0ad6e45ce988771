package iommu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// BenchmarkTranslateHit: translations per second when the IOTLB hits (the
// transaction-level path, no kernel scheduling).
func BenchmarkTranslateHit(b *testing.B) {
	s := newSystem(b, DefaultSpec(), 1)
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.R | pte.W})
	id := s.devs[0].id
	var warm translation
	s.m.translate(&warm, id, testIOVA, true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var tr translation
		if s.m.translate(&tr, id, testIOVA+uint64(i&0xff)*8, true); !tr.tlbHit {
			b.Fatal("miss")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "translations/s")
}

// BenchmarkTranslateMiss: every translation walks 4 levels (a 1-entry IOTLB
// and two pages). Simulated cost of a miss: 4 × 70 ns of memory accesses.
func BenchmarkTranslateMiss(b *testing.B) {
	spec := DefaultSpec()
	spec.IOTLBSets, spec.IOTLBWays = 1, 1
	s := newSystem(b, spec, 1)
	s.drv.Map(1, testIOVA, testPA, 2*4096, 4096, Perm{Bits: pte.R | pte.W})
	id := s.devs[0].id
	b.ReportAllocs()
	b.ResetTimer()
	acc := 0
	for i := 0; i < b.N; i++ {
		var tr translation
		s.m.translate(&tr, id, testIOVA+uint64(i&1)*4096, true)
		acc += tr.accesses
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "translations/s")
	b.ReportMetric(float64(acc)/float64(b.N)*float64(spec.MemAccessPS)/1000, "sim-ns/miss")
}

// hitRate runs a page stream through an IOTLB configuration.
func hitRate(tb testing.TB, sets, ways int, ev sim.Eviction, pages []uint64) float64 {
	spec := DefaultSpec()
	spec.IOTLBSets, spec.IOTLBWays, spec.IOTLBEviction = sets, ways, ev
	s := newSystem(tb, spec, 1)
	s.drv.Map(1, testIOVA, testPA, 1024*4096, 4096, Perm{Bits: pte.R | pte.W})
	id := s.devs[0].id
	hits := 0
	for _, p := range pages {
		var tr translation
		if s.m.translate(&tr, id, testIOVA+p*4096, false); tr.tlbHit {
			hits++
		}
	}
	return float64(hits) / float64(len(pages))
}

type stream struct {
	name  string
	pages []uint64
}

func streams() []stream {
	var strided, random []uint64
	for i := 0; i < 20000; i++ {
		strided = append(strided, uint64(i*17)%96) // 96-page working set, stride 17
	}
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 20000; i++ {
		random = append(random, uint64(r.IntN(96)))
	}
	return []stream{{"strided", strided}, {"random", random}}
}

var tlbConfigs = []struct {
	name       string
	sets, ways int
}{{"direct", 64, 1}, {"2-way", 32, 2}, {"4-way", 16, 4}, {"full", 1, 64}}

// TestIOTLBHitRates prints the hit rate of a 64-entry IOTLB per organisation
// and eviction on a strided and a random stream over 96 pages (run with -v),
// and checks what must hold whatever the numbers: a fully associative LRU
// IOTLB never hits on a cyclic stream larger than itself, random eviction
// does, and every configuration hits on the random stream.
func TestIOTLBHitRates(t *testing.T) {
	for _, st := range streams() {
		for _, c := range tlbConfigs {
			line := fmt.Sprintf("%-8s %-7s", st.name, c.name)
			for _, ev := range []sim.Eviction{sim.LRU, sim.FIFO, sim.Random} {
				r := hitRate(t, c.sets, c.ways, ev, st.pages)
				line += fmt.Sprintf("  %v %5.1f%%", ev, 100*r)
				if st.name == "strided" && c.name == "full" && ev == sim.LRU && r != 0 {
					t.Errorf("full LRU on a cyclic 96-page stream hit %.1f%%, want 0", 100*r)
				}
				if st.name == "strided" && c.name == "full" && ev == sim.Random && r == 0 {
					t.Error("random eviction never hit on the cyclic stream")
				}
				if st.name == "random" && r < 0.3 {
					t.Errorf("%s %v: %.1f%% hits on a random stream over 96 pages with 64 entries", c.name, ev, 100*r)
				}
			}
			t.Log(line)
		}
	}
}

// BenchmarkIOMMUWrites drives MWr TLPs through the cycle-level block
// (IOTLB hits, no logging): TLPs per wall second.
func BenchmarkIOMMUWrites(b *testing.B) {
	s := newSystem(b, DefaultSpec(), 1)
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.R | pte.W})
	w := fillTLP(s)
	for i := 0; i < 1000; i++ {
		s.send(0, w)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.devs[0].i = 0
		s.devs[0].u.WakeAt(s.e.Now() + 1)
		s.run()
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "TLPs/s")
}

func fillTLP(s *system) tlp.TLP {
	return tlp.NewMemWrite(s.devs[0].id, 0, testIOVA, fill(64, 1))
}
