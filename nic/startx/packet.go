package startx

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Message format. A PIO message is HeaderWords 32-bit header words and
// MinPayloadWords to MaxPayloadWords payload words (001:L40). Header word 0
// carries the route and the length; word 1 is the sender's own (MPI-StarT
// puts its envelope there). Word 0's layout (aaemu's; the seed gives none):
//
//	bits  0..15  destination node on transmit, source node on receive
//	bits 24..28  payload length in words (2..22)
//	bit  31      valid: set by the NIU in a receive FIFO's head, so an
//	             empty FIFO reads as zero
const (
	HeaderWords     = 2
	MinPayloadWords = 2
	MaxPayloadWords = 22
	// MaxMessageBytes is the longest message: 24 words.
	MaxMessageBytes = 4 * (HeaderWords + MaxPayloadWords)

	lenShift  = 24
	lenMask   = 0x1f
	nodeMask  = 0xffff
	validBit  = 1 << 31
	crcBytes  = 4 // Arctic's CRC word after every packet (an assumption on its framing)
	rdmaWords = 4 // an RDMA packet's header: route, length, and the 64-bit address
)

// Priority selects a queue pair.
type Priority int

// The two queue pairs.
const (
	High Priority = iota
	Low
)

func (p Priority) String() string {
	if p == High {
		return "high"
	}
	return "low"
}

// Header0 builds header word 0 for a message of payload words to node dst.
func Header0(dst, payload int) uint32 {
	return uint32(dst&nodeMask) | uint32(payload&lenMask)<<lenShift
}

// PayloadWords is the length field of header word 0.
func PayloadWords(h0 uint32) int { return int(h0 >> lenShift & lenMask) }

// Node is the node field of header word 0 (destination on transmit, source
// on receive).
func Node(h0 uint32) int { return int(h0 & nodeMask) }

// Valid reports whether header word 0, read from a receive FIFO, heads a
// message (an empty FIFO reads as zero).
func Valid(h0 uint32) bool { return h0&validBit != 0 }

// CheckLength refuses a payload length outside the message format.
func CheckLength(payload int) error {
	if payload < MinPayloadWords || payload > MaxPayloadWords {
		return fmt.Errorf("startx: message of %d payload words: want %d to %d (two header words and 8 to 88 bytes)",
			payload, MinPayloadWords, MaxPayloadWords)
	}
	return nil
}

// Packet is what crosses the Arctic network: a PIO message, or an RDMA data
// packet (Data at Addr of the receiver's memory).
type Packet struct {
	sim.Txn
	Src, Dst int
	Pri      Priority
	Words    []uint32 // a PIO message: header and payload
	RDMA     bool
	Addr     uint64
	Data     []byte
}

// Bytes is the packet's size on the line: its words (or an RDMA packet's
// header and data) and the CRC word.
func (p *Packet) Bytes() int {
	if p.RDMA {
		return 4*rdmaWords + len(p.Data) + crcBytes
	}
	return 4*len(p.Words) + crcBytes
}

// EncodeMessage lays out a message's words as the FIFO holds them, little
// endian, for a message of payload to dst: the bytes the CPU stores.
func EncodeMessage(dst int, h1 uint32, payload []uint32) []byte {
	b := make([]byte, 0, 4*(HeaderWords+len(payload)))
	b = binary.LittleEndian.AppendUint32(b, Header0(dst, len(payload)))
	b = binary.LittleEndian.AppendUint32(b, h1)
	for _, w := range payload {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// rxBytes is a received message as the receive FIFO shows it: word 0 with
// the source node and the valid bit.
func (p *Packet) rxBytes() []byte {
	b := make([]byte, 4*len(p.Words))
	h0 := p.Words[0]&^nodeMask | uint32(p.Src&nodeMask) | validBit
	binary.LittleEndian.PutUint32(b, h0)
	for i, w := range p.Words[1:] {
		binary.LittleEndian.PutUint32(b[4+4*i:], w)
	}
	return b
}
