package iommu

import (
	"github.com/aaemu/aaemu/pcie/tlp"
)

// FaultRecord is one VT-d fault recording register (FRCD): the faulting
// page, the source ID, the reason and the access type. F is set while the
// record is pending; software clears it.
type FaultRecord struct {
	FI   uint64 // faulting page address (4 KB granular)
	SID  tlp.ID
	FR   uint8
	Read bool // T: 0 write, 1 read or AtomicOp
	F    bool
}

// faultRegs are the fault recording registers, FSTS and FECTL of VT-d's
// primary fault logging: a fixed set of records used round robin; when the
// next one is still pending the fault is dropped and PFO set, and no fault is
// recorded until software clears PFO. This is the legacy fault log that AA
// routes E=0 records to; unlike an access log it drops, never stalls.
type faultRegs struct {
	recs []FaultRecord
	next int
	pfo  bool // primary fault overflow (FSTS bit 0)
	fri  int  // fault record index of the first pending record
	im   bool // FECTL interrupt mask
	ip   bool // FECTL interrupt pending
	addr uint64
	data uint32
}

// qualified reasons are suppressed when the context sets FPD.
func qualified(fr uint8) bool {
	switch fr {
	case FRRootNotPresent, 0x8, 0x9, FRRootReserved, FRCtxReserved:
		return false
	}
	return fr < 0x80
}

func (f *faultRegs) ppf() bool {
	for i := range f.recs {
		if f.recs[i].F {
			return true
		}
	}
	return false
}

// record logs a fault; it returns whether a fault event (MSI) is due and
// whether the record was dropped.
func (f *faultRegs) record(sid tlp.ID, addr uint64, fr uint8, read, fpd bool) (event, dropped bool) {
	if fpd && qualified(fr) {
		return false, true
	}
	if f.pfo {
		return false, true
	}
	if f.recs[f.next].F {
		// Overflow. A record is pending (PPF), so the event for it is
		// already out: no new interrupt.
		f.pfo = true
		return false, true
	}
	wasPending := f.ppf()
	f.recs[f.next] = FaultRecord{FI: addr &^ 0xfff, SID: sid, FR: fr, Read: read, F: true}
	if !wasPending {
		f.fri = f.next
	}
	f.next = (f.next + 1) % len(f.recs)
	if wasPending {
		return false, false // an event is already outstanding for the pending records
	}
	return f.interrupt(), false
}

// interrupt applies the fault event rules: IP is set; an unmasked event
// sends the MSI and clears IP.
func (f *faultRegs) interrupt() bool {
	f.ip = true
	if f.im {
		return false
	}
	f.ip = false
	return true
}

// FaultStatus is FSTS: overflow (PFO), pending (PPF) and the index of the
// first pending record (FRI).
func (m *IOMMU) FaultStatus() (pfo, ppf bool, fri int) {
	return m.faults.pfo, m.faults.ppf(), m.faults.fri
}

// FaultRecords returns the fault recording registers.
func (m *IOMMU) FaultRecords() []FaultRecord {
	return append([]FaultRecord(nil), m.faults.recs...)
}

// Faults is the number of requests the IOMMU blocked with a translation
// fault, recorded in a fault recording register or not (overflow, FPD): a
// blocked posted write is dropped with no word to its device, so a run
// whose process waits for that write learns of it only here.
func (m *IOMMU) Faults() uint64 { return m.stFaults.Value() + m.stFaultsDropped.Value() }

// ClearFault clears record i's F bit (software writes 1 to F).
func (m *IOMMU) ClearFault(i int) { m.faults.recs[i].F = false }

// ClearOverflow clears PFO (software writes 1 to it).
func (m *IOMMU) ClearOverflow() { m.faults.pfo = false }

// SetFaultEvent programs FEADDR/FEDATA and the FECTL mask. Unmasking with
// an event pending sends it.
func (m *IOMMU) SetFaultEvent(addr uint64, data uint32, masked bool) {
	f := &m.faults
	f.addr, f.data, f.im = addr, data, masked
	if !masked && f.ip {
		f.ip = false
		m.sendMSI(f.addr, f.data, 0)
	}
}
