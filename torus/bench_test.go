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

// BenchmarkRouterAlltoall is the routers' speed on an alltoall like
// Figure 6's reduced one: on the 4×4×4 mesh every node sends 6 full
// packets (240 B of payload) to every other node, the destinations in
// rotated order (node i to i+1, i+2, …) so that the load spreads, as fast
// as its injection FIFOs take them: 24,192 packets, adaptive or
// deterministic. It reports the router evaluations (ticks), which an
// exact speed-up of the router leaves unchanged, and a checksum of the
// deliveries (their times, nodes, FIFOs and hops), which must not move.
func BenchmarkRouterAlltoall(b *testing.B) {
	for _, dynamic := range []bool{true, false} {
		name := map[bool]string{true: "adaptive", false: "deterministic"}[dynamic]
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				spec := DefaultSpec(4, 4, 4)
				spec.Mesh = true
				r := newRig(b, spec, 1, 1)
				total := r.rotatedAlltoall(6, dynamic)
				end := r.run(sim.S)
				got, sum := 0, uint64(0)
				for j, g := range r.gen {
					got += len(g.got)
					for _, a := range g.got {
						sum = sum*1000003 + uint64(a.at) ^ uint64(j)<<48 ^ uint64(a.fifo)<<40 ^ uint64(a.p.Hops)<<32
					}
				}
				if got != total {
					b.Fatalf("%d of %d delivered", got, total)
				}
				b.ReportMetric(float64(end)/1e6, "sim-µs")
				b.ReportMetric(float64(r.w.UnitTicks()), "ticks")
				b.ReportMetric(float64(sum%1e9), "checksum")
			}
		})
	}
}

// rotatedAlltoall queues, on every node, count full packets to every
// other node: to i+1, i+2, … in turn, count to each, adaptive or
// deterministic, the injection FIFO chosen by destination.
func (r *rig) rotatedAlltoall(count int, dynamic bool) int {
	nodes := len(r.net.Nodes)
	total := 0
	for i, g := range r.gen {
		for k := 1; k < nodes; k++ {
			j := (i + k) % nodes
			for c := 0; c < count; c++ {
				p := tagged(i, len(g.queue), r.net.CoordOf(j), MaxPayload)
				p.Dynamic = dynamic
				g.queue = append(g.queue, p)
				total++
			}
		}
		inj := r.net.Spec.InjFIFOs
		g.fifo = func(p *Packet) int { return r.net.IndexOf(p.Dst) % inj }
	}
	return total
}
