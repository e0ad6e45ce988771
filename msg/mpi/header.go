package mpi

import "fmt"

// Kind is what a packet of the point-to-point protocols is.
type Kind uint8

// The packets of the protocols.
const (
	// Eager carries a whole message: its envelope and data.
	Eager Kind = 1 + iota
	// RTS (request to send) carries a rendezvous message's envelope and
	// size, the sender's request and, for a get, its buffer's address.
	RTS
	// CTS (clear to send) answers an RTS: the receiver's request, how many
	// bytes it takes and, for a put, its buffer's address.
	CTS
	// Data carries a piece of a rendezvous message at an offset (the copy
	// mode's pipeline).
	Data
	// FIN ends a rendezvous: to the receiver after a put (the data is in
	// place), to the sender after a get (its buffer is free again).
	FIN
)

func (k Kind) String() string {
	switch k {
	case Eager:
		return "EAGER"
	case RTS:
		return "RTS"
	case CTS:
		return "CTS"
	case Data:
		return "DATA"
	case FIN:
		return "FIN"
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// Header is a packet's header: what the protocols tell each other. A
// transport carries it (HeaderWords words) with an optional payload.
type Header struct {
	Kind Kind
	Mode Mode   // RTS: the rendezvous mode the sender chose
	Ctx  uint32 // communicator context (up to MaxCtx)
	Src  int    // world rank of the packet's sender
	Tag  int    // Eager, RTS: the message's tag
	Len  int    // payload bytes this packet carries
	Size int    // Eager, RTS: message bytes; CTS: bytes the receiver takes
	SReq uint32 // the sender's request
	RReq uint32 // the receiver's request
	Addr uint64 // RTS (get): the send buffer; CTS (put): the receive buffer
	Off  int    // Data: the payload's offset in the message
}

// HeaderWords is the size of a packed header in 64-bit words.
const HeaderWords = 6

// EagerWords is how many words of a packed Eager header are used: the rest
// (HeaderWords − EagerWords) can carry a small message's data inline.
const EagerWords = 2

// Pack encodes h. An Eager header uses only the first EagerWords words.
func (h *Header) Pack() [HeaderWords]uint64 {
	var w [HeaderWords]uint64
	w[0] = uint64(h.Kind) | uint64(h.Mode&0xf)<<8 | uint64(h.Ctx&0xfffff)<<12 | uint64(uint32(h.Src))<<32
	w[1] = uint64(uint32(h.Tag)) | uint64(uint32(h.Len))<<32
	if h.Kind == Eager {
		return w
	}
	w[2] = uint64(h.Size)
	w[3] = uint64(h.SReq) | uint64(h.RReq)<<32
	w[4] = h.Addr
	w[5] = uint64(h.Off)
	return w
}

// Unpack decodes a packed header.
func Unpack(w *[HeaderWords]uint64) Header {
	h := Header{Kind: Kind(w[0]), Mode: Mode(w[0] >> 8 & 0xf), Ctx: uint32(w[0] >> 12 & 0xfffff),
		Src: int(int32(uint32(w[0] >> 32))), Tag: int(int32(uint32(w[1]))), Len: int(uint32(w[1] >> 32))}
	if h.Kind == Eager {
		h.Size = h.Len
		return h
	}
	h.Size = int(w[2])
	h.SReq, h.RReq = uint32(w[3]), uint32(w[3]>>32)
	h.Addr = w[4]
	h.Off = int(w[5])
	return h
}

// MaxCtx is the largest communicator context a header carries.
const MaxCtx = 1<<20 - 1
