package nic

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Spec configures an RDMA NIC.
type Spec struct {
	ID           tlp.ID     // PCIe requester ID
	Node, Index  int        // node number and NIC number in the node (addresses)
	PMTU         int        // path MTU: 256, 512, 1024 (default: 1500-byte Ethernet), 2048 or 4096
	Sizes        pcie.Sizes // MPS and MRRS of the NIC's DMA
	TagBits      int        // 5, 8 or 10 (default 8)
	BAR          uint64     // doorbells at BAR + 8 × QPN
	RetransmitPS sim.Tick   // retransmission timeout (default 200 µs)
	Window       int        // unacknowledged packets per QP (default 64)
	ProcessPS    sim.Tick   // per-packet processing (default 50 ns)
	QueueTLPs    int        // DMA TLPs waiting for the PCIe link before the NIC stops taking frames (default 32)
	// AckReqEvery: a multi-packet WRITE or SEND asks for an ACK on its last
	// packet and on every AckReqEvery-th (default 16; 0: the last only), as
	// Linux's rxe asks past a number of unacknowledged packets: without
	// it, a message longer than the retransmission timeout takes to send
	// would time out while it is still arriving.
	AckReqEvery int
	// SRAMBytes of device memory in the BAR from SRAMOffset on, after the
	// doorbells: host stores write it, host loads read it (default 256 KB,
	// DefaultSRAMBytes; a multiple of 4). SRAMAccessPS is the device's time
	// to serve one host access of it (default DefaultSRAMAccessPS): a read
	// is answered when it ends.
	SRAMBytes    int
	SRAMAccessPS sim.Tick
	// Descriptors, if not nil, adds an e1000's descriptor DMAs to every
	// packet sent and received (desc.go); nil, the RDMA NIC's own queues
	// only.
	Descriptors *Descriptors
	// Software, if not nil, makes the NIC one without RDMA offload (an
	// e1000): the host's driver takes every frame (soft.go).
	Software *Software
}

// DefaultSpec is a 1 GbE RoCE NIC on PCIe.
func DefaultSpec() Spec {
	return Spec{PMTU: 1024, Sizes: pcie.Sizes{MPS: 256, MRRS: 512, RCB: 64}, TagBits: 8, BAR: 0xf000_0000,
		RetransmitPS: 200 * sim.US, Window: 64, ProcessPS: 50 * sim.NS, QueueTLPs: 32, AckReqEvery: 16,
		SRAMBytes: DefaultSRAMBytes, SRAMAccessPS: DefaultSRAMAccessPS}
}

// Validate checks the spec.
func (s Spec) Validate() error {
	switch s.PMTU {
	case 256, 512, 1024, 2048, 4096:
	default:
		return fmt.Errorf("pmtu %d: want 256, 512, 1024, 2048 or 4096", s.PMTU)
	}
	if err := s.Sizes.Validate(); err != nil {
		return err
	}
	switch {
	case s.Window < 1:
		return fmt.Errorf("window %d", s.Window)
	case s.RetransmitPS == 0:
		return fmt.Errorf("retransmit timeout must be positive")
	case s.QueueTLPs < 1:
		return fmt.Errorf("queue_tlps %d", s.QueueTLPs)
	case s.AckReqEvery < 0:
		return fmt.Errorf("ack_req_every %d", s.AckReqEvery)
	case s.SRAMBytes < 0 || s.SRAMBytes > MaxSRAMBytes || s.SRAMBytes%4 != 0:
		return fmt.Errorf("device memory of %d bytes: want a multiple of 4 in 0..%d", s.SRAMBytes, MaxSRAMBytes)
	case s.BAR%s.BARSize() != 0:
		return fmt.Errorf("BAR %#x is not aligned to its size %#x", s.BAR, s.BARSize())
	}
	if s.Software != nil {
		if err := s.Software.Validate(); err != nil {
			return err
		}
	}
	if s.Descriptors != nil {
		return s.Descriptors.Validate()
	}
	return nil
}

// RQDoorbells is the offset in the BAR of the receive-queue doorbells.
const RQDoorbells = 0x8_0000

// MaxQPN bounds the QP numbers: a QP's receive-queue doorbell at
// RQDoorbells + 8 × QPN must stay below the CQ arm doorbells, and its send
// doorbell at 8 × QPN below the receive doorbells.
const MaxQPN = (CQDoorbells - RQDoorbells) / 8

// QPConfig connects a reliable-connection queue pair to its peer and to its
// rings in host memory.
type QPConfig struct {
	QPN        uint32
	RemoteNode int
	RemoteNIC  int
	RemoteQPN  uint32
	SQBase     uint64 // send queue: SQSize work requests of 64 bytes
	SQSize     int
	CQBase     uint64 // completion queue: CQSize entries of 32 bytes
	CQSize     int
	// Receive queue for SENDs: RQSize receive requests of 16 bytes, and
	// their completions in a receive completion queue of RQSize entries.
	RQBase  uint64
	RQSize  int
	RCQBase uint64
}

// NIC is an RDMA NIC as a cycle-level block: doorbells arrive as MMIO
// writes, work requests and payloads are read by DMA through the IOMMU,
// messages leave as RoCEv2 frames over a reliable connection (PSNs, ACKs,
// NAKs, go-back-N retransmission on timeout), and incoming requests become
// MWr, MRd and AtomicOp TLPs towards the host. Besides connected QPs
// (CreateQP), a NIC takes the srd transport's queues (CreateQueue, srd.go):
// one per process for every destination, over one reliable context per
// peer NIC that the NIC creates on first use.
type NIC struct {
	u    *sim.Unit
	spec Spec
	name string

	DMAOut *sim.Chan[pcie.Packet] // TLPs to the host (the PCIe link's input)
	DMAIn  *sim.Chan[pcie.Packet] // completions and doorbells from the host
	NetOut *sim.Chan[Frame]
	NetIn  *sim.Chan[Frame]

	req          *pcie.Requester
	tags         []dmaPurpose // what each outstanding DMA read is for, by tag (busy)
	atomicsByTag map[uint16]*atomicServe
	qps          map[uint32]*qp
	order        []uint32 // QPNs in creation order: deterministic iteration
	created      int      // QPs, srd queues and peer contexts created (their idx)
	// srd (srd.go): the reliable contexts, one per peer NIC this one has
	// talked to, by peer and in creation order, and the limits they start
	// with.
	srd       bool   // it has srd queues
	peerHost  qpHost // the peer contexts' rings: none, always zero
	self      roce.Endpoint
	selfOf    [2]int // the node and NIC self is of
	spareSent spares[sentPkt]
	// Scratch slices of the pieces of one DMA read or write, issued at
	// once (each TLP is copied into its queue).
	chunks                     []pcie.Chunk
	writes                     []tlp.TLP
	cqe                        [CQESize]byte // a completion entry on its way into its TLPs
	spareResp                  spares[Frame]
	peers                      peerTable
	peerList                   []*qp
	peerRetryCnt, peerRNRRetry int
	// Scheduling (sched.go): every QP by creation index, the sets of those
	// with each kind of work, the timers, the QPs touched at this edge and
	// those touched since the last quiet edge. While the loop runs,
	// activations of inactive QPs wait in deferred.
	byIdx                       []*qp
	work, tagWait, ready, fetch idxSet
	timed                       qpTimers
	touched, check              []*qp
	looping                     bool
	deferred                    []*qp
	ref                         *refSched // schedCheck: the scan it replaced, to compare

	// TLPs waiting for DMAOut, a FIFO per class: a DMA write passes reads
	// that wait for non-posted credits (a root complex that holds an active
	// get on a full access log withholds them), as the ordering rules
	// require, and no read passes a write.
	tlpQ *pcie.Outbox[pcie.Packet]
	// The NIC's own reads (work requests, payloads) among tlpQ's
	// non-posted TLPs: npOwn is, in order, whether each queued non-posted
	// TLP is one, ownReads how many are. The network side stops taking
	// frames when the TLPs it made back up, not when the send side's
	// fetches wait for the IOMMU: otherwise a NIC with many queues to
	// fetch for would stop reading ACKs, and every connection would wait
	// for its retransmission timer.
	npOwn    sim.Queue[bool]
	ownReads int
	ownIssue bool // the reads being issued are the NIC's own
	// respQPs are the QPs with ACKs or responses to send, in turn: a QP
	// sends one frame and goes to the back, so one QP's long READ response
	// never holds up another's ACK (each QP keeps its own in PSN order).
	// Responses go before requests.
	respQPs []*qp
	busy    sim.Tick // the packet processor is busy until then
	timers  []sim.Tick

	stFrames, stFramesIn, stRetrans, stNAKs, stWQEs, stCQEs, stDupes *sim.Counter
	stTLPs, stRNR                                                    *sim.Counter
	stTimeouts, stRetryExceeded, stFlushed                           *sim.Counter

	desc *descState // Spec.Descriptors: the rings' state (nil without)
	soft *softState // Spec.Software: the driver's queues (nil: RDMA offload)

	// Completion queues with events (cq.go), in creation order.
	cqs                  map[uint32]*cq
	cqOrder              []*cq
	stCQEvents, stCQArms *sim.Counter

	// The device memory and the host's accesses to the BAR waiting their
	// turn (sram.go).
	sram                      SRAM
	hostQ                     sim.Queue[pcie.Packet]
	accessEnd                 sim.Tick     // when the access at hostQ's head ends (0: not started)
	stSRAMReads, stSRAMWrites *sim.Counter // declared on the first access

	// OnReceive, if set, is told when a SEND completes a receive work
	// request of QP qpn (its last packet is in; the completion entry goes
	// out now): wrid is the receive's index. It lets a layer model work
	// the NIC does on arrival (a tag-matching unit) at that time; it must
	// not change the NIC.
	OnReceive func(qpn uint32, wrid uint64, at sim.Tick)

	// Bulk, if set, is the NIC's bulk DMA path (bulk.go), used for work
	// requests marked WQE.Bulk and the frames they make.
	Bulk   HostBulk
	stBulk *sim.Counter // declared on first use
}

type purposeKind uint8

const (
	fetchWQE purposeKind = iota
	readPayload
	serveRead
	serveAtomic
	fetchRWQE
	fetchDesc // an e1000 descriptor's read: its data is not used
)

type dmaPurpose struct {
	busy bool // its tag is in use
	kind purposeKind
	qp   *qp
	w    *wqeState
	rr   *readResp
	off  int
	txn  sim.Txn
}

// NewNIC places a NIC in clk. Connect its channels with the PCIe link and
// the wires before the run.
func NewNIC(clk *sim.Clock, name string, spec Spec) (*NIC, error) {
	if spec.PMTU == 0 {
		d := DefaultSpec()
		d.ID, d.Node, d.Index, d.BAR = spec.ID, spec.Node, spec.Index, spec.BAR
		spec = d
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	n := &NIC{spec: spec, name: name, qps: map[uint32]*qp{}, atomicsByTag: map[uint16]*atomicServe{},
		tlpQ: pcie.NewOutbox(pcie.PacketClass), sram: SRAM{size: spec.SRAMBytes}}
	n.u = clk.Add(name, n)
	if schedCheck {
		n.ref = &refSched{}
	}
	var err error
	if n.req, err = pcie.NewRequester(spec.ID, spec.TagBits); err != nil {
		return nil, err
	}
	n.tags = make([]dmaPurpose, 1<<spec.TagBits)
	st := n.u.Engine().Stats()
	c := func(s, unit, desc string) *sim.Counter { return st.Counter(name+"."+s, unit, desc) }
	n.stFrames = c("frames_out", "frames", "frames sent (requests, responses, ACKs, retransmissions)")
	n.stFramesIn = c("frames_in", "frames", "frames received")
	n.stRetrans = c("retransmissions", "packets", "request packets sent again (after a timeout, a NAK or an RNR NAK), each counted as it is sent")
	n.stNAKs = c("naks", "NAKs", "NAKs sent for PSN sequence errors")
	n.stDupes = c("duplicates", "packets", "duplicate request packets received (answered, not re-executed)")
	n.stWQEs = c("wqes", "work requests", "work requests fetched")
	n.stCQEs = c("cqes", "completions", "completion entries written")
	n.stTLPs = c("tlps", "TLPs", "TLPs sent to the host")
	n.stRNR = c("rnr_naks", "NAKs", "receiver-not-ready NAKs sent or received (SEND without a posted receive buffer)")
	n.stTimeouts = c("timeouts", "timeouts", "retransmission timer expiries: each sends a QP's unacknowledged packets again, or fails its oldest work request once retry_cnt retries are used")
	n.stRetryExceeded = c("retry_exceeded", "work requests", "work requests failed after their QP's retry_cnt or rnr_retry ran out (the QP enters the error state)")
	n.stFlushed = c("flushed", "work requests", "send and receive work requests completed with a flush error (their QP was in the error state)")
	n.newDescState()
	n.newSoftState()
	n.u.Probe("sq_pending", 16, func() (uint64, bool) { return uint64(n.pendingWQEs()), true })
	n.u.Probe("tlp_queue", 16, func() (uint64, bool) { return uint64(n.tlpQ.Len()), true })
	n.u.Probe("tags_outstanding", 11, func() (uint64, bool) { return uint64(n.req.Outstanding()), true })
	return n, nil
}

// Unit is the NIC's kernel unit.
func (n *NIC) Unit() *sim.Unit { return n.u }

// Spec is the NIC's configuration.
func (n *NIC) Spec() Spec { return n.spec }

// CreateQP creates a connected queue pair.
func (n *NIC) CreateQP(c QPConfig) error {
	if _, dup := n.qps[c.QPN]; dup || c.QPN == 0 || c.QPN >= MaxQPN {
		return fmt.Errorf("%s: QPN %d is taken or invalid (1..%d: the doorbell pages hold that many)", n.name, c.QPN, MaxQPN-1)
	}
	if c.SQSize < 1 || c.CQSize < 1 {
		return fmt.Errorf("%s: QP %d needs a send and a completion queue", n.name, c.QPN)
	}
	q := &qp{cfg: qpID{QPN: c.QPN, RemoteQPN: c.RemoteQPN, RemoteNode: c.RemoteNode, RemoteNIC: c.RemoteNIC}, n: n, qpHost: &qpHost{rings: c}, idx: n.created, retryCnt: DefaultRetryCnt, rnrRetry: DefaultRNRRetry}
	n.created++
	n.addQP(q)
	n.qps[c.QPN] = q
	n.order = append(n.order, c.QPN)
	psnProbe := func(f func() uint32) func() (uint64, bool) { return func() (uint64, bool) { return uint64(f()), true } }
	n.u.Probe(fmt.Sprintf("qp%d.next_psn", c.QPN), 24, psnProbe(func() uint32 { return q.nextPSN }))
	n.u.Probe(fmt.Sprintf("qp%d.acked_psn", c.QPN), 24, psnProbe(func() uint32 { return q.ackedPSN }))
	n.u.Probe(fmt.Sprintf("qp%d.expected_psn", c.QPN), 24, psnProbe(func() uint32 { return q.expPSN }))
	return nil
}

func (n *NIC) pendingWQEs() int {
	t := 0
	for _, k := range n.order {
		t += len(n.qps[k].wqes)
	}
	for _, q := range n.peerList {
		t += len(q.wqes)
	}
	return t
}

func (n *NIC) endpoint(node, nic int) roce.Endpoint {
	if node == n.spec.Node && nic == n.spec.Index {
		// Its own, on every frame it sends: made once, its addresses
		// shared by the frames (nothing writes into a frame's).
		if n.self.MAC == nil || n.selfOf != [2]int{node, nic} {
			n.self, n.selfOf = roce.NodeEndpoint(node, nic), [2]int{node, nic}
		}
		return n.self
	}
	return roce.NodeEndpoint(node, nic)
}

// sendTLP queues a TLP for the host.
func (n *NIC) sendTLP(t tlp.TLP, tx sim.Txn) {
	if t.Kind.Class() == tlp.NonPosted {
		n.npOwn.Push(n.ownIssue)
		if n.ownIssue {
			n.ownReads++
		}
	}
	n.tlpQ.Push(pcie.Packet{Txn: tx, TLP: t})
	n.stTLPs.Inc()
}

// drainTLPs sends what the link takes and forgets the origins of the
// non-posted TLPs that left (each class leaves in order).
func (n *NIC) drainTLPs() {
	before := n.tlpQ.ClassLen(tlp.NonPosted)
	n.tlpQ.Drain(n.DMAOut)
	for gone := before - n.tlpQ.ClassLen(tlp.NonPosted); gone > 0; gone-- {
		if n.npOwn.Pop() {
			n.ownReads--
		}
	}
}

// rxBacklog is the TLPs the network side and the host's accesses made that
// wait for the link: the NIC takes frames while it is below QueueTLPs.
func (n *NIC) rxBacklog() int { return n.tlpQ.Len() - n.ownReads }

// dmaReadPart issues the reads of [from, size) of the size bytes at addr,
// split at MRRS, for purpose p, as far as free tags allow: it returns how
// far they now reach (size once all are issued). A buffer larger than every
// tag can cover at once is read in turns, as tags come back.
func (n *NIC) dmaReadPart(addr uint64, from, size int, p dmaPurpose) int {
	free := max(n.req.Tags()-n.req.Outstanding(), 0)
	n.chunks = readPart(n.spec.Sizes, addr, from, size, free, n.chunks[:0])
	return n.issueReads(n.chunks, from, p)
}

// readPart is the first free MRd pieces of [from, size) of the size bytes
// at addr. It segments no more than free pieces can cover (free × MRRS
// bytes): segmenting the whole rest of a long buffer on every call made a
// work request's reads quadratic in its length.
func readPart(s pcie.Sizes, addr uint64, from, size, free int, out []pcie.Chunk) []pcie.Chunk {
	chunks := s.AppendReadChunks(out, addr+uint64(from), min(size-from, free*s.MRRS))
	return chunks[:min(len(chunks), free)]
}

// dmaRead issues reads of n bytes at addr, split at MRRS, for purpose p.
// It returns false when tags ran out (the caller retries later).
func (n *NIC) dmaRead(addr uint64, size int, p dmaPurpose) bool {
	n.chunks = n.spec.Sizes.AppendReadChunks(n.chunks[:0], addr, size)
	if n.req.Tags()-n.req.Outstanding() < len(n.chunks) {
		return false
	}
	n.issueReads(n.chunks, 0, p)
	return true
}

// issueReads sends an MRd for each chunk, the first at offset off of
// purpose p's buffer, and returns the offset past the last.
func (n *NIC) issueReads(chunks []pcie.Chunk, off int, p dmaPurpose) int {
	n.ownIssue = p.kind == fetchWQE || p.kind == readPayload
	defer func() { n.ownIssue = false }()
	for _, c := range chunks {
		t, _ := n.req.Issue(c.Addr, c.N)
		pp := p
		pp.off = p.off + off
		pp.txn = n.u.Engine().NewTxn(p.txn.ID, "tlp.MRd", n.name)
		n.setTag(t.Tag, pp)
		n.sendTLP(t, pp.txn)
		off += c.N
	}
	return off
}

// dmaWrite writes data at addr, split into MWr TLPs.
func (n *NIC) dmaWrite(addr uint64, data []byte, cause sim.TxnID) {
	e := n.u.Engine()
	n.writes = n.spec.Sizes.AppendSegmentWrite(n.writes[:0], n.spec.ID, addr, data)
	for _, w := range n.writes {
		n.sendTLP(w, e.NewTxn(cause, "tlp.MWr", n.name))
	}
	clear(n.writes) // the queued TLPs hold their payloads, not this slice
}

func (n *NIC) send(q *qp, f Frame) {
	if n.soft != nil {
		// Without offload the driver transmits what the responder makes.
		n.soft.tx.Push(heldFrame{q: q, f: f})
		n.softWork(n.u.Engine().Now())
		return
	}
	n.queueResp(q, f)
}

// queueResp puts a response or ACK on q's list for the wire.
func (n *NIC) queueResp(q *qp, f Frame) {
	if len(q.resp) == 0 {
		n.respQPs = append(n.respQPs, q)
	}
	if q.resp == nil {
		q.resp = n.spareResp.get()
	}
	q.resp = n.spareResp.push(q.resp, f)
}

// srcPort is the UDP source port of a QP's frames: flow entropy.
func srcPort(qpn uint32) uint16 { return uint16(0xc000 | qpn&0x3fff) }

func (n *NIC) frame(q *qp, p roce.Packet, cause sim.TxnID, kind string) Frame {
	return n.frameWith(q, p, n.u.Engine().NewTxn(cause, kind, n.name))
}

// frameWith is frame with its transaction given.
func (n *NIC) frameWith(q *qp, p roce.Packet, txn sim.Txn) Frame {
	p.PKey = 0xffff
	p.DestQP = q.cfg.RemoteQPN
	return Frame{Txn: txn, SrcNode: n.spec.Node, DstNode: q.cfg.RemoteNode,
		Frame: roce.Frame{Src: n.endpoint(n.spec.Node, n.spec.Index), Dst: n.endpoint(q.cfg.RemoteNode, q.cfg.RemoteNIC),
			SrcPort: srcPort(q.cfg.QPN), Packet: p}}
}

// Tick is one edge of the NIC.
func (n *NIC) Tick(now sim.Tick) bool {
	// QPs whose timer is due have work.
	if n.ref != nil {
		n.ref.tickStart(now)
	}
	n.dueTimers(now)
	// Host side: completions of our reads, doorbells, and the host's
	// accesses to the device memory.
	for n.DMAIn.Valid() {
		p := n.DMAIn.Recv()
		n.fromHost(&p, now)
	}
	if n.hostQ.Len() > 0 {
		n.hostAccesses(now)
	}
	// TLPs to the host, in order but for writes passing waiting reads.
	n.drainTLPs()

	// Network side: one frame per processing slot, only while the host side
	// keeps up (a stalled IOMMU stops the NIC, the NIC stops the wire).
	if n.busy <= now && n.NetIn.Valid() && n.rxBacklog() < n.spec.QueueTLPs && n.softRoom() {
		f := n.NetIn.Recv()
		n.stFramesIn.Inc()
		n.busy = now + n.spec.ProcessPS
		if n.soft != nil {
			n.soft.rx.Push(f) // for the driver: the protocol runs when it hands the frame on
			n.softWork(now)
		} else {
			n.fromNet(&f, now)
		}
		if n.desc != nil {
			n.rxPacket(&f)
		}
	}
	if n.soft != nil {
		n.softIRQ(now)
	}
	if n.desc != nil && len(n.desc.waiting) > 0 {
		n.descFetches(0)
	}
	n.progressAll(now)
	n.cqTimers(now)
	n.refreshTouched()
	// Frames out: responses and ACKs first, then requests, one per slot.
	if n.NetOut.Ready() {
		if len(n.respQPs) > 0 {
			q := n.respQPs[0]
			if n.desc != nil {
				n.txPacket(&q.resp[0])
			}
			n.NetOut.Send(q.resp[0])
			q.resp = slices.Delete(q.resp, 0, 1)
			n.respQPs = slices.Delete(n.respQPs, 0, 1)
			if len(q.resp) > 0 {
				n.respQPs = append(n.respQPs, q)
			} else {
				n.spareResp.put(q.resp)
				q.resp = nil
			}
			n.stFrames.Inc()
		} else if q := n.nextRequester(); q != nil {
			f, _ := q.nextRequest(now)
			if n.desc != nil {
				n.txPacket(&f)
			}
			n.NetOut.Send(f)
			n.stFrames.Inc()
			n.refresh(q)
		}
	}
	return n.schedule(now)
}

// fromHost handles a TLP from the host: a completion of the NIC's reads,
// or a request to its BAR (a doorbell, an access to the device memory).
func (n *NIC) fromHost(p *pcie.Packet, now sim.Tick) {
	t := &p.TLP
	if t.Kind == tlp.MWr || t.Kind == tlp.MRd {
		n.fromHostBAR(p, now)
		return
	}
	if !t.Kind.IsCompletion() {
		return
	}
	n.fromCompletion(p, now)
}

// doorbell rings the doorbell a host write to the BAR's first megabyte is.
func (n *NIC) doorbell(p *pcie.Packet, now sim.Tick) {
	t := &p.TLP
	// Doorbells: BAR + 8 × QPN for the send queue, BAR + RQDoorbells +
	// 8 × QPN for the receive queue; 8 bytes of new producer index.
	// BAR + CQDoorbells + 8 × CQN arms a completion queue.
	off := t.Addr + uint64(t.FirstByteOffset()) - n.spec.BAR
	if off >= CQDoorbells {
		if len(t.Data) >= 8 {
			n.arm(uint32((off-CQDoorbells)/8), binary.LittleEndian.Uint64(t.Data[t.FirstByteOffset():]), p.ID, now)
		}
		return
	}
	rq := off >= RQDoorbells
	if rq {
		off -= RQDoorbells
	}
	q := n.qps[uint32(off/8)]
	if q == nil || len(t.Data) < 8 {
		return // a doorbell for no QP: ignored, as hardware drops it
	}
	v := binary.LittleEndian.Uint64(t.Data[t.FirstByteOffset():])
	n.activate(q)
	if rq {
		q.rqTail = v
		return
	}
	q.sqTail = v
	q.ring(q.sqTail, p.Txn)
}

// setTag records what the read with tag is for.
func (n *NIC) setTag(tag uint16, p dmaPurpose) {
	p.busy = true
	n.tags[tag] = p
}

// tag is what the read with tag is for: false if no read has it.
func (n *NIC) tag(tag uint16) (dmaPurpose, bool) {
	if int(tag) >= len(n.tags) {
		return dmaPurpose{}, false
	}
	p := n.tags[tag]
	return p, p.busy
}

// fromCompletion takes a completion of one of the NIC's DMA reads.
func (n *NIC) fromCompletion(p *pcie.Packet, now sim.Tick) {
	t := &p.TLP
	purpose, ok := n.tag(t.Tag)
	done, data, err := n.req.Complete(t)
	if !ok || (err != nil && !done) {
		return // unexpected completion: dropped
	}
	if purpose.qp != nil {
		n.activate(purpose.qp)
	}
	if purpose.kind == serveAtomic {
		n.tags[t.Tag] = dmaPurpose{}
		n.atomicDone(purpose, t, err, now) // reads the completion, not data
		n.req.Recycle(data)
		return
	}
	if !done {
		return
	}
	n.tags[t.Tag] = dmaPurpose{}
	switch purpose.kind {
	case fetchWQE:
		purpose.qp.wqeFetched(data, err, purpose.txn, now)
	case readPayload:
		purpose.w.payloadArrived(purpose.off, data, err)
	case fetchRWQE:
		purpose.qp.rwqeFetched(data, err)
	case serveRead:
		purpose.rr.arrived(purpose.off, data, err)
	}
	// Each of them parsed or copied the data: its buffer serves the next
	// read (TestRecycledReadBuffersPoisoned).
	n.req.Recycle(data)
}
