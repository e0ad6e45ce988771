package nic

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verify/monitor"
)

// testHost is the host side of a NIC without an IOMMU or a PCIe link: a
// flat memory that answers the NIC's reads and AtomicOps after a latency,
// takes its writes, and rings doorbells.
type testHost struct {
	u        *sim.Unit
	mem      []byte
	sizes    pcie.Sizes
	bar      uint64
	latency  sim.Tick
	fromNIC  *sim.Chan[pcie.Packet]
	toNIC    *sim.Chan[pcie.Packet]
	out      []timedTLP
	writesAt map[uint64]sim.Tick // the time of the latest write at each address written
}

type timedTLP struct {
	at sim.Tick
	t  tlp.TLP
}

const hostMemBytes = 8 << 20

func (h *testHost) Tick(now sim.Tick) bool {
	for h.fromNIC.Valid() {
		p := h.fromNIC.Recv()
		h.handle(&p.TLP, now)
	}
	for len(h.out) > 0 && h.out[0].at <= now && h.toNIC.Ready() {
		h.toNIC.Send(pcie.Packet{TLP: h.out[0].t})
		h.out = h.out[1:]
	}
	if len(h.out) > 0 {
		if h.out[0].at <= now {
			return true
		}
		h.u.WakeAt(h.out[0].at)
	}
	return false
}

func (h *testHost) handle(t *tlp.TLP, now sim.Tick) {
	const completer = tlp.ID(0)
	switch {
	case t.Kind == tlp.MWr:
		if t.Addr>>20 == 0xfee {
			return // an MSI
		}
		a := t.Addr + uint64(t.FirstByteOffset())
		n := t.EnabledBytes()
		copy(h.mem[a:a+uint64(n)], t.Data[t.FirstByteOffset():])
		h.writesAt[a] = now
	case t.Kind == tlp.MRd:
		for _, c := range h.sizes.SplitCompletions(t, completer, func(addr uint64, n int) []byte {
			return append([]byte(nil), h.mem[addr:addr+uint64(n)]...)
		}) {
			h.out = append(h.out, timedTLP{now + h.latency, c})
		}
	case t.Kind == tlp.FetchAdd || t.Kind == tlp.CAS:
		old := binary.LittleEndian.Uint64(h.mem[t.Addr:])
		if t.Kind == tlp.FetchAdd {
			binary.LittleEndian.PutUint64(h.mem[t.Addr:], old+binary.LittleEndian.Uint64(t.Data))
		} else if old == binary.LittleEndian.Uint64(t.Data) {
			copy(h.mem[t.Addr:t.Addr+8], t.Data[8:16])
		}
		data := binary.LittleEndian.AppendUint64(nil, old)
		h.out = append(h.out, timedTLP{now + h.latency, tlp.NewCompletion(t, completer, tlp.SC, 8, uint8(t.Addr&0x7f), data)})
	}
}

// doorbell writes v to the NIC's BAR at off, as software's MMIO store.
func (h *testHost) doorbell(off, v uint64) {
	var d [8]byte
	binary.LittleEndian.PutUint64(d[:], v)
	h.out = append(h.out, timedTLP{0, tlp.NewMemWrite(0, 0, h.bar+off, d[:])})
	h.u.WakeIn(1)
}

// Each QP's rings live in their own 64 KB of host memory; payload buffers
// start at 1 MB.
const (
	ringsBase   = 0x10000
	ringsStride = 0x10000
	ringEntries = 64
	dataBase    = 1 << 20
)

// benchQP is software's view of one queue pair: its ring addresses and the
// producer indices it has published.
type benchQP struct {
	cfg            QPConfig
	sqTail, rqTail uint64
}

type benchNode struct {
	n   *NIC
	h   *testHost
	qps map[uint32]*benchQP
}

// pairBench is two nodes, each a NIC with its host, joined by one wire per
// direction; a capture taps both wires as a run's pcapng does (every frame
// a wire transmits, the lost ones marked "lost" in the comment).
type pairBench struct {
	t     *testing.T
	e     *sim.Engine
	nodes [2]*benchNode
	wires [2]*Wire // wires[i] carries node i's frames
	pcap  bytes.Buffer
	cp    *roce.Capture
	err   error
	mon   *monitor.Log // the protocol monitors' reports
}

func pktTLP(p *pcie.Packet) (sim.TxnID, *tlp.TLP) { return p.ID, &p.TLP }

func newPair(t *testing.T, seed uint64, spec Spec, wire WireSpec) *pairBench {
	t.Helper()
	b := &pairBench{t: t, e: sim.NewEngine(seed), mon: monitor.NewLog(20)}
	clk := b.e.NewClock("fabric", 1000, 0)
	rc := monitor.NewRC(b.mon, spec.PMTU)
	t.Cleanup(func() {
		if err := b.mon.Err(); err != nil {
			t.Error(err)
		}
	})
	var err error
	if b.cp, err = roce.NewCapture(&b.pcap, []string{"wire01", "wire10"}); err != nil {
		t.Fatal(err)
	}
	for i := range b.nodes {
		s := spec
		s.Node, s.ID, s.BAR = i, tlp.ID(0x0100), 0xf000_0000
		n, err := NewNIC(clk, fmt.Sprintf("nic%d", i), s)
		if err != nil {
			t.Fatal(err)
		}
		h := &testHost{mem: make([]byte, hostMemBytes), sizes: n.Spec().Sizes, bar: s.BAR, latency: 300 * sim.NS, writesAt: map[uint64]sim.Tick{}}
		h.u = clk.Add(fmt.Sprintf("host%d", i), h)
		h.fromNIC = sim.NewChan[pcie.Packet](n.Unit(), h.u, fmt.Sprintf("up%d", i), 8)
		h.toNIC = sim.NewChan[pcie.Packet](h.u, n.Unit(), fmt.Sprintf("down%d", i), 8)
		n.DMAOut, n.DMAIn = h.fromNIC, h.toNIC
		// The protocol monitors watch the NIC's channels to its host and
		// the RC rules with what the NIC executes there.
		l := monitor.NewPCIeLink(b.mon, monitor.DirSpec{Name: fmt.Sprintf("up%d", i), MPS: n.Spec().Sizes.MPS},
			monitor.DirSpec{Name: fmt.Sprintf("down%d", i), RCB: n.Spec().Sizes.RCB})
		monitor.WatchChan(l, 0, b.e, h.fromNIC, pktTLP)
		monitor.WatchChan(l, 1, b.e, h.toNIC, pktTLP)
		node := i
		h.fromNIC.Watch(func(p *pcie.Packet) {
			if p.TLP.Kind.HasData() && !p.TLP.Kind.IsCompletion() {
				rc.TLP(node, b.e.Now(), p.ID, p.Cause, &p.TLP)
			}
		}, nil)
		b.nodes[i] = &benchNode{n: n, h: h, qps: map[uint32]*benchQP{}}
	}
	for i := range b.wires {
		tx, rx := b.nodes[i].n, b.nodes[1-i].n
		w, err := NewWire(clk, fmt.Sprintf("wire%d%d", i, 1-i), wire, tx.Unit(), rx.Unit())
		if err != nil {
			t.Fatal(err)
		}
		tx.NetOut, rx.NetIn = w.In, w.Out
		w.SetTap(captureTap(b.cp, i, &b.err))
		name := w.Unit().Name()
		w.AddTap(func(at sim.Tick, f *Frame, lost bool) { rc.Frame(name, at, f.ID, &f.Frame, lost) })
		b.wires[i] = w
	}
	return b
}

// connect creates QP qpn on both nodes, each the other's peer, with its
// rings in the host memory of its node.
func (b *pairBench) connect(qpn uint32) {
	b.t.Helper()
	for i, nd := range b.nodes {
		base := uint64(ringsBase + ringsStride*len(nd.qps))
		c := QPConfig{QPN: qpn, RemoteNode: 1 - i, RemoteQPN: qpn,
			SQBase: base, SQSize: ringEntries, CQBase: base + 0x4000, CQSize: ringEntries,
			RQBase: base + 0x8000, RQSize: ringEntries, RCQBase: base + 0xc000}
		if err := nd.n.CreateQP(c); err != nil {
			b.t.Fatal(err)
		}
		nd.qps[qpn] = &benchQP{cfg: c}
	}
}

// post writes work requests into node's send queue and rings its doorbell
// once for all of them.
func (b *pairBench) post(node int, qpn uint32, ws ...WQE) {
	nd := b.nodes[node]
	q := nd.qps[qpn]
	for _, w := range ws {
		w.Put(nd.h.mem[q.cfg.SQBase+(q.sqTail%ringEntries)*WQESize:])
		q.sqTail++
	}
	nd.h.doorbell(8*uint64(qpn), q.sqTail)
}

// postRecv posts receive buffers of size bytes at addr, addr+size, ...
func (b *pairBench) postRecv(node int, qpn uint32, addr uint64, size uint32, count int) {
	nd := b.nodes[node]
	q := nd.qps[qpn]
	for i := 0; i < count; i++ {
		r := nd.h.mem[q.cfg.RQBase+(q.rqTail%ringEntries)*RWQESize:]
		binary.LittleEndian.PutUint64(r, addr+uint64(i)*uint64(size))
		binary.LittleEndian.PutUint32(r[8:], size)
		q.rqTail++
	}
	nd.h.doorbell(RQDoorbells+8*uint64(qpn), q.rqTail)
}

// completions reads the entries the NIC wrote into a completion ring.
func (b *pairBench) completions(node int, base uint64) []CQE {
	var out []CQE
	for i := uint64(0); i < ringEntries; i++ {
		c := ParseCQE(b.nodes[node].h.mem[base+i*CQESize:])
		if c.Seq != i+1 {
			break
		}
		out = append(out, c)
	}
	return out
}

func (b *pairBench) sendCQEs(node int, qpn uint32) []CQE {
	return b.completions(node, b.nodes[node].qps[qpn].cfg.CQBase)
}

func (b *pairBench) recvCQEs(node int, qpn uint32) []CQE {
	return b.completions(node, b.nodes[node].qps[qpn].cfg.RCQBase)
}

// run simulates until nothing is left to do or until limit.
func (b *pairBench) run(limit sim.Tick) {
	b.t.Helper()
	b.e.Run(limit)
	if b.err != nil {
		b.t.Fatal(b.err)
	}
}

// counter is a NIC's or a wire's statistic.
func (b *pairBench) counter(name string) uint64 {
	b.t.Helper()
	st, ok := b.e.Stats().Get(name)
	if !ok {
		b.t.Fatalf("no statistic %s", name)
	}
	return st.(*sim.Counter).Value()
}

// captureTap writes the frames a wire sends into cp on interface i, with
// their transaction IDs as comments, keeping the first error in *errp.
func captureTap(cp *roce.Capture, i int, errp *error) Tap {
	return func(now sim.Tick, f *Frame, lost bool) {
		raw, err := f.Serialize()
		if err == nil {
			comment := fmt.Sprintf("txn=%d cause=%d", f.ID, f.Cause)
			if lost {
				comment += " lost"
			}
			err = cp.Write(i, uint64(now), raw, comment)
		}
		if err != nil && *errp == nil {
			*errp = err
		}
	}
}
