package startx

import (
	"fmt"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Spec is an NIU's configuration. The seed gives none of these figures but
// the message format and the priorities; each default says what it is.
type Spec struct {
	ID   tlp.ID // the NIU's requester ID (set by the machine)
	Node int    // the node it sits in (set by the machine)
	BAR  uint64 // where its BAR starts in host physical addresses (set by the machine)
	// TXDepth and RXDepth are each queue's messages: a transmit FIFO, and
	// a receive FIFO (whose free entries are the Arctic link's credits for
	// that priority). Default 8 and 32, assumptions.
	TXDepth, RXDepth int
	// AccessPS is the NIU's time to serve one host access of its BAR: a
	// FIFO push or pop, a register. Default 30 ns, one cycle of a 33 MHz
	// PCI interface (an assumption).
	AccessPS sim.Tick
	// RDMAPacketBytes is the data an RDMA packet carries: default 64, the
	// most an Arctic packet of 24 words holds after its route, length and
	// 64-bit address words, rounded to a cache line.
	RDMAPacketBytes int
	// RDMAReads is the DMA reads the RDMA engine keeps in flight: default
	// 1, an engine that reads the next packet's data when the last one's
	// has come (an assumption).
	RDMAReads int
	// RDMACommands is the RDMA send commands the NIU queues: default 2, so
	// that software can refill one buffer while the other transfers.
	RDMACommands int
	Sizes        pcie.Sizes // MPS, MRRS, RCB of its DMA (default pcie.DefaultSizes)
	// QueueTLPs bounds the TLPs waiting for the link up; the NIU stops
	// taking RDMA packets from the network while it is full. Default 16.
	QueueTLPs int
	// DMAMBps caps the NIU's DMA, reads and writes together, at this many
	// 10^6 bytes per second: the I/O bus it sits on when that is slower
	// than its PCIe link (a Myrinet M2F on a 38 MB/s SBus, seed 000 L40,
	// L53). A DMA of k bytes holds the bus k/DMAMBps; the next waits for
	// it. 0: no cap beyond the link's.
	DMAMBps uint64
	// RDMAFrameBytes, when not 0, makes the RDMA engine store and forward
	// packets of up to this many bytes: it gathers a command's reads into
	// a packet before the packet goes on the line, and the receiver writes
	// a packet to host memory once it has all arrived — as a Myrinet
	// LANai stages a packet in its SRAM, DMA, network, DMA. A multiple of
	// RDMAPacketBytes (which stays the size of a DMA read) up to 64 kB.
	// 0: every read is a packet (the StarT-X NIU, cut through).
	RDMAFrameBytes int
}

// LineSpec is one direction of an Arctic link.
type LineSpec struct {
	// RateMbps is the line rate: default 1200, 150 MB/s, the Arctic link's
	// (ext.: the seed gives no figure).
	RateMbps uint64
	// LatencyPS is the propagation, the routers and the receiver's
	// synchroniser together: default 500 ns, an assumption.
	LatencyPS sim.Tick
}

// DefaultSpec is the StarT-X NIU with the defaults above.
func DefaultSpec() Spec {
	return Spec{TXDepth: 8, RXDepth: 32, AccessPS: 30 * sim.NS, RDMAPacketBytes: 64, RDMAReads: 1, RDMACommands: 2,
		Sizes: pcie.DefaultSizes(), QueueTLPs: 16}
}

// DefaultLineSpec is the Arctic link with the defaults above.
func DefaultLineSpec() LineSpec { return LineSpec{RateMbps: 1200, LatencyPS: 500 * sim.NS} }

// Validate checks a spec.
func (s Spec) Validate() error {
	switch {
	case s.TXDepth < 1 || s.TXDepth > 1024:
		return fmt.Errorf("startx: tx_depth %d: want 1..1024 messages", s.TXDepth)
	case s.RXDepth < 1 || s.RXDepth > 1024:
		return fmt.Errorf("startx: rx_depth %d: want 1..1024 messages", s.RXDepth)
	case s.RDMAPacketBytes < 8 || s.RDMAPacketBytes > 4*(MaxPayloadWords+HeaderWords-rdmaWords) || s.RDMAPacketBytes%8 != 0:
		return fmt.Errorf("startx: rdma_packet_bytes %d: want a multiple of 8 in 8..%d", s.RDMAPacketBytes, 4*(MaxPayloadWords+HeaderWords-rdmaWords))
	case s.RDMAReads < 1 || s.RDMAReads > 32:
		return fmt.Errorf("startx: rdma_reads %d: want 1..32", s.RDMAReads)
	case s.RDMACommands < 1 || s.RDMACommands > 64:
		return fmt.Errorf("startx: rdma_commands %d: want 1..64", s.RDMACommands)
	case s.QueueTLPs < 1:
		return fmt.Errorf("startx: queue_tlps %d: want at least 1", s.QueueTLPs)
	case s.RDMAFrameBytes < 0 || s.RDMAFrameBytes > 64<<10 || (s.RDMAFrameBytes > 0 && s.RDMAFrameBytes%s.RDMAPacketBytes != 0):
		return fmt.Errorf("startx: rdma_frame_bytes %d: want 0 or a multiple of rdma_packet_bytes (%d) up to 65536", s.RDMAFrameBytes, s.RDMAPacketBytes)
	case s.DMAMBps > 1_000_000:
		return fmt.Errorf("startx: dma_mbps %d: want 0 (no cap) to 1000000", s.DMAMBps)
	}
	return s.Sizes.Validate()
}

// Validate checks a line spec.
func (s LineSpec) Validate() error {
	if s.RateMbps == 0 || s.RateMbps > 1_000_000 {
		return fmt.Errorf("startx: line rate %d Mb/s: want 1..1000000", s.RateMbps)
	}
	return nil
}

// The NIU's BAR, in offsets from its base. Each priority has a transmit
// and a receive window a message long; the status registers, the RDMA
// send command and the RDMA receive arm follow.
const (
	txWindow = 0x000 // + 0x100 × priority: stores of a message's words, in order from offset 0
	rxWindow = 0x200 // + 0x100 × priority: loads of the head message; a load reaching its end pops it
	// StatusOffset holds five 32-bit registers: free entries of the high
	// and low transmit FIFOs, messages in the high and low receive FIFOs,
	// and the refused accesses so far.
	StatusOffset = 0x400
	// RDMASendOffset takes a send command, four 64-bit words: destination
	// node, source address, destination address, length. The store that
	// writes the length queues it.
	RDMASendOffset = 0x800
	// RDMASendStatusOffset takes the host address where the NIU writes,
	// as a 64-bit word, the bytes of its send commands it has read so far.
	RDMASendStatusOffset = 0x840
	// RDMAArmOffset arms the receiver, four 64-bit words: the sender's
	// node, the window's base and length, and the host address where the
	// NIU writes the bytes it has received into the window. The store that
	// writes the last word arms it.
	RDMAArmOffset = 0x880
	// BARSize is the NIU's BAR.
	BARSize = 0x1000
)

// TXAddr is where the transmit window of priority p starts in host
// physical addresses.
func (s Spec) TXAddr(p Priority) uint64 { return s.BAR + txWindow + 0x100*uint64(p) }

// RXAddr is where the receive window of priority p starts.
func (s Spec) RXAddr(p Priority) uint64 { return s.BAR + rxWindow + 0x100*uint64(p) }
