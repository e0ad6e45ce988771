package tlp

import (
	"fmt"
	"strings"
)

// String is a one-line summary: kind, IDs, tag, address and sizes.
func (t *TLP) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", t.Kind)
	switch {
	case t.Kind.IsCompletion():
		fmt.Fprintf(&b, " %v cpl=%v req=%v tag=%d bc=%d la=%#x", t.Status, t.CompleterID, t.RequesterID, t.Tag, t.ByteCount, t.LowerAddr)
	case t.Kind.IsMessage():
		fmt.Fprintf(&b, " code=%#02x r=%03b req=%v", t.MsgCode, t.Routing, t.RequesterID)
	case t.Kind.IsConfig():
		fmt.Fprintf(&b, " req=%v tag=%d target=%v reg=%#x", t.RequesterID, t.Tag, t.TargetID, int(t.ExtReg)<<8|int(t.Reg)<<2)
	default:
		fmt.Fprintf(&b, " req=%v tag=%d addr=%#x be=%04b/%04b", t.RequesterID, t.Tag, t.Addr, t.FirstBE, t.LastBE)
	}
	if t.Length != 0 {
		fmt.Fprintf(&b, " len=%dDW", t.Length)
	}
	return b.String()
}

// Describe lists every header field of the TLP, one per line, as a protocol
// analyser would, followed by the payload in DWs.
func (t *TLP) Describe() string {
	var b strings.Builder
	w := func(name, format string, a ...any) {
		fmt.Fprintf(&b, "  %-13s "+format+"\n", append([]any{name}, a...)...)
	}
	hdr := "3DW"
	if t.HeaderDW() == 4 {
		hdr = "4DW"
	}
	fmt.Fprintf(&b, "%v: %s header, Fmt %03b, Type %05b, %v class, %d bytes\n", t.Kind, hdr, t.fmtField(), t.typeField(), t.Kind.Class(), t.Size())
	w("TC", "%d", t.TC)
	w("Attr", "RO=%d NS=%d IDO=%d", b2u(t.RO), b2u(t.NS), b2u(t.IDO))
	w("TH/TD/EP/LN", "%d/%d/%d/%d", b2u(t.TH), b2u(t.TD), b2u(t.EP), b2u(t.LN))
	w("AT", "%02b", t.AT)
	length := fmt.Sprintf("%d DW", t.Length)
	if t.Length == 1024 {
		length += " (encoded as 0)"
	}
	w("Length", "%s", length)
	switch {
	case t.Kind.IsCompletion():
		w("Completer ID", "%v", t.CompleterID)
		w("Status", "%v", t.Status)
		w("BCM", "%d", b2u(t.BCM))
		w("Byte Count", "%d", t.ByteCount)
		w("Requester ID", "%v", t.RequesterID)
		w("Tag", "%d (%#x)", t.Tag, t.Tag)
		w("Lower Address", "%#02x", t.LowerAddr)
	case t.Kind.IsMessage():
		w("Requester ID", "%v", t.RequesterID)
		w("Tag", "%d", t.Tag)
		w("Routing", "%03b (%s)", t.Routing, []string{"to RC", "by address", "by ID", "broadcast from RC", "local", "gathered to RC"}[t.Routing])
		w("Message Code", "%#02x", t.MsgCode)
		w("DW2 DW3", "%08x %08x", t.MsgDW2, t.MsgDW3)
	default:
		w("Requester ID", "%v", t.RequesterID)
		w("Tag", "%d (%#x)", t.Tag, t.Tag)
		w("First DW BE", "%04b", t.FirstBE)
		w("Last DW BE", "%04b", t.LastBE)
		if t.Kind.IsConfig() {
			w("Target ID", "%v", t.TargetID)
			w("Register", "ext %#x, reg %#x (offset %#x)", t.ExtReg, t.Reg, int(t.ExtReg)<<8|int(t.Reg)<<2)
		} else {
			w("Address", "%#x", t.Addr)
			if t.TH {
				w("PH", "%02b", t.PH)
			}
		}
	}
	if t.TD {
		w("ECRC", "%08x", t.ECRC)
	}
	if len(t.Data) > 0 {
		var dws []string
		for i := 0; i+4 <= len(t.Data); i += 4 {
			dws = append(dws, fmt.Sprintf("%x", t.Data[i:i+4]))
		}
		const perLine = 8
		for i := 0; i < len(dws); i += perLine {
			name := ""
			if i == 0 {
				name = "Data"
			}
			w(name, "%s", strings.Join(dws[i:min(i+perLine, len(dws))], " "))
		}
	}
	return b.String()
}
