// Package collective models the two other networks of Blue Gene/L: the
// collective network, a tree over all nodes whose routers combine the
// packets of a reduction with an integer and bitwise ALU on the way up and
// broadcast the result on the way down; and the global barrier (interrupt)
// network, a wired AND over the same tree.
//
// Every node's routers live in that node's domain (the one its message
// layer runs in: the torus's, when there is one), and every tree edge is a
// pair of sim links, so the networks run on any number of goroutines with
// the same results.
package collective

import "fmt"

// Packet sizes: a collective packet is always 256 bytes, all payload: 32
// words of 64 bits for the ALU.
const (
	PacketBytes = 256
	Words       = PacketBytes / 8
)

// Spec configures the collective and barrier networks; times are in
// cycles of the node clock (700 MHz on Blue Gene/L).
type Spec struct {
	// CyclesPerByte is the link rate per direction (default 2: four bits a
	// cycle, 350 MB/s at 700 MHz).
	CyclesPerByte int
	// WireOverheadBytes is what a packet adds on the wire: operation
	// control and link reliability (default 10: η = 256/266).
	WireOverheadBytes int
	// WireCycles is a tree link's latency (default 16) and RouterCycles a
	// router's, ALU included, from the last input's head to the head
	// leaving (default 24). The paper gives neither; their sum, 40 cycles
	// a hop, is an assumption (docs/bgl.md compares what it gives with the
	// paper's 2.5 µs at 65,536 nodes).
	WireCycles, RouterCycles int
	// BufferPackets is each link's receive buffer in packets (default 4),
	// InjPackets and RecPackets a node's injection and reception FIFOs
	// (default 8 each).
	BufferPackets, InjPackets, RecPackets int
	// BarrierHopCycles is the global barrier network's delay per tree
	// level, each way (default 35: an assumption; see docs/bgl.md).
	BarrierHopCycles int
}

// DefaultSpec is Blue Gene/L's collective and barrier networks.
func DefaultSpec() Spec {
	return Spec{CyclesPerByte: 2, WireOverheadBytes: 10, WireCycles: 16, RouterCycles: 24,
		BufferPackets: 4, InjPackets: 8, RecPackets: 8, BarrierHopCycles: 35}
}

// Validate names the first field out of range and what is allowed.
func (s Spec) Validate() error {
	checks := []struct {
		key     string
		v       int
		min, mx int
	}{
		{"cycles_per_byte", s.CyclesPerByte, 1, 1024},
		{"wire_overhead_bytes", s.WireOverheadBytes, 0, 256},
		{"wire_cycles", s.WireCycles, 1, 1 << 20},
		{"router_cycles", s.RouterCycles, 0, 1 << 20},
		{"buffer_packets", s.BufferPackets, 1, 1024},
		{"inj_packets", s.InjPackets, 1, 1024},
		{"rec_packets", s.RecPackets, 1, 1024},
		{"barrier_hop_cycles", s.BarrierHopCycles, 1, 1 << 20},
	}
	for _, c := range checks {
		if c.v < c.min || c.v > c.mx {
			return fmt.Errorf("collective.%s: %d out of range (%d to %d)", c.key, c.v, c.min, c.mx)
		}
	}
	return nil
}

// PacketCycles is how long a packet occupies a tree link.
func (s Spec) PacketCycles() int { return (PacketBytes + s.WireOverheadBytes) * s.CyclesPerByte }
