package cpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// fakeRoot plays the root complex and a device behind it: it takes the
// core's MMIO requests from release on, stores writes into mem, and answers
// a read delay after it took it (with mem's bytes, or Unsupported Request
// at or above urFrom).
type fakeRoot struct {
	u       *sim.Unit
	in      *sim.Chan[pcie.Packet]
	out     *sim.Chan[pcie.Packet]
	mem     *memory.Store
	delay   sim.Tick
	release sim.Tick
	urFrom  uint64
	pending []pendingCpl
	tookAt  []sim.Tick
}

type pendingCpl struct {
	at  sim.Tick
	cpl tlp.TLP
}

func (r *fakeRoot) Tick(now sim.Tick) bool {
	if now < r.release {
		r.u.WakeAt(r.release)
		return false
	}
	for r.in.Valid() {
		p := r.in.Recv()
		r.tookAt = append(r.tookAt, now)
		t := &p.TLP
		if t.Kind == tlp.MWr {
			fb := t.FirstByteOffset()
			r.mem.Write(t.Addr+uint64(fb), t.Data[fb:fb+t.EnabledBytes()])
			continue
		}
		var cpls []tlp.TLP
		if t.Addr >= r.urFrom {
			cpls = []tlp.TLP{pcie.ErrorCompletion(t, 0, tlp.UR)}
		} else {
			cpls = pcie.DefaultSizes().SplitCompletions(t, tlp.NewID(1, 0, 0), func(a uint64, n int) []byte {
				b := make([]byte, n)
				r.mem.Read(a, b)
				return b
			})
		}
		for _, c := range cpls {
			r.pending = append(r.pending, pendingCpl{at: now + r.delay, cpl: c})
		}
	}
	for len(r.pending) > 0 && r.pending[0].at <= now && r.out.Ready() {
		r.out.Send(pcie.Packet{TLP: r.pending[0].cpl})
		r.pending = r.pending[1:]
	}
	if len(r.pending) > 0 {
		r.u.WakeAt(max(r.pending[0].at, now+1))
	}
	return false
}

// newMMIOCore is a core of period cpuPS whose MMIO goes to a fakeRoot in a
// fabric clock of period fabricPS.
func newMMIOCore(t *testing.T, cpuPS, fabricPS sim.Tick, spec Spec) (*sim.Engine, *Core, *fakeRoot) {
	t.Helper()
	e := sim.NewEngine(1)
	cclk, fclk := e.NewClock("clk_cpu", cpuPS, 0), e.NewClock("clk_fabric", fabricPS, 0)
	spec.PeriodPS = cpuPS
	c := NewCore(cclk, "cpu0", spec, memory.NewStore())
	c.SetRequesterID(tlp.NewID(0, 1, 0))
	r := &fakeRoot{mem: memory.NewStore(), urFrom: 1 << 40}
	r.u = fclk.Add("root", r)
	c.Host = sim.NewChan[pcie.Packet](c.Unit(), r.u, "cpu0.mmio", 4)
	c.Cpl = sim.NewChan[pcie.Packet](r.u, c.Unit(), "cpu0.mmio_cpl", 2)
	r.in, r.out = c.Host, c.Cpl
	return e, c, r
}

// edgeAtOrAfter is the first edge of a clock of period p at or after t.
func edgeAtOrAfter(t, p sim.Tick) sim.Tick { return (t + p - 1) / p * p }

// An uncached read costs exactly its round trip: issued at an edge of the
// core, taken by the root complex at its next edge, answered delay later
// (at an edge), and the process goes on at the first edge of the core at
// which the completion is there. It returns the device's bytes.
func TestUncachedReadCostsTheRoundTrip(t *testing.T) {
	tests := []struct {
		cpuPS, fabricPS, delay sim.Tick
		addr                   uint64
		n                      int
		split                  bool // several completions: the data checked, not the time
	}{
		{500, 1000, 200 * sim.NS, 0x1000, 4, false},
		{5988, 1000, 700 * sim.NS, 0x1004, 4, false},
		{5988, 1000, 700 * sim.NS, 0x1003, 8, false}, // unaligned: two DWs with byte enables
		{333, 1000, 77 * sim.NS, 0x1000, 512, true},  // completions at most MPS, reassembled
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("cpu %d ps, %d bytes at %#x", tc.cpuPS, tc.n, tc.addr), func(t *testing.T) {
			e, c, r := newMMIOCore(t, tc.cpuPS, tc.fabricPS, DefaultSpec())
			r.delay = tc.delay
			want := make([]byte, tc.n)
			for i := range want {
				want[i] = byte(i*7 + 1)
			}
			r.mem.Write(tc.addr, want)
			var got []byte
			var issued, back sim.Tick
			c.Spawn("p", func(p *Proc) {
				p.Compute(3)
				issued = p.Now()
				got = p.MMIORead(tc.addr, tc.n)
				back = p.Now()
			})
			e.Run(sim.MS)
			if !bytes.Equal(got, want) {
				t.Fatalf("read %x, want %x", got, want)
			}
			taken := edgeAtOrAfter(issued+1, tc.fabricPS)
			answered := edgeAtOrAfter(taken+tc.delay, tc.fabricPS)
			// More than one completion: the last leaves one an edge (the
			// channel holds two, the core takes them at its edges).
			seen := edgeAtOrAfter(answered+1, tc.cpuPS)
			if k := (tc.n + 63) / 64; k > 1 && tc.n > 64 {
				seen = back // checked below by the data; the edge count depends on the channel
			}
			if back != seen {
				t.Fatalf("read issued at %v came back at %v, want %v (taken %v, answered %v)", issued, back, seen, taken, answered)
			}
			if len(r.tookAt) != 1 || r.tookAt[0] != taken {
				t.Fatalf("the root took the read at %v, want %v", r.tookAt, taken)
			}
			if got := c.stReads.Value(); got != 1 {
				t.Fatalf("%d uncached reads counted", got)
			}
		})
	}
}

// While a read is out, the core stalls: another process and an interrupt
// handler wait for the completion; the process whose read it was goes on
// first once it is back (after a handler that came meanwhile). The helpers
// read little-endian words.
func TestUncachedReadStallsTheCore(t *testing.T) {
	const delay = 5 * sim.US // longer than the interrupt latency
	e, c, r := newMMIOCore(t, 500, 1000, DefaultSpec())
	r.delay = delay
	r.mem.Store64(0x2000, 0x1122334455667788)
	var back, otherRan, handlerRan sim.Tick
	var v64 uint64
	var v32 uint32
	c.Spawn("reader", func(p *Proc) {
		v64 = p.MMIORead64(0x2000)
		back = p.Now()
		v32 = p.MMIORead32(0x2004)
	})
	c.Spawn("other", func(p *Proc) {
		p.Compute(1)
		otherRan = p.Now()
	})
	src := &msiSource{}
	su := e.NewClock("clk_io", 1000, 500).Add("ioapic", src)
	c.Irq = sim.NewChan[pcie.Packet](su, c.Unit(), "irq", 2)
	src.out = c.Irq
	c.OnInterrupt(0xfee0_0000, 0x41, "h", func(p *Proc) { handlerRan = p.Now() })
	e.Run(sim.MS)
	if v64 != 0x1122334455667788 || v32 != 0x11223344 {
		t.Fatalf("read %#x and %#x", v64, v32)
	}
	if back < delay {
		t.Fatalf("the read came back at %v, before the device answered", back)
	}
	if otherRan < back || handlerRan < delay {
		t.Fatalf("another process ran at %v and a handler at %v while the core was stalled until %v", otherRan, handlerRan, back)
	}
	if handlerRan != back-500 {
		t.Fatalf("the handler, due during the stall, ran at %v, want %v: at the completion, an edge before the reader", handlerRan, back-500)
	}
	if busy := c.stBusy.Value(); busy < uint64(back) {
		t.Fatalf("busy for %d ps, less than the stall", busy)
	}
}

// A read no device decodes returns all ones and is counted.
func TestUncachedReadUnsupported(t *testing.T) {
	tests := []struct {
		name string
		addr uint64
		n    int
		want []byte
		errs uint64
	}{
		{"decoded", 0x3000, 4, []byte{0, 0, 0, 0}, 0},
		{"no BAR", 1 << 41, 4, []byte{0xff, 0xff, 0xff, 0xff}, 1},
		{"no BAR, unaligned", 1<<41 + 6, 3, []byte{0xff, 0xff, 0xff}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, c, r := newMMIOCore(t, 500, 1000, DefaultSpec())
			r.delay = 100 * sim.NS
			var got []byte
			c.Spawn("p", func(p *Proc) { got = p.MMIORead(tc.addr, tc.n) })
			e.Run(sim.MS)
			if !bytes.Equal(got, tc.want) || !c.AppsDone() {
				t.Fatalf("read %x, want %x", got, tc.want)
			}
			if got := c.stReadURs.Value(); got != tc.errs {
				t.Fatalf("%d failed reads counted, want %d", got, tc.errs)
			}
		})
	}
}

// An uncached store costs its issue — UncachedWritePS when set, else
// MMIOPS — not its trip: it is posted. A full Host channel (the write
// buffer) holds the core until the root complex takes one.
func TestUncachedWriteIsPosted(t *testing.T) {
	tests := []struct {
		name    string
		issue   sim.Tick // UncachedWritePS (0: MMIOPS)
		release sim.Tick // the root takes nothing before
		writes  int
		want    sim.Tick // the last write done
	}{
		{"default issue cost", 0, 0, 1, DefaultSpec().MMIOPS},
		{"the uncached write figure", 54 * 500, 0, 3, 3 * 54 * 500}, // 54 cycles of the 2 GHz core
		// Host holds 4: the fifth waits for the root's first take at 20 µs
		// (seen by the core at its next edge), then is issued.
		{"a full write buffer", 10 * sim.NS, 20 * sim.US, 5, 20*sim.US + 500 + 10*sim.NS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := DefaultSpec()
			spec.UncachedWritePS = tc.issue
			e, c, r := newMMIOCore(t, 500, 1000, spec)
			r.release = tc.release
			var done sim.Tick
			c.Spawn("p", func(p *Proc) {
				for i := 0; i < tc.writes; i++ {
					p.MMIOWrite(0x4000+uint64(i)*4, binary.LittleEndian.AppendUint32(nil, uint32(i+1)), 0)
				}
				done = p.Now()
			})
			e.Run(sim.MS)
			if done != tc.want {
				t.Fatalf("writes done at %v, want %v", done, tc.want)
			}
			if got := r.mem.Load64(0x4000) & 0xffffffff; got != 1 {
				t.Fatalf("the first write stored %d", got)
			}
		})
	}
}
