package record

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func TestLayout(t *testing.T) {
	h := Header{Kind: Put, Flags: FlagData | FlagBlocked, IUID: 0x3ff, Requester: 0x0100, Tag: 0x2a5,
		IOVA: 0x0000_7f00_0000_1008, Length: 17, DataLen: 17, Seq: 9}
	b := make([]byte, HeaderSize)
	h.Put(b)
	want := "0103ff030001a502" + "0810000000 7f0000" + "1100000011000000" + "0900000000000000"
	w, _ := hex.DecodeString(string(bytes.ReplaceAll([]byte(want), []byte(" "), nil)))
	if !bytes.Equal(b, w) {
		t.Fatalf("header\n got %x\nwant %x", b, w)
	}
	back, err := Parse(b)
	if err != nil || back != h {
		t.Fatalf("%+v %v", back, err)
	}
	if h.Size() != 32+24 || Size(0) != 32 || Size(8) != 40 {
		t.Fatal("sizes")
	}
}

func TestParseRejects(t *testing.T) {
	for _, h := range []Header{
		{Kind: 7},
		{Kind: Put, IUID: 1024},
		{Kind: Put, Flags: FlagData},
		{Kind: Put, DataLen: 4},
		{Kind: Pad, Length: 12},
		{Kind: Put, Flags: 0x80},
	} {
		b := make([]byte, HeaderSize)
		h.Put(b)
		if _, err := Parse(b); err == nil {
			t.Errorf("%+v accepted", h)
		}
	}
}

func FuzzParse(f *testing.F) {
	b := make([]byte, HeaderSize)
	(&Header{Kind: Get, Flags: FlagData, DataLen: 64, Length: 64}).Put(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b)
		if err != nil {
			return
		}
		out := make([]byte, HeaderSize)
		h.Put(out)
		if !bytes.Equal(out, b[:HeaderSize]) {
			t.Fatal("re-encoding differs")
		}
	})
}
