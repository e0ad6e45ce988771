package iommu

import (
	"testing"

	"github.com/aaemu/aaemu/pcie/tlp"
)

// A device's MSI (a write into 0xFEE00000-0xFEEFFFFF) is an interrupt
// request: it reaches the CPUs as it was sent, unremapped, even from a
// device with no mapping there; a write just outside the window is DMA and
// faults as any unmapped write does.
func TestDeviceMSIThroughInterruptWindow(t *testing.T) {
	tests := []struct {
		name    string
		addr    uint64
		wantIrq bool
	}{
		{"window start", 0xfee0_0000, true},
		{"destination in the address", 0xfee0_3000, true},
		{"window end", 0xfeef_fffc, true},
		{"just below the window", 0xfedf_fffc, false},
		{"just above the window", 0xfef0_0000, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem(t, DefaultSpec(), 1)
			s.m.SetFaultEvent(0xfee0_0000, 0x30, true) // fault events masked: only device MSIs reach the sink
			msi := tlp.NewMSI(s.devs[0].id, tc.addr, 0x81)
			s.send(0, msi)
			s.run()
			if tc.wantIrq {
				if len(s.irq.got) != 1 {
					t.Fatalf("%d interrupts delivered, want 1", len(s.irq.got))
				}
				got := s.irq.got[0].TLP
				if got.Addr != tc.addr || got.Data[0] != 0x81 || got.RequesterID != s.devs[0].id {
					t.Fatalf("delivered %s, want the device's MSI unchanged", got.String())
				}
				if s.m.stDevMSIs == nil || s.m.stDevMSIs.Value() != 1 || s.m.stFaults.Value() != 0 {
					t.Fatal("the MSI was not counted as one, or faulted")
				}
				return
			}
			if len(s.irq.got) != 0 || s.m.stFaults.Value() != 1 {
				t.Fatalf("outside the window: %d interrupts, %d faults; want a DMA fault", len(s.irq.got), s.m.stFaults.Value())
			}
		})
	}
}
