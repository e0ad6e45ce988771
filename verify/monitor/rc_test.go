package monitor

import (
	"net"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// rcEv is a frame on a wire (from node 0 to 1 or back) or a TLP at the
// responder caused by frame cause.
type rcEv struct {
	toResp bool
	id     sim.TxnID
	p      roce.Packet
	lost   bool
	tlp    bool // a TLP of the responder caused by id, len(p.Payload) bytes
	held   bool // sent, arriving only at a later event of the same id with arrive
	arrive bool
}

func write(psn uint32, data string) roce.Packet {
	p := roce.Packet{Opcode: roce.WriteOnly, DestQP: 2, PSN: psn, AckReq: true, Payload: []byte(data)}
	p.RETH.VA, p.RETH.DMALen = 0x1000, uint32(len(data))
	return p
}

func ack(psn uint32, msn uint32) roce.Packet {
	p := roce.Packet{Opcode: roce.Ack, DestQP: 1, PSN: psn}
	p.AETH.Syndrome, p.AETH.MSN = roce.SyndromeAck, msn
	return p
}

func TestRC(t *testing.T) {
	req := roce.Endpoint{IP: net.IPv4(10, 0, 0, 1)}
	resp := roce.Endpoint{IP: net.IPv4(10, 0, 0, 2)}
	w := func(id sim.TxnID, psn uint32, d string) rcEv { return rcEv{toResp: true, id: id, p: write(psn, d)} }
	x := func(id sim.TxnID, d string) rcEv { return rcEv{id: id, p: roce.Packet{Payload: []byte(d)}, tlp: true} }
	a := func(id sim.TxnID, psn, msn uint32) rcEv { return rcEv{id: id, p: ack(psn, msn)} }
	lost := func(e rcEv) rcEv { e.lost = true; return e }
	held := func(e rcEv) rcEv { e.held = true; return e }
	arrive := func(e rcEv) rcEv { e.arrive = true; return e }
	tests := []struct {
		name   string
		events []rcEv
		rules  []string
	}{
		{"two writes acknowledged", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(2, 11, "cd"), x(2, "cd"), a(3, 11, 2)}, nil},
		{"a lost write resent and executed once", []rcEv{lost(w(1, 10, "ab")), w(2, 10, "ab"), x(2, "ab"), a(3, 10, 1)}, nil},
		{"a duplicate answered, not executed", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(2, 10, "ab"), a(3, 10, 1), a(4, 10, 1)}, nil},
		{"a duplicate write executed again", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(2, 10, "ab"), x(2, "ab"), a(3, 10, 1)}, []string{"RC exactly-once"}},
		{"acknowledged, never executed", []rcEv{w(1, 10, "ab"), a(3, 10, 1)}, []string{"RC exactly-once"}},
		{"half the bytes written", []rcEv{w(1, 10, "abcd"), x(1, "ab"), a(3, 10, 1)}, []string{"RC exactly-once"}},
		{"a PSN not advanced", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(2, 10, "cd"), a(3, 10, 1)}, []string{"RC retransmission"}},
		{"a PSN skipped", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(2, 12, "cd"), x(2, "cd")}, []string{"RC PSN sequence"}},
		{"an ACK ahead of what arrived", []rcEv{w(1, 10, "ab"), x(1, "ab"), lost(w(2, 11, "cd")), a(3, 11, 2)}, []string{"RC ACK"}},
		{"a write resent with its ID, answered, not executed", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(1, 10, "ab"), a(3, 10, 1)}, nil},
		{"a write resent with its ID and executed again", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(1, 10, "ab"), x(1, "ab"), a(3, 10, 1)}, []string{"RC exactly-once"}},
		{"a write overtaken, then resent after the NAK", []rcEv{held(w(1, 10, "ab")), w(2, 11, "cd"), arrive(w(1, 10, "ab")), x(1, "ab"), w(3, 11, "cd"), x(3, "cd"), a(4, 11, 2)}, nil},
		{"MSN going back", []rcEv{w(1, 10, "ab"), x(1, "ab"), w(2, 11, "cd"), x(2, "cd"), a(3, 11, 2), a(4, 11, 1)}, []string{"RC MSN"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := NewLog(0)
			m := NewRC(log, 1024)
			at := sim.Tick(0)
			for _, e := range tc.events {
				at += 100
				switch {
				case e.tlp:
					wr := tlp.NewMemWrite(tlp.NewID(1, 0, 0), 0, 0x1000, e.p.Payload)
					m.TLP(1, at, 100+e.id, e.id, &wr)
				case e.held:
					m.Sent("wire01", at, e.id, &roce.Frame{Src: req, Dst: resp, SrcPort: 0xc001, Packet: e.p})
				case e.arrive:
					m.Arrived(at, e.id, &roce.Frame{Src: req, Dst: resp, SrcPort: 0xc001, Packet: e.p})
				case e.toResp:
					m.Frame("wire01", at, e.id, &roce.Frame{Src: req, Dst: resp, SrcPort: 0xc001, Packet: e.p}, e.lost)
				default:
					m.Frame("wire10", at, e.id, &roce.Frame{Src: resp, Dst: req, SrcPort: 0xc002, Packet: e.p}, e.lost)
				}
			}
			m.Finish(at + 100)
			var got []string
			for _, v := range log.Violations() {
				got = append(got, v.Rule)
			}
			if strings.Join(got, ",") != strings.Join(tc.rules, ",") {
				t.Errorf("fired %q, want %q\n%v", got, tc.rules, log.Err())
			}
		})
	}
}
