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

// The bulk path is given only where the host side keeps up with every NIC
// at its wire's rate both ways, and the IOMMU is off the path.
func TestBulkHostFits(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want string // "" fits
	}{
		{"multirail, 4 NICs", func(*Spec) {}, ""},
		{"multirail, 1 NIC", func(s *Spec) { s.NICs = 1 }, ""},
		{"IOMMU on the path", func(s *Spec) { s.IOMMU.Bypass = false }, "the IOMMU is on the DMA path"},
		{"PCIe Gen1 x4", func(s *Spec) { s.PCIe.Gen, s.PCIe.Width = 1, 4 }, "take the PCIe link"},
		{"one DDR4 channel, 4 NICs", func(s *Spec) { s.Memory.BytesPerNS = 25 }, "take memory"},
		{"fabric at 20 MHz", func(s *Spec) { s.FabricMHz = 20 }, "take the root complex"},
		{"StarT-X NIUs", func(s *Spec) { x := startx.DefaultSpec(); s.StartX = &x }, "StarT-X"},
		{"1 GbE default node", func(s *Spec) { *s = DefaultSpec(); s.IOMMU.Bypass = true }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := multirail(4)
			tc.edit(&s)
			err := BulkHostFits(s)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
