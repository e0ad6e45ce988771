package startx_test

import (
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

// e5000 is two E5000 nodes of the preset with a StarT-X NIU each.
func e5000(t testing.TB, mod func(s *startx.Spec)) *machine.Cluster {
	return e5000Line(t, mod, startx.LineSpec{})
}

// e5000Line is e5000 with Arctic lines of spec l (zero: the default).
func e5000Line(t testing.TB, mod func(s *startx.Spec), l startx.LineSpec) *machine.Cluster {
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
	ms.Nodes, ms.Cores = 2, 2
	ns := startx.DefaultSpec()
	if mod != nil {
		mod(&ns)
	}
	ms.StartX, ms.StartXLine = &ns, l
	c, err := machine.New(sim.NewEngine(1), ms)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func payload(n int, seed uint32) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = seed*1000 + uint32(i)
	}
	return p
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// pioCosts measures, on the E5000 preset, a message of words payload
// words: the sender's time to store it, the receiver's time to load it
// once it is there, and the one-way time from the first store to the
// receiver holding it (the receiver polling the FIFO).
func pioCosts(t *testing.T, words int, block bool) (send, recv, oneWay sim.Tick) {
	c := e5000(t, nil)
	a, b := c.Nodes[0], c.Nodes[1]
	pa, pb := &startx.Port{NIU: a.NIU, Block: block}, &startx.Port{NIU: b.NIU, Block: block}
	want := payload(words, 7)
	var t0, t1, arrived, got sim.Tick
	var m startx.Msg
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		pa.Send(p, startx.Low, 1, 0xabcd, payload(2, 1)) // reads the status register once
		p.Sleep(50 * sim.US)
		t0 = p.Now()
		pa.Send(p, startx.Low, 1, 0xabcd, want)
		t1 = p.Now()
	})
	b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		pb.Recv(p, startx.Low)
		for b.NIU.NetIn[startx.Low].Len() == 0 { // wait, without loads, until it is there
			p.Sleep(10 * sim.NS)
		}
		arrived = p.Now()
		m = pb.Recv(p, startx.Low)
		got = p.Now()
	})
	c.Eng.Run(sim.MS)
	if !equal(m.Payload, want) || m.H1 != 0xabcd || m.Src != 0 {
		t.Fatalf("received %+v, want payload %v from node 0", m, want)
	}
	if len(a.NIU.Errors()) > 0 || len(b.NIU.Errors()) > 0 {
		t.Fatalf("refused: %v %v", a.NIU.Errors(), b.NIU.Errors())
	}
	// The one-way time: the store to the receiver holding the message when
	// it polls as it arrives (its poll loop's phase aside).
	return t1 - t0, got - arrived, (arrived - t0) + (got - arrived)
}

// The paper's PIO figures on a SUN E5000 (001:L20): a 64-byte message costs
// less than 0.4 µs to send and 3.5 µs to receive, and less than 5.6 µs
// user to user. Here they come from the preset's uncached stores (54
// cycles each) and loads (an MRd round trip over its PCIe link) and the
// Arctic line; Table 1's three rows are 16 B and 64 B with 8-byte
// accesses, and 64 B with 64-byte block accesses.
func TestPIOCosts(t *testing.T) {
	us := func(d sim.Tick) float64 { return float64(d) / float64(sim.US) }
	rows := []struct {
		name  string
		words int
		block bool
	}{
		{"(a) 16 B, 8-byte accesses", 2, false},
		{"(b) 64 B, 8-byte accesses", 14, false},
		{"(c) 64 B, stda/ldda", 14, true},
	}
	var got [3][3]float64
	for i, r := range rows {
		s, rc, ow := pioCosts(t, r.words, r.block)
		got[i] = [3]float64{us(s), us(rc), us(ow)}
		t.Logf("%-28s send %.3f µs  receive %.3f µs  one-way %.3f µs", r.name, us(s), us(rc), us(ow))
	}
	c := got[2]
	if c[0] >= 0.4 || c[1] >= 3.5 || c[2] >= 5.6 {
		t.Errorf("64-byte message with block accesses: send %.3f, receive %.3f, one-way %.3f µs; the paper: < 0.4, < 3.5, < 5.6", c[0], c[1], c[2])
	}
	// (b) costs more than (a) and (c) on both sides.
	for side := 0; side < 2; side++ {
		if !(got[1][side] > got[0][side] && got[1][side] > got[2][side]) {
			t.Errorf("side %d: (b) %.3f µs should cost more than (a) %.3f and (c) %.3f", side, got[1][side], got[0][side], got[2][side])
		}
	}
}

// Messages of every legal length arrive exact, with 8-byte and block
// accesses, and a 2- and a 22-word one among them.
func TestPIOLengths(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(fmt.Sprintf("block=%v", block), func(t *testing.T) {
			c := e5000(t, nil)
			a, b := c.Nodes[0], c.Nodes[1]
			pa, pb := &startx.Port{NIU: a.NIU, Block: block}, &startx.Port{NIU: b.NIU, Block: block}
			var got []startx.Msg
			a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
				for w := startx.MinPayloadWords; w <= startx.MaxPayloadWords; w++ {
					pa.Send(p, startx.Priority(w%2), 1, uint32(w), payload(w, uint32(w)))
				}
			})
			b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
				for len(got) < startx.MaxPayloadWords-startx.MinPayloadWords+1 {
					for pri := startx.High; pri <= startx.Low; pri++ {
						if m, ok := pb.Poll(p, pri); ok {
							got = append(got, m)
						}
					}
				}
			})
			c.Eng.Run(10 * sim.MS)
			seen := map[int]bool{}
			for _, m := range got {
				w := int(m.H1)
				if seen[w] || !equal(m.Payload, payload(w, uint32(w))) || m.Pri != startx.Priority(w%2) {
					t.Errorf("message %d: %+v", w, m)
				}
				seen[w] = true
			}
			if len(seen) != 21 {
				t.Errorf("received %d distinct messages, want 21", len(seen))
			}
		})
	}
}

// A message whose length field is outside 2..22 words is refused by the
// NIU with an error that says why, and nothing of it is sent; the next
// message goes through.
func TestPIOMalformed(t *testing.T) {
	for _, words := range []int{0, 1, 23, 31} {
		t.Run(fmt.Sprint(words), func(t *testing.T) {
			c := e5000(t, nil)
			a, b := c.Nodes[0], c.Nodes[1]
			pa, pb := &startx.Port{NIU: a.NIU}, &startx.Port{NIU: b.NIU}
			var got []startx.Msg
			a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
				pa.SendRaw(p, startx.Low, startx.EncodeMessage(1, 9, payload(words, 3)))
				pa.Send(p, startx.Low, 1, 10, payload(4, 4))
			})
			b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
				got = append(got, pb.Recv(p, startx.Low))
				p.Sleep(20 * sim.US)
				if m, ok := pb.Poll(p, startx.Low); ok {
					got = append(got, m)
				}
			})
			c.Eng.Run(sim.MS)
			errs := a.NIU.Errors()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("message of %d payload words: want 2 to 22", words)) {
				t.Errorf("errors %v, want one refusing %d payload words", errs, words)
			}
			if len(got) != 1 || got[0].H1 != 10 {
				t.Errorf("received %+v, want only the good message", got)
			}
		})
	}
}

// A sender that fills the receiver's FIFO and its own is held back, not
// dropped: every message arrives, in order, after the receiver starts
// reading late. Both with a sender that reads the status register first
// (Send) and one that stores blindly into a full FIFO (SendRaw), whose
// stores then wait in the NIU, the link and the core's write buffer.
func TestPIOBackpressure(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) {
			c := e5000(t, func(s *startx.Spec) { s.TXDepth, s.RXDepth = 2, 3 })
			a, b := c.Nodes[0], c.Nodes[1]
			pa, pb := &startx.Port{NIU: a.NIU, Block: true}, &startx.Port{NIU: b.NIU, Block: true}
			const n = 40
			var got []startx.Msg
			var maxTX int
			a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
				for i := 0; i < n; i++ {
					if raw {
						pa.SendRaw(p, startx.Low, startx.EncodeMessage(1, uint32(i), payload(6, uint32(i))))
					} else {
						pa.Send(p, startx.Low, 1, uint32(i), payload(6, uint32(i)))
					}
					maxTX = max(maxTX, a.NIU.TXLen(startx.Low))
				}
			})
			b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
				p.Sleep(200 * sim.US)
				for len(got) < n {
					got = append(got, pb.Recv(p, startx.Low))
				}
			})
			c.Eng.Run(10 * sim.MS)
			if len(got) != n {
				t.Fatalf("received %d of %d", len(got), n)
			}
			for i, m := range got {
				if m.H1 != uint32(i) || !equal(m.Payload, payload(6, uint32(i))) {
					t.Fatalf("message %d: %+v", i, m)
				}
			}
			if maxTX > 2 {
				t.Errorf("transmit FIFO held %d messages, depth 2", maxTX)
			}
			if len(a.NIU.Errors()) > 0 {
				t.Errorf("refused: %v", a.NIU.Errors())
			}
		})
	}
}

// Priorities: with the receiver's low FIFO full and never read, high
// messages still arrive (a full low queue never blocks high); with both
// queues loaded at once, every high message crosses the line before any
// low one (high can starve low).
func TestPIOPriority(t *testing.T) {
	t.Run("full low never blocks high", func(t *testing.T) {
		c := e5000(t, func(s *startx.Spec) { s.TXDepth, s.RXDepth = 2, 2 })
		a, b := c.Nodes[0], c.Nodes[1]
		pa, pb := &startx.Port{NIU: a.NIU, Block: true}, &startx.Port{NIU: b.NIU, Block: true}
		var high []startx.Msg
		a.Cores[0].Spawn("low", func(p *cpu.Proc) {
			for i := 0; i < 4; i++ { // two fill the receiver's low FIFO, two its own
				pa.Send(p, startx.Low, 1, uint32(i), payload(4, 0))
			}
			for i := 0; i < 10; i++ {
				pa.Send(p, startx.High, 1, uint32(100+i), payload(4, 1))
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
			t.Errorf("sender's low FIFO holds %d, want the low messages the receiver has no room for", l)
		}
	})
	t.Run("high starves low", func(t *testing.T) {
		// A slow line (100 Mb/s: 7.7 µs a packet) behind two senders that
		// store faster than it drains: both transmit FIFOs stay loaded,
		// and the line takes high whenever high waits.
		c := e5000Line(t, func(s *startx.Spec) { s.TXDepth = 16 }, startx.LineSpec{RateMbps: 100, LatencyPS: 500 * sim.NS})
		a, b := c.Nodes[0], c.Nodes[1]
		pa, pb := &startx.Port{NIU: a.NIU, Block: true}, &startx.Port{NIU: b.NIU, Block: true}
		var order []startx.Priority
		const highs, lows = 48, 8
		a.Cores[0].Spawn("sender-high", func(p *cpu.Proc) {
			for i := 0; i < highs; i++ {
				pa.Send(p, startx.High, 1, 0, payload(22, 0))
			}
		})
		a.Cores[1].Spawn("sender-low", func(p *cpu.Proc) {
			p.Sleep(5 * sim.US) // after the first high message
			for i := 0; i < lows; i++ {
				pa.Send(p, startx.Low, 1, 0, payload(22, 0))
			}
		})
		b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
			for len(order) < highs+lows {
				for _, pri := range []startx.Priority{startx.Low, startx.High} {
					if _, ok := pb.Poll(p, pri); ok {
						order = append(order, pri)
					}
				}
			}
		})
		c.Eng.Run(20 * sim.MS)
		if len(order) != highs+lows {
			t.Fatalf("received %d of %d", len(order), highs+lows)
		}
		for i, p := range order {
			if (i < highs) != (p == startx.High) {
				t.Fatalf("arrival order %v: want every high message before any low one", order)
			}
		}
	})
}

// LineTrace shows where a stuck NIU stands: with the receiver never
// reading, a blind sender fills the peer's FIFO and its own, and its next
// completing store waits at the head of the host accesses.
func TestLineTrace(t *testing.T) {
	c := e5000(t, func(s *startx.Spec) { s.TXDepth, s.RXDepth = 2, 3 })
	a := c.Nodes[0]
	pa := &startx.Port{NIU: a.NIU, Block: true}
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		for i := 0; i < 10; i++ {
			pa.SendRaw(p, startx.Low, startx.EncodeMessage(1, uint32(i), payload(6, uint32(i))))
		}
	})
	c.Eng.Run(200 * sim.US)
	for _, tc := range []struct {
		node int
		want string
	}{
		{0, "node0.startx: tx 0/2 "},
		{0, "(MWr@0x100)"},
		{1, "rx 0/3 "},
	} {
		if got := c.Nodes[tc.node].NIU.LineTrace(); !strings.Contains(got, tc.want) {
			t.Errorf("node %d: LineTrace %q, want %q in it", tc.node, got, tc.want)
		}
	}
}
