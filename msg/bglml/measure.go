package bglml

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// Until runs the advance loop in process p until cond holds: pass after
// pass, as the paper's polling layer does (L94). cond may depend only on
// what this layer and its callbacks change.
//
// A pass that found the reception FIFOs empty and had nothing it could
// write (no look at an injection FIFO) is repeated unchanged until a
// packet becomes visible: the core dozes through those passes
// (cpu.Proc.Doze) and comes back at the end of the look of the first
// pass that sees the packet, its operations and busy time counted as if
// it had run them all. cond cannot change meanwhile, so the run is the
// one the polling loop gives, to the byte (TestDozeMatchesSpin), at a
// cost per packet rather than per pass. Params.Spin runs every pass.
func (l *Layer) Until(p *cpu.Proc, cond func() bool) {
	if l.ct != nil {
		panic(fmt.Sprintf("bglml: %s: the layer runs on its communication thread (CommThread.Wait)", l.name()))
	}
	defer l.mask()()
	if !l.params.Spin && !l.notified {
		l.pl.NotifyReceive(p.Core().Unit())
		l.main = p.Core().Unit()
		l.notified = true
	}
	for !cond() {
		t0, ops := p.Now(), p.Ops()
		if l.Advance(p) || l.looks > 0 || l.params.Spin || l.irq != nil {
			continue
		}
		p.Doze(p.Now()-t0, int(p.Ops()-ops), l.nextChange)
		l.clearFull()
		l.looks = 0
		l.afterLook(p, l.pl.Seen())
	}
}

// PingPong is the message layer's half round trip (Turner's pong, L163)
// of size-byte messages between the nodes at a and b by protocol proto:
// a sends, b's upcall takes the message into an aligned buffer and b
// sends it back once it is complete; iters round trips after one to warm
// up, the mean half round trip. Each node's layer runs on its first core.
func PingPong(spec bgl.Spec, params Params, costs Costs, a, b torus.Coord, proto Protocol, size, iters int) (sim.Tick, error) {
	if iters < 1 || size < 0 {
		return 0, fmt.Errorf("bglml: ping-pong of %d round trips of %d bytes", iters, size)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	ia, ib := m.Torus.IndexOf(a), m.Torus.IndexOf(b)
	if ia == ib {
		return 0, fmt.Errorf("bglml: both ends are node %v", a)
	}
	pp := &pingPong{proto: proto, size: size, iters: iters}
	for _, e := range [][2]int{{ia, ib}, {ib, ia}} {
		me, peer := e[0], e[1]
		nd := m.Nodes[me]
		buf := nd.Alloc(max(size, 1))
		got := 0
		l, err := New(m, me, params, costs, func(int, []byte, int) (uint64, func()) { return buf, func() { got++ } })
		if err != nil {
			return 0, err
		}
		nd.Cores[0].Spawn("pingpong", pp.side(l, peer, buf, &got, me == ia))
	}
	m.World.Run(sim.S)
	return pp.result()
}

// pingPong is one ping-pong between two ends of the layer: the first
// sends, the other sends each message back once it is complete.
type pingPong struct {
	proto       Protocol
	size, iters int
	start, end  sim.Tick
	failed      error
}

// side is the process of one end: l's, sending to peer from buf, with got
// counting the messages its upcall completed.
func (pp *pingPong) side(l *Layer, peer int, buf uint64, got *int, first bool) func(*cpu.Proc) {
	return func(p *cpu.Proc) {
		send := func() {
			if err := l.Send(p, &Message{Dst: peer, Addr: buf, Len: pp.size, Proto: pp.proto}); err != nil && pp.failed == nil {
				pp.failed = err
			}
		}
		for k := 0; k <= pp.iters; k++ {
			if first {
				if k == 1 {
					pp.start = p.Now()
				}
				send()
			}
			l.Until(p, func() bool { return *got > k || pp.failed != nil })
			if !first {
				send()
			}
		}
		if first {
			pp.end = p.Now()
		}
		// The last confirmation and sends finish before the layer stops.
		l.Until(p, func() bool { return l.Idle() || pp.failed != nil })
	}
}

// result is the mean half round trip, after the run.
func (pp *pingPong) result() (sim.Tick, error) {
	if pp.failed != nil {
		return 0, pp.failed
	}
	if pp.end == 0 {
		return 0, fmt.Errorf("bglml: ping-pong did not finish within a simulated second")
	}
	return (pp.end - pp.start) / sim.Tick(2*pp.iters), nil
}

// HotSpot is many-to-one traffic (L53, L129): every node but the one at
// hot sends msgs messages of size bytes to it by proto, all at once. It
// returns the payload the hot node received per second, from the start to
// its last message, and the packets the adaptive ones sent on the escape
// channel.
func HotSpot(spec bgl.Spec, params Params, costs Costs, hot torus.Coord, proto Protocol, size, msgs int) (float64, error) {
	if size < 1 || msgs < 1 {
		return 0, fmt.Errorf("bglml: hot spot of %d messages of %d bytes", msgs, size)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	h := m.Torus.IndexOf(hot)
	n := len(m.Nodes)
	want := (n - 1) * msgs
	got := 0
	var end sim.Tick
	var failed error
	for i := range m.Nodes {
		i := i
		nd := m.Nodes[i]
		l, err := New(m, i, params, costs, func(int, []byte, int) (uint64, func()) {
			return nd.Alloc(size), func() { got++ }
		})
		if err != nil {
			return 0, err
		}
		nd.Cores[0].Spawn("hotspot", func(p *cpu.Proc) {
			if i == h {
				l.Until(p, func() bool { return got == want })
				end = p.Now()
				return
			}
			buf := nd.Alloc(size)
			for k := 0; k < msgs; k++ {
				if err := l.Send(p, &Message{Dst: h, Addr: buf, Len: size, Proto: proto}); err != nil {
					failed = err
					return
				}
			}
			l.Until(p, func() bool { return l.Idle() })
		})
	}
	m.World.Run(sim.S)
	if failed != nil {
		return 0, failed
	}
	if got != want {
		return 0, fmt.Errorf("bglml: hot spot: %d of %d messages arrived within a simulated second", got, want)
	}
	return float64(want*size) / (float64(end) / float64(sim.S)), nil
}

// Links is the traffic of Figures 4c–4f (L187–L189): the node at centre
// exchanges msgs messages of size bytes both ways with k of its
// neighbours at once (+x, −x, +y, −y, +z, −z in that order), all by
// proto. It returns the payload the centre sent and received per second,
// from the start until it has received everything and its sends are done.
func Links(spec bgl.Spec, params Params, costs Costs, centre torus.Coord, k int, proto Protocol, size, msgs int) (float64, error) {
	return LinksProgress(spec, params, costs, centre, k, proto, size, msgs, Polling)
}

// LinksProgress is Links with every node's layer making progress as how
// says: Thread, the communication thread on the coprocessor (the machine
// in coprocessor mode) sends and receives everything, the main core
// posting the sends and reaping the completions; Interrupts, the handlers
// run the advance loop, the main core halted between them.
func LinksProgress(spec bgl.Spec, params Params, costs Costs, centre torus.Coord, k int, proto Protocol, size, msgs int, how Progress) (float64, error) {
	if k < 1 || k > 6 || size < 1 || msgs < 1 {
		return 0, fmt.Errorf("bglml: %d links, %d messages of %d bytes (1 to 6 links)", k, msgs, size)
	}
	if how > Interrupts {
		return 0, fmt.Errorf("bglml: progress mode %v (polling, thread, interrupts)", how)
	}
	if how == Thread {
		spec = spec.WithMode(bgl.CoprocessorMode)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	c := m.Torus.IndexOf(centre)
	var peers []int
	for d := 0; d < 3 && len(peers) < k; d++ {
		for _, s := range []int{1, -1} {
			if len(peers) == k {
				break
			}
			at := centre
			n := spec.Torus.Dims[d]
			at[d] = (at[d] + s + n) % n
			if spec.Torus.Mesh && (centre[d]+s < 0 || centre[d]+s >= n) || n < 3 {
				return 0, fmt.Errorf("bglml: %v has no distinct neighbours both ways in %c", centre, "xyz"[d])
			}
			peers = append(peers, m.Torus.IndexOf(at))
		}
	}
	got := make([]int, len(m.Nodes))
	var end sim.Tick
	var failed error
	run := func(i int, to []int, expect int) {
		nd := m.Nodes[i]
		l, err := New(m, i, params, costs, func(int, []byte, int) (uint64, func()) {
			return nd.Alloc(size), func() { got[i]++ }
		})
		if err != nil {
			failed = err
			return
		}
		var ct *CommThread
		switch how {
		case Thread:
			ct, err = l.StartCommThread()
		case Interrupts:
			err = l.StartInterrupts()
		}
		if err != nil {
			failed = err
			return
		}
		nd.Cores[0].Spawn("links", func(p *cpu.Proc) {
			buf := nd.Alloc(size)
			sent := 0
			// Round-robin over the peers, so that every link starts at once.
			for j := 0; j < msgs; j++ {
				for _, dst := range to {
					m := &Message{Dst: dst, Addr: buf, Len: size, Proto: proto}
					if how == Polling {
						err = l.Send(p, m)
					} else {
						m.Done = func() { sent++ }
						if ct != nil {
							err = ct.Post(p, m)
						} else {
							err = l.Send(p, m)
						}
					}
					if err != nil {
						failed = err
						return
					}
				}
			}
			switch how {
			case Polling:
				l.Until(p, func() bool { return got[i] == expect && l.Idle() })
			case Thread:
				ct.Wait(p, func() bool { return got[i] == expect && sent == len(to)*msgs })
			case Interrupts:
				// The sends' first passes, then the handlers.
				for l.Advance(p) {
				}
				l.WaitInterrupts(p, func() bool { return got[i] == expect && sent == len(to)*msgs })
			}
			if i == c {
				end = p.Now()
			}
		})
	}
	run(c, peers, k*msgs)
	for _, q := range peers {
		run(q, []int{c}, msgs)
	}
	m.World.Run(sim.S)
	if failed != nil {
		return 0, failed
	}
	if end == 0 {
		return 0, fmt.Errorf("bglml: %d links did not finish within a simulated second", k)
	}
	return float64(2*k*msgs*size) / (float64(end) / float64(sim.S)), nil
}

// BcastTime runs a torus broadcast of size bytes from node (0,0,0) over
// routes routes (Layer.Bcast), every node's layer on its first core, and
// returns when the last node had the whole message. check, if not nil, is
// given each node's received bytes and the root's.
func BcastTime(spec bgl.Spec, params Params, costs Costs, routes, size int, check func(node int, got, want []byte)) (sim.Tick, error) {
	return BcastTimeFrom(spec, params, costs, torus.Coord{}, routes, size, check)
}

// BcastTimeFrom is BcastTime from the node at root (Layer.BcastFrom). In
// virtual node mode every task takes part, each on its core, the root's
// data in its task 0's buffer, and check is given each task's bytes.
func BcastTimeFrom(spec bgl.Spec, params Params, costs Costs, root torus.Coord, routes, size int, check func(node int, got, want []byte)) (sim.Tick, error) {
	return bcastOn(1, spec, params, costs, root, routes, size, check)
}

// bcastOn is BcastTimeFrom on partitions goroutines.
func bcastOn(partitions int, spec bgl.Spec, params Params, costs Costs, root torus.Coord, routes, size int, check func(node int, got, want []byte)) (sim.Tick, error) {
	w := sim.NewWorld(1)
	w.SetPartitions(partitions)
	m, err := bgl.New(w, "bgl", spec)
	if err != nil {
		return 0, err
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>8)
	}
	tasks := m.Spec.Mode.Tasks()
	bufs := make([]uint64, len(m.Nodes)*tasks)
	// Each end's, apart: the nodes may run on several goroutines.
	ends := make([]sim.Tick, len(bufs))
	fails := make([]error, len(bufs))
	for i := range bufs {
		i := i
		nd := m.Nodes[i/tasks]
		bufs[i] = nd.Alloc(size)
		if nd.Torus.At == root && i%tasks == 0 {
			nd.Mem.Write(bufs[i], want)
		}
		var l *Layer
		if tasks > 1 {
			l, err = NewTask(m, i, params, costs, nil)
		} else {
			l, err = New(m, i, params, costs, nil)
		}
		if err != nil {
			return 0, err
		}
		nd.Cores[i%tasks].Spawn("bcast", func(p *cpu.Proc) {
			have := false
			if err := l.BcastFrom(p, root, bufs[i], size, routes, func() { have = true }); err != nil {
				fails[i] = err
				return
			}
			l.Until(p, func() bool { return have })
			ends[i] = p.Now()
			l.Until(p, l.Idle)
		})
	}
	m.World.Run(sim.S)
	var end sim.Tick
	for i := range ends {
		if fails[i] != nil {
			return 0, fails[i]
		}
		if ends[i] == 0 {
			return 0, fmt.Errorf("bglml: the broadcast did not finish within a simulated second")
		}
		end = max(end, ends[i])
	}
	if check != nil {
		for i := range bufs {
			got := make([]byte, size)
			m.Nodes[i/tasks].Mem.Read(bufs[i], got)
			check(i, got, want)
		}
	}
	return end, nil
}
