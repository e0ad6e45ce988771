package bgl

import (
	"fmt"
	"math/bits"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// MemorySpec is the memory system the node's two cores share (L32, L114:
// the 4 MB L3 is shared, the DDR split evenly in virtual node mode, which
// splits its capacity, not its bandwidth). Only the L3's size is in the
// paper; the rest are our assumptions, stated where they are set.
type MemorySpec struct {
	// L3Bytes is the shared L3 of embedded DRAM (default 4 MB, L32).
	L3Bytes int
	// L3LineBytes and L3Ways are its line and associativity (defaults 128
	// and 8: assumptions; the paper gives neither).
	L3LineBytes, L3Ways int
	// L3BytesPerCycle is the L3's port, shared by the two cores (default
	// 16: an assumption, above one core's stream rate of 64 bytes per
	// LineAccessCycles, so that one core alone is limited by its own
	// stream, as L70 says, and two streaming at once share the port).
	L3BytesPerCycle int
	// DDRBytesPerCycle is the DDR's bandwidth, shared by the two cores
	// (default 8: 5.6 GB/s at 700 MHz, an assumption).
	DDRBytesPerCycle int
	// FlopsPerCycle is one core's peak: its dual FPU's two fused
	// multiply–adds a cycle (default 4: 2.8 Gflop/s at 700 MHz, L33).
	FlopsPerCycle int
	// BlockBytes is the part of a sweep that is one operation of the core
	// (default 16 KB): the two cores' sweeps interleave in the L3 at this
	// granularity.
	BlockBytes int
}

// DefaultMemorySpec is the memory system above.
func DefaultMemorySpec() MemorySpec {
	return MemorySpec{L3Bytes: 4 << 20, L3LineBytes: 128, L3Ways: 8, L3BytesPerCycle: 16, DDRBytesPerCycle: 8, FlopsPerCycle: 4, BlockBytes: 16 << 10}
}

// Validate names the first field out of range.
func (s MemorySpec) Validate() error {
	for _, c := range []struct {
		key     string
		v       int
		min, mx int
	}{
		{"l3_bytes", s.L3Bytes, 1 << 10, 1 << 30},
		{"l3_line_bytes", s.L3LineBytes, 32, 4096},
		{"l3_ways", s.L3Ways, 1, 64},
		{"l3_bytes_per_cycle", s.L3BytesPerCycle, 1, 1 << 10},
		{"ddr_bytes_per_cycle", s.DDRBytesPerCycle, 1, 1 << 10},
		{"flops_per_cycle", s.FlopsPerCycle, 1, 64},
		{"block_bytes", s.BlockBytes, 128, 1 << 24},
	} {
		if c.v < c.min || c.v > c.mx {
			return fmt.Errorf("bgl.memory.%s: %d out of range (%d to %d)", c.key, c.v, c.min, c.mx)
		}
	}
	if s.L3LineBytes&(s.L3LineBytes-1) != 0 {
		return fmt.Errorf("bgl.memory.l3_line_bytes: %d (a power of two)", s.L3LineBytes)
	}
	if sets := s.L3Bytes / (s.L3LineBytes * s.L3Ways); sets < 1 || sets*s.L3LineBytes*s.L3Ways != s.L3Bytes {
		return fmt.Errorf("bgl.memory.l3_bytes: %d is not a whole number of sets of %d ways of %d-byte lines", s.L3Bytes, s.L3Ways, s.L3LineBytes)
	}
	return nil
}

// MemorySystem is a node's shared L3 (set-associative, least recently
// used, write-back) and the two ports the cores share: the L3's and the
// DDR's. A core sweeping memory (Sweep) pays, per block, the longest of
// its computation, its own stream (64 bytes per LineAccessCycles, the
// paper's copy rate, L70) and its transfers through the shared ports,
// which serve the two cores' blocks in the order they come: the
// prefetching overlaps computation and memory, and a core waits only for
// what the overlap does not hide (a roofline per block).
type MemorySystem struct {
	nd     *Node
	spec   *Spec
	sets   int
	tags   []uint64 // per set and way: line number + 1 (0: empty)
	used   []uint64 // per set and way: when last used (the LRU's clock)
	dirty  []bool
	clock  uint64
	l3, dd port

	Stats MemoryStats
}

// MemoryStats counts the L3's hits and misses and the DDR's traffic.
type MemoryStats struct {
	Hits, Misses, Writebacks uint64
	// StallCycles is the time cores waited for memory beyond their
	// computation.
	StallCycles uint64
}

// port is a resource moving bpc bytes a cycle, one transfer after
// another, in the order they are asked for.
type port struct {
	period sim.Tick
	bpc    int
	free   sim.Tick
}

// reserve queues n bytes from t and returns when they have moved.
func (q *port) reserve(t sim.Tick, n int) sim.Tick {
	start := max(t, q.free)
	q.free = start + (sim.Tick(n)*q.period+sim.Tick(q.bpc)-1)/sim.Tick(q.bpc)
	return q.free
}

func newMemorySystem(nd *Node, spec *Spec) *MemorySystem {
	ms := spec.Memory
	sets := ms.L3Bytes / (ms.L3LineBytes * ms.L3Ways)
	period := spec.Torus.Period()
	return &MemorySystem{nd: nd, spec: spec, sets: sets,
		l3: port{period: period, bpc: ms.L3BytesPerCycle}, dd: port{period: period, bpc: ms.DDRBytesPerCycle}}
}

// touch looks line ln up in the L3 (allocating the arrays on first use:
// a node that never sweeps costs nothing), fills it on a miss and marks it
// written; it reports whether it hit and whether the fill evicted a dirty
// line.
func (m *MemorySystem) touch(ln uint64, write bool) (hit, writeback bool) {
	ways := m.spec.Memory.L3Ways
	if m.tags == nil {
		m.tags = make([]uint64, m.sets*ways)
		m.used = make([]uint64, m.sets*ways)
		m.dirty = make([]bool, m.sets*ways)
	}
	m.clock++
	base := int(ln%uint64(m.sets)) * ways
	victim := base
	for w := base; w < base+ways; w++ {
		if m.tags[w] == ln+1 {
			m.used[w] = m.clock
			m.dirty[w] = m.dirty[w] || write
			return true, false
		}
		if m.used[w] < m.used[victim] {
			victim = w
		}
	}
	writeback = m.tags[victim] != 0 && m.dirty[victim]
	m.tags[victim], m.used[victim], m.dirty[victim] = ln+1, m.clock, write
	return false, writeback
}

// Sweep is a kernel's pass over n bytes at addr by process p, doing flops
// floating-point operations spread evenly over them; write says whether
// it writes the lines it reads (an update in place), which makes them
// dirty in the L3. Each block of BlockBytes is one operation of the core
// lasting the longest of: its flops at FlopsPerCycle, the core's own
// stream, its bytes through the shared L3 port, and its misses' lines
// (with the dirty lines they evict) through the shared DDR port.
func (m *MemorySystem) Sweep(p *cpu.Proc, addr uint64, n int, flops int64, write bool) error {
	if n < 0 || flops < 0 {
		return fmt.Errorf("bgl: node %d: sweep of %d bytes and %d flops", m.nd.Index, n, flops)
	}
	if p.Core() != m.nd.Cores[0] && p.Core() != m.nd.Cores[1] {
		return fmt.Errorf("bgl: node %d: sweep by %s, not one of the node's cores", m.nd.Index, p.Name())
	}
	ms := m.spec.Memory
	line := uint64(ms.L3LineBytes)
	period := m.spec.Torus.Period()
	var done int64
	for off := 0; off < n; off += ms.BlockBytes {
		b := min(ms.BlockBytes, n-off)
		// The block's share of the flops, so that the blocks add up
		// (flops × bytes so far ÷ bytes, in 128 bits).
		ph, pl := bits.Mul64(uint64(flops), uint64(off+b))
		q, _ := bits.Div64(ph, pl, uint64(n))
		f := int64(q) - done
		done += f
		lo, hi := (addr+uint64(off))/line, (addr+uint64(off+b)+line-1)/line
		misses, wbs := 0, 0
		for ln := lo; ln < hi; ln++ {
			hit, wb := m.touch(ln, write)
			if !hit {
				misses++
			}
			if wb {
				wbs++
			}
		}
		m.Stats.Hits += uint64(int(hi-lo) - misses)
		m.Stats.Misses += uint64(misses)
		m.Stats.Writebacks += uint64(wbs)
		now := p.Now()
		compute := int((f + int64(ms.FlopsPerCycle) - 1) / int64(ms.FlopsPerCycle))
		end := now + sim.Tick(compute)*period
		stream := now + sim.Tick((b*m.spec.LineAccessCycles+63)/64)*period
		end = max(end, stream, m.l3.reserve(now, b))
		if misses+wbs > 0 {
			end = max(end, m.dd.reserve(now, (misses+wbs)*ms.L3LineBytes))
		}
		cycles := int((end - now + period - 1) / period)
		m.Stats.StallCycles += uint64(cycles - compute)
		p.Compute(cycles)
	}
	return nil
}
