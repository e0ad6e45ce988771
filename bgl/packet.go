package bgl

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// PacketLayer is a node's packet layer (L84–L87): thin and stateless, it
// moves packets between the cores and the torus's FIFOs, each step a
// costed operation of the calling process. A FIFO has one writer and one
// reader at a time (the message layer owns them all, L90).
//
// A packet layer works on one FIFO set of the node (Group): its FIFO
// numbers are the set's (injection 0 to InjFIFOs+InjPriorityFIFOs−1,
// reception 0 to 6).
type PacketLayer struct {
	nd     *torus.Node
	spec   *Spec
	period sim.Tick
	group  int
}

// Torus is the node's side of the torus.
func (pl *PacketLayer) Torus() *torus.Node { return pl.nd }

// Group is the FIFO set the packet layer works on.
func (pl *PacketLayer) Group() int { return pl.group }

// inj is the node's number of the set's injection FIFO fifo (out of
// range stays out of range).
func (pl *PacketLayer) inj(fifo int) int {
	if fifo < 0 || fifo >= pl.spec.Torus.GroupInj() {
		return -1 - fifo
	}
	return pl.group*pl.spec.Torus.GroupInj() + fifo
}

// rec is the node's number of the set's reception FIFO fifo.
func (pl *PacketLayer) rec(fifo int) int { return pl.group*torus.NumRecFIFOs + fifo }

// NotifyReceive wakes u whenever a packet becomes visible in one of the
// set's reception FIFOs.
func (pl *PacketLayer) NotifyReceive(u *sim.Unit) { pl.nd.NotifyReceiveGroup(pl.group, u) }

// NextVisible is when the earliest packet held in the set's reception
// FIFOs is visible (sim.Never: none).
func (pl *PacketLayer) NextVisible() sim.Tick { return pl.nd.NextVisibleGroup(pl.group) }

// look is one access to the FIFOs' status registers, after which cond
// is checked; while it is false the process polls (one access per look).
func (pl *PacketLayer) look(p *cpu.Proc, cond func() bool) {
	p.Compute(pl.spec.StatusCycles)
	if !cond() {
		p.Poll(cond)
	}
}

// Write stores pkt into injection FIFO fifo with 16-byte stores, its data
// loaded from the cache or from memory. While the FIFO has no room it
// polls the FIFO's status (one look at least). The router sees the packet once its last store
// is done. A packet or FIFO the torus refuses is an error, before any
// cost.
func (pl *PacketLayer) Write(p *cpu.Proc, fifo int, pkt *torus.Packet, from Source) error {
	if err := pl.check(fifo, pkt); err != nil {
		return err
	}
	fifo = pl.inj(fifo)
	n := pkt.Chunks()
	pl.look(p, func() bool { return pl.nd.Room(fifo) >= n })
	p.Compute(pl.spec.WriteCost(n, from))
	if err := pl.nd.Inject(fifo, pkt); err != nil {
		// Only another writer of the same FIFO can take the room.
		return fmt.Errorf("bgl: node %d: injection FIFO %d: %w (two writers?)", pl.nd.Index, fifo, err)
	}
	return nil
}

// TryWrite is Write without the wait: one look at the FIFO's status and,
// if it has room for the packet, the stores; false if it had none (the
// advance loop goes on with other work).
func (pl *PacketLayer) TryWrite(p *cpu.Proc, fifo int, pkt *torus.Packet, from Source) (bool, error) {
	if err := pl.check(fifo, pkt); err != nil {
		return false, err
	}
	p.Compute(pl.spec.StatusCycles)
	if pl.nd.Room(pl.inj(fifo)) < pkt.Chunks() {
		return false, nil
	}
	return true, pl.Store(p, fifo, pkt, from)
}

// Store is the stores of a packet into injection FIFO fifo, for a caller
// that has looked at the FIFO's room already (Room); no room now is an
// error.
func (pl *PacketLayer) Store(p *cpu.Proc, fifo int, pkt *torus.Packet, from Source) error {
	if err := pl.check(fifo, pkt); err != nil {
		return err
	}
	fifo = pl.inj(fifo)
	p.Compute(pl.spec.WriteCost(pkt.Chunks(), from))
	if err := pl.nd.Inject(fifo, pkt); err != nil {
		return fmt.Errorf("bgl: node %d: injection FIFO %d: %w (two writers?)", pl.nd.Index, fifo, err)
	}
	return nil
}

// Room is a look at injection FIFO fifo's status: the chunks it has room
// for (one status access).
func (pl *PacketLayer) Room(p *cpu.Proc, fifo int) (int, error) {
	if n := pl.spec.Torus.GroupInj(); fifo < 0 || fifo >= n {
		return 0, fmt.Errorf("bgl: injection FIFO %d of %d", fifo, n)
	}
	p.Compute(pl.spec.StatusCycles)
	return pl.nd.Room(pl.inj(fifo)), nil
}

// RoomNow is the chunks injection FIFO fifo has room for, as the FIFO's
// hardware sees it (no look of a core: an interrupt's watermark). A FIFO
// out of range has none.
func (pl *PacketLayer) RoomNow(fifo int) int {
	if n := pl.spec.Torus.GroupInj(); fifo < 0 || fifo >= n {
		return 0
	}
	return pl.nd.Room(pl.inj(fifo))
}

// NotifyRoom wakes u whenever the router frees space in one of the node's
// injection FIFOs.
func (pl *PacketLayer) NotifyRoom(u *sim.Unit) { pl.nd.NotifyRoom(u) }

// check is the torus's check of a packet for the set's FIFO fifo.
func (pl *PacketLayer) check(fifo int, pkt *torus.Packet) error {
	if n := pl.spec.Torus.GroupInj(); fifo < 0 || fifo >= n {
		return fmt.Errorf("bgl: injection FIFO %d of %d", fifo, n)
	}
	return pl.nd.Check(pl.inj(fifo), pkt)
}

// Pending is a look at the reception FIFOs' status: the first FIFO that
// holds a packet, or -1 (one status access).
func (pl *PacketLayer) Pending(p *cpu.Proc) int {
	p.Compute(pl.spec.StatusCycles)
	return pl.pending()
}

// Seen is what a look at the reception FIFOs' status sees now (Pending
// without its cost): for a caller that spent the look's time already, as
// a loop dozed through by cpu.Proc.Doze has.
func (pl *PacketLayer) Seen() int { return pl.pending() }

// SeenFrom is Seen with the FIFOs looked at round-robin: the first that
// holds a packet from FIFO k on (wrapping), or -1. A reader that serves
// its FIFOs in turn keeps one busy input port from starving the others.
func (pl *PacketLayer) SeenFrom(k int) int {
	for i := 0; i < torus.NumRecFIFOs; i++ {
		f := (k + i) % torus.NumRecFIFOs
		if pl.nd.Peek(pl.rec(f)) != nil {
			return f
		}
	}
	return -1
}

func (pl *PacketLayer) pending() int {
	for f := 0; f < torus.NumRecFIFOs; f++ {
		if pl.nd.Peek(pl.rec(f)) != nil {
			return f
		}
	}
	return -1
}

// Poll looks at the reception FIFOs' status until one holds a packet and
// returns its number: a polling loop, one status access per look.
func (pl *PacketLayer) Poll(p *cpu.Proc) int {
	pl.look(p, func() bool { return pl.pending() >= 0 })
	return pl.pending()
}

// Peek loads the header of the packet at the head of reception FIFO
// fifo (one 16-byte load) without unloading the packet: the hardware
// header and the software header, which say what the packet is for. It
// returns nil when the FIFO is empty (after a status access).
func (pl *PacketLayer) Peek(p *cpu.Proc, fifo int) (*torus.Packet, error) {
	if err := checkRec(fifo); err != nil {
		return nil, err
	}
	if pl.nd.Peek(pl.rec(fifo)) == nil {
		p.Compute(pl.spec.StatusCycles)
		return nil, nil
	}
	p.Compute(share(pl.spec.ReadCycles, 1) / 2) // one of a chunk's two 16-byte loads
	return pl.nd.Peek(pl.rec(fifo)), nil
}

// Read unloads the packet at the head of reception FIFO fifo with 16-byte
// loads into memory: into aligned memory at the paper's cost; into a
// buffer that is not 16-byte aligned it also pays the copy that realigns
// the payload (L64). The FIFO frees the packet's space when its last
// load is done. It returns nil when the FIFO is empty (after a status
// access).
func (pl *PacketLayer) Read(p *cpu.Proc, fifo int, aligned bool) (*torus.Packet, error) {
	if err := checkRec(fifo); err != nil {
		return nil, err
	}
	pkt := pl.nd.Peek(pl.rec(fifo))
	if pkt == nil {
		p.Compute(pl.spec.StatusCycles)
		return nil, nil
	}
	c := pl.spec.ReadCost(pkt.Chunks())
	if !aligned {
		c += pl.spec.CopyCost(len(pkt.Payload))
	}
	p.Compute(c)
	return pl.nd.Receive(pl.rec(fifo)), nil
}

func checkRec(fifo int) error {
	if fifo < 0 || fifo >= torus.NumRecFIFOs {
		return fmt.Errorf("bgl: reception FIFO %d of %d", fifo, torus.NumRecFIFOs)
	}
	return nil
}

// CopyCost is what copying n bytes in memory costs the core (the
// realigning copy's rate, 4.3 B/cycle, L70).
func (pl *PacketLayer) CopyCost(n int) int { return pl.spec.CopyCost(n) }
