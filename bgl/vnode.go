package bgl

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// Virtual node mode (L114–L116): a task on each core, each with its own
// torus FIFO set (L96), and between the two tasks of a node a virtual
// torus device in the scratchpad: two virtual FIFOs, each a send FIFO to
// one core and a receive FIFO to the other, whose pointers are guarded by
// the lockbox.

// Lockbox is the node's lockbox (L34, L115): hardware test-and-set locks
// the two cores share, the PPC440 having no atomic memory operations. A
// lock is taken by one uncached access that reads whether it was free and
// takes it if so (atomically: the hardware, not the cores, decides); the
// paper gives no cost, so an access costs what a scratchpad access does
// (ScratchpadCycles), both being uncached accesses to on-chip SRAM.
type Lockbox struct {
	nd    *Node
	spec  *Spec
	owner []int8 // per lock: the core holding it, −1 free
	words [Words]lockWord

	Stats LockboxStats
}

// LockboxStats counts the lockbox's use.
type LockboxStats struct {
	Acquires  uint64 // locks taken
	Contended uint64 // attempts that found the lock held by the other core
}

// Locks is the number of locks the model's lockbox has.
const Locks = 8

// Words is the number of words the model's lockbox has for the cores to
// signal each other (a flag one core sets and the other polls, one
// uncached access each, as a lock is taken; the message layer's barrier
// arrival and release in virtual node mode).
const Words = 2

// lockWord is a lockbox word: its value, and the one before it until the
// other core can see the new one (the edge after the write).
type lockWord struct {
	v, prev uint32
	at      sim.Tick
}

// SetWord writes v into word w (one access); the other core sees it from
// the next edge.
func (lb *Lockbox) SetWord(p *cpu.Proc, w int, v uint32) error {
	if err := lb.checkWord(p, w); err != nil {
		return err
	}
	p.Compute(lb.spec.ScratchpadCycles)
	x := &lb.words[w]
	if x.at <= p.Now() {
		x.prev = x.v
	}
	x.v, x.at = v, p.Now()+1
	return nil
}

// Word reads word w (one access).
func (lb *Lockbox) Word(p *cpu.Proc, w int) (uint32, error) {
	if err := lb.checkWord(p, w); err != nil {
		return 0, err
	}
	p.Compute(lb.spec.ScratchpadCycles)
	x := lb.words[w]
	if x.at > p.Now() {
		return x.prev, nil
	}
	return x.v, nil
}

func (lb *Lockbox) checkWord(p *cpu.Proc, w int) error {
	if w < 0 || w >= Words {
		return fmt.Errorf("bgl: node %d: lockbox word %d of %d", lb.nd.Index, w, Words)
	}
	if lb.core(p) < 0 {
		return fmt.Errorf("bgl: node %d: lockbox used by %s, not one of the node's cores", lb.nd.Index, p.Name())
	}
	return nil
}

func newLockbox(nd *Node, spec *Spec) *Lockbox {
	lb := &Lockbox{nd: nd, spec: spec, owner: make([]int8, Locks)}
	for i := range lb.owner {
		lb.owner[i] = -1
	}
	return lb
}

// core is the number of the node's core process p runs on (−1: another
// node's).
func (lb *Lockbox) core(p *cpu.Proc) int {
	for k, c := range lb.nd.Cores {
		if p.Core() == c {
			return k
		}
	}
	return -1
}

func (lb *Lockbox) check(p *cpu.Proc, lock int) (int, error) {
	if lock < 0 || lock >= len(lb.owner) {
		return 0, fmt.Errorf("bgl: node %d: lock %d of %d", lb.nd.Index, lock, len(lb.owner))
	}
	k := lb.core(p)
	if k < 0 {
		return 0, fmt.Errorf("bgl: node %d: lockbox used by %s, not one of the node's cores", lb.nd.Index, p.Name())
	}
	return k, nil
}

// Acquire takes lock for the core p runs on: one access, and while the
// other core holds it, polling accesses until it is free and an access
// that takes it.
func (lb *Lockbox) Acquire(p *cpu.Proc, lock int) error {
	k, err := lb.check(p, lock)
	if err != nil {
		return err
	}
	if lb.owner[lock] == int8(k) {
		return fmt.Errorf("bgl: node %d: core %d takes lock %d it holds", lb.nd.Index, k, lock)
	}
	for {
		p.Compute(lb.spec.ScratchpadCycles)
		// The test-and-set: at the end of the access, atomically.
		if lb.owner[lock] < 0 {
			lb.owner[lock] = int8(k)
			lb.Stats.Acquires++
			return nil
		}
		lb.Stats.Contended++
		p.ScratchpadPoll(func() bool { return lb.owner[lock] < 0 })
	}
}

// Release frees lock, held by the core p runs on (one access).
func (lb *Lockbox) Release(p *cpu.Proc, lock int) error {
	k, err := lb.check(p, lock)
	if err != nil {
		return err
	}
	if lb.owner[lock] != int8(k) {
		return fmt.Errorf("bgl: node %d: core %d releases lock %d it does not hold", lb.nd.Index, k, lock)
	}
	p.Compute(lb.spec.ScratchpadCycles)
	lb.owner[lock] = -1
	return nil
}

// Holder is the core holding lock (−1: free, or no such lock).
func (lb *Lockbox) Holder(lock int) int {
	if lock < 0 || lock >= len(lb.owner) {
		return -1
	}
	return int(lb.owner[lock])
}

// VirtualFIFO is a FIFO of torus packets in the scratchpad (L115): the
// send FIFO of one core and the receive FIFO of the other. Its data are
// written and read by 16-byte uncached stores and loads (ScratchpadCycles
// each), and its head and tail words updated, under a lock of the
// lockbox: with the lock and the pointer word a full packet costs 190
// cycles each way, against the torus FIFOs' 50–100 and 204, which is why
// L144's protocol copies large messages from the peer's memory instead.
// One writer and one reader.
type VirtualFIFO struct {
	lb     *Lockbox
	lock   int
	spec   *Spec
	chunks int // capacity
	used   int
	q      []vpkt
	reader *sim.Unit

	Stats VirtualFIFOStats
}

// VirtualFIFOStats counts a virtual FIFO's traffic.
type VirtualFIFOStats struct {
	Packets, Bytes uint64
}

type vpkt struct {
	pkt *torus.Packet
	vis sim.Tick
}

// VirtualNode is a node's virtual torus device in virtual node mode: To[t]
// is the virtual FIFO task t receives from (the other task sends into
// it), and the lockbox mediating both.
type VirtualNode struct {
	Lockbox *Lockbox
	To      [2]*VirtualFIFO
}

func newVirtualNode(nd *Node, spec *Spec) *VirtualNode {
	lb := newLockbox(nd, spec)
	v := &VirtualNode{Lockbox: lb}
	for t := range v.To {
		v.To[t] = &VirtualFIFO{lb: lb, lock: t, spec: spec, chunks: spec.VirtualFIFOChunks}
	}
	return v
}

// Chunks is the FIFO's capacity in 32-byte chunks.
func (f *VirtualFIFO) Chunks() int { return f.chunks }

// Room is the writer's look at the FIFO: its head and tail words, one
// uncached load (no lock: only the reader can change the head, and that
// frees room, so a stale look is a safe one). It returns the free chunks.
func (f *VirtualFIFO) Room(p *cpu.Proc) int {
	p.Compute(f.spec.ScratchpadCycles)
	return f.chunks - f.used
}

// Check refuses a packet the virtual FIFO cannot take: over 256 bytes.
func (f *VirtualFIFO) Check(pkt *torus.Packet) error {
	if len(pkt.Payload) > torus.MaxPayload {
		return fmt.Errorf("virtual FIFO: payload of %d bytes (at most %d)", len(pkt.Payload), torus.MaxPayload)
	}
	return nil
}

// Store writes pkt after a look found room: under the lock, the packet's
// 16-byte uncached stores and the tail word; the reader sees it from the
// next edge after the tail is written.
func (f *VirtualFIFO) Store(p *cpu.Proc, pkt *torus.Packet) error {
	if err := f.Check(pkt); err != nil {
		return err
	}
	n := pkt.Chunks()
	if f.chunks-f.used < n {
		return fmt.Errorf("virtual FIFO: %d chunks free for a packet of %d (two writers?)", f.chunks-f.used, n)
	}
	if err := f.lb.Acquire(p, f.lock); err != nil {
		return err
	}
	f.used += n
	p.Compute((quads(n) + 1) * f.spec.ScratchpadCycles)
	vis := p.Now() + 1
	f.q = append(f.q, vpkt{pkt: pkt, vis: vis})
	f.Stats.Packets++
	f.Stats.Bytes += uint64(len(pkt.Payload))
	if f.reader != nil {
		f.reader.WakeAt(vis)
	}
	return f.lb.Release(p, f.lock)
}

// Seen reports whether a packet is visible at the head now (for a caller
// that has paid the look).
func (f *VirtualFIFO) Seen(now sim.Tick) bool { return len(f.q) > 0 && f.q[0].vis <= now }

// NextVisible is when the head packet is visible (sim.Never: empty).
func (f *VirtualFIFO) NextVisible() sim.Tick {
	if len(f.q) == 0 {
		return sim.Never
	}
	return f.q[0].vis
}

// NotifyReceive wakes u when a packet becomes visible.
func (f *VirtualFIFO) NotifyReceive(u *sim.Unit) { f.reader = u }

// Peek loads the head packet's header (one uncached 16-byte load), the
// packet left in place; nil if none is visible.
func (f *VirtualFIFO) Peek(p *cpu.Proc) *torus.Packet {
	p.Compute(f.spec.ScratchpadCycles)
	if !f.Seen(p.Now()) {
		return nil
	}
	return f.q[0].pkt
}

// Read unloads the head packet under the lock: its 16-byte uncached loads
// (stored into memory: a buffer not 16-byte aligned adds the realigning
// copy) and the head word. nil if none is visible.
func (f *VirtualFIFO) Read(p *cpu.Proc, aligned bool) (*torus.Packet, error) {
	if !f.Seen(p.Now()) {
		p.Compute(f.spec.ScratchpadCycles)
		return nil, nil
	}
	if err := f.lb.Acquire(p, f.lock); err != nil {
		return nil, err
	}
	pkt := f.q[0].pkt
	c := (quads(pkt.Chunks()) + 1) * f.spec.ScratchpadCycles
	if !aligned {
		c += f.spec.CopyCost(len(pkt.Payload))
	}
	p.Compute(c)
	f.q = f.q[1:]
	f.used -= pkt.Chunks()
	return pkt, f.lb.Release(p, f.lock)
}
