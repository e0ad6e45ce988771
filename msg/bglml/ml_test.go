package bglml

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// send is one message of a delivery test.
type send struct {
	src, dst, size int
	proto          Protocol
	skew           int // the receive buffer's distance from 16-byte alignment
}

// received is what a receiver saw of one message.
type received struct {
	src, seq int
	data     []byte
	done     bool
}

// deliver runs the sends on a machine of dims (each node posts its sends
// in order, then advances until everything it expects has arrived and its
// layer is idle) and checks that every message arrives exactly once with
// every byte, that each pair's messages reach the upcall in the order
// they were posted, and that done() is called once per send.
func deliver(t *testing.T, dims torus.Coord, params Params, sends []send) (staged uint64) {
	t.Helper()
	return deliverStats(t, dims, params, sends).Staged
}

// deliverStats is deliver, with the layers' statistics summed; with
// Params.Coprocessor the nodes are in coprocessor mode.
func deliverStats(t *testing.T, dims torus.Coord, params Params, sends []send) (sum Stats) {
	t.Helper()
	spec := bgl.DefaultSpec(dims[0], dims[1], dims[2])
	if params.Coprocessor {
		spec = spec.WithMode(bgl.CoprocessorMode)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		t.Fatal(err)
	}
	return deliverOn(t, m, len(m.Nodes), "node", func(me int, up Handler) (*Layer, error) {
		return New(m, me, params, DefaultCosts(), up)
	}, sends)
}

// deliverOn runs the sends between the n ends of m (nodes, or tasks in
// virtual node mode: n/len(m.Nodes) a node), each end's layer made by
// open and its sender on the layer's core (each end posts its sends in
// order, then advances until everything it expects has arrived and its
// layer is idle), and checks that every message arrives exactly once with
// every byte, that each pair's messages reach the upcall in the order
// they were posted, and that done() is called once per send. It returns
// the layers' statistics summed.
func deliverOn(t *testing.T, m *bgl.Machine, n int, end string, open func(me int, up Handler) (*Layer, error), sends []send) (sum Stats) {
	t.Helper()
	perNode := n / len(m.Nodes)
	want := make([]int, n) // messages each end expects
	data := make([][]byte, len(sends))
	for i, s := range sends {
		want[s.dst]++
		data[i] = make([]byte, s.size)
		for k := range data[i] {
			data[i][k] = byte(i*31 + k*7 + k>>8)
		}
	}
	got := make([][]*received, n)
	sentDone := make([]int, len(sends))
	var layers []*Layer
	var failed []string
	for me := 0; me < n; me++ {
		nd := m.Nodes[me/perNode]
		l, err := open(me, func(src int, info []byte, size int) (uint64, func()) {
			seq := int(binary.LittleEndian.Uint32(info))
			a := nd.Alloc(size+32) + uint64(sends[seq].skew)
			r := &received{src: src, seq: seq}
			got[me] = append(got[me], r)
			return a, func() {
				if r.done {
					failed = append(failed, fmt.Sprintf("message %d: done twice", seq))
				}
				r.done = true
				r.data = make([]byte, size)
				nd.Mem.Read(a, r.data)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
		l.Core().Spawn("test", func(p *cpu.Proc) {
			for i, s := range sends {
				if s.src != me {
					continue
				}
				a := nd.Alloc(s.size + 1)
				nd.Mem.Write(a, data[i])
				info := binary.LittleEndian.AppendUint32(nil, uint32(i))
				if err := l.Send(p, &Message{Dst: s.dst, Info: info, Addr: a, Len: s.size, Proto: s.proto, Done: func() { sentDone[i]++ }}); err != nil {
					failed = append(failed, err.Error())
				}
			}
			if deliverWork != nil {
				deliverWork(p, l)
			}
			l.Until(p, func() bool {
				k := 0
				for _, r := range got[me] {
					if r.done {
						k++
					}
				}
				return k == want[me] && l.Idle()
			})
		})
	}
	m.World.Run(sim.S)
	for _, f := range failed {
		t.Error(f)
	}
	last := map[[2]int]int{}
	for me := range got {
		k := 0
		for _, r := range got[me] {
			if !r.done {
				t.Errorf("%s %d: message %d never completed", end, me, r.seq)
				continue
			}
			k++
			if s := sends[r.seq]; s.src != r.src || s.dst != me {
				t.Errorf("message %d (%d→%d) arrived at %s %d from %s %d", r.seq, s.src, s.dst, end, me, end, r.src)
			}
			if !bytes.Equal(r.data, data[r.seq]) {
				t.Errorf("message %d (%v, %d bytes, %d→%d): data differs", r.seq, sends[r.seq].proto, sends[r.seq].size, r.src, me)
			}
			pair := [2]int{r.src, me}
			if prev, ok := last[pair]; ok && prev > r.seq {
				t.Errorf("%s %d: message %d from %s %d reached the upcall after message %d", end, me, r.seq, end, r.src, prev)
			}
			last[pair] = r.seq
		}
		if k != want[me] {
			t.Errorf("%s %d: %d messages, want %d", end, me, k, want[me])
		}
	}
	for i, c := range sentDone {
		if c != 1 {
			t.Errorf("message %d: done() called %d times at the sender", i, c)
		}
	}
	for _, l := range layers {
		sum.Staged += l.Stats.Staged
		sum.Held += l.Stats.Held
		sum.Copied += l.Stats.Copied
		sum.Packets += l.Stats.Packets
		sum.CoRecv += l.Stats.CoRecv
		sum.CoPackets += l.Stats.CoPackets
		sum.ScanStops += l.Stats.ScanStops
		sum.Jumps += l.Stats.Jumps
	}
	return sum
}

// deliverWork, if set, is what each end's process does between posting
// its sends and waiting (the interrupt tests' computation).
var deliverWork func(p *cpu.Proc, l *Layer)

// TestProtocolsDeliver sends a range of sizes by every protocol between
// neighbours and across the torus, into aligned and misaligned buffers.
func TestProtocolsDeliver(t *testing.T) {
	sizes := []int{0, 1, 15, 200, 228, 229, 240, 241, 468, 469, 1000, 4097, 20000}
	for _, pr := range Protocols {
		t.Run(pr.String(), func(t *testing.T) {
			var sends []send
			for k, n := range sizes {
				if pr == OnePacket && firstHdr+4+n > torus.MaxPayload {
					continue
				}
				sends = append(sends, send{src: 0, dst: 1, size: n, proto: pr, skew: k % 3 * 5})
				sends = append(sends, send{src: 5, dst: 0, size: n, proto: pr, skew: k % 2 * 16})
			}
			deliver(t, torus.Coord{4, 2, 2}, DefaultParams(), sends)
		})
	}
}

// TestManyToOne has every node of a 4×4×2 torus send to node 0 at once,
// three messages each of mixed protocols, so that packets of many
// messages interleave in node 0's reception FIFOs; with adaptive eager,
// some packets arrive before their message's first and are staged.
func TestManyToOne(t *testing.T) {
	for _, params := range []Params{DefaultParams(), {EagerMax: 1200, Adaptive: true, Batch: 4}} {
		var sends []send
		for src := 1; src < 32; src++ {
			sends = append(sends,
				send{src: src, dst: 0, size: 700 + src, proto: Auto},
				send{src: src, dst: 0, size: 3000 + 17*src, proto: Auto},
				send{src: src, dst: 0, size: src, proto: Auto})
		}
		staged := deliver(t, torus.Coord{4, 4, 2}, params, sends)
		// Adaptive packets overtake their message's first (the staging
		// path runs); deterministic ones never do.
		if params.Adaptive != (staged > 0) {
			t.Errorf("adaptive %v: %d packets arrived before their message's first", params.Adaptive, staged)
		}
	}
}

// gaps sends three 1000-byte messages from node 0 to node 1 by proto and
// returns the cycles between their completions at the receiver, and the
// most confirmations the sender awaited at once and whether it ever
// waited for one.
func gaps(t *testing.T, proto Protocol) (gap []int, most int, la, lb *Layer) {
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(4, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	var arrivals []sim.Tick
	b := m.Nodes[1]
	lb, _ = New(m, 1, DefaultParams(), DefaultCosts(), func(int, []byte, int) (uint64, func()) {
		return b.Alloc(2000), func() { arrivals = append(arrivals, b.Torus.Eng.Now()) }
	})
	la, _ = New(m, 0, DefaultParams(), DefaultCosts(), func(int, []byte, int) (uint64, func()) { return 0, nil })
	a := m.Nodes[0]
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		buf := a.Alloc(2000)
		for k := 0; k < 3; k++ {
			if err := la.Send(p, &Message{Dst: 1, Addr: buf, Len: 1000, Proto: proto}); err != nil {
				t.Error(err)
			}
		}
		la.Until(p, func() bool {
			most = max(most, la.tokens[1])
			return la.Idle()
		})
	})
	b.Cores[0].Spawn("receiver", func(p *cpu.Proc) { lb.Until(p, func() bool { return len(arrivals) == 3 && lb.Idle() }) })
	m.World.Run(sim.S)
	if len(arrivals) != 3 {
		t.Fatalf("%v: %d messages arrived, want 3", proto, len(arrivals))
	}
	for k := 1; k < 3; k++ {
		gap = append(gap, int((arrivals[k]-arrivals[k-1])/m.Spec.Torus.Period()))
	}
	return gap, most, la, lb
}

// TestAdaptiveEagerConfirmation checks the confirmation: a sender's next
// adaptive-eager message to a receiver leaves only once the token for the
// previous one came back, so back-to-back messages complete at least a
// token's trip further apart than eager ones (whose packets follow each
// other at the link's pace), and never two confirmations are awaited.
func TestAdaptiveEagerConfirmation(t *testing.T) {
	eager, _, _, _ := gaps(t, Eager)
	adaptive, most, la, lb := gaps(t, AdaptiveEager)
	s := bgl.DefaultSpec(4, 2, 2).Torus
	// The token: written (a header and one chunk), a hop, seen whole.
	trip := s.HopCycles() + s.PacketCycles(1)
	for k := range eager {
		if adaptive[k] < eager[k]+trip {
			t.Errorf("message %d: %d cycles after the one before (eager: %d), want at least %d more (the token's trip)", k+1, adaptive[k], eager[k], trip)
		}
	}
	if most != 1 {
		t.Errorf("at most %d confirmations awaited at once, want 1", most)
	}
	if la.Stats.Messages[AdaptiveEager] != 3 || lb.Stats.Received != 3 {
		t.Errorf("stats: %+v / %+v", la.Stats, lb.Stats)
	}
	t.Logf("gaps: eager %v, adaptive eager %v cycles", eager, adaptive)
}

// TestBadInput checks the layer's refusals.
func TestBadInput(t *testing.T) {
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(m, 0, Params{EagerMax: -1, Batch: 8}, DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "bglml.eager_max: -1") {
		t.Errorf("eager max -1: %v", err)
	}
	if _, err := New(m, 0, Params{Batch: 0}, DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "bglml.batch: 0") {
		t.Errorf("batch 0: %v", err)
	}
	if _, err := New(m, 0, Params{Batch: 8, Pace: 2 * sim.S}, DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "bglml.pace: 2000000000000 ps out of range") {
		t.Errorf("pace 2 s: %v", err)
	}
	if _, err := New(m, 0, Params{Batch: 8, Window: -1}, DefaultCosts(), nil); err == nil || !strings.Contains(err.Error(), "bglml.window: -1 out of range") {
		t.Errorf("window -1: %v", err)
	}
	c := DefaultCosts()
	c.Upcall = -3
	if _, err := New(m, 0, DefaultParams(), c, nil); err == nil || !strings.Contains(err.Error(), "bglml.costs.upcall: -3") {
		t.Errorf("negative cost: %v", err)
	}
	for _, tc := range []struct {
		set  func(*MessageCosts)
		want string
	}{
		{func(m *MessageCosts) { m.Send[1] = -1 }, "bglml.costs.message.send.eager: -1 out of range (0 to 2^20 cycles)"},
		{func(m *MessageCosts) { m.Recv[3] = 1<<20 + 1 }, "bglml.costs.message.recv.rendezvous: 1048577 out of range (0 to 2^20 cycles)"},
	} {
		c := DefaultCosts()
		tc.set(&c.Message)
		if _, err := New(m, 0, DefaultParams(), c, nil); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %s", err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		want CostProfile
		err  bool
	}{{"estimated", Estimated, false}, {"table1", Table1, false}, {"table2", 0, true}, {"", 0, true}} {
		if got, err := ParseCostProfile(tc.name); (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseCostProfile(%q) = %v, %v", tc.name, got, err)
		}
	}
	if Estimated.Costs() != DefaultCosts() || Table1.Costs().Message != Table1Message || Table1.Costs().Post != DefaultCosts().Post {
		t.Error("the profiles' costs: estimated is DefaultCosts, table1 DefaultCosts with Table1Message")
	}
	if _, err := New(m, 4, DefaultParams(), DefaultCosts(), nil); err == nil {
		t.Error("node 4 of 4: no error")
	}
	if _, err := ParseProtocol("fast"); err == nil || !strings.Contains(err.Error(), "one-packet, eager") {
		t.Errorf("protocol fast: %v", err)
	}
	l, _ := New(m, 0, DefaultParams(), DefaultCosts(), nil)
	m.Nodes[0].Cores[0].Spawn("bad", func(p *cpu.Proc) {
		cases := []struct {
			m    Message
			want string
		}{
			{Message{Dst: 0, Len: 1}, "send to node 0"},
			{Message{Dst: 9, Len: 1}, "send to node 9"},
			{Message{Dst: 1, Len: 300, Proto: OnePacket}, "a one-packet message of 300 bytes"},
			{Message{Dst: 1, Len: 1, Info: make([]byte, 65)}, "65 bytes of info"},
			{Message{Dst: 1, Len: MaxMessage + 1}, "message of 1073741825 bytes"},
		}
		for _, c := range cases {
			if err := l.Send(p, &c.m); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%+v: %v, want %q", c.m, err, c.want)
			}
		}
		if err := l.Get(p, 0, 0, 0, 8, nil); err == nil {
			t.Error("get from itself: no error")
		}
	})
	m.World.Run(sim.S)
	if _, err := PingPong(bgl.DefaultSpec(2, 2, 1), DefaultParams(), DefaultCosts(), torus.Coord{}, torus.Coord{}, Eager, 1, 1); err == nil || !strings.Contains(err.Error(), "both ends") {
		t.Errorf("ping-pong to itself: %v", err)
	}
}

// deterministicBound is the most payload per second that deterministic
// routing lets into node 0 when every other node sends it as much: each
// source's packets come in on the port of the last dimension they travel
// (x, then y, then z; the shorter way round, ties +), so the busiest
// input link, at η × 175 MB/s, carries its share of the sources.
func deterministicBound(s torus.Spec) float64 {
	count := map[[2]int]int{}
	most, total := 0, 0
	for z := 0; z < s.Dims[2]; z++ {
		for y := 0; y < s.Dims[1]; y++ {
			for x := 0; x < s.Dims[0]; x++ {
				c := [3]int{x, y, z}
				if c == [3]int{} {
					continue
				}
				total++
				last := 2
				for c[last] == 0 {
					last--
				}
				n := s.Dims[last]
				dir := -1 // towards 0 the short way: down from c if c ≤ n/2
				if n > 2 && !s.Mesh && n-c[last] <= c[last] {
					dir = 1
				}
				k := [2]int{last, dir}
				count[k]++
				most = max(most, count[k])
			}
		}
	}
	link := 700e6 / float64(s.CyclesPerByte) * float64(torus.MaxPayload) / float64(torus.MaxPacketBytes+s.WireOverheadBytes)
	return link * float64(total) / float64(most)
}

// TestHotSpot is many-to-one traffic on a 4×4×2 torus: deterministic eager
// stays under what its routes allow into the hot node (the busiest input
// link carries 16 of the 31 sources), adaptive rendezvous spreads over its
// links and gets above that bound (L53, L129).
func TestHotSpot(t *testing.T) {
	s := bgl.DefaultSpec(4, 4, 2)
	bound := deterministicBound(s.Torus)
	params := Params{EagerMax: 1 << 20, Batch: 8}
	eager, err := HotSpot(s, params, DefaultCosts(), torus.Coord{}, Eager, 2000, 2)
	if err != nil {
		t.Fatal(err)
	}
	rdv, err := HotSpot(s, params, DefaultCosts(), torus.Coord{}, Rendezvous, 2000, 2)
	if err != nil {
		t.Fatal(err)
	}
	if eager > bound {
		t.Errorf("deterministic eager: %.1f MB/s, above its routes' bound %.1f MB/s", eager/1e6, bound/1e6)
	}
	if rdv <= bound {
		t.Errorf("adaptive rendezvous: %.1f MB/s, not above deterministic routing's bound %.1f MB/s", rdv/1e6, bound/1e6)
	}
	t.Logf("into one node: eager %.1f MB/s (bound %.1f), rendezvous %.1f MB/s", eager/1e6, bound/1e6, rdv/1e6)
}
