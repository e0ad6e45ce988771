// Package bgl models a Blue Gene/L compute node as seed 002 describes it,
// on the torus (package torus): two 700 MHz PowerPC 440 cores (package
// cpu) and the node's memory, and the packet layer the message layer is
// built on: packets written into the torus's injection FIFOs and read from
// its reception FIFOs by the cores' 16-byte loads and stores, polled, and
// peeked at (the header without unloading the packet).
//
// What a packet costs the core is the paper's measurement (L67): reading
// a 256-byte packet into aligned memory about 204 cycles, writing one 50
// cycles from the cache and 100 from main memory. The paper gives these
// for full packets only; that a shorter packet costs its share of the 16
// sixteen-byte accesses is our assumption.
package bgl

import (
	"fmt"

	"github.com/aaemu/aaemu/collective"
	"github.com/aaemu/aaemu/torus"
)

// Spec is a machine of Blue Gene/L nodes on a torus. Every cost is in
// cycles of the node clock (700 MHz).
type Spec struct {
	Torus torus.Spec
	// Collective is the collective and barrier networks' (built only when
	// a run asks for them: Machine.Collective).
	Collective collective.Spec
	// ReadCycles is a full 256-byte packet read from a reception FIFO
	// into 16-byte aligned memory by sixteen 16-byte loads and stores
	// (default 204, L67).
	ReadCycles int
	// WriteCacheCycles and WriteMemoryCycles are a full packet written
	// into an injection FIFO by sixteen 16-byte loads and stores, its data
	// in the L1 cache or in main memory (default 50 and 100, L67).
	WriteCacheCycles, WriteMemoryCycles int
	// StatusCycles is one look at the FIFOs' status (is a packet there,
	// is there room): the paper does not give it; by default the cost of
	// one 16-byte load of a FIFO, ReadCycles/16 rounded up (13).
	StatusCycles int
	// CopyBytesPer10Cycles is the memory copy rate that realigning a
	// packet for a buffer that is not 16-byte aligned costs (default 43:
	// 4.3 B/cycle, the L2 prefetch's rate for large buffers, L70).
	CopyBytesPer10Cycles int
	// InterruptCycles is a hardware interrupt's context switch (default
	// 103, L94).
	InterruptCycles int
	// LineAccessCycles is what a core's load or store of 64 bytes costs
	// in a copy (default 7: a copy, a load and a store per 64 bytes,
	// then runs at 4.3 B/cycle, L70).
	LineAccessCycles int
	// Mode is the node's operating mode (L91): heater (the second core
	// idles; the default), coprocessor or virtual node. The last two need
	// a torus of two FIFO sets (WithMode sets it).
	Mode Mode
	// ScratchpadCycles is one access to the scratchpad, the non-L1-cached
	// memory the two cores coordinate through (L110). The paper does not
	// give it; 10 cycles is our estimate of an uncached access to on-chip
	// SRAM.
	ScratchpadCycles int
	// FlushLineCycles is one dirty 32-byte L1 line written back (dcbf)
	// and InvalidateLineCycles one line invalidated (dcbi): the software
	// coherence of the two non-coherent L1 caches (L74, L111). The paper
	// gives neither: a write-back is a store of 32 bytes, half of what
	// LineAccessCycles charges a 64-byte store (the model's memory rate,
	// L70), 4 cycles; an invalidation moves nothing, 2 cycles (the
	// instruction and its address step). Both are our estimates.
	FlushLineCycles, InvalidateLineCycles int
	// VirtualFIFOChunks is each virtual FIFO's size in 32-byte chunks
	// (virtual node mode, L115). The paper does not give it; 64 chunks
	// (2 KB a direction, eight full packets) is our choice.
	VirtualFIFOChunks int
	// Memory is the memory system the two cores share (the kernels of
	// Figure 5a's stand-in use it; the message layer's costs do not).
	Memory MemorySpec
}

// Mode is a node's operating mode (L24, L75, L91).
type Mode uint8

// The modes.
const (
	// HeaterMode: one process on the main core, the second core idle.
	HeaterMode Mode = iota
	// CoprocessorMode: one process; the second core runs the work units the
	// main core supplies (the rendezvous helper, costart/cojoin).
	CoprocessorMode
	// VirtualNodeMode: a task on each core, each with its own FIFO set.
	VirtualNodeMode
)

func (m Mode) String() string {
	switch m {
	case HeaterMode:
		return "heater"
	case CoprocessorMode:
		return "coprocessor"
	case VirtualNodeMode:
		return "virtual-node"
	}
	return fmt.Sprintf("mode%d", uint8(m))
}

// ParseMode reads a mode's name.
func ParseMode(name string) (Mode, error) {
	for m := HeaterMode; m <= VirtualNodeMode; m++ {
		if m.String() == name {
			return m, nil
		}
	}
	return 0, fmt.Errorf("bgl.mode: %q is not a mode (heater, coprocessor, virtual-node)", name)
}

// Tasks is the number of tasks (MPI ranks) a node runs in mode m: two in
// virtual node mode, one otherwise (L114).
func (m Mode) Tasks() int {
	if m == VirtualNodeMode {
		return 2
	}
	return 1
}

// WithMode is the spec in mode m: coprocessor and virtual node mode give
// each core its own FIFO set (L96), heater mode has one.
func (s Spec) WithMode(m Mode) Spec {
	s.Mode = m
	s.Torus.Groups = 1
	if m != HeaterMode {
		s.Torus.Groups = 2
	}
	return s
}

// DefaultSpec is a machine of x×y×z Blue Gene/L nodes.
func DefaultSpec(x, y, z int) Spec {
	return Spec{
		Torus:            torus.DefaultSpec(x, y, z),
		Collective:       collective.DefaultSpec(),
		ReadCycles:       204,
		WriteCacheCycles: 50, WriteMemoryCycles: 100,
		StatusCycles:         13,
		CopyBytesPer10Cycles: 43,
		InterruptCycles:      103,
		LineAccessCycles:     7,
		ScratchpadCycles:     10,
		FlushLineCycles:      4, InvalidateLineCycles: 2,
		VirtualFIFOChunks: 64,
		Memory:            DefaultMemorySpec(),
	}
}

// Validate checks every field and names the first that is out of range.
func (s Spec) Validate() error {
	if err := s.Torus.Validate(); err != nil {
		return err
	}
	checks := []struct {
		key     string
		v       int
		min, mx int
	}{
		{"read_cycles", s.ReadCycles, 1, 1 << 20},
		{"write_cache_cycles", s.WriteCacheCycles, 1, 1 << 20},
		{"write_memory_cycles", s.WriteMemoryCycles, 1, 1 << 20},
		{"status_cycles", s.StatusCycles, 1, 1 << 20},
		{"copy_bytes_per_10_cycles", s.CopyBytesPer10Cycles, 1, 1 << 20},
		{"interrupt_cycles", s.InterruptCycles, 1, 1 << 20},
		{"line_access_cycles", s.LineAccessCycles, 1, 1 << 20},
		{"scratchpad_cycles", s.ScratchpadCycles, 1, 1 << 20},
		{"flush_line_cycles", s.FlushLineCycles, 0, 1 << 20},
		{"invalidate_line_cycles", s.InvalidateLineCycles, 0, 1 << 20},
		{"virtual_fifo_chunks", s.VirtualFIFOChunks, torus.MaxChunks, 1 << 16},
	}
	for _, c := range checks {
		if c.v < c.min || c.v > c.mx {
			return fmt.Errorf("bgl.%s: %d out of range (%d to %d)", c.key, c.v, c.min, c.mx)
		}
	}
	switch {
	case s.Mode > VirtualNodeMode:
		return fmt.Errorf("bgl.mode: %d is not a mode (heater, coprocessor, virtual-node)", s.Mode)
	case s.Mode != HeaterMode && s.Torus.Groups != 2:
		return fmt.Errorf("bgl.mode: %v needs a torus of two FIFO sets (torus.groups 2), not %d", s.Mode, s.Torus.Groups)
	}
	return s.Memory.Validate()
}

// Lines is the number of 32-byte L1 lines n bytes from addr touch.
func Lines(addr uint64, n int) int {
	if n <= 0 {
		return 0
	}
	return int((addr+uint64(n)+LineBytes-1)/LineBytes - addr/LineBytes)
}

// LineBytes is the L1 line (L74).
const LineBytes = 32

// quads is the number of 16-byte accesses that move a packet of n chunks.
func quads(chunks int) int { return chunks * torus.ChunkBytes / 16 }

// share is a full packet's cost scaled to the 16-byte accesses of a
// packet of n chunks, rounded up.
func share(full, chunks int) int {
	all := quads(torus.MaxChunks)
	return (full*quads(chunks) + all - 1) / all
}

// ReadCost is the cycles reading a packet of n chunks takes.
func (s Spec) ReadCost(chunks int) int { return share(s.ReadCycles, chunks) }

// WriteCost is the cycles writing a packet of n chunks takes, its data in
// the cache or in main memory.
func (s Spec) WriteCost(chunks int, from Source) int {
	if from == FromMemory {
		return share(s.WriteMemoryCycles, chunks)
	}
	return share(s.WriteCacheCycles, chunks)
}

// CopyCost is the cycles copying n bytes in memory takes.
func (s Spec) CopyCost(n int) int {
	return (n*10 + s.CopyBytesPer10Cycles - 1) / s.CopyBytesPer10Cycles
}

// Source is where the data a packet is written from lies.
type Source uint8

const (
	// FromCache: the data is in the core's L1 cache (a small message just
	// written, a header).
	FromCache Source = iota
	// FromMemory: the data comes from main memory (a large buffer).
	FromMemory
)
