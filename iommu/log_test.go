package iommu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

func fill(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// Several devices send interleaved multi-TLP active puts and active gets
// (whose completions interleave); every record the consumer sees is whole,
// in reservation order with consecutive sequence numbers, and never a hole.
func TestInterleavedDevicesNeverShowAHole(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 3)
	if err := s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 1 << 16}); err != nil {
		t.Fatal(err)
	}
	// Active-put pages and active-get pages for every device.
	put := Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: testIUID}
	get := Perm{Bits: pte.R | pte.RL | pte.RLD | pte.E, IUID: testIUID}
	if err := s.drv.Map(1, testIOVA, testPA, 16*4096, 4096, put); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.Map(1, testIOVA+0x10_0000, testPA+0x10_0000, 16*4096, 4096, get); err != nil {
		t.Fatal(err)
	}
	s.mem.Write(testPA+0x10_0000, fill(16*4096, 9))
	// Each device: a 1 KB active put as 4 MWr of 256 bytes and a 2 KB
	// active get as 4 MRd of 512 bytes, interleaved with the other devices.
	wantData := map[uint64][]byte{} // by IOVA
	for d := range s.devs {
		id := s.devs[d].id
		for i := 0; i < 4; i++ {
			a := uint64(testIOVA + d*0x1000 + i*256)
			data := fill(256, byte(d*50+i))
			wantData[a] = data
			s.send(d, tlp.NewMemWrite(id, 0, a, data))
			ga := uint64(testIOVA + 0x10_0000 + d*0x1000 + i*512 + 4) // unaligned: partial BEs
			s.send(d, tlp.NewMemRead(id, uint16(d*8+i), ga, 500))
			wantData[ga] = fill(16*4096, 9)[ga-testIOVA-0x10_0000 : ga-testIOVA-0x10_0000+500]
		}
	}
	c := s.addConsumer(testIUID, 20*sim.NS)
	c.check = func(r recordWithData, now sim.Tick) {
		w := wantData[r.IOVA]
		if !bytes.Equal(r.Data, w) {
			t.Errorf("record %v at %#x seen at %v with %d bytes, not the %d logged: a hole was visible", r.Kind, r.IOVA, now, len(r.Data), len(w))
		}
	}
	s.e.Run(50 * sim.US)
	c.stop = true
	if len(c.seen) != 24 {
		t.Fatalf("saw %d records, want 24", len(c.seen))
	}
	for i, r := range c.seen {
		if r.Seq != uint64(i) {
			t.Fatalf("record %d has sequence %d: out of reservation order", i, r.Seq)
		}
	}
	// The reads' completions went back to their own devices, whole.
	for d, dev := range s.devs {
		var got int
		for _, p := range dev.got {
			got += p.TLP.PayloadBytes()
			if p.TLP.RequesterID != dev.id {
				t.Fatalf("device %d got a completion for %v", d, p.TLP.RequesterID)
			}
		}
		if got < 4*500 {
			t.Fatalf("device %d got %d bytes of completions", d, got)
		}
	}
	if s.m.tagBuf.Occupancy() != 0 {
		t.Fatal("tag buffer entries leaked")
	}
	if s.m.stHoles.Value() == 0 {
		t.Fatal("no record ever completed behind a hole: the test did not interleave")
	}
	t.Logf("%d records completed behind a hole", s.m.stHoles.Value())
}

// A log too small for a burst: the IOMMU stops taking the device's TLPs
// (its link stalls for credits), the consumer drains, and every record
// arrives, in order, with a PAD where the ring wraps. Nothing is dropped.
func TestFullLogBackpressuresThroughTheLink(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 0)
	if err := s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 1000}); err != nil {
		t.Fatal(err)
	}
	// A device behind a real PCIe link with small credits.
	dev := &device{id: tlp.NewID(1, 0, 0)}
	dev.u = s.clk.Add("nic", dev)
	spec := pcie.DefaultLinkSpec()
	spec.Credits = pcie.Credits{PH: 4, PD: 64}
	up, err := pcie.NewDir(s.clk, "link.up", spec, dev.u, s.m.Unit())
	if err != nil {
		t.Fatal(err)
	}
	back := sim.NewChan[pcie.Packet](s.m.Unit(), dev.u, "link.down", 4)
	dev.out, dev.in = up.In, back
	s.m.AddPort(up.Out, back)
	s.devs = append(s.devs, dev)
	if err := s.drv.Attach(dev.id, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: testIUID}); err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := 0; i < n; i++ {
		s.send(0, tlp.NewMemWrite(dev.id, 0, testIOVA+uint64(i%32)*64, fill(64, byte(i))))
	}
	c := s.addConsumer(testIUID, 2*sim.US) // slow: the log fills between visits
	s.e.Run(1 * sim.MS)
	c.stop = true
	if len(c.seen) != n {
		t.Fatalf("consumer saw %d of %d records", len(c.seen), n)
	}
	for i, r := range c.seen {
		if !bytes.Equal(r.Data, fill(64, byte(i))) {
			t.Fatalf("record %d carries the wrong data", i)
		}
	}
	if s.m.stStallCycles.Value() == 0 {
		t.Fatal("the IOMMU never stalled: the log was never full")
	}
	if st, _ := s.e.Stats().Get("link.up.credit_stall_posted"); st.(*sim.Counter).Value() == 0 {
		t.Fatal("the link never waited for credits: backpressure did not reach the device")
	}
	// Sequence numbers count PAD records too: the ring wrapped.
	if last := c.seen[n-1].Seq; last <= uint64(n-1) {
		t.Fatalf("last sequence %d: no PAD record, the ring never wrapped", last)
	}
}

// The legacy fault log drops and sets the overflow flag, as VT-d says.
func TestFaultLogOverflows(t *testing.T) {
	spec := DefaultSpec()
	spec.FaultRecords = 4
	s := newSystem(t, spec, 1)
	// E=0 logged writes: each one is a fault record.
	if err := s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.W | pte.WL}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		s.send(0, tlp.NewMemWrite(s.devs[0].id, 0, testIOVA+uint64(i)*8, fill(8, 1)))
	}
	s.run()
	pfo, ppf, fri := s.m.FaultStatus()
	if !pfo || !ppf || fri != 0 {
		t.Fatalf("PFO %v PPF %v FRI %d, want overflow with records pending from 0", pfo, ppf, fri)
	}
	recs := s.m.FaultRecords()
	for i, r := range recs {
		if !r.F || r.FR != FRAALoggedWrite {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if s.m.stFaults.Value() != 4 || s.m.stFaultsDropped.Value() != 6 {
		t.Fatalf("%d recorded, %d dropped", s.m.stFaults.Value(), s.m.stFaultsDropped.Value())
	}
	// Memory was written all the same: W=1.
	got := make([]byte, 8)
	s.mem.Read(testPA+72, got)
	if !bytes.Equal(got, fill(8, 1)) {
		t.Fatal("the permitted write was lost")
	}
	// One fault event for the first record; none while records are pending.
	if len(s.irq.got) != 1 {
		t.Fatalf("%d fault events", len(s.irq.got))
	}
	// Software clears the records and PFO: faults are recorded again.
	for i := range recs {
		s.m.ClearFault(i)
	}
	s.m.ClearOverflow()
	s.send(0, tlp.NewMemWrite(s.devs[0].id, 0, testIOVA, fill(8, 2)))
	s.run()
	if _, ppf, _ := s.m.FaultStatus(); !ppf || len(s.irq.got) != 2 {
		t.Fatalf("after clearing: PPF %v, %d events", ppf, len(s.irq.got))
	}
}

// Isolation: a device without a context entry, an unmapped IOVA, a page
// whose IUID has no log, a device of another domain: blocked and faulted,
// never written to memory or to another log.
func TestIsolation(t *testing.T) {
	cases := []struct {
		name  string
		setup func(s *system)
		fr    uint8
	}{
		{"device on a bus without a root entry", func(s *system) {
			s.devs[0].id = tlp.NewID(9, 0, 0)
		}, FRRootNotPresent},
		{"device without a context entry", func(s *system) { s.drv.Detach(s.devs[0].id) }, FRCtxNotPresent},
		{"unmapped IOVA", func(s *system) { s.drv.Unmap(1, testIOVA, 4096) }, FRWrite},
		{"IUID without an access log", func(s *system) {
			s.drv.SetBits(1, testIOVA, Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: 7})
		}, FRAANoAccessLog},
		{"device of another domain", func(s *system) { s.drv.Attach(s.devs[0].id, 2) }, FRWrite},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem(t, DefaultSpec(), 1)
			s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 4096})
			if err := s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.R | pte.W}); err != nil {
				t.Fatal(err)
			}
			tc.setup(s)
			s.send(0, tlp.NewMemWrite(s.devs[0].id, 0, testIOVA, []byte("secret!!")))
			s.run()
			got := make([]byte, 8)
			s.mem.Read(testPA, got)
			if string(got) == "secret!!" {
				t.Fatal("the write reached memory")
			}
			if recs := s.records(testIUID, false); len(recs) != 0 {
				t.Fatalf("%d records in IUID %d's log", len(recs), testIUID)
			}
			f := s.m.FaultRecords()[0]
			if !f.F || f.FR != tc.fr || f.SID != s.devs[0].id {
				t.Fatalf("fault %+v, want reason %#x", f, tc.fr)
			}
		})
	}
}

// A flush get completes only after the handler consumed every record that
// came before it.
func TestFlushWaitsForTheConsumer(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 1)
	s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 1 << 16})
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: testIUID})
	flushIOVA := uint64(testIOVA + 0x1000)
	s.drv.Map(1, flushIOVA, testPA+0x1000, 4096, 4096, Perm{Bits: pte.R})
	if err := s.drv.RegisterFlushPage(testIUID, flushIOVA); err != nil {
		t.Fatal(err)
	}
	id := s.devs[0].id
	for i := 0; i < 5; i++ {
		s.send(0, tlp.NewMemWrite(id, 0, testIOVA+uint64(i)*64, fill(64, byte(i))))
	}
	s.send(0, tlp.NewMemRead(id, 9, flushIOVA, 4))
	c := s.addConsumer(testIUID, 3*sim.US)
	c.u.WakeAt(5 * sim.US) // the handler first runs at 5 µs
	var consumedAt sim.Tick
	c.check = func(r recordWithData, now sim.Tick) {
		if r.Seq == 4 {
			consumedAt = now
		}
	}
	s.e.Run(50 * sim.US)
	c.stop = true
	d := s.devs[0]
	if len(d.got) != 1 || d.got[0].TLP.Tag != 9 {
		t.Fatalf("flush completion missing: %d completions", len(d.got))
	}
	if consumedAt == 0 || d.gotAt[0] <= consumedAt {
		t.Fatalf("flush completed at %v, the handler consumed the last record at %v", d.gotAt[0], consumedAt)
	}
	if s.m.stFlushes.Value() != 1 {
		t.Fatal("flush not counted")
	}
}

// After the driver changes a PTE, the next TLP sees the new bits: the
// driver invalidates the IOTLB.
func TestPTEChangeIsSeenAfterInvalidation(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 1)
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.R | pte.W})
	id := s.devs[0].id
	s.send(0, tlp.NewMemWrite(id, 0, testIOVA, []byte("first...")))
	s.run()
	s.drv.SetBits(1, testIOVA, Perm{Bits: pte.R})
	s.send(0, tlp.NewMemWrite(id, 0, testIOVA, []byte("second..")))
	s.run()
	got := make([]byte, 8)
	s.mem.Read(testPA, got)
	if string(got) != "first..." {
		t.Fatalf("memory holds %q: a stale IOTLB entry let the second write through", got)
	}
	if s.m.stTLBHits.Value() != 0 {
		t.Fatal("the second write hit a stale IOTLB entry")
	}
}

// 2 MB and 1 GB pages translate with their offset bits.
func TestLargePages(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 1)
	if err := s.drv.Map(1, 0x4000_0000, 0x8000_0000, 2<<20, 2<<20, Perm{Bits: pte.R | pte.W}); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.Map(1, 0x80_0000_0000, 0x1_0000_0000, 1<<30, 1<<30, Perm{Bits: pte.R | pte.W}); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.Map(1, 0x80_0000_0000+1<<30, 0, 4096, 4096, Perm{Bits: pte.R, IUID: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.Map(1, 0x1_0000_0000, 0, 2<<20, 2<<20, Perm{Bits: pte.R | pte.WL}); err == nil {
		t.Fatal("AA bits on a 2 MB page accepted")
	}
	id := s.devs[0].id
	s.send(0, tlp.NewMemWrite(id, 0, 0x4000_0000+0x12_3450, []byte("two MB..")))
	s.send(0, tlp.NewMemWrite(id, 0, 0x80_0000_0000+0x2345_6780, []byte("one GB..")))
	s.run()
	for _, c := range []struct {
		pa   uint64
		want string
	}{{0x8000_0000 + 0x12_3450, "two MB.."}, {0x1_0000_0000 + 0x2345_6780, "one GB.."}} {
		got := make([]byte, 8)
		s.mem.Read(c.pa, got)
		if string(got) != c.want {
			t.Errorf("%#x holds %q", c.pa, got)
		}
	}
}

// The three notification modes: Poll publishes the tail in memory, Int
// sends the log's MSI, SP mirrors the tail into the scratchpad port.
func TestNotificationModes(t *testing.T) {
	for _, mode := range []Notify{Poll, Int, SP} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newSystem(t, DefaultSpec(), 1)
			sp := &spSink{}
			su := s.clk.Add("scratchpad", sp)
			sp.in = sim.NewChan[SPWrite](s.m.Unit(), su, "iommu.sp", 4)
			s.m.SP = sp.in
			s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 4096, Mode: mode, MSIAddr: 0xfee0_1000, MSIData: 0x41, SPSlot: 3})
			s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.W | pte.WL | pte.E, IUID: testIUID})
			s.send(0, tlp.NewMemWrite(s.devs[0].id, 0, testIOVA, fill(8, 0)))
			s.run()
			tail := s.mem.Load64(s.drv.LogEntryAddr(testIUID) + offTail)
			if tail != record.HeaderSize {
				t.Fatalf("tail in memory %d, want one header", tail)
			}
			msis := 0
			for _, p := range s.irq.got {
				if p.TLP.Addr == 0xfee0_1000 && p.TLP.Data[0] == 0x41 {
					msis++
				}
			}
			if (mode == Int) != (msis == 1) {
				t.Fatalf("%d log MSIs in mode %v", msis, mode)
			}
			if (mode == SP) != (len(sp.got) == 1 && sp.got[0].Slot == 3 && sp.got[0].Tail == tail) {
				t.Fatalf("scratchpad writes %+v in mode %v", sp.got, mode)
			}
		})
	}
}

type spSink struct {
	in  *sim.Chan[SPWrite]
	got []SPWrite
}

func (s *spSink) Tick(sim.Tick) bool {
	for s.in.Valid() {
		s.got = append(s.got, s.in.Recv())
	}
	return false
}

// AtomicOps need R and W; without them they are blocked with UR and logged
// by the write bits with their operands.
func TestAtomics(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 1)
	s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 4096})
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.R | pte.W})
	s.drv.Map(1, testIOVA+0x1000, testPA+0x1000, 4096, 4096, Perm{Bits: pte.W | pte.WLD | pte.E, IUID: testIUID})
	s.mem.Store64(testPA+8, 40)
	id := s.devs[0].id
	add := tlp.TLP{Kind: tlp.FetchAdd, Length: 2, RequesterID: id, Tag: 1, Addr: testIOVA + 8, Data: []byte{2, 0, 0, 0, 0, 0, 0, 0}}
	blocked := add
	blocked.Tag, blocked.Addr = 2, testIOVA+0x1008
	s.send(0, add, blocked)
	s.run()
	if v := s.mem.Load64(testPA + 8); v != 42 {
		t.Fatalf("FetchAdd left %d", v)
	}
	d := s.devs[0]
	if len(d.got) != 2 || d.got[0].TLP.Status != tlp.SC || d.got[0].TLP.Data[0] != 40 || d.got[1].TLP.Status != tlp.UR {
		t.Fatalf("completions %v", d.got)
	}
	recs := s.records(testIUID, false)
	if len(recs) != 1 || recs[0].Kind != record.Atomic || recs[0].Flags&record.FlagBlocked == 0 || !bytes.Equal(recs[0].Data, blocked.Data) {
		t.Fatalf("records %+v", recs)
	}
}

func TestSpecValidation(t *testing.T) {
	for _, mut := range []func(*Spec){
		func(s *Spec) { s.IOTLBWays = 0 },
		func(s *Spec) { s.FaultRecords = 0 },
		func(s *Spec) { s.RootTable = 0x123 },
		func(s *Spec) { s.LogCAMEntries = 0 },
	} {
		s := DefaultSpec()
		mut(&s)
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
}

// Multi-TLP active puts from several devices: each port streams its
// payload while the others' headers are processed, so a short put reserved
// later finishes before a long one reserved earlier. The visible tail waits
// at the hole; the consumer sees every record whole, in reservation order.
func TestInterleavedActivePuts(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 3)
	if err := s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 1 << 16}); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.Map(1, testIOVA, testPA, 16*4096, 4096, Perm{Bits: pte.WLD | pte.E, IUID: testIUID}); err != nil {
		t.Fatal(err)
	}
	sizes := []int{1024, 64, 256} // per device: an RDMA write of 4 TLPs each
	want := map[uint64][]byte{}
	for d, size := range sizes {
		for i := 0; i < 4; i++ {
			a := uint64(testIOVA + d*0x4000 + i*size)
			data := fill(size, byte(16*d+i))
			want[a] = data
			s.send(d, tlp.NewMemWrite(s.devs[d].id, 0, a, data))
		}
	}
	c := s.addConsumer(testIUID, 7*sim.NS)
	c.check = func(r recordWithData, now sim.Tick) {
		if !bytes.Equal(r.Data, want[r.IOVA]) {
			t.Errorf("record at %#x seen at %v incomplete", r.IOVA, now)
		}
	}
	s.e.Run(20 * sim.US)
	c.stop = true
	if len(c.seen) != 12 {
		t.Fatalf("saw %d of 12 records", len(c.seen))
	}
	perDev := map[uint16][]uint64{}
	for i, r := range c.seen {
		if r.Seq != uint64(i) {
			t.Fatalf("record %d has sequence %d", i, r.Seq)
		}
		perDev[r.Requester] = append(perDev[r.Requester], r.IOVA)
	}
	for d := range sizes {
		iovas := perDev[uint16(s.devs[d].id)]
		for i := 1; i < len(iovas); i++ {
			if iovas[i] <= iovas[i-1] {
				t.Fatalf("device %d's records out of order: %#x after %#x", d, iovas[i], iovas[i-1])
			}
		}
	}
	if s.m.stHoles.Value() == 0 {
		t.Fatal("no put finished behind a hole: the ports did not interleave")
	}
	t.Logf("%d records finished behind a hole", s.m.stHoles.Value())
}

// Remap splits a large page into smaller ones and merges them back: each
// step seen by the next translation (the IOTLB's fractures of the old
// pages dropped), the AA bits only on 4 KB pages, the old tables reused.
func TestRemap(t *testing.T) {
	s := newSystem(t, DefaultSpec(), 1)
	const iova, pa = 0x1_0000_0000, 0x2_0000_0000
	if err := s.drv.Map(1, iova, pa, 1<<30, 1<<30, Perm{Bits: pte.R | pte.W}); err != nil {
		t.Fatal(err)
	}
	id := s.devs[0].id
	var probe uint64 = iova + 700<<12 + 0x10 // in the 2nd 2 MB page, its 188th 4 KB
	inUse := func() int64 { return int64(s.drv.next-0x100_0000)/4096 - int64(len(s.drv.free)) }
	base := inUse()
	for _, c := range []struct {
		name     string
		size     uint64 // of the region remapped (at probe's address)
		pageSize uint64
		p        Perm
		write    bool  // the write that follows is allowed
		level    int   // of the leaf a walk finds
		err      bool  // Remap refuses it
		tables   int64 // table pages in use more than before the first call
	}{
		{"1 GB to 2 MB, read only", 1 << 30, 2 << 20, Perm{Bits: pte.R}, false, 2, false, 1},
		{"2 MB to 4 KB with AA bits", 2 << 20, 4096, Perm{Bits: pte.R | pte.W | pte.WL | pte.E, IUID: 5}, true, 1, false, 2},
		{"AA bits on a 2 MB page", 2 << 20, 2 << 20, Perm{Bits: pte.R | pte.WL}, true, 1, true, 2},
		{"4 KB merged into 2 MB", 2 << 20, 2 << 20, Perm{Bits: pte.R}, false, 2, false, 1},
		{"1 GB again", 1 << 30, 1 << 30, Perm{Bits: pte.R | pte.W}, true, 3, false, 0},
		{"1 GB to 4 KB", 1 << 30, 4096, Perm{Bits: pte.R | pte.W}, true, 1, false, 1 + 512},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The probe's translation is in the IOTLB before the call.
			if _, _, _, f := s.m.TranslateTL(id, probe, false); f != 0 {
				t.Fatalf("fault %#x before", f)
			}
			start := probe &^ (c.size - 1)
			err := s.drv.Remap(1, start, pa+start-iova, c.size, c.pageSize, c.p)
			if (err != nil) != c.err {
				t.Fatalf("Remap: %v", err)
			}
			// A write: the new permissions, found by a walk to the new leaf
			// (a refused call changes nothing: the IOTLB entry stays).
			got, hit, walked, f := s.m.TranslateTL(id, probe, true)
			if hit != c.err || (f == 0) != c.write || !c.err && f == 0 && walked != 4-c.level+1 {
				t.Fatalf("after: pa %#x, hit %v, walked %d levels, fault %#x", got, hit, walked, f)
			}
			if _, _, _, f := s.m.TranslateTL(id, probe, false); f != 0 {
				t.Fatalf("a read faults %#x", f)
			}
			if got, _, _, _ := s.m.TranslateTL(id, probe, false); got != pa+probe-iova {
				t.Fatalf("pa %#x, want %#x", got, pa+probe-iova)
			}
			if used := inUse() - base; used != c.tables {
				t.Fatalf("%d more tables in use, want %d", used, c.tables)
			}
		})
	}
}

// Spec.FlushWaiters: with one flush a page (the default) a second flush of
// the page waits at the head of its port's non-posted lane until the first
// is released, and a plain read behind it waits as long; with two the page
// holds both and the read passes. Either way each flush completes only
// after the handler consumed the records before it. One TLP at a time and
// in the pipeline.
func TestFlushWaiters(t *testing.T) {
	for _, c := range []struct {
		waiters, slots int
		readEarly      bool
	}{
		{0, 0, false}, {1, 0, false}, {2, 0, true},
		{0, 64, false}, {2, 64, true},
	} {
		t.Run(fmt.Sprintf("waiters %d slots %d", c.waiters, c.slots), func(t *testing.T) {
			spec := DefaultSpec()
			if c.slots > 0 {
				spec = pipelineSpec(c.slots, 16)
			}
			spec.FlushWaiters = c.waiters
			s := newSystem(t, spec, 1)
			s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 1 << 16})
			s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: testIUID})
			flushIOVA, plainIOVA := uint64(testIOVA+0x1000), uint64(testIOVA+0x2000)
			s.drv.Map(1, flushIOVA, testPA+0x1000, 4096, 4096, Perm{Bits: pte.R})
			s.drv.Map(1, plainIOVA, testPA+0x2000, 4096, 4096, Perm{Bits: pte.R})
			if err := s.drv.RegisterFlushPage(testIUID, flushIOVA); err != nil {
				t.Fatal(err)
			}
			id := s.devs[0].id
			for i := 0; i < 5; i++ {
				s.send(0, tlp.NewMemWrite(id, 0, testIOVA+uint64(i)*64, fill(64, byte(i))))
			}
			s.send(0, tlp.NewMemRead(id, 9, flushIOVA, 4), tlp.NewMemRead(id, 10, flushIOVA, 4), tlp.NewMemRead(id, 20, plainIOVA, 4))
			cons := s.addConsumer(testIUID, 3*sim.US) // first consumes at 3 µs
			var consumedAt sim.Tick
			cons.check = func(r recordWithData, now sim.Tick) {
				if r.Seq == 4 {
					consumedAt = now
				}
			}
			s.e.Run(50 * sim.US)
			cons.stop = true
			d := s.devs[0]
			at := map[uint16]sim.Tick{}
			for i, p := range d.got {
				at[p.TLP.Tag] = d.gotAt[i]
			}
			if len(at) != 3 || s.m.stFlushes.Value() != 2 {
				t.Fatalf("completions %v, %d flushes; want tags 9, 10, 20 and 2 flushes", at, s.m.stFlushes.Value())
			}
			for _, tag := range []uint16{9, 10} {
				if consumedAt == 0 || at[tag] <= consumedAt {
					t.Errorf("flush %d completed at %v, the handler consumed the last record at %v", tag, at[tag], consumedAt)
				}
			}
			if early := at[20] < consumedAt; early != c.readEarly {
				t.Errorf("the plain read behind the second flush completed at %v, the records were consumed at %v (before: %v, want %v)", at[20], consumedAt, early, c.readEarly)
			}
		})
	}
}

// A head poll's look at the flushes a page holds makes no garbage while
// they wait for the consumer (it runs every HeadPollPS on every IOMMU).
func TestReleaseFlushesAllocates(t *testing.T) {
	spec := DefaultSpec()
	spec.FlushWaiters = 2
	s := newSystem(t, spec, 1)
	s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: 1 << 16})
	s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: testIUID})
	flushIOVA := uint64(testIOVA + 0x1000)
	s.drv.Map(1, flushIOVA, testPA+0x1000, 4096, 4096, Perm{Bits: pte.R})
	if err := s.drv.RegisterFlushPage(testIUID, flushIOVA); err != nil {
		t.Fatal(err)
	}
	id := s.devs[0].id
	s.send(0, tlp.NewMemWrite(id, 0, testIOVA, fill(64, 1)))
	s.send(0, tlp.NewMemRead(id, 9, flushIOVA, 4), tlp.NewMemRead(id, 10, flushIOVA, 4))
	s.e.Run(5 * sim.US) // no consumer: both flushes stay held
	if n := s.m.activeFlushes(); n != 2 {
		t.Fatalf("%d flushes held, want 2", n)
	}
	now := s.e.Now()
	if a := testing.AllocsPerRun(100, func() { s.m.releaseFlushes(now) }); a != 0 {
		t.Errorf("releaseFlushes made %v allocations a call", a)
	}
}
