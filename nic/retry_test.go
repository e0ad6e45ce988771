package nic

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// requestTimes are the capture times of every transmission of one request
// PSN from node's QP qpn.
func requestTimes(frames []capFrame, node int, qpn, psn uint32) []sim.Tick {
	var at []sim.Tick
	for _, c := range frames {
		if c.src == node && c.srcQP() == qpn && isRequest(c.op()) && c.f.Packet.PSN == psn {
			at = append(at, c.at)
		}
	}
	return at
}

func statuses(cqes []CQE) []uint32 {
	var s []uint32
	for _, c := range cqes {
		s = append(s, c.Status)
	}
	return s
}

// At 100 % loss nothing is ever acknowledged: the oldest packet goes
// retry_cnt + 1 times, one timeout apart, and its work request then
// completes with StatusRetryExceeded (retry_cnt + 1 timeouts after the
// first transmission); the QP enters the error state, where the work
// requests behind it, those posted later and the posted receive requests
// complete with StatusFlushed, and nothing more goes on the wire.
func TestRetryExceededAtTotalLoss(t *testing.T) {
	for _, retry := range []int{DefaultRetryCnt, 3, 0} {
		t.Run(fmt.Sprintf("retry_cnt %d", retry), func(t *testing.T) {
			spec := DefaultSpec()
			rto := spec.RetransmitPS
			b := newPair(t, 1, spec, WireSpec{RateMbps: 1000, LatencyPS: sim.US, LossPPM: 1_000_000})
			const qpn = 0x100
			b.connect(qpn)
			n := b.nodes[0].n
			if retry != DefaultRetryCnt {
				if err := n.SetRetry(qpn, retry, DefaultRNRRetry); err != nil {
					t.Fatal(err)
				}
			}
			b.postRecv(0, qpn, dataBase+0x80000, 4096, 2)
			b.run(10 * sim.US)
			b.post(0, qpn, WQE{Opcode: OpWrite, Local: dataBase, Remote: dataBase, Length: 512, WRID: 1},
				WQE{Opcode: OpRead, Local: dataBase + 0x10000, Remote: dataBase, Length: 4000, WRID: 2},
				WQE{Opcode: OpWrite, Local: dataBase, Remote: dataBase, Length: 3000, WRID: 3, Signaled: true})
			b.run(sim.S)
			frames := b.checkAgainstCapture()
			at := requestTimes(frames, 0, qpn, 0)
			if len(at) != retry+1 {
				t.Fatalf("PSN 0 went %d times, want retry_cnt + 1 = %d", len(at), retry+1)
			}
			for k := range at {
				if at[k] != at[0]+sim.Tick(k)*rto {
					t.Fatalf("transmission %d at %v, want %v: one timeout after the last", k+1, at[k], at[0]+sim.Tick(k)*rto)
				}
			}
			cqes := b.sendCQEs(0, qpn)
			want := []uint32{StatusRetryExceeded, StatusFlushed, StatusFlushed}
			if fmt.Sprint(statuses(cqes)) != fmt.Sprint(want) || cqes[0].WRID != 1 || cqes[2].WRID != 3 {
				t.Fatalf("completions %+v, want statuses %v (unsignaled work requests complete too when they fail)", cqes, want)
			}
			// The error's completion is written at the last timeout, which
			// is retry_cnt + 1 timeouts after the first transmission.
			failAt := b.nodes[0].h.writesAt[b.nodes[0].qps[qpn].cfg.CQBase]
			if d := failAt - at[0]; d < sim.Tick(retry+1)*rto || d > sim.Tick(retry+1)*rto+sim.US {
				t.Fatalf("the error completed %v after the first transmission, want (retry_cnt + 1) × %v = %v", d, rto, sim.Tick(retry+1)*rto)
			}
			if got := statuses(b.recvCQEs(0, qpn)); fmt.Sprint(got) != fmt.Sprint([]uint32{StatusFlushed, StatusFlushed}) {
				t.Fatalf("receive completions %v, want both flushed", got)
			}
			p := n.Pending()
			if len(p) != 1 || p[0].State != QPStateError || p[0].Failed != StatusRetryExceeded || p[0].Outstanding != 0 || p[0].Timeouts != uint64(retry+1) {
				t.Fatalf("pending %+v, want the QP in the error state with nothing outstanding after %d timeouts", p, retry+1)
			}
			if s := p[0].String(); !strings.HasPrefix(s, "QP 256 (to node 1 QP 256) ERR after transport retries exceeded") {
				t.Fatalf("pending says %q", s)
			}
			if got, want := b.counter("nic0.retry_exceeded"), uint64(1); got != want {
				t.Fatalf("retry_exceeded %d", got)
			}
			if got := b.counter("nic0.timeouts"); got != uint64(retry+1) {
				t.Fatalf("%d timeouts, want retry_cnt + 1 = %d (the last one fails instead of sending again)", got, retry+1)
			}
			// Posted to the QP in the error state: flushed without a frame.
			sent := len(frames)
			b.post(0, qpn, WQE{Opcode: OpWrite, Local: dataBase, Remote: dataBase, Length: 8, WRID: 4})
			b.postRecv(0, qpn, dataBase+0x90000, 4096, 1)
			b.run(2 * sim.S)
			if got := statuses(b.sendCQEs(0, qpn)); len(got) != 4 || got[3] != StatusFlushed {
				t.Fatalf("completions %v after posting to a QP in the error state", got)
			}
			if got := statuses(b.recvCQEs(0, qpn)); len(got) != 3 || got[2] != StatusFlushed {
				t.Fatalf("receive completions %v after posting to a QP in the error state", got)
			}
			if got := b.counter("nic0.flushed"); got != 6 {
				t.Fatalf("%d flushed, want 2 send and 2 receive requests, then 1 of each posted later: 6", got)
			}
			if frames = b.checkAgainstCapture(); len(frames) != sent {
				t.Fatalf("%d frames after the error, want none", len(frames)-sent)
			}
		})
	}
}

// rnr_retry bounds the RNR NAKs a SEND may draw: with rnr_retry 2 the SEND
// goes three times, the third RNR NAK fails it with StatusRNRRetryExceeded.
// With rnr_retry 7 it keeps trying until a receive request is posted.
func TestRNRRetry(t *testing.T) {
	for _, rnr := range []int{2, 0, RNRRetryInfinite} {
		t.Run(fmt.Sprintf("rnr_retry %d", rnr), func(t *testing.T) {
			b := newPair(t, 1, DefaultSpec(), DefaultWireSpec())
			const qpn = 0x100
			b.connect(qpn)
			if err := b.nodes[0].n.SetRetry(qpn, DefaultRetryCnt, rnr); err != nil {
				t.Fatal(err)
			}
			b.post(0, qpn, WQE{Opcode: OpSend, Local: dataBase, Length: 100, WRID: 9, Signaled: true})
			b.run(500 * sim.US)
			var frames []capFrame
			if rnr == RNRRetryInfinite {
				frames = b.frames() // a frame may be in flight: the counters are checked at the end
			} else {
				frames = b.checkAgainstCapture()
			}
			tries := len(requestTimes(frames, 0, qpn, 0))
			p := b.nodes[0].n.Pending()
			if rnr != RNRRetryInfinite {
				if tries != rnr+1 || b.counter("nic1.rnr_naks") != uint64(rnr+1) {
					t.Fatalf("the SEND went %d times and drew %d RNR NAKs, want rnr_retry + 1 = %d of each", tries, b.counter("nic1.rnr_naks"), rnr+1)
				}
				if got := statuses(b.sendCQEs(0, qpn)); fmt.Sprint(got) != fmt.Sprint([]uint32{StatusRNRRetryExceeded}) {
					t.Fatalf("completions %v", got)
				}
				if len(p) != 1 || p[0].State != QPStateError || p[0].Failed != StatusRNRRetryExceeded {
					t.Fatalf("pending %v", p)
				}
				return
			}
			// 500 µs of 10 µs waits: dozens of tries, and no end.
			if tries < 20 || len(b.sendCQEs(0, qpn)) != 0 || len(p) != 1 || p[0].State != QPStateRTS || p[0].RNRRetries < tries-1 || p[0].RNRRetries > tries {
				t.Fatalf("%d tries, completions %v, pending %v", tries, b.sendCQEs(0, qpn), p)
			}
			if s := p[0].String(); !strings.Contains(s, fmt.Sprintf("RNR retry %d (no limit)", p[0].RNRRetries)) {
				t.Fatalf("pending says %q", s)
			}
			b.postRecv(1, qpn, dataBase+0x80000, 4096, 1)
			b.run(sim.S)
			b.checkAgainstCapture()
			if got := statuses(b.sendCQEs(0, qpn)); fmt.Sprint(got) != fmt.Sprint([]uint32{StatusOK}) {
				t.Fatalf("completions %v once a receive request is posted", got)
			}
			if got := b.nodes[1].h.mem[dataBase+0x80000 : dataBase+0x80000+100]; !bytes.Equal(got, b.nodes[0].h.mem[dataBase:dataBase+100]) {
				t.Fatal("the SEND did not land")
			}
			if p := b.nodes[0].n.Pending(); len(p) != 0 {
				t.Fatalf("pending %v", p)
			}
		})
	}
}

func TestSetRetryChecks(t *testing.T) {
	b := newPair(t, 1, DefaultSpec(), DefaultWireSpec())
	b.connect(0x100)
	n := b.nodes[0].n
	for _, c := range []struct {
		qpn        uint32
		retry, rnr int
		ok         bool
	}{{0x100, 0, 0, true}, {0x100, 7, 7, true}, {0x100, 8, 0, false}, {0x100, 0, -1, false}, {0x101, 1, 1, false}} {
		if err := n.SetRetry(c.qpn, c.retry, c.rnr); (err == nil) != c.ok {
			t.Errorf("SetRetry(%#x, %d, %d): %v, want ok=%v", c.qpn, c.retry, c.rnr, err, c.ok)
		}
	}
}
