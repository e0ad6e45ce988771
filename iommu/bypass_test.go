package iommu

import (
	"bytes"
	"errors"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// The same TLPs — a write and a read of an unmapped address, a write to an
// active (blocked, logged) page — with the extended IOMMU and bypassed: the
// extended IOMMU faults, blocks and logs; bypassed, every access reaches
// memory at the device's own address, with no processing delay, no table
// read and nothing recorded.
func TestBypass(t *testing.T) {
	const unmapped = 0x7000_0000
	for _, bypass := range []bool{false, true} {
		spec := DefaultSpec()
		spec.Bypass = bypass
		s := newSystem(t, spec, 1)
		if err := s.drv.Map(1, testIOVA, testIOVA, 4096, 4096, Perm{Bits: pte.WLD | pte.E, IUID: 7}); err != nil {
			t.Fatal(err)
		}
		err := s.drv.RegisterLog(7, LogConfig{Base: testLog, Size: 0x1000})
		if bypass != errors.Is(err, ErrBypassed) {
			t.Fatalf("bypass %v: RegisterLog: %v", bypass, err)
		}
		if err := s.drv.RegisterFlushPage(7, testIOVA+0x1000); bypass != errors.Is(err, ErrBypassed) {
			t.Fatalf("bypass %v: RegisterFlushPage: %v", bypass, err)
		}
		id := s.devs[0].id
		s.send(0, tlp.NewMemWrite(id, 0, unmapped, fill(8, 0xab)), tlp.NewMemRead(id, 1, unmapped, 8),
			tlp.NewMemWrite(id, 0, testIOVA, fill(8, 0xcd)))
		s.run()
		m := s.m
		var got [8]byte
		s.mem.Read(unmapped, got[:])
		wroteUnmapped := bytes.Equal(got[:], fill(8, 0xab))
		s.mem.Read(testIOVA, got[:])
		wroteActive := bytes.Equal(got[:], fill(8, 0xcd))
		cpls := s.devs[0].got
		readOK := len(cpls) == 1 && cpls[0].TLP.Status == tlp.SC && bytes.Equal(cpls[0].TLP.Data, fill(8, 0xab))
		translated := m.stTLBHits.Value() + m.stTLBMisses.Value() + m.stCtxHits.Value() + m.stCtxMisses.Value() + m.stWalkReads.Value()
		if bypass {
			if !wroteUnmapped || !wroteActive || !readOK {
				t.Errorf("bypassed: unmapped write %v, active-page write %v, read %v; want every access performed", wroteUnmapped, wroteActive, readOK)
			}
			if translated != 0 || m.stFaults.Value() != 0 || m.stRecords.Value() != 0 || m.stBlocked.Value() != 0 {
				t.Errorf("bypassed: %d lookups, %d faults, %d records, %d blocked; want none", translated, m.stFaults.Value(), m.stRecords.Value(), m.stBlocked.Value())
			}
			if h := m.hLatency; h.Count() != 3 || h.Sum() != 0 {
				t.Errorf("bypassed: %d TLPs spent %d ns in the IOMMU, want 3 and 0", h.Count(), h.Sum())
			}
			continue
		}
		if wroteUnmapped || wroteActive || readOK {
			t.Errorf("extended: unmapped write %v, active-page write %v, read %v; want none performed", wroteUnmapped, wroteActive, readOK)
		}
		if m.stFaults.Value() != 2 || m.stRecords.Value() != 1 || translated == 0 {
			t.Errorf("extended: %d faults, %d records, %d lookups; want 2, 1 and some", m.stFaults.Value(), m.stRecords.Value(), translated)
		}
	}
}
