package iommu

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/waveforms"
)

// Timing: a TLP costs the processing time plus one memory access per table
// read: the first to a page reads the root and context entries and walks 4
// levels; the next hits both caches.
func TestTranslationTiming(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 1)
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.R | pte.W})
	id := s.devs[0].id
	s.send(0, tlp.NewMemWrite(id, 0, testIOVA, fill(8, 0)), tlp.NewMemWrite(id, 0, testIOVA+8, fill(8, 0)))
	s.run()
	h := s.m.hLatency
	if h.Count() != 2 || h.Sum() != (5+6*70)+5 {
		t.Fatalf("latencies sum to %d ns over %d TLPs, want 425 + 5", h.Sum(), h.Count())
	}
	if s.m.stTLBMisses.Value() != 1 || s.m.stTLBHits.Value() != 1 || s.m.stCtxMisses.Value() != 1 || s.m.stWalkReads.Value() != 4 {
		t.Fatal("cache statistics")
	}
}

// More IUIDs than access-log table entries: descriptors come from memory on
// a miss, and every record still lands in its own log.
func TestLogTableBackedByMemory(t *testing.T) {
	spec := DefaultSpec()
	spec.LogCAMEntries = 2
	s := newSystem(t, spec, 1)
	const logs = 5
	for i := uint16(0); i < logs; i++ {
		if err := s.drv.RegisterLog(10+i, LogConfig{Base: testLog + uint64(i)*0x1000, Size: 0x1000}); err != nil {
			t.Fatal(err)
		}
		if err := s.drv.Map(1, testIOVA+uint64(i)*4096, testPA+uint64(i)*4096, 4096, 4096, Perm{Bits: pte.WLD | pte.E, IUID: 10 + i}); err != nil {
			t.Fatal(err)
		}
	}
	id := s.devs[0].id
	for round := 0; round < 3; round++ {
		for i := 0; i < logs; i++ {
			s.send(0, tlp.NewMemWrite(id, 0, testIOVA+uint64(i)*4096+uint64(round)*8, fill(8, byte(i))))
		}
	}
	s.run()
	for i := uint16(0); i < logs; i++ {
		recs := s.records(10+i, false)
		if len(recs) != 3 {
			t.Fatalf("log of IUID %d holds %d records, want 3", 10+i, len(recs))
		}
		for r, rec := range recs {
			if rec.IUID != 10+i || rec.Seq != uint64(r) || !bytes.Equal(rec.Data, fill(8, byte(i))) {
				t.Fatalf("IUID %d record %d: %+v", 10+i, r, rec.Header)
			}
		}
	}
	if s.m.stLogMisses.Value() < logs*3-2 {
		t.Fatalf("%d log-table misses: the CAM did not thrash as expected", s.m.stLogMisses.Value())
	}
}

// The traced signals go through the VCD writer into a file the strict
// reader accepts, with the decision of each TLP and the log pointers.
func TestTracedSignals(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 1)
	s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 4096})
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: testIUID})
	path := filepath.Join(t.TempDir(), "iommu.vcd")
	f, _ := os.Create(path)
	w := waveforms.NewWriter(f, waveforms.Options{})
	s.e.AttachTracer(w)
	s.send(0, tlp.NewMemWrite(s.devs[0].id, 0, testIOVA, fill(64, 0)))
	s.run()
	if err := w.Close(uint64(s.e.Now())); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, _ := os.ReadFile(path)
	vcd, err := waveforms.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	last := func(p string) string {
		h := vcd.History(p)
		if len(h) == 0 {
			t.Fatalf("%s not traced", p)
		}
		return h[len(h)-1].V
	}
	for sig, want := range map[string]string{
		"iommu.tlp_kind":    "00010", // MWr
		"iommu.pte_e":       "1",
		"iommu.pte_aa_bits": "00011", // WL, WLD
		"iommu.iuid":        "0000000101",
		"iommu.performed":   "0",
		"iommu.logged":      "1",
	} {
		if got := last(sig); got != want {
			t.Errorf("%s = %s, want %s", sig, got, want)
		}
	}
	if got := last("iommu.log0.tail"); got[len(got)-7:] != "1100000" { // 96 = header + 64 bytes
		t.Errorf("log0.tail ends %s", got)
	}
}
