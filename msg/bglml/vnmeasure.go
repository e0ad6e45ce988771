package bglml

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
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
	pp := &pingPong{proto: proto, size: size, iters: iters}
	for _, e := range [][2]int{{a, b}, {b, a}} {
		me, peer := e[0], e[1]
		got := 0
		var buf uint64
		l, err := NewTask(m, me, params, costs, func(int, []byte, int) (uint64, func()) { return buf, func() { got++ } })
		if err != nil {
			return 0, err
		}
		buf = m.Nodes[me/2].Alloc(max(size, 1))
		l.Core().Spawn("pingpong", pp.side(l, peer, buf, &got, me == a))
	}
	m.World.Run(sim.S)
	return pp.result()
}
