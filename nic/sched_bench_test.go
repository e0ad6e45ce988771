package nic

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// manyPeers stands for the peer NICs of a NIC under test: it takes the
// request frames off the NIC's wire, counts them, and answers each that
// asks with an ACK from its sender's peer, in order.
type manyPeers struct {
	u     *sim.Unit
	in    *sim.Chan[Frame]
	out   *sim.Chan[Frame]
	acks  []Frame
	count *benchCount
	nic   *NIC
	// samples of the NIC's active contexts, when sample is set
	sample           bool
	samples, actives int
}

func (p *manyPeers) Tick(now sim.Tick) bool {
	for p.in.Valid() {
		f := p.in.Recv()
		if p.sample {
			p.samples++
			for _, q := range p.nic.peerList {
				if q.active {
					p.actives++
				}
			}
		}
		if f.Packet.AckReq {
			var a roce.Packet
			a.Opcode, a.PSN, a.PKey, a.DestQP = roce.Ack, f.Packet.PSN, 0xffff, SRDPeerQPN
			p.acks = append(p.acks, Frame{SrcNode: f.DstNode, DstNode: f.SrcNode,
				Frame: roce.Frame{Src: f.Dst, Dst: f.Src, SrcPort: f.SrcPort, Packet: a}})
		}
		if p.count.n++; p.count.n >= p.count.stop {
			p.count.e.Stop()
		}
	}
	for len(p.acks) > 0 && p.out.Ready() {
		p.out.Send(p.acks[0])
		p.acks = p.acks[1:]
	}
	return false // the wire wakes it when it takes more, or brings a frame
}

// sqFeeder keeps the NIC's srd queues posted: their rings hold the same
// work requests lap after lap, so only the producer index moves.
type sqFeeder struct {
	u      *sim.Unit
	h      *testHost
	nic    *NIC
	qpns   []uint32
	tails  []uint64
	size   uint64
	period sim.Tick
}

func (f *sqFeeder) Tick(sim.Tick) bool {
	for i, qpn := range f.qpns {
		if head := f.nic.qps[qpn].sqHead; f.tails[i]-head < f.size/2 {
			f.tails[i] = head + f.size
			f.h.doorbell(8*uint64(qpn), f.tails[i])
		}
	}
	f.u.WakeIn(f.period)
	return false
}

// BenchmarkNICManyPeers is the host time per request frame a NIC sends
// when its 1 GbE wire is the bottleneck and 8, 64 or 512 srd queues each
// keep their window of work requests to a peer of its own posted
// (one-packet WRITEs, each ACKed by the peer): every peer context has
// packets waiting for the wire.
// ctx/frame is how many of them are active (what the NIC scanned at each
// edge before it was scheduled by events); ns/frame should not follow it.
func BenchmarkNICManyPeers(b *testing.B) {
	for _, peers := range []int{8, 64, 512} {
		b.Run(fmt.Sprintf("peers=%d", peers), func(b *testing.B) { benchManyPeers(b, peers) })
	}
}

func benchManyPeers(b *testing.B, peers int) {
	queues, sqSize := peers, ringEntries
	// The time is the NIC's own: without the check against its former scan.
	defer func(c bool) { schedCheck = c }(schedCheck)
	schedCheck = false
	e := sim.NewEngine(1)
	clk := e.NewClock("fabric", 1000, 0)
	s := DefaultSpec()
	s.ID, s.BAR = tlp.ID(0x0100), 0xf000_0000
	n, err := NewNIC(clk, "nic0", s)
	if err != nil {
		b.Fatal(err)
	}
	h := &testHost{mem: make([]byte, hostMemBytes), sizes: n.Spec().Sizes, bar: s.BAR, latency: 300 * sim.NS, writesAt: map[uint64]sim.Tick{}}
	h.u = clk.Add("host0", h)
	h.fromNIC = sim.NewChan[pcie.Packet](n.Unit(), h.u, "pcie_up", 8)
	h.toNIC = sim.NewChan[pcie.Packet](h.u, n.Unit(), "pcie_down", 8)
	n.DMAOut, n.DMAIn = h.fromNIC, h.toNIC
	count := &benchCount{e: e}
	p := &manyPeers{count: count, nic: n}
	p.u = clk.Add("peers", p)
	up, err := NewWire(clk, "up", DefaultWireSpec(), n.Unit(), p.u)
	if err != nil {
		b.Fatal(err)
	}
	down, err := NewWire(clk, "down", WireSpec{RateMbps: 10_000, LatencyPS: sim.US}, p.u, n.Unit())
	if err != nil {
		b.Fatal(err)
	}
	n.NetOut, n.NetIn = up.In, down.Out
	p.in, p.out = up.Out, down.In
	fd := &sqFeeder{h: h, nic: n, size: uint64(sqSize), period: 50 * sim.US}
	fd.u = clk.Add("feeder", fd)
	for k := 0; k < queues; k++ {
		base := uint64(ringsBase + 0x1000*k) // sqSize entries of WQESize: 4 KB
		c := QueueConfig{QPN: uint32(0x100 + k), SQBase: base, SQSize: sqSize, CQBase: 0, CQSize: 1}
		if err := n.CreateQueue(c); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < sqSize; j++ {
			w := WQE{Opcode: OpWrite, Length: 256, Local: 0x8000, Remote: 0x1000,
				DstNode: 1 + k, DstQPN: 0x100}
			w.Put(h.mem[base+uint64(j)*WQESize:])
		}
		fd.qpns = append(fd.qpns, c.QPN)
		fd.tails = append(fd.tails, 0)
	}
	// Warm up: every peer context made, the wire streaming.
	count.stop = 4*peers + 2000
	e.Run(sim.Never)
	ticks, n0 := e.UnitTicks(), count.n
	b.ResetTimer()
	count.stop = count.n + b.N
	e.Run(sim.Never)
	b.StopTimer()
	if count.n < count.stop {
		b.Fatalf("%d of %d frames", count.n-n0, b.N)
	}
	frames := float64(count.n - n0)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frames, "ns/frame")
	b.ReportMetric(float64(e.UnitTicks()-ticks)/frames, "evals/frame")
	if n.Peers() != peers {
		b.Fatalf("%d peer contexts, want %d", n.Peers(), peers)
	}
	p.sample, count.stop = true, count.n+200
	e.Run(sim.Never)
	b.ReportMetric(float64(p.actives)/float64(p.samples), "ctx/frame")
}
