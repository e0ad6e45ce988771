package nic

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// A WRITE, a SEND and a READ larger than every DMA tag covers at once
// (256 tags × 512-byte reads = 128 kB) complete, with their data, instead
// of waiting for tags that can never all be free; and a message that takes
// longer to send than the retransmission timeout completes without a
// single timeout, because its packets ask for ACKs along the way.
func TestLongMessages(t *testing.T) {
	const size = 1 << 20 // 1 MB: 8 ms at 1 Gb/s, 40 retransmission timeouts long
	for _, tc := range []struct {
		op    uint8
		every int
	}{{OpWrite, 16}, {OpSend, 16}, {OpRead, 16}, {OpWrite, 0}} {
		t.Run(fmt.Sprintf("%s, AckReqEvery %d", opName(tc.op), tc.every), func(t *testing.T) {
			spec := DefaultSpec()
			spec.AckReqEvery = tc.every
			b := newPair(t, 1, spec, DefaultWireSpec())
			const qpn = 0x100
			b.connect(qpn)
			// WRITE and SEND move node 0's [dataBase, +size) to node 1 at
			// dataBase+2×size; READ moves node 1's [dataBase+2×size, +size)
			// to node 0's dataBase.
			from, to := b.nodes[0].h.mem[dataBase:dataBase+size], b.nodes[1].h.mem[dataBase+2*size:dataBase+3*size]
			if tc.op == OpRead {
				from, to = to, from
			}
			data := from
			for i := range data {
				data[i] = byte(i*7 + i>>11)
			}
			if tc.op == OpSend {
				b.postRecv(1, qpn, dataBase+2*size, size, 1)
			}
			b.run(10 * sim.US)
			b.post(0, qpn, WQE{Opcode: tc.op, Local: dataBase, Remote: dataBase + 2*size, Length: size, WRID: 9, Signaled: true})
			b.run(sim.S)
			cqes := b.sendCQEs(0, qpn)
			if len(cqes) != 1 || cqes[0].Status != StatusOK {
				t.Fatalf("completions %+v", cqes)
			}
			if !bytes.Equal(to, data) {
				t.Fatal("the data that arrived differs")
			}
			timeouts := b.counter("nic0.timeouts")
			if tc.every > 0 && timeouts != 0 {
				t.Errorf("%d retransmission timeouts while the message was arriving", timeouts)
			}
			if tc.every == 0 && tc.op != OpRead && timeouts == 0 {
				t.Errorf("without ACK requests along the way the message did not time out: the test no longer tests them")
			}
			b.checkAgainstCapture()
		})
	}
}

func opName(op uint8) string {
	switch op {
	case OpWrite:
		return "WRITE"
	case OpSend:
		return "SEND"
	case OpRead:
		return "READ"
	}
	return fmt.Sprint(op)
}

// A responder sends its QPs' responses in turns: one QP's long READ
// response does not hold up another QP's ACK, so a small WRITE on the
// second QP completes within a few frame times, not after the READ.
func TestResponsesTakeTurnsAcrossQPs(t *testing.T) {
	b := newPair(t, 1, DefaultSpec(), DefaultWireSpec())
	b.connect(0x100)
	b.connect(0x101)
	b.run(10 * sim.US)
	const read = 512 << 10 // 4.4 ms of responses at 1 Gb/s
	b.post(0, 0x100, WQE{Opcode: OpRead, Local: dataBase, Remote: dataBase, Length: read, WRID: 1, Signaled: true})
	b.run(500 * sim.US) // the responses are flowing
	start := b.e.Now()
	b.post(0, 0x101, WQE{Opcode: OpWrite, Local: dataBase + 2*read, Remote: dataBase + 2*read, Length: 64, WRID: 2, Signaled: true})
	b.run(sim.S)
	w := b.sendCQEs(0, 0x101)
	r := b.sendCQEs(0, 0x100)
	if len(w) != 1 || len(r) != 1 || w[0].Status != StatusOK || r[0].Status != StatusOK {
		t.Fatalf("completions: write %+v, read %+v", w, r)
	}
	at := b.nodes[0].h.writesAt[b.nodes[0].qps[0x101].cfg.CQBase]
	readAt := b.nodes[0].h.writesAt[b.nodes[0].qps[0x100].cfg.CQBase]
	if at >= readAt || at-start > 100*sim.US {
		t.Fatalf("the small WRITE completed %v after it was posted (the READ at %v): its ACK waited behind the READ's responses", (at - start).Human(), readAt.Human())
	}
}
