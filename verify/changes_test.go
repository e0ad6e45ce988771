package verify

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// changed is the directed stimulus with a second device and a write, a
// read and a write again on page 0 after its four ops, for driver calls to
// come between.
func changed(cs ...Change) *Stimulus {
	s, _ := directed()
	s.Devices = append(s.Devices, Device{ID: tlp.NewID(2, 0, 0), Attached: true})
	id := s.Devices[0].ID
	s.Ops = append(s.Ops,
		Op{Dev: 0, TLP: tlp.NewMemWrite(id, 4, PageBase+16, []byte("12345678"))},
		Op{Dev: 0, TLP: tlp.NewMemRead(id, 5, PageBase+16, 8)},
		Op{Dev: 1, TLP: tlp.NewMemRead(s.Devices[1].ID, 6, PageBase+16, 8)})
	s.Changes = cs
	return s
}

// The golden model makes each driver call's effect visible from the op it
// comes before: a permission revoked, a page unmapped and mapped again, a
// device detached and attached again.
func TestChangesPredicted(t *testing.T) {
	order := []int{0, 1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		name    string
		changes []Change
		write4  bool       // op 4's bytes reach memory
		status5 tlp.Status // op 5's completion
		status6 tlp.Status
		faults  int
	}{
		{"none", nil, true, tlp.SC, tlp.SC, 1},
		{"W revoked after op 4", []Change{{After: 5, Kind: "setbits", IOVA: PageBase, Bits: pte.R, IUID: 1}}, true, tlp.SC, tlp.SC, 1},
		{"W revoked before op 4", []Change{{After: 4, Kind: "setbits", IOVA: PageBase, Bits: pte.R, IUID: 1}}, false, tlp.SC, tlp.SC, 1}, // a write refused without logging is dropped (no fault)
		{"unmapped", []Change{{After: 4, Kind: "unmap", IOVA: PageBase}}, false, tlp.UR, tlp.UR, 4},
		{"unmapped and mapped", []Change{{After: 4, Kind: "unmap", IOVA: PageBase}, {After: 5, Kind: "map", IOVA: PageBase, Bits: pte.R | pte.W, IUID: 1}}, false, tlp.SC, tlp.SC, 2},
		{"device 1 detached", []Change{{After: 6, Kind: "detach", Dev: 1}}, true, tlp.SC, tlp.UR, 2},
		{"detached and attached", []Change{{After: 0, Kind: "detach", Dev: 1}, {After: 6, Kind: "attach", Dev: 1}}, true, tlp.SC, tlp.SC, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := changed(c.changes...)
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			p := Predict(s, order)
			wrote := string(p.Memory[FrameBase][16:24]) == "12345678"
			if wrote != c.write4 || p.Completions[5].Status != c.status5 || p.Completions[6].Status != c.status6 || len(p.Faults) != c.faults {
				t.Fatalf("op 4 wrote %v, op 5 %v, op 6 %v, %d faults: %+v", wrote, p.Completions[5].Status, p.Completions[6].Status, len(p.Faults), p.Faults)
			}
		})
	}
}

// A replay file's driver calls are checked in order against the pages
// they change: each mistake names its key and what is allowed.
func TestChangeErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		changes []Change
		want    string
	}{
		{"after beyond the ops", []Change{{After: 8, Kind: "detach"}}, "changes[0].after: 8 is out of range (0..7: an op index, in order)"},
		{"out of order", []Change{{After: 5, Kind: "detach"}, {After: 4, Kind: "attach"}}, "changes[1].after: 4 is out of range (5..7: an op index, in order)"},
		{"no such kind", []Change{{After: 1, Kind: "remap", IOVA: PageBase}}, `changes[0].kind: "remap" is no driver call (setbits, unmap, map, detach or attach)`},
		{"no such device", []Change{{After: 1, Kind: "detach", Dev: 2}}, "changes[0].dev: 2 is no device (0..1: an index into devices)"},
		{"no such page", []Change{{After: 1, Kind: "unmap", IOVA: PageBase + 0x9000}}, "changes[0].iova: 0x40009000 is no page (the iova of one of pages)"},
		{"a flushing page", []Change{{After: 1, Kind: "unmap", IOVA: PageBase + 0x1000}}, "changes[0].iova: 0x40001000 is a flushing page (a page that is no flushing page)"},
		{"map of a mapped page", []Change{{After: 1, Kind: "map", IOVA: PageBase, Bits: pte.R}}, "changes[0].kind: map of a page that is mapped (setbits or unmap of a mapped page, map of an unmapped one)"},
		{"setbits after unmap", []Change{{After: 1, Kind: "unmap", IOVA: PageBase}, {After: 2, Kind: "setbits", IOVA: PageBase, Bits: pte.R}}, "changes[1].kind: setbits of a page that is not mapped (setbits or unmap of a mapped page, map of an unmapped one)"},
		{"no bits", []Change{{After: 1, Kind: "setbits", IOVA: PageBase}}, "changes[0].bits: 0x0 (R, W, WL, WLD, RL, RLD and E, at least one)"},
		{"other bits", []Change{{After: 1, Kind: "setbits", IOVA: PageBase, Bits: 4}}, "changes[0].bits: 0x4 (R, W, WL, WLD, RL, RLD and E, at least one)"},
		{"iuid", []Change{{After: 1, Kind: "setbits", IOVA: PageBase, Bits: pte.R, IUID: 1024}}, "changes[0].iuid: 1024 is out of range (0..1023: 10 bits)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.MarshalIndent(changed(c.changes...), "", " ")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse("s.json", b)
			if err == nil || !regexp.MustCompile(`^s\.json:[1-9][0-9]*: `).MatchString(err.Error()) || err.Error()[len(err.Error())-len(c.want):] != c.want {
				t.Fatalf("\n got %v\nwant s.json:N: %s", err, c.want)
			}
		})
	}
}

// Shrinking keeps each driver call between the ops it was between.
func TestShrinkKeepsChanges(t *testing.T) {
	s := changed(Change{After: 4, Kind: "unmap", IOVA: PageBase}, Change{After: 6, Kind: "detach", Dev: 1})
	// It fails while op 5 (a read after the unmap) is there.
	small := Shrink(s, func(c *Stimulus) bool {
		for i, op := range c.Ops {
			if op.TLP.Tag == 5 {
				return len(c.Changes) == 2 && c.Changes[0].After <= i && c.Validate() == nil
			}
		}
		return false
	})
	if len(small.Ops) != 1 || small.Ops[0].TLP.Tag != 5 || small.Changes[0].After != 0 || small.Changes[1].After != 1 {
		t.Fatalf("%+v %+v", small.Ops, small.Changes)
	}
}
