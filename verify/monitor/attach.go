package monitor

import (
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// TLPOf reads the transaction ID and the TLP of a channel's transaction
// type (the caller knows it; this package does not import the blocks).
type TLPOf[T any] func(v *T) (sim.TxnID, *tlp.TLP)

// WatchDir attaches direction d of l to a link direction's transmitter
// input in and receive buffer out, in engine e's domain.
func WatchDir[T any](l *PCIeLink, d int, e *sim.Engine, in, out *sim.Chan[T], of TLPOf[T]) {
	in.Watch(func(v *T) { id, t := of(v); l.Enter(d, e.Now(), id, t) }, nil)
	out.Watch(func(v *T) { id, t := of(v); l.Arrive(d, e.Now(), id, t) },
		func(v *T) { id, t := of(v); l.Take(d, e.Now(), id, t) })
}

// WatchChan attaches direction d of l to a channel that stands for a link
// direction without one (a device wired straight to its port).
func WatchChan[T any](l *PCIeLink, d int, e *sim.Engine, ch *sim.Chan[T], of TLPOf[T]) {
	ch.Watch(func(v *T) { id, t := of(v); l.Pass(d, e.Now(), id, t) },
		func(v *T) { id, t := of(v); l.Take(d, e.Now(), id, t) })
}
