package nic

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// SRAMOffset is the offset in the BAR of the NIC's device memory, after the
// doorbells (send queue, receive queue, CQ arm) that fill the BAR's first
// megabyte.
const SRAMOffset = 0x10_0000

// MaxSRAMBytes bounds the device memory: the BAR stays within 128 MB, and
// at the machine's BAR base below the interrupt window.
const MaxSRAMBytes = 64 << 20

// DefaultSRAMBytes is the device memory of the default NIC: 256 KB, as the
// SRAM of a Myrinet M2F NIC (seed 000).
const DefaultSRAMBytes = 256 << 10

// DefaultSRAMAccessPS is the default NIC's time to answer a host access to
// its device memory: an assumption (no source gives one for an Ethernet
// RDMA NIC), a few cycles of an on-chip SRAM behind the NIC's PCIe core.
const DefaultSRAMAccessPS = 50 * sim.NS

// BARSize is the NIC's BAR: the doorbells and the device memory, rounded up
// to a power of two as BARs are.
func (s Spec) BARSize() uint64 {
	size := uint64(1)
	for size < SRAMOffset+uint64(s.SRAMBytes) {
		size <<= 1
	}
	return size
}

// SRAMAddr is where the NIC's device memory starts in host physical
// addresses: the host's uncached loads and stores go there.
func (n *NIC) SRAMAddr() uint64 { return n.spec.BAR + SRAMOffset }

// SRAM is the NIC's device memory: what the host reaches with uncached
// loads and stores through the BAR (each answered after the NIC's access
// time, one at a time, in the order they arrive), and what the NIC's own
// engines — firmware, the message layers' NIC models — read and write
// directly with these methods, at no cost (they cost it themselves).
// Offsets count from the start of the device memory; an access outside it
// panics.
type SRAM struct {
	size int
	b    []byte // allocated on the first write
}

// SRAM is the NIC's device memory.
func (n *NIC) SRAM() *SRAM { return &n.sram }

// Size is the device memory's size in bytes.
func (s *SRAM) Size() int { return s.size }

func (s *SRAM) check(off uint64, n int) {
	if off > uint64(s.size) || uint64(n) > uint64(s.size)-off {
		panic(fmt.Sprintf("nic: device memory access of %d bytes at %#x: outside its %d bytes", n, off, s.size))
	}
}

// Read copies device memory at off into b.
func (s *SRAM) Read(off uint64, b []byte) {
	s.check(off, len(b))
	if s.b == nil {
		clear(b)
		return
	}
	copy(b, s.b[off:])
}

// Write copies b into device memory at off.
func (s *SRAM) Write(off uint64, b []byte) {
	s.check(off, len(b))
	if len(b) == 0 {
		return
	}
	if s.b == nil {
		s.b = make([]byte, s.size)
	}
	copy(s.b[off:], b)
}

// Load32 reads the little-endian 32-bit word at off.
func (s *SRAM) Load32(off uint64) uint32 {
	var b [4]byte
	s.Read(off, b[:])
	return binary.LittleEndian.Uint32(b[:])
}

// Store32 writes v as a little-endian 32-bit word at off.
func (s *SRAM) Store32(off uint64, v uint32) {
	s.Write(off, binary.LittleEndian.AppendUint32(nil, v))
}

// Load64 reads the little-endian 64-bit word at off.
func (s *SRAM) Load64(off uint64) uint64 {
	var b [8]byte
	s.Read(off, b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// Store64 writes v as a little-endian 64-bit word at off.
func (s *SRAM) Store64(off uint64, v uint64) {
	s.Write(off, binary.LittleEndian.AppendUint64(nil, v))
}

// hostRead reads n bytes at BAR offset off for a host read: device memory
// where it has some, zeros elsewhere (the doorbells read as zero).
func (s *SRAM) hostRead(off uint64, n int) []byte {
	b := make([]byte, n)
	if off+uint64(n) <= SRAMOffset || s.b == nil {
		return b
	}
	for i := range b {
		if a := off + uint64(i); a >= SRAMOffset && a-SRAMOffset < uint64(s.size) {
			b[i] = s.b[a-SRAMOffset]
		}
	}
	return b
}

// hostWrite stores a host write's bytes at BAR offset off; bytes outside
// the device memory are dropped.
func (s *SRAM) hostWrite(off uint64, data []byte) {
	for i, v := range data {
		if a := off + uint64(i); a >= SRAMOffset && a-SRAMOffset < uint64(s.size) {
			if s.b == nil {
				s.b = make([]byte, s.size)
			}
			s.b[a-SRAMOffset] = v
		}
	}
}

// inSRAM reports whether BAR offset off is in the device memory window
// (past the doorbells).
func inSRAM(off uint64) bool { return off >= SRAMOffset }

// hostAccesses serves the host's accesses to the BAR in the order they
// came: a read or write of the device memory takes the device's access
// time, one after the other (a read is answered when it ends, its
// completions queued behind the NIC's earlier writes to the host); a
// doorbell that came after one is rung when its turn comes, so that it
// never passes a store before it.
func (n *NIC) hostAccesses(now sim.Tick) {
	for n.hostQ.Len() > 0 {
		p := n.hostQ.Front()
		t := &p.TLP
		off := t.Addr - n.spec.BAR
		if t.Kind == tlp.MWr && !inSRAM(off+uint64(t.FirstByteOffset())) {
			d := n.hostQ.Pop()
			n.doorbell(&d, now)
			continue
		}
		if n.accessEnd == 0 {
			n.accessEnd = now + n.spec.SRAMAccessPS
		}
		if n.accessEnd > now {
			return
		}
		n.accessEnd = 0
		n.hostCounters()
		if t.Kind == tlp.MWr {
			if !(t.Length == 1 && t.FirstBE == 0) { // a zero-length write stores nothing
				fb := t.FirstByteOffset()
				n.sram.hostWrite(off+uint64(fb), t.Data[fb:fb+t.EnabledBytes()])
			}
			n.stSRAMWrites.Inc()
			n.hostQ.Pop()
			continue
		}
		n.stSRAMReads.Inc()
		for _, c := range n.spec.Sizes.SplitCompletions(t, n.spec.ID, func(a uint64, k int) []byte {
			return n.sram.hostRead(a-n.spec.BAR, k)
		}) {
			n.sendTLP(c, n.u.Engine().NewTxn(p.ID, "tlp.CplD", n.name))
		}
		n.hostQ.Pop()
	}
}

// hostCounters declares the device memory's statistics on its first host
// access, so that the statistics of runs without any stay as they were.
func (n *NIC) hostCounters() {
	if n.stSRAMReads != nil {
		return
	}
	st := n.u.Engine().Stats()
	n.stSRAMReads = st.Counter(n.name+".sram_reads", "TLPs", "host reads (uncached loads) of the NIC's BAR answered")
	n.stSRAMWrites = st.Counter(n.name+".sram_writes", "TLPs", "host writes (uncached stores) into the NIC's device memory")
}

// fromHostBAR takes a host request to the BAR: a doorbell is rung at once
// unless device-memory accesses wait before it; everything else waits its
// turn (hostAccesses).
func (n *NIC) fromHostBAR(p *pcie.Packet, now sim.Tick) {
	t := &p.TLP
	if t.Kind == tlp.MWr && n.hostQ.Len() == 0 && !inSRAM(t.Addr+uint64(t.FirstByteOffset())-n.spec.BAR) {
		n.doorbell(p, now)
		return
	}
	n.hostQ.Push(*p)
}
