// Package record is the byte layout of an access-log record, defined once:
// the IOMMU writes it, handlers and tools decode it. It is a leaf package.
//
// A record is a 32-byte header followed by the logged data padded to a
// multiple of 8 bytes. All fields are little-endian, as the host CPU reads
// them.
//
//	offset size field
//	0      1    Kind: 0 PAD, 1 PUT, 2 GET, 3 ATOMIC
//	1      1    Flags: bit 0 DATA (data follows), bit 1 BLOCKED (the access
//	            was not performed: memory not written / no data returned)
//	2      2    IUID (10 bits)
//	4      2    requester ID (bus[15:8] device[7:3] function[2:0])
//	6      2    PCIe tag (10 bits)
//	8      8    IO virtual address of the first byte accessed
//	16     4    byte length of the access
//	20     4    data length: bytes of data that follow the header
//	24     8    sequence number: 0, 1, 2, … per access log (PAD records too)
//	32     …    data, then zero padding up to a multiple of 8
//
// A PAD record fills the space from its position to the end of the ring when
// the next record does not fit there; its byte length is the size of that
// space, header included, and it carries no data. When less than a header's
// size remains before the end of the ring, there is no PAD record: a reader
// skips to the base (SkipAtEnd).
package record

import (
	"encoding/binary"
	"fmt"
)

// HeaderSize is the size of a record header in bytes.
const HeaderSize = 32

// SkipAtEnd returns how many bytes a reader at offset pos of a ring of size
// bytes skips before the next record: the rest of the ring when it is too
// short for a header, else 0.
func SkipAtEnd(pos, size uint64) uint64 {
	if rest := size - pos%size; rest < HeaderSize {
		return rest
	}
	return 0
}

// Kind of a record.
type Kind uint8

// Record kinds.
const (
	Pad    Kind = 0
	Put    Kind = 1
	Get    Kind = 2
	Atomic Kind = 3
)

func (k Kind) String() string {
	switch k {
	case Pad:
		return "PAD"
	case Put:
		return "PUT"
	case Get:
		return "GET"
	case Atomic:
		return "ATOMIC"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Flags.
const (
	FlagData    uint8 = 1 << 0
	FlagBlocked uint8 = 1 << 1
)

// Header is a decoded record header.
type Header struct {
	Kind      Kind
	Flags     uint8
	IUID      uint16
	Requester uint16
	Tag       uint16
	IOVA      uint64
	Length    uint32 // bytes accessed (PAD: bytes covered)
	DataLen   uint32
	Seq       uint64
}

// Size is the total size of a record with dataLen bytes of data.
func Size(dataLen int) int { return HeaderSize + (dataLen+7)&^7 }

// Size of this record in the ring.
func (h *Header) Size() int {
	if h.Kind == Pad {
		return int(h.Length)
	}
	return Size(int(h.DataLen))
}

// Put writes the header into b[:HeaderSize].
func (h *Header) Put(b []byte) {
	b[0] = byte(h.Kind)
	b[1] = h.Flags
	binary.LittleEndian.PutUint16(b[2:], h.IUID)
	binary.LittleEndian.PutUint16(b[4:], h.Requester)
	binary.LittleEndian.PutUint16(b[6:], h.Tag)
	binary.LittleEndian.PutUint64(b[8:], h.IOVA)
	binary.LittleEndian.PutUint32(b[16:], h.Length)
	binary.LittleEndian.PutUint32(b[20:], h.DataLen)
	binary.LittleEndian.PutUint64(b[24:], h.Seq)
}

// Parse decodes a header and checks it for consistency.
func Parse(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("record: %d bytes, a header has %d", len(b), HeaderSize)
	}
	h := Header{Kind: Kind(b[0]), Flags: b[1], IUID: binary.LittleEndian.Uint16(b[2:]),
		Requester: binary.LittleEndian.Uint16(b[4:]), Tag: binary.LittleEndian.Uint16(b[6:]),
		IOVA: binary.LittleEndian.Uint64(b[8:]), Length: binary.LittleEndian.Uint32(b[16:]),
		DataLen: binary.LittleEndian.Uint32(b[20:]), Seq: binary.LittleEndian.Uint64(b[24:])}
	switch {
	case h.Kind > Atomic:
		return h, fmt.Errorf("record kind %d is not PAD, PUT, GET or ATOMIC", h.Kind)
	case h.IUID > 0x3ff:
		return h, fmt.Errorf("record IUID %d needs more than 10 bits", h.IUID)
	case h.Tag > 0x3ff:
		return h, fmt.Errorf("record tag %d needs more than 10 bits", h.Tag)
	case h.Flags&^(FlagData|FlagBlocked) != 0:
		return h, fmt.Errorf("record flags %#x has undefined bits", h.Flags)
	case (h.Flags&FlagData != 0) != (h.DataLen != 0):
		return h, fmt.Errorf("record DATA flag %v but %d data bytes", h.Flags&FlagData != 0, h.DataLen)
	case h.Kind == Pad && (h.Length < HeaderSize || h.Length%8 != 0 || h.DataLen != 0):
		return h, fmt.Errorf("PAD record covering %d bytes", h.Length)
	case h.DataLen > 4096:
		return h, fmt.Errorf("record data of %d bytes exceeds 4096", h.DataLen)
	}
	return h, nil
}
