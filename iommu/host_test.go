package iommu

import (
	"bytes"
	"testing"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// hostCore is a test core: it sends its MMIO requests to the root complex
// in order and keeps the completions it gets, with what memory held at
// watch when each arrived.
type hostCore struct {
	u     *sim.Unit
	id    tlp.ID
	out   *sim.Chan[pcie.Packet]
	in    *sim.Chan[pcie.Packet]
	send  []pcie.Packet
	i     int
	got   []pcie.Packet
	gotAt []sim.Tick
	s     *system
	watch uint64
	saw   [][]byte
}

func (h *hostCore) Tick(now sim.Tick) bool {
	if h.i < len(h.send) && h.out.Ready() {
		h.out.Send(h.send[h.i])
		h.i++
	}
	for h.in.Valid() {
		h.got = append(h.got, h.in.Recv())
		h.gotAt = append(h.gotAt, now)
		b := make([]byte, 8)
		h.s.mem.Read(h.watch, b)
		h.saw = append(h.saw, b)
	}
	return h.i < len(h.send)
}

// addHost connects a test core with requester ID 00:01.k to the root
// complex: its requests in, its completions back.
func (s *system) addHost(k uint8) *hostCore {
	h := &hostCore{id: tlp.NewID(0, 1, k), s: s}
	h.u = s.clk.Add("cpu"+string(rune('0'+k)), h)
	h.out = sim.NewChan[pcie.Packet](h.u, s.m.Unit(), "cpu"+string(rune('0'+k))+".mmio", 4)
	h.in = sim.NewChan[pcie.Packet](s.m.Unit(), h.u, "cpu"+string(rune('0'+k))+".mmio_cpl", 2)
	s.m.ConnectHost(h.out)
	s.m.ConnectHostCompletions(h.id, h.in)
	return h
}

func (h *hostCore) read(addr uint64, n int, tag uint16) {
	h.send = append(h.send, pcie.Packet{Txn: h.s.e.NewTxn(0, "mrd", "test"), TLP: tlp.NewMemRead(h.id, tag, addr, n)})
	h.u.WakeAt(h.s.e.Now() + 1)
}

const hostBAR = 0xf000_0000

// A device's completion of a core's uncached read never passes the writes
// the device sent before it: when the core gets the completion, memory
// holds what they wrote, however long their path through the IOMMU (a
// plain page, a page logged with data). A completion does pass a request
// that waits at the IOMMU for access-log space (completions must be able to
// pass non-posted requests), and arrives while it still waits.
func TestHostCompletionDoesNotPassDeviceWrites(t *testing.T) {
	tests := []struct {
		name    string
		writes  []uint64 // IOVAs the device writes 64 bytes to before completing
		waitGet bool     // an active get on a full log ahead of them
	}{
		{"no write ahead", nil, false},
		{"behind a write to a plain page", []uint64{ordPlain}, false},
		{"behind writes, the last to a page logged with data", []uint64{ordPlain, ordLoggedData}, false},
		{"past a get waiting on a full log, behind a write", []uint64{ordPlain}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, dev := newOrderingSystem(t)
			d := s.devs[dev]
			s.m.SetBAR(dev, hostBAR, 0x10_0000)
			h := s.addHost(0)
			var want []byte
			if n := len(tc.writes); n > 0 {
				h.watch = testPA + (tc.writes[n-1] - testIOVA)
			}
			if tc.waitGet {
				s.fillLog(dev, 8)
				s.send(dev, tlp.NewMemRead(d.id, 9, ordGet, 64))
			}
			d.answer = func(p pcie.Packet) []pcie.Packet {
				if p.TLP.Kind != tlp.MRd {
					return nil
				}
				var out []pcie.Packet
				for i, iova := range tc.writes {
					want = fill(64, byte(20+i))
					out = append(out, pcie.Packet{TLP: tlp.NewMemWrite(d.id, 0, iova, want)})
				}
				c := tlp.NewCompletion(&p.TLP, d.id, tlp.SC, 4, uint8(p.TLP.Addr&0x7f), []byte{0xde, 0xad, 0xbe, 0xef})
				return append(out, pcie.Packet{TLP: c})
			}
			h.read(hostBAR+0x100, 4, 5)
			s.e.Run(20 * sim.US)
			if len(h.got) != 1 {
				t.Fatalf("the core got %d completions, want 1", len(h.got))
			}
			c := h.got[0].TLP
			if c.Kind != tlp.CplD || c.Tag != 5 || c.RequesterID != h.id || !bytes.Equal(c.Data, []byte{0xde, 0xad, 0xbe, 0xef}) {
				t.Fatalf("the core got %v tag %d for %v with %x", c.Kind, c.Tag, c.RequesterID, c.Data)
			}
			if want != nil && !bytes.Equal(h.saw[0], want[:8]) {
				t.Fatalf("memory held %x when the completion reached the core, want the device's write %x", h.saw[0], want[:8])
			}
			if tc.waitGet {
				if _, ok := d.completion(9); ok {
					t.Fatal("the get did not wait")
				}
			}
			if got := s.m.stHostCpls.Value(); got != 1 {
				t.Fatalf("%d host completions counted, want 1", got)
			}
		})
	}
}

// The root complex routes a core's read to the device whose BAR holds the
// address and the device's completion back to the core that asked (by
// requester ID); a read no BAR decodes gets an Unsupported Request
// completion from the root complex, counted, and a write there is dropped.
func TestHostReadsRouting(t *testing.T) {
	tests := []struct {
		name    string
		addr    uint64
		write   bool
		wantDev bool // the device sees it
		wantUR  uint64
	}{
		{"read in the BAR", hostBAR + 0x40, false, true, 0},
		{"read at the BAR's last DW", hostBAR + 0x10_0000 - 4, false, true, 0},
		{"read past the BAR", hostBAR + 0x10_0000, false, false, 1},
		{"read below the BAR", hostBAR - 4, false, false, 1},
		{"write past the BAR", hostBAR + 0x10_0000, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem(t, DefaultSpec(), 1)
			d := s.devs[0]
			s.m.SetBAR(0, hostBAR, 0x10_0000)
			d.answer = func(p pcie.Packet) []pcie.Packet {
				if p.TLP.Kind != tlp.MRd {
					return nil
				}
				// Each core's answer carries its requester ID's low byte.
				data := []byte{byte(p.TLP.RequesterID), 0, 0, 0}
				return []pcie.Packet{{TLP: tlp.NewCompletion(&p.TLP, d.id, tlp.SC, 4, uint8(p.TLP.Addr&0x7f), data)}}
			}
			hs := []*hostCore{s.addHost(0), s.addHost(1)}
			unsupported := s.m.stUnsupported.Value()
			for k, h := range hs {
				if tc.write {
					h.send = append(h.send, pcie.Packet{TLP: tlp.NewMemWrite(h.id, 0, tc.addr, []byte{1, 2, 3, 4})})
					h.u.WakeAt(1)
					continue
				}
				h.read(tc.addr, 4, uint16(k+1))
			}
			s.e.Run(10 * sim.US)
			if got := len(d.got) > 0; got != tc.wantDev {
				t.Fatalf("the device got %d TLPs, want any: %v", len(d.got), tc.wantDev)
			}
			if tc.write {
				if got := s.m.stUnsupported.Value() - unsupported; got != 2 {
					t.Fatalf("%d dropped writes counted, want 2", got)
				}
				return
			}
			for k, h := range hs {
				if len(h.got) != 1 {
					t.Fatalf("core %d got %d completions, want 1", k, len(h.got))
				}
				c := h.got[0].TLP
				if c.Tag != uint16(k+1) || c.RequesterID != h.id {
					t.Fatalf("core %d got the completion of %v tag %d", k, c.RequesterID, c.Tag)
				}
				if tc.wantDev {
					if c.Status != tlp.SC || c.Data[0] != byte(h.id) {
						t.Fatalf("core %d got %v %x, want its own data", k, c.Status, c.Data)
					}
				} else if c.Status != tlp.UR || c.Kind != tlp.Cpl || c.CompleterID != s.m.spec.ID {
					t.Fatalf("core %d got %v %v from %v, want the root complex's UR", k, c.Kind, c.Status, c.CompleterID)
				}
			}
			if got := s.m.stHostUR.Value(); got != 2*tc.wantUR {
				t.Fatalf("%d reads answered UR, want %d", got, 2*tc.wantUR)
			}
			if got := s.m.stHostReads.Value(); got != 2 {
				t.Fatalf("%d host reads counted, want 2", got)
			}
		})
	}
}
