package pcie

import (
	"fmt"
	"math"
	"testing"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// feeder sends its packets into the link as fast as the link takes them.
type feeder struct {
	d    *Dir
	pkts []Packet
	i    int
}

func (f *feeder) Tick(sim.Tick) bool {
	if f.i < len(f.pkts) && f.d.In.Ready() {
		f.d.In.Send(f.pkts[f.i])
		f.i++
	}
	return f.i < len(f.pkts)
}

// drain takes TLPs from the receive buffer, at most one every `every`
// picoseconds (0: whenever one is there), unless held.
type drain struct {
	d     *Dir
	u     *sim.Unit
	every sim.Tick
	hold  bool
	next  sim.Tick
	got   []Packet
	at    []sim.Tick
}

func (r *drain) Tick(now sim.Tick) bool {
	if r.hold || !r.d.Out.Valid() {
		return false
	}
	if now < r.next {
		r.u.WakeAt(r.next)
		return false
	}
	r.got = append(r.got, r.d.Out.Recv())
	r.at = append(r.at, now)
	r.next = now + r.every
	return r.d.Out.Valid()
}

func testLink(t testing.TB, spec LinkSpec, pkts []Packet, every sim.Tick) (*sim.Engine, *Dir, *feeder, *drain) {
	t.Helper()
	e := sim.NewEngine(1)
	clk := e.NewClock("pcie_clk", 4000, 0) // 250 MHz
	f := &feeder{pkts: pkts}
	r := &drain{every: every}
	fu := clk.Add("dev", f)
	r.u = clk.Add("rc", r)
	d, err := NewDir(clk, "link.up", spec, fu, r.u)
	if err != nil {
		t.Fatal(err)
	}
	f.d, r.d = d, d
	return e, d, f, r
}

func writes(n, size int) []Packet {
	s := Sizes{MPS: size, MRRS: 512, RCB: 64}
	var out []Packet
	for i, w := range s.SegmentWrite(tlp.NewID(1, 0, 0), 0x10_0000, make([]byte, n)) {
		out = append(out, Packet{Txn: sim.Txn{ID: sim.TxnID(i + 1)}, TLP: w})
	}
	return out
}

// Streaming writes over Gen3 x8 reach the bandwidth the per-TLP overhead
// allows: payload / (header + payload + framing) of the line rate.
func TestStreamingBandwidthMatchesTheory(t *testing.T) {
	for _, mps := range []int{128, 256, 512} {
		t.Run(fmt.Sprint("MPS", mps), func(t *testing.T) {
			spec := DefaultLinkSpec()
			e, d, _, r := testLink(t, spec, writes(1<<20, mps), 0)
			e.Run(sim.S)
			got, want := measured(r), spec.BytesPerSecond()*spec.Efficiency(mps, 12)
			t.Logf("MPS %d: %.1f MB/s achieved, %.1f MB/s theoretical (%.2f%% of the line rate)", mps, got/1e6, want/1e6, 100*spec.Efficiency(mps, 12))
			if math.Abs(got-want)/want > 0.001 {
				t.Fatalf("achieved %.1f MB/s, theory %.1f MB/s", got/1e6, want/1e6)
			}
			if d.tlps.Value() != uint64(len(r.got)) || len(r.got) != (1<<20)/mps {
				t.Fatalf("%d TLPs sent, %d received", d.tlps.Value(), len(r.got))
			}
		})
	}
}

// measured is the payload rate at the receiver over the stream, excluding
// the first TLP (its arrival marks the start).
func measured(r *drain) float64 {
	var bytes int
	for _, p := range r.got[1:] {
		bytes += p.TLP.PayloadBytes()
	}
	return float64(bytes) / (float64(r.at[len(r.at)-1]-r.at[0]) / 1e12)
}

// A receiver that drains slowly throttles the sender to its drain rate by
// withholding credits; nothing is lost or reordered.
func TestCreditStarvedReceiverThrottlesSender(t *testing.T) {
	spec := DefaultLinkSpec()
	spec.Credits = Credits{PH: 4, PD: 64}
	pkts := writes(256*400, 256)
	every := 200 * sim.NS
	e, d, f, r := testLink(t, spec, pkts, every)
	e.Run(sim.S)
	if len(r.got) != len(pkts) || f.i != len(pkts) {
		t.Fatalf("received %d of %d", len(r.got), len(pkts))
	}
	for i, p := range r.got {
		if p.ID != pkts[i].ID {
			t.Fatalf("TLP %d arrived as %d: reordered", i, p.ID)
		}
	}
	got := measured(r)
	want := 256 / (float64(every) / 1e12)
	if math.Abs(got-want)/want > 0.01 {
		t.Fatalf("throttled rate %.1f MB/s, drain rate %.1f MB/s", got/1e6, want/1e6)
	}
	if d.creditStall[tlp.Posted].Value() == 0 {
		t.Fatal("the sender never waited for credits")
	}
}

func pkt(id int, t tlp.TLP) Packet { return Packet{Txn: sim.Txn{ID: sim.TxnID(id)}, TLP: t} }

// Ordering: reads and completions never pass an earlier write that waits
// for credits, unless relaxed ordering allows it; writes pass a stalled read.
func TestOrderingRules(t *testing.T) {
	rd := tlp.NewMemRead(tlp.NewID(1, 0, 0), 1, 0x2000, 64)
	wr := tlp.NewMemWrite(tlp.NewID(1, 0, 0), 0, 0x1000, make([]byte, 64))
	cpl := tlp.NewCompletion(&rd, tlp.NewID(1, 0, 0), tlp.SC, 4, 0, make([]byte, 4))
	cplRO := cpl
	cplRO.RO = true
	cases := []struct {
		name    string
		credits Credits
		pkts    []Packet
		want    string // IDs received while the first TLP is stuck
	}{
		{"read waits behind a stuck write", Credits{PH: 1}, []Packet{pkt(1, wr), pkt(2, wr), pkt(3, rd)}, "[1]"},
		{"completion waits behind a stuck write", Credits{PH: 1}, []Packet{pkt(1, wr), pkt(2, wr), pkt(3, cpl)}, "[1]"},
		{"relaxed-ordering completion passes", Credits{PH: 1}, []Packet{pkt(1, wr), pkt(2, wr), pkt(3, cplRO)}, "[1 3]"},
		{"write passes a stuck read", Credits{NPH: 1}, []Packet{pkt(1, rd), pkt(2, rd), pkt(3, wr)}, "[1 3]"},
		{"completion passes a stuck read", Credits{NPH: 1}, []Packet{pkt(1, rd), pkt(2, rd), pkt(3, cpl)}, "[1 3]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := DefaultLinkSpec()
			spec.Credits = tc.credits
			spec.UpdateFCLatency = sim.S // credits stay out for the whole test
			e, _, _, r := testLink(t, spec, tc.pkts, 0)
			e.Run(10 * sim.US)
			var ids []int
			for _, p := range r.got {
				ids = append(ids, int(p.ID))
			}
			if fmt.Sprint(ids) != tc.want {
				t.Fatalf("received %v, want %v", ids, tc.want)
			}
		})
	}
}

// With DLLPs modelled, the receiver's Acks and UpdateFCs use the reverse
// direction's wire, not the forward one.
func TestDLLPTrafficOnReverseDirection(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("pcie_clk", 4000, 0)
	spec := DefaultLinkSpec()
	spec.DLLP = true
	f := &feeder{pkts: writes(64*1024, 256)}
	r := &drain{}
	fu, ru := clk.Add("dev", f), clk.Add("rc", r)
	r.u = ru
	up, err := NewDir(clk, "link.up", spec, fu, ru)
	if err != nil {
		t.Fatal(err)
	}
	back := &feeder{pkts: writes(64*1024, 256)}
	backSink := &drain{}
	bu, bsu := clk.Add("rc_tx", back), clk.Add("dev_rx", backSink)
	backSink.u = bsu
	down, _ := NewDir(clk, "link.down", spec, bu, bsu)
	Pair(up, down)
	f.d, r.d, back.d, backSink.d = up, up, down, down
	e.Run(sim.S)
	if len(r.got) != 256 || len(backSink.got) != 256 {
		t.Fatalf("received %d and %d", len(r.got), len(backSink.got))
	}
	acks := uint64(256/spec.AckEvery) + 256 // Acks and one UpdateFC per TLP
	if up.dllps.Value() != acks {
		t.Fatalf("%d DLLPs for the up direction's traffic, want %d", up.dllps.Value(), acks)
	}
	first := writes(256, 256)[0]
	if down.wireBytes.Value() != down.tlps.Value()*uint64(spec.WireBytes(&first.TLP))+up.dllps.Value()*DLLPBytes {
		t.Fatalf("down wire carried %d bytes: not its TLPs plus the up direction's DLLPs", down.wireBytes.Value())
	}
}

func TestLinkRates(t *testing.T) {
	cases := []struct {
		gen, width int
		mbps       float64 // MB/s per direction after encoding
		enc        string
	}{{1, 1, 250, "8b/10b"}, {2, 4, 2000, "8b/10b"}, {3, 8, 7876.923, "128b/130b"}, {4, 16, 31507.692, "128b/130b"}, {5, 1, 3938.462, "128b/130b"}}
	for _, c := range cases {
		s := LinkSpec{Gen: c.gen, Width: c.width, QueueTLPs: 1}
		if got := s.BytesPerSecond() / 1e6; math.Abs(got-c.mbps) > 0.01 || s.Encoding() != c.enc {
			t.Errorf("Gen%d x%d: %.3f MB/s %s, want %.3f %s", c.gen, c.width, got, s.Encoding(), c.mbps, c.enc)
		}
	}
	for _, bad := range []LinkSpec{{Gen: 6, Width: 1, QueueTLPs: 1}, {Gen: 3, Width: 3, QueueTLPs: 1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	// 256-byte MWr with a 4DW header: 256/280 = 91.4 %.
	if eff := (LinkSpec{Gen: 3, Width: 8}).Efficiency(256, 16); math.Abs(eff-256.0/280) > 1e-12 {
		t.Fatal(eff)
	}
}

// MSI: a 1-DW memory write of the message data, little-endian.
func TestMSI(t *testing.T) {
	m := tlp.NewMSI(tlp.NewID(1, 0, 0), 0xfee0_1000, 0x4041)
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := "40000001" + "0100000f" + "fee01000" + "41400000"
	if fmt.Sprintf("%x", b) != want {
		t.Fatalf("MSI %x, want %s", b, want)
	}
}

// BenchmarkStreamGen3x8 streams 1 MiB of DMA writes per iteration and
// reports the simulated bandwidth next to the theoretical one.
func BenchmarkStreamGen3x8(b *testing.B) {
	for _, mps := range []int{128, 256, 512} {
		b.Run(fmt.Sprint("MPS", mps), func(b *testing.B) {
			spec := DefaultLinkSpec()
			pkts := writes(1<<20, mps)
			b.ReportAllocs()
			var got float64
			for i := 0; i < b.N; i++ {
				e, _, _, r := testLink(b, spec, pkts, 0)
				e.Run(sim.S)
				got = measured(r)
			}
			b.ReportMetric(got/1e6, "sim-MB/s")
			b.ReportMetric(spec.BytesPerSecond()*spec.Efficiency(mps, 12)/1e6, "theory-MB/s")
			b.ReportMetric(float64(b.N*len(pkts))/b.Elapsed().Seconds(), "TLPs/s")
		})
	}
}

// BenchmarkCreditStarved: a receiver draining one TLP per 200 ns throttles a
// Gen3 x8 sender to 1.28 GB/s.
func BenchmarkCreditStarved(b *testing.B) {
	spec := DefaultLinkSpec()
	spec.Credits = Credits{PH: 4, PD: 64}
	pkts := writes(256*2000, 256)
	var got float64
	for i := 0; i < b.N; i++ {
		e, _, _, r := testLink(b, spec, pkts, 200*sim.NS)
		e.Run(sim.S)
		if len(r.got) != len(pkts) {
			b.Fatal("lost TLPs")
		}
		got = measured(r)
	}
	b.ReportMetric(got/1e6, "sim-MB/s")
	b.ReportMetric(256/(200e-9)/1e6, "drain-MB/s")
}

// endless sends the same write forever (the payload is shared).
type endless struct {
	d *Dir
	p Packet
}

func (f *endless) Tick(sim.Tick) bool {
	if f.d.In.Ready() {
		f.d.In.Send(f.p)
	}
	return true
}

type sink struct {
	d *Dir
	n int
}

func (s *sink) Tick(sim.Tick) bool {
	if s.d.Out.Valid() {
		s.d.Out.Recv()
		s.n++
	}
	return false
}

// Streaming over a link allocates nothing per TLP in steady state.
func TestLinkDoesNotAllocatePerTLP(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("pcie_clk", 4000, 0)
	f := &endless{p: writes(256, 256)[0]}
	s := &sink{}
	fu, su := clk.Add("dev", f), clk.Add("rc", s)
	d, err := NewDir(clk, "link", DefaultLinkSpec(), fu, su)
	if err != nil {
		t.Fatal(err)
	}
	f.d, s.d = d, d
	e.Run(10 * sim.US)
	before := s.n
	allocs := testing.AllocsPerRun(50, func() { e.Run(e.Now() + sim.US) })
	if allocs != 0 {
		t.Fatalf("%.1f allocations per simulated µs (%d TLPs)", allocs, (s.n-before)/51)
	}
	if s.n == before {
		t.Fatal("nothing streamed")
	}
}

// The link's traced signals: the TLP on the wire, credits, and the
// handshakes of its input and receive buffer.
func TestLinkTracedSignals(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("pcie_clk", 4000, 0)
	spec := DefaultLinkSpec()
	f := &feeder{pkts: []Packet{pkt(1, tlp.NewMemRead(tlp.NewID(1, 0, 0), 7, 0x4000, 64))}}
	r := &drain{}
	fu := clk.Add("dev", f)
	r.u = clk.Add("rc", r)
	d, _ := NewDir(clk, "link", spec, fu, r.u)
	f.d, r.d = d, d
	rec := &traceRec{vals: map[string][]string{}}
	e.AttachTracer(rec)
	e.Run(sim.US)
	want := map[string]string{
		"link.kind": "0", "link.tag": "7", "link.addr": "16384", "link.length": "16",
		"link.credits_nph": "32", "link.tx.valid": "1", "link.rx.fire": "1",
	}
	for sig, v := range want {
		found := false
		for _, got := range rec.vals[sig] {
			found = found || got == v
		}
		if !found {
			t.Errorf("%s never showed %s: %v", sig, v, rec.vals[sig])
		}
	}
	// The read took a non-posted header credit that came back when the
	// receiver took the TLP.
	if h := rec.vals["link.credits_nph"]; len(h) < 3 || h[len(h)-2] != "31" || h[len(h)-1] != "32" {
		t.Errorf("credits_nph history %v: want 32 → 31 → 32", h)
	}
}

type traceRec struct {
	names []string
	vals  map[string][]string
}

func (r *traceRec) Declare(path string, width int) (int, bool) {
	r.names = append(r.names, path)
	return len(r.names) - 1, true
}

func (r *traceRec) add(id int, v string) {
	h := r.vals[r.names[id]]
	if len(h) == 0 || h[len(h)-1] != v {
		r.vals[r.names[id]] = append(h, v)
	}
}

func (r *traceRec) Set(t uint64, id int, v uint64) { r.add(id, fmt.Sprint(v)) }
func (r *traceRec) SetXZ(t uint64, id int, z bool) { r.add(id, "x") }
