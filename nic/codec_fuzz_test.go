package nic

import (
	"reflect"
	"testing"
)

// FuzzDecodeFrame feeds arbitrary bytes to the cross-rank frame decoder (a
// rank's peer could send anything if it ran another build): it returns an
// error or a frame, never panics, and a frame it returns survives its own
// encoding unchanged.
func FuzzDecodeFrame(f *testing.F) {
	fr := Frame{SrcNode: 3, DstNode: 1}
	fr.Packet.Opcode, fr.Packet.PSN, fr.Packet.Payload = 10, 77, []byte("payload")
	f.Add(AppendFrame(nil, &fr))
	f.Add(AppendFrame(nil, &Frame{}))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, rest, err := DecodeFrame(b)
		if err != nil {
			return
		}
		if len(rest) > len(b) {
			t.Fatalf("rest %d bytes of %d", len(rest), len(b))
		}
		again, left, err := DecodeFrame(AppendFrame(nil, &got))
		if err != nil || len(left) != 0 {
			t.Fatalf("re-encoded frame: err %v, %d bytes left", err, len(left))
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("re-encoded frame came back as %+v, was %+v", again, got)
		}
	})
}
