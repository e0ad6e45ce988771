package nic

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/aaemu/aaemu/internal/testtool"
	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// srdBench is nodes NICs with their hosts behind one switch, each with
// queues srd queues (QPN 0x100 + k, rings in the 64 KB at ringsBase +
// k × ringsStride); wireLoss[i] is the loss of node i's two wires. Every
// frame on the nodes' uplinks is captured.
type srdBench struct {
	t      *testing.T
	e      *sim.Engine
	nodes  []*benchNode
	queues int
	pcap   bytes.Buffer
	cp     *roce.Capture
	err    error
}

func newSRDBench(t *testing.T, seed uint64, nodes, queues int, wireLoss func(node int) uint32) *srdBench {
	t.Helper()
	b := &srdBench{t: t, e: sim.NewEngine(seed), queues: queues}
	clk := b.e.NewClock("fabric", 1000, 0)
	var names []string
	for i := 0; i < nodes; i++ {
		names = append(names, fmt.Sprintf("up%d", i))
	}
	var err error
	if b.cp, err = roce.NewCapture(&b.pcap, names); err != nil {
		t.Fatal(err)
	}
	sw, err := NewSwitch(clk, "switch", SwitchSpec{Ports: nodes, LatencyPS: 500 * sim.NS, QueueLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		s := DefaultSpec()
		s.Node, s.ID, s.BAR = i, tlp.ID(0x0100), 0xf000_0000
		n, err := NewNIC(clk, fmt.Sprintf("nic%d", i), s)
		if err != nil {
			t.Fatal(err)
		}
		h := &testHost{mem: make([]byte, hostMemBytes), sizes: n.Spec().Sizes, bar: s.BAR, latency: 300 * sim.NS, writesAt: map[uint64]sim.Tick{}}
		h.u = clk.Add(fmt.Sprintf("host%d", i), h)
		h.fromNIC = sim.NewChan[pcie.Packet](n.Unit(), h.u, fmt.Sprintf("pcie_up%d", i), 8)
		h.toNIC = sim.NewChan[pcie.Packet](h.u, n.Unit(), fmt.Sprintf("pcie_down%d", i), 8)
		n.DMAOut, n.DMAIn = h.fromNIC, h.toNIC
		nd := &benchNode{n: n, h: h, qps: map[uint32]*benchQP{}}
		b.nodes = append(b.nodes, nd)
		ws := WireSpec{RateMbps: 10_000, LatencyPS: sim.US}
		if wireLoss != nil {
			ws.LossPPM = wireLoss(i)
		}
		up, err := NewWire(clk, fmt.Sprintf("up%d", i), ws, n.Unit(), sw.Unit())
		if err != nil {
			t.Fatal(err)
		}
		down, err := NewWire(clk, fmt.Sprintf("down%d", i), ws, sw.Unit(), n.Unit())
		if err != nil {
			t.Fatal(err)
		}
		n.NetOut, n.NetIn = up.In, down.Out
		sw.SetPort(i, up.Out, down.In)
		i := i
		up.SetTap(captureTap(b.cp, i, &b.err))
		for k := 0; k < queues; k++ {
			base := uint64(ringsBase + ringsStride*k)
			c := QueueConfig{QPN: uint32(0x100 + k), SQBase: base, SQSize: ringEntries, CQBase: base + 0x4000, CQSize: ringEntries,
				RQBase: base + 0x8000, RQSize: ringEntries, RCQBase: base + 0xc000}
			if err := n.CreateQueue(c); err != nil {
				t.Fatal(err)
			}
			nd.qps[c.QPN] = &benchQP{cfg: QPConfig{QPN: c.QPN, SQBase: c.SQBase, CQBase: c.CQBase, RQBase: c.RQBase, RCQBase: c.RCQBase}}
		}
	}
	return b
}

func (b *srdBench) pair() *pairBench {
	return &pairBench{t: b.t, e: b.e, nodes: [2]*benchNode{b.nodes[0], b.nodes[1]}}
}

// post, postRecv and the completion readers are the pair bench's, on any
// node.
func (b *srdBench) post(node, k int, ws ...WQE) {
	nd := b.nodes[node]
	q := nd.qps[uint32(0x100+k)]
	for _, w := range ws {
		w.Put(nd.h.mem[q.cfg.SQBase+(q.sqTail%ringEntries)*WQESize:])
		q.sqTail++
	}
	nd.h.doorbell(8*uint64(q.cfg.QPN), q.sqTail)
}

func (b *srdBench) postRecv(node, k int, addr uint64, size uint32, count int) {
	nd := b.nodes[node]
	q := nd.qps[uint32(0x100+k)]
	for i := 0; i < count; i++ {
		r := nd.h.mem[q.cfg.RQBase+(q.rqTail%ringEntries)*RWQESize:]
		binary.LittleEndian.PutUint64(r, addr+uint64(i)*uint64(size))
		binary.LittleEndian.PutUint32(r[8:], size)
		q.rqTail++
	}
	nd.h.doorbell(RQDoorbells+8*uint64(q.cfg.QPN), q.rqTail)
}

func (b *srdBench) completions(node int, base uint64) []CQE {
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

func (b *srdBench) sendCQEs(node, k int) []CQE {
	return b.completions(node, b.nodes[node].qps[uint32(0x100+k)].cfg.CQBase)
}

func (b *srdBench) recvCQEs(node, k int) []CQE {
	return b.completions(node, b.nodes[node].qps[uint32(0x100+k)].cfg.RCQBase)
}

func (b *srdBench) run(limit sim.Tick) {
	b.t.Helper()
	b.e.Run(limit)
	if err := b.cp.Flush(); err != nil && b.err == nil {
		b.err = err
	}
	if b.err != nil {
		b.t.Fatal(b.err)
	}
}

// The srd mix's memory on every node, per (node i, queue k) pair at index
// x = i × queues + k: x × srdSlot of each area holds the sources of its
// WRITEs, SENDs and of the READs of it, the WRITE of x, the data queue k
// READ from node i, queue k's receive buffers (one per peer), x's
// fetch-and-add counter and compare-and-swap word.
const (
	srdSlot     = 0x4000
	srdAreas    = 48 * srdSlot
	srdSrc      = dataBase
	srdWritten  = srdSrc + srdAreas
	srdReadInto = srdWritten + srdAreas
	srdRecv     = srdReadInto + srdAreas
	srdWords    = srdRecv + srdAreas
)

func srdFill(b *srdBench) {
	for i, nd := range b.nodes {
		src := nd.h.mem[srdSrc : srdSrc+srdAreas]
		for x := range src {
			src[x] = byte(x*7 + 31*i + x>>9)
		}
	}
}

// srdOps is what queue k of node i posts to node j: a WRITE, a READ, a
// fetch-and-add, a compare-and-swap and a SEND to queue (k+1) mod queues
// of j, several packets each but the atomics. wr_id: 100 × j + op.
func srdOps(b *srdBench, i, k, j int) []WQE {
	x := uint64(i*b.queues + k)
	y := uint64(j*b.queues + k)
	size := uint32(1000 + 700*((i+j+k)%5))
	dst := func(w WQE) WQE {
		w.DstNode, w.DstQPN, w.Signaled = j, uint32(0x100+(k+1)%b.queues), true
		return w
	}
	return []WQE{
		dst(WQE{Opcode: OpWrite, WRID: uint64(100*j + 0), Length: size, Local: srdSrc + x*srdSlot, Remote: srdWritten + x*srdSlot}),
		dst(WQE{Opcode: OpRead, WRID: uint64(100*j + 1), Length: size + 11, Local: srdReadInto + y*srdSlot, Remote: srdSrc + x*srdSlot}),
		dst(WQE{Opcode: OpFetchOp, WRID: uint64(100*j + 2), Remote: srdWords + x*16, Compare: x + 1}),
		dst(WQE{Opcode: OpCAS, WRID: uint64(100*j + 3), Remote: srdWords + x*16 + 8, Compare: 0, Swap: 1000 + x}),
		dst(WQE{Opcode: OpSend, WRID: uint64(100*j + 4), Length: size / 2, Local: srdSrc + x*srdSlot}),
	}
}

// runSRDMix has every queue of every node post the mix to every other
// node, interleaved across destinations, and checks that each work request
// completed once, successfully, on its own queue, and did what it says
// once: data in place, each counter added to once, each SEND received
// once into its queue's buffers.
func runSRDMix(t *testing.T, b *srdBench) {
	t.Helper()
	nodes, queues := len(b.nodes), b.queues
	srdFill(b)
	for j := range b.nodes {
		for k := 0; k < queues; k++ {
			b.postRecv(j, k, srdRecv+uint64(j*queues+k)*srdSlot, srdSlot/uint32(nodes), nodes-1)
		}
	}
	b.run(10 * sim.US)
	for i := range b.nodes {
		for k := 0; k < queues; k++ {
			var byDst [][]WQE
			for j := range b.nodes {
				if j != i {
					byDst = append(byDst, srdOps(b, i, k, j))
				}
			}
			var ws []WQE // round robin over the destinations
			for op := 0; op < 5; op++ {
				for _, d := range byDst {
					ws = append(ws, d[op])
				}
			}
			b.post(i, k, ws...)
		}
	}
	b.run(sim.S)
	for i, nd := range b.nodes {
		if nd.n.Peers() != nodes-1 {
			t.Errorf("node %d holds %d peer contexts, want %d", i, nd.n.Peers(), nodes-1)
		}
		if p := nd.n.Pending(); len(p) != 0 {
			t.Errorf("node %d: pending %v", i, p)
		}
		for k := 0; k < queues; k++ {
			cqes := b.sendCQEs(i, k)
			var got []uint64
			for _, c := range cqes {
				if c.Status != StatusOK {
					t.Errorf("node %d queue %d: wr %d status %s", i, k, c.WRID, StatusText(c.Status))
				}
				got = append(got, c.WRID)
			}
			var want []uint64
			for j := range b.nodes {
				for op := 0; op < 5 && j != i; op++ {
					want = append(want, uint64(100*j+op))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("node %d queue %d: completions %v, want each of %v once", i, k, got, want)
			}
			// Per peer, completions are in posting order.
			last := map[int]uint64{}
			for _, c := range cqes {
				j := int(c.WRID / 100)
				if op, ok := last[j]; ok && c.WRID%100 < op {
					t.Errorf("node %d queue %d: completions to node %d out of order: %v", i, k, j, cqes)
				}
				last[j] = c.WRID % 100
				if c.WRID%100 == 3 && c.Value != 0 {
					t.Errorf("node %d queue %d: CAS on node %d found %d, want 0", i, k, j, c.Value)
				}
			}
			x := uint64(i*queues + k)
			for j, peer := range b.nodes {
				if j == i {
					continue
				}
				ops := srdOps(b, i, k, j)
				w := ops[0]
				if !bytes.Equal(peer.h.mem[w.Remote:w.Remote+uint64(w.Length)], nd.h.mem[w.Local:w.Local+uint64(w.Length)]) {
					t.Errorf("node %d queue %d: WRITE to node %d: data differs", i, k, j)
				}
				r := ops[1]
				if !bytes.Equal(nd.h.mem[r.Local:r.Local+uint64(r.Length)], peer.h.mem[r.Remote:r.Remote+uint64(r.Length)]) {
					t.Errorf("node %d queue %d: READ from node %d: data differs", i, k, j)
				}
				if v := binary.LittleEndian.Uint64(peer.h.mem[srdWords+x*16:]); v != x+1 {
					t.Errorf("node %d queue %d: fetch-and-add on node %d: counter %d, want %d (added once)", i, k, j, v, x+1)
				}
				if v := binary.LittleEndian.Uint64(peer.h.mem[srdWords+x*16+8:]); v != 1000+x {
					t.Errorf("node %d queue %d: CAS on node %d: word %d, want %d", i, k, j, v, 1000+x)
				}
			}
		}
		// Each queue received one SEND from queue k-1 of every other node,
		// into its buffers in arrival order; the completion's Value names
		// the sender.
		for k := 0; k < queues; k++ {
			from := (k + queues - 1) % queues
			rc := b.recvCQEs(i, k)
			var senders []int
			for _, c := range rc {
				src := int(c.Value)
				senders = append(senders, src)
				s := srdOps(b, src, from, i)[4]
				buf := srdRecv + uint64(i*queues+k)*srdSlot + c.WRID*uint64(srdSlot/uint32(nodes))
				if c.Status != StatusOK || c.Length != s.Length ||
					!bytes.Equal(nd.h.mem[buf:buf+uint64(s.Length)], b.nodes[src].h.mem[s.Local:s.Local+uint64(s.Length)]) {
					t.Errorf("node %d queue %d: receive %+v from node %d: wrong", i, k, c, src)
				}
			}
			slices.Sort(senders)
			var want []int
			for j := range b.nodes {
				if j != i {
					want = append(want, j)
				}
			}
			if !slices.Equal(senders, want) {
				t.Errorf("node %d queue %d received from %v, want %v once each", i, k, senders, want)
			}
		}
	}
}

func TestSRDMix(t *testing.T) {
	for _, tc := range []struct {
		nodes, queues int
		lossPPM       uint32
		seed          uint64
	}{
		{2, 1, 0, 1},
		{4, 4, 0, 1},
		{6, 8, 0, 2},
		// Loss: a context's go-back-N resends packets of several queues'
		// work requests, interleaved; each still executes once.
		{4, 4, 20_000, 1},
		{4, 4, 50_000, 7},
		{5, 6, 30_000, 3},
	} {
		t.Run(fmt.Sprintf("nodes=%d,queues=%d,loss=%dppm,seed=%d", tc.nodes, tc.queues, tc.lossPPM, tc.seed), func(t *testing.T) {
			b := newSRDBench(t, tc.seed, tc.nodes, tc.queues, func(int) uint32 { return tc.lossPPM })
			runSRDMix(t, b)
			retrans := uint64(0)
			for i := range b.nodes {
				retrans += b.nodes[i].n.Health().Retransmitted
			}
			if tc.lossPPM > 0 && retrans == 0 {
				t.Fatal("no retransmissions at loss")
			}
			if tc.lossPPM == 0 && retrans != 0 {
				t.Fatalf("%d retransmissions without loss", retrans)
			}
			// The peer contexts share their NIC's host-ring state, which
			// they must never write: it stays zero.
			for i := range b.nodes {
				if h := &b.nodes[i].n.peerHost; !reflect.DeepEqual(*h, qpHost{}) {
					t.Errorf("node %d: the peer contexts wrote their shared ring state: %+v", i, *h)
				}
			}
			frames := readCapture(t, b.pcap.Bytes())
			for _, c := range frames {
				d := c.f.Packet.DestQP
				if isRequest(c.op()) && (d < 0x100 || d >= uint32(0x100+b.queues)) || !isRequest(c.op()) && d != SRDPeerQPN {
					t.Fatalf("frame %s to QP %#x: requests go to a queue, answers to %#x", roce.OpName(c.op()), d, SRDPeerQPN)
				}
			}
		})
	}
}

// Same seed, same bytes on the wire.
func TestSRDDeterministic(t *testing.T) {
	var caps [2][]byte
	for r := range caps {
		b := newSRDBench(t, 5, 4, 3, func(int) uint32 { return 20_000 })
		runSRDMix(t, b)
		caps[r] = b.pcap.Bytes()
	}
	if !bytes.Equal(caps[0], caps[1]) {
		t.Fatal("two runs with one seed captured different frames")
	}
}

// A context is created by the first work request for a peer or by the
// first request from it, and not otherwise: answering a peer uses the
// context its request created, and a node's own work towards that peer
// later uses it too.
func TestSRDLazyContexts(t *testing.T) {
	b := newSRDBench(t, 1, 4, 2, nil)
	srdFill(b)
	peers := func() []int {
		var p []int
		for _, nd := range b.nodes {
			p = append(p, nd.n.Peers())
		}
		return p
	}
	if got := peers(); !slices.Equal(got, []int{0, 0, 0, 0}) {
		t.Fatalf("contexts before any traffic %v", got)
	}
	b.post(0, 1, WQE{Opcode: OpWrite, Signaled: true, WRID: 1, Length: 3000, Local: srdSrc, Remote: srdWritten, DstNode: 2, DstQPN: 0x100})
	b.run(sim.MS)
	if got := peers(); !slices.Equal(got, []int{1, 0, 1, 0}) {
		t.Fatalf("contexts after node 0 wrote to node 2: %v, want [1 0 1 0] (node 2's from the request)", got)
	}
	if s, ok := b.nodes[2].n.PeerStatus(0, 0); !ok || s.Kind != "srd peer" || s.RemoteNode != 0 {
		t.Fatalf("node 2's context for node 0: %+v %v", s, ok)
	}
	// Node 2 reads back from node 0 on its context from the receiving side.
	b.post(2, 0, WQE{Opcode: OpRead, Signaled: true, WRID: 7, Length: 3000, Local: srdReadInto, Remote: srdSrc, DstNode: 0, DstQPN: 0x101})
	b.run(2 * sim.MS)
	if got := peers(); !slices.Equal(got, []int{1, 0, 1, 0}) {
		t.Fatalf("contexts after node 2 read from node 0: %v, want [1 0 1 0]", got)
	}
	if c := b.sendCQEs(2, 0); len(c) != 1 || c[0].WRID != 7 || c[0].Status != StatusOK ||
		!bytes.Equal(b.nodes[2].h.mem[srdReadInto:srdReadInto+3000], b.nodes[0].h.mem[srdSrc:srdSrc+3000]) {
		t.Fatalf("node 2's READ: %+v", c)
	}
	if c := b.sendCQEs(0, 1); len(c) != 1 || c[0].WRID != 1 || c[0].Status != StatusOK {
		t.Fatalf("node 0's WRITE: %+v", c)
	}
	// Malformed destinations complete at once, without a context.
	b.post(1, 0, WQE{Opcode: OpWrite, Signaled: true, WRID: 9, Length: 8, Local: srdSrc, Remote: srdWritten, DstNode: 1})
	b.run(3 * sim.MS)
	if c := b.sendCQEs(1, 0); len(c) != 1 || c[0].Status != StatusBadRequest || b.nodes[1].n.Peers() != 0 {
		t.Fatalf("a work request to the node itself: %+v, %d contexts", c, b.nodes[1].n.Peers())
	}
}

// When node 2 is cut off, node 0's context for it runs out of retries: the
// work request of its oldest packet fails with StatusRetryExceeded on the
// queue it was posted to, the other queue's work for node 2 is flushed on
// that queue, and the work both queues have for node 1 completes.
func TestSRDRetryExceededFailsTheRightQueue(t *testing.T) {
	b := newSRDBench(t, 1, 3, 2, func(i int) uint32 {
		if i == 2 {
			return 1_000_000
		}
		return 0
	})
	if err := b.nodes[0].n.SetPeerRetry(2, DefaultRNRRetry); err != nil {
		t.Fatal(err)
	}
	srdFill(b)
	w := func(id uint64, dst int, op uint8) WQE {
		return WQE{Opcode: op, Signaled: true, WRID: id, Length: 2000, Local: srdReadInto + id*srdSlot, Remote: srdSrc + id*srdSlot, DstNode: dst, DstQPN: 0x100}
	}
	b.post(0, 0, w(1, 2, OpWrite), w(2, 1, OpWrite))
	b.post(0, 1, w(3, 2, OpRead), w(4, 1, OpRead))
	b.run(100 * sim.MS)
	b.post(0, 1, w(5, 2, OpWrite), w(6, 1, OpWrite)) // after the failure
	b.run(200 * sim.MS)
	got := func(k int) string {
		var s []string
		for _, c := range b.sendCQEs(0, k) {
			s = append(s, fmt.Sprintf("%d:%s", c.WRID, StatusText(c.Status)))
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	if g, want := got(0), "1:transport retries exceeded 2:success"; g != want {
		t.Errorf("queue 0: %s, want %s", g, want)
	}
	if g, want := got(1), "3:flushed 4:success 5:flushed 6:success"; g != want {
		t.Errorf("queue 1: %s, want %s", g, want)
	}
	if s, _ := b.nodes[0].n.PeerStatus(2, 0); s.State != QPStateError || s.Failed != StatusRetryExceeded || s.Timeouts != 3 {
		t.Errorf("context for node 2: %v", s)
	}
	if s, _ := b.nodes[0].n.PeerStatus(1, 0); s.State != QPStateRTS || !s.Idle() {
		t.Errorf("context for node 1: %v", s)
	}
	if h := b.nodes[0].n.Health(); h.RetryExceeded != 1 || h.Flushed != 2 {
		t.Errorf("health %+v, want 1 retry exceeded and 2 flushed", h)
	}
	if p := b.nodes[0].n.Pending(); len(p) != 1 || !strings.HasPrefix(p[0].String(), "srd context for node 2 NIC 0 ERR after transport retries exceeded") {
		t.Errorf("pending %v", p)
	}
}

// A SEND to a queue without receive buffers draws RNR NAKs until one is
// posted; a SEND to no queue fails at the responder (remote error) and
// does not hold up what follows.
func TestSRDSendRNRAndInvalidQueue(t *testing.T) {
	b := newSRDBench(t, 1, 2, 2, nil)
	srdFill(b)
	s := func(id uint64, qpn uint32, n uint32) WQE {
		return WQE{Opcode: OpSend, Signaled: true, WRID: id, Length: n, Local: srdSrc, DstNode: 1, DstQPN: qpn}
	}
	b.post(0, 0, s(1, 0x100, 3000), s(2, 0x1ff, 2500), s(3, 0x101, 100))
	b.run(30 * sim.US)
	b.postRecv(1, 0, srdRecv, 4096, 1)
	b.postRecv(1, 1, srdRecv+0x10000, 4096, 1)
	b.run(sim.S)
	var st []string
	for _, c := range b.sendCQEs(0, 0) {
		st = append(st, fmt.Sprintf("%d:%s", c.WRID, StatusText(c.Status)))
	}
	if g := strings.Join(st, " "); g != "1:success 2:remote error 3:success" {
		t.Fatalf("completions %s", g)
	}
	if b.nodes[0].n.Health().Retransmitted == 0 || b.counter("nic0.rnr_naks") == 0 {
		t.Fatal("no RNR NAK and resend")
	}
	for k, want := range []uint32{3000, 100} {
		if rc := b.recvCQEs(1, k); len(rc) != 1 || rc[0].Length != want || rc[0].Value != 0 {
			t.Fatalf("queue %d received %+v", k, rc)
		}
	}
}

func (b *srdBench) counter(name string) uint64 { return b.pair().counter(name) }

// What a node holds for srd: per queue its rings (in host memory), per
// peer context one qp struct and its map entry (no rings, no probes),
// measured on the heap; nothing for peers it never talked to.
func TestSRDContextSize(t *testing.T) {
	b := newSRDBench(t, 1, 2, 1, nil)
	n := b.nodes[0].n
	const peers = 4096
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < peers; i++ {
		n.peer(i+2, 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (after.HeapAlloc - before.HeapAlloc) / peers
	t.Logf("srd peer context: %d bytes on the heap (the qp struct is %d; its slices stay empty while idle)", per, unsafe.Sizeof(qp{}))
	if n.Peers() != peers || per > 1024 {
		t.Fatalf("%d contexts of %d bytes each", n.Peers(), per)
	}
}

// tshark decodes the srd transport's frames as RoCE, DestQP as the srd
// transport sets it.
func TestSRDCaptureDecodes(t *testing.T) {
	tshark := testtool.Need(t, "tshark")
	b := newSRDBench(t, 3, 3, 2, func(int) uint32 { return 30_000 })
	runSRDMix(t, b)
	path := filepath.Join(t.TempDir(), "srd.pcapng")
	if err := os.WriteFile(path, b.pcap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tshark, testtool.TsharkArgs("-r", path, "-T", "fields", "-E", "separator=,",
		"-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn")...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	frames := readCapture(t, b.pcap.Bytes())
	if len(lines) != len(frames) {
		t.Fatalf("tshark read %d frames, the capture has %d", len(lines), len(frames))
	}
	for i, c := range frames {
		want := fmt.Sprintf("%d,0x%06x,%d", c.op(), c.f.Packet.DestQP, c.f.Packet.PSN)
		if lines[i] != want {
			t.Fatalf("frame %d: tshark says %q, want %q", i+1, lines[i], want)
		}
	}
	bad, err := exec.Command(tshark, testtool.TsharkArgs("-r", path, "-Y", "_ws.malformed || _ws.expert.severity >= warning")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(bad)); s != "" {
		t.Fatalf("tshark flags frames:\n%s", s)
	}
}

// The NIC hands each DMA read's buffer back to its requester once it has
// parsed or copied the data, and the next read reuses it. With every
// buffer overwritten when it is handed back (SetPoison), a NIC that still
// read one after would move garbage: every work request must still do
// what it says (runSRDMix checks the data in place), with the very frames
// of an unpoisoned run.
func TestRecycledReadBuffersPoisoned(t *testing.T) {
	var caps [2][]byte
	for r, poison := range []bool{false, true} {
		b := newSRDBench(t, 3, 4, 3, func(int) uint32 { return 20_000 })
		for _, nd := range b.nodes {
			nd.n.req.SetPoison(poison)
		}
		runSRDMix(t, b)
		caps[r] = b.pcap.Bytes()
		if poison {
			reused := false
			for _, nd := range b.nodes {
				reused = reused || len(nd.n.req.Spare()) > 0
			}
			if !reused {
				t.Fatal("no buffer was handed back: the poison tests nothing")
			}
		}
	}
	if !bytes.Equal(caps[0], caps[1]) {
		t.Fatal("poisoned buffers changed the frames: a buffer was handed back while in use")
	}
}
