package torus

import (
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Coord is a node's place in the torus.
type Coord [3]int

func (c Coord) String() string { return fmt.Sprintf("(%d,%d,%d)", c[0], c[1], c[2]) }

// Packet is a torus packet as the message layer writes it into an
// injection FIFO: the hardware header's fields, the software header and the
// payload. Its size on the network is Chunks() × 32 bytes.
//
// The payload is shared, not copied, by the routers (a deposit packet
// reaches several nodes): it must not change after injection.
type Packet struct {
	sim.Txn
	Src, Dst Coord
	// Dynamic routes the packet adaptively (any minimal direction, hop by
	// hop, on the dynamic channels with the escape channel as a fallback);
	// otherwise it goes deterministically, x then y then z, on the escape
	// channel and arrives in order.
	Dynamic bool
	// Priority sends the packet on the high-priority channel
	// (deterministic routing) into a high-priority reception FIFO.
	Priority bool
	// Deposit leaves a copy of the packet at every node it passes: a line
	// broadcast. The destination must differ from the source in one
	// coordinate only, and the routing must be deterministic.
	Deposit bool
	// Hint chooses the direction per dimension: +1 or -1, or 0 for the
	// shorter way round (ties go +). A deposit packet sets it to cover the
	// line it wants.
	Hint [3]int8
	// Group is the FIFO set the packet is received into at its
	// destination (and, with the deposit bit, along its line): 0, or 1
	// on a torus of two sets (Spec.Groups; the core that reads it).
	Group uint8
	// Soft is the software header: the 8 header bytes the router does
	// not read.
	Soft [SoftHeaderSize]byte
	// Payload is at most 240 bytes.
	Payload []byte
	// Tag travels with the packet untouched and costs nothing on the
	// wire: a layer above the torus hangs on it what the payload's bytes
	// stand for (the network adapter of package machine, the Ethernet
	// frame a packet's bytes are a segment of).
	Tag any

	// Set by the network as the packet travels.
	chunks uint8
	vc     uint8 // the channel it occupies at the router holding it
	dir    [3]int8
	inPort uint8 // the port it arrived on at the router holding it
	Hops   uint16
	// InjectedAt is when the message layer wrote it into the FIFO.
	InjectedAt sim.Tick
}

// Chunks is the packet's size in 32-byte chunks: header and payload
// rounded up.
func (p *Packet) Chunks() int {
	return (HeaderBytes + len(p.Payload) + ChunkBytes - 1) / ChunkBytes
}

// Bytes is the packet's size on the network (a multiple of 32).
func (p *Packet) Bytes() int { return p.Chunks() * ChunkBytes }

// Arrival is the input port the packet arrived on at its destination
// (Local when it was injected there): a reception FIFO holds the packets
// of one input port.
func (p *Packet) Arrival() Port { return Port(p.inPort) }

// check validates the packet for a network of spec s sent from src.
func (s Spec) checkPacket(p *Packet, src Coord) error {
	if len(p.Payload) > MaxPayload {
		return fmt.Errorf("torus packet: payload of %d bytes makes a packet of %d bytes (at most %d: %d payload after the %d-byte header)",
			len(p.Payload), HeaderBytes+len(p.Payload), MaxPacketBytes, MaxPayload, HeaderBytes)
	}
	for d := 0; d < 3; d++ {
		if p.Dst[d] < 0 || p.Dst[d] >= s.Dims[d] {
			return fmt.Errorf("torus packet: destination %v outside the %d×%d×%d torus", p.Dst, s.Dims[0], s.Dims[1], s.Dims[2])
		}
		if h := p.Hint[d]; h < -1 || h > 1 {
			return fmt.Errorf("torus packet: hint %d in %c (want -1, 0 or +1)", h, "xyz"[d])
		} else if delta := p.Dst[d] - src[d]; h != 0 && delta != 0 && !s.wraps(d) && h != sign(delta) {
			return fmt.Errorf("torus packet: hint %+d in %c points away from %v, and %c does not wrap around", h, "xyz"[d], p.Dst, "xyz"[d])
		}
	}
	if p.Dst == src {
		return fmt.Errorf("torus packet: destination %v is the sending node", p.Dst)
	}
	if p.Deposit {
		if p.Dynamic {
			return fmt.Errorf("torus packet: the deposit bit needs deterministic routing")
		}
		n := 0
		for d := 0; d < 3; d++ {
			if p.Dst[d] != src[d] {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("torus packet: deposit from %v to %v: the destination must lie on a line through the source (one coordinate differs)", src, p.Dst)
		}
	}
	if p.Priority && p.Dynamic {
		return fmt.Errorf("torus packet: high-priority packets are routed deterministically")
	}
	if int(p.Group) >= s.Groups {
		return fmt.Errorf("torus packet: FIFO group %d of a torus of %d (0 to %d)", p.Group, s.Groups, s.Groups-1)
	}
	return nil
}

// directions resolves the packet's direction in each dimension at
// injection: the hint, or the shorter way round (ties +). In a mesh (or a
// dimension without wrap-around) the only way is towards the destination.
func (s Spec) directions(p *Packet, src Coord) [3]int8 {
	var dir [3]int8
	for d := 0; d < 3; d++ {
		delta := p.Dst[d] - src[d]
		if delta == 0 {
			continue
		}
		if !s.wraps(d) {
			dir[d] = sign(delta)
			continue
		}
		if p.Hint[d] != 0 {
			dir[d] = p.Hint[d]
			continue
		}
		n := s.Dims[d]
		fwd := (delta + n) % n // hops going +
		if fwd <= n-fwd {
			dir[d] = 1
		} else {
			dir[d] = -1
		}
	}
	return dir
}

func sign(v int) int8 {
	if v < 0 {
		return -1
	}
	return 1
}
