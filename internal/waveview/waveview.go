// Package waveview names the values of aaemu's enumerated signals, so a
// waveform viewer shows "MWr" or "RDMA WRITE Only" where the VCD holds a
// number: the GTKWave save file attaches a translate file to each.
package waveview

import (
	"strings"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/waveforms"
)

// Enums are the enumerated signals of aaemu's blocks:
//   - tlp_kind: the kind of the latest TLP at an IOMMU (tlp_kind) and on a
//     PCIe link direction (kind);
//   - bth_opcode: the BTH opcode of the latest frame sent on a wire;
//   - decision: an IOMMU's decision on its latest TLP, joined in the viewer
//     from its fault, logged and performed signals.
func Enums() []waveforms.Enum {
	return []waveforms.Enum{
		{Name: "tlp_kind", Signals: []string{"**.iommu.tlp_kind", "**.pcie*.*.kind"}, Values: tlpKinds()},
		{Name: "bth_opcode", Signals: []string{"**.bth_opcode"}, Values: opcodes()},
		{Name: "decision", Signals: []string{"**.iommu"}, Bits: []string{"fault", "logged", "performed"}, Values: decisions},
	}
}

// tlpKinds names every value a 5-bit kind signal can show that is a kind.
func tlpKinds() map[uint64]string {
	m := map[uint64]string{}
	for k := tlp.Kind(0); k < 32; k++ {
		if s := k.String(); !strings.HasPrefix(s, "Kind(") {
			m[uint64(k)] = s
		}
	}
	return m
}

// opcodes names every BTH opcode the RoCE layer knows, as Wireshark does
// ("RDMA WRITE Only").
func opcodes() map[uint64]string {
	m := map[uint64]string{}
	for op := 0; op < 256; op++ {
		if s := roce.OpName(uint8(op)); !strings.HasPrefix(s, "opcode ") {
			m[uint64(op)] = s
		}
	}
	return m
}

// decisions: fault<<2 | logged<<1 | performed, in the words of the
// transaction log (aaemu trace). A TLP passes or is blocked; logged means an
// access-log record or a fault record was written, fault that it was a
// fault record (a translation fault, or an active access the IOMMU records
// in the fault log instead). Fault without logged does not occur.
var decisions = map[uint64]string{
	0b000: "blocked",
	0b001: "pass",
	0b010: "blocked+record",
	0b011: "pass+record",
	0b110: "blocked+faultlog",
	0b111: "pass+faultlog",
}
