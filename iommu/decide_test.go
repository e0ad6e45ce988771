package iommu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/pcie/tlp"
)

const (
	testIOVA = 0x4000_0000
	testPA   = 0x5000_0000
	testLog  = 0x300_0000
	testIUID = 5
)

// expectation written from DESIGN.md §2.2/§2.3 as a plain table, not from
// decide.go's switch.
type outcome struct {
	performed bool
	access    int // records in the access log: 0 or 1
	withData  bool
	faultFR   uint8 // 0: no fault record
}

func expect(write, present, r, w, rl, rld, wl, wld, e bool) outcome {
	if !present {
		if write {
			return outcome{faultFR: FRWrite}
		}
		return outcome{faultFR: FRRead}
	}
	var o outcome
	var meta, data bool
	if write {
		o.performed = w
		meta, data = wl || wld, wld
	} else {
		o.performed = r
		meta, data = rl || rld, r && rld
	}
	if !meta {
		return o
	}
	if e {
		o.access, o.withData = 1, data
		return o
	}
	switch {
	case write && w:
		o.faultFR = FRAALoggedWrite
	case write:
		o.faultFR = FRWrite
	case r:
		o.faultFR = FRAALoggedRead
	default:
		o.faultFR = FRRead
	}
	return o
}

// Every combination of R/W × RL/RLD/WL/WLD × E × present, for a write and
// for a read: memory, completions, access-log records and fault records.
func TestDecisionTables(t *testing.T) {
	bit := func(b bool, v uint64) uint64 {
		if b {
			return v
		}
		return 0
	}
	n := 0
	for _, write := range []bool{true, false} {
		for combo := 0; combo < 1<<7; combo++ {
			r, w := combo&1 != 0, combo&2 != 0
			rl, rld, wl, wld := combo&4 != 0, combo&8 != 0, combo&16 != 0, combo&32 != 0
			e := combo&64 != 0
			for _, present := range []bool{true, false} {
				if !present && combo != 0 {
					continue // without a mapping there are no bits to vary
				}
				name := fmt.Sprintf("write=%v/R%d W%d RL%d RLD%d WL%d WLD%d E%d/present=%v", write,
					b2u(r), b2u(w), b2u(rl), b2u(rld), b2u(wl), b2u(wld), b2u(e), present)
				t.Run(name, func(t *testing.T) {
					want := expect(write, present, r, w, rl, rld, wl, wld, e)
					bits := bit(r, pte.R) | bit(w, pte.W) | bit(rl, pte.RL) | bit(rld, pte.RLD) | bit(wl, pte.WL) | bit(wld, pte.WLD) | bit(e, pte.E)
					checkAccess(t, write, present, bits, want)
				})
				n++
			}
		}
	}
	if n != 2*(128+1) {
		t.Fatalf("%d cases", n)
	}
}

func checkAccess(t *testing.T, write, present bool, bits uint64, want outcome) {
	s := newSystem(t, DefaultSpec(), 1)
	if err := s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 1 << 16}); err != nil {
		t.Fatal(err)
	}
	if present {
		if err := s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: bits, IUID: testIUID}); err != nil {
			t.Fatal(err)
		}
	}
	pattern := bytes.Repeat([]byte{0xaa}, 4096)
	s.mem.Write(testPA, pattern)
	payload := []byte("0123456789abcdef")
	dev := s.devs[0]
	if write {
		s.send(0, tlp.NewMemWrite(dev.id, 3, testIOVA+0x10, payload))
	} else {
		s.send(0, tlp.NewMemRead(dev.id, 3, testIOVA+0x10, 16))
	}
	s.run()

	got := make([]byte, 16)
	s.mem.Read(testPA+0x10, got)
	written := bytes.Equal(got, payload)
	if write && written != want.performed {
		t.Errorf("memory written = %v, want %v", written, want.performed)
	}
	if !write {
		if len(dev.got) != 1 {
			t.Fatalf("%d completions", len(dev.got))
		}
		c := dev.got[0].TLP
		if want.performed && (c.Kind != tlp.CplD || c.Status != tlp.SC || !bytes.Equal(c.Data, pattern[:16])) {
			t.Errorf("completion %v, want CplD SC with the data", &c)
		}
		if !want.performed && (c.Kind != tlp.Cpl || c.Status != tlp.UR) {
			t.Errorf("completion %v, want Cpl UR", &c)
		}
	}
	recs := s.records(testIUID, false)
	if len(recs) != want.access {
		t.Fatalf("%d access-log records, want %d", len(recs), want.access)
	}
	if want.access == 1 {
		h := recs[0]
		kind := record.Get
		if write {
			kind = record.Put
		}
		if h.Kind != kind || h.IUID != testIUID || h.Requester != uint16(dev.id) || h.Tag != 3 ||
			h.IOVA != testIOVA+0x10 || h.Length != 16 || h.Seq != 0 || (h.Flags&record.FlagBlocked != 0) == want.performed {
			t.Errorf("record %+v", h.Header)
		}
		wantData := []byte(nil)
		if want.withData {
			wantData = payload
			if !write {
				wantData = pattern[:16]
			}
		}
		if !bytes.Equal(h.Data, wantData) {
			t.Errorf("record data %q, want %q", h.Data, wantData)
		}
	}
	var faults []FaultRecord
	for _, f := range s.m.FaultRecords() {
		if f.F {
			faults = append(faults, f)
		}
	}
	if want.faultFR == 0 && len(faults) != 0 {
		t.Fatalf("unexpected fault records %+v", faults)
	}
	if want.faultFR != 0 {
		if len(faults) != 1 || faults[0].FR != want.faultFR || faults[0].SID != dev.id ||
			faults[0].FI != testIOVA || faults[0].Read == write {
			t.Fatalf("fault records %+v, want one with reason %#x", faults, want.faultFR)
		}
		if len(s.irq.got) != 1 || s.irq.got[0].TLP.Addr != 0xfee0_0000 {
			t.Fatalf("fault event: %d MSIs", len(s.irq.got))
		}
	}
}
