package conformance

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verify"
)

// Many seeds agree with the golden model.
func TestSeedsAgree(t *testing.T) {
	changes := 0 // driver calls made during the runs
	defer func() {
		if !t.Failed() && changes < 1000 {
			t.Fatalf("only %d driver calls during the runs", changes)
		}
	}()
	for seed := uint64(1); seed <= 2000; seed++ {
		s := verify.Generate(seed)
		changes += len(s.Changes)
		mm, _, err := Check(s, Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if mm != nil {
			t.Fatalf("seed %d: %v", seed, mm)
		}
	}
}

// API-level: puts, gets and active flushes of one process agree with the
// golden model.
func TestAPISeedsAgree(t *testing.T) {
	records, gets, failed, flushes, atomics, sends, rail1, ints := 0, 0, 0, 0, 0, 0, 0, 0
	for seed := uint64(1); seed <= 60; seed++ {
		s := verify.GenerateAPI(seed)
		obs, err := RunAPI(s)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		p := verify.PredictAPI(s)
		if mm := verify.CompareAPI(s, p, obs); mm != nil {
			t.Fatalf("seed %d: %v", seed, mm)
		}
		for _, l := range obs.Logs {
			records += len(l)
			for _, r := range l {
				if r.Requester == verify.APIRequesterOf(1) {
					rail1++
				}
			}
		}
		for _, l := range s.Logs {
			if l.Mode == 1 && len(obs.Logs[l.IUID]) > 0 {
				ints++
			}
		}
		gets, failed, flushes = gets+len(obs.Gets), failed+len(obs.Failed), flushes+len(obs.Flushes)
		atomics, sends = atomics+len(obs.Atomics), sends+len(obs.Recvs)
		// A corrupted observation is caught.
		for i, g := range obs.Gets {
			if len(g) > 0 {
				g[0] ^= 1
				if verify.CompareAPI(s, p, obs) == nil {
					t.Fatalf("seed %d: a corrupted get (op %d) was not reported", seed, i)
				}
				break
			}
		}
	}
	if records == 0 || gets == 0 || failed == 0 || flushes == 0 || atomics == 0 || sends == 0 || rail1 == 0 || ints == 0 {
		t.Fatalf("the stimuli exercised %d records, %d gets, %d refused gets or atomics, %d flushes, %d atomics, %d sends, %d records of the second NIC, %d Int logs with records",
			records, gets, failed, flushes, atomics, sends, rail1, ints)
	}
	t.Logf("%d records (%d of the second NIC), %d gets, %d refused gets or atomics, %d active flushes, %d atomics, %d sends, %d Int logs with records agree",
		records, rail1, gets, failed, flushes, atomics, sends, ints)
}

// A refused atomic whose NAK the wire lost is sent again: the responder
// answers the duplicate with the NAK again, never with a result (the NIC
// once answered it with an ATOMIC ACKNOWLEDGE of 0). The file is the
// shrunk stimulus of the API seed that found it: two refused
// fetch-and-adds around a put, on a wire losing 3 % of frames.
func TestAPIRefusedAtomicSentAgain(t *testing.T) {
	b, err := os.ReadFile("testdata/api-refused-atomic-again.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := verify.ParseAPI("api-refused-atomic-again.json", b)
	if err != nil {
		t.Fatal(err)
	}
	mm, obs, err := CheckAPIWith(s, nil, Options{})
	if err != nil || mm != nil {
		t.Fatalf("%v %v", err, mm)
	}
	if !obs.Failed[2] || obs.Events["duplicates"] == 0 {
		t.Fatalf("op 2 failed = %v after %d duplicates received, want the refused atomic sent again and refused again", obs.Failed[2], obs.Events["duplicates"])
	}
}

// An Int log whose handler takes a microsecond a record: the core takes
// the log's next MSI while the handler runs, and that one must not drain
// the log from the same head again (the records came twice, from the
// second with sequence number 0 again). The file is the shrunk stimulus
// of the API seed that found it: one put of 1,496 bytes, eight records.
func TestAPIIntHandlerNotReentered(t *testing.T) {
	b, err := os.ReadFile("testdata/api-int-slow-handler.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := verify.ParseAPI("api-int-slow-handler.json", b)
	if err != nil {
		t.Fatal(err)
	}
	mm, obs, err := CheckAPIWith(s, nil, Options{})
	if err != nil || mm != nil {
		t.Fatalf("%v %v", err, mm)
	}
	if n := len(obs.Logs[2]); n != 8 || obs.Events["log_msis"] < 2 {
		t.Fatalf("%d records after %d MSIs, want 8 records and more than one MSI", n, obs.Events["log_msis"])
	}
}

// FuzzReplay: no replay file makes `aaemu verify --replay` panic or hang:
// a file is refused with an error that names the file, or it is a
// stimulus the harness runs (here for a short simulated time) and the
// golden model predicts.
func FuzzReplay(f *testing.F) {
	s, _ := json.MarshalIndent(verify.Generate(3), "", " ")
	f.Add(s)
	for seed := uint64(1); seed <= 3; seed++ {
		b, _ := json.Marshal(verify.Generate(seed))
		f.Add(b)
	}
	f.Add([]byte(`{"seed": 1, "devices": [{"id": 256, "attached": true}], "consumer_period_ns": 2305843009213693952, "fault_records": 4}`))
	f.Add([]byte(`{"devices": [{"id": 256}], "logs": [{"iuid": 1, "size": 0}], "consumer_period_ns": 10, "fault_records": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := verify.Parse("r.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "r.json") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		if _, _, err := Check(s, Options{Limit: 200 * sim.US}); err != nil && strings.Contains(err.Error(), "panic") {
			t.Fatal(err)
		}
	})
}

// Driver calls that remove a log, register it again and clear the fault
// records run on the IOMMU as the golden model predicts: records after the
// removal fault for want of a log, the new ring starts at sequence 0,
// software reads and clears the records and PFO, and faults after the
// clear raise the fault event again.
func TestLogAndFaultCallsAgree(t *testing.T) {
	id := tlp.NewID(1, 0, 0)
	s := &verify.Stimulus{Seed: 1, FaultRecords: 2, ConsumerNS: 100,
		Devices: []verify.Device{{ID: id, Attached: true}},
		Logs:    []verify.Log{{IUID: 0, Size: 4096, Mode: 0}},
		Pages: []verify.Page{
			{IOVA: verify.PageBase, PA: verify.FrameBase, Mapped: true, Bits: pte.R | pte.W | pte.WL | pte.E},
			{IOVA: verify.PageBase + 0x1000, PA: verify.FrameBase + 0x1000},
		},
		Changes: []verify.Change{{After: 4, Kind: "unregister"}, {After: 4, Kind: "clearfaults"},
			{After: 6, Kind: "register", Size: 512}},
	}
	// Records of IUID 0 (ops 0, 4, 6), faults (ops 1, 2, 3 overflowing
	// two registers, 5).
	for i, pg := range []uint64{0, 1, 1, 1, 0, 1, 0} {
		s.Ops = append(s.Ops, verify.Op{Dev: 0, TLP: tlp.NewMemWrite(id, uint16(i), verify.PageBase+pg*0x1000+8, []byte("abcd"))})
	}
	mm, obs, err := Check(s, Options{})
	if err != nil || mm != nil {
		t.Fatalf("%v %v", err, mm)
	}
	var seqs []uint64
	for _, r := range obs.Logs[0] {
		seqs = append(seqs, r.Seq)
	}
	events := 0
	for _, m := range obs.MSIs {
		if m.Data == verify.FaultMSIData {
			events++
		}
	}
	if !slices.Equal(seqs, []uint64{0, 0}) || len(obs.Faults) != 4 || obs.Faults[2].FR != 0x82 || obs.Cleared != 1 || obs.Overflow || events != 2 {
		t.Fatalf("records %v, faults %+v, cleared %d, overflow %v, %d fault events", seqs, obs.Faults, obs.Cleared, obs.Overflow, events)
	}
}

// Devices of two domains reach the same IOVA on their own frames with
// their own permissions, one after the other, as the golden model says:
// neither the IOTLB nor the context cache lets one domain see the other's.
func TestDomainsAgree(t *testing.T) {
	d1, d2 := tlp.NewID(1, 0, 0), tlp.NewID(12, 0, 0)
	s := &verify.Stimulus{Seed: 1, FaultRecords: 4, ConsumerNS: 100,
		Devices: []verify.Device{{ID: d1, Attached: true}, {ID: d2, Attached: true, Domain: 2}},
		Pages: []verify.Page{
			{IOVA: verify.PageBase, PA: verify.FrameBase, Mapped: true, Bits: pte.R | pte.W},
			{IOVA: verify.PageBase, PA: verify.Domain2Frames, Mapped: true, Bits: pte.R, Domain: 2},
		},
	}
	for i, d := range []int{0, 1, 0, 1} {
		id := s.Devices[d].ID
		s.Ops = append(s.Ops, verify.Op{Dev: d, TLP: tlp.NewMemWrite(id, uint16(2*i), verify.PageBase+8, []byte("abcd"))},
			verify.Op{Dev: d, TLP: tlp.NewMemRead(id, uint16(2*i+1), verify.PageBase+8, 4)})
	}
	mm, obs, err := Check(s, Options{})
	if err != nil || mm != nil {
		t.Fatalf("%v %v", err, mm)
	}
	if string(obs.Completions[1].Data) != "abcd" || string(obs.Completions[3].Data) == "abcd" {
		t.Fatalf("domain 1 read %q, domain 2 %q", obs.Completions[1].Data, obs.Completions[3].Data)
	}
}

// Driver calls on domain 2's page at an IOVA domain 1 maps too, and a
// large page split into 4 KB pages that log and merged back, run on the
// IOMMU as the golden model predicts: each call seen by the TLPs after it
// (the IOTLB held their 4 KB fractures from before), domain 1's entry for
// the IOVA left as it was.
func TestDomain2AndResizeCallsAgree(t *testing.T) {
	d1, d2 := tlp.NewID(1, 0, 0), tlp.NewID(12, 0, 0)
	s := &verify.Stimulus{Seed: 1, FaultRecords: 4, ConsumerNS: 100,
		Devices: []verify.Device{{ID: d1, Attached: true}, {ID: d2, Attached: true, Domain: 2}},
		Logs:    []verify.Log{{IUID: 7, Size: 4096}},
		Pages: []verify.Page{
			{IOVA: verify.PageBase, PA: verify.FrameBase, Mapped: true, Bits: pte.R | pte.W},
			{IOVA: verify.PageBase, PA: verify.Domain2Frames, Mapped: true, Bits: pte.R, Domain: 2},
			{IOVA: verify.Large2MBase, PA: verify.Large2MFrames, Mapped: true, Bits: pte.R | pte.W, Size: verify.Page2M},
		},
		Changes: []verify.Change{
			{After: 4, Kind: "setbits", Domain: 2, IOVA: verify.PageBase, Bits: pte.R | pte.W},
			{After: 4, Kind: "split", IOVA: verify.Large2MBase, Size: 4096, Bits: pte.R | pte.W | pte.WL | pte.E, IUID: 7},
			{After: 8, Kind: "merge", IOVA: verify.Large2MBase, Size: verify.Page2M, Bits: pte.R},
		},
	}
	// Each round: domain 2 writes and domain 1 reads the shared IOVA, and
	// domain 1 writes the large page's last 4 KB.
	last := uint64(verify.Large2MBase + verify.Page2M - 4096 + 64)
	for i := uint16(0); i < 3; i++ {
		s.Ops = append(s.Ops,
			verify.Op{Dev: 1, TLP: tlp.NewMemWrite(d2, 4*i, verify.PageBase+8, []byte{'a' + byte(i)})},
			verify.Op{Dev: 0, TLP: tlp.NewMemRead(d1, 4*i+1, verify.PageBase+8, 1)},
			verify.Op{Dev: 0, TLP: tlp.NewMemWrite(d1, 4*i+2, last, []byte{'A' + byte(i)})},
			verify.Op{Dev: 0, TLP: tlp.NewMemRead(d1, 4*i+3, last, 1)})
	}
	mm, obs, err := Check(s, Options{})
	if err != nil || mm != nil {
		t.Fatalf("%v %v", err, mm)
	}
	d2frame := obs.Memory[verify.Domain2Frames][8]
	if d2frame != 'c' || obs.Memory[verify.FrameBase][8] == 'c' || len(obs.Logs[7]) != 1 || string(obs.Completions[11].Data) != "B" {
		t.Fatalf("domain 2's frame holds %q, %d records, the large page reads %q", d2frame, len(obs.Logs[7]), obs.Completions[11].Data)
	}
}

// Software clearing the fault records the moment the IOMMU takes a TLP,
// with faults of the TLPs before it still in flight: the run agrees with
// the golden model, which places the clear among the faults where the
// reads say it came.
func TestRacingClearAgrees(t *testing.T) {
	id := tlp.NewID(1, 0, 0)
	s := &verify.Stimulus{Seed: 1, FaultRecords: 2, ConsumerNS: 100,
		Devices: []verify.Device{{ID: id, Attached: true}},
		Pages:   []verify.Page{{IOVA: verify.PageBase, PA: verify.FrameBase}},
		Changes: []verify.Change{{After: 3, Kind: "clearfaults", Racing: true}, {After: 6, Kind: "clearfaults", Racing: true}},
	}
	for i := range 8 { // every one a fault: the page is not mapped
		s.Ops = append(s.Ops, verify.Op{Dev: 0, TLP: tlp.NewMemRead(id, uint16(i), verify.PageBase+uint64(i)*8, 4)})
	}
	mm, obs, err := Check(s, Options{})
	if err != nil || mm != nil {
		t.Fatalf("%v %v", err, mm)
	}
	// The third read's fault was still in flight at the first clear: it
	// found two records and PFO clear (had the fault come first, PFO would
	// have been set).
	if len(obs.ClearsRead) != 2 || obs.ClearsRead[0] != 2 || obs.ClearsPFO[0] {
		t.Fatalf("software read %v records at the clears, finding PFO %v", obs.ClearsRead, obs.ClearsPFO)
	}
	t.Logf("software read %v records at the clears, finding PFO %v", obs.ClearsRead, obs.ClearsPFO)
}

// A racing page call (setbits, map, unmap made the moment the IOMMU takes
// op After-1) is visible to exactly the TLPs the IOMMU takes after it,
// those before After still in flight included: the golden model that
// places it there agrees with the machine, and one that places it after
// every TLP before After (as for a call at a quiet point) disagrees where
// a TLP in flight on its page was decided with the new tables.
func TestRacingPageCallPlaced(t *testing.T) {
	raced, refused := 0, 0
	for seed := uint64(1); seed <= 300; seed++ {
		s := verify.Generate(seed)
		mm, obs, err := Check(s, Options{})
		if err != nil || mm != nil {
			t.Fatalf("seed %d: %v %v", seed, err, mm)
		}
		c := verify.NewCoverage()
		c.Add(s, obs)
		if c.Hit("change/racing/in-flight/same-page") == 0 {
			continue
		}
		raced++
		quiet := *s
		quiet.Changes = append([]verify.Change(nil), s.Changes...)
		for i := range quiet.Changes {
			if quiet.Changes[i].RacesTables() {
				quiet.Changes[i].Racing = false
			}
		}
		if verify.Compare(&quiet, verify.Predict(&quiet, obs.Accepted), obs) != nil {
			refused++
		}
	}
	if raced == 0 || refused == 0 {
		t.Fatalf("%d seeds had a TLP in flight on a racing call's page, %d of them refused with the call at a quiet place", raced, refused)
	}
	t.Logf("%d seeds had a TLP in flight on a racing call's page; with the call at a quiet place the golden model refuses %d", raced, refused)
}

// A racing split, merge, detach or attach (made the moment the IOMMU takes
// op After-1) is placed as a racing page call is: the golden model that
// places it there agrees with the machine, and one that places the calls
// of that kind after every TLP before After refuses the seeds where a TLP
// in flight was decided with the new tables or context.
func TestRacingRemapAndAttachPlaced(t *testing.T) {
	const seeds = 300
	type count struct{ raced, refused int }
	got := map[string]*count{"split": {}, "merge": {}, "detach": {}, "attach": {}}
	for seed := uint64(1); seed <= seeds; seed++ {
		s := verify.Generate(seed)
		mm, obs, err := Check(s, Options{})
		if err != nil || mm != nil {
			t.Fatalf("seed %d: %v %v", seed, err, mm)
		}
		c := verify.NewCoverage()
		c.Add(s, obs)
		for _, kind := range []string{"split", "merge", "detach", "attach"} {
			if c.Hit("change/racing/"+kind+"/in-flight") == 0 {
				continue
			}
			got[kind].raced++
			quiet := *s
			quiet.Changes = append([]verify.Change(nil), s.Changes...)
			for i := range quiet.Changes {
				if quiet.Changes[i].Kind == kind {
					quiet.Changes[i].Racing = false
				}
			}
			if verify.Compare(&quiet, verify.Predict(&quiet, obs.Accepted), obs) != nil {
				got[kind].refused++
			}
		}
	}
	for _, kind := range []string{"split", "merge", "detach", "attach"} {
		g := got[kind]
		t.Logf("racing %s: %d of %d seeds had a TLP in flight; with the call at a quiet place the golden model refuses %d", kind, g.raced, seeds, g.refused)
		if g.raced == 0 {
			t.Errorf("racing %s: no seed had a TLP in flight", kind)
		}
	}
	// (An attach refused needs a TLP of the attached device in flight at
	// it: none of the seeds here has one.)
	for _, kind := range []string{"split", "merge", "detach"} {
		if got[kind].refused == 0 {
			t.Errorf("racing %s: no seed refused with the call at a quiet place", kind)
		}
	}
}

// A log's removal or registration never races: the driver frees or hands
// over the ring, so it first quiesces the log (every record reserved in it
// written and consumed), and the harness makes the call at that quiet
// point. What the verifier checks is that place: the golden model with a
// removal or registration moved one op earlier (before a TLP the IOMMU
// took before the call) refuses the machine's outcome wherever that TLP
// logged or would have logged into the log, and the stimulus refuses a
// racing one.
func TestLogCallsAtQuietPoint(t *testing.T) {
	const seeds = 300
	moved, refused := 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		s := verify.Generate(seed)
		early := *s
		early.Changes = append([]verify.Change(nil), s.Changes...)
		changed := false
		for i := range early.Changes {
			c := &early.Changes[i]
			if (c.Kind == "unregister" || c.Kind == "register") && c.After > 0 && (i == 0 || early.Changes[i-1].After < c.After) {
				c.After--
				changed = true
			}
		}
		if !changed {
			continue
		}
		if err := early.Validate(); err != nil {
			continue // the move broke an order the calls need
		}
		racing := *s
		racing.Changes = append([]verify.Change(nil), s.Changes...)
		for i := range racing.Changes {
			if c := &racing.Changes[i]; c.Kind == "unregister" || c.Kind == "register" {
				c.Racing = true
				if err := racing.Validate(); err == nil || !strings.Contains(err.Error(), "cannot race") {
					t.Fatalf("seed %d: a racing %s accepted: %v", seed, c.Kind, err)
				}
				c.Racing = false
			}
		}
		mm, obs, err := Check(s, Options{})
		if err != nil || mm != nil {
			t.Fatalf("seed %d: %v %v", seed, err, mm)
		}
		moved++
		if verify.Compare(&early, verify.Predict(&early, obs.Accepted), obs) != nil {
			refused++
		}
	}
	if moved == 0 || refused == 0 {
		t.Fatalf("%d seeds with a log call moved one op earlier, %d refused", moved, refused)
	}
	t.Logf("%d of %d seeds had a log removal or registration that could move one op earlier; the golden model refuses %d of them", moved, seeds, refused)
}
