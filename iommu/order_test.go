package iommu

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// linkedDevice attaches a device behind a PCIe link (its receive buffer is
// the IOMMU's port) and returns its index.
func (s *system) linkedDevice(spec pcie.LinkSpec) int {
	s.t.Helper()
	i := len(s.devs)
	dev := &device{id: tlp.NewID(uint8(i+1), 0, 0)}
	dev.u = s.clk.Add("nic", dev)
	up, err := pcie.NewDir(s.clk, "link.up", spec, dev.u, s.m.Unit())
	if err != nil {
		s.t.Fatal(err)
	}
	back := sim.NewChan[pcie.Packet](s.m.Unit(), dev.u, "link.down", 4)
	dev.out, dev.in = up.In, back
	s.m.AddPort(up.Out, back)
	s.devs = append(s.devs, dev)
	if err := s.drv.Attach(dev.id, 1); err != nil {
		s.t.Fatal(err)
	}
	return i
}

// completion returns the device's completion for tag, if it has one.
func (d *device) completion(tag uint16) (tlp.TLP, bool) {
	for _, p := range d.got {
		if p.TLP.Kind.IsCompletion() && p.TLP.Tag == tag {
			return p.TLP, true
		}
	}
	return tlp.TLP{}, false
}

// Pages of the ordering tests: a log of 256 bytes (eight metadata records),
// logged writes that fill it, an active-get page, an active-put page, a
// flush page, a page for AtomicOps, two plain pages and a page logged with
// data.
const (
	ordLogged     = testIOVA
	ordGet        = testIOVA + 0x1000
	ordPut        = testIOVA + 0x2000
	ordFlush      = testIOVA + 0x3000
	ordAtomic     = testIOVA + 0x4000
	ordPlain      = testIOVA + 0x5000
	ordPlain2     = testIOVA + 0x6000
	ordLoggedData = testIOVA + 0x7000
	ordLog        = 256
)

func newOrderingSystem(t *testing.T) (*system, int) {
	s := newSystem(t, DefaultSpec(), 0)
	dev := s.linkedDevice(pcie.DefaultLinkSpec())
	if err := s.drv.RegisterLog(testIUID, LogConfig{Base: testLog, Size: ordLog}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		iova uint64
		bits uint64
	}{
		{ordLogged, pte.R | pte.W | pte.WL | pte.E},      // performed, a 32-byte record
		{ordGet, pte.R | pte.RL | pte.RLD | pte.E},       // the active get: data and a copy in the log
		{ordPut, pte.WLD | pte.E},                        // the active put: blocked, logged with data
		{ordFlush, pte.R},                                // registered as the log's flush page below
		{ordAtomic, pte.R | pte.W | pte.WL | pte.E},      // AtomicOps performed and logged
		{ordPlain, pte.R | pte.W},                        // no logging
		{ordPlain2, pte.R | pte.W},                       // no logging
		{ordLoggedData, pte.R | pte.W | pte.WLD | pte.E}, // performed, logged with data
	} {
		if err := s.drv.Map(1, m.iova, testPA+(m.iova-testIOVA), 4096, 4096, Perm{Bits: m.bits, IUID: testIUID}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.drv.RegisterFlushPage(testIUID, ordFlush); err != nil {
		t.Fatal(err)
	}
	s.mem.Write(testPA+(ordGet-testIOVA), fill(4096, 3))
	s.mem.Store64(testPA+(ordAtomic-testIOVA), 40)
	return s, dev
}

// fillLog sends n logged writes: with n = 8 the log is full until the
// consumer moves head.
func (s *system) fillLog(dev, n int) {
	for i := 0; i < n; i++ {
		s.send(dev, tlp.NewMemWrite(s.devs[dev].id, 0, ordLogged+uint64(i)*8, fill(8, byte(i))))
	}
}

// The scenario and its relatives: a non-posted request that waits at
// the IOMMU (for access-log space, or behind a flush of its page) sits at
// the head of its lane of the link's receive buffer; a later posted write to
// a plain page passes it and reaches memory while it still waits, as PCIe
// requires (A3, A4: a posted request must be able to pass a non-posted one,
// or a full log could deadlock the device). The waiting request completes
// once the consumer frees space.
func TestPostedWritePassesWaitingNonPosted(t *testing.T) {
	fetchAdd := func(id tlp.ID) tlp.TLP {
		return tlp.TLP{Kind: tlp.FetchAdd, Length: 2, RequesterID: id, Tag: 7, Addr: ordAtomic, Data: []byte{2, 0, 0, 0, 0, 0, 0, 0}}
	}
	tests := []struct {
		name  string
		fill  int                       // logged writes before
		np    func(id tlp.ID) []tlp.TLP // the requests that end up waiting; the last has tag 7
		check func(t *testing.T, s *system, c tlp.TLP)
	}{
		{
			name: "active get on a full access log",
			fill: 8,
			np:   func(id tlp.ID) []tlp.TLP { return []tlp.TLP{tlp.NewMemRead(id, 7, ordGet+64, 64)} },
			check: func(t *testing.T, s *system, c tlp.TLP) {
				if c.Status != tlp.SC || !bytes.Equal(c.Data, fill(4096, 3)[64:128]) {
					t.Fatalf("get completed with %v and %d bytes, not the page's data", c.Status, len(c.Data))
				}
			},
		},
		{
			name: "AtomicOp on a logged page with a full access log",
			fill: 8,
			np:   func(id tlp.ID) []tlp.TLP { return []tlp.TLP{fetchAdd(id)} },
			check: func(t *testing.T, s *system, c tlp.TLP) {
				if c.Status != tlp.SC || binary.LittleEndian.Uint64(c.Data) != 40 || s.mem.Load64(testPA+(ordAtomic-testIOVA)) != 42 {
					t.Fatalf("FetchAdd completed with %v %v, memory %d", c.Status, c.Data, s.mem.Load64(testPA+(ordAtomic-testIOVA)))
				}
			},
		},
		{
			name: "second flush of a page while the first waits for the consumer",
			fill: 4,
			np: func(id tlp.ID) []tlp.TLP {
				return []tlp.TLP{tlp.NewMemRead(id, 6, ordFlush, 4), tlp.NewMemRead(id, 7, ordFlush, 4)}
			},
			check: func(t *testing.T, s *system, c tlp.TLP) {
				if c.Status != tlp.SC {
					t.Fatalf("flush completed with %v", c.Status)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, dev := newOrderingSystem(t)
			d := s.devs[dev]
			s.fillLog(dev, tc.fill)
			s.send(dev, tc.np(d.id)...)
			s.send(dev, tlp.NewMemWrite(d.id, 0, ordPlain+16, []byte("posted!!")))
			s.e.Run(20 * sim.US)

			got := make([]byte, 8)
			s.mem.Read(testPA+(ordPlain-testIOVA)+16, got)
			if string(got) != "posted!!" {
				t.Fatalf("the plain write did not reach memory while the non-posted request waited (memory %q)", got)
			}
			if _, ok := d.completion(7); ok {
				t.Fatal("the waiting request completed before the consumer freed space")
			}
			if s.m.stStallCycles.Value() == 0 {
				t.Fatal("nothing waited at the IOMMU")
			}

			s.records(testIUID, true) // the consumer frees the log
			s.e.Run(s.e.Now() + 20*sim.US)
			c, ok := d.completion(7)
			if !ok {
				t.Fatal("the waiting request never completed after the consumer freed space")
			}
			tc.check(t, s, c)
		})
	}
}

// The rules that keep requests in order still hold with the lanes: a write
// that waits holds back everything after it (no write passes a write, no
// read passes a write), and read data never overtakes an earlier write to
// the same address (D2a), however long the write's path.
func TestOrderingRulesStillHold(t *testing.T) {
	t.Run("a posted write waiting for log space holds back later requests", func(t *testing.T) {
		s, dev := newOrderingSystem(t)
		d := s.devs[dev]
		s.fillLog(dev, 8)
		s.send(dev, tlp.NewMemWrite(d.id, 0, ordPut, fill(16, 1))) // an active put: waits for 48 bytes of log
		s.send(dev, tlp.NewMemRead(d.id, 3, ordPlain, 8))
		s.send(dev, tlp.NewMemWrite(d.id, 0, ordPlain2, []byte("later...")))
		s.e.Run(20 * sim.US)
		if _, ok := d.completion(3); ok {
			t.Fatal("a read passed a waiting posted write")
		}
		got := make([]byte, 8)
		s.mem.Read(testPA+(ordPlain-testIOVA)+0x1000, got)
		if string(got) == "later..." {
			t.Fatal("a posted write passed a waiting posted write")
		}
		s.records(testIUID, true)
		s.e.Run(s.e.Now() + 20*sim.US)
		if _, ok := d.completion(3); !ok {
			t.Fatal("the read never completed")
		}
		s.mem.Read(testPA+(ordPlain-testIOVA)+0x1000, got)
		if string(got) != "later..." {
			t.Fatal("the later write never landed")
		}
		recs := s.records(testIUID, false)
		if len(recs) != 1 || !bytes.Equal(recs[0].Data, fill(16, 1)) {
			t.Fatalf("the active put's record: %+v", recs)
		}
	})

	// A read right behind a write to the same bytes returns the written
	// data, for writes that take the plain path, the logged path (payload
	// streamed into the data path, a record written), and several writes
	// in a row. Behind a get that waits on the full log, the writes pass
	// the get, the read waits behind it in the non-posted lane (a read need
	// not pass a read), and still returns the last write's data.
	tests := []struct {
		name   string
		iova   uint64
		writes int
		waitNP bool // a get waiting on the full log before the writes
	}{
		{"plain page", ordPlain + 0x100, 1, false},
		{"plain page, several writes", ordPlain + 0x100, 4, false},
		{"logged page with data", ordLoggedData + 0x100, 1, false},
		{"plain page behind a waiting active get", ordPlain + 0x100, 3, true},
	}
	for _, tc := range tests {
		t.Run("read after write: "+tc.name, func(t *testing.T) {
			s, dev := newOrderingSystem(t)
			d := s.devs[dev]
			if tc.waitNP {
				s.fillLog(dev, 8)
				s.send(dev, tlp.NewMemRead(d.id, 9, ordGet, 64))
			}
			var last []byte
			for i := 0; i < tc.writes; i++ {
				last = fill(64, byte(10+i))
				s.send(dev, tlp.NewMemWrite(d.id, 0, tc.iova, last))
			}
			s.send(dev, tlp.NewMemRead(d.id, 4, tc.iova, 64))
			s.e.Run(20 * sim.US)
			if tc.waitNP {
				got := make([]byte, 64)
				s.mem.Read(testPA+(tc.iova-testIOVA), got)
				if !bytes.Equal(got, last) {
					t.Fatal("the writes did not pass the waiting get")
				}
				if _, ok := d.completion(9); ok {
					t.Fatal("the get did not wait")
				}
				if _, ok := d.completion(4); ok {
					t.Fatal("the read passed the get ahead of it in its lane")
				}
				s.records(testIUID, true)
				s.e.Run(s.e.Now() + 20*sim.US)
			}
			c, ok := d.completion(4)
			if !ok {
				t.Fatal("the read never completed")
			}
			if !bytes.Equal(c.Data, last) {
				t.Fatalf("read returned %x, want the last write's %x", c.Data[:8], last[:8])
			}
		})
	}
}

// fakeMemory takes the IOMMU's writes as they come and its reads only from
// release on: a memory side whose read path is held up.
type fakeMemory struct {
	u       *sim.Unit
	in      *sim.Chan[memory.Req]
	cpl     *sim.Chan[pcie.Packet]
	mem     *memory.Store
	release sim.Tick
	out     []pcie.Packet
}

func (f *fakeMemory) Tick(now sim.Tick) bool {
	for {
		l := pcie.NextLane(f.in, func(l int, _ *memory.Req) bool { return now >= f.release || tlp.Class(l) == tlp.Posted })
		if l < 0 {
			break
		}
		r := f.in.RecvLane(l)
		if r.Kind == memory.Write {
			f.mem.Write(r.Addr, r.Data)
			continue
		}
		sizes := pcie.DefaultSizes()
		for _, c := range sizes.SplitCompletions(&r.TLP, 0, func(a uint64, n int) []byte {
			b := make([]byte, n)
			f.mem.Read(a, b)
			return b
		}) {
			f.out = append(f.out, pcie.Packet{TLP: c})
		}
	}
	for len(f.out) > 0 && f.cpl.Ready() {
		f.cpl.Send(f.out[0])
		f.out = f.out[1:]
	}
	if now < f.release {
		f.u.WakeAt(f.release)
	}
	return len(f.out) > 0
}

// The IOMMU's requests to memory keep the classes apart too: reads the
// memory side cannot take yet hold up the reads behind them, not the writes
// (its own and the devices'), and a read still returns what was written
// before it.
func TestWritesPassReadsTheMemoryCannotTakeYet(t *testing.T) {
	const release = 20 * sim.US
	s := newSystem(t, DefaultSpec(), 1)
	f := &fakeMemory{mem: s.mem, release: release}
	f.u = s.clk.Add("fake_mem", f)
	f.in = sim.NewLanedChan(s.m.Unit(), f.u, "fake_mem.req", []int{1, 1}, func(r *memory.Req) int { return int(memory.ReqClass(r)) })
	f.cpl = sim.NewChan[pcie.Packet](f.u, s.m.Unit(), "fake_mem.cpl", 4)
	s.m.ConnectMemory(f.in, f.cpl)
	for _, iova := range []uint64{ordPlain, ordPlain2} {
		if err := s.drv.Map(1, iova, testPA+(iova-testIOVA), 4096, 4096, Perm{Bits: pte.R | pte.W}); err != nil {
			t.Fatal(err)
		}
	}
	id := s.devs[0].id
	s.send(0, tlp.NewMemWrite(id, 0, ordPlain, []byte("first...")))
	for tag := uint16(1); tag <= 3; tag++ {
		s.send(0, tlp.NewMemRead(id, tag, ordPlain, 8))
	}
	s.send(0, tlp.NewMemWrite(id, 0, ordPlain2, []byte("posted!!")))
	s.e.Run(release - 1)
	got := make([]byte, 8)
	s.mem.Read(testPA+(ordPlain2-testIOVA), got)
	if string(got) != "posted!!" {
		t.Fatalf("the write waited behind reads the memory did not take (memory %q)", got)
	}
	if len(s.devs[0].got) != 0 {
		t.Fatal("a read completed before the memory took reads")
	}
	s.e.Run(2 * release)
	for tag := uint16(1); tag <= 3; tag++ {
		c, ok := s.devs[0].completion(tag)
		if !ok || string(c.Data) != "first..." {
			t.Fatalf("read %d: %v %q", tag, ok, c.Data)
		}
	}
}
