package bglml

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// Progress is how a node's message layer makes progress while its main
// core computes.
type Progress uint8

const (
	// Polling: the main core runs the advance loop when it waits (the
	// paper's basic mode, L94); nothing moves while it computes.
	Polling Progress = iota
	// Thread: the communication thread on the coprocessor (L111), the
	// node in coprocessor mode.
	Thread
	// Interrupts: reception interrupts the main core (L94, 103 cycles a
	// context switch), which runs the advance loop in the handler.
	Interrupts
)

// Progresses is the three, in order.
var Progresses = []Progress{Polling, Thread, Interrupts}

func (g Progress) String() string {
	switch g {
	case Polling:
		return "polling"
	case Thread:
		return "thread"
	case Interrupts:
		return "interrupts"
	}
	return fmt.Sprintf("progress(%d)", uint8(g))
}

// ParseProgress reads a progress mode's name.
func ParseProgress(s string) (Progress, error) {
	for _, g := range Progresses {
		if g.String() == s {
			return g, nil
		}
	}
	return 0, fmt.Errorf("bglml: %q is not a progress mode (polling, thread, interrupts)", s)
}

// ComputeSlice is the cycles of the overlap experiment's computation
// between two points where an interrupt can be taken (the model's cores
// take one between two operations; a real core between two
// instructions). Our choice: it adds up to that much to an interrupt's
// wait, and 32 cycles against the 103 of its context switch keep that
// small.
const ComputeSlice = 32

// Overlap is the compute-and-communicate experiment: the nodes at a and b
// each, step after step, post a size-byte message to the other (the
// protocol by size, Params) and make a pass of the advance loop (or hand
// the message to the thread), compute for compute cycles on the main
// core, then wait until their message is sent and the other's received. The
// layer makes progress as how says (the machine in coprocessor mode for
// Thread). It returns the mean time of a step at a over steps steps after
// one that warms up, and checks that each node received each of the
// other's messages exactly once, with its bytes.
func Overlap(spec bgl.Spec, params Params, costs Costs, a, b torus.Coord, how Progress, size, compute, steps int) (sim.Tick, error) {
	return overlapOn(1, spec, params, costs, a, b, how, size, compute, steps)
}

// overlapOn is Overlap on partitions goroutines.
func overlapOn(partitions int, spec bgl.Spec, params Params, costs Costs, a, b torus.Coord, how Progress, size, compute, steps int) (sim.Tick, error) {
	if steps < 1 || size < 0 || size > MaxMessage || compute < 0 || compute > 1<<30 {
		return 0, fmt.Errorf("bglml: overlap of %d steps of %d bytes and %d cycles (steps ≥ 1, 0 to %d bytes, 0 to 2^30 cycles)", steps, size, compute, MaxMessage)
	}
	if how > Interrupts {
		return 0, fmt.Errorf("bglml: progress mode %v (polling, thread, interrupts)", how)
	}
	if how == Thread {
		spec = spec.WithMode(bgl.CoprocessorMode)
	}
	w := sim.NewWorld(1)
	w.SetPartitions(partitions)
	m, err := bgl.New(w, "bgl", spec)
	if err != nil {
		return 0, err
	}
	in := func(c torus.Coord) bool {
		for d := 0; d < 3; d++ {
			if c[d] < 0 || c[d] >= spec.Torus.Dims[d] {
				return false
			}
		}
		return true
	}
	ia, ib := m.Torus.IndexOf(a), m.Torus.IndexOf(b)
	if !in(a) || !in(b) || ia == ib {
		return 0, fmt.Errorf("bglml: overlap between %v and %v (two nodes of the machine)", a, b)
	}
	// Each node's failures apart: the nodes may run on several goroutines.
	failed := make([]error, len(m.Nodes))
	pattern := func(src, step int) []byte {
		d := make([]byte, size)
		for i := range d {
			d[i] = byte(src*31 + step*7 + i)
		}
		return d
	}
	var t0, t1 sim.Tick
	for _, side := range [][2]int{{ia, ib}, {ib, ia}} {
		me, peer := side[0], side[1]
		nd := m.Nodes[me]
		fail := func(err error) {
			if failed[me] == nil {
				failed[me] = err
			}
		}
		// Buffers of whole L1 lines (the thread's receives are line
		// aligned, L111); two for receiving, the other's next message
		// can come before this step ends.
		line := func(n int) uint64 {
			return nd.Alloc(max(bgl.LineBytes, (n+bgl.LineBytes-1)/bgl.LineBytes*bgl.LineBytes))
		}
		sbuf := line(size)
		rbuf := [2]uint64{line(size), line(size)}
		got := make([]int, steps+1)
		up := func(src int, info []byte, n int) (uint64, func()) {
			k := int(binary.LittleEndian.Uint32(info))
			if src != peer || n != size || k < 0 || k > steps {
				fail(fmt.Errorf("bglml: overlap: node %d: message %d of %d bytes from node %d", me, k, n, src))
				return rbuf[0], nil
			}
			return rbuf[k%2], func() {
				got[k]++
				if got[k] > 1 {
					fail(fmt.Errorf("bglml: overlap: node %d: message %d from node %d delivered %d times", me, k, peer, got[k]))
				}
				in := make([]byte, size)
				nd.Mem.Read(rbuf[k%2], in)
				if !bytes.Equal(in, pattern(peer, k)) {
					fail(fmt.Errorf("bglml: overlap: node %d: message %d from node %d: bytes differ", me, k, peer))
				}
			}
		}
		l, err := New(m, me, params, costs, up)
		if err != nil {
			return 0, err
		}
		var ct *CommThread
		switch how {
		case Thread:
			if ct, err = l.StartCommThread(); err != nil {
				return 0, err
			}
		case Interrupts:
			if err := l.StartInterrupts(); err != nil {
				return 0, err
			}
		}
		nd.Cores[0].Spawn("overlap", func(p *cpu.Proc) {
			for k := 0; k <= steps; k++ {
				if k == 1 && me == ia {
					t0 = p.Now()
				}
				nd.Mem.Write(sbuf, pattern(me, k))
				sent := false
				msg := &Message{Dst: peer, Addr: sbuf, Len: size, Info: binary.LittleEndian.AppendUint32(nil, uint32(k)), Done: func() { sent = true }}
				done := func() bool { return sent && got[k] > 0 }
				switch how {
				case Thread:
					err = ct.Post(p, msg)
				default:
					err = l.Send(p, msg)
				}
				if err != nil {
					fail(err)
					return
				}
				if how != Thread {
					// A pass, as a non-blocking send's call makes
					// progress: the message's first packets written.
					l.Advance(p)
				}
				if how == Interrupts {
					for c := compute; c > 0; c -= ComputeSlice {
						p.Compute(min(c, ComputeSlice))
					}
				} else if compute > 0 {
					p.Compute(compute)
				}
				if how == Thread {
					ct.Wait(p, done)
				} else {
					l.Until(p, done)
				}
			}
			if me == ia {
				t1 = p.Now()
			}
			if how != Thread {
				// What the other node still needs of this layer (the
				// thread runs on by itself).
				l.Until(p, l.Idle)
			}
			for k, n := range got {
				if n != 1 {
					fail(fmt.Errorf("bglml: overlap: node %d got message %d from node %d %d times", me, k, peer, n))
				}
			}
		})
	}
	m.World.Run(sim.S)
	for _, err := range failed {
		if err != nil {
			return 0, err
		}
	}
	if t1 == 0 {
		return 0, fmt.Errorf("bglml: overlap: %d steps did not end within a simulated second", steps)
	}
	return (t1 - t0) / sim.Tick(steps), nil
}
