package am2

import (
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// The one-way time of a short message between two cores of an E5000 node
// (half a request/reply round trip, 8 arguments each way) and the send
// overhead (cycles inside Request: its poll, tag check, slot claim and
// fill), in a ping-pong and in a stream of requests. Logged for comparison
// with seed 000's Table 2 and Figure 4 (docs/am2.md); the bounds checked
// are only what the coherence model must charge at least.
func TestE5000ShortMessage(t *testing.T) {
	const warm, iters, stream = 20, 200, 200
	c := e5000(t, 2)
	n := c.Nodes[0]
	period := n.Cores[0].Spec().PeriodPS
	sys := newSys(t, c, DefaultSpec())
	a, b := newEP(t, sys, 0, 1), newEP(t, sys, 0, 2)
	must(t, a.Map(0, b.Name(), 2))
	args := []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	replies, streamed := 0, 0
	must(t, b.SetHandler(1, func(tok *Token, m *Message) { must(t, tok.Reply(2, m.Args...)) }))
	must(t, b.SetHandler(3, func(*Token, *Message) { streamed++ }))
	must(t, a.SetHandler(2, func(*Token, *Message) { replies++ }))
	var rtt, pingSend, streamSend sim.Tick
	n.Cores[0].Spawn("a", func(p *cpu.Proc) {
		must(t, a.Attach(p))
		for i := 0; i < warm+iters; i++ {
			t0 := p.Now()
			must(t, a.Request(0, 1, args...))
			t1 := p.Now()
			for replies <= i {
				a.Poll()
			}
			if i >= warm {
				rtt += p.Now() - t0
				pingSend += t1 - t0
			}
		}
		t0 := p.Now()
		for i := 0; i < stream; i++ {
			must(t, a.Request(0, 3, args...))
		}
		streamSend = p.Now() - t0
	})
	n.Cores[1].Spawn("b", func(p *cpu.Proc) {
		must(t, b.Attach(p))
		for streamed < stream {
			b.Poll()
		}
	})
	run(t, c)
	cyc := func(d sim.Tick, k int) float64 { return float64(d) / float64(period) / float64(k) }
	us := func(d sim.Tick, k int) float64 { return float64(d) / float64(sim.US) / float64(k) }
	oneWay := rtt / 2
	t.Logf("E5000 shm short message (8 args): round trip %.2f µs (%.0f cycles), one-way %.2f µs (%.0f cycles)",
		us(rtt, iters), cyc(rtt, iters), us(oneWay, iters), cyc(oneWay, iters))
	t.Logf("send overhead: %.0f cycles (%.2f µs) in the ping-pong, %.0f cycles (%.2f µs) per send in a stream of %d",
		cyc(pingSend, iters), us(pingSend, iters), cyc(streamSend, stream), us(streamSend, stream), stream)
	t.Logf("seed 000 (shm, single protocol): RTT 5.6 µs, one-way 2.8 µs, o_s 1.8 µs = 299 cycles (108 base); multi-protocol 7.2 µs, 3.6 µs, 2.1 µs = 345 cycles")
	// At least two cache-to-cache transfers of a packet line per round trip,
	// and a CAS per send.
	if cyc(rtt, iters) < 2*80 || cyc(pingSend, iters) < 15 || cyc(streamSend, stream) < 15 {
		t.Errorf("cheaper than the coherence model allows: rtt %.0f, send %.0f / %.0f cycles",
			cyc(rtt, iters), cyc(pingSend, iters), cyc(streamSend, stream))
	}
}
