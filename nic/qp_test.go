package nic

import (
	"testing"

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
	q.sent = []sentPkt{{psn: 0}, {psn: 1}, {psn: 2}}
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
