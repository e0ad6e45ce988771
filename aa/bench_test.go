package aa

import (
	"io"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/waveforms"
)

// benchPuts: active puts from node 0 to node 1 (handler on the polling
// hyperthread) — simulated puts per wall-clock second of the two-node system.
func benchPuts(b *testing.B, vcd bool) {
	const puts = 2000
	b.ReportAllocs()
	var simTime sim.Tick
	for i := 0; i < b.N; i++ {
		c, err := New(sim.NewEngine(1), machine.DefaultSpec())
		if err != nil {
			b.Fatal(err)
		}
		src, dst := c.Nodes[0], c.Nodes[1]
		buf := src.Alloc(4096)
		src.Register(buf, 4096, iommu.Perm{Bits: pte.R | pte.W})
		page := dst.Alloc(64 << 10)
		handled := 0
		dst.CreateLog(1, 64<<10, iommu.SP, func(x *Ctx, r Record) { handled++ })
		dst.Register(page, 64<<10, iommu.Perm{Bits: pte.WLD | pte.E, IUID: 1})
		var w *waveforms.Writer
		if vcd {
			w = waveforms.NewWriter(io.Discard, waveforms.Options{})
			c.Eng.AttachTracer(w)
		}
		src.Spawn(0, "app", func(x *Ctx) {
			for k := 0; k < puts; k++ {
				x.Put(1, buf, page+uint64(k%4096)*16, 16)
			}
			x.Flush(1)
		})
		simTime = c.Run(sim.S, func() bool { return c.AppsDone() && handled == puts })
		if handled != puts {
			b.Fatalf("%d of %d puts handled", handled, puts)
		}
		if w != nil {
			w.Close(uint64(simTime))
		}
	}
	b.ReportMetric(float64(b.N*puts)/b.Elapsed().Seconds(), "puts/s")
	b.ReportMetric(float64(simTime)/1e6/puts, "sim-us/put")
}

// BenchmarkPuts: the two-node system without tracing.
func BenchmarkPuts(b *testing.B) { benchPuts(b, false) }

// BenchmarkPutsVCD: the same with every signal dumped to a VCD.
func BenchmarkPutsVCD(b *testing.B) { benchPuts(b, true) }
