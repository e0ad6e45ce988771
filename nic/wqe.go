package nic

import (
	"encoding/binary"
	"fmt"
)

// Work-request opcodes.
const (
	OpWrite   uint8 = 1 // RDMA WRITE: local buffer → remote memory
	OpRead    uint8 = 2 // RDMA READ: remote memory → local buffer
	OpCAS     uint8 = 3 // 64-bit compare-and-swap at the remote address
	OpFetchOp uint8 = 4 // 64-bit fetch-and-add at the remote address
	OpSend    uint8 = 5 // SEND: local buffer → the peer's next posted receive buffer
)

// RWQESize is the size of a receive work request: buffer address (8) and
// length (4), little-endian, then 4 reserved bytes.
const RWQESize = 16

// WQESize and CQESize are the sizes of a send work request and of a
// completion entry in host memory.
const (
	WQESize = 64
	CQESize = 32
)

// WQE is a send work request as software writes it into the send queue
// (little-endian):
//
//	0  opcode      1   (OpWrite, OpRead, OpCAS, OpFetchOp)
//	1  flags       1   (bit 0: signaled, a completion entry is written; bit 1: bulk, see NIC.Bulk)
//	4  length      4   bytes
//	8  local addr  8   IOVA of the local buffer (read: destination; atomics: where the original value goes, 0 for none)
//	16 remote VA   8
//	24 rkey        4
//	32 compare/add 8   (CAS: compare; fetch-and-add: the addend)
//	40 swap        8   (CAS: swap)
//	48 wr_id       8   returned in the completion
//	56 dest QPN    4   srd: the destination queue on the remote node (a SEND's receive queue)
//	60 dest node   2   srd: the node the work request goes to
//	62 dest NIC    1   srd: the NIC of that node
//
// Bytes 2-3, 28-31 and 63 are reserved (zero). A reliable-connection QP
// reaches one peer, fixed when it is created, and ignores bytes 56-62; a
// send queue of the srd transport (NIC.CreateQueue) reaches every node,
// and each of its work requests names its destination there.
type WQE struct {
	Opcode   uint8
	Signaled bool
	// Bulk asks the NIC to move a WRITE's payload, or a READ's data at
	// both ends, by its bulk DMA path (NIC.Bulk) where it has one.
	Bulk   bool
	Length uint32
	Local  uint64
	Remote uint64
	// RKey sits with DstQPN, not in the encoded order: no padding after
	// either (a NIC keeps one in every work request it fetched).
	RKey    uint32
	DstQPN  uint32 // srd only (bytes 56-59)
	Compare uint64
	Swap    uint64
	WRID    uint64
	// srd only (bytes 60-62).
	DstNode int // 0..65535
	DstNIC  int // 0..255
}

// Put encodes the WQE into b[:WQESize].
func (w *WQE) Put(b []byte) {
	clear(b[:WQESize])
	b[0] = w.Opcode
	if w.Signaled {
		b[1] = 1
	}
	if w.Bulk {
		b[1] |= 2
	}
	binary.LittleEndian.PutUint32(b[4:], w.Length)
	binary.LittleEndian.PutUint64(b[8:], w.Local)
	binary.LittleEndian.PutUint64(b[16:], w.Remote)
	binary.LittleEndian.PutUint32(b[24:], w.RKey)
	binary.LittleEndian.PutUint64(b[32:], w.Compare)
	binary.LittleEndian.PutUint64(b[40:], w.Swap)
	binary.LittleEndian.PutUint64(b[48:], w.WRID)
	binary.LittleEndian.PutUint32(b[56:], w.DstQPN)
	binary.LittleEndian.PutUint16(b[60:], uint16(w.DstNode))
	b[62] = uint8(w.DstNIC)
}

// ParseWQE decodes a work request and checks it.
func ParseWQE(b []byte) (WQE, error) {
	w := WQE{Opcode: b[0], Signaled: b[1]&1 != 0, Bulk: b[1]&2 != 0, Length: binary.LittleEndian.Uint32(b[4:]),
		Local: binary.LittleEndian.Uint64(b[8:]), Remote: binary.LittleEndian.Uint64(b[16:]),
		RKey: binary.LittleEndian.Uint32(b[24:]), Compare: binary.LittleEndian.Uint64(b[32:]),
		Swap: binary.LittleEndian.Uint64(b[40:]), WRID: binary.LittleEndian.Uint64(b[48:]),
		DstQPN: binary.LittleEndian.Uint32(b[56:]), DstNode: int(binary.LittleEndian.Uint16(b[60:])), DstNIC: int(b[62])}
	switch w.Opcode {
	case OpWrite, OpRead, OpSend:
		if w.Length == 0 || w.Length > 1<<31 {
			return w, fmt.Errorf("work request of %d bytes", w.Length)
		}
	case OpCAS, OpFetchOp:
		if w.Remote%8 != 0 {
			return w, fmt.Errorf("atomic at %#x is not 8-byte aligned", w.Remote)
		}
		w.Length = 8
	default:
		return w, fmt.Errorf("work request opcode %d", w.Opcode)
	}
	return w, nil
}

// Completion statuses.
const (
	StatusOK               uint32 = 0
	StatusRemoteError      uint32 = 1 // the responder NAKed: remote access or operational error
	StatusLocalError       uint32 = 2 // a local DMA failed (the source IOMMU blocked it)
	StatusBadRequest       uint32 = 3 // a malformed work request
	StatusRetryExceeded    uint32 = 4 // no ACK or response through retry_cnt retries (verbs: IBV_WC_RETRY_EXC_ERR)
	StatusRNRRetryExceeded uint32 = 5 // RNR NAKs through rnr_retry retries (verbs: IBV_WC_RNR_RETRY_EXC_ERR)
	StatusFlushed          uint32 = 6 // the QP was in the error state (verbs: IBV_WC_WR_FLUSH_ERR)
)

// StatusText names a completion status.
func StatusText(s uint32) string {
	switch s {
	case StatusOK:
		return "success"
	case StatusRemoteError:
		return "remote error"
	case StatusLocalError:
		return "local error"
	case StatusBadRequest:
		return "bad work request"
	case StatusRetryExceeded:
		return "transport retries exceeded"
	case StatusRNRRetryExceeded:
		return "RNR retries exceeded"
	case StatusFlushed:
		return "flushed"
	}
	return fmt.Sprintf("status %d", s)
}

// CQE is a completion entry (little-endian): wr_id (8), status (4), byte
// length (4), the atomic's original value (8), and a sequence number (8)
// that is the entry's index + 1, so software sees a fresh entry by its
// sequence number.
type CQE struct {
	WRID   uint64
	Status uint32
	Length uint32
	Value  uint64
	Seq    uint64
}

// Put encodes the entry.
func (c *CQE) Put(b []byte) {
	binary.LittleEndian.PutUint64(b, c.WRID)
	binary.LittleEndian.PutUint32(b[8:], c.Status)
	binary.LittleEndian.PutUint32(b[12:], c.Length)
	binary.LittleEndian.PutUint64(b[16:], c.Value)
	binary.LittleEndian.PutUint64(b[24:], c.Seq)
}

// ParseCQE decodes a completion entry.
func ParseCQE(b []byte) CQE {
	return CQE{WRID: binary.LittleEndian.Uint64(b), Status: binary.LittleEndian.Uint32(b[8:]),
		Length: binary.LittleEndian.Uint32(b[12:]), Value: binary.LittleEndian.Uint64(b[16:]), Seq: binary.LittleEndian.Uint64(b[24:])}
}
