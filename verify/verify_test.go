package verify

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// A small set-up where every kind of effect happens: a logged write with
// data, a logged read with data, a fault, a flush that waits.
func directed() (*Stimulus, *Observation) {
	s := &Stimulus{Seed: 1, FaultRecords: 4, ConsumerNS: 100,
		Devices: []Device{{ID: tlp.NewID(1, 0, 0), Attached: true}},
		Logs:    []Log{{IUID: 1, Size: 4096, Mode: 2}},
		Pages: []Page{
			{IOVA: PageBase, PA: FrameBase, Mapped: true, Bits: 0x8000_0000_0000_0180 | 0x403, IUID: 1}, // R W WL WLD RL? + E
			{IOVA: PageBase + 0x1000, PA: FrameBase + 0x1000, Mapped: true, Bits: 1},                    // R only: flushing page
		},
		Flushes: []Flush{{IUID: 1, IOVA: PageBase + 0x1000}},
	}
	s.Ops = []Op{
		{Dev: 0, TLP: tlp.NewMemWrite(s.Devices[0].ID, 0, PageBase+8, []byte("abcdefgh"))},
		{Dev: 0, TLP: tlp.NewMemRead(s.Devices[0].ID, 1, PageBase+8, 8)},
		{Dev: 0, TLP: tlp.NewMemWrite(s.Devices[0].ID, 2, PageBase+0x5000, []byte("x"))}, // unmapped: fault
		{Dev: 0, TLP: tlp.NewMemRead(s.Devices[0].ID, 3, PageBase+0x1000, 4)},            // flush
	}
	order := []int{0, 1, 2, 3}
	p := Predict(s, order)
	// A perfect observation: what the golden model predicts, with times.
	o := &Observation{Accepted: order, AcceptedAt: []uint64{1, 2, 3, 4}, Memory: p.Memory, Logs: map[uint16][]Record{},
		Completions: map[int]Completion{}, CompletedAt: map[int]uint64{}, Faults: append([]Fault(nil), p.Faults...), Overflow: p.Overflow, EndPS: 10_000}
	for k, v := range p.Logs {
		for _, r := range v {
			o.Logs[k] = append(o.Logs[k], Record{Header: r.Header, Data: append([]byte(nil), r.Data...)})
		}
	}
	for k, v := range p.Completions {
		o.Completions[k] = Completion{Status: v.Status, Data: append([]byte(nil), v.Data...)}
		o.CompletedAt[k] = 5000
	}
	o.Heads = []HeadMove{{IUID: 1, Head: 4096, At: 4000}}
	// What the CPUs see: the fault event, and the SP log's tail mirrored
	// over its two records.
	o.MSIs = []MSI{{Addr: FaultMSIAddr, Data: FaultMSIData, At: 3500}}
	var end uint64
	for _, r := range p.Logs[1] {
		end += uint64(r.Size())
	}
	o.SP = []SPWrite{{Slot: 1, IUID: 1, Tail: end - uint64(p.Logs[1][1].Size()), At: 2500}, {Slot: 1, IUID: 1, Tail: end, At: 3000}}
	return s, o
}

// The scoreboard reports every corruption of a correct observation.
func TestScoreboardCatchesCorruptions(t *testing.T) {
	s, good := directed()
	if mm := Compare(s, Predict(s, good.Accepted), good); mm != nil {
		t.Fatalf("a correct observation is reported: %v", mm)
	}
	p := Predict(s, good.Accepted)
	if len(p.Logs[1]) != 2 || len(p.Faults) != 1 || len(p.Flushes) != 1 || p.Flushes[0].Target == 0 {
		t.Fatalf("the directed stimulus does not exercise what the test needs: %d records, %d faults, %+v", len(p.Logs[1]), len(p.Faults), p.Flushes)
	}
	cases := []struct {
		name, block string
		corrupt     func(o *Observation)
	}{
		{"one byte of a record", "iommu.log", func(o *Observation) { o.Logs[1][0].Data[3] ^= 1 }},
		{"a record header field", "iommu.log", func(o *Observation) { o.Logs[1][1].Header.Tag++ }},
		{"reordered records", "iommu.log", func(o *Observation) { o.Logs[1][0], o.Logs[1][1] = o.Logs[1][1], o.Logs[1][0] }},
		{"a lost record", "iommu.log", func(o *Observation) { o.Logs[1] = o.Logs[1][:1] }},
		{"a duplicated record", "iommu.log", func(o *Observation) { o.Logs[1] = append(o.Logs[1], o.Logs[1][1]) }},
		{"a flush completed early", "iommu.flush", func(o *Observation) { o.CompletedAt[3] = 3000 }},
		{"a wrong fault reason", "iommu.faults", func(o *Observation) { o.Faults[0].FR = 0x6 }},
		{"a missing fault", "iommu.faults", func(o *Observation) { o.Faults = nil }},
		{"completion data", "iommu.completion", func(o *Observation) { o.Completions[1].Data[0] ^= 0x80 }},
		{"completion status", "iommu.completion", func(o *Observation) { o.Completions[1] = Completion{Status: tlp.UR} }},
		{"a lost completion", "iommu.completion", func(o *Observation) { delete(o.Completions, 1) }},
		{"memory", "iommu.memory", func(o *Observation) { o.Memory[FrameBase][9] ^= 1 }},
		{"a TLP never taken", "iommu", func(o *Observation) { o.Accepted = o.Accepted[:3] }},
		{"the overflow flag", "iommu.faults", func(o *Observation) { o.Overflow = true }},
		{"no fault event", "iommu.msi", func(o *Observation) { o.MSIs = nil }},
		{"an MSI for an SP log", "iommu.msi", func(o *Observation) { o.MSIs = append(o.MSIs, MSI{Addr: LogMSIAddr, Data: 1}) }},
		{"an MSI's data", "iommu.msi", func(o *Observation) { o.MSIs[0].Data++ }},
		{"the mirrored tail short", "iommu.sp", func(o *Observation) { o.SP = o.SP[:1] }},
		{"the mirrored tail going back", "iommu.sp", func(o *Observation) { o.SP[0], o.SP[1] = o.SP[1], o.SP[0] }},
		{"another log's slot", "iommu.sp", func(o *Observation) { o.SP[1].Slot = 2 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, o := directed()
			tc.corrupt(o)
			mm := Compare(s, Predict(s, good.Accepted), o)
			if mm == nil {
				t.Fatal("not reported")
			}
			if mm.Block != tc.block {
				t.Fatalf("reported as %v, want block %s", mm, tc.block)
			}
		})
	}
}

// The shrinker reduces a long failing stimulus to the few operations that
// make it fail.
func TestShrinkerFindsTheCulprit(t *testing.T) {
	s := Generate(42)
	for len(s.Ops) < 40 {
		s.Ops = append(s.Ops, s.Ops...)
	}
	// "Fails" when it holds an AtomicOp and an MRd of more than 100 bytes.
	fails := func(c *Stimulus) bool {
		atomic, big := false, false
		for _, op := range c.Ops {
			atomic = atomic || op.TLP.Kind == tlp.FetchAdd || op.TLP.Kind == tlp.CAS
			big = big || op.TLP.Kind == tlp.MRd && op.TLP.EnabledBytes() > 100
		}
		return atomic && big
	}
	if !fails(s) {
		s.Ops = append(s.Ops, Op{Dev: 0, TLP: tlp.TLP{Kind: tlp.FetchAdd, Length: 2, Addr: PageBase, Data: make([]byte, 8)}},
			Op{Dev: 0, TLP: tlp.NewMemRead(s.Devices[0].ID, 999, PageBase, 500)})
	}
	small := Shrink(s, fails)
	if !fails(small) || len(small.Ops) != 2 {
		t.Fatalf("shrunk %d operations to %d (still fails: %v), want the 2 that matter", len(s.Ops), len(small.Ops), fails(small))
	}
}

// The golden model imports only format-only packages of the project: it
// cannot check the models against themselves.
func TestImportsNoModel(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/aaemu/aaemu/verify": true, "github.com/aaemu/aaemu/pcie/tlp": true,
		"github.com/aaemu/aaemu/iommu/pte": true, "github.com/aaemu/aaemu/iommu/record": true,
		// The reader of replay files: errors and decoding, no model.
		"github.com/aaemu/aaemu/internal/input": true,
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/aaemu/aaemu") && !allowed[pkg] {
			t.Errorf("verify depends on %s", pkg)
		}
	}
}

// The golden model places records as §2.4 says: PAD at the end of the ring,
// sequence numbers counting it, and a skip without PAD when less than a
// header remains.
func TestGoldenRingPlacement(t *testing.T) {
	l := &goldLog{size: 256}
	var recs []Record
	for i := 0; i < 3; i++ { // 3 × 80 = 240: 16 bytes left, less than a header
		recs = l.append(recs, record.Header{Kind: record.Put}, make([]byte, 48))
	}
	recs = l.append(recs, record.Header{Kind: record.Put}, make([]byte, 48))
	if len(recs) != 4 || recs[3].Seq != 3 || l.reserved != 256+80 {
		t.Fatalf("skip without PAD: %d records, last seq %d, reserved %d", len(recs), recs[3].Seq, l.reserved)
	}
	recs = l.append(recs, record.Header{Kind: record.Put}, make([]byte, 160)) // 192 bytes at 80: past the end
	if len(recs) != 6 || recs[4].Kind != record.Pad || recs[4].Length != 256-80 || recs[5].Seq != 5 {
		t.Fatalf("PAD: %d records: %+v", len(recs), recs[len(recs)-1].Header)
	}
}
