package nic

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

// The retransmission timer runs only while packets are out. A go-back-N
// rewind that the wire then holds up past the timeout must not leave an
// expired timer behind: it would rewind again after the first resent packet
// (and keep the NIC clocking every edge while nothing can be sent).
func TestRetransmitTimerAfterRewind(t *testing.T) {
	e := sim.NewEngine(1)
	clk := e.NewClock("fabric", 1000, 0)
	n, err := NewNIC(clk, "nic", Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.CreateQP(QPConfig{QPN: 0x100, SQSize: 8, CQSize: 8}); err != nil {
		t.Fatal(err)
	}
	q := n.qps[0x100]
	w := &wqeState{q: q, sq: q, w: WQE{Opcode: OpWrite, Length: 8}, payload: make([]byte, 8)}
	q.sent = []sentPkt{{psn: 0, w: w}, {psn: 1, w: w}, {psn: 2, w: w}}
	rto := n.spec.RetransmitPS
	tests := []struct {
		name       string
		txPos      int
		deadlineAt sim.Tick
		now        sim.Tick
		wantDL     sim.Tick // deadline() before sending
		wantAfter  sim.Tick // deadlineAt after sending one packet at now
	}{
		{"idle: first packet starts the timer", 0, 0, 10, 0, 10 + rto},
		{"running: another packet leaves it", 1, 500, 10, 500, 500},
		{"rewound, wire held past the timeout: restart", 0, 5, 10, 0, 10 + rto},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q.txPos, q.deadlineAt = tc.txPos, tc.deadlineAt
			if got := q.deadline(); got != tc.wantDL {
				t.Fatalf("deadline() = %v, want %v", got, tc.wantDL)
			}
			if _, ok := q.nextRequest(tc.now); !ok {
				t.Fatal("nothing to send")
			}
			if q.deadlineAt != tc.wantAfter {
				t.Fatalf("timer at %v after sending, want %v", q.deadlineAt, tc.wantAfter)
			}
		})
	}
}

// An ACK for a request after a READ or an atomic (the responder's ACK can
// overtake the response, which waits for its DMA, or the response was
// lost) does not complete it: it stays out until its response arrives,
// and when none does the timer sends it again.
func TestAckPastReadOrAtomicKeepsItOut(t *testing.T) {
	for _, op := range []uint8{OpRead, OpFetchOp} {
		for _, lost := range []bool{false, true} {
			t.Run(fmt.Sprintf("op %d response lost %v", op, lost), func(t *testing.T) {
				e := sim.NewEngine(1)
				n, err := NewNIC(e.NewClock("fabric", 1000, 0), "nic", Spec{})
				if err != nil {
					t.Fatal(err)
				}
				if err := n.CreateQP(QPConfig{QPN: 0x100, SQSize: 8, CQSize: 8}); err != nil {
					t.Fatal(err)
				}
				q := n.qps[0x100]
				r := &wqeState{q: q, w: WQE{Opcode: op, Length: 8, Signaled: true}, packets: true, firstPSN: 0, lastPSN: 0, nextResp: 0}
				w := &wqeState{q: q, w: WQE{Opcode: OpWrite, Length: 8, Signaled: true}, packets: true, firstPSN: 1, lastPSN: 1}
				q.wqes, q.nextPSN = []*wqeState{r, w}, 2
				q.sent = []sentPkt{{psn: 0, w: r}, {psn: 1, w: w}}
				for range q.sent {
					q.nextRequest(0)
				}
				ack := roce.Packet{Opcode: roce.Ack, PSN: 1}
				ack.AETH.Syndrome = roce.SyndromeAck
				q.onAck(&ack, 10)
				if r.done || len(q.sent) != 2 || q.cqTail != 0 {
					t.Fatalf("after the ACK past it: done %v, %d packets out, %d completions; want it out, nothing completed", r.done, len(q.sent), q.cqTail)
				}
				if lost {
					q.progress(q.deadlineAt)
					if f, ok := q.nextRequest(q.deadlineAt); !ok || f.Packet.PSN != 0 || q.sent[0].w != r {
						t.Fatalf("the timer resent %v (ok %v), want PSN 0 again", f.Packet.PSN, ok)
					}
					return
				}
				resp := &Frame{}
				resp.Packet.PSN = 0
				if op == OpRead {
					resp.Packet.Opcode = roce.ReadRespOnly
					resp.Packet.Payload = make([]byte, 8)
					q.onReadResponse(resp, 20)
				} else {
					resp.Packet.Opcode = roce.AtomicAck
					q.onAtomicAck(resp, 20)
				}
				if !r.done || len(q.sent) != 0 || q.cqTail != 2 {
					t.Fatalf("after the response: done %v, %d packets out, %d completions; want both complete", r.done, len(q.sent), q.cqTail)
				}
			})
		}
	}
}
