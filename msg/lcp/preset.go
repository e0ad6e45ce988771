package lcp

import (
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/sim"
)

// MultirailSpec is the machine of the paper's Figure 5 as far as the paper
// describes it (CEA Inti: two-socket AMD Milan nodes with 4 × 100 Gb/s BXI
// NICs), two nodes with nics NICs each. What the paper leaves out is
// assumed and said so:
//   - every NIC on 100 Gb/s wires (BXI's 12.5 GB/s; 500 ns of latency)
//     behind a PCIe Gen4 x16 link of its own (31.5 GB/s: it does not limit
//     a 100 Gb/s NIC); path MTU 4096 bytes, the largest RoCE has;
//   - memory at 204 GB/s (eight DDR4-3200 channels of a Milan socket), so
//     that four NICs' DMA (50 GB/s) is not held by one channel's 25 GB/s;
//   - the cores' memory accesses at 5 ns a line: IMB reuses its buffers,
//     so the eager copies hit the caches (the default, 70 ns, is a miss);
//   - every NIC's DMA through the node's one IOMMU, pipelined (64
//     translations in flight, 16 page walks at once, one TLP taken per
//     edge: gem5's SMMUv3 model's figures; docs/multirail.md), or off the
//     DMA path when bypass is true (BXI NICs translate in their own unit).
func MultirailSpec(nics int, bypass bool) machine.Spec {
	s := machine.DefaultSpec()
	s.NICs = nics
	s.Wire.RateMbps = 100_000
	s.Wire.LatencyPS = 500 * sim.NS
	s.PCIe = pcie.DefaultLinkSpec()
	s.PCIe.Gen, s.PCIe.Width = 4, 16
	s.NIC.PMTU = 4096
	s.Memory.BytesPerNS = 204
	s.CPU.MemAccessPS = 5 * sim.NS
	s.IOMMU.Bypass = bypass
	// The node's IOMMU pipelined as a modern one is: one translation taken
	// per edge, 64 in flight, 16 page walks at once (docs/multirail.md,
	// "The IOMMU on the DMA path", for the sources).
	s.IOMMU.Slots, s.IOMMU.Walkers = 64, 16
	return s
}
