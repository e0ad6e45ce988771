package iommu

import (
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/sim"
)

// Labels count the IOTLB's lookups by kind: a stream over three labelled
// pages and one unlabelled page, looked up twice each in a one-entry
// IOTLB, misses on every lookup but the repeats; the counts by label add
// up to the IOTLB's own. With IOTLBOnly only that label's pages are
// looked up (the others translate to the same addresses, outside the
// IOTLB, counted nowhere), and without either option labels are ignored.
func TestIOTLBByKind(t *testing.T) {
	type counts map[string][2]uint64 // label: hits, misses
	for _, tc := range []struct {
		name          string
		byKind        bool
		only          string
		want          counts
		hits, misses  uint64
		declaresKinds bool
	}{
		{"off", false, "", nil, 4, 4, false},
		{"by kind", true, "", counts{"table": {2, 2}, "queues": {1, 1}, "other": {1, 1}}, 4, 4, true},
		{"only table", false, "table", counts{"table": {2, 2}, "queues": {0, 0}, "other": {0, 0}}, 2, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := DefaultSpec()
			spec.IOTLBSets, spec.IOTLBWays, spec.IOTLBEviction = 1, 1, sim.LRU
			spec.IOTLBByKind, spec.IOTLBOnly = tc.byKind, tc.only
			s := newSystem(t, spec, 1)
			rw := Perm{Bits: pte.R | pte.W}
			if err := s.drv.Map(1, testIOVA, testPA, 0x4000, 4096, rw); err != nil {
				t.Fatal(err)
			}
			for _, l := range []struct {
				off  uint64
				kind string
			}{{0, "table"}, {0x1000, "table"}, {0x2000, "queues"}} {
				if err := s.drv.Label(1, testIOVA+l.off, 4096, l.kind); err != nil {
					t.Fatal(err)
				}
			}
			id := s.devs[0].id
			for _, off := range []uint64{0, 0, 0x1000, 0x1000, 0x2000, 0x2000, 0x3000, 0x3000} {
				pa, _, _, fault := s.m.TranslateTL(id, testIOVA+off+8, true)
				if fault != 0 || pa != testPA+off+8 {
					t.Fatalf("%#x: pa %#x, fault %#x", off, pa, fault)
				}
			}
			if h, m := s.m.stTLBHits.Value(), s.m.stTLBMisses.Value(); h != tc.hits || m != tc.misses {
				t.Errorf("IOTLB: %d hits, %d misses; want %d, %d", h, m, tc.hits, tc.misses)
			}
			_, declared := s.e.Stats().Get("iommu.iotlb.kind.other.hits")
			if declared != tc.declaresKinds {
				t.Errorf("counters by kind declared: %v, want %v", declared, tc.declaresKinds)
			}
			for kind, w := range tc.want {
				h, _ := s.e.Stats().Get("iommu.iotlb.kind." + kind + ".hits")
				m, _ := s.e.Stats().Get("iommu.iotlb.kind." + kind + ".misses")
				if h == nil || m == nil {
					t.Fatalf("%s: no counters", kind)
				}
				if got := [2]uint64{h.(*sim.Counter).Value(), m.(*sim.Counter).Value()}; got != w {
					t.Errorf("%s: hits, misses %v, want %v", kind, got, w)
				}
			}
		})
	}
}

// A label must be short and not empty.
func TestLabelErrors(t *testing.T) {
	spec := DefaultSpec()
	spec.IOTLBByKind = true
	s := newSystem(t, spec, 1)
	for _, k := range []string{"", "a-label-longer-than-thirty-two-characters"} {
		if err := s.drv.Label(1, testIOVA, 4096, k); err == nil {
			t.Errorf("label %q: no error", k)
		}
	}
}
