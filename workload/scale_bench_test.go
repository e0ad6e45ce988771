package workload

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// BenchmarkDHTScale: 32 inserting processes per node on N nodes, every node
// owning a shard, AA-SP, for 1 ms of simulated time. It reports the wall
// time per simulated millisecond (ns/op), the live heap after the run and
// the inserts issued, so that growth from 2 to 64 nodes reads off one table:
//
//	go test -run '^$' -bench DHTScale -benchtime 1x ./workload/
func BenchmarkDHTScale(b *testing.B) {
	for _, nodes := range []int{2, 4, 8, 16, 32, 64} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			var ops int
			var heap uint64
			for i := 0; i < b.N; i++ {
				spec := machine.DefaultSpec()
				spec.Nodes, spec.Cores = nodes, 32
				c, err := aa.New(sim.NewEngine(1), spec)
				if err != nil {
					b.Fatal(err)
				}
				// Enough keys that no process finishes within the millisecond.
				d, err := SetupDHT(c, DHTConfig{Scheme: AASP, Inserts: 400, Cells: 1 << 12, Collisions: 0.05, Procs: 32, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				c.Run(sim.MS, func() bool { return false })
				ops = d.ops
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				heap = ms.HeapAlloc
			}
			b.ReportMetric(float64(ops), "puts/sim-ms")
			b.ReportMetric(float64(heap)/(1<<20), "heap-MB")
		})
	}
}
