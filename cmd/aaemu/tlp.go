package main

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/pcie/tlp"
)

func newTLPCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tlp", Short: "Decode and build PCIe TLPs"}
	cmd.AddCommand(&cobra.Command{
		Use:   "decode HEX",
		Short: "Print every field of a TLP given as hex bytes",
		Long: `Decode parses a TLP given as hex bytes (header DWs big-endian, as on the wire;
spaces, colons and a 0x prefix are ignored) and prints every header field and
the payload. Malformed TLPs are errors that name the field.`,
		Example: `  aaemu tlp decode 40000001 0100050f 00001000 11223344`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s := strings.NewReplacer(" ", "", ":", "", "_", "", "\t", "").Replace(strings.Join(args, ""))
			s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
			b, err := hex.DecodeString(s)
			if err != nil {
				return fmt.Errorf("not hex bytes: %w", err)
			}
			t, err := tlp.Decode(b)
			if err != nil {
				return err
			}
			fmt.Fprint(cmd.OutOrStdout(), t.Describe())
			return nil
		},
	})
	cmd.AddCommand(newTLPEncodeCmd())
	return cmd
}

type encodeOpts struct {
	typ, requester, completer, target, status, data string
	addr                                            string
	length, tag, tc, byteCount, lowerAddr           int
	ro, ns, ido, ep, td, th, ln                     bool
	ph, at, msgCode, routing, reg                   int
}

func newTLPEncodeCmd() *cobra.Command {
	var o encodeOpts
	cmd := &cobra.Command{
		Use:   "encode",
		Short: "Build a TLP from flags and print its bytes",
		Long: `Encode builds a TLP and prints its bytes as hex DWs, then every field.
--len is in bytes: for memory requests the DW address, Length and byte enables
follow from --addr and --len; 4DW headers are used above 4 GB. --data gives the
payload in hex (default: zero bytes).`,
		Example: `  aaemu tlp encode --type MWr --addr 0x1000 --len 16 --requester 01:00.0 --tag 5
  aaemu tlp encode --type MRd --addr 0x1_0000_0040 --len 64 --tag 0x2a
  aaemu tlp encode --type CplD --completer 00:00.0 --requester 01:00.0 --tag 5 --len 4 --byte-count 4
  aaemu tlp encode --type Msg --routing 4 --msg-code 0x20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := buildTLP(o)
			if err != nil {
				return err
			}
			b, err := t.Encode()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var dws []string
			for i := 0; i < len(b); i += 4 {
				dws = append(dws, hex.EncodeToString(b[i:i+4]))
			}
			fmt.Fprintln(out, strings.Join(dws, " "))
			fmt.Fprint(out, t.Describe())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.typ, "type", "MWr", "TLP type: MRd, MRdLk, MWr, IORd, IOWr, CfgRd0, CfgWr0, CfgRd1, CfgWr1, Msg, MsgD, Cpl, CplD, CplLk, CplDLk, FetchAdd, Swap, CAS")
	f.StringVar(&o.addr, "addr", "0", "byte address (memory, I/O)")
	f.IntVar(&o.length, "len", 4, "bytes of payload or requested")
	f.StringVar(&o.requester, "requester", "01:00.0", "requester ID bus:dev.fn")
	f.StringVar(&o.completer, "completer", "00:00.0", "completer ID (completions)")
	f.StringVar(&o.target, "target", "01:00.0", "target ID (configuration requests)")
	f.IntVar(&o.tag, "tag", 0, "tag (up to 10 bits)")
	f.IntVar(&o.tc, "tc", 0, "traffic class")
	f.BoolVar(&o.ro, "ro", false, "relaxed ordering")
	f.BoolVar(&o.ns, "ns", false, "no snoop")
	f.BoolVar(&o.ido, "ido", false, "ID-based ordering")
	f.BoolVar(&o.ep, "ep", false, "poisoned")
	f.BoolVar(&o.td, "td", false, "append a 4-byte ECRC field (written as 0: aaemu does not compute ECRC)")
	f.BoolVar(&o.th, "th", false, "TLP processing hints")
	f.IntVar(&o.ph, "ph", 0, "processing hint (with --th)")
	f.BoolVar(&o.ln, "ln", false, "lightweight notification")
	f.IntVar(&o.at, "at", 0, "address type")
	f.StringVar(&o.status, "status", "SC", "completion status: SC, UR, CRS, CA")
	f.IntVar(&o.byteCount, "byte-count", -1, "completion byte count (default: --len)")
	f.IntVar(&o.lowerAddr, "lower-addr", -1, "completion lower address (default: --addr & 0x7f)")
	f.IntVar(&o.msgCode, "msg-code", 0, "message code")
	f.IntVar(&o.routing, "routing", 4, "message routing r[2:0]")
	f.IntVar(&o.reg, "reg", 0, "configuration register byte offset")
	f.StringVar(&o.data, "data", "", "payload bytes in hex")
	return cmd
}

func buildTLP(o encodeOpts) (tlp.TLP, error) {
	k, err := tlp.ParseKind(o.typ)
	if err != nil {
		return tlp.TLP{}, err
	}
	addr, err := strconv.ParseUint(strings.ReplaceAll(o.addr, "_", ""), 0, 64)
	if err != nil {
		return tlp.TLP{}, fmt.Errorf("--addr %q: not a number", o.addr)
	}
	req, err := tlp.ParseID(o.requester)
	if err != nil {
		return tlp.TLP{}, fmt.Errorf("--requester: %w", err)
	}
	if o.length < 0 || o.length > 4096 {
		return tlp.TLP{}, fmt.Errorf("--len %d: want 0 to 4096 bytes", o.length)
	}
	if o.tag < 0 || o.tag > 0x3ff || o.tc < 0 || o.tc > 7 || o.ph < 0 || o.ph > 3 || o.at < 0 || o.at > 3 {
		return tlp.TLP{}, fmt.Errorf("--tag, --tc, --ph or --at out of range")
	}
	var data []byte
	if o.data != "" {
		if data, err = hex.DecodeString(strings.ReplaceAll(o.data, " ", "")); err != nil {
			return tlp.TLP{}, fmt.Errorf("--data: %w", err)
		}
		if len(data) != o.length {
			return tlp.TLP{}, fmt.Errorf("--data has %d bytes, --len says %d", len(data), o.length)
		}
	} else if k.HasData() {
		data = make([]byte, o.length)
	}
	var t tlp.TLP
	switch {
	case k == tlp.MWr || k == tlp.MRd || k == tlp.MRdLk:
		if k == tlp.MWr {
			t = tlp.NewMemWrite(req, uint16(o.tag), addr, data)
		} else {
			t = tlp.NewMemRead(req, uint16(o.tag), addr, o.length)
			t.Kind = k
		}
	case k.IsAtomic():
		t = tlp.TLP{Kind: k, Addr: addr, Addr64: addr >= 1<<32, Length: uint16(o.length / 4), RequesterID: req, Tag: uint16(o.tag), Data: data}
	case k.IsIO():
		dw, l, first, _ := tlp.ByteEnables(addr, o.length)
		t = tlp.TLP{Kind: k, Addr: dw, Length: l, FirstBE: first, RequesterID: req, Tag: uint16(o.tag)}
		if k.HasData() {
			t.Data = make([]byte, 4)
			copy(t.Data[addr&3:], data)
		}
	case k.IsConfig():
		target, err := tlp.ParseID(o.target)
		if err != nil {
			return tlp.TLP{}, fmt.Errorf("--target: %w", err)
		}
		_, _, first, _ := tlp.ByteEnables(uint64(o.reg), o.length)
		t = tlp.TLP{Kind: k, Length: 1, FirstBE: first, RequesterID: req, Tag: uint16(o.tag), TargetID: target,
			ExtReg: uint8(o.reg >> 8 & 0xf), Reg: uint8(o.reg >> 2 & 0x3f)}
		if k.HasData() {
			t.Data = make([]byte, 4)
			copy(t.Data[o.reg&3:], data)
		}
	case k.IsMessage():
		t = tlp.TLP{Kind: k, Routing: uint8(o.routing), MsgCode: uint8(o.msgCode), RequesterID: req, Tag: uint16(o.tag)}
		if k.HasData() {
			t.Length, t.Data = uint16((o.length+3)/4), make([]byte, (o.length+3)/4*4)
			copy(t.Data, data)
		}
	case k.IsCompletion():
		cpl, err := tlp.ParseID(o.completer)
		if err != nil {
			return tlp.TLP{}, fmt.Errorf("--completer: %w", err)
		}
		st, err := tlp.ParseStatus(o.status)
		if err != nil {
			return tlp.TLP{}, err
		}
		bc, la := o.byteCount, o.lowerAddr
		if bc < 0 {
			bc = o.length
		}
		if la < 0 {
			la = int(addr & 0x7f)
		}
		t = tlp.TLP{Kind: k, CompleterID: cpl, Status: st, ByteCount: uint16(bc), LowerAddr: uint8(la), RequesterID: req, Tag: uint16(o.tag)}
		if k.HasData() {
			t.Length, t.Data = uint16((o.length+3)/4), make([]byte, (o.length+3)/4*4)
			copy(t.Data, data)
		}
	}
	t.TC, t.RO, t.NS, t.IDO, t.EP, t.TD, t.TH, t.PH, t.LN, t.AT = uint8(o.tc), o.ro, o.ns, o.ido, o.ep, o.td, o.th, uint8(o.ph), o.ln, uint8(o.at)
	return t, nil
}
