package torus

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// BenchmarkAllToAll8x8x8 is the speed of a 512-node torus: every node
// sends 40 adaptive packets of random size to random nodes (20,480 in
// all), on one goroutine and on two.
func BenchmarkAllToAll8x8x8(b *testing.B) {
	for _, parts := range []int{1, 2} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := newRig(b, DefaultSpec(8, 8, 8), 1, parts)
				total := r.allToAll(40, true)
				end := r.run(sim.S)
				got := 0
				for _, g := range r.gen {
					got += len(g.got)
				}
				if got != total {
					b.Fatalf("%d of %d delivered", got, total)
				}
				b.ReportMetric(float64(end)/1e6, "sim-µs")
				b.ReportMetric(float64(r.w.UnitTicks()), "ticks")
			}
		})
	}
}
