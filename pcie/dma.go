package pcie

import (
	"fmt"

	"github.com/aaemu/aaemu/pcie/tlp"
)

// Sizes are a device's transaction-layer size settings.
type Sizes struct {
	MPS  int // Max Payload Size in bytes: 128 << n, n = 0..5 (default 128)
	MRRS int // Max Read Request Size in bytes: 128 << n (default 512)
	RCB  int // Read Completion Boundary of the completer: 64 or 128 (default 64)
}

// DefaultSizes are the PCIe defaults.
func DefaultSizes() Sizes { return Sizes{MPS: 128, MRRS: 512, RCB: 64} }

func validSize(n int) bool {
	for s := 128; s <= 4096; s <<= 1 {
		if n == s {
			return true
		}
	}
	return false
}

// Validate checks the sizes against the encodings the Device Control
// register allows.
func (s Sizes) Validate() error {
	switch {
	case !validSize(s.MPS):
		return fmt.Errorf("MPS %d: want 128, 256, 512, 1024, 2048 or 4096", s.MPS)
	case !validSize(s.MRRS):
		return fmt.Errorf("MRRS %d: want 128, 256, 512, 1024, 2048 or 4096", s.MRRS)
	case s.RCB != 64 && s.RCB != 128:
		return fmt.Errorf("RCB %d: want 64 or 128", s.RCB)
	}
	return nil
}

// Chunk is one piece of a segmented transfer.
type Chunk struct {
	Addr uint64
	N    int
}

// segment splits n bytes at addr into pieces of at most max bytes that end
// on naturally aligned max-byte boundaries (max divides 4096, so no piece
// crosses a 4 KB boundary).
func segment(addr uint64, n, max int, out []Chunk) []Chunk {
	for n > 0 {
		room := max - int(addr%uint64(max))
		c := min(room, n)
		out = append(out, Chunk{Addr: addr, N: c})
		addr += uint64(c)
		n -= c
	}
	return out
}

// WriteChunks returns the pieces a DMA write of n bytes at addr becomes: one
// MWr each, at most MPS bytes, never crossing a 4 KB boundary.
func (s Sizes) WriteChunks(addr uint64, n int) []Chunk { return segment(addr, n, s.MPS, nil) }

// ReadChunks returns the pieces a DMA read becomes: one MRd each, at most
// MRRS bytes, never crossing a 4 KB boundary.
func (s Sizes) ReadChunks(addr uint64, n int) []Chunk { return segment(addr, n, s.MRRS, nil) }

// AppendReadChunks is ReadChunks appending to out: a requester that issues
// the reads at once reuses one slice for all of them.
func (s Sizes) AppendReadChunks(out []Chunk, addr uint64, n int) []Chunk {
	return segment(addr, n, s.MRRS, out)
}

// SegmentWrite builds the MWr TLPs of a DMA write of data at addr.
func (s Sizes) SegmentWrite(req tlp.ID, addr uint64, data []byte) []tlp.TLP {
	return s.AppendSegmentWrite(nil, req, addr, data)
}

// AppendSegmentWrite is SegmentWrite appending to out (each TLP has its own
// copy of its payload: out may be reused once they are sent).
func (s Sizes) AppendSegmentWrite(out []tlp.TLP, req tlp.ID, addr uint64, data []byte) []tlp.TLP {
	off := 0
	for n := len(data); n > 0; {
		c := min(s.MPS-int(addr%uint64(s.MPS)), n)
		out = append(out, tlp.NewMemWrite(req, 0, addr, data[off:off+c]))
		addr += uint64(c)
		off += c
		n -= c
	}
	return out
}

// SplitCompletions builds the completions a completer returns for the read
// request req, reading memory through read(addr, n). Every completion
// carries at most MPS bytes; all but the last end on a naturally aligned RCB
// boundary; Byte Count is the number of bytes still to come including this
// completion's; Lower Address is the low 7 bits of the first byte's address.
func (s Sizes) SplitCompletions(req *tlp.TLP, completer tlp.ID, read func(addr uint64, n int) []byte) []tlp.TLP {
	return s.AppendSplitCompletions(nil, req, completer, read)
}

// AppendSplitCompletions is SplitCompletions appending to out: a
// completer that copies each completion on at once reuses one slice for
// every read request instead of allocating one per request.
func (s Sizes) AppendSplitCompletions(out []tlp.TLP, req *tlp.TLP, completer tlp.ID, read func(addr uint64, n int) []byte) []tlp.TLP {
	first := req.Addr + uint64(req.FirstByteOffset())
	total := req.EnabledBytes()
	if req.FirstBE == 0 && req.Length == 1 {
		// A zero-length read returns one DW with Byte Count 1.
		d := read(req.Addr, 4)
		return append(out, tlp.NewCompletion(req, completer, tlp.SC, 1, uint8(req.Addr&0x7f), d))
	}
	addr := first
	remaining := total
	for remaining > 0 {
		// The DW-aligned span of this completion, from addr's DW.
		dwStart := addr &^ 3
		endAll := first + uint64(total) // one past the last byte requested
		span := int(((endAll+3)&^3 - dwStart))
		if span > s.MPS {
			// Stop on the RCB boundary at or below MPS bytes from dwStart.
			end := (dwStart + uint64(s.MPS)) &^ uint64(s.RCB-1)
			span = int(end - dwStart)
		}
		data := read(dwStart, span)
		bytesHere := min(int(dwStart+uint64(span)-addr), remaining)
		out = append(out, tlp.NewCompletion(req, completer, tlp.SC, remaining, uint8(addr&0x7f), data))
		remaining -= bytesHere
		addr += uint64(bytesHere)
	}
	return out
}

// ErrorCompletion is the completion without data that reports status st
// for request req (Byte Count is the whole request, per the rule for
// unsuccessful completions).
func ErrorCompletion(req *tlp.TLP, completer tlp.ID, st tlp.Status) tlp.TLP {
	la := uint8((req.Addr + uint64(req.FirstByteOffset())) & 0x7f)
	return tlp.NewCompletion(req, completer, st, req.EnabledBytes(), la, nil)
}

// CompletionPayloads calls f with the payload bytes of each completion
// SplitCompletions builds for the read request req, in order, without
// building them: a bulk DMA path counts a link's statistics with it.
func (s Sizes) CompletionPayloads(req *tlp.TLP, f func(payload int)) {
	first := req.Addr + uint64(req.FirstByteOffset())
	total := req.EnabledBytes()
	if req.FirstBE == 0 && req.Length == 1 {
		f(4)
		return
	}
	addr, remaining := first, total
	endAll := first + uint64(total)
	for remaining > 0 {
		dwStart := addr &^ 3
		span := int((endAll+3)&^3 - dwStart)
		if span > s.MPS {
			span = int((dwStart+uint64(s.MPS))&^uint64(s.RCB-1) - dwStart)
		}
		f(span)
		here := min(int(dwStart+uint64(span)-addr), remaining)
		remaining -= here
		addr += uint64(here)
	}
}
