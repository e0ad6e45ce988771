package main

import (
	"strings"
	"testing"
)

// Every TLP the encoder builds decodes back, field for field.
func TestTLPEncodeDecode(t *testing.T) {
	cases := []struct {
		args []string
		hex  string // first line of encode
		want []string
	}{
		{[]string{"--type", "MWr", "--addr", "0x1000", "--len", "16", "--requester", "01:00.0", "--tag", "5"},
			"40000004 010005ff 00001000 00000000 00000000 00000000 00000000", []string{"MWr: 3DW header", "Tag           5"}},
		{[]string{"--type", "MRd", "--addr", "0x1_0000_0041", "--len", "6", "--tag", "0x2a"},
			"20000002 01002a7e 00000001 00000040", []string{"4DW header", "First DW BE   1110", "Last DW BE    0111"}},
		{[]string{"--type", "CplD", "--completer", "00:00.0", "--requester", "01:00.0", "--tag", "5", "--len", "4", "--addr", "0x10", "--data", "11223344"},
			"4a000001 00000004 01000510 11223344", []string{"Status        SC", "Lower Address 0x10"}},
		{[]string{"--type", "Cpl", "--status", "UR", "--len", "0", "--byte-count", "4"},
			"0a000000 00002004 01000000", []string{"Status        UR"}},
		{[]string{"--type", "Msg", "--routing", "4", "--msg-code", "0x20"},
			"34000000 01000020 00000000 00000000", []string{"Message Code  0x20", "local"}},
		{[]string{"--type", "CfgRd0", "--target", "02:00.0", "--reg", "0x10", "--requester", "00:00.0"},
			"04000001 0000000f 02000010", []string{"Target ID     02:00.0"}},
		{[]string{"--type", "FetchAdd", "--addr", "0x2000", "--len", "8"},
			"4c000002 01000000 00002000 00000000 00000000", []string{"FetchAdd"}},
	}
	for _, tc := range cases {
		out, err := aaemu(t, append([]string{"tlp", "encode"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		first, rest, _ := strings.Cut(out, "\n")
		if first != tc.hex {
			t.Errorf("%v: encoded %s, want %s", tc.args, first, tc.hex)
		}
		dec, err := aaemu(t, "tlp", "decode", first)
		if err != nil {
			t.Fatalf("decode %s: %v", first, err)
		}
		if dec != rest {
			t.Errorf("decode of %s differs from the encoder's listing:\n%s\n---\n%s", first, dec, rest)
		}
		for _, w := range tc.want {
			if !strings.Contains(dec, w) {
				t.Errorf("%v: listing lacks %q:\n%s", tc.args, w, dec)
			}
		}
	}
}

func TestTLPErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tlp", "decode", "40000002 0100050f 00001000 11223344"}, "TLP Length"},
		{[]string{"tlp", "decode", "zz"}, "not hex"},
		{[]string{"tlp", "encode", "--type", "MWx"}, `TLP type "MWx"`},
		{[]string{"tlp", "encode", "--type", "MWr", "--addr", "0xffc", "--len", "8"}, "crosses a 4 KB boundary"},
		{[]string{"tlp", "encode", "--requester", "1:2"}, "--requester"},
		{[]string{"tlp", "encode", "--type", "CAS", "--addr", "0x2004", "--len", "16"}, "TLP Addr"},
	}
	for _, tc := range cases {
		_, err := aaemu(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
