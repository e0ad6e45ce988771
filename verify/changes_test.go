package verify

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
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
		{"no such kind", []Change{{After: 1, Kind: "remap", IOVA: PageBase}}, `changes[0].kind: "remap" is no driver call (setbits, unmap, map, split, merge, detach, attach, unregister, register or clearfaults)`},
		{"unregister of no log", []Change{{After: 1, Kind: "unregister", IUID: 7}}, "changes[0].iuid: 7 has no log (the IUID of one of logs)"},
		{"register of a registered log", []Change{{After: 1, Kind: "register", IUID: 1, Size: 512}}, "changes[0].kind: register of a log that is registered (unregister of a registered log, register of an unregistered one)"},
		{"no such device", []Change{{After: 1, Kind: "detach", Dev: 2}}, "changes[0].dev: 2 is no device (0..1: an index into devices)"},
		{"no such page", []Change{{After: 1, Kind: "unmap", IOVA: PageBase + 0x9000}}, "changes[0].iova: 0x40009000 is no page of domain 1 (the iova of one of the domain's pages)"},
		{"a flushing page", []Change{{After: 1, Kind: "unmap", IOVA: PageBase + 0x1000}}, "changes[0].iova: 0x40001000 is a flushing page (a page that is no flushing page)"},
		{"map of a mapped page", []Change{{After: 1, Kind: "map", IOVA: PageBase, Bits: pte.R}}, "changes[0].kind: map of a page that is mapped (setbits or unmap of a mapped page, map of an unmapped one)"},
		{"a racing unregister", []Change{{After: 1, Kind: "unregister", IUID: 1, Racing: true}}, "changes[0].racing: a unregister call cannot race (clearfaults, setbits, map, unmap, split, merge, detach and attach only: a log's removal or registration waits for the log to be quiet)"},
		{"a racing setbits before every TLP", []Change{{After: 0, Kind: "setbits", IOVA: PageBase, Bits: pte.R, Racing: true}}, "changes[0].racing: a setbits call at op 0 races nothing there (a racing setbits, map, unmap, split, merge, detach or attach after a TLP (after >= 1) and alone at its place)"},
		{"a racing unmap sharing its place", []Change{{After: 2, Kind: "detach"}, {After: 2, Kind: "unmap", IOVA: PageBase, Racing: true}}, "changes[1].racing: a unmap call at op 2 races nothing there (a racing setbits, map, unmap, split, merge, detach or attach after a TLP (after >= 1) and alone at its place)"},
		{"setbits after unmap", []Change{{After: 1, Kind: "unmap", IOVA: PageBase}, {After: 2, Kind: "setbits", IOVA: PageBase, Bits: pte.R}}, "changes[1].kind: setbits of a page that is not mapped (setbits or unmap of a mapped page, map of an unmapped one)"},
		{"no bits", []Change{{After: 1, Kind: "setbits", IOVA: PageBase}}, "changes[0].bits: 0x0 (R, W, WL, WLD, RL, RLD and E, at least one)"},
		{"other bits", []Change{{After: 1, Kind: "setbits", IOVA: PageBase, Bits: 4}}, "changes[0].bits: 0x4 (R, W, WL, WLD, RL, RLD and E, at least one)"},
		{"iuid", []Change{{After: 1, Kind: "setbits", IOVA: PageBase, Bits: pte.R, IUID: 1024}}, "changes[0].iuid: 1024 is out of range (0..1023: 10 bits)"},
		{"no such domain", []Change{{After: 1, Kind: "unmap", IOVA: PageBase, Domain: 3}}, "changes[0].domain: 3 is no domain (1 (or 0) or 2)"},
		{"domain 2 has no such page", []Change{{After: 1, Kind: "unmap", IOVA: PageBase, Domain: 2}}, "changes[0].iova: 0x40000000 is no page of domain 2 (the iova of one of the domain's pages)"},
		{"setbits of a large page", []Change{{After: 1, Kind: "setbits", IOVA: Large2MBase, Bits: pte.R}}, "changes[0].iova: 0x80000000 is a page of 2097152 bytes (a 4 KB page's (split or merge a large page))"},
		{"split of a 4 KB page", []Change{{After: 1, Kind: "split", IOVA: PageBase, Size: 4096, Bits: pte.R}}, "changes[0].iova: 0x40000000 is a 4 KB page (a large page's)"},
		{"split to no page size", []Change{{After: 1, Kind: "split", IOVA: Large2MBase, Size: 8192, Bits: pte.R}}, "changes[0].size: 8192 (4096, 2097152 (2 MB) or 1073741824 (1 GB), at most the page's size)"},
		{"merge beyond the page", []Change{{After: 1, Kind: "merge", IOVA: Large2MBase, Size: Page1G, Bits: pte.R}}, "changes[0].size: 1073741824 (4096, 2097152 (2 MB) or 1073741824 (1 GB), at most the page's size)"},
		{"merge of a large page", []Change{{After: 1, Kind: "merge", IOVA: Large2MBase, Size: Page2M, Bits: pte.R}}, "changes[0].size: 2097152 is no merge (above 2097152: the size of the pages that map it now)"},
		{"split twice", []Change{{After: 1, Kind: "split", IOVA: Large2MBase, Size: 4096, Bits: pte.R}, {After: 1, Kind: "split", IOVA: Large2MBase, Size: 4096, Bits: pte.R}}, "changes[1].size: 4096 is no split (below 4096: the size of the pages that map it now)"},
		{"AA bits on a large page", []Change{{After: 1, Kind: "split", IOVA: Large2MBase, Size: 4096, Bits: pte.R}, {After: 2, Kind: "merge", IOVA: Large2MBase, Size: Page2M, Bits: pte.R | pte.E}}, "changes[1].bits: 0x8000000000000001, IUID 0 (R and W only, IUID 0, on pages larger than 4 KB (the AA bits live in 4 KB leaves))"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := changed(c.changes...)
			s.Pages = append(s.Pages, Page{IOVA: Large2MBase, PA: Large2MFrames, Mapped: true, Bits: pte.R | pte.W, Size: Page2M})
			b, err := json.MarshalIndent(s, "", " ")
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

// logged is a stimulus for the log and fault calls: a Poll log of IUID 0,
// two fault recording registers, and writes to a page that logs into it
// (ops 0 and 4) and to an unmapped page (ops 1, 2, 3 and 5: faults).
func logged(cs ...Change) *Stimulus {
	id := tlp.NewID(1, 0, 0)
	s := &Stimulus{Seed: 1, FaultRecords: 2, ConsumerNS: 100,
		Devices: []Device{{ID: id, Attached: true}},
		Logs:    []Log{{IUID: 0, Size: 4096, Mode: 0}},
		Pages: []Page{
			{IOVA: PageBase, PA: FrameBase, Mapped: true, Bits: pte.R | pte.W | pte.WL | pte.E},
			{IOVA: PageBase + 0x1000, PA: FrameBase + 0x1000},
		},
		Changes: cs,
	}
	for i, pg := range []uint64{0, 1, 1, 1, 0, 1} {
		s.Ops = append(s.Ops, Op{Dev: 0, TLP: tlp.NewMemWrite(id, uint16(i), PageBase+pg*0x1000+8, []byte("abcd"))})
	}
	return s
}

// The golden model follows a log removed and registered again (records
// after its removal fault for want of a log; sequence numbers start again
// in a new ring) and software clearing the fault records (VT-d's registers
// used round robin, PFO dropping faults until cleared, a fault event for
// the first fault recorded while none is pending).
func TestLogAndFaultChangesPredicted(t *testing.T) {
	for _, c := range []struct {
		name     string
		changes  []Change
		seqs     []uint64 // IUID 0's records
		faults   []uint8  // the reasons software read, in order
		overflow bool
		cleared  int
		events   int
	}{
		{"none", nil, []uint64{0, 1}, []uint8{5, 5}, true, 0, 1},
		{"cleared before the overflow", []Change{{After: 3, Kind: "clearfaults"}}, []uint64{0, 1}, []uint8{5, 5, 5, 5}, false, 0, 2},
		{"cleared after the overflow", []Change{{After: 4, Kind: "clearfaults"}}, []uint64{0, 1}, []uint8{5, 5, 5}, false, 1, 2},
		{"cleared twice", []Change{{After: 2, Kind: "clearfaults"}, {After: 5, Kind: "clearfaults"}}, []uint64{0, 1}, []uint8{5, 5, 5, 5}, false, 0, 3},
		{"log removed", []Change{{After: 4, Kind: "unregister"}, {After: 4, Kind: "clearfaults"}}, []uint64{0}, []uint8{5, 5, frNoLog, 5}, false, 1, 2},
		{"log registered again", []Change{{After: 1, Kind: "unregister"}, {After: 4, Kind: "register", Size: 1024}}, []uint64{0, 0}, []uint8{5, 5}, true, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := logged(c.changes...)
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			p := Predict(s, []int{0, 1, 2, 3, 4, 5})
			var seqs []uint64
			for _, r := range p.Logs[0] {
				seqs = append(seqs, r.Seq)
			}
			var frs []uint8
			for _, f := range p.Faults {
				frs = append(frs, f.FR)
			}
			if !slices.Equal(seqs, c.seqs) || !slices.Equal(frs, c.faults) || p.Overflow != c.overflow || p.Cleared != c.cleared || p.FaultEvents != c.events {
				t.Fatalf("records %v, faults %#x, overflow %v, cleared %d, %d events; want %v, %#x, %v, %d, %d",
					seqs, frs, p.Overflow, p.Cleared, p.FaultEvents, c.seqs, c.faults, c.overflow, c.cleared, c.events)
			}
		})
	}
}

// twoDomains has a device in each domain and a page at the same IOVA in
// each: read and write in domain 1, read only in domain 2, on other
// frames.
func twoDomains() *Stimulus {
	d1, d2 := tlp.NewID(1, 0, 0), tlp.NewID(12, 0, 0)
	return &Stimulus{Seed: 1, FaultRecords: 4, ConsumerNS: 100,
		Devices: []Device{{ID: d1, Attached: true}, {ID: d2, Attached: true, Domain: 2}},
		Pages: []Page{
			{IOVA: PageBase, PA: FrameBase, Mapped: true, Bits: pte.R | pte.W},
			{IOVA: PageBase, PA: Domain2Frames, Mapped: true, Bits: pte.R, Domain: 2},
		},
		Ops: []Op{
			{Dev: 0, TLP: tlp.NewMemWrite(d1, 0, PageBase+8, []byte("abcd"))},
			{Dev: 1, TLP: tlp.NewMemRead(d2, 1, PageBase+8, 4)},
			{Dev: 1, TLP: tlp.NewMemWrite(d2, 2, PageBase+8, []byte("wxyz"))}, // no W in domain 2
			{Dev: 0, TLP: tlp.NewMemRead(d1, 3, PageBase+8, 4)},
		},
	}
}

// The same IOVA in two domains is two pages: each device sees its
// domain's frame and permissions.
func TestDomainsKeptApart(t *testing.T) {
	s := twoDomains()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	p := Predict(s, []int{0, 1, 2, 3})
	want1 := []byte{Pattern(Domain2Frames + 8), Pattern(Domain2Frames + 9), Pattern(Domain2Frames + 10), Pattern(Domain2Frames + 11)}
	if string(p.Completions[1].Data) != string(want1) || string(p.Completions[3].Data) != "abcd" ||
		string(p.Memory[Domain2Frames][8:12]) != string(want1) || string(p.Memory[FrameBase][8:12]) != "abcd" {
		t.Fatalf("domain 2 read %q, domain 1 read %q", p.Completions[1].Data, p.Completions[3].Data)
	}
	// A page twice in one domain is refused; in two it is not.
	s.Pages[1].Domain = 0
	if err := s.Validate(); err == nil || err.Error() != "pages[1].iova: 0x40000000 is pages[0]'s too (a page once in its domain)" {
		t.Fatalf("%v", err)
	}
}

// The golden model applies a call on domain 2's page to domain 2 only,
// and a large page split or merged to every 4 KB of it.
func TestDomain2AndResizePredicted(t *testing.T) {
	const frame3 = 3 * 4096 // an op's offset in the large page
	large := func(cs ...Change) *Stimulus {
		s := twoDomains()
		s.Logs = []Log{{IUID: 7, Size: 4096}}
		s.Pages = append(s.Pages, Page{IOVA: Large2MBase, PA: Large2MFrames, Mapped: true, Bits: pte.R | pte.W, Size: Page2M})
		d1 := s.Devices[0].ID
		s.Ops = append(s.Ops,
			Op{Dev: 0, TLP: tlp.NewMemWrite(d1, 4, Large2MBase+frame3+8, []byte("1234"))},
			Op{Dev: 0, TLP: tlp.NewMemWrite(d1, 5, Large2MBase+frame3+8, []byte("5678"))})
		s.Changes = cs
		return s
	}
	for _, c := range []struct {
		name    string
		s       *Stimulus
		d2wrote bool   // op 2, domain 2's write, reached domain 2's frame
		d1read  string // op 3, domain 1's read
		large   string // the bytes ops 4 and 5 left in the large page
		records int    // in IUID 7's log
	}{
		{"none", large(), false, "abcd", "5678", 0},
		{"W granted in domain 2", large(Change{After: 2, Kind: "setbits", Domain: 2, IOVA: PageBase, Bits: pte.R | pte.W}), true, "abcd", "5678", 0},
		{"domain 2's page unmapped", large(Change{After: 1, Kind: "unmap", Domain: 2, IOVA: PageBase}), false, "abcd", "5678", 0},
		{"split, logging writes", large(Change{After: 5, Kind: "split", IOVA: Large2MBase, Size: 4096, Bits: pte.R | pte.W | pte.WL | pte.E, IUID: 7}), false, "abcd", "5678", 1},
		{"split, read only", large(Change{After: 5, Kind: "split", IOVA: Large2MBase, Size: 4096, Bits: pte.R}), false, "abcd", "1234", 0},
		{"split and merged", large(Change{After: 0, Kind: "split", IOVA: Large2MBase, Size: 4096, Bits: pte.W | pte.WL | pte.E, IUID: 7},
			Change{After: 5, Kind: "merge", IOVA: Large2MBase, Size: Page2M, Bits: pte.R}), false, "abcd", "1234", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.s.Validate(); err != nil {
				t.Fatal(err)
			}
			p := Predict(c.s, []int{0, 1, 2, 3, 4, 5})
			d2wrote := string(p.Memory[Domain2Frames][8:12]) == "wxyz"
			got := string(p.Memory[Large2MFrames+frame3][8:12])
			if d2wrote != c.d2wrote || string(p.Completions[3].Data) != c.d1read || got != c.large || len(p.Logs[7]) != c.records {
				t.Fatalf("domain 2 wrote %v, domain 1 read %q, large page %q, %d records", d2wrote, p.Completions[3].Data, got, len(p.Logs[7]))
			}
		})
	}
}

// A clear of the fault records that races the faults in flight is
// accepted wherever it may have come: between the clear before it and its
// quiet place (op 4 here, after three faults into two registers), with
// what software read, PFO and the fault events as the golden model has
// them for that place; an observation of a clear after a later TLP's
// fault, or of a read no place gives, is refused.
func TestRacingClearPlaced(t *testing.T) {
	racing := logged(Change{After: 4, Kind: "clearfaults", Racing: true})
	if err := racing.Validate(); err != nil {
		t.Fatal(err)
	}
	order := []int{0, 1, 2, 3, 4, 5}
	for _, c := range []struct {
		name    string
		at      int // the op the clear came before, as the observation has it
		accept  bool
		corrupt bool // one record software read changed
	}{
		{"before every fault", 1, true, false},
		{"after the first", 2, true, false},
		{"after the second", 3, true, false},
		{"at its quiet place", 4, true, false},
		{"after a later TLP's fault", 6, false, false},
		{"a record no place gives", 3, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The observation: the golden model's with the clear at op at.
			q := Predict(logged(Change{After: c.at, Kind: "clearfaults"}), order)
			o := &Observation{Accepted: order, Memory: q.Memory, Logs: q.Logs, Completions: q.Completions,
				Faults: slices.Clone(q.Faults), Overflow: q.Overflow, Cleared: q.Cleared, ClearsRead: q.ClearsRead, ClearsPFO: q.ClearsPFO}
			for range q.FaultEvents {
				o.MSIs = append(o.MSIs, MSI{Addr: FaultMSIAddr, Data: FaultMSIData})
			}
			if c.corrupt {
				o.Faults[0].Page ^= 0x1000
			}
			mm := Compare(racing, Predict(racing, order), o)
			if (mm == nil) != c.accept {
				t.Fatalf("accepted %v, want %v: %v", mm == nil, c.accept, mm)
			}
		})
	}
}

// An SP or Int log removed and registered again is checked ring by ring:
// its mirror rises from 0 in each and ends at the bytes the golden model
// placed in that ring, its MSI comes in each ring that got records, and
// neither comes while the log is removed.
func TestNotificationsPerRing(t *testing.T) {
	order := []int{0, 1, 2, 3, 4, 5}
	cs := []Change{{After: 1, Kind: "unregister"}, {After: 4, Kind: "register", Size: 1024}}
	const off, on = 1000, 4000 // when the calls were made (ps)
	for _, c := range []struct {
		name string
		mode uint8
		sp   []SPWrite
		msis []uint64 // times of the log's MSIs
		want string   // the mismatch's start, or "" for none
	}{
		{"SP in both rings", 2, []SPWrite{{Tail: 32, At: 500}, {Tail: 32, At: 5000}}, nil, ""},
		{"SP mirrored while removed", 2, []SPWrite{{Tail: 32, At: 500}, {Tail: 32, At: 2000}}, nil, "iommu.sp at 2000 ps: IUID 0's tail mirrored while its log was removed"},
		{"SP not mirrored in the new ring", 2, []SPWrite{{Tail: 32, At: 500}}, nil, "iommu.sp at 9000 ps: IUID 0's mirrored tail is 0 at the end of its ring 1"},
		{"SP tail of the old ring going on", 2, []SPWrite{{Tail: 32, At: 500}, {Tail: 64, At: 5000}}, nil, "iommu.sp at 9000 ps: IUID 0's mirrored tail is 64 at the end of its ring 1"},
		{"Int in both rings", 1, nil, []uint64{500, 5000}, ""},
		{"Int only in the first", 1, nil, []uint64{500}, "iommu.msi at 9000 ps: IUID 0 (Int) got 32 bytes of records in its ring 1 and no MSI"},
		{"Int while removed", 1, nil, []uint64{500, 2000, 5000}, "iommu.msi at 2000 ps: IUID 0's MSI while its log was removed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := logged(cs...)
			s.Logs[0].Mode = c.mode
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			p := Predict(s, order)
			o := &Observation{EndPS: 9000, ChangesAt: []uint64{off, on}}
			for _, w := range c.sp {
				o.SP = append(o.SP, SPWrite{Slot: 0, IUID: 0, Tail: w.Tail, At: w.At})
			}
			for _, at := range c.msis {
				o.MSIs = append(o.MSIs, MSI{Addr: LogMSIAddr, Data: 0, At: at})
			}
			for range p.FaultEvents {
				o.MSIs = append(o.MSIs, MSI{Addr: FaultMSIAddr, Data: FaultMSIData})
			}
			mm := compareNotifications(s, p, o)
			if got := fmt.Sprint(mm); c.want == "" && mm != nil || c.want != "" && (mm == nil || !strings.HasPrefix(got, c.want)) {
				t.Fatalf("got %v\nwant %q", mm, c.want)
			}
		})
	}
}
