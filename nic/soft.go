package nic

import (
	"fmt"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Software makes the NIC one without RDMA offload, as an Intel 8254x
// (e1000) is: every frame it receives waits in its receive ring for the
// host's driver, which an interrupt wakes (moderated: at most one every
// ThrottlePS, the 8254x's ITR register); the protocol (sequence numbers,
// ACKs, where a write's data goes) runs when the driver hands the frame
// on, and an atomic is done by the driver on the CPU (SoftOp), not by the
// NIC. A write's data and a READ's are still moved by DMA through the
// IOMMU, as an e1000 moves a received packet into memory and a
// transmitted one (zero-copy, from where the data lies) out of it; so the
// IOMMU still logs active puts and withholds an active get's data until
// its log is consumed. Every frame the responder makes (ACKs, responses)
// waits for the driver's transmit path too. The CPU's costs
// are the driver's (machine's e1000 driver): RxCycles and TxCycles a
// packet; the NIC holds no cost of its own beyond its usual ones.
type Software struct {
	MSIAddr uint64 // the interrupt: an MSI to this address with MSIData
	MSIData uint32
	// ThrottlePS is the least time between two interrupts (ITR); 0: an
	// interrupt as soon as a frame waits and the driver is not running.
	ThrottlePS sim.Tick
	// Ring: received frames the driver has not taken, at most (the
	// receive ring's descriptors); a full ring stops the NIC taking frames
	// (aaemu's links are lossless: they back up rather than drop).
	Ring int
	// The driver's work on the CPU per packet received and per packet
	// sent, in core cycles (the driver reads them; the NIC does not).
	RxCycles, TxCycles int
}

// Validate checks the software path's figures.
func (s *Software) Validate() error {
	switch {
	case s.MSIAddr>>20 != 0xfee:
		return fmt.Errorf("software path: MSI address %#x is outside the interrupt window 0xFEE00000-0xFEEFFFFF", s.MSIAddr)
	case s.Ring < 8 || s.Ring > 65536:
		return fmt.Errorf("software path: a ring of %d frames, want 8..65536", s.Ring)
	case s.RxCycles < 0 || s.TxCycles < 0:
		return fmt.Errorf("software path: negative driver cost (%d, %d cycles)", s.RxCycles, s.TxCycles)
	}
	return nil
}

// softState is the software path's state: the frames for the driver, the
// memory operations it must do, the frames it must transmit, and the
// interrupt's.
type softState struct {
	s     Software
	rx    sim.Queue[Frame]
	ops   sim.Queue[*SoftOp]
	tx    sim.Queue[heldFrame]
	irqOn bool     // the driver is not running: a frame waiting raises an interrupt
	irqAt sim.Tick // when the next interrupt goes (0: none due)
	last  sim.Tick // when the last went (ITR counts from it)
	any   bool     // an interrupt has gone

	stIRQs, stRx, stTx, stOps *sim.Counter
}

type heldFrame struct {
	q *qp
	f Frame
}

// SoftOp is an atomic of a received request that the driver does on the
// CPU: a compare-and-swap or a fetch-and-add.
type SoftOp struct {
	CAS     bool // compare-and-swap, else fetch-and-add
	Addr    uint64
	Compare uint64 // CAS: the value compared
	Swap    uint64 // CAS: the value swapped in; fetch-and-add: the addend

	n *NIC
	q *qp
	a *atomicServe
}

func (n *NIC) newSoftState() {
	s := n.spec.Software
	if s == nil {
		return
	}
	st := n.u.Engine().Stats()
	c := func(name, unit, desc string) *sim.Counter { return st.Counter(n.name+"."+name, unit, desc) }
	n.soft = &softState{s: *s, irqOn: true,
		stIRQs: c("driver_interrupts", "interrupts", "interrupts raised for the driver (moderated by the throttle interval)"),
		stRx:   c("driver_rx", "frames", "received frames the driver handed to the protocol"),
		stTx:   c("driver_tx", "frames", "frames the responder made that the driver transmitted"),
		stOps:  c("driver_ops", "operations", "atomics the driver did on the CPU"),
	}
}

// softRoom says whether the receive ring has room for another frame.
func (n *NIC) softRoom() bool { return n.soft == nil || n.soft.rx.Len() < n.soft.s.Ring }

// softPending says whether the driver has work.
func (s *softState) pending() bool { return s.rx.Len() > 0 || s.ops.Len() > 0 || s.tx.Len() > 0 }

// softWork schedules the interrupt when work waits and the driver is not
// running: now, or ThrottlePS after the last one.
func (n *NIC) softWork(now sim.Tick) {
	s := n.soft
	if !s.irqOn || s.irqAt != 0 || !s.pending() {
		return
	}
	at := now
	if s.any {
		at = max(now, s.last+s.s.ThrottlePS)
	}
	s.irqAt = max(at, 1)
	if s.irqAt > now {
		n.u.WakeAt(s.irqAt)
	} else {
		n.u.WakeIn(1)
	}
}

// softIRQ raises the interrupt that is due: an MSI behind the TLPs already
// queued (the descriptors' write-backs reach memory first).
func (n *NIC) softIRQ(now sim.Tick) {
	s := n.soft
	if s.irqAt == 0 || s.irqAt > now || !s.irqOn {
		return
	}
	s.irqAt, s.irqOn, s.last, s.any = 0, false, now, true
	s.stIRQs.Inc()
	tx := n.u.Engine().NewTxn(0, "tlp.MWr.msi", n.name)
	n.sendTLP(tlp.NewMSI(n.spec.ID, s.s.MSIAddr, s.s.MSIData), tx)
}

// The driver's side. Each call is made by the driver's process on the
// CPU, between the costed operations that model its work, and wakes the
// NIC for what it changed.

// DriverHasRx reports whether a received frame waits for the driver.
func (n *NIC) DriverHasRx() bool { return n.soft != nil && n.soft.rx.Len() > 0 }

// DriverRx hands the oldest received frame to the protocol: the driver has
// done its receive work for it.
func (n *NIC) DriverRx() {
	if !n.DriverHasRx() {
		return
	}
	f := n.soft.rx.Pop()
	n.soft.stRx.Inc()
	now := n.u.Engine().Now()
	n.fromNet(&f, now)
	n.u.WakeIn(1)
}

// DriverOp is the oldest memory operation the driver must do, if any.
func (n *NIC) DriverOp() (*SoftOp, bool) {
	if n.soft == nil || n.soft.ops.Len() == 0 {
		return nil, false
	}
	n.soft.stOps.Inc()
	return n.soft.ops.Pop(), true
}

// Done gives the NIC the old value of a software atomic: its response goes
// to the driver's transmit path.
func (o *SoftOp) Done(old uint64) {
	n := o.n
	o.a.done, o.a.value = true, old
	o.q.atomicAck(o.a)
	n.activate(o.q)
	n.u.WakeIn(1)
}

// DriverHasTx reports whether a frame of the responder waits for the
// driver's transmit path.
func (n *NIC) DriverHasTx() bool { return n.soft != nil && n.soft.tx.Len() > 0 }

// DriverTx transmits the oldest such frame: the driver has done its
// transmit work for it.
func (n *NIC) DriverTx() {
	if !n.DriverHasTx() {
		return
	}
	h := n.soft.tx.Pop()
	n.soft.stTx.Inc()
	n.queueResp(h.q, h.f)
	n.u.WakeIn(1)
}

// DriverDone ends the driver's poll: interrupts are on again, and work
// that came meanwhile raises the next one.
func (n *NIC) DriverDone() {
	if n.soft == nil {
		return
	}
	n.soft.irqOn = true
	n.softWork(n.u.Engine().Now())
}
