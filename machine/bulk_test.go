package machine

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/sim"
)

// multirail is the multirail paper's node (msg/lcp.MultirailSpec): 100 Gb/s
// wires, PCIe Gen4 x16, memory at 204 GB/s, the IOMMU bypassed.
func multirail(nics int) Spec {
	s := DefaultSpec()
	s.NICs = nics
	s.Wire.RateMbps, s.Wire.LatencyPS = 100_000, 500*sim.NS
	s.PCIe = pcie.DefaultLinkSpec()
	s.PCIe.Gen, s.PCIe.Width = 4, 16
	s.NIC.PMTU = 4096
	s.Memory.BytesPerNS = 204
	s.IOMMU.Bypass = true
	return s
}

// iommuOn puts the IOMMU on the DMA path, pipelined with slots and walkers
// (0: one TLP at a time).
func iommuOn(slots, walkers int) func(*Spec) {
	return func(s *Spec) { s.IOMMU.Bypass, s.IOMMU.Slots, s.IOMMU.Walkers = false, slots, walkers }
}

// The bulk path is given only where the host side keeps up with every NIC
// at its wire's rate both ways; through the IOMMU, on pages whose walks
// it keeps up with.
func TestBulkHostFits(t *testing.T) {
	both := func(a, b func(*Spec)) func(*Spec) { return func(s *Spec) { a(s); b(s) } }
	nics := func(n int) func(*Spec) { return func(s *Spec) { s.NICs = n } }
	for _, tc := range []struct {
		name    string
		edit    func(*Spec)
		want    string // "" fits
		minPage uint64 // with the IOMMU on the path
	}{
		{"multirail, 4 NICs", func(*Spec) {}, "", 0},
		{"multirail, 1 NIC", nics(1), "", 0},
		// 24 TLPs a packet per NIC, each held at most a walk of 285 ns
		// (4 KB pages) or 215 ns (2 MB), against 64 slots × 334 ns.
		{"IOMMU pipelined, 4 NICs", iommuOn(64, 16), "", 2 << 20},
		{"IOMMU pipelined, 3 NICs", both(iommuOn(64, 16), nics(3)), "", 4 << 10},
		{"IOMMU pipelined, 1 NIC", both(iommuOn(64, 16), nics(1)), "", 4 << 10},
		{"IOMMU with 16 slots, 4 NICs", iommuOn(16, 16), "need 41.6 of its 16 slots, even on 1 GB pages", 0},
		{"IOMMU with 1 walker, 4 NICs", iommuOn(64, 1), "1 walkers take 4 NICs' walks", 0},
		{"IOMMU one TLP at a time, 1 NIC", both(iommuOn(0, 0), nics(1)), "one TLP at a time, takes 1 NICs' TLPs of a packet 400000 ps even on 1 GB pages", 0},
		{"PCIe Gen1 x4", func(s *Spec) { s.PCIe.Gen, s.PCIe.Width = 1, 4 }, "take the PCIe link", 0},
		{"one DDR4 channel, 4 NICs", func(s *Spec) { s.Memory.BytesPerNS = 25 }, "take memory", 0},
		{"fabric at 20 MHz", func(s *Spec) { s.FabricMHz = 20 }, "take the root complex", 0},
		{"StarT-X NIUs", func(s *Spec) { x := startx.DefaultSpec(); s.StartX = &x }, "StarT-X", 0},
		{"1 GbE default node", func(s *Spec) { *s = DefaultSpec(); s.IOMMU.Bypass = true }, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := multirail(4)
			tc.edit(&s)
			page, err := BulkMinPage(s)
			if err == nil && page != tc.minPage {
				t.Errorf("smallest page %d, want %d", page, tc.minPage)
			}
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
