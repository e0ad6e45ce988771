package nic

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

// A switch under test: Switch or the reference refSwitch.
type testSwitch interface {
	sim.Block
	Unit() *sim.Unit
	SetPort(i int, in, out *sim.Chan[Frame])
}

// randSrc sends n frames of random sizes to random destinations (some to
// no port) with random gaps, some back to back.
type randSrc struct {
	u     *sim.Unit
	out   *sim.Chan[Frame]
	rng   *sim.Rand
	node  int
	n, i  int
	dsts  int // destinations drawn from 0..dsts-1, a few beyond
	burst int // percent of frames sent without a gap
}

func (s *randSrc) Tick(sim.Tick) bool {
	if s.i >= s.n || !s.out.Ready() {
		return false // woken by the channel when it has room
	}
	var p roce.Packet
	p.Opcode, p.PSN, p.Payload = roce.SendOnly, uint32(s.i), make([]byte, s.rng.IntN(1500))
	d := s.rng.IntN(s.dsts + 1)
	if s.rng.IntN(20) == 0 {
		d = -1 - s.rng.IntN(2) // no such node: dropped
	}
	s.out.Send(Frame{Txn: sim.Txn{ID: sim.TxnID(s.node<<20 | s.i + 1)}, SrcNode: s.node, DstNode: d, Frame: roce.Frame{Packet: p}})
	s.i++
	if s.i < s.n && s.rng.IntN(100) >= s.burst {
		s.u.WakeIn(sim.Tick(1+s.rng.IntN(20)) * sim.NS)
		return false
	}
	return s.i < s.n
}

type arrival struct {
	at  sim.Tick
	id  sim.TxnID
	len int
}

// lazySink takes frames irregularly: now and then it stops taking for a
// while, so the switch's output queues fill and its inputs back up.
type lazySink struct {
	u    *sim.Unit
	in   *sim.Chan[Frame]
	rng  *sim.Rand
	got  []arrival
	slow int // percent of edges at which it pauses
}

func (s *lazySink) Tick(now sim.Tick) bool {
	if s.rng.IntN(100) < s.slow {
		s.u.WakeIn(sim.Tick(1+s.rng.IntN(1000)) * sim.NS)
		return false
	}
	for k := 1 + s.rng.IntN(3); k > 0 && s.in.Valid(); k-- {
		f := s.in.Recv()
		s.got = append(s.got, arrival{now, f.ID, f.Len()})
	}
	return s.in.Len() > 0
}

// traceLog records every value a tracer is given.
type traceLog struct {
	paths []string
	log   []string
}

func (t *traceLog) Declare(path string, width int) (int, bool) {
	t.paths = append(t.paths, path)
	return len(t.paths) - 1, true
}
func (t *traceLog) Set(at uint64, id int, v uint64) {
	t.log = append(t.log, fmt.Sprintf("%d %s=%d", at, t.paths[id], v))
}
func (t *traceLog) SetXZ(at uint64, id int, z bool) {
	t.log = append(t.log, fmt.Sprintf("%d %s=x", at, t.paths[id]))
}

// switchRun is everything observable of one run.
type switchRun struct {
	got   [][]arrival // per output port
	snap  sim.Snapshot
	trace []string
}

// switchCase draws a switch's configuration: its spec and the number of
// destination nodes its sources pick from.
type switchCase struct {
	name  string
	seeds int
	spec  func(rng *sim.Rand) (SwitchSpec, int)
}

// randSpec is a switch of 2..maxPorts ports with queues of 1..4 frames
// (or the defaults, now and then), routing by node number.
func randSpec(rng *sim.Rand, maxPorts int) SwitchSpec {
	spec := SwitchSpec{Ports: 2 + rng.IntN(maxPorts-1), LatencyPS: sim.Tick(rng.IntN(800)) * sim.NS,
		QueueLen: 1 + rng.IntN(4), IngressLen: 1 + rng.IntN(4)}
	if rng.IntN(8) == 0 {
		spec.QueueLen, spec.IngressLen = 0, 0 // the defaults
	}
	return spec
}

var switchCases = []switchCase{
	{"star", 30, func(rng *sim.Rand) (SwitchSpec, int) {
		s := randSpec(rng, 64)
		return s, s.Ports
	}},
	{"tiny_buffers", 60, func(rng *sim.Rand) (SwitchSpec, int) {
		s := randSpec(rng, 8)
		s.QueueLen, s.IngressLen = 1, 1
		return s, s.Ports
	}},
	// Buffers of 64 frames fill only when all send to a few outputs.
	{"default_buffers_incast", 10, func(rng *sim.Rand) (SwitchSpec, int) {
		s := randSpec(rng, 64)
		s.QueueLen, s.IngressLen = 0, 0
		return s, min(s.Ports, 1+rng.IntN(2))
	}},
	// A leaf of a leaf-spine network: per nodes on ports 0..per-1, the
	// other nodes up through the spine ports, by destination.
	{"leaf", 30, func(rng *sim.Rand) (SwitchSpec, int) {
		s := randSpec(rng, 64)
		spines := 1 + rng.IntN(s.Ports-1)
		per := s.Ports - spines
		if per == 0 {
			per, spines = s.Ports, 0
		}
		leaves := 1 + rng.IntN(8)
		l := rng.IntN(leaves)
		s.Route = make([]int, per*leaves-rng.IntN(per))
		for d := range s.Route {
			if d/per == l || spines == 0 {
				s.Route[d] = d % per
			} else {
				s.Route[d] = per + d%spines
			}
		}
		return s, len(s.Route)
	}},
	// A spine: port l goes down to leaf l, of per nodes each.
	{"spine", 20, func(rng *sim.Rand) (SwitchSpec, int) {
		s := randSpec(rng, 64)
		per := 1 + rng.IntN(16)
		s.Route = make([]int, per*s.Ports-rng.IntN(per))
		for d := range s.Route {
			s.Route[d] = d / per
		}
		return s, len(s.Route)
	}},
}

// runSwitch builds a random network around a switch from seed and runs it;
// the same seed builds the same network around either implementation.
func runSwitch(t *testing.T, c switchCase, seed uint64, trace bool, mk func(*sim.Clock, SwitchSpec) (testSwitch, error)) (switchRun, string) {
	rng := sim.NewRand(seed, "net."+c.name)
	spec, nodes := c.spec(rng)
	ports := spec.Ports
	desc := fmt.Sprintf("%s seed %d: %d ports, queue %d, ingress %d (0: default), latency %v, %d nodes", c.name, seed, ports, spec.QueueLen, spec.IngressLen, spec.LatencyPS, nodes)

	e := sim.NewEngine(seed)
	clk := e.NewClock("clk", sim.Tick(500+rng.IntN(2)*500), 0)
	sw, err := mk(clk, spec)
	if err != nil {
		t.Fatal(err)
	}
	wireSpec := func() WireSpec {
		return WireSpec{RateMbps: uint64(1000 * (1 + rng.IntN(100))), LatencyPS: sim.Tick(rng.IntN(2000)) * sim.NS}
	}
	frames := 50 + rng.IntN(250)
	sinks := make([]*lazySink, ports)
	for i := 0; i < ports; i++ {
		var in, out *sim.Chan[Frame]
		var inWire, outWire *Wire
		if rng.IntN(8) != 0 { // some ports only take frames
			src := &randSrc{rng: sim.NewRand(seed, fmt.Sprintf("src%d", i)), node: i, n: rng.IntN(frames), dsts: nodes, burst: rng.IntN(101)}
			src.u = clk.Add(fmt.Sprintf("src%d", i), src)
			if rng.IntN(3) == 0 {
				in = sim.NewChan[Frame](src.u, sw.Unit(), fmt.Sprintf("in%d", i), 1+rng.IntN(3))
				src.out = in
			} else {
				inWire, err = NewWire(clk, fmt.Sprintf("up%d", i), wireSpec(), src.u, sw.Unit())
				if err != nil {
					t.Fatal(err)
				}
				src.out = inWire.In
			}
		}
		snk := &lazySink{rng: sim.NewRand(seed, fmt.Sprintf("sink%d", i)), slow: rng.IntN(60)}
		snk.u = clk.Add(fmt.Sprintf("sink%d", i), snk)
		if rng.IntN(3) == 0 {
			out = sim.NewChan[Frame](sw.Unit(), snk.u, fmt.Sprintf("out%d", i), 1+rng.IntN(3))
			snk.in = out
		} else {
			outWire, err = NewWire(clk, fmt.Sprintf("down%d", i), wireSpec(), sw.Unit(), snk.u)
			if err != nil {
				t.Fatal(err)
			}
			snk.in = outWire.Out
		}
		sinks[i] = snk
		if inWire != nil {
			in = inWire.Out
		}
		if outWire != nil {
			out = outWire.In
		}
		if s, ok := sw.(*Switch); ok && inWire != nil {
			// The wire tells the switch of deliveries; plain channels
			// are polled.
			s.SetWirePort(i, inWire, outWire)
			s.Out[i] = out
			continue
		}
		sw.SetPort(i, in, out)
	}
	var tl *traceLog
	if trace {
		tl = &traceLog{}
		e.AttachTracer(tl)
	}
	e.Run(sim.S)
	r := switchRun{snap: e.Snapshot()}
	for _, s := range sinks {
		r.got = append(r.got, s.got)
	}
	if tl != nil {
		r.trace = tl.log
	}
	return r, desc
}

// Switch forwards exactly as the reference implementation, which visits
// every port and VOQ on every edge: every frame leaves on the same port at
// the same time in the same order, the switch runs on the same edges, and
// every statistic (the switch's, the wires', the channels') and every
// traced value is the same, over random networks with backpressure.
func TestSwitchMatchesReference(t *testing.T) {
	for _, c := range switchCases {
		t.Run(c.name, func(t *testing.T) {
			seeds := c.seeds
			if testing.Short() {
				seeds = max(1, seeds/5)
			}
			var frames, stalls uint64
			for seed := uint64(1); seed <= uint64(seeds); seed++ {
				trace := seed%4 == 0
				want, desc := runSwitch(t, c, seed, trace, func(clk *sim.Clock, spec SwitchSpec) (testSwitch, error) {
					return newRefSwitch(clk, "sw", spec)
				})
				got, _ := runSwitch(t, c, seed, trace, func(clk *sim.Clock, spec SwitchSpec) (testSwitch, error) {
					return NewSwitch(clk, "sw", spec)
				})
				for p := range want.got {
					if !reflect.DeepEqual(got.got[p], want.got[p]) {
						n := min(len(got.got[p]), len(want.got[p]))
						k := 0
						for k < n && got.got[p][k] == want.got[p][k] {
							k++
						}
						t.Fatalf("%s: port %d: %d frames, want %d; first difference at frame %d", desc, p, len(got.got[p]), len(want.got[p]), k)
					}
				}
				if !reflect.DeepEqual(got.snap, want.snap) {
					for name, w := range want.snap.Stats {
						if g := got.snap.Stats[name]; !reflect.DeepEqual(g, w) {
							t.Errorf("%s: %s differs", desc, name)
						}
					}
					t.Fatalf("%s: statistics differ:\n%+v\nwant\n%+v", desc, got.snap.Simulation, want.snap.Simulation)
				}
				if !reflect.DeepEqual(got.trace, want.trace) {
					t.Fatalf("%s: traces differ (%d values, want %d)", desc, len(got.trace), len(want.trace))
				}
				frames += *want.snap.Stats["sw.forwarded"].Value
				stalls += *want.snap.Stats["sw.stalls"].Value
			}
			t.Logf("%d networks, %d frames forwarded, %d input stalls", seeds, frames, stalls)
			if stalls == 0 {
				t.Fatal("no input ever waited: the test does not exercise backpressure")
			}
		})
	}
}
