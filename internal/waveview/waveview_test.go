package waveview

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/waveforms"
)

// The enums name the signals under the paths the blocks trace them at, in a
// cluster (node1.iommu) and alone (verify's iommu), and name the values the
// models use.
func TestEnumsNameTheModelsSignals(t *testing.T) {
	var sigs []waveforms.SignalInfo
	for _, p := range []string{"node1.iommu.tlp_kind", "iommu.tlp_kind", "node0.pcie0.up.kind", "net.wire01.bth_opcode",
		"net.up3.bth_opcode", "node0.nic0.kind_of_thing"} {
		sigs = append(sigs, waveforms.SignalInfo{Path: p, Width: 5, Changes: 1})
	}
	for _, p := range []string{"node1.iommu.performed", "node1.iommu.logged", "node1.iommu.fault", "iommu.performed", "iommu.logged", "iommu.fault"} {
		sigs = append(sigs, waveforms.SignalInfo{Path: p, Width: 1, Changes: 1})
	}
	var b bytes.Buffer
	if _, err := (waveforms.SaveFile{DumpFile: "run.vcd", Signals: sigs, Enums: Enums()}).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	gtkw := b.String()
	for _, want := range []string{
		"^1 run.tlp_kind.txt\nnode1.iommu.tlp_kind[4:0]\n", "^1 run.tlp_kind.txt\niommu.tlp_kind[4:0]\n",
		"^1 run.tlp_kind.txt\nnode0.pcie0.up.kind[4:0]\n", "^2 run.bth_opcode.txt\nnet.wire01.bth_opcode[4:0]\n",
		"^2 run.bth_opcode.txt\nnet.up3.bth_opcode[4:0]\n",
		"^3 run.decision.txt\n#{node1.iommu.decision} node1.iommu.fault node1.iommu.logged node1.iommu.performed\n",
		"^3 run.decision.txt\n#{iommu.decision} iommu.fault iommu.logged iommu.performed\n",
	} {
		if !strings.Contains(gtkw, want) {
			t.Errorf("save file lacks %q:\n%s", want, gtkw)
		}
	}
	if strings.Count(gtkw, "^") != 7 {
		t.Errorf("%d translated traces:\n%s", strings.Count(gtkw, "^"), gtkw)
	}
	names := map[string]map[uint64]string{}
	for _, e := range Enums() {
		names[e.Name] = e.Values
	}
	for name, want := range map[string]map[uint64]string{
		"tlp_kind":   {0: "MRd", 2: "MWr", 12: "CplD", 17: "CAS"},
		"bth_opcode": {0x0a: "RDMA WRITE Only", 0x11: "Acknowledge", 0x14: "FetchAdd"},
		"decision":   {0: "blocked", 1: "pass", 2: "blocked+record", 3: "pass+record", 6: "blocked+faultlog", 7: "pass+faultlog"},
	} {
		for v, n := range want {
			if names[name][v] != n {
				t.Errorf("%s %d is %q, want %q", name, v, names[name][v], n)
			}
		}
	}
	if len(names["tlp_kind"]) != 18 || len(names["bth_opcode"]) != 17 || len(names["decision"]) != 6 {
		t.Errorf("%d TLP kinds, %d opcodes, %d decisions", len(names["tlp_kind"]), len(names["bth_opcode"]), len(names["decision"]))
	}
}
