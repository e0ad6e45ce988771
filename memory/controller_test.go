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
