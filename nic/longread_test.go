package nic

import (
	"bytes"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// A READ longer than the timeout is answered packet by packet: each
// response restarts the timer and the retry count, so a lossless link sees
// no timeout and no retransmission however long the READ runs (a timer
// that only ACKs restarted resent the READ, had the peer serve it again,
// and with a finite retry_cnt would have failed it).
func TestLongReadKeepsTheTimerQuiet(t *testing.T) {
	b := newPair(t, 1, DefaultSpec(), DefaultWireSpec())
	const qpn, size = 0x100, 120_000 // 1 ms at 1 Gb/s: five timeouts of 200 µs
	b.connect(qpn)
	src := b.nodes[1].h.mem[dataBase : dataBase+size]
	for i := range src {
		src[i] = byte(i * 13)
	}
	b.post(0, qpn, WQE{Opcode: OpRead, Local: dataBase, Remote: dataBase, Length: size, WRID: 5, Signaled: true})
	b.run(sim.S)
	b.checkAgainstCapture()
	if c := b.sendCQEs(0, qpn); len(c) != 1 || c[0].Status != StatusOK {
		t.Fatalf("completions %+v", c)
	}
	if !bytes.Equal(b.nodes[0].h.mem[dataBase:dataBase+size], src) {
		t.Fatal("the READ's data did not arrive")
	}
	if r, to := b.counter("nic0.retransmissions"), b.counter("nic0.timeouts"); r != 0 || to != 0 {
		t.Fatalf("%d retransmissions, %d timeouts on a lossless link", r, to)
	}
}
