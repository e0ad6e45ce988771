package startx

import (
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// RouterSpec is an Arctic router of the switched network (more than two
// nodes). The seed names the Arctic Switch Fabric and nothing of it; the
// defaults are aaemu's.
type RouterSpec struct {
	// Ports is the router's ports, each an input and an output: default 4,
	// a 4×4 crossbar (ext.).
	Ports int
	// BufferPackets is each input's buffer per priority, the credits of the
	// line into it: default 4 packets (ext.).
	BufferPackets int
}

// DefaultRouterSpec is the router with the defaults above.
func DefaultRouterSpec() RouterSpec { return RouterSpec{Ports: 4, BufferPackets: 4} }

// Validate checks a router spec.
func (s RouterSpec) Validate() error {
	switch {
	case s.Ports < 2 || s.Ports > 64:
		return fmt.Errorf("startx: router of %d ports: want 2..64", s.Ports)
	case s.BufferPackets < 1 || s.BufferPackets > 1024:
		return fmt.Errorf("startx: router buffers of %d packets: want 1..1024", s.BufferPackets)
	}
	return nil
}

// Router is an Arctic router: every input has a buffer per priority (the
// credits of the line into it, so a full low-priority buffer never holds a
// high-priority packet), and every output takes, when its line is free, a
// high-priority packet from the inputs whose head goes there if one waits,
// else a low-priority one; among inputs, round-robin from the one after
// the last served. Route maps a destination node to its output port: a
// fixed path per destination keeps every pair's packets in order.
type Router struct {
	u     *sim.Unit
	spec  RouterSpec
	route []int
	// In are the inputs' buffers by port and priority (the ends of the
	// lines into the router); Out the outputs' lines by port and priority.
	In, Out [][2]*sim.Chan[Packet]
	next    [][2]int // by output and priority: the input to look at first

	forwarded *sim.Counter
}

// NewRouter places a router in clk; route[node] is the output port toward
// node. Lines attach with ConnectIn and ConnectOut.
func NewRouter(clk *sim.Clock, name string, spec RouterSpec, route []int) (*Router, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for d, p := range route {
		if p < 0 || p >= spec.Ports {
			return nil, fmt.Errorf("%s: node %d routed to port %d of %d", name, d, p, spec.Ports)
		}
	}
	r := &Router{spec: spec, route: route, In: make([][2]*sim.Chan[Packet], spec.Ports),
		Out: make([][2]*sim.Chan[Packet], spec.Ports), next: make([][2]int, spec.Ports)}
	r.u = clk.Add(name, r)
	r.forwarded = r.u.Engine().Stats().Counter(name+".packets", "packets", "packets the router forwarded")
	return r, nil
}

// Unit is the router's unit of the simulation.
func (r *Router) Unit() *sim.Unit { return r.u }

// Forwarded is the packets the router has forwarded.
func (r *Router) Forwarded() uint64 { return r.forwarded.Value() }

// Tick is one edge of the router: every output whose line is free takes
// one packet.
func (r *Router) Tick(now sim.Tick) bool {
	progress := false
	for o := range r.Out {
		for p := High; p <= Low; p++ {
			out := r.Out[o][p]
			if out == nil || !out.Ready() {
				continue
			}
			if i := r.pick(o, p); i >= 0 {
				out.Send(r.In[i][p].Recv())
				r.next[o][p] = (i + 1) % len(r.In)
				r.forwarded.Inc()
				progress = true
				break // one packet an edge per output
			}
		}
	}
	return progress
}

// pick is the input whose head packet of priority p goes to output o,
// round-robin from next; -1 if none.
func (r *Router) pick(o int, p Priority) int {
	n := len(r.In)
	for k := 0; k < n; k++ {
		i := (r.next[o][p] + k) % n
		in := r.In[i][p]
		if in == nil {
			continue
		}
		if pk := in.Peek(); pk != nil && pk.Dst < len(r.route) && r.route[pk.Dst] == o {
			return i
		}
	}
	return -1
}

// The network's ends: a line into a router's port, out of it, or between
// two of them.

// LineToRouter places a line from NIU tx into router r's port.
func LineToRouter(clk *sim.Clock, name string, spec LineSpec, tx *NIU, r *Router, port int) (*Line, error) {
	l, err := newLine(clk, name, spec, tx.u, r.u, r.spec.BufferPackets)
	if err != nil {
		return nil, err
	}
	for p := High; p <= Low; p++ {
		tx.NetOut[p], r.In[port][p] = l.In[p], l.Out[p]
	}
	return l, nil
}

// LineFromRouter places a line from router r's port into NIU rx.
func LineFromRouter(clk *sim.Clock, name string, spec LineSpec, r *Router, port int, rx *NIU) (*Line, error) {
	l, err := newLine(clk, name, spec, r.u, rx.u, rx.spec.RXDepth)
	if err != nil {
		return nil, err
	}
	for p := High; p <= Low; p++ {
		r.Out[port][p], rx.NetIn[p] = l.In[p], l.Out[p]
	}
	return l, nil
}

// LineBetween places a line from router a's port pa into router b's port
// pb.
func LineBetween(clk *sim.Clock, name string, spec LineSpec, a *Router, pa int, b *Router, pb int) (*Line, error) {
	l, err := newLine(clk, name, spec, a.u, b.u, b.spec.BufferPackets)
	if err != nil {
		return nil, err
	}
	for p := High; p <= Low; p++ {
		a.Out[pa][p], b.In[pb][p] = l.In[p], l.Out[p]
	}
	return l, nil
}
