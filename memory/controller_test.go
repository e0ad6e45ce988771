package memory

import (
	"bytes"
	"testing"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// requester sends its requests in order as the controller takes them.
type requester struct {
	in   *sim.Chan[Req]
	reqs []Req
}

func (r *requester) Tick(sim.Tick) bool {
	for len(r.reqs) > 0 && r.in.Ready() {
		r.in.Send(r.reqs[0])
		r.reqs = r.reqs[1:]
	}
	return len(r.reqs) > 0
}

// cplSink takes no completion before release, then all of them.
type cplSink struct {
	in      *sim.Chan[pcie.Packet]
	u       *sim.Unit
	release sim.Tick
	got     []pcie.Packet
}

func (s *cplSink) Tick(now sim.Tick) bool {
	if now < s.release {
		s.u.WakeAt(s.release)
		return false
	}
	for s.in.Valid() {
		s.got = append(s.got, s.in.Recv())
	}
	return false
}

// read reassembles the data the completions of tag carry.
func (s *cplSink) read(tag uint16) []byte {
	var b []byte
	for _, p := range s.got {
		if p.TLP.Tag == tag {
			b = append(b, p.TLP.Data...)
		}
	}
	return b
}

// The controller's writes and reads wait in separate queues: a read whose
// completions find no room (their consumer does not take them) holds up the
// reads behind it, not a write, which is posted and passes it; a read never
// passes an earlier write, so what it returns includes every write before
// it.
func TestWritesPassReadsWaitingForCompletionRoom(t *testing.T) {
	const (
		release = 50 * sim.US
		stuck   = 6 // reads of 4 KB, 16 completions each: more than the controller holds
		addr    = 0x10_0000
	)
	id := tlp.NewID(1, 0, 0)
	read := func(tag uint16, a uint64, n int) Req {
		return Req{Kind: DeviceRead, TLP: tlp.NewMemRead(id, tag, a, n)}
	}
	data := bytes.Repeat([]byte("written!"), 8)
	tests := []struct {
		name        string
		stuckReads  bool   // reads whose completions fill the controller first
		thenRead    bool   // a read of the written bytes after the write
		wantBefore  bool   // the write is in memory before the completions are taken
		wantReadTag uint16 // the read after the write, whose data must be the write's
	}{
		{"a write passes reads whose completions have no room", true, false, true, 0},
		{"a read after a write returns the written data", false, true, true, 100},
		{"a read behind waiting reads and a write returns the written data", true, true, true, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			store := NewStore()
			r, s := &requester{}, &cplSink{release: release}
			ru := clk.Add("iommu", r)
			s.u = clk.Add("iommu.cpl", s)
			c, err := NewController(clk, "mem", DefaultSpec(), store, ru, s.u)
			if err != nil {
				t.Fatal(err)
			}
			r.in, s.in = c.In, c.Cpl
			var want int
			if tc.stuckReads {
				for i := 0; i < stuck; i++ {
					r.reqs = append(r.reqs, read(uint16(i), 0x20_0000+uint64(i)*4096, 4096))
				}
				want += stuck * 4096 / DefaultSpec().Sizes.MPS
			}
			r.reqs = append(r.reqs, Req{Kind: Write, Addr: addr, Data: data})
			if tc.thenRead {
				r.reqs = append(r.reqs, read(tc.wantReadTag, addr, len(data)))
				want++
			}
			e.Run(release - 1)
			got := make([]byte, len(data))
			store.Read(addr, got)
			if tc.wantBefore && !bytes.Equal(got, data) {
				t.Fatal("the write waited behind reads whose completions had no room")
			}
			e.Run(2 * release)
			if len(s.got) != want {
				t.Fatalf("%d completions, want %d", len(s.got), want)
			}
			if tc.thenRead && !bytes.Equal(s.read(tc.wantReadTag), data) {
				t.Fatalf("the read after the write returned %q", s.read(tc.wantReadTag))
			}
		})
	}
}

// stamper takes every completion as it arrives and notes when, and what
// memory held at addr then.
type stamper struct {
	in    *sim.Chan[pcie.Packet]
	store *Store
	addr  uint64
	at    []sim.Tick
	saw   [][]byte
}

func (s *stamper) Tick(now sim.Tick) bool {
	for s.in.Valid() {
		s.in.Recv()
		b := make([]byte, 8)
		s.store.Read(s.addr, b)
		s.at, s.saw = append(s.at, now), append(s.saw, b)
	}
	return false
}

// A device's completion for a CPU never passes the device's earlier
// writes: it leaves once they are performed, so the CPU that gets it sees
// their data; with no write ahead of it, it costs no access time.
func TestHostCompletionWaitsForEarlierWrites(t *testing.T) {
	const addr = 0x10_0000
	cpl := tlp.NewCompletion(&tlp.TLP{Kind: tlp.MRd, RequesterID: tlp.NewID(0, 1, 0), Tag: 3}, tlp.NewID(1, 0, 0), tlp.SC, 4, 0, []byte{1, 2, 3, 4})
	lat := DefaultSpec().LatencyPS
	tests := []struct {
		name   string
		writes int
		wantAt sim.Tick // the completion at the CPU side
	}{
		// Sent at 0, taken at 1 ns, forwarded at once, seen at 2 ns.
		{"no write ahead", 0, 2 * sim.NS},
		// The write is taken at 1 ns and performed at 1 ns + the latency;
		// the completion, taken at 2 ns, leaves with it.
		{"a write ahead", 1, sim.NS + lat + sim.NS},
		// The second write is taken at 2 ns, the completion at 3 ns.
		{"two writes ahead", 2, 2*sim.NS + lat + sim.NS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			store := NewStore()
			r, s := &requester{}, &stamper{store: store, addr: addr}
			ru, su := clk.Add("iommu", r), clk.Add("cpu", s)
			c, err := NewController(clk, "mem", DefaultSpec(), store, ru, su)
			if err != nil {
				t.Fatal(err)
			}
			r.in, s.in = c.In, c.Cpl
			for i := 0; i < tc.writes; i++ {
				r.reqs = append(r.reqs, Req{Kind: Write, Addr: addr, Data: []byte("written" + string(rune('0'+i)))})
			}
			r.reqs = append(r.reqs, Req{Kind: HostCompletion, TLP: cpl})
			e.Run(sim.US)
			if len(s.at) != 1 {
				t.Fatalf("%d completions, want 1", len(s.at))
			}
			if s.at[0] != tc.wantAt {
				t.Errorf("completion at %v, want %v", s.at[0], tc.wantAt)
			}
			if tc.writes > 0 {
				if want := "written" + string(rune('0'+tc.writes-1)); string(s.saw[0]) != want {
					t.Errorf("memory held %q when the completion arrived, want %q", s.saw[0], want)
				}
			}
			if w := c.writes.Value(); w != uint64(tc.writes) {
				t.Errorf("%d writes counted, want %d (a completion is no write)", w, tc.writes)
			}
		})
	}
}

// OnWrite sees every write the controller performs — DMA writes and
// AtomicOps, whose line the root complex takes even when a CAS fails — and
// nothing else.
func TestOnWriteSeesEveryWrite(t *testing.T) {
	id := tlp.NewID(1, 0, 0)
	const addr = 0x2000
	tests := []struct {
		name string
		req  Req
		want [][2]uint64 // (addr, n) seen
	}{
		{"DMA write", Req{Kind: Write, Addr: addr + 8, Data: make([]byte, 100)}, [][2]uint64{{addr + 8, 100}}},
		{"read", Req{Kind: DeviceRead, TLP: tlp.NewMemRead(id, 1, addr, 64)}, nil},
		{"fetch-and-add", Req{Kind: DeviceAtomic, TLP: tlp.TLP{Kind: tlp.FetchAdd, Length: 2, RequesterID: id, Tag: 2, Addr: addr, Data: make([]byte, 8)}}, [][2]uint64{{addr, 8}}},
		{"failing CAS", Req{Kind: DeviceAtomic, TLP: tlp.TLP{Kind: tlp.CAS, Length: 4, RequesterID: id, Tag: 3, Addr: addr, Data: []byte{9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}}}, [][2]uint64{{addr, 8}}},
		{"host completion", Req{Kind: HostCompletion, TLP: tlp.NewCompletion(&tlp.TLP{Kind: tlp.MRd, Tag: 4}, id, tlp.SC, 4, 0, make([]byte, 4))}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("clk", 1000, 0)
			r, s := &requester{reqs: []Req{tc.req}}, &cplSink{}
			ru := clk.Add("iommu", r)
			s.u = clk.Add("iommu.cpl", s)
			c, err := NewController(clk, "mem", DefaultSpec(), NewStore(), ru, s.u)
			if err != nil {
				t.Fatal(err)
			}
			r.in, s.in = c.In, c.Cpl
			var got [][2]uint64
			c.OnWrite(func(a, n uint64) { got = append(got, [2]uint64{a, n}) })
			e.Run(sim.US)
			if len(got) != len(tc.want) {
				t.Fatalf("OnWrite saw %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("OnWrite saw %v, want %v", got, tc.want)
				}
			}
		})
	}
}
