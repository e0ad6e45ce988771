package iommu

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// BulkCheck allows only plain translated accesses on pages large enough,
// says why not, and changes nothing: no counter moves, and the IOTLB's
// next lookups hit and miss as they would have.
func TestBulkCheck(t *testing.T) {
	const huge = 0x6000_0000
	for _, tc := range []struct {
		name    string
		iova    uint64
		n       int
		write   bool
		minPage uint64
		want    string // "" allowed
	}{
		{"plain write", testIOVA, 8192, true, 4096, ""},
		{"plain read", testIOVA, 8192, false, 4096, ""},
		{"4 KB pages, 2 MB wanted", testIOVA, 8192, true, 2 << 20, "is a 4 KB page"},
		{"2 MB page, 2 MB wanted", huge + 4096, 64 << 10, true, 2 << 20, ""},
		{"write logged (WL)", testIOVA + 0x2000, 4096, true, 4096, "logs its accesses"},
		{"read of a write-logged page", testIOVA + 0x2000, 4096, false, 4096, ""},
		{"read logged (RLD, E)", testIOVA + 0x3000, 4096, false, 4096, "logs its accesses"},
		{"write without W", testIOVA + 0x4000, 4096, true, 4096, "not writable"},
		{"unmapped", testIOVA + 0x10_0000, 4096, true, 4096, "fault"},
		{"flushing page", testIOVA + 0x5000, 64, false, 4096, "flushing page"},
		{"interrupt window", 0xfee0_0000, 4, true, 4096, "interrupt window"},
		{"crosses into a logged page", testIOVA + 0x1f00, 512, true, 4096, "page 0x40002000 logs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem(t, DefaultSpec(), 1)
			d := s.drv
			rw := Perm{Bits: pte.R | pte.W}
			for _, err := range []error{
				d.Map(1, testIOVA, testPA, 0x6000, 4096, rw),
				d.SetBits(1, testIOVA+0x2000, Perm{Bits: pte.R | pte.W | pte.WL}),
				d.SetBits(1, testIOVA+0x3000, Perm{Bits: pte.R | pte.W | pte.RLD | pte.E, IUID: 2}),
				d.SetBits(1, testIOVA+0x4000, Perm{Bits: pte.R}),
				d.Map(1, huge, huge, 2<<20, 2<<20, rw),
				d.RegisterLog(2, LogConfig{Base: testLog, Size: 0x1000}),
				d.RegisterFlushPage(2, testIOVA+0x5000),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			id := s.devs[0].id
			// Warm the IOTLB with the first page: the check must not
			// change which lookups hit.
			s.m.TranslateTL(id, testIOVA, true)
			before := counters(s.m)
			err := s.m.BulkCheck(id, tc.iova, tc.n, tc.write, tc.minPage)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if after := counters(s.m); after != before {
				t.Errorf("counters %v, before the check %v", after, before)
			}
			if _, hit, _, _ := s.m.TranslateTL(id, testIOVA, true); !hit {
				t.Error("the first page's IOTLB entry is gone")
			}
			if _, hit, _, _ := s.m.TranslateTL(id, testIOVA+0x1000, true); hit {
				t.Error("the check filled the IOTLB")
			}
		})
	}
}

func counters(m *IOMMU) [6]uint64 {
	return [6]uint64{m.stTLPs.Value(), m.stTLBHits.Value(), m.stTLBMisses.Value(), m.stCtxHits.Value(), m.stCtxMisses.Value(), m.stWalkReads.Value()}
}

// BulkAccess counts and translates a TLP as the port's path does: the
// same physical address and the same IOTLB and walk counters as
// TranslateTL, and one TLP, read or write.
func TestBulkAccess(t *testing.T) {
	a, b := newSystem(t, DefaultSpec(), 1), newSystem(t, DefaultSpec(), 1)
	for _, s := range []*system{a, b} {
		if err := s.drv.Map(1, testIOVA, testPA, 0x4000, 4096, Perm{Bits: pte.R | pte.W}); err != nil {
			t.Fatal(err)
		}
	}
	id := tlp.NewID(1, 0, 0)
	for i := 0; i < 64; i++ {
		addr := testIOVA + uint64(i)*256
		pa := a.m.BulkAccess(id, addr, i%3 != 0)
		want, _, _, _ := b.m.TranslateTL(id, addr, i%3 != 0)
		if pa != want {
			t.Fatalf("TLP %d: %#x, want %#x", i, pa, want)
		}
	}
	ca, cb := counters(a.m), counters(b.m)
	if [5]uint64(ca[1:]) != [5]uint64(cb[1:]) || ca[0] != 64 || a.m.stReads.Value() != 22 || a.m.stWrites.Value() != 42 {
		t.Errorf("counters %v (reads %d, writes %d), TranslateTL's %v", ca, a.m.stReads.Value(), a.m.stWrites.Value(), cb)
	}
}
