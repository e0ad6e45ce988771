package torus

import (
	"reflect"
	"testing"
)

// FuzzDecodePacket feeds arbitrary bytes to the cross-rank packet and token
// decoders: each returns an error or a value, never panics, and a value it
// returns survives its own encoding unchanged.
func FuzzDecodePacket(f *testing.F) {
	p := Packet{Src: Coord{1, 2, 3}, Dst: Coord{0, 0, 1}, Dynamic: true, Payload: []byte("sixteen bytes...")}
	f.Add(appendPacket(nil, &p))
	f.Add(appendPacket(nil, &Packet{}))
	f.Add(appendTokens(nil, &Tokens{}))
	f.Add([]byte{0x80, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, _, err := decodePacket(b); err == nil {
			again, left, err := decodePacket(appendPacket(nil, &got))
			if err != nil || len(left) != 0 {
				t.Fatalf("re-encoded packet: err %v, %d bytes left", err, len(left))
			}
			if !reflect.DeepEqual(again, got) {
				t.Fatalf("re-encoded packet came back as %+v, was %+v", again, got)
			}
		}
		if got, _, err := decodeTokens(b); err == nil {
			again, left, err := decodeTokens(appendTokens(nil, &got))
			if err != nil || len(left) != 0 || again != got {
				t.Fatalf("re-encoded tokens: %+v (err %v, %d left), was %+v", again, err, len(left), got)
			}
		}
	})
}
