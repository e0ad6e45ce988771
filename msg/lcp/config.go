// Package lcp is the LowComm Protocol layer of MPC's multirail design
// (seed 003, Moreau, Taboada and Pérache): a protocol layer over an
// active-message transport API per rail, which stripes one message over
// the NICs of a node after a single rendezvous.
//
//   - Iface is a process's transport endpoint on one rail (one NIC):
//     SendAM (a handler id, a protocol header and a payload), the tag API
//     (SendTag, RecvTag with a tag, an ignore mask and a context handed
//     back on a match) and the RDMA WRITE and READ that move fragments,
//     all over the verbs of that NIC.
//   - Endpoint is the protocol endpoint towards one peer: one Iface per
//     rail and the configuration they share.
//   - The controller (Proc.progress) is a progress engine over the
//     pending requests' state machines; AM handlers run to completion
//     and never move bulk data.
//   - The protocols: eager below EagerLimit (8 KB), then a rendezvous
//     with equal fragments of FragmentBytes sent round-robin over the
//     rails: RPUT (request → ACK → fragments → FIN per rail), or RGET
//     (request → the receiver reads the fragments → FIN), the baseline
//     of the paper's Figure 5b.
//
// Every step is the process's costed operations and its NICs' real work:
// the bytes move through node memory, PCIe and the wires.
package lcp

import (
	"fmt"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Protocol is the rendezvous of messages of EagerLimit bytes or more.
type Protocol uint8

// The rendezvous protocols.
const (
	// RPUT: the sender's request, the receiver's ACK with its buffer, the
	// fragments written by the sender (RDMA WRITE) round-robin over the
	// rails, a FIN after the last fragment of each rail.
	RPUT Protocol = 1 + iota
	// RGET: the sender's request with its buffer; the receiver reads the
	// fragments (RDMA READ) round-robin over the rails, then sends a FIN.
	RGET
)

func (p Protocol) String() string {
	switch p {
	case RPUT:
		return "rput"
	case RGET:
		return "rget"
	}
	return fmt.Sprintf("protocol%d", uint8(p))
}

// Registration is how many memory descriptors a rendezvous creates.
type Registration uint8

// The registration policies.
const (
	// PerFragment: one descriptor per fragment on each side (what the
	// paper's implementation does).
	PerFragment Registration = 1 + iota
	// PerNIC: one descriptor per rail that carries fragments, on each
	// side; fragments are offsets into it (the paper's proposed fix).
	PerNIC
)

func (r Registration) String() string {
	switch r {
	case PerFragment:
		return "per-fragment"
	case PerNIC:
		return "per-nic"
	}
	return fmt.Sprintf("registration%d", uint8(r))
}

// Matching is when a NIC's matching unit matches an arriving tagged
// message against the posted receives.
type Matching uint8

// The matching points.
const (
	// OnPoll: the unit searches when the rank's progress engine takes the
	// message from the rail, and the rank waits for the search; eager data
	// is copied from the receive slot into the matched buffer.
	OnPoll Matching = 1 + iota
	// OnArrival: the unit searches when the message's last packet is in
	// the NIC (BXI and Portals 4 match in the NIC as messages arrive), in
	// the NIC's time: the rank waits only for what of the search is left
	// when it polls. Eager data for a receive posted before the message
	// arrived is delivered into the receive's buffer (BXI's zero copy):
	// the core copies nothing.
	OnArrival
)

func (m Matching) String() string {
	switch m {
	case OnPoll:
		return "on-poll"
	case OnArrival:
		return "on-arrival"
	}
	return fmt.Sprintf("matching%d", uint8(m))
}

// Bulk is how a rendezvous's fragments cross the host side of the NICs.
type Bulk uint8

// The bulk modes.
const (
	// Cycle: every fragment TLP by TLP through the PCIe links, the root
	// complex and the memory controller.
	Cycle Bulk = 1 + iota
	// Batched: a fragment's work requests but its first and last are
	// marked bulk, and the NICs move their payload by the machine's bulk
	// DMA path (machine.Cluster.EnableBulk): one copy, the TLPs counted,
	// no time of its own, while the frames stay per packet on the wires.
	// On a machine whose host side could be the bottleneck
	// (machine.BulkHostFits) the run goes TLP by TLP and
	// Result.BulkOff says why.
	Batched
)

func (b Bulk) String() string {
	switch b {
	case Cycle:
		return "cycle"
	case Batched:
		return "batched"
	}
	return fmt.Sprintf("bulk%d", uint8(b))
}

// Place is where a rank runs: a core of a node.
type Place struct{ Node, Core int }

// Config configures a run of the protocol layer. Zero fields but
// FragmentBytes take the defaults (DefaultConfig).
type Config struct {
	// Rails is the NICs each process stripes over (0: every NIC of the
	// node, machine.Spec.NICs).
	Rails int
	// EagerLimit: messages shorter than this go eagerly, one tagged
	// packet; from this size on by rendezvous (default 8192: "eager below
	// 8 KB"). At most MaxEager.
	EagerLimit int
	// FragmentBytes is the size of a rendezvous's fragments: a message of
	// S bytes is ⌈S/FragmentBytes⌉ fragments, all of this size but the
	// last (default 64 MB, Portals 4's largest message on the paper's
	// network). A multiple of the NIC's path MTU, so that every fragment
	// but the last fills whole packets. Not defaulted: 0 is an error (start
	// from DefaultConfig).
	FragmentBytes int
	// ChunkBytes is the most one RDMA work request of a fragment moves
	// (default 256 KB): a fragment is one descriptor, posted as several
	// WRITEs or READs on its rail, all at once. aaemu's NIC simulates one
	// long work request slower, in wall time and in simulated time (its
	// reads go in turns), than the same bytes as a few shorter ones.
	ChunkBytes   int
	Protocol     Protocol
	Registration Registration
	// RegCycles is the CPU cycles one memory descriptor costs to create
	// (a Portals MDBind or MEAppend: a call into the driver that writes
	// the descriptor to the NIC). Default 2000 (1 µs at 2 GHz), an
	// assumption: the paper gives none. The memory itself is pinned and
	// mapped once, when allocated (Proc.Alloc).
	RegCycles int
	// MatchPS is the NIC matching unit's time per list entry it examines
	// (posted-receive or unexpected list); default 2 ns, an assumption
	// (a list walk in NIC memory; BXI's figure is not published).
	MatchPS sim.Tick
	// Matching is when the unit matches an arriving message (default
	// OnPoll).
	Matching Matching
	// CallCycles is the software cost of an API call (default 100).
	CallCycles int
	// Slots is the receive buffers a process keeps posted per other node
	// on each rail (its credits; default 16); Bounces its send buffers
	// per rail (default 16).
	Slots, Bounces int
	// Places puts rank r on Places[r] (default: rank r on core 0 of
	// node r, one rank a node).
	Places []Place
	// Limit bounds the simulated time of a run (default 10 s).
	Limit sim.Tick
	// Bulk is how fragments cross the host side (default Cycle).
	Bulk Bulk
}

// MaxEager bounds EagerLimit: an eager packet is one SEND of a header and
// the data from a bounce buffer.
const MaxEager = 64 << 10

// DefaultConfig is the paper's set-up: eager below 8 KB, RPUT with 64 MB
// fragments over every NIC, a descriptor per fragment.
func DefaultConfig() Config {
	return Config{EagerLimit: 8192, FragmentBytes: 64 << 20, ChunkBytes: 256 << 10, Protocol: RPUT, Registration: PerFragment,
		RegCycles: 2000, MatchPS: 2 * sim.NS, Matching: OnPoll, CallCycles: 100, Slots: 16, Bounces: 16, Limit: 10 * sim.S, Bulk: Cycle}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.EagerLimit == 0 {
		c.EagerLimit = d.EagerLimit
	}
	if c.ChunkBytes == 0 {
		c.ChunkBytes = d.ChunkBytes
	}
	if c.Protocol == 0 {
		c.Protocol = d.Protocol
	}
	if c.Registration == 0 {
		c.Registration = d.Registration
	}
	if c.RegCycles == 0 {
		c.RegCycles = d.RegCycles
	}
	if c.MatchPS == 0 {
		c.MatchPS = d.MatchPS
	}
	if c.Matching == 0 {
		c.Matching = d.Matching
	}
	if c.CallCycles == 0 {
		c.CallCycles = d.CallCycles
	}
	if c.Slots == 0 {
		c.Slots = d.Slots
	}
	if c.Bounces == 0 {
		c.Bounces = d.Bounces
	}
	if c.Limit == 0 {
		c.Limit = d.Limit
	}
	if c.Bulk == 0 {
		c.Bulk = d.Bulk
	}
	return c
}

// validate checks the configuration against the cluster it runs on.
func (c Config) validate(m *machine.Cluster) error {
	mtu := m.Spec.NIC.PMTU
	switch {
	case c.Rails < 0 || c.Rails > m.Spec.Rails():
		return fmt.Errorf("lcp: %d rails, want 1..%d (the NICs of a node)", c.Rails, m.Spec.Rails())
	case c.EagerLimit < 1 || c.EagerLimit > MaxEager:
		return fmt.Errorf("lcp: eager limit %d, want 1..%d", c.EagerLimit, MaxEager)
	case c.FragmentBytes <= 0:
		return fmt.Errorf("lcp: fragment size %d bytes, want a positive multiple of the path MTU (%d)", c.FragmentBytes, mtu)
	case c.FragmentBytes%mtu != 0:
		return fmt.Errorf("lcp: fragment size %d bytes is not a multiple of the path MTU (%d): every fragment but the last must fill whole packets", c.FragmentBytes, mtu)
	case c.ChunkBytes < 1:
		return fmt.Errorf("lcp: work requests of %d bytes", c.ChunkBytes)
	case c.Protocol != RPUT && c.Protocol != RGET:
		return fmt.Errorf("lcp: protocol %d, want rput or rget", c.Protocol)
	case c.Registration != PerFragment && c.Registration != PerNIC:
		return fmt.Errorf("lcp: registration %d, want per-fragment or per-nic", c.Registration)
	case c.Matching != OnPoll && c.Matching != OnArrival:
		return fmt.Errorf("lcp: matching %d, want on-poll or on-arrival", c.Matching)
	case c.Bulk != Cycle && c.Bulk != Batched:
		return fmt.Errorf("lcp: bulk mode %d, want cycle or batched", c.Bulk)
	case c.RegCycles < 0 || c.CallCycles < 0 || c.MatchPS < 0:
		return fmt.Errorf("lcp: negative cost (reg %d cycles, call %d cycles, match %d ps)", c.RegCycles, c.CallCycles, c.MatchPS)
	case c.Slots < 2 || c.Slots > m.Spec.SQSize:
		return fmt.Errorf("lcp: %d receive slots per node, want 2..%d (the QPs' receive queue)", c.Slots, m.Spec.SQSize)
	case c.Bounces < 1:
		return fmt.Errorf("lcp: %d bounce buffers", c.Bounces)
	case len(c.Places) < 2:
		return fmt.Errorf("lcp: %d ranks, want at least 2", len(c.Places))
	case len(c.Places) > maxRanks:
		return fmt.Errorf("lcp: %d ranks, want at most %d (the tag's source field)", len(c.Places), maxRanks)
	}
	used := map[Place]int{}
	for r, p := range c.Places {
		if p.Node < 0 || p.Node >= len(m.Nodes) || p.Core < 0 || p.Core >= m.Spec.Cores {
			return fmt.Errorf("lcp: rank %d at node %d core %d: no such core", r, p.Node, p.Core)
		}
		if q, ok := used[p]; ok {
			return fmt.Errorf("lcp: ranks %d and %d both on node %d core %d (one rank a core)", q, r, p.Node, p.Core)
		}
		used[p] = r
	}
	return nil
}
