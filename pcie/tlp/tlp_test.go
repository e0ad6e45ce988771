package tlp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

var rid = NewID(1, 0, 0) // 01:00.0

// Known answers: each TLP kind, written down DW by DW from the field tables.
var vectors = []struct {
	name string
	tlp  TLP
	hex  string
}{
	{"MWr 3DW 1 DW", TLP{Kind: MWr, Length: 1, RequesterID: rid, Tag: 5, FirstBE: 0xf, Addr: 0x1000, Data: unhex("11223344")},
		"40000001 0100050f 00001000 11223344"},
	{"MWr 3DW partial BEs", TLP{Kind: MWr, Length: 2, RequesterID: rid, Tag: 6, FirstBE: 0xc, LastBE: 0x3, Addr: 0x2004, Data: unhex("0000aabb ccdd0000")},
		"40000002 0100063c 00002004 0000aabb ccdd0000"},
	{"MRd 4DW", TLP{Kind: MRd, Addr64: true, Length: 16, RequesterID: NewID(2, 3, 1), Tag: 0x2a, FirstBE: 0xf, LastBE: 0xf, Addr: 0x1_0000_0040},
		"20000010 02192aff 00000001 00000040"},
	{"MRd 10-bit tag", TLP{Kind: MRd, Length: 1, RequesterID: rid, Tag: 0x3a5, FirstBE: 0xf, Addr: 0x40},
		"00880001 0100a50f 00000040"},
	{"MRd zero-length", TLP{Kind: MRd, Length: 1, RequesterID: rid, Tag: 1, Addr: 0x80},
		"00000001 01000100 00000080"},
	{"MRdLk", TLP{Kind: MRdLk, Length: 1, RequesterID: rid, Tag: 2, FirstBE: 0xf, Addr: 0x100},
		"01000001 0100020f 00000100"},
	{"MWr 4DW 1024 DW", TLP{Kind: MWr, Addr64: true, Length: 1024, RequesterID: rid, FirstBE: 0xf, LastBE: 0xf, Addr: 0x2_0000_0000, Data: make([]byte, 4096)},
		"60000000 010000ff 00000002 00000000" + strings.Repeat("00", 4096)},
	{"MWr attributes and ECRC", TLP{Kind: MWr, TC: 3, RO: true, NS: true, EP: true, TD: true, ECRC: 0xdeadbeef, Length: 1, RequesterID: rid, FirstBE: 0xf, Addr: 0x10, Data: unhex("01020304")},
		"4030f001 0100000f 00000010 01020304 deadbeef"},
	{"MWr IDO TH PH AT LN", TLP{Kind: MWr, IDO: true, TH: true, PH: 2, AT: 2, LN: true, Length: 1, RequesterID: rid, FirstBE: 0xf, Addr: 0x10, Data: unhex("01020304")},
		"40070801 0100000f 00000012 01020304"},
	{"IORd", TLP{Kind: IORd, Length: 1, RequesterID: rid, Tag: 3, FirstBE: 0x3, Addr: 0xcf8},
		"02000001 01000303 00000cf8"},
	{"IOWr", TLP{Kind: IOWr, Length: 1, RequesterID: rid, Tag: 4, FirstBE: 0xf, Addr: 0xcfc, Data: unhex("78563412")},
		"42000001 0100040f 00000cfc 78563412"},
	{"CfgRd0", TLP{Kind: CfgRd0, Length: 1, RequesterID: NewID(0, 0, 0), Tag: 7, FirstBE: 0xf, TargetID: rid, Reg: 4},
		"04000001 0000070f 01000010"},
	{"CfgWr1", TLP{Kind: CfgWr1, Length: 1, RequesterID: NewID(0, 0, 0), Tag: 8, FirstBE: 0x1, TargetID: NewID(3, 1, 2), ExtReg: 1, Reg: 0x3f, Data: unhex("ff000000")},
		"45000001 00000801 030a01fc ff000000"},
	{"Msg Assert_INTA local", TLP{Kind: Msg, Routing: 4, RequesterID: rid, MsgCode: 0x20},
		"34000000 01000020 00000000 00000000"},
	{"MsgD vendor by ID", TLP{Kind: MsgD, Routing: 2, Length: 1, RequesterID: rid, Tag: 9, MsgCode: 0x7f, MsgDW2: 0x02000001, MsgDW3: 0xcafe, Data: unhex("a1a2a3a4")},
		"72000001 0100097f 02000001 0000cafe a1a2a3a4"},
	{"CplD SC", TLP{Kind: CplD, Length: 1, CompleterID: NewID(0, 0, 0), ByteCount: 4, RequesterID: rid, Tag: 5, LowerAddr: 0x10, Data: unhex("11223344")},
		"4a000001 00000004 01000510 11223344"},
	{"Cpl UR", TLP{Kind: Cpl, CompleterID: NewID(0, 1, 0), Status: UR, ByteCount: 4, RequesterID: rid, Tag: 5},
		"0a000000 00082004 01000500"},
	{"Cpl CA 10-bit tag", TLP{Kind: Cpl, CompleterID: NewID(0, 1, 0), Status: CA, ByteCount: 64, RequesterID: rid, Tag: 0x2ff},
		"0a800000 00088040 0100ff00"},
	{"Cpl CRS", TLP{Kind: Cpl, CompleterID: rid, Status: CRS, ByteCount: 4, RequesterID: NewID(0, 0, 0), Tag: 1},
		"0a000000 01004004 00000100"},
	{"CplD byte count 4096 BCM", TLP{Kind: CplD, Length: 1, CompleterID: rid, BCM: true, ByteCount: 4096, RequesterID: rid, LowerAddr: 0x7c, Data: unhex("00000000")},
		"4a000001 01001000 0100007c 00000000"},
	{"CplLk", TLP{Kind: CplLk, CompleterID: rid, Status: UR, ByteCount: 4, RequesterID: rid},
		"0b000000 01002004 01000000"},
	{"CplDLk", TLP{Kind: CplDLk, Length: 1, CompleterID: rid, ByteCount: 4, RequesterID: rid, Data: unhex("01000000")},
		"4b000001 01000004 01000000 01000000"},
	{"FetchAdd 64-bit", TLP{Kind: FetchAdd, Length: 2, RequesterID: rid, Tag: 0x11, Addr: 0x2000, Data: unhex("0100000000000000")},
		"4c000002 01001100 00002000 01000000 00000000"},
	{"Swap 32-bit 4DW", TLP{Kind: Swap, Addr64: true, Length: 1, RequesterID: rid, Tag: 0x12, Addr: 0x1_0000_0004, Data: unhex("55aa55aa")},
		"6d000001 01001200 00000001 00000004 55aa55aa"},
	{"CAS 2x64 4DW", TLP{Kind: CAS, Addr64: true, Length: 4, RequesterID: rid, Tag: 0x13, Addr: 0x1_0000_1000, Data: unhex("00000000000000000100000000000000")},
		"6e000004 01001300 00000001 00001000 00000000 00000000 01000000 00000000"},
}

func TestKnownAnswers(t *testing.T) {
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			want := unhex(v.hex)
			got, err := v.tlp.Encode()
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encode:\n got %x\nwant %x", got, want)
			}
			back, err := Decode(want)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !equalTLP(back, v.tlp) {
				t.Fatalf("decode:\n got %+v\nwant %+v", back, v.tlp)
			}
		})
	}
}

func equalTLP(a, b TLP) bool {
	if len(a.Data) == 0 && len(b.Data) == 0 {
		a.Data, b.Data = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// randomTLP draws a well-formed TLP of any kind.
func randomTLP(r *rand.Rand) TLP {
	t := TLP{Kind: Kind(r.IntN(int(numKinds))), TC: uint8(r.IntN(8)), RO: r.IntN(2) == 0, NS: r.IntN(2) == 0,
		IDO: r.IntN(2) == 0, EP: r.IntN(4) == 0, LN: r.IntN(8) == 0, AT: uint8(r.IntN(4)),
		RequesterID: ID(r.Uint32()), Tag: uint16(r.IntN(1024))}
	if r.IntN(4) == 0 {
		t.TD, t.ECRC = true, r.Uint32()
	}
	k := t.Kind
	switch {
	case k.IsMemory() && !k.IsAtomic():
		addr := uint64(r.IntN(1<<20)) << 2
		if r.IntN(2) == 0 {
			addr |= uint64(r.IntN(1<<20)+1) << 32
		}
		room := int(0x1000-addr&0xfff) / 4
		t.Length = uint16(1 + r.IntN(min(room, 1024)))
		t.Addr, t.Addr64 = addr, addr >= 1<<32
		switch {
		case t.Length == 1:
			t.FirstBE = uint8(r.IntN(16))
		default:
			t.FirstBE = []uint8{0xf, 0xe, 0xc, 0x8}[r.IntN(4)]
			t.LastBE = []uint8{0xf, 0x7, 0x3, 0x1}[r.IntN(4)]
		}
		if r.IntN(3) == 0 {
			t.TH, t.PH = true, uint8(r.IntN(4))
		}
	case k.IsAtomic():
		switch k {
		case CAS:
			t.Length = []uint16{2, 4, 8}[r.IntN(3)]
		default:
			t.Length = uint16(1 + r.IntN(2))
		}
		op := uint64(t.Length) * 4
		if k == CAS {
			op /= 2
		}
		t.Addr = uint64(r.IntN(1<<20)) * op
		if r.IntN(2) == 0 {
			t.Addr += 1 << 33
		}
		t.Addr64 = t.Addr >= 1<<32
	case k.IsIO() || k.IsConfig():
		t.TC, t.RO, t.NS, t.IDO = 0, false, false, false
		t.Length, t.FirstBE = 1, uint8(r.IntN(16))
		if k.IsIO() {
			t.Addr = uint64(r.Uint32()) &^ 3
		} else {
			t.TargetID, t.ExtReg, t.Reg = ID(r.Uint32()), uint8(r.IntN(16)), uint8(r.IntN(64))
		}
	case k.IsMessage():
		t.Routing, t.MsgCode, t.MsgDW2, t.MsgDW3 = uint8(r.IntN(6)), uint8(r.Uint32()), r.Uint32(), r.Uint32()
		if k.HasData() {
			t.Length = uint16(1 + r.IntN(64))
		}
	case k.IsCompletion():
		t.CompleterID, t.Status = ID(r.Uint32()), []Status{SC, UR, CRS, CA}[r.IntN(4)]
		t.BCM, t.ByteCount, t.LowerAddr = r.IntN(8) == 0, uint16(1+r.IntN(4096)), uint8(r.IntN(128))
		if k.HasData() {
			t.Length = uint16(1 + r.IntN(1024))
		}
	}
	if k.HasData() {
		t.Data = make([]byte, int(t.Length)*4)
		for i := range t.Data {
			t.Data[i] = byte(r.Uint32())
		}
	}
	return t
}

// Round trip: every well-formed TLP decodes back to itself, and its bytes
// re-encode to the same bytes.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		in := randomTLP(r)
		b, err := in.Encode()
		if err != nil {
			t.Fatalf("#%d %v: encode of a well-formed TLP failed: %v\n%+v", i, in.Kind, err, in)
		}
		if len(b) != in.Size() {
			t.Fatalf("#%d: %d bytes, Size says %d", i, len(b), in.Size())
		}
		out, err := Decode(b)
		if err != nil {
			t.Fatalf("#%d %v: decode: %v\n%x", i, in.Kind, err, b)
		}
		if !equalTLP(in, out) {
			t.Fatalf("#%d: round trip changed the TLP\n in %+v\nout %+v", i, in, out)
		}
		b2, _ := out.Encode()
		if !bytes.Equal(b, b2) {
			t.Fatalf("#%d: re-encoding differs", i)
		}
	}
}

// Malformed bytes are rejected with an error that names the field.
func TestDecodeRejectsMalformed(t *testing.T) {
	cases := []struct {
		name, hex, field string
	}{
		{"too short", "40000001 0100050f", "header"},
		{"payload shorter than Length", "40000002 0100050f 00001000 11223344", "Length"},
		{"payload longer than Length", "40000001 0100050f 00001000 11223344 55667788", "Length"},
		{"missing ECRC", "40008001 0100050f 00001000 11223344", "Length"},
		{"TLP prefix", "80000001 0100050f 00001000", "Fmt"},
		{"reserved Fmt", "a0000001 0100050f 00001000", "Fmt"},
		{"unknown Type", "03000001 0100050f 00001000", "Type"},
		{"reserved message routing", "36000000 01000020 00000000 00000000", "Type"},
		{"message with 3DW header", "14000000 01000020 00000000", "Fmt"},
		{"4DW header below 4 GB", "20000001 0100050f 00000000 00001000", "Fmt"},
		{"4 KB crossing", "40000002 010005ff 00001ffc 00000000 00000000", "Length"},
		{"last BE on 1 DW", "40000001 010005ff 00001000 11223344", "LastBE"},
		{"first BE zero on 2 DW", "00000002 010005f0 00001004", "FirstBE"},
		{"hole in first BE", "00000003 010005f5 00001000", "FirstBE"},
		{"hole in last BE", "00000003 010005bf 00001000", "LastBE"},
		{"IO with Length 2", "02000002 0100050f 00000cf8", "Length"},
		{"Cfg with TC", "04100001 0000070f 01000010", "TC"},
		{"Cfg reserved bits", "04000001 0000070f 01000013", "Reg"},
		{"reserved completion status", "0a000000 0008e004 01000500", "Status"},
		{"Cpl without data with Length", "0a000001 00082004 01000500", "Length"},
		{"completion reserved bit", "4a000001 00000004 01000590 11223344", "LowerAddr"},
		{"PH without TH", "40000001 0100050f 00001001 11223344", "PH"},
		{"FetchAdd of 3 DW", "4c000003 01001100 00002000 00000000 00000000 00000000", "Length"},
		{"CAS misaligned", "4e000004 01001300 00002004 00000000 00000000 00000000 00000000", "Addr"},
		{"atomic with BEs", "4c000001 0100110f 00002000 00000000", "FirstBE"},
		{"message with data, Length 0 = 1024 DW but no payload", "70000000 0100097f 00000000 00000000", "Length"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(unhex(tc.hex))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a FieldError", err)
			}
			if fe.Field != tc.field {
				t.Fatalf("error names %q (%v), want %q", fe.Field, err, tc.field)
			}
		})
	}
}

func TestByteEnables(t *testing.T) {
	cases := []struct {
		addr        uint64
		n           int
		dw          uint64
		length      uint16
		first, last uint8
	}{
		{0x1000, 4, 0x1000, 1, 0xf, 0},
		{0x1001, 2, 0x1000, 1, 0x6, 0},
		{0x1003, 1, 0x1000, 1, 0x8, 0},
		{0x1002, 4, 0x1000, 2, 0xc, 0x3},
		{0x1001, 64, 0x1000, 17, 0xe, 0x1},
		{0x1000, 0, 0x1000, 1, 0, 0},
		{0xffc, 4096, 0xffc, 1024, 0xf, 0xf},
	}
	for _, c := range cases {
		dw, l, f, la := ByteEnables(c.addr, c.n)
		if dw != c.dw || l != c.length || f != c.first || la != c.last {
			t.Errorf("ByteEnables(%#x, %d) = %#x %d %04b %04b, want %#x %d %04b %04b", c.addr, c.n, dw, l, f, la, c.dw, c.length, c.first, c.last)
		}
		rd := TLP{Length: l, FirstBE: f, LastBE: la}
		if c.n > 0 && rd.EnabledBytes() != c.n {
			t.Errorf("EnabledBytes of %d bytes at %#x = %d", c.n, c.addr, rd.EnabledBytes())
		}
	}
}

func TestIDParse(t *testing.T) {
	id, err := ParseID("01:1f.7")
	if err != nil || id.Bus() != 1 || id.Device() != 0x1f || id.Function() != 7 || id.String() != "01:1f.7" {
		t.Fatalf("%v %v", id, err)
	}
	for _, bad := range []string{"1:2", "01:20.0", "01:00.8", "g1:00.0", ""} {
		if _, err := ParseID(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzDecode: no input makes Decode panic, and whatever it accepts
// re-encodes to exactly the same bytes.
func FuzzDecode(f *testing.F) {
	for _, v := range vectors {
		f.Add(unhex(v.hex))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tl, err := Decode(b)
		if err != nil {
			return
		}
		out, err := tl.Encode()
		if err != nil {
			t.Fatalf("decoded TLP does not re-encode: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", b, out)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	t := NewMemWrite(rid, 1, 0x1_0000_0000, make([]byte, 256))
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf, _ = t.AppendEncode(buf[:0])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "TLPs/s")
}

func BenchmarkDecode(b *testing.B) {
	t := NewMemWrite(rid, 1, 0x1_0000_0000, make([]byte, 256))
	buf, _ := t.Encode()
	var out TLP
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := DecodeInto(&out, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "TLPs/s")
}
