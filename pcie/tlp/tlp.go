package tlp

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// TLP is one Transaction Layer Packet with every header field. Fields that
// a kind does not use must be zero; Encode checks that the TLP is well formed
// and Decode rejects what is not.
type TLP struct {
	Kind Kind
	// Addr64 selects the 4DW header of memory requests and AtomicOps. It must
	// be set exactly when the address needs more than 32 bits (requests below
	// 4 GB use 3DW headers); New sets it from the address.
	Addr64 bool

	TC   uint8 // traffic class 0..7
	RO   bool  // Attr[1] relaxed ordering
	NS   bool  // Attr[0] no snoop
	IDO  bool  // Attr[2] ID-based ordering
	TH   bool  // TLP processing hints present (PH in address bits 1:0)
	TD   bool  // a 4-byte ECRC follows
	EP   bool  // poisoned
	LN   bool  // lightweight notification
	AT   uint8 // address type 0..3 (0 untranslated)
	PH   uint8 // processing hint 0..3 (with TH)
	ECRC uint32

	// Length is the payload (or requested) size in DW, 1..1024. Zero for
	// completions and messages without data.
	Length uint16

	RequesterID ID
	Tag         uint16 // 10 bits: Tag[9:8] travel in DW0 bits 23 and 19
	FirstBE     uint8  // 4 bits
	LastBE      uint8  // 4 bits
	Addr        uint64 // byte address; bits 1:0 are zero (they are DW-aligned)

	// Configuration requests.
	TargetID ID    // completer (bus/device/function) addressed
	ExtReg   uint8 // extended register number, 4 bits
	Reg      uint8 // register number, 6 bits (DW index)

	// Messages.
	Routing uint8  // r[2:0] of the Type field
	MsgCode uint8  // message code
	MsgDW2  uint32 // header DW2 (address high or target ID, by routing)
	MsgDW3  uint32 // header DW3

	// Completions.
	CompleterID ID
	Status      Status
	BCM         bool
	ByteCount   uint16 // remaining bytes, 1..4096 (4096 encodes as 0)
	LowerAddr   uint8  // 7 bits

	Data []byte // payload, Length*4 bytes when the kind has data
}

// FieldError says which field of a TLP is wrong.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("TLP %s: %s", e.Field, e.Msg) }

func ferr(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// HeaderDW is the header size in DW (3 or 4).
func (t *TLP) HeaderDW() int {
	switch {
	case t.Kind.IsMessage():
		return 4
	case t.Kind.IsMemory() && t.Addr64:
		return 4
	}
	return 3
}

// Size is the encoded size in bytes: header, payload and ECRC.
func (t *TLP) Size() int {
	n := t.HeaderDW() * 4
	if t.Kind.HasData() {
		n += int(t.Length) * 4
	}
	if t.TD {
		n += 4
	}
	return n
}

// PayloadBytes is the number of payload bytes on the wire (Length in DW × 4
// for kinds with data, 0 otherwise).
func (t *TLP) PayloadBytes() int {
	if !t.Kind.HasData() {
		return 0
	}
	return int(t.Length) * 4
}

func (t *TLP) fmtField() uint8 {
	f := uint8(0)
	if t.HeaderDW() == 4 {
		f |= 1
	}
	if t.Kind.HasData() {
		f |= 2
	}
	return f
}

func (t *TLP) typeField() uint8 {
	typ := kinds[t.Kind].typ
	if t.Kind.IsMessage() {
		typ |= t.Routing & 7
	}
	return typ
}

// Validate checks that the TLP is well formed: field ranges, the rules of
// its kind, byte enables, payload size and the 4 KB boundary.
func (t *TLP) Validate() error {
	if t.Kind >= numKinds {
		return ferr("Type", "unknown kind %d", t.Kind)
	}
	k := t.Kind
	switch {
	case t.TC > 7:
		return ferr("TC", "%d out of 0..7", t.TC)
	case t.AT > 3:
		return ferr("AT", "%d out of 0..3", t.AT)
	case t.PH > 3:
		return ferr("PH", "%d out of 0..3", t.PH)
	case t.PH != 0 && !t.TH:
		return ferr("PH", "set without TH")
	case t.Tag > 0x3ff:
		return ferr("Tag", "%d needs more than 10 bits", t.Tag)
	case t.FirstBE > 0xf || t.LastBE > 0xf:
		return ferr("BE", "byte enables are 4 bits")
	case !k.HasData() && t.Data != nil && len(t.Data) != 0:
		return ferr("Data", "%v carries no payload", k)
	case t.ECRC != 0 && !t.TD:
		return ferr("ECRC", "set without TD")
	case t.Addr64 && !k.IsMemory():
		return ferr("Fmt", "only memory requests and AtomicOps choose a 4DW header")
	}
	if k.HasData() {
		if t.Length == 0 || t.Length > 1024 {
			return ferr("Length", "%d DW out of 1..1024", t.Length)
		}
		if len(t.Data) != int(t.Length)*4 {
			return ferr("Length", "%d DW but %d payload bytes", t.Length, len(t.Data))
		}
	}
	switch {
	case k.IsMemory():
		return t.validateMemory()
	case k.IsIO() || k.IsConfig():
		return t.validateIOCfg()
	case k.IsMessage():
		if !k.HasData() && t.Length != 0 {
			return ferr("Length", "must be 0 in a message without data, is %d", t.Length)
		}
		if t.Routing > 5 {
			return ferr("Type", "message routing %d is reserved", t.Routing)
		}
		if t.Addr != 0 || t.FirstBE != 0 || t.LastBE != 0 {
			return ferr("Addr", "messages carry DW2/DW3 in MsgDW2/MsgDW3, not an address or byte enables")
		}
	case k.IsCompletion():
		return t.validateCompletion()
	}
	return nil
}

func (t *TLP) validateMemory() error {
	k := t.Kind
	if !k.HasData() && (t.Length == 0 || t.Length > 1024) {
		return ferr("Length", "%d DW out of 1..1024", t.Length)
	}
	if t.Addr&3 != 0 {
		return ferr("Addr", "%#x is not DW-aligned (bits 1:0 carry PH)", t.Addr)
	}
	if t.Addr64 != (t.Addr >= 1<<32) {
		if t.Addr64 {
			return ferr("Fmt", "4DW header for address %#x below 4 GB (must use 3DW)", t.Addr)
		}
		return ferr("Fmt", "3DW header cannot carry address %#x", t.Addr)
	}
	if k.IsAtomic() {
		return t.validateAtomic()
	}
	if err := checkBE(t.Length, t.FirstBE, t.LastBE, t.Addr); err != nil {
		return err
	}
	if end := t.Addr&0xfff + uint64(t.Length)*4; end > 0x1000 {
		return ferr("Length", "%d DW at %#x crosses a 4 KB boundary", t.Length, t.Addr)
	}
	return nil
}

// checkBE applies the byte-enable rules of memory requests.
func checkBE(length uint16, first, last uint8, addr uint64) error {
	if length == 1 {
		if last != 0 {
			return ferr("LastBE", "must be 0000 for a 1-DW request, is %04b", last)
		}
		return nil // any First BE, 0000 included (a zero-length read)
	}
	if first == 0 || last == 0 {
		return ferr("FirstBE", "both byte enables must be non-zero for a %d-DW request", length)
	}
	if length == 2 && addr&7 == 0 {
		return nil // a QW-aligned 2-DW request may have non-contiguous BEs
	}
	// Enabled bytes must be contiguous: First BE fills up to the top of its
	// DW, Last BE from the bottom of its DW.
	if first != 0xf && first != 0xe && first != 0xc && first != 0x8 {
		return ferr("FirstBE", "%04b leaves a hole in a %d-DW request", first, length)
	}
	if last != 0xf && last != 0x7 && last != 0x3 && last != 0x1 {
		return ferr("LastBE", "%04b leaves a hole in a %d-DW request", last, length)
	}
	return nil
}

func (t *TLP) validateAtomic() error {
	// Operand sizes: FetchAdd and Swap 32 or 64 bits; CAS carries compare
	// and swap values, 2 × (32, 64 or 128) bits. The address is aligned to
	// the operand size.
	var op uint64
	switch t.Kind {
	case FetchAdd, Swap:
		if t.Length != 1 && t.Length != 2 {
			return ferr("Length", "%v operand of %d DW: want 1 or 2", t.Kind, t.Length)
		}
		op = uint64(t.Length) * 4
	case CAS:
		if t.Length != 2 && t.Length != 4 && t.Length != 8 {
			return ferr("Length", "CAS of %d DW: want 2, 4 or 8", t.Length)
		}
		op = uint64(t.Length) * 2
	}
	if t.Addr%op != 0 {
		return ferr("Addr", "%#x is not aligned to the %d-byte %v operand", t.Addr, op, t.Kind)
	}
	if t.FirstBE != 0 || t.LastBE != 0 {
		return ferr("FirstBE", "AtomicOps carry no byte enables")
	}
	return nil
}

func (t *TLP) validateIOCfg() error {
	switch {
	case t.Length != 1:
		return ferr("Length", "%v must have Length 1, has %d", t.Kind, t.Length)
	case t.LastBE != 0:
		return ferr("LastBE", "%v must have Last BE 0000", t.Kind)
	case t.TC != 0:
		return ferr("TC", "%v must use TC0", t.Kind)
	case t.RO || t.NS || t.IDO:
		return ferr("Attr", "%v must have attributes 0", t.Kind)
	case t.Kind.IsIO() && t.Addr&3 != 0:
		return ferr("Addr", "%#x is not DW-aligned", t.Addr)
	case t.Kind.IsIO() && t.Addr >= 1<<32:
		return ferr("Addr", "I/O address %#x above 32 bits", t.Addr)
	case t.Kind.IsConfig() && (t.ExtReg > 0xf || t.Reg > 0x3f):
		return ferr("Reg", "register %d/%d out of range (4 + 6 bits)", t.ExtReg, t.Reg)
	case t.Kind.IsConfig() && t.Addr != 0:
		return ferr("Addr", "configuration requests are routed by TargetID, not an address")
	}
	return nil
}

func (t *TLP) validateCompletion() error {
	switch t.Status {
	case SC, UR, CRS, CA:
	default:
		return ferr("Status", "%d is reserved", t.Status)
	}
	switch {
	case !t.Kind.HasData() && t.Length != 0:
		return ferr("Length", "must be 0 in a completion without data, is %d", t.Length)
	case t.ByteCount == 0 || t.ByteCount > 4096:
		return ferr("ByteCount", "%d out of 1..4096", t.ByteCount)
	case t.LowerAddr > 0x7f:
		return ferr("LowerAddr", "%#x needs more than 7 bits", t.LowerAddr)
	case t.Addr != 0:
		return ferr("Addr", "completions carry LowerAddr, not an address")
	}
	return nil
}

// Encode returns the TLP's bytes. It fails, naming the field, when the TLP
// is not well formed.
func (t *TLP) Encode() ([]byte, error) { return t.AppendEncode(make([]byte, 0, t.Size())) }

// AppendEncode appends the TLP's bytes to b (no allocation when b has room).
func (t *TLP) AppendEncode(b []byte) ([]byte, error) {
	if err := t.Validate(); err != nil {
		return b, err
	}
	var dw0 uint32
	dw0 |= uint32(t.fmtField()) << 29
	dw0 |= uint32(t.typeField()) << 24
	dw0 |= uint32(t.Tag>>9&1) << 23
	dw0 |= uint32(t.TC) << 20
	dw0 |= uint32(t.Tag>>8&1) << 19
	dw0 |= b2u(t.IDO) << 18
	dw0 |= b2u(t.LN) << 17
	dw0 |= b2u(t.TH) << 16
	dw0 |= b2u(t.TD) << 15
	dw0 |= b2u(t.EP) << 14
	dw0 |= b2u(t.RO) << 13
	dw0 |= b2u(t.NS) << 12
	dw0 |= uint32(t.AT) << 10
	dw0 |= uint32(t.Length) & 0x3ff // 1024 encodes as 0
	b = binary.BigEndian.AppendUint32(b, dw0)

	k := t.Kind
	switch {
	case k.IsCompletion():
		bc := uint32(t.ByteCount) & 0xfff // 4096 encodes as 0
		b = binary.BigEndian.AppendUint32(b, uint32(t.CompleterID)<<16|uint32(t.Status)<<13|b2u(t.BCM)<<12|bc)
		b = binary.BigEndian.AppendUint32(b, uint32(t.RequesterID)<<16|uint32(t.Tag&0xff)<<8|uint32(t.LowerAddr))
	case k.IsMessage():
		b = binary.BigEndian.AppendUint32(b, uint32(t.RequesterID)<<16|uint32(t.Tag&0xff)<<8|uint32(t.MsgCode))
		b = binary.BigEndian.AppendUint32(b, t.MsgDW2)
		b = binary.BigEndian.AppendUint32(b, t.MsgDW3)
	default:
		b = binary.BigEndian.AppendUint32(b, uint32(t.RequesterID)<<16|uint32(t.Tag&0xff)<<8|uint32(t.LastBE)<<4|uint32(t.FirstBE))
		switch {
		case k.IsConfig():
			b = binary.BigEndian.AppendUint32(b, uint32(t.TargetID)<<16|uint32(t.ExtReg)<<8|uint32(t.Reg)<<2)
		case t.HeaderDW() == 4:
			b = binary.BigEndian.AppendUint32(b, uint32(t.Addr>>32))
			b = binary.BigEndian.AppendUint32(b, uint32(t.Addr)|uint32(t.PH))
		default:
			b = binary.BigEndian.AppendUint32(b, uint32(t.Addr)|uint32(t.PH))
		}
	}
	if k.HasData() {
		b = append(b, t.Data...)
	}
	if t.TD {
		b = binary.BigEndian.AppendUint32(b, t.ECRC)
	}
	return b, nil
}

func b2u(v bool) uint32 {
	if v {
		return 1
	}
	return 0
}

// kindOf maps Fmt/Type back to a kind and whether the header is 4DW.
func kindOf(fmtF, typ uint8) (Kind, bool, error) {
	if fmtF == 4 {
		return 0, false, ferr("Fmt", "TLP prefixes (Fmt 100) are not supported")
	}
	if fmtF > 4 {
		return 0, false, ferr("Fmt", "%03b is reserved", fmtF)
	}
	data := fmtF&2 != 0
	four := fmtF&1 != 0
	if typ&0x18 == 0x10 { // 1_0rrr: message
		if !four {
			return 0, false, ferr("Fmt", "messages have 4DW headers")
		}
		if typ&7 > 5 {
			return 0, false, ferr("Type", "message routing %03b is reserved", typ&7)
		}
		if data {
			return MsgD, true, nil
		}
		return Msg, true, nil
	}
	for k := Kind(0); k < numKinds; k++ {
		ki := kinds[k]
		if ki.typ != typ || ki.data != data || k.IsMessage() {
			continue
		}
		if ki.only3DW && four {
			return 0, false, ferr("Fmt", "%v has a 3DW header, Fmt says 4DW", k)
		}
		return k, four, nil
	}
	return 0, false, ferr("Type", "Fmt %03b Type %05b is not a TLP type", fmtF, typ)
}

// Decode parses one TLP from b, which must hold exactly one TLP. It rejects
// malformed bytes with a FieldError that names the field.
func Decode(b []byte) (TLP, error) {
	var t TLP
	err := DecodeInto(&t, b)
	return t, err
}

// DecodeInto is Decode into an existing TLP; the payload aliases b.
func DecodeInto(t *TLP, b []byte) error {
	*t = TLP{}
	if len(b) < 12 {
		return ferr("header", "%d bytes, a TLP has at least 12", len(b))
	}
	dw0 := binary.BigEndian.Uint32(b)
	k, four, err := kindOf(uint8(dw0>>29), uint8(dw0>>24)&0x1f)
	if err != nil {
		return err
	}
	t.Kind = k
	t.Addr64 = four && k.IsMemory()
	t.TC = uint8(dw0>>20) & 7
	t.IDO = dw0>>18&1 != 0
	t.LN = dw0>>17&1 != 0
	t.TH = dw0>>16&1 != 0
	t.TD = dw0>>15&1 != 0
	t.EP = dw0>>14&1 != 0
	t.RO = dw0>>13&1 != 0
	t.NS = dw0>>12&1 != 0
	t.AT = uint8(dw0>>10) & 3
	length := uint16(dw0 & 0x3ff)
	tagHi := uint16(dw0>>23&1)<<9 | uint16(dw0>>19&1)<<8
	if k.HasData() || k.IsMemory() || k.IsIO() || k.IsConfig() {
		if length == 0 {
			length = 1024
		}
	}
	t.Length = length

	hdr := 12
	if four {
		hdr = 16
	}
	want := hdr
	if k.HasData() {
		want += int(length) * 4
	}
	if t.TD {
		want += 4
	}
	if len(b) != want {
		return ferr("Length", "%v with %d-DW header, Length %d and TD=%v is %d bytes, got %d", k, hdr/4, t.Length, t.TD, want, len(b))
	}
	dw1 := binary.BigEndian.Uint32(b[4:])
	dw2 := binary.BigEndian.Uint32(b[8:])
	switch {
	case k.IsCompletion():
		t.CompleterID = ID(dw1 >> 16)
		t.Status = Status(dw1>>13) & 7
		t.BCM = dw1>>12&1 != 0
		t.ByteCount = uint16(dw1 & 0xfff)
		if t.ByteCount == 0 {
			t.ByteCount = 4096
		}
		t.RequesterID = ID(dw2 >> 16)
		t.Tag = tagHi | uint16(dw2>>8&0xff)
		if dw2&0x80 != 0 {
			return ferr("LowerAddr", "reserved bit 7 of DW2 is set")
		}
		t.LowerAddr = uint8(dw2 & 0x7f)
	case k.IsMessage():
		t.RequesterID = ID(dw1 >> 16)
		t.Tag = tagHi | uint16(dw1>>8&0xff)
		t.MsgCode = uint8(dw1)
		t.Routing = uint8(dw0>>24) & 7
		t.MsgDW2 = dw2
		t.MsgDW3 = binary.BigEndian.Uint32(b[12:])
	default:
		t.RequesterID = ID(dw1 >> 16)
		t.Tag = tagHi | uint16(dw1>>8&0xff)
		t.LastBE = uint8(dw1>>4) & 0xf
		t.FirstBE = uint8(dw1) & 0xf
		switch {
		case k.IsConfig():
			if dw2&0xf003 != 0 {
				return ferr("Reg", "reserved bits of DW2 are set (%#08x)", dw2)
			}
			t.TargetID = ID(dw2 >> 16)
			t.ExtReg = uint8(dw2>>8) & 0xf
			t.Reg = uint8(dw2>>2) & 0x3f
		case four:
			lo := binary.BigEndian.Uint32(b[12:])
			t.Addr = uint64(dw2)<<32 | uint64(lo&^3)
			t.PH = uint8(lo & 3)
		default:
			t.Addr = uint64(dw2 &^ 3)
			t.PH = uint8(dw2 & 3)
		}
	}
	if k.HasData() {
		t.Data = b[hdr : hdr+int(length)*4]
	}
	if t.TD {
		t.ECRC = binary.BigEndian.Uint32(b[len(b)-4:])
	}
	if t.PH != 0 && !t.TH {
		return ferr("PH", "address bits 1:0 are %02b without TH", t.PH)
	}
	return t.Validate()
}

// EnabledBytes is the number of bytes a memory request's byte enables
// select (the Byte Count of its first completion).
func (t *TLP) EnabledBytes() int {
	if t.Length == 1 {
		if t.FirstBE == 0 {
			return 1 // zero-length read: one DW returns, Byte Count 1
		}
		return 4 - bits.LeadingZeros8(t.FirstBE<<4) - bits.TrailingZeros8(t.FirstBE)
	}
	return int(t.Length)*4 - bits.TrailingZeros8(t.FirstBE|0x10) - bits.LeadingZeros8(t.LastBE<<4)
}

// FirstByteOffset is the offset of the first enabled byte in the first DW.
func (t *TLP) FirstByteOffset() int {
	if t.FirstBE == 0 {
		return 0
	}
	return bits.TrailingZeros8(t.FirstBE)
}
