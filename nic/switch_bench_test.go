package nic

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

// benchSrc sends 1 KB frames as fast as its wire takes them, to a fixed
// destination or, with rng, to random ones.
type benchSrc struct {
	out  *sim.Chan[Frame]
	node int
	dst  int
	rng  *sim.Rand
	pay  []byte
	idle bool // sends nothing
}

func (s *benchSrc) Tick(sim.Tick) bool {
	if s.idle || !s.out.Ready() {
		return false // the channel wakes it when it has room
	}
	d := s.dst
	if s.rng != nil {
		d = s.rng.IntN(d)
	}
	var p roce.Packet
	p.Opcode, p.Payload = roce.SendOnly, s.pay
	s.out.Send(Frame{SrcNode: s.node, DstNode: d, Frame: roce.Frame{Packet: p}})
	return true
}

// benchCount counts the frames the sinks took and stops the run at stop.
type benchCount struct {
	n, stop int
	e       *sim.Engine
}

// benchSink takes every frame.
type benchSink struct {
	in *sim.Chan[Frame]
	c  *benchCount
}

func (s *benchSink) Tick(sim.Tick) bool {
	for s.in.Valid() {
		s.in.Recv()
		if s.c.n++; s.c.n >= s.c.stop {
			s.c.e.Stop()
		}
	}
	return false
}

// BenchmarkSwitch is the host time per frame through a switch of 16 to
// 1,024 ports, for the switch (wired: connected by SetWirePort, its wires
// tell it of deliveries; polled: by SetPort, it polls its inputs) and for
// the former one, which visited every port and VOQ on every edge. Sparse:
// 4 nodes each stream to another, the others are idle; dense: every node
// sends to random nodes. Each node has a 100 Gb/s wire into the switch;
// frames leave into a sink that takes them all. The time includes the
// sources, wires and sinks, whose work per frame does not depend on the
// ports (evals/frame), though their memory does.
func BenchmarkSwitch(b *testing.B) {
	for _, impl := range []string{"wired", "polled", "former"} {
		for _, pattern := range []string{"sparse", "dense"} {
			for _, ports := range []int{16, 256, 1024} {
				b.Run(fmt.Sprintf("%s/%s/ports=%d", impl, pattern, ports), func(b *testing.B) {
					benchSwitch(b, impl, pattern, ports)
				})
			}
		}
	}
}

func benchSwitch(b *testing.B, impl, pattern string, ports int) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 1000, 0)
	spec := SwitchSpec{Ports: ports, LatencyPS: 500 * sim.NS}
	var sw testSwitch
	var err error
	if impl == "former" {
		sw, err = newRefSwitch(clk, "sw", spec)
	} else {
		sw, err = NewSwitch(clk, "sw", spec)
	}
	if err != nil {
		b.Fatal(err)
	}
	count := &benchCount{e: e}
	pay := make([]byte, 1000)
	ws := WireSpec{RateMbps: 100_000, LatencyPS: sim.US}
	for i := 0; i < ports; i++ {
		src := &benchSrc{node: i, idle: true}
		switch {
		case pattern == "dense":
			src = &benchSrc{node: i, dst: ports, rng: sim.NewRand(1, fmt.Sprintf("src%d", i)), pay: pay}
		case i < 4:
			src = &benchSrc{node: i, dst: (i + ports/2) % ports, pay: pay}
		}
		su := clk.Add(fmt.Sprintf("src%d", i), src)
		in, err := NewWire(clk, fmt.Sprintf("up%d", i), ws, su, sw.Unit())
		if err != nil {
			b.Fatal(err)
		}
		src.out = in.In
		snk := &benchSink{c: count}
		out := sim.NewChan[Frame](sw.Unit(), clk.Add(fmt.Sprintf("sink%d", i), snk), fmt.Sprintf("down%d", i), 16)
		snk.in = out
		if impl == "wired" {
			sw.(*Switch).SetWirePort(i, in, nil)
			sw.(*Switch).Out[i] = out
		} else {
			sw.SetPort(i, in.Out, out)
		}
	}
	// Warm up to the steady state: queues filled, wires streaming.
	count.stop = 4 * min(ports, 64)
	e.Run(sim.Never)
	ticks, n0 := e.UnitTicks(), count.n
	b.ResetTimer()
	count.stop = count.n + b.N
	e.Run(sim.Never)
	b.StopTimer()
	if count.n < count.stop {
		b.Fatalf("%d of %d frames", count.n-n0, b.N)
	}
	// The last step may take a few frames more than b.N.
	frames := float64(count.n - n0)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frames, "ns/frame")
	b.ReportMetric(float64(e.UnitTicks()-ticks)/frames, "evals/frame")
}
