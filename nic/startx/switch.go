package startx

import (
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Switch is a crossbar joining the NIUs of more than two nodes: a line
// from every NIU into one of its ports, a line out of every port to that
// NIU. Each port keeps InDepth packets a priority of what came in (the
// credits of the line into it) and forwards the head of each to the port
// its destination node is on when that port's line takes it: high
// priority first, the inputs in turn (round robin) for each output. A
// packet whose output is busy holds back the packets behind it on its
// input and priority (head of line), as a wormhole switch's would.
type Switch struct {
	u     *sim.Unit
	name  string
	in    [][2]*sim.Chan[Packet] // by port, priority: the ends of the lines in
	out   [][2]*sim.Chan[Packet] // by port, priority: the lines out
	next  []int                  // per output: the input to look at first
	Lines []*Line                // the lines in and out, by port (in, out)
	// heads counts, per priority and output, the inputs whose valid head
	// goes to that output (Tick's, rebuilt every tick): an output none
	// wants is not scanned, which on many ports is most of them.
	heads [2][]int

	dropped *sim.Counter
}

// SwitchInDepth is the packets a priority a port buffers.
const SwitchInDepth = 4

// NewSwitch places a switch in clk with a port for each NIU, joined by
// lines of spec each way (the lines' latency is the cable's and the
// switch's).
func NewSwitch(clk *sim.Clock, name string, spec LineSpec, nius []*NIU) (*Switch, error) {
	s := &Switch{name: name, in: make([][2]*sim.Chan[Packet], len(nius)), out: make([][2]*sim.Chan[Packet], len(nius)), next: make([]int, len(nius)),
		heads: [2][]int{make([]int, len(nius)), make([]int, len(nius))}}
	s.u = clk.Add(name, s)
	s.dropped = s.u.Engine().Stats().Counter(name+".dropped", "packets", "packets for a node the switch has no port for")
	for i, n := range nius {
		if n.spec.Node != i {
			return nil, fmt.Errorf("%s: port %d: the NIU of node %d", name, i, n.spec.Node)
		}
		up, err := newLine(n.u.Clock(), fmt.Sprintf("%s.up%d", name, i), spec, n.u, s.u, SwitchInDepth)
		if err != nil {
			return nil, err
		}
		down, err := newLine(clk, fmt.Sprintf("%s.down%d", name, i), spec, s.u, n.u, n.spec.RXDepth)
		if err != nil {
			return nil, err
		}
		n.NetOut, s.in[i] = up.In, up.Out
		s.out[i], n.NetIn = down.In, down.Out
		s.Lines = append(s.Lines, up, down)
	}
	return s, nil
}

// Dropped is the packets the switch dropped: for a node it has no port for.
func (s *Switch) Dropped() uint64 { return s.dropped.Value() }

// Tick forwards what it can: for every output and priority, high first,
// the first input in turn whose head goes there.
func (s *Switch) Tick(now sim.Tick) bool {
	progress := false
	n := len(s.in)
	// A packet for no port would hold its input for ever: dropped.
	for i := 0; i < n; i++ {
		for p := High; p <= Low; p++ {
			if s.in[i][p].Valid() {
				if d := s.in[i][p].Peek().Dst; d < 0 || d >= n {
					s.in[i][p].Recv()
					s.dropped.Inc()
					progress = true
				}
			}
		}
	}
	// The heads waiting, by priority and output. Valid and Peek only look,
	// so an output no head goes to is skipped without a scan that would
	// find nothing; a head taken is replaced by the one behind it.
	for p := High; p <= Low; p++ {
		clear(s.heads[p])
		for i := 0; i < n; i++ {
			if h := s.in[i][p].Peek(); h != nil && h.Dst >= 0 && h.Dst < n {
				s.heads[p][h.Dst]++
			}
		}
	}
	for o := 0; o < n; o++ {
		for p := High; p <= Low; p++ {
			if !s.out[o][p].Ready() || s.heads[p][o] == 0 {
				continue
			}
			for k := 0; k < n; k++ {
				i := (s.next[o] + k) % n
				if !s.in[i][p].Valid() {
					continue
				}
				if h := s.in[i][p].Peek(); h.Dst != o {
					continue
				}
				s.out[o][p].Send(s.in[i][p].Recv())
				s.heads[p][o]--
				if h := s.in[i][p].Peek(); h != nil && h.Dst >= 0 && h.Dst < n {
					s.heads[p][h.Dst]++
				}
				s.next[o] = (i + 1) % n
				progress = true
				break
			}
		}
	}
	return progress
}
