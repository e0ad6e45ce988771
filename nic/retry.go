package nic

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aaemu/aaemu/sim"
)

// Transport retries, as InfiniBand's RC requester counts them (the QP
// attributes retry_cnt and rnr_retry of ibv_modify_qp): a timeout, or an
// RNR NAK, without progress since the last one uses up one retry; the
// retry after the last one allowed fails the work request of the oldest
// packet out, with StatusRetryExceeded or StatusRNRRetryExceeded, and the
// QP enters the error state, where every other work request completes
// with StatusFlushed. Any ACK or response that moves the QP forward starts
// both counts over.
const (
	DefaultRetryCnt  = 7 // verbs' largest retry_cnt: 8 transmissions in all
	DefaultRNRRetry  = 7
	RNRRetryInfinite = 7 // rnr_retry 7 never gives up
)

// QPState is a queue pair's state, named as verbs names them. A QP is
// created connected (RTS: ready to send); it leaves RTS only for the error
// state, when its retries run out.
type QPState uint8

const (
	QPStateRTS   QPState = iota // the connection works
	QPStateError                // retries ran out: work requests complete with StatusFlushed
)

func (s QPState) String() string {
	switch s {
	case QPStateRTS:
		return "RTS"
	case QPStateError:
		return "ERR"
	}
	return fmt.Sprintf("state %d", uint8(s))
}

// SetRetry sets QP qpn's retry_cnt and rnr_retry (each 0 to 7; rnr_retry 7
// is infinite), as ibv_modify_qp does. A QP starts with DefaultRetryCnt
// and DefaultRNRRetry.
func (n *NIC) SetRetry(qpn uint32, retryCnt, rnrRetry int) error {
	q := n.qps[qpn]
	switch {
	case q == nil:
		return fmt.Errorf("%s: no QP %d", n.name, qpn)
	case retryCnt < 0 || retryCnt > 7 || rnrRetry < 0 || rnrRetry > 7:
		return fmt.Errorf("%s: QP %d: retry_cnt %d, rnr_retry %d: each must be 0 to 7", n.name, qpn, retryCnt, rnrRetry)
	}
	q.retryCnt, q.rnrRetry = int8(retryCnt), int8(rnrRetry)
	return nil
}

// progressed is an ACK or a response that moved the QP forward: the timer
// restarts for the packets still out (a long READ's responses keep it from
// expiring, as a peer that answers is alive) and the retry counts start
// over.
func (q *qp) progressed(now sim.Tick) {
	q.retries, q.rnrRetries = 0, 0
	if q.txPos == 0 {
		q.deadlineAt = 0
	} else {
		q.deadlineAt = now + q.n.spec.RetransmitPS
	}
}

// fail completes w with status (a retry count ran out) and puts the QP in
// the error state: every other work request, fetched or posted later, and
// every posted receive request completes with StatusFlushed; nothing more
// is sent, and what arrives is dropped (the peer's requests time out).
func (q *qp) fail(w *wqeState, status uint32) {
	n := q.n
	q.state, q.failed = QPStateError, status
	n.stRetryExceeded.Inc()
	for _, x := range q.wqes {
		if !x.done {
			x.done, x.packets, x.status = true, true, StatusFlushed
			if x != w {
				n.stFlushed.Inc()
			}
		}
	}
	w.status = status
	q.sent, q.txPos, q.deadlineAt, q.rnrUntil = nil, 0, 0, 0
	// A QP in the error state sends nothing, not even the ACKs and
	// responses it had queued.
	q.resp = nil
	n.respQPs = slices.DeleteFunc(n.respQPs, func(x *qp) bool { return x == q })
	q.reads, q.atomics = nil, nil
	if q.recvQ != nil {
		// An srd context was receiving a SEND: its receive request is flushed.
		q.recvQ.recvCompletion(q.recvR.index, StatusFlushed, 0, 0)
		n.stFlushed.Inc()
		q.recvQ = nil
	}
	q.completeInOrder()
	q.flushRecv()
}

// flushRecv completes the posted receive requests of a QP in the error
// state with StatusFlushed; a receive request's wr_id is its index, so
// those not yet fetched need no read.
func (q *qp) flushRecv() {
	if q.rings.RQSize == 0 {
		return // no receive queue
	}
	for _, r := range q.rwqes {
		q.recvCompletion(r.index, StatusFlushed, 0, 0)
		q.n.stFlushed.Inc()
	}
	q.rwqes = nil
	for !q.rqFetching && q.rqHead < q.rqTail {
		q.recvCompletion(q.rqHead, StatusFlushed, 0, 0)
		q.n.stFlushed.Inc()
		q.rqHead++
	}
}

// QPStatus is what a queue pair still had to do when it was asked: the
// layer above reports it when a run does not finish.
type QPStatus struct {
	QPN, RemoteQPN uint32
	RemoteNode     int
	State          QPState
	Failed         uint32 // in the error state: the status that put it there
	// Kind is "" for an RC QP; "srd queue" for a queue of the srd
	// transport (Unfetched and Outstanding are its own, the rest is in the
	// peer contexts), "srd peer" for a peer context (QPN SRDPeerQPN).
	Kind      string
	RemoteNIC int

	Unfetched   int    // send work requests posted (doorbell rung) and not yet read
	Outstanding int    // work requests read and not yet completed
	Unacked     int    // request packets sent and not yet acknowledged
	Unsent      int    // request packets with PSNs still to send (again, after a rewind)
	OldestPSN   uint32 // the oldest unacknowledged packet (when Unacked or Unsent > 0)
	OldestSent  int    // times it was sent
	NextPSN     uint32 // the PSN the next new packet gets

	Retries, RetryCnt    int // timeouts since the last progress (retries used), and the limit
	RNRRetries, RNRRetry int // RNR NAKs since the last progress, and the limit (7: none)
	Timeouts             uint64
	Retransmitted        uint64   // request packets sent again
	TimerAt              sim.Tick // when the retransmission timer expires (0: not running)
	RNRWaitUntil         sim.Tick // an RNR NAK holds the sending until then (0: not)

	Serving    int // the peer's READs and atomics still being answered
	RecvPosted int // receive requests posted and not yet filled (waiting for the peer: not pending work)
}

// Idle is true when the QP is connected and has nothing left to do.
func (s QPStatus) Idle() bool {
	return s.State == QPStateRTS && s.Unfetched == 0 && s.Outstanding == 0 && s.Unacked == 0 && s.Unsent == 0 && s.Serving == 0
}

// String says what the QP was doing or waiting for, its non-zero parts only.
func (s QPStatus) String() string {
	var b strings.Builder
	switch s.Kind {
	case "srd queue":
		fmt.Fprintf(&b, "srd queue %d %v", s.QPN, s.State)
	case "srd peer":
		fmt.Fprintf(&b, "srd context for node %d NIC %d %v", s.RemoteNode, s.RemoteNIC, s.State)
	default:
		fmt.Fprintf(&b, "QP %d (to node %d QP %d) %v", s.QPN, s.RemoteNode, s.RemoteQPN, s.State)
	}
	if s.State == QPStateError {
		fmt.Fprintf(&b, " after %s", StatusText(s.Failed))
	}
	part := func(format string, a ...any) { b.WriteString(", "); fmt.Fprintf(&b, format, a...) }
	if s.Outstanding > 0 {
		part("%s outstanding", count(s.Outstanding, "work request"))
	}
	if s.Unfetched > 0 {
		part("%d posted and not read", s.Unfetched)
	}
	if s.Unacked > 0 {
		part("%s unacknowledged from PSN %d (sent %s)", count(s.Unacked, "packet"), s.OldestPSN, count(s.OldestSent, "time"))
	}
	if s.Unsent > 0 {
		part("%s to send", count(s.Unsent, "packet"))
	}
	if s.Unacked > 0 || s.Unsent > 0 {
		part("next PSN %d", s.NextPSN)
	}
	if s.Retries > 0 {
		part("retry %d of %d", s.Retries, s.RetryCnt)
	}
	if s.RNRRetries > 0 {
		if s.RNRRetry == RNRRetryInfinite {
			part("RNR retry %d (no limit)", s.RNRRetries)
		} else {
			part("RNR retry %d of %d", s.RNRRetries, s.RNRRetry)
		}
	}
	if s.Timeouts > 0 {
		part("%s", count(int(s.Timeouts), "timeout"))
	}
	if s.Retransmitted > 0 {
		part("%s sent again", count(int(s.Retransmitted), "packet"))
	}
	if s.TimerAt != 0 {
		part("timer at %v", s.TimerAt)
	}
	if s.RNRWaitUntil != 0 {
		part("RNR wait until %v", s.RNRWaitUntil)
	}
	if s.Serving > 0 {
		part("answering %d of the peer's READs and atomics", s.Serving)
	}
	if s.RecvPosted > 0 {
		part("%s posted", count(s.RecvPosted, "receive request"))
	}
	return b.String()
}

// count is "1 packet", "2 packets".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (q *qp) status() QPStatus {
	s := QPStatus{QPN: q.cfg.QPN, RemoteQPN: q.cfg.RemoteQPN, RemoteNode: q.cfg.RemoteNode, State: q.state, Failed: q.failed,
		Outstanding: len(q.wqes), Unacked: q.txPos, Unsent: len(q.sent) - q.txPos, NextPSN: q.nextPSN,
		Retries: int(q.retries), RetryCnt: int(q.retryCnt), RNRRetries: int(q.rnrRetries), RNRRetry: int(q.rnrRetry),
		Timeouts: q.timeouts, Retransmitted: q.retransmitted,
		Serving: len(q.reads), RecvPosted: len(q.rwqes)}
	switch q.kind {
	case srdQueue:
		s.Kind, s.Outstanding = "srd queue", q.outstanding
	case srdPeer:
		s.Kind, s.RemoteNIC = "srd peer", q.cfg.RemoteNIC
	}
	if q.rqTail > q.rqHead {
		s.RecvPosted += int(q.rqTail - q.rqHead)
	}
	if q.sqTail > q.sqHead {
		s.Unfetched = int(q.sqTail - q.sqHead)
	}
	if len(q.sent) > 0 {
		s.OldestPSN, s.OldestSent = q.sent[0].psn, int(q.sent[0].tries)
	}
	if q.txPos > 0 {
		s.TimerAt = q.deadlineAt
	}
	if q.rnrUntil > q.n.u.Engine().Now() {
		s.RNRWaitUntil = q.rnrUntil
	}
	for _, a := range q.atomics {
		if !a.done {
			s.Serving++
		}
	}
	return s
}

// QPStatus is QP qpn's status.
func (n *NIC) QPStatus(qpn uint32) (QPStatus, bool) {
	q := n.qps[qpn]
	if q == nil {
		return QPStatus{}, false
	}
	return q.status(), true
}

// Pending lists, in QPN order, the QPs (and srd queues) that are not idle:
// those with work requests or packets still out, with the peer's requests
// still being answered, or in the error state; then the srd peer contexts
// that are not, in creation order.
func (n *NIC) Pending() []QPStatus {
	qpns := slices.Clone(n.order)
	slices.Sort(qpns)
	var out []QPStatus
	for _, k := range qpns {
		if s := n.qps[k].status(); !s.Idle() {
			out = append(out, s)
		}
	}
	for _, q := range n.peerList { // srd peer contexts, in creation order
		if s := q.status(); !s.Idle() {
			out = append(out, s)
		}
	}
	return out
}

// Health is what the NIC's reliable transport went through: packets sent
// again, retransmission timeouts, and the work requests it gave up on.
type Health struct {
	Retransmitted, Timeouts, RetryExceeded, Flushed uint64
	RNRNAKs                                         uint64 // receiver-not-ready NAKs sent or received
}

// Health reads the NIC's transport counters.
func (n *NIC) Health() Health {
	return Health{Retransmitted: n.stRetrans.Value(), Timeouts: n.stTimeouts.Value(),
		RetryExceeded: n.stRetryExceeded.Value(), Flushed: n.stFlushed.Value(), RNRNAKs: n.stRNR.Value()}
}
