package startx

import (
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Line is one direction of an Arctic link between two NIUs: packets are
// serialised at the line rate, high priority first, and arrive a latency
// later in the receiver's FIFO of their priority. Each priority has its
// own credits — the receive FIFO's free entries — so a full low-priority
// FIFO never holds a high-priority packet, while high-priority packets
// take the line whenever they wait, and may starve low.
type Line struct {
	u    *sim.Unit
	spec LineSpec
	In   [2]*sim.Chan[Packet] // from the sending NIU, by priority
	Out  [2]*sim.Chan[Packet] // the receiving NIU's receive FIFOs, by priority (links: credits return with the latency)

	cur     *Packet  // the packet on the line
	doneAt  sim.Tick // when its last bit is on the line
	acc     uint64   // fractional picoseconds carried over
	packets *sim.Counter
	bytes   *sim.Counter
}

// NewLine places a line in clk between the sending NIU tx and the
// receiving NIU rx, whose receive FIFOs hold rxDepth packets each.
func NewLine(clk *sim.Clock, name string, spec LineSpec, tx, rx *NIU) (*Line, error) {
	l, err := newLine(clk, name, spec, tx.u, rx.u, rx.spec.RXDepth)
	if err != nil {
		return nil, err
	}
	tx.NetOut, rx.NetIn = l.In, l.Out
	return l, nil
}

// newLine places a line from unit tx to unit rx, whose buffers at the end
// hold depth packets a priority: the caller connects In and Out.
func newLine(clk *sim.Clock, name string, spec LineSpec, tx, rx *sim.Unit, depth int) (*Line, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l := &Line{spec: spec}
	l.u = clk.Add(name, l)
	lat := max(spec.LatencyPS, clk.Period())
	for p := High; p <= Low; p++ {
		l.In[p] = sim.NewChan[Packet](tx, l.u, fmt.Sprintf("%s.tx_%s", name, p), 1)
		l.Out[p] = sim.NewLink[Packet](l.u, rx, fmt.Sprintf("%s.rx_%s", name, p), depth, lat)
	}
	st := l.u.Engine().Stats()
	l.packets = st.Counter(name+".packets", "packets", "packets sent on the line")
	l.bytes = st.Counter(name+".bytes", "bytes", "bytes on the line, with the CRC word")
	return l, nil
}

// Bytes is what the line has carried.
func (l *Line) Bytes() uint64 { return l.bytes.Value() }

// Tick is one edge of the line.
func (l *Line) Tick(now sim.Tick) bool {
	progress := false
	if l.cur != nil && l.doneAt <= now {
		l.Out[l.cur.Pri].Send(*l.cur)
		l.cur = nil
		progress = true
	}
	if l.cur == nil {
		for p := High; p <= Low; p++ {
			if !l.In[p].Valid() || !l.Out[p].Ready() {
				continue
			}
			pk := l.In[p].Recv()
			b := uint64(pk.Bytes())
			l.acc += b * 8 * 1_000_000
			d := l.acc / l.spec.RateMbps
			l.acc %= l.spec.RateMbps
			l.cur, l.doneAt = &pk, now+sim.Tick(d)
			l.packets.Inc()
			l.bytes.Add(b)
			progress = true
			break
		}
	}
	if l.cur != nil {
		l.u.WakeAt(l.doneAt)
	}
	return progress
}
