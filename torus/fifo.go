package torus

import (
	"github.com/aaemu/aaemu/sim"
)

// FIFO is an injection or a reception FIFO: packets between the router and
// the message layer, counted in 32-byte chunks as the hardware's are. Both
// sides run in the node's domain. As on a channel, what one side does at an
// edge the other sees from the next edge on: a packet written at t is
// visible from the next edge, and space freed at t is free for the writer
// from the next edge, so the order in which the two run never matters.
type FIFO struct {
	name  string
	cap   int
	used  int // chunks held
	q     sim.Queue[fifoEntry]
	popAt sim.Tick
	freed int // chunks freed at popAt

	// wake is the reader to wake when a packet becomes visible, and
	// writer the writer to wake when space is freed.
	reader, writer *sim.Unit
	// onHead tells the reader's router when a packet written into an
	// empty FIFO becomes visible; onPop tells the writer's router that
	// space was freed at t.
	onHead, onPop func(t sim.Tick)

	packets *sim.Counter
}

type fifoEntry struct {
	p   *Packet
	vis sim.Tick
}

func newFIFO(st *sim.Stats, name string, chunks int) *FIFO {
	return &FIFO{name: name, cap: chunks, popAt: sim.Never,
		packets: st.Counter(name+".packets", "packets", "packets written into the FIFO")}
}

// Name of the FIFO.
func (f *FIFO) Name() string { return f.name }

// Chunks is the FIFO's size in 32-byte chunks.
func (f *FIFO) Chunks() int { return f.cap }

// Room is the chunks the writer may write at now.
func (f *FIFO) Room(now sim.Tick) int {
	r := f.cap - f.used
	if f.popAt == now {
		r -= f.freed
	}
	return r
}

// Len is the number of packets in the FIFO, visible to the reader or not.
func (f *FIFO) Len() int { return f.q.Len() }

// push writes p, visible to the reader from the first edge at or after vis
// (and after any packet written before it).
func (f *FIFO) push(p *Packet, now, vis sim.Tick) {
	vis = max(vis, now+1)
	if n := f.q.Len(); n > 0 {
		vis = max(vis, f.q.At(n-1).vis)
	}
	f.q.Push(fifoEntry{p: p, vis: vis})
	if f.onHead != nil && f.q.Len() == 1 {
		f.onHead(vis)
	}
	f.used += int(p.chunks)
	f.packets.Inc()
	if f.reader != nil {
		f.reader.WakeAt(vis)
	}
}

// head is the packet at the head if the reader may see it at now.
func (f *FIFO) head(now sim.Tick) *Packet {
	if f.q.Len() == 0 || f.q.Front().vis > now {
		return nil
	}
	return f.q.Front().p
}

// pop takes the head (which must be visible).
func (f *FIFO) pop(now sim.Tick) *Packet {
	e := f.q.Pop()
	f.used -= int(e.p.chunks)
	if f.popAt != now {
		f.popAt, f.freed = now, 0
	}
	f.freed += int(e.p.chunks)
	if f.onPop != nil {
		f.onPop(now)
	}
	if f.writer != nil {
		f.writer.WakeAt(now + 1)
	}
	return e.p
}
