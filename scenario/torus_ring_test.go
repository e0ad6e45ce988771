package scenario

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// TestTorusRingNoDeadlock is the point of Figure 7c's IOTLB grid that
// never finished: 16 nodes (a 4×2×2 torus) of 32 processes, AA-Poll, a
// 128-entry 4-way IOTLB with random eviction. Its deterministic packets
// of 3 and 4 chunks filled the escape buffers of an x ring to 30 of 32
// chunks each, and with the bubble rule counted in chunks no head could
// move (docs/bgl.md, the bubble rule). It must finish well inside 2 ms.
// The torus is pinned as it was then: every tie + and Blue Gene/L's 1 KB
// escape buffer. The preset's split ties and 2 KB buffer happen to avoid
// this deadlock with either rule, so with them the test would no longer
// guard the slot rule.
func TestTorusRingNoDeadlock(t *testing.T) {
	if testing.Short() {
		t.Skip("16 nodes × 32 processes: about 2.5 s of CPU")
	}
	const src = `seed: 1
machine:
  nodes: 16
  cores: 32
  transport: srd
  cpu: {mhz: 2300, interrupt_ns: 3000, scratchpad_ns: 15, polling_hyperthreads: core}
  iommu: {mem_access_ns: 70, process_ns: 5, flush_buffer_entries: 32, log_cam_entries: 32, iotlb_entries: 128, iotlb_ways: 4, iotlb_eviction: random, iotlb_by_kind: true, slots: 64, walkers: 16}
  pcie: {gen: 3, width: 16, latency_ns: 100}
  wire: {rate_mbps: 80000, latency_ns: 50}
  nic: {pmtu: 4096, retransmit_us: 8389, process_ns: 8}
  network:
    topology: torus
    torus: {clock_mhz: 1000, bytes_per_cycle: 4, wire_cycles: 40, router_cycles: 60, escape_chunks: 32, ties: plus}
workload:
  dht: {inserts: 25, cells: 16384, procs_per_node: 32, aa_logs: process, collisions: [0.05], page_zipf: 0, schemes: [AA-Poll]}
`
	s, err := ParseScenario("s.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	e := sim.NewEngine(s.Seed)
	c, finish, err := s.Prepare(e, s.Experiments()[0])
	if err != nil {
		t.Fatal(err)
	}
	end := c.Run(2*sim.MS, c.AppsDone)
	if _, err := finish(end); err != nil {
		t.Fatalf("at %v: %v", end, err)
	}
	if end > sim.MS {
		t.Fatalf("finished at %v, a normal run ends by 0.3 ms", end)
	}
}
