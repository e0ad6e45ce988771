package nic

import (
	"testing"
	"unsafe"
)

// What a thousand-node run holds per peer, per packet and per work
// request: an srd NIC has a peer context (a qp) for each NIC it talks to,
// keeps a sentPkt for each packet until it is acknowledged, and a
// wqeState for each work request it fetched. A field added to one moves a
// 1,024-node run's memory by megabytes (docs/speed.md): the sizes are
// checked, each at or under its allocation size class.
func TestStateSizes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		got, max uintptr
	}{
		{"qp (an srd peer context)", unsafe.Sizeof(qp{}), 320},
		{"sentPkt", unsafe.Sizeof(sentPkt{}), 40},
		{"wqeState (a fetched work request)", unsafe.Sizeof(wqeState{}), 176},
	} {
		if tc.got > tc.max {
			t.Errorf("%s is %d bytes, more than %d", tc.name, tc.got, tc.max)
		}
	}
}
