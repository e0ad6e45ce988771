package tlp

import "fmt"

// ByteEnables returns the DW-aligned address, the Length in DW and the first
// and last byte enables that cover n bytes at addr (n ≥ 1). A zero-length
// read is n = 0: one DW with First BE 0000.
func ByteEnables(addr uint64, n int) (dwAddr uint64, length uint16, first, last uint8) {
	dwAddr = addr &^ 3
	if n == 0 {
		return dwAddr, 1, 0, 0
	}
	off := int(addr & 3)
	end := off + n // bytes from dwAddr
	length = uint16((end + 3) / 4)
	first = 0xf << off & 0xf
	lastBytes := end - (int(length)-1)*4 // 1..4 bytes used in the last DW
	lastMask := uint8(0xf >> (4 - lastBytes))
	if length == 1 {
		return dwAddr, 1, first & lastMask, 0
	}
	return dwAddr, length, first, lastMask
}

func addr64(a uint64) bool { return a >= 1<<32 }

// NewMemWrite builds an MWr of data at addr (any alignment; at most 4096
// bytes and not crossing a 4 KB boundary: segmentation is the sender's job).
func NewMemWrite(req ID, tag uint16, addr uint64, data []byte) TLP {
	dw, length, first, last := ByteEnables(addr, len(data))
	off := int(addr & 3)
	payload := make([]byte, int(length)*4)
	copy(payload[off:], data)
	return TLP{Kind: MWr, Addr64: addr64(dw), Length: length, RequesterID: req, Tag: tag,
		FirstBE: first, LastBE: last, Addr: dw, Data: payload}
}

// NewMemWriteInPlace is NewMemWrite for a DW-aligned payload of whole DWs,
// which becomes the TLP's data without a copy: a DMA engine streaming from
// a read-only source buffer builds TLPs without allocating. The caller must
// not change data while the TLP is in flight.
func NewMemWriteInPlace(req ID, tag uint16, addr uint64, data []byte) (TLP, error) {
	if addr&3 != 0 || len(data)%4 != 0 || len(data) == 0 || len(data) > 4096 {
		return TLP{}, fmt.Errorf("in-place MWr: address %#x and %d bytes must be DW-aligned, 4..4096 bytes", addr, len(data))
	}
	dw, length, first, last := ByteEnables(addr, len(data))
	return TLP{Kind: MWr, Addr64: addr64(dw), Length: length, RequesterID: req, Tag: tag,
		FirstBE: first, LastBE: last, Addr: dw, Data: data}, nil
}

// NewMemRead builds an MRd of n bytes at addr (n = 0: a zero-length read).
func NewMemRead(req ID, tag uint16, addr uint64, n int) TLP {
	dw, length, first, last := ByteEnables(addr, n)
	return TLP{Kind: MRd, Addr64: addr64(dw), Length: length, RequesterID: req, Tag: tag,
		FirstBE: first, LastBE: last, Addr: dw}
}

// NewCompletion builds the completion of request req: CplD when data is not
// nil, else Cpl. byteCount and lowerAddr are the request's remaining bytes
// and the low address bits of the first byte returned. TC and attributes
// are copied from the request, as completers must.
func NewCompletion(req *TLP, completer ID, status Status, byteCount int, lowerAddr uint8, data []byte) TLP {
	c := TLP{Kind: Cpl, TC: req.TC, RO: req.RO, NS: req.NS, IDO: req.IDO, RequesterID: req.RequesterID, Tag: req.Tag,
		CompleterID: completer, Status: status, ByteCount: uint16(byteCount), LowerAddr: lowerAddr & 0x7f}
	if data != nil {
		c.Kind = CplD
		c.Length = uint16(len(data) / 4)
		c.Data = data
	}
	if req.Kind == MRdLk {
		c.Kind += CplLk - Cpl
	}
	return c
}

// NewMSI builds the memory write that signals an MSI: one DW, First BE 1111,
// carrying the 32-bit little-endian message data.
func NewMSI(req ID, addr uint64, data uint32) TLP {
	return TLP{Kind: MWr, Addr64: addr64(addr), Length: 1, RequesterID: req, FirstBE: 0xf, Addr: addr &^ 3,
		Data: []byte{byte(data), byte(data >> 8), byte(data >> 16), byte(data >> 24)}}
}
