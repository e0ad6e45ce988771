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
type PacketLayer struct {
	nd     *torus.Node
	spec   *Spec
	period sim.Tick
}

// Torus is the node's side of the torus.
func (pl *PacketLayer) Torus() *torus.Node { return pl.nd }

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
	if err := pl.nd.Check(fifo, pkt); err != nil {
		return err
	}
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
	if err := pl.nd.Check(fifo, pkt); err != nil {
		return false, err
	}
	p.Compute(pl.spec.StatusCycles)
	if pl.nd.Room(fifo) < pkt.Chunks() {
		return false, nil
	}
	return true, pl.Store(p, fifo, pkt, from)
}

// Store is the stores of a packet into injection FIFO fifo, for a caller
// that has looked at the FIFO's room already (Room); no room now is an
// error.
func (pl *PacketLayer) Store(p *cpu.Proc, fifo int, pkt *torus.Packet, from Source) error {
	if err := pl.nd.Check(fifo, pkt); err != nil {
		return err
	}
	p.Compute(pl.spec.WriteCost(pkt.Chunks(), from))
	if err := pl.nd.Inject(fifo, pkt); err != nil {
		return fmt.Errorf("bgl: node %d: injection FIFO %d: %w (two writers?)", pl.nd.Index, fifo, err)
	}
	return nil
}

// Room is a look at injection FIFO fifo's status: the chunks it has room
// for (one status access).
func (pl *PacketLayer) Room(p *cpu.Proc, fifo int) (int, error) {
	if n := pl.spec.Torus.InjFIFOs + pl.spec.Torus.InjPriorityFIFOs; fifo < 0 || fifo >= n {
		return 0, fmt.Errorf("bgl: injection FIFO %d of %d", fifo, n)
	}
	p.Compute(pl.spec.StatusCycles)
	return pl.nd.Room(fifo), nil
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

func (pl *PacketLayer) pending() int {
	for f := 0; f < torus.NumRecFIFOs; f++ {
		if pl.nd.Peek(f) != nil {
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
	if pl.nd.Peek(fifo) == nil {
		p.Compute(pl.spec.StatusCycles)
		return nil, nil
	}
	p.Compute(share(pl.spec.ReadCycles, 1) / 2) // one of a chunk's two 16-byte loads
	return pl.nd.Peek(fifo), nil
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
	pkt := pl.nd.Peek(fifo)
	if pkt == nil {
		p.Compute(pl.spec.StatusCycles)
		return nil, nil
	}
	c := pl.spec.ReadCost(pkt.Chunks())
	if !aligned {
		c += pl.spec.CopyCost(len(pkt.Payload))
	}
	p.Compute(c)
	return pl.nd.Receive(fifo), nil
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
