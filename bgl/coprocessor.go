package bgl

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// Coprocessor is the second core of a node in coprocessor mode (L110–L111):
// it runs the work units the main core supplies through the scratchpad.
// A permanent unit runs whenever the coprocessor is idle and has work (the
// rendezvous helper of the message layer: a packet in the second FIFO
// set); a transient one is posted by Costart, run once, and waited for by
// Cojoin.
//
// The two L1 caches are not coherent (L34, L74), so the cores keep memory
// coherent in software, per 32-byte line: the main core flushes the lines
// a unit reads before posting it (its L1 is write-back; the coprocessor
// reads memory), the coprocessor flushes the lines the unit wrote when it
// is done, and the main core invalidates those lines in its own L1 when it
// joins (L111: "the two processors cooperatively enforce coherency").
//
// The coprocessor's loop is a pass after pass of one look at the
// scratchpad's work pool and at what its permanent units watch (their
// LookCycles), and a unit run if one has work. A pass that finds nothing
// is dozed through (cpu.Proc.Doze) until something it looks at changes:
// a unit posted, or what a permanent unit's Next reports.
type Coprocessor struct {
	nd   *Node
	spec *Spec
	perm []*Permanent
	pool []*Work // transient units posted and not yet taken, in order
	look int     // cycles of one look: the pool and the permanent units
	proc *cpu.Proc

	Stats CoStats
}

// CoStats counts what the coprocessor did.
type CoStats struct {
	Units        uint64 // transient units run
	Runs         uint64 // permanent units' runs
	FlushedLines uint64 // lines the coprocessor wrote back
}

// Permanent is a permanent work unit: Run is called on the coprocessor
// whenever a look of its loop finds Ready true. Ready and Next may only
// look at state (they cost nothing of their own: the look costs
// LookCycles); whatever makes Ready true must wake the coprocessor's core
// at the time Next reports.
type Permanent struct {
	Name string
	// LookCycles is what looking at the unit's work costs a pass (a FIFO
	// status register: the packet layer's status look).
	LookCycles int
	Ready      func() bool
	// Next is the earliest time Ready can become true (sim.Never: not
	// before something wakes the core).
	Next func() sim.Tick
	Run  func(p *cpu.Proc)
}

// Work is a transient work unit (costart/cojoin).
type Work struct {
	Name string
	// In is the lines of memory the unit reads that the main core may hold
	// dirty: it flushes them before posting. Out is the lines the unit
	// writes: the coprocessor flushes them when it is done and the main
	// core invalidates them when it joins.
	In, Out int
	Run     func(p *cpu.Proc)

	postedAt, doneAt sim.Tick // visible to the other core from
	done             bool
}

func newCoprocessor(nd *Node, spec *Spec) *Coprocessor {
	c := &Coprocessor{nd: nd, spec: spec, look: spec.ScratchpadCycles}
	c.proc = nd.Cores[1].SpawnDaemon("coprocessor", c.loop)
	return c
}

// Core is the coprocessor's core.
func (c *Coprocessor) Core() *cpu.Core { return c.nd.Cores[1] }

// AddPermanent adds a permanent unit to the pool. Units are added before
// the run (a pass's look includes every unit's).
func (c *Coprocessor) AddPermanent(u *Permanent) error {
	if u.Ready == nil || u.Next == nil || u.Run == nil || u.LookCycles < 0 {
		return fmt.Errorf("bgl: node %d: permanent work unit %q without Ready, Next or Run", c.nd.Index, u.Name)
	}
	c.perm = append(c.perm, u)
	c.look += u.LookCycles
	return nil
}

// Costart posts transient unit w from the main core's process p: its In
// lines flushed, a descriptor written into the scratchpad. The
// coprocessor sees it from the next edge.
func (c *Coprocessor) Costart(p *cpu.Proc, w *Work) error {
	if w.Run == nil || w.In < 0 || w.Out < 0 {
		return fmt.Errorf("bgl: node %d: work unit %q without Run or with negative lines", c.nd.Index, w.Name)
	}
	if w.postedAt != 0 {
		return fmt.Errorf("bgl: node %d: work unit %q posted twice", c.nd.Index, w.Name)
	}
	p.Compute(w.In*c.spec.FlushLineCycles + c.spec.ScratchpadCycles)
	w.postedAt = p.Now() + 1
	c.pool = append(c.pool, w)
	c.Core().Unit().WakeAt(w.postedAt)
	return nil
}

// Cojoin waits in the main core's process p for unit w: it polls the
// unit's word in the scratchpad until the coprocessor has marked it done,
// then invalidates the lines the unit wrote in its own L1.
func (c *Coprocessor) Cojoin(p *cpu.Proc, w *Work) error {
	if w.postedAt == 0 {
		return fmt.Errorf("bgl: node %d: cojoin of work unit %q that was not posted", c.nd.Index, w.Name)
	}
	p.Compute(c.spec.ScratchpadCycles)
	p.ScratchpadPoll(func() bool { return w.done && w.doneAt <= p.Now() })
	p.Compute(w.Out * c.spec.InvalidateLineCycles)
	return nil
}

// loop is the coprocessor: look, run what has work, doze through passes
// that find none.
func (c *Coprocessor) loop(p *cpu.Proc) {
	for {
		t0, ops := p.Now(), p.Ops()
		p.Compute(c.look)
		if c.step(p) {
			continue
		}
		p.Doze(p.Now()-t0, int(p.Ops()-ops), c.next)
		c.step(p)
	}
}

// step runs, after a look, the first transient unit posted by then, or
// else the first permanent unit that has work; it reports whether it ran
// one.
func (c *Coprocessor) step(p *cpu.Proc) bool {
	if len(c.pool) > 0 && c.pool[0].postedAt <= p.Now() {
		w := c.pool[0]
		c.pool = c.pool[1:]
		w.Run(p)
		c.Flush(p, w.Out)
		p.Compute(c.spec.ScratchpadCycles)
		w.done, w.doneAt = true, p.Now()+1
		c.Stats.Units++
		return true
	}
	for _, u := range c.perm {
		if u.Ready() {
			u.Run(p)
			c.Stats.Runs++
			return true
		}
	}
	return false
}

// Flush writes back n lines of the coprocessor's L1 (the data a unit
// wrote) so that the main core can read them from memory.
func (c *Coprocessor) Flush(p *cpu.Proc, lines int) {
	p.Compute(lines * c.spec.FlushLineCycles)
	c.Stats.FlushedLines += uint64(lines)
}

// next is when the coprocessor's look can next find work.
func (c *Coprocessor) next() sim.Tick {
	t := sim.Never
	if len(c.pool) > 0 {
		t = c.pool[0].postedAt
	}
	for _, u := range c.perm {
		t = min(t, u.Next())
	}
	return t
}
