package nic

import (
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

// The srd transport: connectionless queues over one reliable context per
// peer NIC, the scheme of AWS's Scalable Reliable Datagram and of the
// BXI/Portals NICs (reliability in the NIC, per peer; queues for software
// that reach every node).
//
// A process has one queue (CreateQueue): a send queue and its completion
// queue, and a receive queue with its receive completions for SENDs. Each
// work request names its destination — node, NIC and, for a SEND, the
// destination queue — in the WQE (see WQE). The NIC fetches work requests
// from the queue as from an RC QP's send queue and hands each to the
// reliable context of its destination NIC: PSNs, the window, ACKs and
// NAKs, go-back-N retransmission and the retry counts, and the responder's
// expected PSN, READ responses and atomic results, as an RC QP keeps them,
// but shared by all of the node's queues that talk to that peer. A context
// is created the first time either side uses it (a work request for the
// peer, or a request from it): a node that never talks to a peer holds
// nothing for it. Its state is a few hundred bytes and has no host rings.
//
// Unlike SRD, which delivers out of order over many paths, a context
// sends and delivers in PSN order (go-back-N): work requests to one peer
// execute in posting order across the queues that share it, and one lost
// packet, or an RNR NAK for one queue's SEND, holds up every queue's
// packets to that peer until it is resent. Completions go to the queue
// the work request was posted to, in order per peer but not across peers:
// software matches them by wr_id.
//
// On the wire the frames are RoCEv2 RC packets: a request's BTH DestQP is
// the destination queue named in its WQE (what the receiver delivers a
// SEND to; for WRITE, READ and atomics it only labels the packet), ACKs,
// NAKs, READ responses and atomic ACKs carry SRDPeerQPN. The receiver
// finds the context by the frame's source (node and NIC), not by the
// DestQP. The UDP source port is the issuing queue's, as an RC QP's.
//
// When a context's retries run out it fails the work request of its
// oldest packet with StatusRetryExceeded (or StatusRNRRetryExceeded),
// flushes the other work requests it holds, and stays in the error state:
// work requests posted later to that peer complete with StatusFlushed,
// those to other peers are not affected.
//
// Tracing covers the NIC's counters and its srd_peers probe (the number
// of contexts); a context declares no probes of its own (QPStatus and
// Pending report it).

type qpKind uint8

const (
	rcQP     qpKind = iota // a reliable-connection QP: rings and transport state
	srdQueue               // an srd queue: rings only
	srdPeer                // an srd peer context: transport state only
)

// SRDPeerQPN is the BTH destination QP of the srd transport's ACKs, NAKs
// and responses; no queue may take it.
const SRDPeerQPN = 0xff

type peerKey struct{ node, nic int }

// peerTable finds a peer context by node and NIC: a slot per node up to
// the highest one met (a node's NICs in a short slice), since a lookup
// is made for every frame; numbers past maxPeerNode (a work request's
// nonsense) go to a map.
type peerTable struct {
	byNode [][]*qp
	far    map[peerKey]*qp
}

const maxPeerNode = 1 << 16

func near(node, nic int) bool { return uint(node) < maxPeerNode && uint(nic) < 256 }

func (t *peerTable) get(node, nic int) *qp {
	if !near(node, nic) {
		return t.far[peerKey{node, nic}]
	}
	if node < len(t.byNode) {
		if s := t.byNode[node]; nic < len(s) {
			return s[nic]
		}
	}
	return nil
}

func (t *peerTable) set(node, nic int, q *qp) {
	if !near(node, nic) {
		if t.far == nil {
			t.far = map[peerKey]*qp{}
		}
		t.far[peerKey{node, nic}] = q
		return
	}
	if node >= len(t.byNode) {
		t.byNode = append(t.byNode, make([][]*qp, node+1-len(t.byNode))...)
	}
	s := t.byNode[node]
	if nic >= len(s) {
		s = append(s, make([]*qp, nic+1-len(s))...)
		t.byNode[node] = s
	}
	s[nic] = q
}

// QueueConfig creates a queue of the srd transport: its rings in host
// memory, as a QP's (QPConfig), and no peer.
type QueueConfig struct {
	QPN     uint32
	SQBase  uint64 // SQSize work requests of WQESize bytes
	SQSize  int
	CQBase  uint64 // CQSize entries of CQESize bytes
	CQSize  int
	RQBase  uint64 // RQSize receive requests (0: no receive queue)
	RQSize  int
	RCQBase uint64 // RQSize receive completions
}

// maxDoorbellRing bounds the doorbell ring an srd queue starts with.
const maxDoorbellRing = 4096

// CreateQueue creates an srd queue: its doorbells are a QP's, at QPN.
func (n *NIC) CreateQueue(c QueueConfig) error {
	if _, dup := n.qps[c.QPN]; dup || c.QPN == 0 || c.QPN == SRDPeerQPN || c.QPN >= MaxQPN {
		return fmt.Errorf("%s: QPN %d is taken or invalid (1..%d but %d: the doorbell pages hold that many)", n.name, c.QPN, MaxQPN-1, SRDPeerQPN)
	}
	if c.SQSize < 1 || c.CQSize < 1 {
		return fmt.Errorf("%s: queue %d needs a send and a completion queue", n.name, c.QPN)
	}
	// The queue's doorbells: unfetched ones never outnumber its send
	// queue's work requests, and a core's queue carries every peer's, so
	// the ring starts at that bound (up to maxDoorbellRing; it grows past
	// it as before) rather than growing there through garbage.
	db := 4
	for db < c.SQSize && db < maxDoorbellRing {
		db *= 2
	}
	q := &qp{qpHost: &qpHost{doorbells: make([]doorbell, db), rings: QPConfig{QPN: c.QPN, RemoteNode: -1, SQBase: c.SQBase, SQSize: c.SQSize, CQBase: c.CQBase, CQSize: c.CQSize,
		RQBase: c.RQBase, RQSize: c.RQSize, RCQBase: c.RCQBase}}, cfg: qpID{QPN: c.QPN, RemoteNode: -1}, n: n, kind: srdQueue, idx: n.created}
	n.created++
	n.addQP(q)
	n.qps[c.QPN] = q
	n.order = append(n.order, c.QPN)
	if !n.srd {
		n.srd = true
		n.peerRetryCnt, n.peerRNRRetry = DefaultRetryCnt, DefaultRNRRetry
		n.u.Probe("srd_peers", 16, func() (uint64, bool) { return uint64(len(n.peerList)), true })
	}
	return nil
}

// SetPeerRetry sets retry_cnt and rnr_retry (each 0 to 7; rnr_retry 7 is
// infinite) of the srd peer contexts, those there are and those to come.
func (n *NIC) SetPeerRetry(retryCnt, rnrRetry int) error {
	if retryCnt < 0 || retryCnt > 7 || rnrRetry < 0 || rnrRetry > 7 {
		return fmt.Errorf("%s: retry_cnt %d, rnr_retry %d: each must be 0 to 7", n.name, retryCnt, rnrRetry)
	}
	n.peerRetryCnt, n.peerRNRRetry = retryCnt, rnrRetry
	for _, q := range n.peerList {
		q.retryCnt, q.rnrRetry = int8(retryCnt), int8(rnrRetry)
	}
	return nil
}

// Peers is the number of srd peer contexts the NIC holds.
func (n *NIC) Peers() int { return len(n.peerList) }

// PeerStatus is the status of the srd context for NIC nic of node node.
func (n *NIC) PeerStatus(node, nic int) (QPStatus, bool) {
	q := n.peers.get(node, nic)
	if q == nil {
		return QPStatus{}, false
	}
	return q.status(), true
}

// peer is the context for NIC nic of node, created on first use.
func (n *NIC) peer(node, nic int) *qp {
	if q := n.peers.get(node, nic); q != nil {
		return q
	}
	q := &qp{cfg: qpID{QPN: SRDPeerQPN, RemoteNode: node, RemoteNIC: nic, RemoteQPN: SRDPeerQPN}, n: n, kind: srdPeer, qpHost: &n.peerHost,
		idx: n.created, retryCnt: int8(n.peerRetryCnt), rnrRetry: int8(n.peerRNRRetry)}
	n.created++
	n.addQP(q)
	n.peers.set(node, nic, q)
	n.peerList = append(n.peerList, q)
	return q
}

// srdFetched hands a work request fetched from queue q to the context of
// its destination, or completes it at once when it cannot go.
func (q *qp) srdFetched(w *wqeState, data []byte, err error) {
	n := q.n
	q.outstanding++
	if err != nil {
		w.err, w.packets, w.done, w.status = true, true, true, StatusLocalError
		n.writeCompletion(w)
		return
	}
	wq, perr := ParseWQE(data)
	w.w = wq
	if perr == nil && wq.DstNode == n.spec.Node && wq.DstNIC == n.spec.Index {
		perr = fmt.Errorf("a work request to its own NIC")
	}
	if perr != nil {
		w.packets, w.done, w.status = true, true, StatusBadRequest
		n.writeCompletion(w)
		return
	}
	p := n.peer(wq.DstNode, wq.DstNIC)
	w.q = p
	if p.state == QPStateError {
		// The peer's context gave up: flushed, as on an RC QP in the error
		// state.
		w.packets, w.done, w.status = true, true, StatusFlushed
		n.stFlushed.Inc()
		n.writeCompletion(w)
		return
	}
	if wq.Opcode == OpWrite || wq.Opcode == OpSend {
		w.payload = make([]byte, wq.Length)
	}
	p.wqes = append(p.wqes, w)
	n.activate(p)
}

// fromNetSRD takes a frame of the srd transport to the context of the NIC
// that sent it. A request from a peer without one creates it; an answer
// to nothing of ours is dropped.
func (n *NIC) fromNetSRD(f *Frame, now sim.Tick) {
	if !n.srd || f.DstNode != n.spec.Node {
		return // this NIC has no srd queues, or the frame is not for it
	}
	src := 0
	if len(f.Src.MAC) == 6 {
		src = int(f.Src.MAC[5]) // the sending NIC's number (roce.NodeEndpoint)
	}
	p := &f.Packet
	q := n.peers.get(f.SrcNode, src)
	if q == nil {
		switch p.Opcode {
		case roce.Ack, roce.AtomicAck, roce.ReadRespFirst, roce.ReadRespMiddle, roce.ReadRespLast, roce.ReadRespOnly:
			return
		}
		q = n.peer(f.SrcNode, src)
	}
	n.activate(q)
	if q.state == QPStateError {
		return
	}
	q.dispatch(f, now)
}

// receiveSRD is a context's SEND receiver: the first packet of a message
// takes the next receive request of the queue its DestQP names, the
// others fill it, and the last writes the receive completion (its Value
// is the sending node). A SEND to no queue with a receive queue is
// consumed and NAKed (invalid request) on its last packet.
func (q *qp) receiveSRD(f *Frame) bool {
	n := q.n
	p := &f.Packet
	last := p.Opcode == roce.SendLast || p.Opcode == roce.SendOnly
	if p.Opcode == roce.SendFirst || p.Opcode == roce.SendOnly {
		d := n.qps[p.DestQP]
		switch {
		case d == nil || d.kind != srdQueue || d.rings.RQSize == 0:
			q.recvQ = nil
		case len(d.rwqes) == 0:
			n.activate(d)                 // its posted receive requests may still be on their way
			q.ack(p.PSN, 0x20|0x0e, f.ID) // RNR NAK, timer code 14
			n.stRNR.Inc()
			return false
		default:
			q.recvQ, q.recvR, q.sendOff = d, d.rwqes[0], 0
			d.rwqes = slices.Delete(d.rwqes, 0, 1)
			n.activate(d) // to fetch the next receive request
		}
	}
	q.expPSN = (q.expPSN + 1) & 0xffffff
	d := q.recvQ
	if d == nil {
		if last {
			q.msn++
			q.ack(p.PSN, roce.SyndromeNAKInvalid, f.ID)
		}
		return true
	}
	r := q.recvR
	data := p.Payload
	if room := int(r.len) - int(q.sendOff); len(data) > room {
		data = data[:max(room, 0)] // cut; the completion says so
	}
	if len(data) > 0 {
		n.dmaWrite(r.addr+q.sendOff, data, f.ID)
	}
	q.sendOff += uint64(len(p.Payload))
	if last {
		q.msn++
		status := StatusOK
		if int(q.sendOff) > int(r.len) {
			status = StatusLocalError
		}
		d.recvCompletionValue(r.index, status, uint32(q.sendOff), uint64(q.cfg.RemoteNode), f.ID)
		q.recvQ = nil
	}
	if p.AckReq {
		q.ack(p.PSN, roce.SyndromeAck, f.ID)
	}
	return true
}
