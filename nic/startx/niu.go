package startx

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// NIU is the StarT-X network interface as a cycle-level block: a PCIe
// endpoint whose BAR holds a transmit and a receive FIFO per priority,
// status registers, and the RDMA engine's command registers (rdma.go).
//
// The host's accesses are served one at a time, in the order they arrive,
// each taking Spec.AccessPS. A store into a transmit window appends its
// words to the message being assembled; the store that completes it pushes
// it into the transmit FIFO, or, when that FIFO is full, waits — and with
// it every access behind it, so the link's credits stop and the core's
// write buffer fills: nothing is lost. A load from a receive window reads
// the head message (a FIFO with none reads as zero) and the load that
// reaches its last byte pops it.
type NIU struct {
	u    *sim.Unit
	spec Spec
	name string

	In     *sim.Chan[pcie.Packet] // from the root complex: the host's stores and loads, completions of the NIU's reads
	Out    *sim.Chan[pcie.Packet] // to the root complex: completions of the host's loads, the NIU's DMA
	NetOut [2]*sim.Chan[Packet]   // to the Arctic line, by priority
	NetIn  [2]*sim.Chan[Packet]   // the receive FIFOs, by priority: the ends of the line from the peer

	tx        [2]sim.Queue[Packet] // the transmit FIFOs
	asm       [2]assembler         // the message each transmit window is assembling
	hostQ     sim.Queue[pcie.Packet]
	accessEnd sim.Tick // when the access at hostQ's head ends (0: not started)
	tlpQ      *pcie.Outbox[pcie.Packet]
	req       *pcie.Requester
	refused   []error // the host accesses the NIU refused, in order (Errors)
	rdma      rdmaEngine

	stSent, stRecv, stRefused, stTxFull, stRDMABytesOut, stRDMABytesIn *sim.Counter
}

// assembler collects the words of a message stored into a transmit window.
type assembler struct {
	words   []uint32
	want    int  // words the message has (0: none begun)
	discard bool // the message was refused: drop stores until one at offset 0
}

// maxRefusals bounds the refusals the NIU keeps the text of (it counts all).
const maxRefusals = 64

// New places an NIU in clock clk. The machine connects In, Out, NetOut and
// NetIn.
func New(clk *sim.Clock, name string, spec Spec) (*NIU, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	n := &NIU{spec: spec, name: name, tlpQ: pcie.NewOutbox(pcie.PacketClass)}
	n.u = clk.Add(name, n)
	var err error
	if n.req, err = pcie.NewRequester(spec.ID, 8); err != nil {
		return nil, err
	}
	n.rdma.init(spec)
	st := n.u.Engine().Stats()
	n.stSent = st.Counter(name+".pio_sent", "messages", "PIO messages the NIU put on the line")
	n.stRecv = st.Counter(name+".pio_received", "messages", "PIO messages the host popped from a receive FIFO")
	n.stRefused = st.Counter(name+".refused", "accesses", "host stores the NIU refused (malformed messages, bad commands) and RDMA packets it dropped")
	n.stTxFull = st.Counter(name+".tx_full_stalls", "edges", "edges at which a message waited for room in a full transmit FIFO")
	n.stRDMABytesOut = st.Counter(name+".rdma_bytes_sent", "bytes", "RDMA data the NIU put on the line")
	n.stRDMABytesIn = st.Counter(name+".rdma_bytes_received", "bytes", "RDMA data the NIU wrote into host memory")
	return n, nil
}

// Unit is the NIU's unit of the simulation.
func (n *NIU) Unit() *sim.Unit { return n.u }

// Spec is the NIU's configuration.
func (n *NIU) Spec() Spec { return n.spec }

// TXAddr is where the transmit window of priority p starts.
func (n *NIU) TXAddr(p Priority) uint64 { return n.spec.TXAddr(p) }

// RXAddr is where the receive window of priority p starts.
func (n *NIU) RXAddr(p Priority) uint64 { return n.spec.RXAddr(p) }

// Errors is what the NIU refused so far, in order (the first maxRefusals);
// Refused counts them all.
func (n *NIU) Errors() []error { return n.refused }

// Refused is the number of refused accesses and dropped RDMA packets.
func (n *NIU) Refused() uint64 { return n.stRefused.Value() }

// TXLen is the messages waiting in the transmit FIFO of priority p.
func (n *NIU) TXLen(p Priority) int { return n.tx[p].Len() }

func (n *NIU) refuse(err error) {
	n.stRefused.Inc()
	if len(n.refused) < maxRefusals {
		n.refused = append(n.refused, fmt.Errorf("%s: %w", n.name, err))
	}
}

// Tick is one edge of the NIU.
func (n *NIU) Tick(now sim.Tick) bool {
	progress := false
	// From the host: completions of the NIU's reads at once; the host's
	// accesses join hostQ, which serves them in order.
	for n.In.ValidLane(int(tlp.Completion)) {
		p := n.In.RecvLane(int(tlp.Completion))
		n.rdma.completion(n, &p, now)
		progress = true
	}
	for n.hostQ.Len() < 4 {
		l := n.In.OldestLane()
		if l < 0 || l == int(tlp.Completion) {
			break
		}
		n.hostQ.Push(n.In.RecvLane(l))
		progress = true
	}
	if n.hostAccesses(now) {
		progress = true
	}
	// To the line: a transmit FIFO's head when the line takes it.
	for p := High; p <= Low; p++ {
		if n.tx[p].Len() > 0 && n.NetOut[p].Ready() {
			n.NetOut[p].Send(n.tx[p].Pop())
			n.stSent.Inc()
			progress = true
		}
	}
	if n.rdma.tick(n, now) {
		progress = true
	}
	// TLPs that left make room the RDMA engine may be waiting for: go on.
	if n.tlpQ.Drain(n.Out) > 0 {
		progress = true
	}
	if n.accessEnd > now {
		n.u.WakeAt(n.accessEnd)
	}
	return progress
}

// hostAccesses serves the host's accesses in order, each taking AccessPS;
// it reports whether it finished one.
func (n *NIU) hostAccesses(now sim.Tick) bool {
	done := false
	for n.hostQ.Len() > 0 {
		p := n.hostQ.Front()
		if n.accessEnd == 0 {
			n.accessEnd = now + n.spec.AccessPS
		}
		if n.accessEnd > now {
			return done
		}
		t := &p.TLP
		off := t.Addr - n.spec.BAR
		if t.Kind == tlp.MWr {
			if !n.store(off, t, now) {
				n.stTxFull.Inc()
				return done // a full transmit FIFO: retried when the line takes a message
			}
		} else if t.Kind == tlp.MRd {
			n.load(p, off)
		} else {
			n.refuse(fmt.Errorf("host %v at BAR offset %#x: the NIU takes memory reads and writes only", t.Kind, off))
			if t.Kind.Class() == tlp.NonPosted {
				n.tlpQ.Push(pcie.Packet{Txn: n.u.Engine().NewTxn(p.ID, "tlp.Cpl", n.name), TLP: pcie.ErrorCompletion(t, n.spec.ID, tlp.UR)})
			}
		}
		n.accessEnd = 0
		n.hostQ.Pop()
		done = true
	}
	return done
}

// store performs a host store at BAR offset off; false when it must wait
// for room in a transmit FIFO.
func (n *NIU) store(off uint64, t *tlp.TLP, now sim.Tick) bool {
	fb := t.FirstByteOffset()
	data := t.Data[fb : fb+t.EnabledBytes()]
	a := off + uint64(fb)
	switch {
	case a < rxWindow:
		return n.txStore(Priority(a/0x100), a%0x100, data)
	case a >= RDMASendOffset && a < BARSize:
		n.rdma.store(n, a, data, now)
	default:
		n.refuse(fmt.Errorf("store of %d bytes at BAR offset %#x: not a transmit window or command register", len(data), a))
	}
	return true
}

// txStore appends a store's words to priority p's message; false when the
// store completes a message and the transmit FIFO is full.
func (n *NIU) txStore(p Priority, off uint64, data []byte) bool {
	as := &n.asm[p]
	if off%4 != 0 || len(data)%4 != 0 {
		n.refuse(fmt.Errorf("%s transmit store of %d bytes at offset %#x: want whole 32-bit words", p, len(data), off))
		as.discard = true
		return true
	}
	// The message this store begins or continues: checked whole before
	// anything changes, so that a store waiting for room is retried as
	// it came.
	want, have := as.want, len(as.words)
	if off == 0 {
		h0 := binary.LittleEndian.Uint32(data)
		if err := CheckLength(PayloadWords(h0)); err != nil {
			n.abandoned(p, as)
			n.refuse(fmt.Errorf("%s transmit: %w; message refused", p, err))
			*as = assembler{discard: true, words: as.words[:0]}
			return true
		}
		want, have = HeaderWords+PayloadWords(h0), 0
	} else if as.discard {
		return true
	} else if want == 0 || off != uint64(4*have) {
		n.refuse(fmt.Errorf("%s transmit store at offset %#x: the message's next word is at %#x", p, off, 4*have))
		*as = assembler{discard: true, words: as.words[:0]}
		return true
	}
	words := len(data) / 4
	if have+words > want {
		n.refuse(fmt.Errorf("%s transmit: stores of %d words past a message of %d", p, have+words, want))
		*as = assembler{discard: true, words: as.words[:0]}
		return true
	}
	if have+words == want && n.tx[p].Len() >= n.spec.TXDepth {
		return false
	}
	if off == 0 {
		n.abandoned(p, as)
		*as = assembler{want: want, words: as.words[:0]}
	}
	for i := 0; i < words; i++ {
		as.words = append(as.words, binary.LittleEndian.Uint32(data[4*i:]))
	}
	if len(as.words) == as.want {
		m := Packet{Txn: n.u.Engine().NewTxn(0, "startx.pio", n.name), Src: n.spec.Node, Dst: Node(as.words[0]), Pri: p,
			Words: append([]uint32(nil), as.words...)}
		n.tx[p].Push(m)
		*as = assembler{words: as.words[:0]}
	}
	return true
}

// abandoned refuses the message as was assembling if a new one begins
// before it is complete.
func (n *NIU) abandoned(p Priority, as *assembler) {
	if as.want > 0 && !as.discard {
		n.refuse(fmt.Errorf("%s transmit: message abandoned after %d of its %d words", p, len(as.words), as.want))
	}
}

// load answers a host load at BAR offset off.
func (n *NIU) load(p *pcie.Packet, off uint64) {
	t := &p.TLP
	var pop *Priority
	read := func(a uint64, k int) []byte {
		b := make([]byte, k)
		o := a - n.spec.BAR
		switch {
		case o >= rxWindow && o < StatusOffset:
			pri := Priority((o - rxWindow) / 0x100)
			if m := n.NetIn[pri].Peek(); m != nil && !m.RDMA {
				msg := m.rxBytes()
				if w := o - rxWindow - 0x100*uint64(pri); w < uint64(len(msg)) {
					copy(b, msg[w:])
				}
				if end := off + uint64(t.FirstByteOffset()+t.EnabledBytes()) - rxWindow - 0x100*uint64(pri); end >= uint64(len(msg)) {
					pop = &pri
				}
			}
		case o >= StatusOffset && o < StatusOffset+20:
			var r [20]byte
			binary.LittleEndian.PutUint32(r[0:], uint32(n.spec.TXDepth-n.tx[High].Len()))
			binary.LittleEndian.PutUint32(r[4:], uint32(n.spec.TXDepth-n.tx[Low].Len()))
			binary.LittleEndian.PutUint32(r[8:], uint32(n.NetIn[High].Len()))
			binary.LittleEndian.PutUint32(r[12:], uint32(n.NetIn[Low].Len()))
			binary.LittleEndian.PutUint32(r[16:], uint32(n.stRefused.Value()))
			copy(b, r[o-StatusOffset:])
		}
		return b
	}
	for _, c := range n.spec.Sizes.SplitCompletions(t, n.spec.ID, read) {
		n.tlpQ.Push(pcie.Packet{Txn: n.u.Engine().NewTxn(p.ID, "tlp.CplD", n.name), TLP: c})
	}
	if pop != nil {
		n.NetIn[*pop].Recv()
		n.stRecv.Inc()
	}
}

// LineTrace is the NIU's state on one line: its transmit FIFOs, the
// message each window is assembling, the host accesses waiting, the TLPs
// waiting for the link up, the receive FIFOs and the RDMA engine.
func (n *NIU) LineTrace() string {
	r := &n.rdma
	head := "-"
	if n.hostQ.Len() > 0 {
		t := &n.hostQ.Front().TLP
		head = fmt.Sprintf("%v@%#x", t.Kind, t.Addr-n.spec.BAR)
	}
	return fmt.Sprintf("%s: tx %d/%d asm %d/%d,%d/%d host %d (%s) tlps %d [P%d N%d C%d] rx %d/%d in [P%d N%d C%d] rdma cmds %d reads %d out %d done %d armed %v src %d got %d/%d",
		n.name, n.tx[High].Len(), n.tx[Low].Len(), len(n.asm[High].words), n.asm[High].want, len(n.asm[Low].words), n.asm[Low].want,
		n.hostQ.Len(), head, n.tlpQ.Len(), n.tlpQ.ClassLen(tlp.Posted), n.tlpQ.ClassLen(tlp.NonPosted), n.tlpQ.ClassLen(tlp.Completion),
		n.NetIn[High].Len(), n.NetIn[Low].Len(), n.In.LaneLen(0), n.In.LaneLen(1), n.In.LaneLen(2),
		r.cmds.Len(), r.reads.Len(), r.out.Len(), r.doneBytes, r.armed, r.src, r.got, r.size)
}
