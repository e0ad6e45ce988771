package bglml

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// coReceive is the rendezvous helper, a permanent work unit of the
// coprocessor (L110, L135–L137): it takes the data packet at the head of
// the second FIFO set (its look found one), finds its transfer's record
// in the scratchpad, reads the packet straight to its place and counts
// it there. At a transfer's end it writes back the lines it wrote (its L1
// is not coherent with the main core's) and sets the transfer's
// completion word, which the main core's next pass sees.
func (l *Layer) coReceive(p *cpu.Proc) {
	// The FIFOs in turn (one per input port): each link's data gets its
	// share of the coprocessor.
	f := l.cpl.SeenFrom(l.coNext)
	l.coNext = (f + 1) % torus.NumRecFIFOs
	hd, err := l.cpl.Peek(p, f)
	if err != nil || hd == nil {
		panic(fmt.Sprintf("bglml: node %d: coprocessor FIFO %d: %v", l.nd.Index, f, err))
	}
	p.Compute(l.costs.Dispatch)
	t, src, id, idx := unsoft(&hd.Soft)
	if t != tData {
		panic(fmt.Sprintf("bglml: node %d: packet of type %d from node %d in the coprocessor's FIFOs", l.nd.Index, t, src))
	}
	p.Compute(l.costs.Lookup + l.bs.ScratchpadCycles) // the record is in the scratchpad
	r := l.rdv[id]
	if r == nil || !r.co {
		panic(fmt.Sprintf("bglml: node %d: coprocessor data for unknown transfer %d from node %d", l.nd.Index, id, src))
	}
	off := idx * torus.MaxPayload
	pk, err := l.cpl.Read(p, f, (r.addr+uint64(off))%16 == 0)
	if err != nil || pk == nil {
		panic(fmt.Sprintf("bglml: node %d: coprocessor FIFO %d: %v", l.nd.Index, f, err))
	}
	if off+len(pk.Payload) > r.size {
		panic(fmt.Sprintf("bglml: node %d: %d bytes at %d of a %d-byte transfer from node %d", l.nd.Index, len(pk.Payload), off, r.size, r.src))
	}
	l.nd.Mem.Write(r.addr+uint64(off), pk.Payload)
	r.got += len(pk.Payload)
	p.Compute(l.bs.ScratchpadCycles) // the count
	l.Stats.CoPackets++
	if r.got < r.size {
		return
	}
	l.nd.Co.Flush(p, bgl.Lines(r.addr, r.size))
	p.Compute(l.bs.ScratchpadCycles) // the completion word
	// The main core sees it from the next edge.
	r.doneAt = p.Now() + 1
	l.coDone = append(l.coDone, r)
	if l.main != nil {
		l.main.WakeAt(r.doneAt)
	}
}

// coComplete ends, on the main core, the transfers whose completion word
// the pass's look saw: the main core invalidates the buffer's lines in
// its L1 (it may hold stale copies) and the message is complete.
func (l *Layer) coComplete(p *cpu.Proc) bool {
	did := false
	for len(l.coDone) > 0 && l.coDone[0].doneAt <= p.Now() {
		r := l.coDone[0]
		l.coDone = l.coDone[1:]
		delete(l.rdv, r.id)
		p.Compute(bgl.Lines(r.addr, r.size) * l.bs.InvalidateLineCycles)
		l.Stats.CoRecv++
		l.complete(p, r)
		did = true
	}
	return did
}

// nextChange is when what a pass of the main core's advance loop looks at
// next changes: a packet in its reception FIFOs, or (coprocessor mode) a
// completion word.
func (l *Layer) nextChange() sim.Tick {
	t := l.pl.NextVisible()
	if len(l.coDone) > 0 {
		t = min(t, l.coDone[0].doneAt)
	}
	if l.paceFound {
		t = min(t, l.paceAt()) // the pass that met the pace writes then
	}
	return t
}
