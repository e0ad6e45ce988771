package nic

import (
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/sim"
)

// refSwitch is the switch as it was before its datapath became
// proportional to the frames it moves: every input, output and VOQ is
// visited on every edge. The equivalence test holds Switch to it.
//
// It forwards frames by destination node with one queue per output
// port. A full output queue stops its inputs (lossless, as with PFC), which
// backpressures the senders. An input buffers the frames it takes in a
// queue per output (VOQ), so a congested output holds up only the frames
// for it. Each output grants the room it has to the inputs with frames
// for it in round-robin order from the input it granted last, as a
// switch's arbiter does (iSLIP's grant pointer), so a congested output
// shares itself fairly and no sender starves.
type refSwitch struct {
	u    *sim.Unit
	spec SwitchSpec
	In   []*sim.Chan[Frame]
	Out  []*sim.Chan[Frame]
	q    [][]refQueuedFrame
	// grant is, per output, the input that output granted last.
	grant []int
	voq   [][][]refQueuedFrame // per input, per output: frames waiting, in order
	held  []int                // per input: frames in its VOQs

	forwarded, bytes, stalls *sim.Counter
}

type refQueuedFrame struct {
	f  Frame
	at sim.Tick
}

// newRefSwitch is NewSwitch of the reference switch.
func newRefSwitch(clk *sim.Clock, name string, spec SwitchSpec) (*refSwitch, error) {
	if spec.Ports < 2 {
		return nil, fmt.Errorf("%s: %d ports", name, spec.Ports)
	}
	if spec.QueueLen < 1 {
		spec.QueueLen = 64
	}
	for d, p := range spec.Route {
		if p < 0 || p >= spec.Ports {
			return nil, fmt.Errorf("%s: node %d routed to port %d of %d", name, d, p, spec.Ports)
		}
	}
	s := &refSwitch{spec: spec, In: make([]*sim.Chan[Frame], spec.Ports), Out: make([]*sim.Chan[Frame], spec.Ports),
		q: make([][]refQueuedFrame, spec.Ports), grant: make([]int, spec.Ports), voq: make([][][]refQueuedFrame, spec.Ports), held: make([]int, spec.Ports)}
	if spec.IngressLen < 1 {
		s.spec.IngressLen = 64
	}
	for i := range s.voq {
		s.voq[i] = make([][]refQueuedFrame, spec.Ports)
	}
	for d := range s.grant {
		s.grant[d] = spec.Ports - 1 // the first grant goes to input 0
	}
	s.u = clk.Add(name, s)
	st := s.u.Engine().Stats()
	s.forwarded = st.Counter(name+".forwarded", "frames", "frames forwarded")
	s.bytes = st.Counter(name+".forwarded_bytes", "bytes", "bytes of the frames forwarded (Ethernet frames without preamble, FCS or gap)")
	s.stalls = st.Counter(name+".stalls", "edges", "edges at which an input's wire waited for room in the input's buffer")
	for i := 0; i < spec.Ports && i < 16; i++ {
		i := i
		s.u.Probe(fmt.Sprintf("queue%d", i), 8, func() (uint64, bool) { return uint64(len(s.q[i])), true })
	}
	return s, nil
}

// ForwardedBytes is every byte the switch has forwarded.
func (s *refSwitch) ForwardedBytes() uint64 { return s.bytes.Value() }

// Unit is the switch's kernel unit.
func (s *refSwitch) Unit() *sim.Unit { return s.u }

// SetPort connects port i: frames arrive on in and leave on out.
func (s *refSwitch) SetPort(i int, in, out *sim.Chan[Frame]) { s.In[i], s.Out[i] = in, out }

// head is the output input in's head frame goes to, -1 when it has none;
// frames to no port are dropped, as a switch drops an unknown destination.
func (s *refSwitch) head(in *sim.Chan[Frame]) int {
	for in != nil && in.Valid() {
		d := in.Peek().DstNode
		if s.spec.Route != nil {
			if d >= 0 && d < len(s.spec.Route) {
				return s.spec.Route[d]
			}
		} else if d >= 0 && d < len(s.In) {
			return d
		}
		in.Recv()
	}
	return -1
}

// ingress takes the frames input i's wire delivers into its VOQs while
// its buffer has room, and reports whether the wire still waits.
func (s *refSwitch) ingress(i int, now sim.Tick) bool {
	in := s.In[i]
	for s.held[i] < s.spec.IngressLen {
		d := s.head(in)
		if d < 0 {
			return false
		}
		s.voq[i][d] = append(s.voq[i][d], refQueuedFrame{f: in.Recv(), at: now + s.spec.LatencyPS})
		s.held[i]++
	}
	return in != nil && in.Valid()
}

// arbitrate moves frames from the VOQs to the output queues: every output
// with room grants the next input with a frame for it after the one it
// granted last, in rounds while frames move.
func (s *refSwitch) arbitrate() {
	n := len(s.In)
	for moved := true; moved; {
		moved = false
		for d := range s.q {
			if len(s.q[d]) >= s.spec.QueueLen {
				continue
			}
			for k := 1; k <= n; k++ {
				i := (s.grant[d] + k) % n
				if len(s.voq[i][d]) == 0 {
					continue
				}
				s.q[d] = append(s.q[d], s.voq[i][d][0])
				s.voq[i][d] = slices.Delete(s.voq[i][d], 0, 1)
				s.held[i]--
				s.grant[d], moved = i, true
				break
			}
		}
	}
}

// Tick moves frames from inputs to their VOQs, to output queues and out.
func (s *refSwitch) Tick(now sim.Tick) bool {
	for i := range s.In {
		s.ingress(i, now)
	}
	s.arbitrate()
	for i := range s.In {
		if s.ingress(i, now) { // room the arbitration made
			s.stalls.Inc() // an input waits for room in its buffer
		}
	}
	s.arbitrate()
	next := sim.Never
	for d := range s.q {
		k := 0
		for k < len(s.q[d]) && s.q[d][k].at <= now && s.Out[d].Ready() {
			s.Out[d].Send(s.q[d][k].f)
			s.forwarded.Inc()
			s.bytes.Add(uint64(s.q[d][k].f.Len()))
			k++
		}
		s.q[d] = slices.Delete(s.q[d], 0, k)
		if len(s.q[d]) > 0 {
			if s.q[d][0].at > now {
				next = min(next, s.q[d][0].at)
			} else if s.Out[d].Ready() {
				return true
			}
		}
	}
	for d := range s.q {
		if len(s.q[d]) < s.spec.QueueLen {
			for i := range s.voq {
				if len(s.voq[i][d]) > 0 {
					return true // egress made room for a waiting frame
				}
			}
		}
	}
	if next != sim.Never {
		s.u.WakeAt(next)
	}
	return false
}
