package bglml

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// TaskPingPong is PingPong in virtual node mode between tasks a and b
// (node × 2 + core; spec is put in virtual node mode): the two tasks of
// one node (through the virtual FIFOs, or by L144's copy for a
// rendezvous) or of two nodes. Each task's layer runs on its own core.
func TaskPingPong(spec bgl.Spec, params Params, costs Costs, a, b int, proto Protocol, size, iters int) (sim.Tick, error) {
	if iters < 1 || size < 0 {
		return 0, fmt.Errorf("bglml: ping-pong of %d round trips of %d bytes", iters, size)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec.WithMode(bgl.VirtualNodeMode))
	if err != nil {
		return 0, err
	}
	if a == b {
		return 0, fmt.Errorf("bglml: both ends are task %d", a)
	}
	var start, end sim.Tick
	var failed error
	for _, me := range []int{a, b} {
		first, peer := me == a, b
		if !first {
			peer = a
		}
		got := 0
		var buf uint64
		l, err := NewTask(m, me, params, costs, func(int, []byte, int) (uint64, func()) { return buf, func() { got++ } })
		if err != nil {
			return 0, err
		}
		buf = m.Nodes[me/2].Alloc(max(size, 1))
		l.Core().Spawn("pingpong", func(p *cpu.Proc) {
			send := func() {
				if err := l.Send(p, &Message{Dst: peer, Addr: buf, Len: size, Proto: proto}); err != nil && failed == nil {
					failed = err
				}
			}
			for k := 0; k <= iters; k++ {
				if first {
					if k == 1 {
						start = p.Now()
					}
					send()
				}
				l.Until(p, func() bool { return got > k || failed != nil })
				if !first {
					send()
				}
			}
			if first {
				end = p.Now()
			}
			l.Until(p, func() bool { return l.Idle() || failed != nil })
		})
	}
	m.World.Run(sim.S)
	if failed != nil {
		return 0, failed
	}
	if end == 0 {
		return 0, fmt.Errorf("bglml: ping-pong did not finish within a simulated second")
	}
	return (end - start) / sim.Tick(2*iters), nil
}
