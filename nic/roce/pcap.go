package roce

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// pcapng block types and option codes (the pcapng specification,
// draft-ietf-opsawg-pcapng).
const (
	blockSHB = 0x0A0D0D0A // section header
	blockIDB = 0x00000001 // interface description
	blockEPB = 0x00000006 // enhanced packet

	optEnd      = 0
	optComment  = 1
	shbHardware = 2
	shbOS       = 3
	shbUserAppl = 4
	ifName      = 2
	ifTSResol   = 9

	linkTypeEthernet = 1
	// tsresolPS is if_tsresol for picoseconds: 10^-12 s per unit.
	tsresolPS = 12
)

// Capture writes frames to a pcapng file, little-endian, with one interface
// per wire, named after it, whose timestamps count picoseconds: the
// simulated time of the frame, counted from the Unix epoch. Each packet
// carries a comment (the frame's causal transaction IDs), so a frame can be
// followed to the operation that sent it. The section header names no host,
// so the file is the same on every machine.
//
// gopacket's pcapng writer fixes every interface's resolution to
// nanoseconds, which would round the simulated times, so the blocks are
// written here.
type Capture struct {
	w      *bufio.Writer
	ifaces int
	block  []byte
	err    error
}

// NewCapture starts a capture with an interface for each of ifaces (the
// wires' names); Write's iface indexes them.
func NewCapture(w io.Writer, ifaces []string) (*Capture, error) {
	if len(ifaces) == 0 {
		return nil, fmt.Errorf("pcapng: a capture needs an interface")
	}
	c := &Capture{w: bufio.NewWriterSize(w, 1<<16), ifaces: len(ifaces)}
	b := c.begin(blockSHB)
	b = binary.LittleEndian.AppendUint32(b, 0x1A2B3C4D) // byte-order magic
	b = binary.LittleEndian.AppendUint16(b, 1)          // version 1.0
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, ^uint64(0)) // section length: not given
	b = appendOption(b, shbHardware, []byte("aaemu"))
	b = appendOption(b, shbOS, []byte("aaemu"))
	b = appendOption(b, shbUserAppl, []byte("aaemu"))
	c.end(appendOption(b, optEnd, nil))
	for _, name := range ifaces {
		b := c.begin(blockIDB)
		b = binary.LittleEndian.AppendUint16(b, linkTypeEthernet)
		b = binary.LittleEndian.AppendUint16(b, 0)
		b = binary.LittleEndian.AppendUint32(b, 0) // snap length: no limit
		b = appendOption(b, ifName, []byte(name))
		b = appendOption(b, ifTSResol, []byte{tsresolPS})
		c.end(appendOption(b, optEnd, nil))
	}
	return c, c.err
}

// Write records frame, sent on interface iface at simulated time ps, with a
// comment.
func (c *Capture) Write(iface int, ps uint64, frame []byte, comment string) error {
	if iface < 0 || iface >= c.ifaces {
		return fmt.Errorf("pcapng: interface %d of %d", iface, c.ifaces)
	}
	b := c.begin(blockEPB)
	b = binary.LittleEndian.AppendUint32(b, uint32(iface))
	b = binary.LittleEndian.AppendUint32(b, uint32(ps>>32))
	b = binary.LittleEndian.AppendUint32(b, uint32(ps))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(frame))) // captured
	b = binary.LittleEndian.AppendUint32(b, uint32(len(frame))) // on the wire (without FCS)
	b = append(b, frame...)
	b = pad(b)
	if comment != "" {
		b = appendOption(b, optComment, []byte(comment))
		b = appendOption(b, optEnd, nil)
	}
	c.end(b)
	return c.err
}

// Flush writes buffered frames out.
func (c *Capture) Flush() error {
	if err := c.w.Flush(); err != nil && c.err == nil {
		c.err = err
	}
	return c.err
}

// begin starts a block: type, and room for its length.
func (c *Capture) begin(typ uint32) []byte {
	b := binary.LittleEndian.AppendUint32(c.block[:0], typ)
	return append(b, 0, 0, 0, 0)
}

// end puts the block's total length at both ends and writes it.
func (c *Capture) end(b []byte) {
	n := uint32(len(b) + 4)
	binary.LittleEndian.PutUint32(b[4:], n)
	b = binary.LittleEndian.AppendUint32(b, n)
	if _, err := c.w.Write(b); err != nil && c.err == nil {
		c.err = err
	}
	c.block = b
}

// appendOption appends an option: code, length, value padded to 32 bits.
func appendOption(b []byte, code uint16, v []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	return pad(append(b, v...))
}

func pad(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// SectionHeader is a section header block with no interfaces or packets
// whose comment is comment (cut to 60,000 bytes): a capture that ends with
// one says, to capinfos and Wireshark's capture properties, why it ended.
func SectionHeader(comment string) []byte {
	if len(comment) > 60000 {
		comment = comment[:60000]
	}
	b := binary.LittleEndian.AppendUint32(nil, blockSHB)
	b = append(b, 0, 0, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, 0x1A2B3C4D) // byte-order magic
	b = binary.LittleEndian.AppendUint16(b, 1)          // version 1.0
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, ^uint64(0)) // section length: not given
	b = appendOption(b, optComment, []byte(comment))
	b = appendOption(b, optEnd, nil)
	n := uint32(len(b) + 4)
	binary.LittleEndian.PutUint32(b[4:], n)
	return binary.LittleEndian.AppendUint32(b, n)
}
