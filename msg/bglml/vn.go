package bglml

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// Virtual node mode (L114–L116, L144). The message layer of a node in
// virtual node mode has two tasks, one a core, each its own layer
// (NewTask) with its own address: task = node × 2 + core, the t of the
// (x, y, z, t) addressing of L116. A task reaches the tasks of other
// nodes through its own torus FIFO set (L96): its packets carry the
// destination task's set, in which they are received. It reaches the
// other task of its node through the virtual torus device in the
// scratchpad (L115): the virtual FIFO to that task is one more injection
// FIFO of its layer (number InjFIFOs), and the one from it one more
// reception FIFO (number 7), both under the lockbox (bgl.VirtualFIFO).
// One-packet and eager messages to the other task go through them, packet
// by packet; a rendezvous, and a get, use the virtual node mode protocol
// instead (L144): a packet with the send buffer's address, the receiver's
// copy straight from the other task's memory, and a response packet that
// frees the buffer, the data never going through uncached memory.

// Packet types of the virtual node mode protocol (the software header's
// first byte; apart from the others).
const (
	tVNAddr      = 16 + iota // a message: its header, info and the send buffer's address
	tVNFree                  // the receiver copied it: the buffer is free
	tVNGet                   // a get: write back the lines of this buffer
	tVNFlushed               // they are in memory: copy them
	tVNBcast                 // a torus broadcast's bytes in task 0's buffer: copy them
	tVNBcastDone             // the other task has copied all the broadcast's bytes
)

// port is what the layer asks of a packet layer (bgl.PacketLayer, or a
// task's vnPort).
type port interface {
	Room(p *cpu.Proc, fifo int) (int, error)
	Store(p *cpu.Proc, fifo int, pkt *torus.Packet, from bgl.Source) error
	Pending(p *cpu.Proc) int
	Seen() int
	Peek(p *cpu.Proc, fifo int) (*torus.Packet, error)
	Read(p *cpu.Proc, fifo int, aligned bool) (*torus.Packet, error)
	CopyCost(n int) int
	NextVisible() sim.Tick
	NotifyReceive(u *sim.Unit)
}

// NewTask makes the message layer of task task (node task/2, on its core
// task%2) of machine m, in virtual node mode; up is its upcall.
func NewTask(m *bgl.Machine, task int, params Params, costs Costs, up Handler) (*Layer, error) {
	if m.Spec.Mode != bgl.VirtualNodeMode {
		return nil, fmt.Errorf("bglml: a layer a task needs virtual node mode, not %v", m.Spec.Mode)
	}
	if task < 0 || task >= 2*len(m.Nodes) {
		return nil, fmt.Errorf("bglml: task %d of %d (two a node)", task, 2*len(m.Nodes))
	}
	return newLayer(m, task/2, task%2, params, costs, up)
}

// Task is the layer's address: its node, or in virtual node mode its task.
func (l *Layer) Task() int { return l.self }

// Core is the core the layer's process runs on.
func (l *Layer) Core() *cpu.Core { return l.nd.Cores[l.self%l.tasks] }

// peer reports whether dst is the other task of the layer's node.
func (l *Layer) peer(dst int) bool { return l.tasks > 1 && dst/l.tasks == l.self/l.tasks }

// name is the layer in errors: its node, and its task in virtual node
// mode.
func (l *Layer) name() string {
	if l.tasks > 1 {
		return fmt.Sprintf("task %d (node %d core %d)", l.self, l.nd.Index, l.self%l.tasks)
	}
	return fmt.Sprintf("node %d", l.nd.Index)
}

// unit is what the layer's addresses are.
func (l *Layer) unit() string {
	if l.tasks > 1 {
		return "task"
	}
	return "node"
}

// vnPort is a task's packet layer in virtual node mode: its torus FIFO
// set, plus the virtual FIFOs to the other task (injection FIFO v) and
// from it (reception FIFO torus.NumRecFIFOs).
type vnPort struct {
	pl      *bgl.PacketLayer
	in, out *bgl.VirtualFIFO
	v       int
	look    int  // a look: the torus FIFOs' status and the virtual FIFO's tail word (a scratchpad access)
	virtual bool // the last packet found was the virtual FIFO's (they alternate)
}

func newVNPort(nd *bgl.Node, t, fifos int, spec *bgl.Spec) *vnPort {
	return &vnPort{pl: nd.PLs[t], in: nd.VN.To[t], out: nd.VN.To[1-t], v: fifos, look: spec.StatusCycles + spec.ScratchpadCycles}
}

func (v *vnPort) Room(p *cpu.Proc, fifo int) (int, error) {
	if fifo == v.v {
		return v.out.Room(p), nil
	}
	return v.pl.Room(p, fifo)
}

func (v *vnPort) Store(p *cpu.Proc, fifo int, pkt *torus.Packet, from bgl.Source) error {
	if fifo == v.v {
		return v.out.Store(p, pkt)
	}
	return v.pl.Store(p, fifo, pkt, from)
}

// Pending is one look at the torus FIFOs' status and the virtual FIFO's
// tail word together (the torus look and a scratchpad access, one
// operation, so that a dozed pass sees what a run one does).
func (v *vnPort) Pending(p *cpu.Proc) int {
	p.Compute(v.look)
	return v.Seen()
}

// Seen is what the look sees now: a torus FIFO or the virtual one; when
// both hold packets, the one not served last.
func (v *vnPort) Seen() int {
	f := v.pl.Seen()
	vis := v.in.Seen(v.pl.Torus().Eng.Now())
	switch {
	case vis && (f < 0 || !v.virtual):
		v.virtual = true
		return torus.NumRecFIFOs
	case f >= 0:
		v.virtual = false
	}
	return f
}

func (v *vnPort) Peek(p *cpu.Proc, fifo int) (*torus.Packet, error) {
	if fifo == torus.NumRecFIFOs {
		return v.in.Peek(p), nil
	}
	return v.pl.Peek(p, fifo)
}

func (v *vnPort) Read(p *cpu.Proc, fifo int, aligned bool) (*torus.Packet, error) {
	if fifo == torus.NumRecFIFOs {
		return v.in.Read(p, aligned)
	}
	return v.pl.Read(p, fifo, aligned)
}

func (v *vnPort) CopyCost(n int) int { return v.pl.CopyCost(n) }

func (v *vnPort) NextVisible() sim.Tick { return min(v.pl.NextVisible(), v.in.NextVisible()) }

func (v *vnPort) NotifyReceive(u *sim.Unit) {
	v.pl.NotifyReceive(u)
	v.in.NotifyReceive(u)
}

// sendCopy sends m to the other task by L144's protocol: the lines of the
// send buffer the sender's L1 may hold dirty are written back (the two L1
// caches are not coherent, L34), then a packet with the buffer's address
// goes through the virtual FIFO, in order with the messages before it;
// m.Done is called when the receiver's response comes.
func (l *Layer) sendCopy(p *cpu.Proc, m *Message) error {
	p.Compute(l.costs.Post + bgl.Lines(m.Addr, m.Len)*l.bs.FlushLineCycles)
	l.Stats.Messages[Rendezvous]++
	id := l.id()
	l.grants[id] = m
	hdr := *m
	hdr.Len = 0
	dst := l.coord(m.Dst)
	seq := l.nextSeq(m.Dst)
	l.enqueue(&out{dst: m.Dst, message: true, n: 1, from: bgl.FromCache, ready: true,
		build: func(int) *torus.Packet {
			pl := l.first(seq, &hdr, 0)
			binary.LittleEndian.PutUint32(pl, uint32(m.Len))
			pl = binary.LittleEndian.AppendUint64(pl, m.Addr)
			return &torus.Packet{Dst: dst, Soft: soft(tVNAddr, l.self, id, 0), Payload: pl}
		}})
	return nil
}

// getCopy is a get from the other task: a request through the virtual
// FIFO that it write back the buffer's lines, and on its answer the copy.
func (l *Layer) getCopy(p *cpu.Proc, src int, remote, local uint64, n int, done func()) error {
	p.Compute(l.costs.Post)
	r := &rx{src: src, addr: local, size: n, done: done}
	rid := l.rxID(r)
	l.control(p, src, &torus.Packet{Dst: l.coord(src), Soft: soft(tVNGet, l.self, rid, 0), Payload: addrLen(remote, n)})
	return nil
}

func addrLen(addr uint64, n int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, addr)
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

// copyFrom copies n bytes at src, in the other task's memory, to dst: the
// lines of src first invalidated in this core's L1 (it may hold stale
// copies of them), then the copy at the memory's rate (L70).
func (l *Layer) copyFrom(p *cpu.Proc, dst, src uint64, n int) {
	p.Compute(bgl.Lines(src, n)*l.bs.InvalidateLineCycles + l.pl.CopyCost(n))
	if n > 0 {
		b := make([]byte, n)
		l.nd.Mem.Read(src, b)
		l.nd.Mem.Write(dst, b)
	}
	l.Stats.Copied++
}

// matchCopy matches a message of the other task's (its address packet
// pk): the upcall, the copy, the response that frees the sender's buffer.
func (l *Layer) matchCopy(p *cpu.Proc, src int, id uint16, pk *torus.Packet) {
	size := int(binary.LittleEndian.Uint32(pk.Payload))
	ni := int(pk.Payload[6])
	info := pk.Payload[firstHdr : firstHdr+ni]
	from := binary.LittleEndian.Uint64(pk.Payload[firstHdr+ni:])
	p.Compute(l.costs.Upcall)
	addr, done := l.up(src, info, size)
	l.copyFrom(p, addr, from, size)
	l.control(p, src, &torus.Packet{Dst: l.coord(src), Soft: soft(tVNFree, l.self, id, 0)})
	l.complete(p, &rx{src: src, addr: addr, size: size, got: size, done: done})
}

// onVirtual handles a packet of the virtual node mode protocol from the
// other task, at the head of FIFO f.
func (l *Layer) onVirtual(p *cpu.Proc, f int, t byte, src int, id uint16) {
	if !l.peer(src) {
		panic(fmt.Sprintf("bglml: %s: a virtual node mode packet from task %d, not the node's other task", l.name(), src))
	}
	pk := l.read(p, f)
	switch t {
	case tVNAddr:
		l.firstIn(p, t, src, id, pk)
	case tVNFree:
		p.Compute(l.costs.Lookup)
		m := l.grants[id]
		if m == nil {
			panic(fmt.Sprintf("bglml: %s: buffer freed for unknown message %d from task %d", l.name(), id, src))
		}
		delete(l.grants, id)
		if m.Done != nil {
			p.Compute(l.costs.Callback)
			m.Done()
		}
	case tVNGet:
		addr := binary.LittleEndian.Uint64(pk.Payload)
		n := int(binary.LittleEndian.Uint32(pk.Payload[8:]))
		p.Compute(bgl.Lines(addr, n) * l.bs.FlushLineCycles)
		l.control(p, src, &torus.Packet{Dst: l.coord(src), Soft: soft(tVNFlushed, l.self, id, 0), Payload: addrLen(addr, n)})
	case tVNBcast:
		if l.bc == nil {
			// Before this task joined the broadcast: kept for then.
			l.vnEarly = append(l.vnEarly, pk)
			return
		}
		l.onBcastCopy(p, pk)
	case tVNBcastDone:
		p.Compute(l.costs.Lookup)
		if l.bc == nil || l.bc.peerDone {
			panic(fmt.Sprintf("bglml: %s: a broadcast copied by task %d with none under way", l.name(), src))
		}
		l.bc.peerDone = true
		if l.bc.torusDone {
			l.endBcast(p)
		}
	case tVNFlushed:
		p.Compute(l.costs.Lookup)
		r := l.rdv[id]
		if r == nil {
			panic(fmt.Sprintf("bglml: %s: get %d answered by task %d, not asked", l.name(), id, src))
		}
		delete(l.rdv, id)
		l.copyFrom(p, r.addr, binary.LittleEndian.Uint64(pk.Payload), r.size)
		r.got = r.size
		l.complete(p, r)
	}
}
