package nic

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
	"github.com/gopacket/gopacket/pcapgo"
)

// capFrame is one frame of a capture, read back from the pcapng bytes.
type capFrame struct {
	at        sim.Tick // transmission start, to the nanosecond the file keeps
	f         roce.Frame
	id, cause uint64 // from the comment: the frame's transaction and its cause
	lost      bool
	src, dst  int // nodes, from the MAC addresses
}

func (c *capFrame) op() uint8 { return c.f.Packet.Opcode }

// srcQP is the sending QP: aaemu's UDP source port is 0xC000 | QPN.
func (c *capFrame) srcQP() uint32 { return uint32(c.f.SrcPort & 0x3fff) }

func isRequest(op uint8) bool {
	switch op {
	case roce.SendFirst, roce.SendMiddle, roce.SendLast, roce.SendOnly, roce.WriteFirst, roce.WriteMiddle,
		roce.WriteLast, roce.WriteOnly, roce.ReadRequest, roce.CmpSwap, roce.FetchAdd:
		return true
	}
	return false
}

func (c *capFrame) syndrome(want func(s uint8) bool) bool {
	return c.op() == roce.Ack && want(c.f.Packet.AETH.Syndrome)
}

func isSeqNAK(s uint8) bool { return s == roce.SyndromeNAKSeq }
func isRNRNAK(s uint8) bool { return s>>5 == 1 }

// readCapture parses every frame of a pcapng capture with the RoCE parser
// (which checks each ICRC).
func readCapture(t *testing.T, data []byte) []capFrame {
	t.Helper()
	r, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	var out []capFrame
	for {
		raw, ci, opts, err := r.ReadPacketDataWithOptions()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := roce.Parse(raw)
		if err != nil {
			t.Fatalf("frame %d: %v", len(out)+1, err)
		}
		c := capFrame{at: sim.Tick(ci.Timestamp.UnixNano()) * sim.NS, f: f, src: int(f.Src.MAC[3])<<8 | int(f.Src.MAC[4]), dst: int(f.Dst.MAC[3])<<8 | int(f.Dst.MAC[4])}
		if len(opts.Comments) != 1 {
			t.Fatalf("frame %d: comments %q", len(out)+1, opts.Comments)
		}
		if _, err := fmt.Sscanf(opts.Comments[0], "txn=%d cause=%d", &c.id, &c.cause); err != nil {
			t.Fatalf("frame %d: comment %q: %v", len(out)+1, opts.Comments[0], err)
		}
		c.lost = strings.HasSuffix(opts.Comments[0], " lost")
		out = append(out, c)
	}
}

// nicView is what the capture says each NIC counter of one node must be.
type nicView struct {
	FramesOut, FramesIn, Retransmissions, NAKs, RNRNAKs, Duplicates uint64
}

// flow is one direction of a connection: the requester's node and QPN.
type flow struct {
	node int
	qp   uint32
}

// captureView derives from the capture what every NIC counter that the
// capture can confirm must read at the end of a run (nodes 0..n-1):
//
//   - frames_out: frames whose source is the node, lost or not;
//   - frames_in: frames to the node that were not lost;
//   - retransmissions: per requester QP, every transmission of a request
//     PSN after its first;
//   - naks: sequence-error NAKs the node sent;
//   - rnr_naks: RNR NAKs the node sent, and those it received;
//   - duplicates: requests the node received whose PSN its responder had
//     already accepted. The responder is replayed from the capture: a
//     request is accepted when its PSN is the one expected, unless the
//     responder answered it with an RNR NAK; a READ accepts the PSNs of
//     all its responses. A NAK's cause names the request frame, and a
//     frame sent again keeps its transaction, so a frame that drew r RNR
//     NAKs (lost ones too) was refused the first r times it arrived with
//     the expected PSN.
//
// It also gives each requester QP's retransmissions.
func captureView(frames []capFrame, nodes, pmtu int) ([]nicView, map[flow]uint64) {
	v := make([]nicView, nodes)
	perQP := map[flow]uint64{}
	rnrFor := map[uint64]int{} // RNR NAKs each request frame drew
	for i := range frames {
		c := &frames[i]
		if c.syndrome(isRNRNAK) {
			rnrFor[c.cause]++
		}
	}
	sent := map[flow]map[uint32]int{}
	expected := map[flow]uint32{} // the responder's next PSN, keyed by the requester
	for i := range frames {
		c := &frames[i]
		v[c.src].FramesOut++
		if !c.lost {
			v[c.dst].FramesIn++
		}
		p := &c.f.Packet
		switch {
		case c.syndrome(isSeqNAK):
			v[c.src].NAKs++
		case c.syndrome(isRNRNAK):
			v[c.src].RNRNAKs++
			if !c.lost {
				v[c.dst].RNRNAKs++
			}
		}
		if !isRequest(p.Opcode) {
			continue
		}
		fl := flow{c.src, c.srcQP()}
		if sent[fl] == nil {
			sent[fl] = map[uint32]int{}
		}
		if sent[fl][p.PSN]++; sent[fl][p.PSN] > 1 {
			v[c.src].Retransmissions++
			perQP[fl]++
		}
		if c.lost {
			continue
		}
		switch psnCmp(p.PSN, expected[fl]) {
		case 0:
			if rnrFor[c.id] > 0 {
				rnrFor[c.id]--
				break
			}
			span := uint32(1)
			if p.Opcode == roce.ReadRequest {
				span = uint32(max((int(p.RETH.DMALen)+pmtu-1)/pmtu, 1))
			}
			expected[fl] = (p.PSN + span) & 0xffffff
		case -1:
			v[c.dst].Duplicates++
		}
	}
	return v, perQP
}

// frames reads the capture so far.
func (b *pairBench) frames() []capFrame {
	b.t.Helper()
	if err := b.cp.Flush(); err != nil {
		b.t.Fatal(err)
	}
	return readCapture(b.t, b.pcap.Bytes())
}

// nicCounters reads the same counters from the statistics.
func (b *pairBench) nicCounters(node int) nicView {
	name := b.nodes[node].n.name + "."
	return nicView{FramesOut: b.counter(name + "frames_out"), FramesIn: b.counter(name + "frames_in"),
		Retransmissions: b.counter(name + "retransmissions"), NAKs: b.counter(name + "naks"),
		RNRNAKs: b.counter(name + "rnr_naks"), Duplicates: b.counter(name + "duplicates")}
}

// checkAgainstCapture compares every counter the capture can confirm: the
// NICs' (captureView), each QP's retransmissions, and the wires' frames
// and losses.
// The run must be over: a frame still on a wire is in the capture and not
// yet in its receiver's counters.
func (b *pairBench) checkAgainstCapture() []capFrame {
	b.t.Helper()
	frames := b.frames()
	view, perQP := captureView(frames, len(b.nodes), b.nodes[0].n.spec.PMTU)
	for i, nd := range b.nodes {
		for _, k := range nd.n.order {
			if s, _ := nd.n.QPStatus(k); s.Retransmitted != perQP[flow{i, k}] {
				b.t.Errorf("node %d QP %d counts %d packets sent again; the capture shows %d", i, k, s.Retransmitted, perQP[flow{i, k}])
			}
		}
		if got := b.nicCounters(i); got != view[i] {
			b.t.Errorf("node %d: the NIC counts %+v,\n\tthe capture shows %+v", i, got, view[i])
		}
		var sent, lost uint64
		for _, c := range frames {
			if c.src == i {
				sent++
				if c.lost {
					lost++
				}
			}
		}
		w := b.wires[i]
		if f, l := w.Frames(), w.Lost(); f != sent || l != lost {
			b.t.Errorf("%s counts %d frames, %d lost; the capture shows %d, %d lost", w.u.Name(), f, l, sent, lost)
		}
	}
	return frames
}
