package nic

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// qp is a reliable-connection queue pair: the requester side (work
// requests out, ACKs and responses in) and the responder side (requests in,
// ACKs and responses out).
type qp struct {
	cfg  qpID
	n    *NIC
	kind qpKind
	// active: has work or waits for the wire (sched.go). touched,
	// inCheck: in the NIC's list of QPs touched at this edge, and in its
	// list of those touched since the last quiet edge (sched.go). Next to
	// kind and each other: a thousand peer contexts a NIC, each byte of
	// padding counts.
	active, touched, inCheck bool
	nakSent                  bool    // responder
	state                    QPState // retry.go
	// Retries (retry.go): the status that put the QP in the error state;
	// the limits (0 to 7); those used since the last progress (RNR retries
	// have no limit at RNRRetryInfinite).
	failed                      uint32
	retryCnt, rnrRetry, retries int8
	rnrRetries                  int32
	idx                         int      // creation order
	timer                       sim.Tick // its deadline in the NIC's timer heap (0: none)
	resp                        []Frame  // ACKs and responses to send, in order (NIC.respQPs takes turns)
	npk                         int      // leading wqes that have their packets (so their payload too)

	// The rings in host memory: a connected QP's and an srd queue's own;
	// the srd peer contexts, which have none, share their NIC's zero one
	// (a thousand peers would each carry it).
	*qpHost

	// Requester.
	wqes       []*wqeState // fetched and not yet completed, in order
	nextPSN    uint32
	ackedPSN   uint32    // every PSN before this one is acknowledged
	sent       []sentPkt // packets with PSNs, not acknowledged, in PSN order
	txPos      int       // next packet of sent to put on the wire
	deadlineAt sim.Tick  // retransmission timer (0: off)

	// Responder.
	expPSN   uint32
	msn      uint32
	writeVA  uint64 // the incoming RDMA WRITE message
	writeOff uint64
	reads    []*readResp
	atomics  []*atomicServe

	// Receive queue (SEND).
	sendOff  uint64   // bytes of the current SEND message received
	rnrUntil sim.Tick // requester: the peer had no receive buffer; wait

	// srd (srd.go). A peer context: the SEND message being received, with
	// the receive request it took from its destination queue.
	recvQ *qp
	recvR rwqe

	// Retries (retry.go).
	timeouts, retransmitted uint64
}

// qpID is what names a QP and its peer: its QPConfig without the rings
// (qpHost.rings), which an srd peer context has none of.
type qpID struct {
	QPN, RemoteQPN        uint32
	RemoteNode, RemoteNIC int
}

// qpHost is a QP's state of its rings in host memory: the send queue's
// indices and doorbells, the completion queues' tails, the receive queue.
type qpHost struct {
	rings QPConfig // where they are (its QPN and remote fields unused)

	// Send queue.
	sqHead, sqTail uint64
	doorbells      []doorbell // doorbells whose work requests are not all fetched: a ring, dbLen from dbHead
	dbHead, dbLen  int
	fetching       bool
	cqTail         uint64

	// Receive queue (SEND).
	rqFetching     bool
	rqHead, rqTail uint64 // receive requests fetched, posted
	rwqes          []rwqe // fetched, not yet filled
	rcqTail        uint64
	rcq            *cq // a shared receive CQ (SetRecvCQ), instead of the ring at RCQBase

	// An srd queue: its work requests fetched and not yet completed
	// (they wait in the peer contexts).
	outstanding int
}

type rwqe struct {
	index uint64
	addr  uint64
	len   uint32
}

type doorbell struct {
	tail uint64    // the producer index it published
	id   sim.TxnID // its transaction: the cause of the fetches of its work requests
}

// doorbellOf is the doorbell that published work request i (its
// transaction's id only: what the fetch names as its cause).
func (q *qp) doorbellOf(i uint64) sim.Txn {
	mask := len(q.doorbells) - 1
	for q.dbLen > 0 && q.doorbells[q.dbHead].tail <= i {
		q.dbHead = (q.dbHead + 1) & mask
		q.dbLen--
	}
	if q.dbLen == 0 {
		return sim.Txn{}
	}
	return sim.Txn{ID: q.doorbells[q.dbHead].id}
}

// ring records a doorbell that published the work requests up to tail.
// The doorbells wait in a ring of a power of two, as many as were ever
// waiting at once: no slack beyond that.
func (q *qp) ring(tail uint64, txn sim.Txn) {
	if q.dbLen == len(q.doorbells) {
		grown := make([]doorbell, max(4, 2*len(q.doorbells)))
		for k := 0; k < q.dbLen; k++ {
			grown[k] = q.doorbells[(q.dbHead+k)&(len(q.doorbells)-1)]
		}
		q.doorbells, q.dbHead = grown, 0
	}
	q.doorbells[(q.dbHead+q.dbLen)&(len(q.doorbells)-1)] = doorbell{tail: tail, id: txn.ID}
	q.dbLen++
}

// wqeState is a work request the NIC fetched, until it completes. The
// flags sit together: 176 bytes, not 192 (a NIC holds one for every work
// request it fetched and has not completed; TestStateSizes).
type wqeState struct {
	q        *qp // the QP, or the srd peer context, that carries it
	sq       *qp // the queue it was posted to, whose CQ gets its completion (RC: q)
	w        WQE
	txn      sim.Txn
	payload  []byte
	got      int
	issuedTo int // how far the payload reads reach (a payload larger than the tags cover is read in turns)
	value    uint64
	firstPSN uint32
	lastPSN  uint32
	nextResp uint32 // read: next response PSN expected
	status   uint32
	err      bool
	issued   bool // payload reads issued
	packets  bool // given PSNs
	done     bool
}

// sentPkt is a request packet with its PSN, kept until acknowledged. It
// holds what its frame is made from, not the frame (40 bytes, not 280:
// at a thousand nodes a NIC keeps thousands of packets waiting for its
// link): sentFrame makes the frame each time it goes on the wire, the same
// frame every time, its transaction given when the packet got its PSN.
type sentPkt struct {
	w      *wqeState
	txn    sim.Txn
	psn    uint32
	off    uint32 // a WRITE's or SEND's: where the packet's payload starts
	tries  uint32 // times sent
	opcode uint8
	ackReq bool
}

// readResp is a READ the responder serves: memory is read by DMA, then the
// response packets go out in PSN order.
type readResp struct {
	q      *qp
	psn    uint32
	va     uint64
	n      int
	buf    []byte
	got    int
	err    bool
	issued bool
	to     int // how far the issued reads reach
	cause  sim.TxnID
	bulk   bool // the READ's data goes by the bulk paths (WQE.Bulk)
}

type atomicServe struct {
	psn    uint32
	p      roce.Packet
	done   bool
	issued bool
	err    bool
	value  uint64
	cause  sim.TxnID
}

func nz(t sim.Tick) sim.Tick {
	if t == 0 {
		return sim.Never
	}
	return t
}

func (q *qp) rwqeFetched(data []byte, err error) {
	q.rqFetching = false
	if err != nil || len(data) < RWQESize {
		return // the receive request is unreadable: it is not used
	}
	q.rwqes = append(q.rwqes, rwqe{index: q.rqHead, addr: binary.LittleEndian.Uint64(data), len: binary.LittleEndian.Uint32(data[8:])})
	q.rqHead++
}

// psnCmp compares 24-bit PSNs modulo 2^24.
func psnCmp(a, b uint32) int {
	d := (a - b) & 0xffffff
	switch {
	case d == 0:
		return 0
	case d < 1<<23:
		return 1
	}
	return -1
}

func (q *qp) needsFetch() bool {
	inflight := len(q.wqes)
	if q.kind == srdQueue {
		inflight = q.outstanding
	}
	return q.sqHead < q.sqTail && !q.fetching && inflight < q.n.spec.Window
}

func (q *qp) hasRequest() bool {
	return q.txPos < len(q.sent) && q.txPos < q.n.spec.Window && q.n.u.Engine().Now() >= q.rnrUntil
}

// settled: every fetched work request has its packets (the rest waits for
// ACKs, which arrive as frames and reactivate the QP).
func (q *qp) settled() bool {
	for _, w := range q.pending() {
		if !w.packets {
			return false
		}
	}
	return true
}

func (q *qp) deadline() sim.Tick {
	d := q.deadlineAt
	if q.txPos == 0 {
		d = 0 // nothing out: the timer waits for the next packet sent
	}
	if q.rnrUntil > q.n.u.Engine().Now() && q.txPos < len(q.sent) {
		d = min(nz(d), q.rnrUntil)
	}
	return d
}

// blocked: the QP has DMA reads to issue that wait for a free tag. Tags free
// only when a completion arrives, which wakes the NIC anyway, so a blocked
// QP stays active without clocking the NIC every edge.
func (q *qp) blocked() bool {
	if q.rqHead < q.rqTail && !q.rqFetching && len(q.rwqes) < 4 && q.rings.RQSize > 0 {
		return true
	}
	for _, w := range q.pending() {
		if !w.issued && !w.err && (w.w.Opcode == OpWrite || w.w.Opcode == OpSend) {
			return true
		}
	}
	for _, r := range q.reads {
		if !r.issued {
			return true
		}
	}
	for _, a := range q.atomics {
		if !a.issued && !a.done {
			return true
		}
	}
	return false
}

// progress fetches work requests, reads payloads, gives packets PSNs, and
// runs the retransmission timer.
func (q *qp) progress(now sim.Tick) {
	n := q.n
	if q.state == QPStateError {
		q.flushRecv()
	}
	// Every read needs a tag: while none is free, asking costs a look at
	// each active QP's doorbell list for nothing.
	if q.needsFetch() && n.req.Outstanding() < n.req.Tags() {
		addr := q.rings.SQBase + (q.sqHead%uint64(q.rings.SQSize))*WQESize
		if n.dmaRead(addr, WQESize, dmaPurpose{kind: fetchWQE, qp: q, txn: q.doorbellOf(q.sqHead)}) {
			q.fetching = true
		}
	}
	pending := q.pending()
	for _, w := range pending {
		if n.req.Outstanding() >= n.req.Tags() {
			break // every read needs a tag: none can issue
		}
		if (w.w.Opcode == OpWrite || w.w.Opcode == OpSend) && !w.issued && !w.err {
			w.issuedTo = n.dmaReadPart(w.w.Local, w.issuedTo, int(w.w.Length), dmaPurpose{kind: readPayload, qp: q, w: w, txn: w.txn})
			w.issued = w.issuedTo >= int(w.w.Length)
		}
	}
	// PSNs in work-request order.
	for _, w := range pending {
		if w.packets {
			continue
		}
		if (w.w.Opcode == OpWrite || w.w.Opcode == OpSend) && w.got < len(w.payload) && !w.err {
			break
		}
		q.packetize(w)
	}
	// Receive requests, fetched ahead of the SENDs that will fill them.
	if q.rqHead < q.rqTail && !q.rqFetching && len(q.rwqes) < 4 && q.rings.RQSize > 0 {
		addr := q.rings.RQBase + (q.rqHead%uint64(q.rings.RQSize))*RWQESize
		if n.dmaRead(addr, RWQESize, dmaPurpose{kind: fetchRWQE, qp: q}) {
			q.rqFetching = true
		}
	}
	// Responder work that waited for tags.
	for _, r := range q.reads {
		if n.req.Outstanding() >= n.req.Tags() {
			break
		}
		if !r.issued {
			r.serve(sim.Txn{ID: r.cause})
		}
	}
	for _, a := range q.atomics {
		if !a.issued && !a.done {
			q.issueAtomic(a)
		}
	}
	if q.deadlineAt != 0 && now >= q.deadlineAt && q.txPos > 0 {
		q.timeouts++
		n.stTimeouts.Inc()
		if q.retries == q.retryCnt {
			q.fail(q.sent[0].w, StatusRetryExceeded)
			return
		}
		q.retries++
		// Go back N: everything not acknowledged goes again (each packet
		// counts as a retransmission when it is sent).
		q.txPos = 0
		q.deadlineAt = now + n.spec.RetransmitPS
	}
}

// packetize turns a work request into request packets with PSNs.
func (q *qp) packetize(w *wqeState) {
	n := q.n
	w.packets = true
	w.firstPSN = q.nextPSN
	if w.err {
		w.done, w.status = true, StatusLocalError
		q.completeInOrder()
		return
	}
	add := func(p roce.Packet, off int, kind string) {
		p.PSN = q.nextPSN
		q.nextPSN = (q.nextPSN + 1) & 0xffffff
		if q.sent == nil {
			q.sent = n.spareSent.get()
		}
		q.sent = n.spareSent.push(q.sent, sentPkt{w: w, txn: n.u.Engine().NewTxn(w.txn.ID, kind, n.name), psn: p.PSN, off: uint32(off), opcode: p.Opcode, ackReq: p.AckReq})
	}
	switch w.w.Opcode {
	case OpWrite, OpSend:
		send := w.w.Opcode == OpSend
		mtu := n.spec.PMTU
		total := len(w.payload)
		for off := 0; off < total || off == 0; off += mtu {
			end := min(off+mtu, total)
			var p roce.Packet
			switch {
			case off == 0 && end == total:
				p.Opcode = roce.WriteOnly
			case off == 0:
				p.Opcode = roce.WriteFirst
			case end == total:
				p.Opcode = roce.WriteLast
			default:
				p.Opcode = roce.WriteMiddle
			}
			if send {
				p.Opcode -= roce.WriteFirst - roce.SendFirst // the SEND opcodes mirror the WRITE ones
			}
			// The last packet asks for an ACK, and so does every
			// AckReqEvery-th: a long message's ACKs show progress and
			// restart the requester's retransmission timer.
			p.AckReq = end == total || n.spec.AckReqEvery > 0 && (off/mtu+1)%n.spec.AckReqEvery == 0
			add(p, off, frameKinds[p.Opcode])
			if end == total {
				break
			}
		}
	case OpRead:
		var p roce.Packet
		p.Opcode, p.AckReq = roce.ReadRequest, true
		add(p, 0, "frame.READ")
		count := (int(w.w.Length) + n.spec.PMTU - 1) / n.spec.PMTU
		w.nextResp = w.firstPSN
		q.nextPSN = (w.firstPSN + uint32(count)) & 0xffffff
	case OpCAS, OpFetchOp:
		var p roce.Packet
		p.Opcode, p.AckReq = roce.FetchAdd, true
		if w.w.Opcode == OpCAS {
			p.Opcode = roce.CmpSwap
		}
		add(p, 0, "frame.ATOMIC")
	}
	w.lastPSN = (q.nextPSN - 1) & 0xffffff
}

// frameKinds names the transactions of request frames by opcode
// ("frame.WRITE_ONLY"), made once, not at every packet.
var frameKinds = func() (k [256]string) {
	for op := range k {
		k[op] = "frame." + roce.OpName(uint8(op))
	}
	return k
}()

// sentFrame makes s's frame from its work request, as packetize gave it
// its PSN: the payload from the work request's (which stays until it
// completes), the extended headers from the work request.
func (q *qp) sentFrame(s *sentPkt) Frame {
	n, w := q.n, s.w
	var p roce.Packet
	p.Opcode, p.PSN, p.AckReq = s.opcode, s.psn, s.ackReq
	switch w.w.Opcode {
	case OpWrite, OpSend:
		end := min(int(s.off)+n.spec.PMTU, len(w.payload))
		if w.w.Opcode == OpWrite && s.off == 0 {
			p.RETH.VA, p.RETH.RKey, p.RETH.DMALen = w.w.Remote, w.w.RKey, uint32(len(w.payload))
		}
		p.Payload = w.payload[s.off:end]
	case OpRead:
		p.RETH.VA, p.RETH.RKey, p.RETH.DMALen = w.w.Remote, w.w.RKey, w.w.Length
	case OpCAS, OpFetchOp:
		p.AtomicETH.VA, p.AtomicETH.RKey = w.w.Remote, w.w.RKey
		if w.w.Opcode == OpCAS {
			p.AtomicETH.Compare, p.AtomicETH.SwapAdd = w.w.Compare, w.w.Swap
		} else {
			p.AtomicETH.SwapAdd = w.w.Compare
		}
	}
	f := n.frameWith(q, p, s.txn)
	f.Bulk = w.w.Bulk && w.w.Opcode != OpSend
	if q.kind == srdPeer {
		f.Packet.DestQP, f.SrcPort = w.w.DstQPN&0xffffff, srcPort(w.sq.cfg.QPN)
	}
	return f
}

// nextRequest returns the next request packet to send, within the window.
func (q *qp) nextRequest(now sim.Tick) (Frame, bool) {
	if !q.hasRequest() {
		return Frame{}, false
	}
	s := &q.sent[q.txPos]
	if s.tries > 0 {
		// Counted here, packet by packet, as the capture shows them: a
		// rewind may resend many packets, or none when an ACK comes first.
		q.n.stRetrans.Inc()
		q.retransmitted++
	}
	s.tries++
	f := q.sentFrame(s)
	q.txPos++
	// The timer runs while packets are out. After a go-back-N rewind that
	// the wire held up past the timeout, it restarts with the first resent
	// packet (not expire at once, which would rewind after every packet).
	if q.deadlineAt == 0 || q.deadlineAt <= now {
		q.deadlineAt = now + q.n.spec.RetransmitPS
	}
	return f, true
}

// wqeFetched parses a fetched work request.
func (q *qp) wqeFetched(data []byte, err error, fetch sim.Txn, now sim.Tick) {
	q.fetching = false
	q.sqHead++
	n := q.n
	n.stWQEs.Inc()
	txn := n.u.Engine().NewTxn(fetch.ID, "wqe", n.name)
	w := &wqeState{q: q, sq: q, txn: txn}
	if q.kind == srdQueue {
		q.srdFetched(w, data, err)
		return
	}
	if err != nil {
		w.err, w.packets, w.done, w.status = true, true, true, StatusLocalError
		q.wqes = append(q.wqes, w)
		q.completeInOrder()
		return
	}
	wq, perr := ParseWQE(data)
	w.w = wq
	if q.state == QPStateError {
		// Posted to a QP in the error state: flushed, as verbs does.
		w.packets, w.done, w.status = true, true, StatusFlushed
		n.stFlushed.Inc()
		q.wqes = append(q.wqes, w)
		q.completeInOrder()
		return
	}
	if perr != nil {
		w.packets, w.done, w.status = true, true, StatusBadRequest
		q.wqes = append(q.wqes, w)
		q.completeInOrder()
		return
	}
	if wq.Opcode == OpWrite || wq.Opcode == OpSend {
		w.payload = make([]byte, wq.Length)
		if wq.Bulk && wq.Opcode == OpWrite && n.bulkRead(wq.Local, w.payload) {
			w.got, w.issued, w.issuedTo = len(w.payload), true, len(w.payload)
		}
	}
	q.wqes = append(q.wqes, w)
}

func (w *wqeState) payloadArrived(off int, data []byte, err error) {
	if err != nil {
		w.err = true
		return
	}
	copy(w.payload[off:], data)
	w.got += len(data)
}

// ackThrough acknowledges every sent packet up to and including psn. ACKs
// are cumulative, but one past a READ or an atomic does not complete it:
// only its response does. The responder acknowledges a later request as
// soon as it accepts it, while the READ's responses wait for its DMA, so
// such an ACK can overtake them, or they may have been lost. The READ or
// atomic stays the oldest packet out: its response completes it and
// releases the packets the ACK covered behind it, or the timer resends it.
func (q *qp) ackThrough(psn uint32, now sim.Tick) {
	if next := (psn + 1) & 0xffffff; psnCmp(next, q.ackedPSN) > 0 {
		q.ackedPSN = next
	}
	k := 0
	for k < len(q.sent) && psnCmp(q.sent[k].psn, q.ackedPSN) < 0 {
		s := &q.sent[k]
		op := s.w.w.Opcode
		if (op == OpWrite || op == OpSend) && s.psn == s.w.lastPSN {
			s.w.done = true
		}
		if (op == OpRead || op == OpCAS || op == OpFetchOp) && !s.w.done {
			break
		}
		k++
	}
	if k == 0 {
		return
	}
	q.sent = slices.Delete(q.sent, 0, k)
	if len(q.sent) == 0 {
		q.n.spareSent.put(q.sent)
		q.sent = nil
	}
	q.txPos = max(q.txPos-k, 0)
	q.progressed(now)
	q.completeInOrder()
}

// rewindTo makes psn the next packet to send (go back N after a NAK): the
// packets before it stay out, waiting for their ACK or response.
func (q *qp) rewindTo(psn uint32) {
	k := 0
	for k < len(q.sent) && psnCmp(q.sent[k].psn, psn) < 0 {
		k++
	}
	q.txPos = min(q.txPos, k)
}

// completeInOrder writes the completion entries of finished work requests,
// in posting order, as RC requires.
func (q *qp) completeInOrder() {
	n := q.n
	k := 0
	for k < len(q.wqes) && q.wqes[k].done {
		n.writeCompletion(q.wqes[k])
		k++
	}
	q.wqes = slices.Delete(q.wqes, 0, k)
	q.npk = max(q.npk-k, 0)
}

// writeCompletion writes w's completion entry into the CQ of the queue it
// was posted to, if it asks for one or failed. An srd queue counts it no
// longer outstanding, and may fetch again.
func (n *NIC) writeCompletion(w *wqeState) {
	sq := w.sq
	if sq == nil {
		sq = w.q
	}
	if w.w.Signaled || w.status != StatusOK {
		sq.cqTail++
		c := CQE{WRID: w.w.WRID, Status: w.status, Length: w.w.Length, Value: w.value, Seq: sq.cqTail}
		b := n.cqe[:] // dmaWrite copies it into its TLPs
		c.Put(b)
		addr := sq.rings.CQBase + ((sq.cqTail-1)%uint64(sq.rings.CQSize))*CQESize
		n.dmaWrite(addr, b, w.txn.ID)
		n.stCQEs.Inc()
	}
	if sq.kind == srdQueue {
		sq.outstanding--
		if sq.needsFetch() {
			n.activate(sq)
		}
	}
}

// pending is the fetched work requests after the leading ones that have
// their packets: the only ones the clocked loops need to look at.
func (q *qp) pending() []*wqeState {
	for q.npk < len(q.wqes) && q.wqes[q.npk].packets {
		q.npk++
	}
	return q.wqes[q.npk:]
}

// fromNet handles a received frame.
func (n *NIC) fromNet(f *Frame, now sim.Tick) {
	p := &f.Packet
	q := n.qps[p.DestQP]
	// srd: answers to a context, requests to a queue, or to no queue of a
	// NIC with srd queues (a SEND to it fails at the responder).
	if p.DestQP == SRDPeerQPN || q != nil && q.kind == srdQueue || q == nil && n.srd {
		n.fromNetSRD(f, now)
		return
	}
	if q == nil {
		return // no such QP: silently dropped, as a NIC does
	}
	n.activate(q)
	if q.state == QPStateError {
		return // a QP in the error state drops what arrives
	}
	q.dispatch(f, now)
}

// dispatch hands a frame to the requester (ACKs and responses) or to the
// responder (requests).
func (q *qp) dispatch(f *Frame, now sim.Tick) {
	p := &f.Packet
	switch p.Opcode {
	case roce.Ack:
		q.onAck(p, now)
	case roce.ReadRespFirst, roce.ReadRespMiddle, roce.ReadRespLast, roce.ReadRespOnly:
		q.onReadResponse(f, now)
	case roce.AtomicAck:
		q.onAtomicAck(f, now)
	default:
		q.onRequest(f, now)
	}
}

func (q *qp) onAck(p *roce.Packet, now sim.Tick) {
	switch {
	case p.AETH.Syndrome>>5 == 0: // ACK
		q.ackThrough(p.PSN, now)
	case p.AETH.Syndrome>>5 == 1: // RNR NAK: no receive buffer yet; resend after a pause
		q.n.stRNR.Inc()
		q.ackThrough((p.PSN-1)&0xffffff, now)
		k := slices.IndexFunc(q.sent, func(s sentPkt) bool { return s.psn == p.PSN })
		if k < 0 {
			return // nothing of ours is waiting at that PSN
		}
		if q.rnrRetry != RNRRetryInfinite && q.rnrRetries == int32(q.rnrRetry) {
			q.fail(q.sent[k].w, StatusRNRRetryExceeded)
			return
		}
		q.rnrRetries++
		q.rewindTo(p.PSN)
		q.rnrUntil = now + RNRDelayPS
	case p.AETH.Syndrome == roce.SyndromeNAKSeq:
		// Everything before the NAK's PSN arrived; go back to it.
		q.ackThrough((p.PSN-1)&0xffffff, now)
		q.rewindTo(p.PSN)
	case p.AETH.Syndrome>>5 == 3: // other NAKs: the request failed at the responder
		for k := range q.sent {
			if q.sent[k].psn == p.PSN {
				w := q.sent[k].w
				w.done, w.status = true, StatusRemoteError
				q.ackThrough(w.lastPSN, now)
				break
			}
		}
		for _, w := range q.wqes {
			if w.firstPSN == p.PSN && w.packets && !w.done {
				w.done, w.status = true, StatusRemoteError
			}
		}
		q.completeInOrder()
	}
}

func (q *qp) onReadResponse(f *Frame, now sim.Tick) {
	p := &f.Packet
	var w *wqeState
	for _, x := range q.wqes {
		if x.w.Opcode == OpRead && x.packets && !x.done && psnCmp(p.PSN, x.firstPSN) >= 0 && psnCmp(p.PSN, x.lastPSN) <= 0 {
			w = x
			break
		}
	}
	if w == nil || p.PSN != w.nextResp {
		return // a duplicate or a response after a lost one: the timer resends the request
	}
	// A response acknowledges every request before its READ, and each is
	// progress, even in the middle of a long READ: the timer restarts and
	// the retry counts start over.
	q.progressed(now)
	q.ackThrough((w.firstPSN-1)&0xffffff, now)
	off := int((p.PSN-w.firstPSN)&0xffffff) * q.n.spec.PMTU
	if len(p.Payload) > 0 && (!f.Bulk || !q.n.bulkWrite(w.w.Local+uint64(off), p.Payload)) {
		q.n.dmaWrite(w.w.Local+uint64(off), p.Payload, f.ID)
	}
	w.nextResp = (w.nextResp + 1) & 0xffffff
	if p.PSN == w.lastPSN {
		w.done = true
		q.ackThrough(w.firstPSN, now)
		q.completeInOrder()
	}
}

func (q *qp) onAtomicAck(f *Frame, now sim.Tick) {
	p := &f.Packet
	for _, w := range q.wqes {
		if (w.w.Opcode == OpCAS || w.w.Opcode == OpFetchOp) && w.packets && !w.done && w.firstPSN == p.PSN {
			w.value = p.AtomicAckETH
			if w.w.Local != 0 {
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], w.value)
				q.n.dmaWrite(w.w.Local, b[:], f.ID)
			}
			w.done = true
			q.ackThrough(p.PSN, now)
			return
		}
	}
}

func (q *qp) ack(psn uint32, syndrome uint8, cause sim.TxnID) {
	if q.state == QPStateError {
		return // a QP in the error state sends nothing
	}
	var a roce.Packet
	a.Opcode, a.PSN = roce.Ack, psn
	a.AETH.Syndrome, a.AETH.MSN = syndrome, q.msn&0xffffff
	q.n.send(q, q.n.frame(q, a, cause, "frame.ACK"))
}

// onRequest is the responder: requests in PSN order become TLPs to the host.
func (q *qp) onRequest(f *Frame, now sim.Tick) {
	n := q.n
	p := &f.Packet
	switch c := psnCmp(p.PSN, q.expPSN); {
	case c > 0:
		if !q.nakSent {
			q.nakSent = true
			n.stNAKs.Inc()
			q.ack(q.expPSN, roce.SyndromeNAKSeq, f.ID)
		}
		return
	case c < 0:
		n.stDupes.Inc()
		q.duplicate(f)
		return
	}
	q.nakSent = false
	switch p.Opcode {
	case roce.WriteFirst, roce.WriteOnly, roce.WriteMiddle, roce.WriteLast:
		if p.Opcode == roce.WriteFirst || p.Opcode == roce.WriteOnly {
			q.writeVA, q.writeOff = p.RETH.VA, 0
		}
		if len(p.Payload) > 0 {
			if !f.Bulk || !n.bulkWrite(q.writeVA+q.writeOff, p.Payload) {
				n.dmaWrite(q.writeVA+q.writeOff, p.Payload, f.ID)
			}
			q.writeOff += uint64(len(p.Payload))
		}
		q.expPSN = (q.expPSN + 1) & 0xffffff
		if p.Opcode == roce.WriteLast || p.Opcode == roce.WriteOnly {
			q.msn++
		}
		if p.AckReq {
			q.ack(p.PSN, roce.SyndromeAck, f.ID)
		}
	case roce.SendFirst, roce.SendMiddle, roce.SendLast, roce.SendOnly:
		if !q.receive(f) {
			return // RNR NAK sent; the PSN is not consumed
		}
	case roce.ReadRequest:
		count := max((int(p.RETH.DMALen)+n.spec.PMTU-1)/n.spec.PMTU, 1)
		r := &readResp{q: q, psn: p.PSN, va: p.RETH.VA, n: int(p.RETH.DMALen), buf: make([]byte, p.RETH.DMALen), cause: f.ID, bulk: f.Bulk}
		q.reads = append(q.reads, r)
		if r.bulk && n.bulkRead(r.va, r.buf) {
			r.got, r.issued, r.to = r.n, true, r.n
			q.respondWhole()
		} else {
			r.serve(f.Txn)
		}
		q.expPSN = (q.expPSN + uint32(count)) & 0xffffff
	case roce.CmpSwap, roce.FetchAdd:
		a := &atomicServe{psn: p.PSN, p: *p, cause: f.ID}
		q.atomics = append(q.atomics, a)
		if len(q.atomics) > 16 {
			q.atomics = slices.Delete(q.atomics, 0, 1) // keep recent results for duplicates
		}
		q.issueAtomic(a)
		q.expPSN = (q.expPSN + 1) & 0xffffff
	}
}

// RNRDelayPS is how long a requester waits after a receiver-not-ready NAK.
const RNRDelayPS = 10 * sim.US

// receive puts a SEND's payload into the next posted receive buffer and,
// at the end of the message, writes its receive completion. Without a
// receive buffer the requester gets an RNR NAK and sends again later.
func (q *qp) receive(f *Frame) bool {
	n := q.n
	p := &f.Packet
	if q.kind == srdPeer {
		return q.receiveSRD(f)
	}
	first := p.Opcode == roce.SendFirst || p.Opcode == roce.SendOnly
	if len(q.rwqes) == 0 {
		if first {
			q.ack(p.PSN, 0x20|0x0e, f.ID) // RNR NAK, timer code 14
			n.stRNR.Inc()
			return false
		}
		return false
	}
	if first {
		q.sendOff = 0
	}
	r := q.rwqes[0]
	room := int(r.len) - int(q.sendOff)
	data := p.Payload
	if len(data) > room {
		data = data[:max(room, 0)] // a message longer than the buffer is cut (the completion says so)
	}
	if len(data) > 0 {
		n.dmaWrite(r.addr+q.sendOff, data, f.ID)
	}
	q.sendOff += uint64(len(p.Payload))
	q.expPSN = (q.expPSN + 1) & 0xffffff
	if p.Opcode == roce.SendLast || p.Opcode == roce.SendOnly {
		q.msn++
		status := StatusOK
		if int(q.sendOff) > int(r.len) {
			status = StatusLocalError
		}
		q.recvCompletion(r.index, status, uint32(q.sendOff), f.ID)
		q.rwqes = slices.Delete(q.rwqes, 0, 1)
	}
	if p.AckReq {
		q.ack(p.PSN, roce.SyndromeAck, f.ID)
	}
	return true
}

// recvCompletion writes the completion of receive request index into the
// QP's receive completion ring, or into its shared receive CQ.
func (q *qp) recvCompletion(index uint64, status, length uint32, cause sim.TxnID) {
	q.recvCompletionValue(index, status, length, 0, cause)
}

// recvCompletionValue is recvCompletion with the entry's Value (the srd
// transport's sending node) when the ring is the QP's own.
func (q *qp) recvCompletionValue(index uint64, status, length uint32, value uint64, cause sim.TxnID) {
	n := q.n
	if n.OnReceive != nil {
		n.OnReceive(q.cfg.QPN, index, n.u.Engine().Now())
	}
	q.rcqTail++
	if c := q.rcq; c != nil {
		// A shared CQ: the entry names the QP (and, on an srd queue, the
		// sending node in the upper half), its sequence is the CQ's.
		e := CQE{WRID: index, Status: status, Length: length, Value: uint64(q.cfg.QPN) | value<<32, Seq: c.tail + 1}
		b := n.cqe[:]
		e.Put(b)
		n.dmaWrite(c.cfg.Base+(c.tail%uint64(c.cfg.Size))*CQESize, b, cause)
		n.completed(c, n.u.Engine().Now(), cause)
		return
	}
	e := CQE{WRID: index, Status: status, Length: length, Value: value, Seq: q.rcqTail}
	b := n.cqe[:]
	e.Put(b)
	n.dmaWrite(q.rings.RCQBase+((q.rcqTail-1)%uint64(q.rings.RQSize))*CQESize, b, cause)
}

// duplicate answers a request the responder already executed: an ACK for
// writes, the read again (reads are idempotent), the saved result of an
// atomic (which must not run twice).
func (q *qp) duplicate(f *Frame) {
	p := &f.Packet
	switch p.Opcode {
	case roce.ReadRequest:
		r := &readResp{q: q, psn: p.PSN, va: p.RETH.VA, n: int(p.RETH.DMALen), buf: make([]byte, p.RETH.DMALen), cause: f.ID}
		q.reads = append(q.reads, r)
		r.serve(f.Txn)
	case roce.CmpSwap, roce.FetchAdd:
		for _, a := range q.atomics {
			switch {
			case a.psn != p.PSN || !a.done:
			case a.err: // refused: the NAK again (its first copy was lost), never a result
				q.ack(a.psn, roce.SyndromeNAKAccess, f.ID)
			default:
				q.atomicAck(a)
			}
		}
	default:
		q.ack((q.expPSN-1)&0xffffff, roce.SyndromeAck, f.ID)
	}
}

func (q *qp) issueAtomic(a *atomicServe) {
	n := q.n
	if n.soft != nil {
		// Without offload the driver does the atomic on the CPU.
		a.issued = true
		cas := a.p.Opcode == roce.CmpSwap
		n.soft.ops.Push(&SoftOp{CAS: cas, Addr: a.p.AtomicETH.VA, Compare: a.p.AtomicETH.Compare, Swap: a.p.AtomicETH.SwapAdd, n: n, q: q, a: a})
		n.softWork(n.u.Engine().Now())
		return
	}
	t := tlp.TLP{Kind: tlp.FetchAdd, Addr: a.p.AtomicETH.VA, Addr64: a.p.AtomicETH.VA >= 1<<32}
	var data [16]byte
	if a.p.Opcode == roce.CmpSwap {
		t.Kind, t.Length = tlp.CAS, 4
		binary.LittleEndian.PutUint64(data[:], a.p.AtomicETH.Compare)
		binary.LittleEndian.PutUint64(data[8:], a.p.AtomicETH.SwapAdd)
		t.Data = append([]byte(nil), data[:]...)
	} else {
		t.Length = 2
		binary.LittleEndian.PutUint64(data[:], a.p.AtomicETH.SwapAdd)
		t.Data = append([]byte(nil), data[:8]...)
	}
	t, ok := n.req.IssueNonPosted(t, a.p.AtomicETH.VA, 8)
	if !ok {
		return
	}
	a.issued = true
	n.setTag(t.Tag, dmaPurpose{kind: serveAtomic, qp: q})
	n.atomicsByTag[t.Tag] = a
	n.sendTLP(t, n.u.Engine().NewTxn(a.cause, "tlp."+t.Kind.String(), n.name))
}

func (n *NIC) atomicDone(p dmaPurpose, c *tlp.TLP, err error, now sim.Tick) {
	a := n.atomicsByTag[c.Tag]
	delete(n.atomicsByTag, c.Tag)
	if a == nil {
		return
	}
	a.done = true
	if err != nil || c.Status != tlp.SC {
		a.err = true
		p.qp.ack(a.psn, roce.SyndromeNAKAccess, a.cause)
		return
	}
	if len(c.Data) >= 8 {
		a.value = binary.LittleEndian.Uint64(c.Data)
	}
	p.qp.atomicAck(a)
}

func (q *qp) atomicAck(a *atomicServe) {
	if q.state == QPStateError {
		return
	}
	var r roce.Packet
	r.Opcode, r.PSN = roce.AtomicAck, a.psn
	r.AETH.Syndrome, r.AETH.MSN = roce.SyndromeAck, q.msn&0xffffff
	r.AtomicAckETH = a.value
	q.n.send(q, q.n.frame(q, r, a.cause, "frame.ATOMIC_ACK"))
}

// arrived takes read data from the host; when the read is whole, its
// responses go out, and so do those of the reads after it that are whole.
func (r *readResp) arrived(off int, data []byte, err error) {
	if err != nil {
		r.err = true
	} else {
		copy(r.buf[off:], data)
	}
	r.got += len(data)
	if err != nil {
		r.got = r.n
	}
	r.q.respondWhole()
}

// respondWhole sends the responses of the leading reads that are whole.
func (q *qp) respondWhole() {
	for len(q.reads) > 0 && q.reads[0].got >= q.reads[0].n {
		q.respond(q.reads[0])
		q.reads = slices.Delete(q.reads, 0, 1)
	}
}

func (q *qp) respond(r *readResp) {
	n := q.n
	if q.state == QPStateError {
		return
	}
	if r.err {
		q.ack(r.psn, roce.SyndromeNAKAccess, r.cause)
		return
	}
	q.msn++
	mtu := n.spec.PMTU
	psn := r.psn
	for off := 0; off < r.n || off == 0; off += mtu {
		end := min(off+mtu, r.n)
		var p roce.Packet
		switch {
		case off == 0 && end == r.n:
			p.Opcode = roce.ReadRespOnly
		case off == 0:
			p.Opcode = roce.ReadRespFirst
		case end == r.n:
			p.Opcode = roce.ReadRespLast
		default:
			p.Opcode = roce.ReadRespMiddle
		}
		if p.Opcode != roce.ReadRespMiddle {
			p.AETH.Syndrome, p.AETH.MSN = roce.SyndromeAck, q.msn&0xffffff
		}
		p.PSN = psn
		p.Payload = r.buf[off:end]
		f := n.frame(q, p, r.cause, "frame.READ_RESPONSE")
		f.Bulk = r.bulk
		n.send(q, f)
		psn = (psn + 1) & 0xffffff
		if end == r.n {
			break
		}
	}
}

// serve issues the DMA reads of the READ's data as far as tags allow (a
// READ larger than the tags cover is read in turns).
func (r *readResp) serve(cause sim.Txn) {
	n := r.q.n
	to := n.dmaReadPart(r.va, r.to, r.n, dmaPurpose{kind: serveRead, qp: r.q, rr: r, txn: cause})
	if to < 0 {
		return
	}
	r.to = to
	r.issued = r.to >= r.n
}

// spares keeps the emptied backing arrays of the QPs' per-packet lists
// (frames to acknowledge, frames to send) for the next QP that needs one:
// an srd NIC has a context per peer, and each kept the array of its
// busiest moment, which at a thousand peers was most of a NIC's memory.
// They are kept by size class (the floor of the capacity's log2), and a
// list that outgrows its array trades it for a larger spare one (push):
// arrays are not dropped for the collector at every doubling of every
// list, and no more are made than the lists hold at once.
type spares[T any] struct{ free [bits.UintSize][][]T }

// class is the size class of an array of capacity c > 0.
func class(c int) int { return bits.Len(uint(c)) - 1 }

// get is an empty list with room (the smallest kept), or nil.
func (s *spares[T]) get() []T {
	for k := range s.free {
		if n := len(s.free[k]); n > 0 {
			l := s.free[k][n-1]
			s.free[k] = s.free[k][:n-1]
			return l
		}
	}
	return nil
}

// put keeps l's array (l is empty: its elements were cleared).
func (s *spares[T]) put(l []T) {
	if cap(l) > 0 {
		k := class(cap(l))
		s.free[k] = append(s.free[k], l[:0])
	}
}

// push appends v to l. A full l moves to a kept array of a larger class,
// or to a new one, and its own array is cleared and kept.
func (s *spares[T]) push(l []T, v T) []T {
	if len(l) < cap(l) {
		return append(l, v)
	}
	var to []T
	for k := class(max(cap(l), 1)) + 1; k < len(s.free) && to == nil; k++ {
		if n := len(s.free[k]); n > 0 {
			to = s.free[k][n-1]
			s.free[k] = s.free[k][:n-1]
		}
	}
	if to == nil {
		to = make([]T, 0, max(2*cap(l), 4))
	}
	to = append(append(to, l...), v)
	clear(l)
	s.put(l)
	return to
}
