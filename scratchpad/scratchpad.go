// Package scratchpad models the small on-chip memory next to a CPU that the
// IOMMU writes directly: it holds the mirrors of access-log tails for the
// scratchpad (SP) notification mode, read by the polling hyperthread at the
// cost of a scratchpad access instead of a memory access.
package scratchpad

import (
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/sim"
)

// Scratchpad holds Slots 64-bit words written by the IOMMU's scratchpad port.
type Scratchpad struct {
	u     *sim.Unit
	In    *sim.Chan[iommu.SPWrite]
	words []uint64
	wr    *sim.Counter
	// OnWrite, when set, runs at every write of a slot (after it), with
	// the slot: the polling hyperthread that reads it may sleep until then.
	OnWrite func(slot int)
}

// New places a scratchpad of slots words in clk, fed by the IOMMU unit src.
func New(clk *sim.Clock, name string, slots int, src *sim.Unit) *Scratchpad {
	s := &Scratchpad{words: make([]uint64, slots)}
	s.u = clk.Add(name, s)
	s.In = sim.NewChan[iommu.SPWrite](src, s.u, name+".port", 4)
	s.wr = s.u.Engine().Stats().Counter(name+".writes", "writes", "tail mirrors written by the IOMMU")
	for i := 0; i < slots && i < 8; i++ {
		i := i
		s.u.Probe("slot"+string(rune('0'+i)), 32, func() (uint64, bool) { return s.words[i] & 0xffffffff, true })
	}
	return s
}

// Tick stores what the IOMMU wrote.
func (s *Scratchpad) Tick(sim.Tick) bool {
	for s.In.Valid() {
		w := s.In.Recv()
		if int(w.Slot) < len(s.words) {
			s.words[w.Slot] = w.Tail
			s.wr.Inc()
			if s.OnWrite != nil {
				s.OnWrite(int(w.Slot))
			}
		}
	}
	return false
}

// Slots is the number of slots.
func (s *Scratchpad) Slots() int { return len(s.words) }

// Read returns slot i. The caller (the polling hyperthread) pays the
// scratchpad access time.
func (s *Scratchpad) Read(i int) uint64 { return s.words[i] }
