package monitor

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// RC monitors reliable connections on the wires between NICs (directly
// wired NICs: each frame is seen once, when it is sent, and it is delivered
// unless lost) together with the TLPs the responders send their hosts:
//
//   - a requester sends new requests with consecutive PSNs (a READ reserves
//     one per PMTU of its length) and retransmits a PSN only as it first
//     sent it;
//   - a responder acknowledges only PSNs it received in order, its MSN
//     never goes back, a repeated atomic is answered with the first result,
//     and read responses use the PSNs their READ reserved;
//   - each write, send and atomic executes exactly once: the TLPs a request
//     frame causes at the responder (matched by the causal transaction ID)
//     come from one frame per PSN only, every acknowledged one executed, and
//     a write's TLPs carry all of its bytes.
//
// Requests and their connection are told apart by the UDP source port,
// which carries the sending QP (0xC000 | QPN, 14 bits) in aaemu's frames.
type RC struct {
	log    *Log
	pmtu   int
	conns  map[connKey]*conn
	frames map[sim.TxnID]*reqFrame // delivered request frames, for the TLPs they cause
}

type connKey struct {
	req, resp     string // IP addresses
	reqQP, respQP uint32
}

func (k connKey) String() string {
	return fmt.Sprintf("QP %d of %v → QP %d of %v", k.reqQP, []byte(k.req), k.respQP, []byte(k.resp))
}

type conn struct {
	key     connKey
	started bool
	next    uint32              // the requester's next new PSN
	orig    map[uint32]sentReq  // requests sent and not yet acknowledged, by PSN
	exp     uint32              // the responder's expected PSN, as the monitor follows it
	reads   map[uint32]readSpan // READs the responder took, by first PSN
	acked   uint32              // highest PSN acknowledged
	anyAck  bool
	msn     uint32
	atomics map[uint32]uint64 // first atomic result answered, by PSN
	exec    map[uint32]*execution
}

type sentReq struct {
	op      uint8
	va      uint64
	dmaLen  uint32
	payload []byte
	atomic  [2]uint64
}

type readSpan struct{ count uint32 }

type reqFrame struct {
	c     *conn
	psn   uint32
	op    uint8
	n     int // payload bytes
	fresh bool
	at    sim.Tick
}

type execution struct {
	frame sim.TxnID
	bytes int
	tlps  int
	again bool // reported as executed again
}

// NewRC returns an RC monitor for NICs with path MTU pmtu.
func NewRC(log *Log, pmtu int) *RC {
	return &RC{log: log, pmtu: pmtu, conns: map[connKey]*conn{}, frames: map[sim.TxnID]*reqFrame{}}
}

func psnLess(a, b uint32) bool { d := (b - a) & 0xffffff; return d != 0 && d < 1<<23 }

func isRequest(op uint8) bool {
	switch op {
	case roce.Ack, roce.AtomicAck, roce.ReadRespFirst, roce.ReadRespMiddle, roce.ReadRespLast, roce.ReadRespOnly:
		return false
	}
	return true
}

func isWrite(op uint8) bool {
	return op == roce.WriteFirst || op == roce.WriteMiddle || op == roce.WriteLast || op == roce.WriteOnly
}

func executes(op uint8) bool {
	return op != roce.ReadRequest // writes, sends and atomics change the responder's memory
}

func (m *RC) conn(k connKey) *conn {
	c := m.conns[k]
	if c == nil {
		c = &conn{key: k, orig: map[uint32]sentReq{}, reads: map[uint32]readSpan{}, atomics: map[uint32]uint64{}, exec: map[uint32]*execution{}}
		m.conns[k] = c
	}
	return c
}

// span is the PSNs a request uses.
func (m *RC) span(p *roce.Packet) uint32 {
	if p.Opcode == roce.ReadRequest && m.pmtu > 0 {
		return max(uint32((int(p.RETH.DMALen)+m.pmtu-1)/m.pmtu), 1)
	}
	return 1
}

// Frame is a frame sent on wire link at time at, on a wire that delivers
// in order: lost frames never arrive, the others arrive in the order sent.
func (m *RC) Frame(link string, at sim.Tick, id sim.TxnID, f *roce.Frame, lost bool) {
	m.Sent(link, at, id, f)
	if !lost {
		m.Arrived(at, id, f)
	}
}

// Sent is a frame put on wire link at time at. On a wire that may reorder
// or duplicate, Arrived tells when each copy reaches the receiver.
func (m *RC) Sent(link string, at sim.Tick, id sim.TxnID, f *roce.Frame) {
	p := &f.Packet
	if isRequest(p.Opcode) {
		m.sent(link, at, id, m.reqConn(f), p)
		return
	}
	c := m.conn(connKey{req: string(f.Dst.IP), reqQP: p.DestQP, resp: string(f.Src.IP), respQP: uint32(f.SrcPort & 0x3fff)})
	m.response(link, at, id, c, p)
}

// Arrived is a frame delivered to the receiver at time at.
func (m *RC) Arrived(at sim.Tick, id sim.TxnID, f *roce.Frame) {
	if p := &f.Packet; isRequest(p.Opcode) {
		m.delivered(at, id, m.reqConn(f), p)
	}
}

func (m *RC) reqConn(f *roce.Frame) *conn {
	return m.conn(connKey{req: string(f.Src.IP), reqQP: uint32(f.SrcPort & 0x3fff), resp: string(f.Dst.IP), respQP: f.Packet.DestQP})
}

func (m *RC) sent(link string, at sim.Tick, id sim.TxnID, c *conn, p *roce.Packet) {
	if !c.started {
		c.started, c.next, c.exp = true, p.PSN, p.PSN
	}
	s := sentReq{op: p.Opcode, va: p.RETH.VA, dmaLen: p.RETH.DMALen, payload: slices.Clone(p.Payload),
		atomic: [2]uint64{p.AtomicETH.SwapAdd, p.AtomicETH.Compare}}
	if p.Opcode == roce.CmpSwap || p.Opcode == roce.FetchAdd {
		s.va = p.AtomicETH.VA
	}
	switch {
	case p.PSN == c.next:
		c.orig[p.PSN] = s
		c.next = (c.next + m.span(p)) & 0xffffff
	case psnLess(p.PSN, c.next):
		if o, ok := c.orig[p.PSN]; ok && (o.op != s.op || o.va != s.va || o.dmaLen != s.dmaLen || o.atomic != s.atomic || !bytes.Equal(o.payload, s.payload)) {
			m.log.reportf(link, at, id, "RC retransmission", "%v: PSN %d sent again as %s of %d bytes, first sent as %s of %d bytes (a PSN not advanced, or a resend that is not the original)",
				c.key, p.PSN, roce.OpName(s.op), len(s.payload), roce.OpName(o.op), len(o.payload))
		}
	default:
		m.log.reportf(link, at, id, "RC PSN sequence", "%v: %s with PSN %d, but the next new PSN is %d (PSNs skipped)", c.key, roce.OpName(p.Opcode), p.PSN, c.next)
		c.orig[p.PSN] = s
		c.next = (p.PSN + m.span(p)) & 0xffffff
	}
}

func (m *RC) delivered(at sim.Tick, id sim.TxnID, c *conn, p *roce.Packet) {
	fr := &reqFrame{c: c, psn: p.PSN, op: p.Opcode, n: len(p.Payload), at: at}
	if p.PSN == c.exp {
		fr.fresh = true
		if p.Opcode == roce.ReadRequest {
			c.reads[p.PSN] = readSpan{count: m.span(p)}
		}
		c.exp = (c.exp + m.span(p)) & 0xffffff
	}
	// A go-back-N retransmission is the frame sent again, with its
	// transaction ID: it keeps the first delivery's entry.
	if old := m.frames[id]; executes(p.Opcode) && (old == nil || !old.fresh) {
		m.frames[id] = fr
	}
}

func (m *RC) response(link string, at sim.Tick, id sim.TxnID, c *conn, p *roce.Packet) {
	if !c.started {
		m.log.reportf(link, at, id, "RC response", "%v: %s with PSN %d before any request", c.key, roce.OpName(p.Opcode), p.PSN)
		return
	}
	hasAETH := p.Opcode != roce.ReadRespMiddle
	if hasAETH && p.AETH.Syndrome>>5 == 0 {
		msn := p.AETH.MSN & 0xffffff
		if c.anyAck && psnLess(msn, c.msn) {
			m.log.reportf(link, at, id, "RC MSN", "%v: MSN %d after %d: the count of completed messages went back", c.key, msn, c.msn)
		}
		c.msn = msn
	}
	switch p.Opcode {
	case roce.Ack:
		switch syn := p.AETH.Syndrome; {
		case syn>>5 == 0:
			if !psnLess(p.PSN, c.exp) {
				m.log.reportf(link, at, id, "RC ACK", "%v: ACK of PSN %d, but the responder has received in order only up to PSN %d", c.key, p.PSN, (c.exp-1)&0xffffff)
			}
			m.ack(c, p.PSN)
		case syn == roce.SyndromeNAKSeq:
			if psnLess(c.exp, p.PSN) {
				m.log.reportf(link, at, id, "RC NAK", "%v: sequence NAK at PSN %d, past the PSN %d the responder expects", c.key, p.PSN, c.exp)
			}
			if p.PSN != 0 || c.anyAck {
				m.ack(c, (p.PSN-1)&0xffffff)
			}
		}
	case roce.AtomicAck:
		if v, ok := c.atomics[p.PSN]; ok && v != p.AtomicAckETH {
			m.log.reportf(link, at, id, "RC exactly-once", "%v: atomic PSN %d answered %#x, first answered %#x (executed twice)", c.key, p.PSN, p.AtomicAckETH, v)
		}
		c.atomics[p.PSN] = p.AtomicAckETH
		m.ack(c, p.PSN)
	default: // read responses
		ok := false
		for first, r := range c.reads {
			if d := (p.PSN - first) & 0xffffff; d < r.count {
				ok = true
				break
			}
		}
		if !ok {
			m.log.reportf(link, at, id, "RC read response", "%v: %s with PSN %d, which no READ the responder took reserved", c.key, roce.OpName(p.Opcode), p.PSN)
		}
	}
}

// ack notes that the responder acknowledged everything through psn.
func (m *RC) ack(c *conn, psn uint32) {
	if !c.anyAck || psnLess(c.acked, psn) {
		c.acked, c.anyAck = psn, true
	}
	for k := range c.orig {
		if !psnLess(c.acked, k) {
			delete(c.orig, k) // acknowledged: never resent
		}
	}
}

// TLP is a TLP that node's NIC sent its host with the causal IDs id and
// cause: if a request frame caused it, that frame executed its request.
func (m *RC) TLP(node int, at sim.Tick, id, cause sim.TxnID, t *tlp.TLP) {
	fr := m.frames[cause]
	if fr == nil {
		return
	}
	c := fr.c
	x := c.exec[fr.psn]
	if x == nil {
		x = &execution{frame: cause}
		c.exec[fr.psn] = x
	}
	if x.frame != cause {
		m.log.reportf(fmt.Sprintf("node%d", node), at, id, "RC exactly-once", "%v: %s PSN %d executed again by a repeated frame (txn %v; first executed by txn %v): %v",
			c.key, roce.OpName(fr.op), fr.psn, cause, x.frame, t)
		return
	}
	x.tlps++
	if t.Kind == tlp.MWr {
		x.bytes += t.EnabledBytes()
	}
	// The same frame delivered again (a retransmission keeps its ID) and
	// executed again shows as more than one execution's worth.
	switch {
	case x.again:
	case isWrite(fr.op) && x.bytes > fr.n:
		x.again = true
		m.log.reportf(fmt.Sprintf("node%d", node), at, id, "RC exactly-once", "%v: %s PSN %d wrote %d bytes for its %d: executed again by a repeated frame (txn %v): %v",
			c.key, roce.OpName(fr.op), fr.psn, x.bytes, fr.n, cause, t)
	case (fr.op == roce.CmpSwap || fr.op == roce.FetchAdd) && x.tlps > 1:
		x.again = true
		m.log.reportf(fmt.Sprintf("node%d", node), at, id, "RC exactly-once", "%v: %s PSN %d executed %d times (txn %v): %v",
			c.key, roce.OpName(fr.op), fr.psn, x.tlps, cause, t)
	}
}

// Finish checks, at a quiet end of the run, that every acknowledged write
// and atomic executed, and every write with all its bytes.
func (m *RC) Finish(at sim.Tick) {
	ids := make([]sim.TxnID, 0, len(m.frames))
	for id := range m.frames {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b sim.TxnID) int { return cmp.Compare(a, b) })
	for _, id := range ids {
		fr := m.frames[id]
		c := fr.c
		if !fr.fresh || !c.anyAck || psnLess(c.acked, fr.psn) || isWrite(fr.op) && fr.n == 0 {
			continue // not acknowledged, or nothing to execute
		}
		x := c.exec[fr.psn]
		switch {
		case x == nil:
			m.log.reportf("rc", at, id, "RC exactly-once", "%v: %s PSN %d (%d bytes) acknowledged but never executed", c.key, roce.OpName(fr.op), fr.psn, fr.n)
		case x.frame == id && isWrite(fr.op) && x.bytes != fr.n && !x.again:
			m.log.reportf("rc", at, id, "RC exactly-once", "%v: %s PSN %d wrote %d of its %d bytes", c.key, roce.OpName(fr.op), fr.psn, x.bytes, fr.n)
		}
	}
}
