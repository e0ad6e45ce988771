package nic

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/sim"
)

// refFrames builds w's request frames as packetize built and kept them
// before packets held their frames' ingredients only: every field of the
// frame made at once, with the transactions txns.
func refFrames(q *qp, w *wqeState, txns []sim.Txn) []Frame {
	n := q.n
	var out []Frame
	psn := w.firstPSN
	add := func(p roce.Packet) {
		p.PSN = psn
		psn = (psn + 1) & 0xffffff
		f := n.frameWith(q, p, txns[len(out)])
		f.Bulk = w.w.Bulk && w.w.Opcode != OpSend
		if q.kind == srdPeer {
			f.Packet.DestQP, f.SrcPort = w.w.DstQPN&0xffffff, srcPort(w.sq.cfg.QPN)
		}
		out = append(out, f)
	}
	switch w.w.Opcode {
	case OpWrite, OpSend:
		mtu, total := n.spec.PMTU, len(w.payload)
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
			if w.w.Opcode == OpSend {
				p.Opcode -= roce.WriteFirst - roce.SendFirst
			} else if off == 0 {
				p.RETH.VA, p.RETH.RKey, p.RETH.DMALen = w.w.Remote, w.w.RKey, uint32(total)
			}
			p.AckReq = end == total || n.spec.AckReqEvery > 0 && (off/mtu+1)%n.spec.AckReqEvery == 0
			p.Payload = w.payload[off:end]
			add(p)
			if end == total {
				break
			}
		}
	case OpRead:
		var p roce.Packet
		p.Opcode, p.AckReq = roce.ReadRequest, true
		p.RETH.VA, p.RETH.RKey, p.RETH.DMALen = w.w.Remote, w.w.RKey, w.w.Length
		add(p)
	case OpCAS, OpFetchOp:
		var p roce.Packet
		p.Opcode, p.AckReq = roce.FetchAdd, true
		if w.w.Opcode == OpCAS {
			p.Opcode = roce.CmpSwap
		}
		p.AtomicETH.VA, p.AtomicETH.RKey = w.w.Remote, w.w.RKey
		if w.w.Opcode == OpCAS {
			p.AtomicETH.Compare, p.AtomicETH.SwapAdd = w.w.Compare, w.w.Swap
		} else {
			p.AtomicETH.SwapAdd = w.w.Compare
		}
		add(p)
	}
	return out
}

// A kept packet's frame, made when it goes on the wire (and again when it
// is resent), is the frame packetize made of it before: every opcode, a
// payload of one packet and of several (with ACK requests in between), an
// empty one, bulk, and an srd peer context's, whose destination queue and
// source port are its work request's.
func TestSentFrameMatchesPacketize(t *testing.T) {
	payload := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + 1)
		}
		return b
	}
	tests := []struct {
		name    string
		srd     bool
		w       WQE
		payload []byte
	}{
		{"write one packet", false, WQE{Opcode: OpWrite, Length: 8, Remote: 0x1000, RKey: 7}, payload(8)},
		{"write nine packets", false, WQE{Opcode: OpWrite, Length: 2200, Remote: 0x2000, RKey: 9}, payload(2200)},
		{"write empty", false, WQE{Opcode: OpWrite, Remote: 0x3000, RKey: 1}, []byte{}},
		{"write bulk", false, WQE{Opcode: OpWrite, Bulk: true, Length: 700, Remote: 0x4000, RKey: 2}, payload(700)},
		{"send three packets", false, WQE{Opcode: OpSend, Bulk: true, Length: 600}, payload(600)},
		{"read", false, WQE{Opcode: OpRead, Bulk: true, Length: 3000, Remote: 0x5000, RKey: 3}, nil},
		{"cas", false, WQE{Opcode: OpCAS, Remote: 0x6000, RKey: 4, Compare: 11, Swap: 12}, nil},
		{"fetch-add", false, WQE{Opcode: OpFetchOp, Remote: 0x7000, RKey: 5, Compare: 13}, nil},
		{"srd write", true, WQE{Opcode: OpWrite, Length: 300, Remote: 0x8000, RKey: 6, DstQPN: 0x1234567, DstNode: 3}, payload(300)},
		{"srd fetch-add", true, WQE{Opcode: OpFetchOp, Remote: 0x9000, RKey: 8, Compare: 1, DstQPN: 0x42, DstNode: 3}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			spec := DefaultSpec()
			spec.Node, spec.PMTU, spec.AckReqEvery = 1, 256, 4
			n, err := NewNIC(e.NewClock("fabric", 1000, 0), "nic", spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []QPConfig{{QPN: 0x100, SQSize: 8, CQSize: 8, RemoteNode: 3, RemoteQPN: 0x200}, {QPN: 0x101, SQSize: 8, CQSize: 8}} {
				if err := n.CreateQP(c); err != nil {
					t.Fatal(err)
				}
			}
			q := n.qps[0x100]
			if tc.srd {
				q.kind = srdPeer
			}
			q.nextPSN = 0xfffffe // the PSNs wrap
			w := &wqeState{q: q, sq: n.qps[0x101], w: tc.w, payload: tc.payload, txn: e.NewTxn(0, "wqe", "test")}
			q.packetize(w)
			var txns []sim.Txn
			for _, s := range q.sent {
				txns = append(txns, s.txn)
			}
			want := refFrames(q, w, txns)
			if len(q.sent) != len(want) {
				t.Fatalf("%d packets, want %d", len(q.sent), len(want))
			}
			for i := range q.sent {
				for try := range 2 { // sent, then resent: the same frame
					if got := q.sentFrame(&q.sent[i]); !reflect.DeepEqual(got, want[i]) {
						t.Fatalf("packet %d, send %d:\n got %+v\nwant %+v", i, try, got, want[i])
					}
				}
				if i > 0 && q.sent[i].txn.ID == q.sent[i-1].txn.ID {
					t.Fatalf("packets %d and %d share transaction %d", i-1, i, q.sent[i].txn.ID)
				}
			}
			psns := len(want)
			if tc.w.Opcode == OpRead {
				psns = (int(tc.w.Length) + 255) / 256 // a PSN for each response packet
			}
			if got := fmt.Sprint(w.firstPSN, w.lastPSN); got != fmt.Sprint(0xfffffe, (0xfffffe+psns-1)&0xffffff) {
				t.Fatalf("PSNs %s", got)
			}
		})
	}
}
