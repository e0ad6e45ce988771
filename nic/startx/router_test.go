package startx_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

// switched is nodes E5000s of the preset joined by Arctic routers (one
// 4-port router up to 4 nodes, a fat tree of them beyond).
func switched(t testing.TB, nodes int, mod func(s *startx.Spec), rs *startx.RouterSpec) *machine.Cluster {
	t.Helper()
	data, err := os.ReadFile("../../examples/machines/e5000.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.ParseScenario("e5000.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	ms := sc.ClusterSpec()
	ms.Nodes, ms.Cores = nodes, 2
	ns := startx.DefaultSpec()
	if mod != nil {
		mod(&ns)
	}
	ms.StartX, ms.StartXRouter = &ns, rs
	c, err := machine.New(sim.NewEngine(1), ms)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every node sends messages of both priorities to every other, through
// one router (4 nodes), a fat tree (6 and 8 nodes) and a router between
// two: each arrives once, exact and in order from each sender, nothing is
// refused, and the routers forwarded every packet on every hop.
func TestRouterDelivery(t *testing.T) {
	for _, tc := range []struct {
		nodes, routers int
		rs             *startx.RouterSpec
	}{{4, 1, nil}, {6, 5, nil}, {8, 6, nil}, {2, 1, &startx.RouterSpec{Ports: 2, BufferPackets: 1}}} {
		t.Run(fmt.Sprintf("%d nodes", tc.nodes), func(t *testing.T) {
			c := switched(t, tc.nodes, nil, tc.rs)
			if len(c.StartXRouters) != tc.routers {
				t.Fatalf("%d routers, want %d", len(c.StartXRouters), tc.routers)
			}
			const per = 5 // messages to each peer, of each priority
			n := tc.nodes
			got := make([][2][]startx.Msg, n)
			for i, nd := range c.Nodes {
				i, pt := i, &startx.Port{NIU: nd.NIU, Block: true}
				nd.Cores[0].Spawn("sender", func(p *cpu.Proc) {
					for k := 0; k < per; k++ {
						for d := 0; d < n; d++ {
							if d != i {
								pri := startx.Priority(k % 2)
								pt.Send(p, pri, d, uint32(100*i+k), payload(2+(i+d+k)%21, uint32(i*n+d)))
							}
						}
					}
				})
				nd.Cores[1].Spawn("receiver", func(p *cpu.Proc) {
					for len(got[i][0])+len(got[i][1]) < per*(n-1) {
						for pri := startx.High; pri <= startx.Low; pri++ {
							if m, ok := pt.Poll(p, pri); ok {
								got[i][pri] = append(got[i][pri], m)
							}
						}
					}
				})
			}
			c.Eng.Run(20 * sim.MS)
			hops := 0
			for i, nd := range c.Nodes {
				if len(nd.NIU.Errors()) > 0 {
					t.Fatalf("node %d refused: %v", i, nd.NIU.Errors())
				}
				next := make([]int, n) // per sender: the next k expected
				for pri := startx.High; pri <= startx.Low; pri++ {
					for s := range next {
						next[s] = int(pri)
					}
					for _, m := range got[i][pri] {
						k := int(m.H1) % 100
						if m.Src == i || int(m.H1)/100 != m.Src || k != next[m.Src] ||
							!equal(m.Payload, payload(2+(m.Src+i+k)%21, uint32(m.Src*n+i))) {
							t.Fatalf("node %d, %v: message %+v out of order or changed (want k %d)", i, pri, m, next[m.Src])
						}
						next[m.Src] += 2
					}
				}
				if len(got[i][0])+len(got[i][1]) != per*(n-1) {
					t.Fatalf("node %d received %d of %d", i, len(got[i][0])+len(got[i][1]), per*(n-1))
				}
			}
			for _, r := range c.StartXRouters {
				hops += int(r.Forwarded())
			}
			if min := per * n * (n - 1); hops < min {
				t.Fatalf("routers forwarded %d packets, fewer than the %d sent", hops, min)
			}
		})
	}
}

// Through a fat tree, with the receiver's low FIFO full and never read,
// high messages from a node on another leaf still arrive: the routers'
// buffers per priority let high pass a blocked low queue.
func TestRouterPriority(t *testing.T) {
	c := switched(t, 6, func(s *startx.Spec) { s.TXDepth, s.RXDepth = 2, 2 }, nil)
	a, b := c.Nodes[0], c.Nodes[5] // leaves 0 and 2
	pa, pb := &startx.Port{NIU: a.NIU, Block: true}, &startx.Port{NIU: b.NIU, Block: true}
	var high []startx.Msg
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		for i := 0; i < 30; i++ { // the receiver's FIFO, the lines and routers' buffers (18 packets) and the sender's FIFO fill
			pa.Send(p, startx.Low, 5, uint32(i), payload(4, 0))
		}
	})
	ph := &startx.Port{NIU: a.NIU, Block: true}
	a.Cores[1].Spawn("sender-high", func(p *cpu.Proc) {
		p.Sleep(100 * sim.US) // after the low queue is stuck
		for i := 0; i < 10; i++ {
			ph.Send(p, startx.High, 5, uint32(100+i), payload(4, 1))
		}
	})
	b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		for len(high) < 10 {
			high = append(high, pb.Recv(p, startx.High))
		}
	})
	c.Eng.Run(5 * sim.MS)
	if len(high) != 10 {
		t.Fatalf("high messages received: %d of 10", len(high))
	}
	if l := b.NIU.NetIn[startx.Low].Len(); l != 2 {
		t.Errorf("receiver's low FIFO holds %d, want it full (2)", l)
	}
	if l := a.NIU.TXLen(startx.Low); l < 1 {
		t.Errorf("sender's low FIFO holds %d, want the low messages the network has no room for", l)
	}
}

// Five senders on three leaves flood one receiver that starts reading
// late, through routers with one packet of buffer: everything arrives, in
// order from each sender, nothing refused.
func TestRouterBackpressure(t *testing.T) {
	c := switched(t, 6, func(s *startx.Spec) { s.TXDepth, s.RXDepth = 2, 2 }, &startx.RouterSpec{Ports: 4, BufferPackets: 1})
	const n = 30
	got := map[int][]startx.Msg{}
	total := 0
	rx := c.Nodes[2]
	prx := &startx.Port{NIU: rx.NIU, Block: true}
	for i, nd := range c.Nodes {
		if i == 2 {
			continue
		}
		pt := &startx.Port{NIU: nd.NIU, Block: true}
		nd.Cores[0].Spawn("sender", func(p *cpu.Proc) {
			for k := 0; k < n; k++ {
				pt.Send(p, startx.Low, 2, uint32(k), payload(22, uint32(k)))
			}
		})
	}
	rx.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		p.Sleep(300 * sim.US)
		for total < 5*n {
			m := prx.Recv(p, startx.Low)
			got[m.Src] = append(got[m.Src], m)
			total++
		}
	})
	c.Eng.Run(20 * sim.MS)
	if total != 5*n {
		t.Fatalf("received %d of %d", total, 5*n)
	}
	for s, ms := range got {
		for k, m := range ms {
			if m.H1 != uint32(k) || !equal(m.Payload, payload(22, uint32(k))) {
				t.Fatalf("from node %d, message %d: %+v", s, k, m)
			}
		}
	}
	for i, nd := range c.Nodes {
		if len(nd.NIU.Errors()) > 0 {
			t.Fatalf("node %d refused: %v", i, nd.NIU.Errors())
		}
	}
}

// An RDMA transfer crosses the fat tree exact.
func TestRouterRDMA(t *testing.T) {
	c := switched(t, 8, nil, nil)
	a, b := c.Nodes[1], c.Nodes[6]
	const size = 20000
	src, dst := pinned(t, a, size), pinned(t, b, size)
	sst, rst := pinned(t, a, 64), pinned(t, b, 64)
	want := pattern(size, 9)
	a.Mem.Write(src, want)
	pa, pb := &startx.Port{NIU: a.NIU, Block: true}, &startx.Port{NIU: b.NIU, Block: true}
	armed := false
	b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		pb.Arm(p, 1, dst, size, rst)
		armed = true
		p.PollLoad64(rst, func(v uint64) bool { return v == size })
	})
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		pa.SetSendStatus(p, sst)
		p.Poll(func() bool { return armed })
		pa.RDMASend(p, 6, src, dst, size)
		p.PollLoad64(sst, func(v uint64) bool { return v == size })
	})
	c.Eng.Run(5 * sim.MS)
	got := make([]byte, size)
	b.Mem.Read(dst, got)
	if !bytes.Equal(got, want) {
		t.Fatal("the receiver's buffer differs")
	}
	if e := append(a.NIU.Errors(), b.NIU.Errors()...); len(e) > 0 {
		t.Fatalf("refused: %v", e)
	}
}

// Networks the routers cannot make are refused with the reason.
func TestRouterErrors(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		rs    startx.RouterSpec
		want  string
	}{
		{9, startx.DefaultRouterSpec(), "a fat tree of 4-port Arctic routers holds at most 8"},
		{4, startx.RouterSpec{Ports: 1, BufferPackets: 4}, "router of 1 ports"},
		{4, startx.RouterSpec{Ports: 4, BufferPackets: 0}, "router buffers of 0 packets"},
	} {
		data, _ := os.ReadFile("../../examples/machines/e5000.yaml")
		sc, err := scenario.ParseScenario("e5000.yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		ms := sc.ClusterSpec()
		ms.Nodes, ms.Cores = tc.nodes, 1
		ns, rs := startx.DefaultSpec(), tc.rs
		ms.StartX, ms.StartXRouter = &ns, &rs
		if _, err := machine.New(sim.NewEngine(1), ms); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d nodes, %+v: %v, want %q", tc.nodes, tc.rs, err, tc.want)
		}
	}
}
