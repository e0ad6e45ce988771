// Package shm is a message transport between the processes of one node
// through shared memory: receive queues in a segment of the node's memory
// that every process of the node maps, as the shared-memory queue blocks of
// Multi-Protocol Active Messages (seed 000, Figure 3) and MPICH's nemesis
// cells. A queue has a packet ring of one cache line per packet and a pool
// of bulk blocks for larger payloads. Senders claim ring slots and blocks
// with compare-and-swap and write into the receiver's queue directly (there
// are no send queues); the receiver polls the head of its own ring.
//
// Nothing here is a constant cost: every step is a load, store, CAS or copy
// of the process's core (cpu.Proc), so a coherence model of the cores
// prices it (a line another core wrote costs a cache-to-cache transfer).
package shm

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
)

// LineBytes is the size of a packet: one cache line.
const LineBytes = 64

// Words is the number of 64-bit words of a packet its user defines (an MPI
// envelope, a handler index and arguments); the other two are the slot's
// sequence number and the bulk block's index and length.
const Words = 6

// Spec is the shape of one queue.
type Spec struct {
	Slots      int // packets in the ring (default 256)
	Blocks     int // bulk blocks (default 16)
	BlockBytes int // bytes per bulk block, a multiple of 64 (default 8192)
}

// DefaultSpec is AM-II's inferred queue: 256 one-line packets and 16 blocks
// of 8 kB.
func DefaultSpec() Spec { return Spec{Slots: 256, Blocks: 16, BlockBytes: 8192} }

// Validate checks the spec.
func (s Spec) Validate() error {
	switch {
	case s.Slots < 2:
		return fmt.Errorf("shm: %d slots per queue, want at least 2", s.Slots)
	case s.Blocks < 1 || s.Blocks > 0xfffe:
		return fmt.Errorf("shm: %d bulk blocks per queue, want 1..65534", s.Blocks)
	case s.BlockBytes < LineBytes || s.BlockBytes%LineBytes != 0:
		return fmt.Errorf("shm: bulk blocks of %d bytes, want a positive multiple of %d", s.BlockBytes, LineBytes)
	}
	return nil
}

// Queue layout, from the queue's base: the tail line (senders only), the
// packet ring, one line per bulk block's flag, the blocks.
func (s Spec) ringOff() uint64  { return LineBytes }
func (s Spec) flagsOff() uint64 { return s.ringOff() + uint64(s.Slots)*LineBytes }
func (s Spec) blocksOff() uint64 {
	return s.flagsOff() + uint64(s.Blocks)*LineBytes
}

// QueueBytes is the memory one queue takes.
func (s Spec) QueueBytes() uint64 { return s.blocksOff() + uint64(s.Blocks)*uint64(s.BlockBytes) }

// Segment is a node's shared segment: the receive queues of its processes.
type Segment struct {
	node   *machine.Node
	spec   Spec
	base   uint64
	queues int
}

// New allocates a segment of queues receive queues in the node's memory
// and initialises it as the process that creates it would (a boot-time
// set-up, not costed): every slot free for the first lap, every block free.
func New(n *machine.Node, queues int, s Spec) (*Segment, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if queues < 1 {
		return nil, fmt.Errorf("shm: %d queues, want at least 1", queues)
	}
	g := &Segment{node: n, spec: s, queues: queues}
	g.base = n.Alloc(uint64(queues) * s.QueueBytes())
	for q := 0; q < queues; q++ {
		for i := 0; i < s.Slots; i++ {
			n.Mem.Store64(g.slot(q, uint64(i)), uint64(i)) // free for ticket i
		}
	}
	return g, nil
}

// Spec is the shape of the segment's queues.
func (g *Segment) Spec() Spec { return g.spec }

// Queues is the number of queues.
func (g *Segment) Queues() int { return g.queues }

// Base is the segment's first address in node memory; Bytes its size.
func (g *Segment) Base() uint64 { return g.base }

// Bytes is the segment's size.
func (g *Segment) Bytes() uint64 { return uint64(g.queues) * g.spec.QueueBytes() }

// Node is the node whose memory holds the segment.
func (g *Segment) Node() *machine.Node { return g.node }

func (g *Segment) queue(q int) uint64 { return g.base + uint64(q)*g.spec.QueueBytes() }
func (g *Segment) tail(q int) uint64  { return g.queue(q) }
func (g *Segment) slot(q int, ticket uint64) uint64 {
	return g.queue(q) + g.spec.ringOff() + (ticket%uint64(g.spec.Slots))*LineBytes
}
func (g *Segment) flag(q, b int) uint64 {
	return g.queue(q) + g.spec.flagsOff() + uint64(b)*LineBytes
}

// Block is the address of bulk block b of queue q.
func (g *Segment) Block(q, b int) uint64 {
	return g.queue(q) + g.spec.blocksOff() + uint64(b)*uint64(g.spec.BlockBytes)
}

// Port is one process's access to the segment: it sends into any queue
// and receives from its own.
type Port struct {
	g    *Segment
	q    int
	p    *cpu.Proc
	head uint64 // next ticket to receive (private to the receiver)
	hint []int  // per destination queue: the block to try first
	line [LineBytes]byte
}

// Port attaches process p to the segment with queue q as its own.
func (g *Segment) Port(q int, p *cpu.Proc) *Port {
	if q < 0 || q >= g.queues {
		panic(fmt.Sprintf("shm: queue %d of %d", q, g.queues))
	}
	return &Port{g: g, q: q, p: p, hint: make([]int, g.queues)}
}

// Queue is the port's own queue.
func (pt *Port) Queue() int { return pt.q }

// Segment is the segment the port is attached to.
func (pt *Port) Segment() *Segment { return pt.g }

// Packet is a received packet: the user's words and, with Block ≥ 0, Len
// bytes of bulk data at Data in the receiver's queue until Release.
type Packet struct {
	W     [Words]uint64
	Block int
	Data  uint64
	Len   int
}

// Send puts a packet with words w into queue dst. With n > 0 it first
// claims one of dst's bulk blocks (n ≤ BlockBytes) and copies n bytes from
// local memory at src into it. It returns false, having sent nothing, when
// dst's ring or its blocks are full: the caller polls its own queue and
// tries again (a sender that only waited could deadlock with a receiver
// that sends to it).
//
// The steps, each a costed operation of the process: claim a block (load
// its flag, CAS it free → used), copy the data, read the tail, check that
// the tail's slot is free for this lap (the overflow check), CAS the tail
// forward (the slot is claimed), write the packet line with its sequence
// number last (one line write).
func (pt *Port) Send(dst int, w *[Words]uint64, src uint64, n int) bool {
	g, p := pt.g, pt.p
	s := g.spec
	if n < 0 || n > s.BlockBytes {
		panic(fmt.Sprintf("shm: a payload of %d bytes in blocks of %d", n, s.BlockBytes))
	}
	block := -1
	if n > 0 {
		block = pt.claimBlock(dst)
		if block < 0 {
			return false
		}
		Copy(p, g.Block(dst, block), src, n)
	}
	t := p.Load64(g.tail(dst))
	for {
		seq := p.Load64(g.slot(dst, t))
		switch d := int64(seq - t); {
		case d == 0:
			if old := p.CAS(g.tail(dst), t, t+1); old != t {
				t = old // another sender took the ticket: try the next
				continue
			}
		case d < 0: // the slot still holds the packet of the last lap: full
			if block >= 0 {
				p.Store64(g.flag(dst, block), 0)
			}
			return false
		default: // the tail moved on
			t = p.Load64(g.tail(dst))
			continue
		}
		break
	}
	var line [LineBytes]byte
	binary.LittleEndian.PutUint64(line[0:], t+1) // ready
	meta := uint64(0)
	if block >= 0 {
		meta = uint64(block+1) | uint64(n)<<32
	}
	binary.LittleEndian.PutUint64(line[8:], meta)
	for i, v := range w {
		binary.LittleEndian.PutUint64(line[16+8*i:], v)
	}
	p.Write(g.slot(dst, t), line[:])
	return true
}

// claimBlock claims a free bulk block of queue dst, or returns -1.
func (pt *Port) claimBlock(dst int) int {
	g, p := pt.g, pt.p
	nb := g.spec.Blocks
	for i := 0; i < nb; i++ {
		b := (pt.hint[dst] + i) % nb
		if p.Load64(g.flag(dst, b)) != 0 {
			continue
		}
		if p.CAS(g.flag(dst, b), 0, 1) == 0 {
			pt.hint[dst] = (b + 1) % nb
			return b
		}
	}
	return -1
}

// Poll reads the head packet line of the port's queue once. When a packet
// is there it takes it: its slot is freed for the next lap (its bulk block
// stays the receiver's until Release).
func (pt *Port) Poll() (Packet, bool) {
	g, p := pt.g, pt.p
	addr := g.slot(pt.q, pt.head)
	p.Read(addr, pt.line[:])
	if binary.LittleEndian.Uint64(pt.line[0:]) != pt.head+1 {
		return Packet{}, false
	}
	var pk Packet
	meta := binary.LittleEndian.Uint64(pt.line[8:])
	for i := range pk.W {
		pk.W[i] = binary.LittleEndian.Uint64(pt.line[16+8*i:])
	}
	pk.Block = int(meta&0xffff) - 1
	if pk.Block >= 0 {
		pk.Len = int(meta >> 32)
		pk.Data = g.Block(pt.q, pk.Block)
	}
	p.Store64(addr, pt.head+uint64(g.spec.Slots)) // free for the next lap
	pt.head++
	return pk, true
}

// Release frees the packet's bulk block (after its data was copied out).
func (pt *Port) Release(pk *Packet) {
	if pk.Block >= 0 {
		pt.p.Store64(pt.g.flag(pt.q, pk.Block), 0)
		pk.Block = -1
	}
}

// copyChunk bounds the Go buffer of one copy step.
const copyChunk = 64 << 10

// copyMem copies n bytes from src to dst in node memory with the process's
// reads and writes (one access per line each).
func copyMem(p *cpu.Proc, dst, src uint64, n int) {
	buf := make([]byte, min(n, copyChunk))
	for off := 0; off < n; off += len(buf) {
		b := buf[:min(len(buf), n-off)]
		p.Read(src+uint64(off), b)
		p.Write(dst+uint64(off), b)
	}
}

// Copy copies n bytes from src to dst in the node's memory: a memcpy of
// the shared segment's users. On an SMP with a copy bandwidth
// (cpu.SMPSpec.MemcpyMBps) it is the core's streaming copy (cpu.Proc.Memcpy):
// the lines of src come in at that bandwidth, their fills overlapped, and
// dst is written whole lines at a time, as a memcpy of block loads and
// stores does. Otherwise it costs a load and a store per line.
func Copy(p *cpu.Proc, dst, src uint64, n int) {
	if s := p.Core().SMP(); s != nil && s.Spec().MemcpyMBps > 0 && n > 0 {
		p.Memcpy(dst, src, uint64(n))
		return
	}
	copyMem(p, dst, src, n)
}
