// Package nic models RDMA NICs speaking RoCEv2 and the network between them:
// Ethernet wires with bandwidth, latency and optional loss, and a switch with
// per-port queues. The wire format is package nic/roce.
package nic

import (
	"fmt"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

// Frame is a RoCEv2 frame in flight between NICs.
type Frame struct {
	sim.Txn
	roce.Frame
	SrcNode, DstNode int
	// Bulk: the frame carries data of a bulk work request (WQE.Bulk), which
	// the receiving NIC may place by its bulk DMA path. Not on the wire.
	Bulk bool
}

// Len is the frame's size without FCS: Ethernet, IPv4, UDP, the transport
// packet and the ICRC.
func (f *Frame) Len() int { return 14 + 20 + 8 + f.Packet.Len() + roce.ICRCSize }

// WireSpec describes one direction of a network link.
type WireSpec struct {
	RateMbps  uint64   // line rate in Mbit/s (default 1000: the paper's 1 GbE)
	LatencyPS sim.Tick // propagation and PHY latency (default 1 µs)
	LossPPM   uint32   // frames lost per million (default 0)
	// Faults a lossless fabric can still show, for verification: frames
	// delivered twice (a link-level retry after a lost acknowledgement),
	// and frames held back so that the next one overtakes them (two paths
	// of unequal length). Per million frames; 0 draws nothing.
	DupPPM     uint32
	ReorderPPM uint32
}

// DefaultWireSpec is 1 Gb/s Ethernet.
func DefaultWireSpec() WireSpec { return WireSpec{RateMbps: 1000, LatencyPS: sim.US} }

// Validate checks the spec.
func (s WireSpec) Validate() error {
	switch {
	case s.RateMbps == 0:
		return fmt.Errorf("wire rate must be positive")
	case s.LossPPM > 1_000_000:
		return fmt.Errorf("loss of %d ppm exceeds one million", s.LossPPM)
	case s.DupPPM > 1_000_000:
		return fmt.Errorf("duplication of %d ppm exceeds one million", s.DupPPM)
	case s.ReorderPPM > 1_000_000:
		return fmt.Errorf("reordering of %d ppm exceeds one million", s.ReorderPPM)
	}
	return nil
}

// rxFrames is the frames a wire's receiver buffers beyond what is in
// flight on the line (its port's FIFO).
const rxFrames = 16

// linkDepth is the frames a wire's link holds, in flight and at the
// receiver together: the receiver's buffer and the shortest frames the line
// can carry while a frame's credit goes to the receiver and back (2 × lat),
// so that backpressure, not the credit loop, limits a wire. A receiver that
// stops taking frames therefore sees up to that many arrive (47 at 10 Gb/s
// and 1 µs, about 315 at 100 Gb/s) before the wire stops, as a PFC pause
// leaves the frames already on the line, and its headroom, to arrive.
func (s WireSpec) linkDepth(lat sim.Tick) int {
	minFrame := sim.Tick(roce.WireBytes(64)) * 8 * 1_000_000 / sim.Tick(s.RateMbps) // ps
	return rxFrames + int((2*lat+minFrame-1)/max(minFrame, 1)) + 1
}

// Wire is one direction of an Ethernet link: frames are serialized at the
// line rate (with preamble, FCS and inter-frame gap), delayed by the
// latency, and lost with the configured probability. A frame arrives at the
// receiver's first edge at or after the end of its serialization plus the
// latency (its link: the wire and the receiver may run in two domains). A
// full receiver backpressures the wire (lossless Ethernet, as RoCE
// deployments use PFC), its credits returning with the latency too
// (linkDepth).
type Wire struct {
	u    *sim.Unit
	spec WireSpec
	rng  *sim.Rand
	In   *sim.Chan[Frame]
	Out  *sim.Chan[Frame]

	busyUntil sim.Tick
	lat       sim.Tick // the link's latency (Out)
	acc       uint64   // fractional picoseconds carried over
	flight    fifo[wireFrame]
	tap       Tap
	sink      *sim.Sink                  // where the tapped frames go (World.NewSink)
	arrive    func(t sim.Tick, f *Frame) // ArriveTap
	held      []wireFrame                // frames held back (ReorderPPM) until the next one overtakes them
	heldUntil sim.Tick                   // when the held frames go anyway: no frame came to overtake them

	frames, bytes, lost, dups, reordered *sim.Counter
}

type wireFrame struct {
	f  Frame
	at sim.Tick
}

// Tap sees every frame a wire transmits (the capture).
type Tap func(t sim.Tick, f *Frame, lost bool)

// NewWire places a wire in clk between the units tx and rx.
func NewWire(clk *sim.Clock, name string, spec WireSpec, tx, rx *sim.Unit) (*Wire, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w := &Wire{spec: spec}
	w.u = clk.Add(name, w)
	e := w.u.Engine()
	w.rng = e.Rand(name)
	w.In = sim.NewChan[Frame](tx, w.u, name+".tx", 2)
	// The propagation is a link: the wire and its receiver may run in two
	// domains (a node, the network), a latency apart. A latency below a
	// cycle counts as a cycle.
	w.lat = max(spec.LatencyPS, clk.Period())
	w.Out = sim.NewLink[Frame](w.u, rx, name+".rx", spec.linkDepth(w.lat), w.lat)
	st := e.Stats()
	w.frames = st.Counter(name+".frames", "frames", "frames sent")
	w.bytes = st.Counter(name+".wire_bytes", "bytes", "bytes on the wire, with preamble, FCS and inter-frame gap")
	w.lost = st.Counter(name+".lost", "frames", "frames lost (injected loss)")
	if spec.DupPPM > 0 || spec.ReorderPPM > 0 {
		w.dups = st.Counter(name+".duplicated", "frames", "frames delivered twice (injected duplication)")
		w.reordered = st.Counter(name+".reordered", "frames", "frames held back for the next one to overtake (injected reordering)")
	}
	return w, nil
}

// Bytes is the number of bytes the wire has carried (with Ethernet framing).
func (w *Wire) Bytes() uint64 { return w.bytes.Value() }

// Frames is the number of frames the wire has transmitted, the lost ones
// included.
func (w *Wire) Frames() uint64 { return w.frames.Value() }

// Lost is the number of frames the wire lost (injected loss).
func (w *Wire) Lost() uint64 { return w.lost.Value() }

// SetTap attaches a capture to the wire, in place of any tap before. Over
// ranks, every rank attaches the same taps and rank 0's see every frame.
func (w *Wire) SetTap(t Tap) {
	w.tap = t
	if w.sink == nil {
		w.sink = w.u.Engine().World().NewSink(w.untap)
	}
}

// untap hands an encoded tapped frame to the tap.
func (w *Wire) untap(t sim.Tick, b []byte) {
	if len(b) == 0 || w.tap == nil {
		return // the tap was removed since
	}
	f, _, err := DecodeFrame(b[1:])
	if err != nil {
		panic(fmt.Sprintf("%s: a tapped frame: %v", w.u.Name(), err))
	}
	w.tap(t, &f, b[0] == 1)
}

// AddTap attaches one more tap after those attached before (a protocol
// monitor beside the capture).
func (w *Wire) AddTap(t Tap) {
	prev := w.tap
	if prev == nil {
		w.SetTap(t)
		return
	}
	w.tap = func(at sim.Tick, f *Frame, lost bool) { prev(at, f, lost); t(at, f, lost) }
}

// ArriveTap attaches f to see every frame when the line delivers it to
// the receiver's link, in the order of delivery: with reordering and
// duplication that is not the order, nor the number, of transmissions.
func (w *Wire) ArriveTap(f func(t sim.Tick, f *Frame)) {
	prev := w.arrive
	if prev == nil {
		w.arrive = f
		return
	}
	w.arrive = func(at sim.Tick, fr *Frame) { prev(at, fr); f(at, fr) }
}

// Unit is the wire's kernel unit.
func (w *Wire) Unit() *sim.Unit { return w.u }

// Tick sends one frame when the wire is free and delivers arrived frames.
func (w *Wire) Tick(now sim.Tick) bool {
	if len(w.held) > 0 && w.heldUntil <= now {
		w.release()
	}
	for w.flight.len() > 0 && w.flight.front().at <= now && w.Out.Ready() {
		f := w.flight.pop().f
		if w.arrive != nil {
			tf, tap := f, w.arrive
			w.u.Engine().Output(func() { tap(now, &tf) })
		}
		w.Out.Send(f)
	}
	if w.In.Valid() && w.busyUntil <= now && w.flight.len() < 64 {
		f := w.In.Recv()
		bytes := roce.WireBytes(f.Len())
		w.acc += uint64(bytes) * 8 * 1_000_000
		d := w.acc / w.spec.RateMbps
		w.acc %= w.spec.RateMbps
		w.busyUntil = now + sim.Tick(d)
		lost := w.spec.LossPPM > 0 && w.rng.Uint32N(1_000_000) < w.spec.LossPPM
		w.tapFrame(&f, lost)
		w.frames.Inc()
		w.bytes.Add(uint64(bytes))
		if lost {
			w.lost.Inc()
		} else {
			// It leaves when its last bit is on the line; the link adds
			// the propagation.
			wf := wireFrame{f: f, at: w.busyUntil + max(w.spec.LatencyPS, w.lat) - w.lat}
			if w.spec.ReorderPPM > 0 && w.rng.Uint32N(1_000_000) < w.spec.ReorderPPM {
				// Held back: it arrives after the next frame, or a
				// frame time after its own arrival if none comes.
				w.reordered.Inc()
				w.held = append(w.held, wf)
				w.heldUntil = wf.at + sim.Tick(d) + w.lat
			} else {
				w.flight.push(wf)
				if len(w.held) > 0 {
					w.release() // this frame overtook them
				}
			}
			if w.spec.DupPPM > 0 && w.rng.Uint32N(1_000_000) < w.spec.DupPPM {
				// A second copy right behind the first, a transaction of
				// its own caused by the first (what it makes the receiver
				// do is then told apart from what the first did).
				dup := f
				dup.Txn = w.u.Engine().NewTxn(f.ID, "duplicate", w.u.Name())
				w.dups.Inc()
				w.tapFrame(&dup, false)
				if n := len(w.held); n > 0 && w.held[n-1].f.ID == f.ID {
					w.held = append(w.held, wireFrame{f: dup, at: wf.at}) // held with the first
				} else {
					w.flight.push(wireFrame{f: dup, at: wf.at})
				}
			}
		}
	}
	next := sim.Never
	if len(w.held) > 0 {
		next = w.heldUntil
	}
	if w.flight.len() > 0 {
		if at := w.flight.front().at; at <= now {
			if w.Out.Ready() {
				return true
			}
		} else {
			next = min(next, at)
		}
	}
	if w.In.Valid() {
		if w.busyUntil <= now {
			return true
		}
		next = min(next, w.busyUntil)
	}
	if next != sim.Never {
		w.u.WakeAt(max(next, now+1))
	}
	return false
}

// release puts the held frames on the line behind the frame that overtook
// them (no earlier than their own arrival).
func (w *Wire) release() {
	last := sim.Tick(0)
	if w.flight.len() > 0 {
		last = w.flight.back().at
	}
	for _, h := range w.held {
		h.at = max(h.at, last)
		w.flight.push(h)
	}
	w.held = w.held[:0]
}

// tapFrame shows a frame put on the line to the taps.
func (w *Wire) tapFrame(f *Frame, lost bool) {
	if w.tap == nil {
		return
	}
	// The tap gets the frame encoded (a copy that may cross to rank 0),
	// written in time order with the other domains' outputs
	// (Engine.OutputTo).
	w.u.Engine().OutputTo(w.sink, appendTap(f, lost))
}
