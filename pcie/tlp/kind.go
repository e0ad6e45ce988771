// Package tlp is the PCIe Transaction Layer Packet format: the TLP type with
// every header field, and its exact encoding and decoding (header DWs
// big-endian on the wire, payload in address order). It holds no model and
// imports none, so the golden model may share it.
package tlp

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Kind is a TLP type as Fmt[2:0]/Type[4:0] name it, independent of the
// header size (3DW or 4DW).
type Kind uint8

// TLP kinds.
const (
	MRd Kind = iota
	MRdLk
	MWr
	IORd
	IOWr
	CfgRd0
	CfgWr0
	CfgRd1
	CfgWr1
	Msg
	MsgD
	Cpl
	CplD
	CplLk
	CplDLk
	FetchAdd
	Swap
	CAS
	numKinds
)

type kindInfo struct {
	name     string
	typ      uint8 // Type[4:0]; for messages the routing bits are added
	data     bool  // carries a payload
	addr     bool  // address-routed request with a 32- or 64-bit address
	only3DW  bool
	only4DW  bool
	class    Class
	complete bool // a completion
}

var kinds = [numKinds]kindInfo{
	MRd:      {"MRd", 0x00, false, true, false, false, NonPosted, false},
	MRdLk:    {"MRdLk", 0x01, false, true, false, false, NonPosted, false},
	MWr:      {"MWr", 0x00, true, true, false, false, Posted, false},
	IORd:     {"IORd", 0x02, false, false, true, false, NonPosted, false},
	IOWr:     {"IOWr", 0x02, true, false, true, false, NonPosted, false},
	CfgRd0:   {"CfgRd0", 0x04, false, false, true, false, NonPosted, false},
	CfgWr0:   {"CfgWr0", 0x04, true, false, true, false, NonPosted, false},
	CfgRd1:   {"CfgRd1", 0x05, false, false, true, false, NonPosted, false},
	CfgWr1:   {"CfgWr1", 0x05, true, false, true, false, NonPosted, false},
	Msg:      {"Msg", 0x10, false, false, false, true, Posted, false},
	MsgD:     {"MsgD", 0x10, true, false, false, true, Posted, false},
	Cpl:      {"Cpl", 0x0A, false, false, true, false, Completion, true},
	CplD:     {"CplD", 0x0A, true, false, true, false, Completion, true},
	CplLk:    {"CplLk", 0x0B, false, false, true, false, Completion, true},
	CplDLk:   {"CplDLk", 0x0B, true, false, true, false, Completion, true},
	FetchAdd: {"FetchAdd", 0x0C, true, true, false, false, NonPosted, false},
	Swap:     {"Swap", 0x0D, true, true, false, false, NonPosted, false},
	CAS:      {"CAS", 0x0E, true, true, false, false, NonPosted, false},
}

func (k Kind) String() string {
	if k < numKinds {
		return kinds[k].name
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind reads a kind by name, case-insensitively ("MWr", "cpld").
func ParseKind(s string) (Kind, error) {
	for k := Kind(0); k < numKinds; k++ {
		if strings.EqualFold(kinds[k].name, s) {
			return k, nil
		}
	}
	names := make([]string, numKinds)
	for k := range names {
		names[k] = kinds[k].name
	}
	return 0, fmt.Errorf("TLP type %q: want one of %s", s, strings.Join(names, ", "))
}

// HasData reports whether TLPs of this kind carry a payload.
func (k Kind) HasData() bool { return kinds[k].data }

// IsMemory reports whether the kind is an address-routed memory request
// (memory reads and writes, AtomicOps).
func (k Kind) IsMemory() bool { return kinds[k].addr }

// IsCompletion reports whether the kind is a completion.
func (k Kind) IsCompletion() bool { return kinds[k].complete }

// IsAtomic reports whether the kind is an AtomicOp request.
func (k Kind) IsAtomic() bool { return k == FetchAdd || k == Swap || k == CAS }

// IsMessage reports whether the kind is a message.
func (k Kind) IsMessage() bool { return k == Msg || k == MsgD }

// IsConfig reports whether the kind is a configuration request.
func (k Kind) IsConfig() bool { return k >= CfgRd0 && k <= CfgWr1 }

// IsIO reports whether the kind is an I/O request.
func (k Kind) IsIO() bool { return k == IORd || k == IOWr }

// Class is the flow-control class of a TLP.
type Class uint8

// Flow-control classes.
const (
	Posted Class = iota
	NonPosted
	Completion
)

func (c Class) String() string {
	switch c {
	case Posted:
		return "P"
	case NonPosted:
		return "NP"
	case Completion:
		return "Cpl"
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Class is the kind's flow-control class.
func (k Kind) Class() Class { return kinds[k].class }

// Status is a completion status.
type Status uint8

// Completion statuses (the reserved codes are rejected by Decode).
const (
	SC  Status = 0 // successful completion
	UR  Status = 1 // unsupported request
	CRS Status = 2 // configuration request retry status
	CA  Status = 4 // completer abort
)

func (s Status) String() string {
	switch s {
	case SC:
		return "SC"
	case UR:
		return "UR"
	case CRS:
		return "CRS"
	case CA:
		return "CA"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// ParseStatus reads SC, UR, CRS or CA.
func ParseStatus(s string) (Status, error) {
	for _, st := range []Status{SC, UR, CRS, CA} {
		if strings.EqualFold(st.String(), s) {
			return st, nil
		}
	}
	return 0, fmt.Errorf("completion status %q: want SC, UR, CRS or CA", s)
}

// ID is a bus/device/function: Bus[15:8] Device[7:3] Function[2:0].
type ID uint16

// NewID builds an ID from its parts.
func NewID(bus, dev, fn uint8) ID { return ID(uint16(bus)<<8 | uint16(dev&0x1f)<<3 | uint16(fn&7)) }

// Bus number.
func (id ID) Bus() uint8 { return uint8(id >> 8) }

// Device number.
func (id ID) Device() uint8 { return uint8(id>>3) & 0x1f }

// Function number.
func (id ID) Function() uint8 { return uint8(id) & 7 }

func (id ID) String() string {
	return fmt.Sprintf("%02x:%02x.%x", id.Bus(), id.Device(), id.Function())
}

var idRE = regexp.MustCompile(`^([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$`)

// ParseID reads "bb:dd.f" in hex, as lspci prints it.
func ParseID(s string) (ID, error) {
	m := idRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("ID %q: want bus:device.function in hex, e.g. 01:00.0", s)
	}
	b, _ := strconv.ParseUint(m[1], 16, 8)
	d, _ := strconv.ParseUint(m[2], 16, 8)
	f, _ := strconv.ParseUint(m[3], 16, 8)
	if d > 0x1f {
		return 0, fmt.Errorf("ID %q: device %#x is above 0x1f", s, d)
	}
	return NewID(uint8(b), uint8(d), uint8(f)), nil
}
