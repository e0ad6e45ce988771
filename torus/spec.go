package torus

import (
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Virtual channels of a link, as the Blue Gene/L torus has them: two
// dynamic (adaptive) channels, the deterministic escape channel governed by
// the bubble rule, and a high-priority channel.
const (
	VCDynamic0 = 0
	VCDynamic1 = 1
	VCEscape   = 2
	VCPriority = 3
	NumVCs     = 4
)

// Packet sizes: a packet is 1 to 8 chunks of 32 bytes; the first 16 bytes
// are the header (8 bytes the router reads, 8 the software's), so at most
// 240 bytes are payload.
const (
	ChunkBytes     = 32
	MaxChunks      = 8
	MaxPacketBytes = ChunkBytes * MaxChunks // 256
	HeaderBytes    = 16
	HWHeaderBytes  = 8
	SoftHeaderSize = HeaderBytes - HWHeaderBytes
	MaxPayload     = MaxPacketBytes - HeaderBytes // 240
)

// Spec is a torus network's configuration. Every time is in cycles of the
// node clock (700 MHz on Blue Gene/L).
type Spec struct {
	// Dims is the size of the torus in x, y and z (1 to 256 each; the
	// full machine is 64×32×32).
	Dims [3]int
	// Mesh makes every dimension open (no wrap-around links): a mesh, as a
	// partition smaller than a midplane is.
	Mesh bool
	// ClockMHz is the node clock (default 700). Its period is rounded to a
	// whole picosecond (1429 ps at 700 MHz).
	ClockMHz uint64
	// CyclesPerByte is the raw link rate, in clock cycles per byte and
	// direction (default 4: two bits per cycle, 0.25 B/cycle, 175 MB/s).
	CyclesPerByte int
	// BytesPerCycle, above 1, is a link faster than a byte a cycle: that
	// many bytes a cycle and direction (a divisor of the 32-byte chunk: 2,
	// 4, 8, 16 or 32), CyclesPerByte then 1. 0 or 1: CyclesPerByte sets
	// the rate (Blue Gene/L's links). A Gemini-class link of several GB/s
	// is a few bytes a cycle of a GHz-class router clock.
	BytesPerCycle int
	// WireOverheadBytes is what a packet adds on the wire beyond its
	// chunks: CRC, link sequence number and acknowledgement (default 14:
	// 270 wire bytes for a 256-byte packet, η = 240/270).
	WireOverheadBytes int
	// WireCycles is the latency of a link from the first byte leaving one
	// router to its arrival at the next (cable and serdes; default 32).
	WireCycles int
	// RouterCycles is a router's pipeline from a packet's head arriving to
	// its head leaving on an idle output (default 31). With WireCycles
	// it makes the hop latency, 63 cycles = 90 ns by default: the paper
	// measures 90 ns per hop and gives no split, so the split is an
	// assumption and the sum a calibration.
	RouterCycles int
	// VCChunks is the buffer of each virtual channel of an input port, in
	// 32-byte chunks (tokens), by channel (default 32 each: 1 KB). A
	// dynamic channel needs room for a full packet (8), the escape and
	// high-priority channels for two (16: the bubble).
	VCChunks [NumVCs]int
	// InjFIFOs and InjPriorityFIFOs are the injection FIFOs the message
	// layer writes packets into: normal ones and high-priority ones
	// (default 6 and 2).
	InjFIFOs, InjPriorityFIFOs int
	// InjChunks and RecChunks are the size of each injection and
	// reception FIFO in chunks (default 32: 1 KB).
	InjChunks, RecChunks int
	// LocalCyclesPerChunk is how long the router takes to move a chunk
	// into a reception FIFO (default 8: 4 bytes per cycle).
	LocalCyclesPerChunk int
	// Groups is the number of disjoint FIFO sets (default 1): with 2, as
	// in coprocessor and virtual node mode (L96), each core has its own
	// InjFIFOs + InjPriorityFIFOs injection FIFOs and its own reception
	// FIFOs, and a packet's Group names the set it is received into.
	Groups int
	// Selection is how a minimal adaptive packet chooses among the
	// dynamic channels that have room for it (SelectTokens by default).
	// The paper does not say how the hardware chooses; each is an
	// assumption.
	Selection Selection
}

// Selection is a minimal adaptive packet's choice, at a hop, among the
// dynamic channels of the dimensions it has hops left in that are free
// and have room for it. The escape channel, taken when none has, and the
// bubble rule are the same under every selection, so none can deadlock.
type Selection uint8

const (
	// SelectTokens takes the channel with the most tokens, ties to the
	// lowest dimension: the router as modelled.
	SelectTokens Selection = iota
	// SelectXFirst takes the lowest dimension with hops left that has a
	// channel with room (the one with more tokens): a packet goes along x
	// while it can, as dimension order does, and turns only when x is busy
	// or full. In a mesh it tends to cross the middle of x at its source's
	// (y, z).
	SelectXFirst
	// SelectXLast takes the highest dimension with hops left that has a
	// channel with room: z, then y, then x, so a packet tends to cross the
	// middle of x at its destination's (y, z).
	SelectXLast
	// SelectHops takes the dimension with the most hops left (ties: the
	// most tokens, then the lowest dimension): a packet keeps its
	// remaining box square.
	SelectHops
	numSelections
)

var selectionNames = [...]string{"tokens", "xfirst", "xlast", "hops"}

func (s Selection) String() string {
	if s < numSelections {
		return selectionNames[s]
	}
	return fmt.Sprintf("selection%d", uint8(s))
}

// ParseSelection is the selection called name.
func ParseSelection(name string) (Selection, error) {
	for i, n := range selectionNames {
		if n == name {
			return Selection(i), nil
		}
	}
	return 0, fmt.Errorf("%q is not a selection (%s)", name, SelectionNames)
}

// SelectionNames lists the selections, as ParseSelection takes them.
const SelectionNames = "tokens, xfirst, xlast or hops"

// DefaultSpec is a Blue Gene/L torus of the given size.
func DefaultSpec(x, y, z int) Spec {
	return Spec{
		Dims:              [3]int{x, y, z},
		ClockMHz:          700,
		CyclesPerByte:     4,
		WireOverheadBytes: 14,
		WireCycles:        32,
		RouterCycles:      31,
		VCChunks:          [NumVCs]int{32, 32, 32, 32},
		InjFIFOs:          6, InjPriorityFIFOs: 2,
		InjChunks: 32, RecChunks: 32,
		LocalCyclesPerChunk: 8,
		Groups:              1,
	}
}

// Validate checks every field and names the first that is out of range
// with what is allowed.
func (s Spec) Validate() error {
	for i, d := range s.Dims {
		if d < 1 || d > 256 {
			return fmt.Errorf("torus.dims.%c: %d out of range (1 to 256)", "xyz"[i], d)
		}
	}
	if n := s.Dims[0] * s.Dims[1] * s.Dims[2]; n < 2 {
		return fmt.Errorf("torus.dims: %d×%d×%d is one node (want at least 2)", s.Dims[0], s.Dims[1], s.Dims[2])
	} else if n > 65536 {
		return fmt.Errorf("torus.dims: %d nodes (at most 65536)", n)
	}
	if s.ClockMHz == 0 || s.ClockMHz > 1_000_000 {
		return fmt.Errorf("torus.clock_mhz: %d out of range (1 to 1000000)", s.ClockMHz)
	}
	checks := []struct {
		key     string
		v       int
		min, mx int
	}{
		{"cycles_per_byte", s.CyclesPerByte, 1, 1024},
		{"wire_overhead_bytes", s.WireOverheadBytes, 0, 256},
		{"wire_cycles", s.WireCycles, 1, 1 << 20},
		{"router_cycles", s.RouterCycles, 0, 1 << 20},
		{"vc_chunks.dynamic0", s.VCChunks[VCDynamic0], MaxChunks, 4096},
		{"vc_chunks.dynamic1", s.VCChunks[VCDynamic1], MaxChunks, 4096},
		{"vc_chunks.escape", s.VCChunks[VCEscape], 2 * MaxChunks, 4096},
		{"vc_chunks.priority", s.VCChunks[VCPriority], 2 * MaxChunks, 4096},
		{"inj_fifos", s.InjFIFOs, 1, 64},
		{"inj_priority_fifos", s.InjPriorityFIFOs, 0, 64},
		{"inj_chunks", s.InjChunks, MaxChunks, 1 << 16},
		{"rec_chunks", s.RecChunks, MaxChunks, 1 << 16},
		{"local_cycles_per_chunk", s.LocalCyclesPerChunk, 1, 1 << 16},
		{"groups", s.Groups, 1, MaxGroups},
	}
	for _, c := range checks {
		if c.v < c.min || c.v > c.mx {
			return fmt.Errorf("torus.%s: %d out of range (%d to %d)", c.key, c.v, c.min, c.mx)
		}
	}
	if s.Selection >= numSelections {
		return fmt.Errorf("torus.selection: %d out of range (0 to %d: %s)", s.Selection, numSelections-1, SelectionNames)
	}
	if n := s.Groups * s.GroupInj(); n > 128 {
		return fmt.Errorf("torus.groups: %d sets of %d injection FIFOs make %d (at most 128)", s.Groups, s.GroupInj(), n)
	}
	if b := s.BytesPerCycle; b < 0 || b > ChunkBytes || b > 0 && ChunkBytes%b != 0 {
		return fmt.Errorf("torus.bytes_per_cycle: %d is not 0, 1, 2, 4, 8, 16 or 32 (a divisor of the 32-byte chunk)", b)
	} else if b > 1 && s.CyclesPerByte != 1 {
		return fmt.Errorf("torus.cycles_per_byte: %d with bytes_per_cycle %d (1 when a link moves more than a byte a cycle)", s.CyclesPerByte, b)
	}
	return nil
}

// MaxGroups is the most FIFO sets a node has: one per core.
const MaxGroups = 2

// GroupInj is the number of injection FIFOs of one set.
func (s Spec) GroupInj() int { return s.InjFIFOs + s.InjPriorityFIFOs }

// Nodes is the number of nodes.
func (s Spec) Nodes() int { return s.Dims[0] * s.Dims[1] * s.Dims[2] }

// Period is the node clock's period.
func (s Spec) Period() sim.Tick {
	p, _ := sim.NearestPeriodOfMHz(s.ClockMHz)
	return p
}

// WireBytes is what a packet of n chunks puts on a link.
func (s Spec) WireBytes(chunks int) int { return chunks*ChunkBytes + s.WireOverheadBytes }

// PacketCycles is how long a packet of n chunks occupies a link: whole
// cycles, its last cycle partly filled on a link of several bytes a cycle.
func (s Spec) PacketCycles(chunks int) int {
	if b := s.BytesPerCycle; b > 1 {
		return (s.WireBytes(chunks) + b - 1) / b
	}
	return s.WireBytes(chunks) * s.CyclesPerByte
}

// ChunkCycles is how long a 32-byte chunk takes on a link.
func (s Spec) ChunkCycles() int {
	if b := s.BytesPerCycle; b > 1 {
		return ChunkBytes / b
	}
	return ChunkBytes * s.CyclesPerByte
}

// HopCycles is a packet head's latency through one router and link when
// nothing is in its way.
func (s Spec) HopCycles() int { return s.WireCycles + s.RouterCycles }

// wraps reports whether dimension d has wrap-around links: a torus
// dimension of more than two nodes. (With two nodes both neighbours are
// the same node: one link pair, as a mesh.)
func (s Spec) wraps(d int) bool { return !s.Mesh && s.Dims[d] > 2 }
