package pcie

import (
	"fmt"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Packet is a TLP in flight with its causal identity.
type Packet struct {
	sim.Txn
	TLP tlp.TLP
}

// Credits are the receive-buffer credits a port advertises per class: one
// header credit per TLP, one data credit per 4 DW (16 bytes) of payload.
// Zero advertises infinite credits, as the specification allows.
type Credits struct {
	PH, PD, NPH, NPD, CplH, CplD int
}

// DefaultCredits are typical of an endpoint's receive buffers.
func DefaultCredits() Credits {
	return Credits{PH: 32, PD: 256, NPH: 32, NPD: 32, CplH: 0, CplD: 0}
}

// LinkSpec describes one PCIe link.
type LinkSpec struct {
	Gen       int      // generation 1..5
	Width     int      // lanes: 1, 2, 4, 8 or 16
	LatencyPS sim.Tick // from the last bit sent to the TLP available at the receiver (PHY, wire, DLL); default 100 ns
	ECRC      bool     // every TLP carries a 4-byte ECRC
	// DLLP models the data link layer's own traffic on the reverse
	// direction: an Ack DLLP every AckEvery TLPs and an UpdateFC DLLP per
	// credit return, 8 bytes each on the wire.
	DLLP     bool
	AckEvery int
	// Credits advertised by the receiver of this direction, and the time from
	// the receiver's buffer draining to the credit back at the sender.
	Credits         Credits
	UpdateFCLatency sim.Tick // default: LatencyPS
	QueueTLPs       int      // transmit queue per class, in TLPs (default 16)
}

// DefaultLinkSpec is a Gen3 x8 link.
func DefaultLinkSpec() LinkSpec {
	return LinkSpec{Gen: 3, Width: 8, LatencyPS: 100 * sim.NS, AckEvery: 4, Credits: DefaultCredits(), QueueTLPs: 16}
}

// Validate checks the spec and names the wrong field.
func (s LinkSpec) Validate() error {
	switch {
	case s.Gen < 1 || s.Gen > 5:
		return fmt.Errorf("link gen %d: want 1 to 5", s.Gen)
	case s.Width != 1 && s.Width != 2 && s.Width != 4 && s.Width != 8 && s.Width != 16:
		return fmt.Errorf("link width x%d: want x1, x2, x4, x8 or x16", s.Width)
	case s.DLLP && s.AckEvery < 1:
		return fmt.Errorf("ack_every %d: want at least 1", s.AckEvery)
	case s.QueueTLPs < 1:
		return fmt.Errorf("queue_tlps %d: want at least 1", s.QueueTLPs)
	}
	c := s.Credits
	for _, v := range []int{c.PH, c.PD, c.NPH, c.NPD, c.CplH, c.CplD} {
		if v < 0 {
			return fmt.Errorf("credits %+v: negative", c)
		}
	}
	return nil
}

// Transfer rate per lane in MT/s and the line code (wire bits per data bit,
// as num/den).
func (s LinkSpec) rate() (mts, encNum, encDen uint64) {
	switch s.Gen {
	case 1:
		return 2500, 10, 8
	case 2:
		return 5000, 10, 8
	case 3:
		return 8000, 130, 128
	case 4:
		return 16000, 130, 128
	}
	return 32000, 130, 128
}

// Encoding names the line code.
func (s LinkSpec) Encoding() string {
	if s.Gen <= 2 {
		return "8b/10b"
	}
	return "128b/130b"
}

// BytesPerSecond is the data rate of one direction after line coding.
func (s LinkSpec) BytesPerSecond() float64 {
	mts, num, den := s.rate()
	return float64(mts) * 1e6 * float64(s.Width) * float64(den) / float64(num) / 8
}

// FramingBytes is the per-TLP overhead of the data link and physical layers:
// Gen1/2: STP 1 + sequence number 2 + LCRC 4 + END 1; Gen3+: a 4-byte STP
// token (length and 12-bit sequence number) + LCRC 4. Eight bytes either way.
const FramingBytes = 8

// DLLPBytes is one DLLP on the wire: 4 bytes + CRC-16 + 2 bytes of framing.
const DLLPBytes = 8

// WireBytes is the size of a TLP on the wire: header, payload, ECRC and framing.
func (s LinkSpec) WireBytes(t *tlp.TLP) int {
	n := t.Size() + FramingBytes
	if s.ECRC && !t.TD {
		n += 4
	}
	return n
}

// Efficiency is the fraction of the link's data rate that carries payload
// when streaming TLPs with the given payload and header size (no DLLPs).
func (s LinkSpec) Efficiency(payload, headerBytes int) float64 {
	ecrc := 0
	if s.ECRC {
		ecrc = 4
	}
	return float64(payload) / float64(headerBytes+payload+ecrc+FramingBytes)
}

// serializer turns bytes into wire time exactly: the fractional picoseconds
// carry over, so long streams neither drift nor round.
type serializer struct {
	num, den uint64 // ps per byte = num/den
	acc      uint64
}

func newSerializer(s LinkSpec) serializer {
	mts, encNum, encDen := s.rate()
	// bytes × 8 bits × (encNum/encDen) / (mts × 1e6 × width) s = … × 1e12 ps
	return serializer{num: 8 * encNum * 1_000_000, den: encDen * mts * uint64(s.Width)}
}

func (z *serializer) time(bytes int) sim.Tick {
	z.acc += uint64(bytes) * z.num
	t := z.acc / z.den
	z.acc %= z.den
	return sim.Tick(t)
}

// dataCredits is the data credits of a payload: one per 16 bytes.
func dataCredits(payload int) int { return (payload + 15) / 16 }
