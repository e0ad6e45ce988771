package mpi

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
)

// Place is where a rank runs: a core of a node.
type Place struct{ Node, Core int }

func (p Place) String() string { return fmt.Sprintf("node %d core %d", p.Node, p.Core) }

// Mode is how a rendezvous moves a message's data once the receiver has
// matched it.
type Mode uint8

// The rendezvous modes.
const (
	// RendezvousCopy: RTS → CTS → DATA packets through the transport's
	// buffers (a pipelined copy in and out, as nemesis' shared-memory LMT).
	RendezvousCopy Mode = 1 + iota
	// RendezvousPut: RTS → CTS with the receive buffer → the sender writes
	// it (RDMA WRITE, in chunks) → FIN (MVAPICH's and LCP's RPUT).
	RendezvousPut
	// RendezvousGet: RTS with the send buffer → the receiver reads it
	// (RDMA READ, in chunks) → FIN to the sender (RGET).
	RendezvousGet
)

func (m Mode) String() string {
	switch m {
	case RendezvousCopy:
		return "copy"
	case RendezvousPut:
		return "put"
	case RendezvousGet:
		return "get"
	}
	return fmt.Sprintf("mode%d", uint8(m))
}

// ParseMode reads a rendezvous mode name (copy, put, get).
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{RendezvousCopy, RendezvousPut, RendezvousGet} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("rendezvous mode %q: want copy, put or get", s)
}

// Params are a transport's protocol parameters: which protocol a message
// takes by its size, and how a rendezvous moves it.
type Params struct {
	// EagerLimit: messages of at most this many bytes go eagerly (one
	// packet with the data); larger ones by rendezvous. In a Config, 0
	// takes the default and a negative value means 0.
	EagerLimit int
	// Rendezvous is the mode of messages above EagerLimit.
	Rendezvous Mode
	// ChunkBytes is the most one step of a rendezvous moves: one RDMA
	// WRITE or READ, or one DATA packet (at most the transport's
	// MaxPayload): huge messages move as a series of chunks.
	ChunkBytes int
	// Pipeline is how many chunks of one message may be in flight.
	Pipeline int
}

func (p Params) validate(name string, maxPayload int) error {
	switch {
	case p.EagerLimit < 0 || p.EagerLimit > maxPayload:
		return fmt.Errorf("%s: eager limit %d out of 0..%d (the largest packet payload)", name, p.EagerLimit, maxPayload)
	case p.Rendezvous < RendezvousCopy || p.Rendezvous > RendezvousGet:
		return fmt.Errorf("%s: rendezvous mode %d", name, p.Rendezvous)
	case p.ChunkBytes < 1:
		return fmt.Errorf("%s: chunk of %d bytes", name, p.ChunkBytes)
	case p.Pipeline < 1:
		return fmt.Errorf("%s: pipeline of %d chunks", name, p.Pipeline)
	case p.Rendezvous == RendezvousCopy && maxPayload < 64:
		return fmt.Errorf("%s: a copy-mode rendezvous through packets of %d bytes", name, maxPayload)
	}
	return nil
}

// Payload is where a received packet's data is while the deliver callback
// runs: Len bytes at Addr in the receiving rank's node memory, or, for data
// that came inside the packet itself, in Inline.
type Payload struct {
	Addr   uint64
	Inline []byte
	Len    int
}

// Endpoint is a rank's end of a transport. Every method runs in the rank's
// process and spends its time with the process's costed operations.
type Endpoint interface {
	// MaxPayload is the most data one packet carries.
	MaxPayload() int
	// Send sends a packet to rank dst: the header and n ≤ MaxPayload bytes
	// from local memory at src (copied before Send returns: the buffer is
	// free again). It returns false, having sent nothing, when the
	// transport has no room now (the rank's progress engine tries again).
	// Packets between two ranks arrive in the order they were sent, after
	// the data of every Put the sender issued to the same rank before.
	Send(dst int, h *Header, src uint64, n int) bool
	// Poll checks for arrived packets and hands each to deliver, which
	// must take what it needs from the payload before it returns. It
	// reports how many it delivered and whether it did other work (reaped
	// completions).
	Poll(deliver func(h *Header, p Payload)) (delivered int, worked bool)
	// Put starts copying n bytes from local to remote in rank dst's node
	// memory; Get from remote in rank src's node memory to local. ok is
	// false when the transport has no room now. The handle goes to Done.
	Put(dst int, local, remote uint64, n int) (op int, ok bool)
	Get(src int, local, remote uint64, n int) (op int, ok bool)
	// Done reports whether the operation has completed (the data is in
	// place); a done handle is not asked about again.
	Done(op int) (bool, error)
	// Busy reports whether the endpoint has work under way that will
	// finish without any rank acting (posted network operations): a rank
	// whose endpoints are busy is not deadlocked.
	Busy() bool
}

// Env is what a transport's endpoint is opened with: the rank, where it
// runs, its process, and Moved, which the endpoint calls whenever its state
// changes in a way that may let the rank go on (a completion reaped, a
// buffer freed): the deadlock detector relies on it.
type Env struct {
	Rank  int
	Place Place
	Proc  *cpu.Proc
	Node  *machine.Node // nil on a machine that is not a cluster (RunOn)
	Moved func()
}

// Transport is one way of moving packets between ranks (shared memory, an
// RDMA NIC; later a PIO NIU, a torus, several rails).
type Transport interface {
	Name() string
	// Params are the transport's protocol parameters.
	Params() Params
	// Reaches reports whether the transport carries packets from a rank at
	// from to a rank at to.
	Reaches(from, to Place) bool
	// Open makes a rank's endpoint; it runs in the rank's process before
	// the rank's program (set-up work, such as posting receive buffers, is
	// costed there).
	Open(e Env) (Endpoint, error)
}

// Setup is what a transport is built from: the cluster and where every
// rank runs (by world rank).
type Setup struct {
	Cluster *machine.Cluster // nil on a machine that is not a cluster (RunOn)
	Host    Host
	Places  []Place
}

// TransportMaker builds a transport for a run. A pair of ranks talks over
// the first transport of Config.Transports that reaches from one to the
// other.
type TransportMaker func(s *Setup) (Transport, error)

// PollPolicy decides, in every pass of a rank's progress engine, which
// transports it polls (seed 000's fractional and adaptive network polling
// plug in here).
type PollPolicy interface {
	// Poll reports whether to poll transport t (its index in the run's
	// transports) in this pass.
	Poll(t int) bool
	// Polled tells the policy that polling t delivered n packets.
	Polled(t, n int)
}

// PollAll polls every transport in every pass.
type PollAll struct{}

// Poll is always true.
func (PollAll) Poll(int) bool { return true }

// Polled does nothing.
func (PollAll) Polled(int, int) {}
