package nic

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// rootSide plays the root complex to a NIC: it sends the host's TLPs down,
// one an edge from when it is started, and keeps what comes up, and when.
type rootSide struct {
	down *sim.Chan[pcie.Packet]
	up   *sim.Chan[pcie.Packet]
	send []pcie.Packet
	got  []pcie.Packet
	at   []sim.Tick
}

func (r *rootSide) Tick(now sim.Tick) bool {
	if len(r.send) > 0 && r.down.Ready() {
		r.down.Send(r.send[0])
		r.send = r.send[1:]
	}
	for r.up.Valid() {
		r.got = append(r.got, r.up.Recv())
		r.at = append(r.at, now)
	}
	return len(r.send) > 0
}

const sramTestBAR = 0xf000_0000

var host = tlp.NewID(0, 1, 0)

func newSRAMNIC(t *testing.T, access sim.Tick) (*sim.Engine, *NIC, *rootSide) {
	t.Helper()
	e := sim.NewEngine(1)
	clk := e.NewClock("fabric", 1000, 0)
	spec := DefaultSpec()
	spec.ID, spec.BAR, spec.SRAMAccessPS = tlp.NewID(1, 0, 0), sramTestBAR, access
	n, err := NewNIC(clk, "nic", spec)
	if err != nil {
		t.Fatal(err)
	}
	r := &rootSide{}
	ru := clk.Add("root", r)
	r.down = sim.NewChan[pcie.Packet](ru, n.Unit(), "pcie.down", 8)
	r.up = sim.NewChan[pcie.Packet](n.Unit(), ru, "pcie.up", 8)
	n.DMAIn, n.DMAOut = r.down, r.up
	n.NetIn = sim.NewChan[Frame](ru, n.Unit(), "net.in", 2)
	n.NetOut = sim.NewChan[Frame](n.Unit(), ru, "net.out", 2)
	return e, n, r
}

func hostRead(off uint64, n int, tag uint16) pcie.Packet {
	return pcie.Packet{TLP: tlp.NewMemRead(host, tag, sramTestBAR+off, n)}
}

func hostWrite(off uint64, data []byte) pcie.Packet {
	return pcie.Packet{TLP: tlp.NewMemWrite(host, 0, sramTestBAR+off, data)}
}

// completionData reassembles the completions of tag as a requester would.
func completionData(t *testing.T, got []pcie.Packet, tag uint16, addr uint64, n int) ([]byte, int) {
	t.Helper()
	req, _ := pcie.NewRequester(host, 5)
	for i := uint16(0); i < tag; i++ {
		req.Issue(0, 4) // take the tags below
	}
	if _, ok := req.Issue(addr, n); !ok {
		t.Fatal("no tag")
	}
	for i, p := range got {
		if p.TLP.Tag != tag || !p.TLP.Kind.IsCompletion() {
			continue
		}
		done, data, err := req.Complete(&p.TLP)
		if err != nil {
			t.Fatalf("completion of tag %d: %v", tag, err)
		}
		if done {
			return data, i
		}
	}
	t.Fatalf("no complete answer for tag %d", tag)
	return nil, 0
}

// The host's loads and stores reach the NIC's device memory through its
// BAR, after the doorbells: a load is answered after the device's access
// time with what the device memory holds (written by the NIC's own engines
// or by an earlier host store), accesses are served one at a time in the
// order they came, and the doorbells and what lies past the device memory
// read as zero.
func TestDeviceMemory(t *testing.T) {
	const access = 40 * sim.NS
	word := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	tests := []struct {
		name   string
		device func(s *SRAM) // what the NIC's engines store first
		send   []pcie.Packet // sent one an edge from 0
		tag    uint16        // the read checked
		off    uint64        // its BAR offset
		n      int           // its size
		want   []byte        // its data
		wantAt sim.Tick      // when its last completion is seen
		check  func(s *SRAM) bool
	}{
		{
			name:   "a word the device wrote",
			device: func(s *SRAM) { s.Store32(0x40, 0xdeadbeef) },
			send:   []pcie.Packet{hostRead(SRAMOffset+0x40, 4, 1)},
			tag:    1, off: SRAMOffset + 0x40, n: 4, want: []byte{0xef, 0xbe, 0xad, 0xde},
			// Sent at 0, at the NIC at 1 ns, answered at 1 ns + access,
			// seen one edge later.
			wantAt: sim.NS + access + sim.NS,
		},
		{
			name: "after a store to the same address",
			send: []pcie.Packet{hostWrite(SRAMOffset+0x80, word(0x1122334455667788)), hostRead(SRAMOffset+0x80, 8, 2)},
			tag:  2, off: SRAMOffset + 0x80, n: 8, want: word(0x1122334455667788),
			// The store takes the device from 1 ns, the read from 1 ns + access.
			wantAt: sim.NS + 2*access + sim.NS,
			check:  func(s *SRAM) bool { return s.Load64(0x80) == 0x1122334455667788 },
		},
		{
			name: "unaligned bytes after stores around them",
			send: []pcie.Packet{hostWrite(SRAMOffset+0x101, []byte{1, 2, 3}), hostWrite(SRAMOffset+0x100, []byte{9}), hostRead(SRAMOffset+0x100, 5, 3)},
			tag:  3, off: SRAMOffset + 0x100, n: 5, want: []byte{9, 1, 2, 3, 0},
			wantAt: sim.NS + 3*access + sim.NS,
		},
		{
			name: "behind a read",
			send: []pcie.Packet{hostRead(SRAMOffset, 4, 1), hostRead(SRAMOffset+4, 4, 4)},
			tag:  4, off: SRAMOffset + 4, n: 4, want: make([]byte, 4),
			wantAt: sim.NS + 2*access + sim.NS,
		},
		{
			name: "a doorbell reads as zero",
			send: []pcie.Packet{hostRead(0x808, 8, 5)},
			tag:  5, off: 0x808, n: 8, want: make([]byte, 8),
			wantAt: sim.NS + access + sim.NS,
		},
		{
			name:   "past the device memory: stores dropped, zeros read",
			device: func(s *SRAM) { s.Store32(uint64(s.Size()-4), 0x01020304) },
			send: []pcie.Packet{hostWrite(SRAMOffset+DefaultSRAMBytes, []byte{7, 7, 7, 7}),
				hostRead(SRAMOffset+DefaultSRAMBytes-4, 8, 6)},
			tag: 6, off: SRAMOffset + DefaultSRAMBytes - 4, n: 8, want: []byte{4, 3, 2, 1, 0, 0, 0, 0},
			wantAt: sim.NS + 2*access + sim.NS,
		},
		{
			name:   "a block of 512 bytes in completions of at most MPS",
			device: func(s *SRAM) { s.Write(0x1000, bytes.Repeat([]byte{0xab}, 512)) },
			send:   []pcie.Packet{hostRead(SRAMOffset+0x1000, 512, 7)},
			tag:    7, off: SRAMOffset + 0x1000, n: 512, want: bytes.Repeat([]byte{0xab}, 512),
			wantAt: sim.NS + access + sim.NS, // both completions leave at once
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, n, r := newSRAMNIC(t, access)
			if tc.device != nil {
				tc.device(n.SRAM())
			}
			r.send = tc.send
			e.Run(10 * sim.US)
			data, i := completionData(t, r.got, tc.tag, sramTestBAR+tc.off, tc.n)
			if !bytes.Equal(data, tc.want) {
				t.Fatalf("read %x, want %x", data, tc.want)
			}
			if r.at[i] != tc.wantAt {
				t.Errorf("answered at %v, want %v", r.at[i], tc.wantAt)
			}
			if tc.check != nil && !tc.check(n.SRAM()) {
				t.Error("the device does not see the host's store")
			}
			if len(r.got) > 0 && r.got[i].TLP.CompleterID != n.spec.ID {
				t.Errorf("completer %v, want the NIC", r.got[i].TLP.CompleterID)
			}
		})
	}
}

// A doorbell rings at once, as before; behind a store to the device memory
// it waits for the store (a posted write never passes a posted write):
// the NIC fetches the work request an access time later.
func TestDoorbellBehindAStoreWaitsForIt(t *testing.T) {
	const (
		access = 300 * sim.NS
		qpn    = 0x11
	)
	tests := []struct {
		name   string
		store  bool
		extra  sim.Tick // the WQE fetch's delay
		stored bool     // the store is in the device memory when the fetch leaves
	}{
		{"alone", false, 0, false},
		{"behind a store", true, access, true},
	}
	var base sim.Tick
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, n, r := newSRAMNIC(t, access)
			if err := n.CreateQP(QPConfig{QPN: qpn, RemoteNode: 1, RemoteQPN: 0x22, SQBase: 0x20_0000, SQSize: 8, CQBase: 0x21_0000, CQSize: 8}); err != nil {
				t.Fatal(err)
			}
			var sawStore []bool
			if tc.store {
				r.send = append(r.send, hostWrite(SRAMOffset, []byte{1, 2, 3, 4}))
			}
			r.send = append(r.send, hostWrite(qpn*8, binary.LittleEndian.AppendUint64(nil, 1)))
			for until := sim.Tick(0); until < 10*sim.US && len(r.got) == 0; until += sim.NS {
				e.Run(until)
				if len(r.got) > 0 {
					sawStore = append(sawStore, n.SRAM().Load32(0) == 0x04030201)
				}
			}
			if len(r.got) == 0 || r.got[0].TLP.Kind != tlp.MRd {
				t.Fatal("the doorbell fetched no work request")
			}
			// The store reaches the NIC when the doorbell alone would: the
			// doorbell behind it rings when its access ends.
			at := r.at[0]
			if !tc.store {
				base = at
			}
			if at-base != tc.extra {
				t.Errorf("fetched %v later than alone, want %v", at-base, tc.extra)
			}
			if sawStore[0] != tc.stored {
				t.Errorf("the store in the device memory when the fetch came: %v, want %v", sawStore[0], tc.stored)
			}
		})
	}
}
