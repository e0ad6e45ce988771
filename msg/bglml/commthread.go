package bglml

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// CommThread is the communication thread of L111: "one of the permanent
// work units is a communication thread that runs constantly". In
// coprocessor mode the layer's advance loop runs on the second core, as a
// permanent work unit of its pool (bgl.Coprocessor), while the main core
// computes. The main core and the thread meet in the scratchpad (L110),
// and the two L1 caches are not coherent (L34), so:
//
//   - the main core posts a send (Post): it writes back the lines of the
//     send buffer its L1 may hold dirty (the thread's core reads them
//     from memory) and writes a two-word descriptor into the scratchpad;
//     the thread sees it from the next edge and sends it (Layer.Send);
//   - the thread receives into the buffers the upcall gives ("messages
//     processed by the coprocessor are always aligned at cache-line
//     boundaries"); at a message's end it writes back the lines it wrote
//     and a completion word, and at a send's end (its buffer free) a
//     completion word;
//   - the main core, in Wait, polls the scratchpad; for each completion
//     it sees it invalidates the lines of the message in its own L1 and
//     calls the message's callback ("at the end of the reception, the two
//     processors cooperatively enforce coherency in software").
//
// The upcall (Handler) runs on the thread, as the layer's always do in
// the advance loop; the done callbacks it returns, and the messages'
// Done, run on the main core, in Wait. The main core must not run the
// layer itself (Advance, Until) once the thread is started.
type CommThread struct {
	l     *Layer
	co    *bgl.Coprocessor
	p     *cpu.Proc // the coprocessor's process, in Run
	posts []*ctPost // sends posted, in order, each visible from at
	comps []ctDone  // completions written, in order, each visible from at
	// main is the main core's, while its process dozes in SleepReap: a
	// completion wakes it when it becomes visible.
	main *sim.Unit
	// busy: the thread's last pass did something or looked at an
	// injection FIFO, so the next one may too (the loop's pass that finds
	// nothing is the one Until dozes through).
	busy bool

	Stats CommStats
}

// CommStats counts what the communication thread did.
type CommStats struct {
	Posted      uint64 // sends posted by the main core
	Passes      uint64 // passes of the advance loop on the coprocessor
	Completions uint64 // completions the main core took
	Invalidated uint64 // lines the main core invalidated
}

type ctPost struct {
	m   *Message // a send, or
	get *ctGet   // a get
	at  sim.Tick
}

type ctGet struct {
	src           int
	remote, local uint64
	n             int
	done          func()
}

type ctDone struct {
	at    sim.Tick
	lines int
	done  func()
}

// StartCommThread moves the layer's advance loop onto the node's
// coprocessor as a permanent work unit. The node must be in coprocessor
// mode, and the layer without the rendezvous helper (Params.Coprocessor:
// the thread receives everything itself).
func (l *Layer) StartCommThread() (*CommThread, error) {
	switch {
	case l.nd.Co == nil:
		return nil, fmt.Errorf("bglml.commthread: %s is in %v mode (coprocessor mode needed)", l.name(), l.bs.Mode)
	case l.params.Coprocessor:
		return nil, fmt.Errorf("bglml.commthread: %s: the rendezvous helper and the communication thread both on the coprocessor (one or the other)", l.name())
	case l.ct != nil || l.notified:
		return nil, fmt.Errorf("bglml.commthread: %s: the layer already runs on a core", l.name())
	}
	ct := &CommThread{l: l, co: l.nd.Co}
	l.ct = ct
	up := l.up
	l.up = func(src int, info []byte, size int) (uint64, func()) {
		addr, done := up(src, info, size)
		return addr, func() { ct.complete(bgl.Lines(addr, size), done) }
	}
	l.pl.NotifyReceive(ct.co.Core().Unit())
	err := ct.co.AddPermanent(&bgl.Permanent{Name: "communication thread", LookCycles: l.bs.StatusCycles,
		Ready: ct.ready, Next: ct.next, Run: ct.run})
	if err != nil {
		return nil, err
	}
	return ct, nil
}

// Post hands message m to the thread from the main core's process p
// (non-blocking: m.Done runs in a Wait of the main core once its buffer is
// free). Its refusals are Send's, before any cost.
func (ct *CommThread) Post(p *cpu.Proc, m *Message) error {
	if err := ct.l.validSend(m); err != nil {
		return err
	}
	p.Compute(bgl.Lines(m.Addr, m.Len)*ct.l.bs.FlushLineCycles + 2*ct.l.bs.ScratchpadCycles)
	c := *m
	if done := m.Done; done != nil {
		c.Done = func() { ct.complete(0, done) }
	} else {
		c.Done = func() { ct.complete(0, nil) }
	}
	at := p.Now() + 1
	ct.posts = append(ct.posts, &ctPost{m: &c, at: at})
	ct.Stats.Posted++
	ct.co.Core().Unit().WakeAt(at)
	return nil
}

// PostGet hands a get (Layer.Get: n bytes at remote in node src's memory
// to local here) to the thread from the main core's process p: a
// descriptor in the scratchpad. done runs in the main core's Reap (or
// Wait) once the data is in place, the lines the thread wrote invalidated
// in the main core's L1. local should be whole L1 lines (the thread's
// receives are line aligned, L111: a line shared with data the main core
// writes would be written back over it). Its refusals are Get's, before
// any cost.
func (ct *CommThread) PostGet(p *cpu.Proc, src int, remote, local uint64, n int, done func()) error {
	l := ct.l
	if src < 0 || src >= l.ends || src == l.self || n < 0 || n > MaxMessage || l.peer(src) {
		return fmt.Errorf("bglml: %s: get of %d bytes from %s %d by the communication thread", l.name(), n, l.unit(), src)
	}
	p.Compute(2 * l.bs.ScratchpadCycles)
	at := p.Now() + 1
	ct.posts = append(ct.posts, &ctPost{get: &ctGet{src: src, remote: remote, local: local, n: n, done: done}, at: at})
	ct.Stats.Posted++
	ct.co.Core().Unit().WakeAt(at)
	return nil
}

// Reap is one look of the main core's process p at the scratchpad's
// completion words: it takes the completions visible at the end of the
// look (each, the message's lines invalidated in its L1 and its callback
// run) and reports whether there were any.
func (ct *CommThread) Reap(p *cpu.Proc) bool {
	p.Compute(ct.l.bs.ScratchpadCycles)
	return ct.take(p)
}

// SleepReap is the next pass of an upper layer's wait loop whose pass is
// one Reap and whose pause after a pass that found nothing is a Sleep of
// pause (the MPI core's over the thread): it sleeps pause, then Reaps.
// Passes that would find nothing are dozed through as Layer.SleepAdvance
// does: the core sleeps until a completion becomes visible and the
// process comes back at the end of the look of the first pass that sees
// it, the skipped passes' operations and busy time (not their pauses)
// counted as if they had run.
func (ct *CommThread) SleepReap(p *cpu.Proc, pause sim.Tick) bool {
	t0, ops := p.Now(), p.Ops()
	p.Sleep(pause)
	t1 := p.Now()
	if did := ct.Reap(p); did || ct.l.params.Spin {
		return did
	}
	ct.main = p.Core().Unit()
	p.DozeBusy(p.Now()-t0, p.Now()-t1, int(p.Ops()-ops), ct.nextComp)
	ct.main = nil
	return ct.take(p)
}

// nextComp is when the next completion becomes visible to the main core.
func (ct *CommThread) nextComp() sim.Tick {
	if len(ct.comps) == 0 {
		return sim.Never
	}
	return ct.comps[0].at
}

// take takes the completions visible now.
func (ct *CommThread) take(p *cpu.Proc) bool {
	bs := ct.l.bs
	did := false
	for len(ct.comps) > 0 && ct.comps[0].at <= p.Now() {
		c := ct.comps[0]
		ct.comps = ct.comps[1:]
		p.Compute(c.lines*bs.InvalidateLineCycles + bs.ScratchpadCycles)
		ct.Stats.Completions++
		ct.Stats.Invalidated += uint64(c.lines)
		if c.done != nil {
			p.Compute(ct.l.costs.Callback)
			c.done()
		}
		did = true
	}
	return did
}

// Wait runs in the main core's process p until cond holds: it polls the
// scratchpad for the thread's completions and, for each, invalidates the
// message's lines in its L1 and calls its callback. cond may depend only
// on what those callbacks change.
func (ct *CommThread) Wait(p *cpu.Proc, cond func() bool) {
	for !cond() {
		p.ScratchpadPoll(func() bool { return len(ct.comps) > 0 && ct.comps[0].at <= p.Now() })
		ct.take(p)
	}
}

// complete, on the thread, ends a message for the main core: the lines it
// wrote written back (a receive's), then the completion word, which the
// main core sees from the next edge.
func (ct *CommThread) complete(lines int, done func()) {
	p := ct.p
	ct.co.Flush(p, lines)
	p.Compute(ct.l.bs.ScratchpadCycles)
	at := p.Now() + 1
	ct.comps = append(ct.comps, ctDone{at: at, lines: lines, done: done})
	if ct.main != nil {
		ct.main.WakeAt(at) // the main core dozes in SleepReap
	}
}

// ready is what the coprocessor's look sees: a descriptor posted, a
// packet in the reception FIFOs, or a pass that may write.
func (ct *CommThread) ready() bool {
	return ct.busy || len(ct.posts) > 0 && ct.posts[0].at <= ct.co.Core().Unit().Engine().Now() || ct.l.pl.Seen() >= 0
}

// next is when ready can next become true without a wake (a post or a
// packet; both wake the coprocessor's core then).
func (ct *CommThread) next() sim.Tick {
	t := ct.l.pl.NextVisible()
	if len(ct.posts) > 0 {
		t = min(t, ct.posts[0].at)
	}
	return t
}

// run is one round of the thread: the descriptors posted by now read from
// the scratchpad and sent, then a pass of the advance loop.
func (ct *CommThread) run(p *cpu.Proc) {
	ct.p = p
	l := ct.l
	for len(ct.posts) > 0 && ct.posts[0].at <= p.Now() {
		m, g := ct.posts[0].m, ct.posts[0].get
		ct.posts = ct.posts[1:]
		p.Compute(2 * l.bs.ScratchpadCycles)
		if g != nil {
			done := g.done
			lines := bgl.Lines(g.local, g.n)
			if err := l.Get(p, g.src, g.remote, g.local, g.n, func() { ct.complete(lines, done) }); err != nil {
				panic(fmt.Sprintf("bglml: %s: a get the main core's check passed: %v", l.name(), err))
			}
			continue
		}
		if err := l.Send(p, m); err != nil {
			panic(fmt.Sprintf("bglml: %s: a send the main core's check passed: %v", l.name(), err))
		}
	}
	did := l.Advance(p)
	ct.busy = did || l.looks > 0
	ct.Stats.Passes++
}
