package monitor

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

var dev = tlp.NewID(1, 0, 0)

// ev is one event of a table: what happens to a TLP, on which direction.
type ev struct {
	op string // enter, arrive, take, pass
	d  int
	at sim.Tick
	id sim.TxnID
	t  tlp.TLP
}

func cpl(req *tlp.TLP, bc int, la uint8, n int) tlp.TLP {
	return tlp.NewCompletion(req, 0, tlp.SC, bc, la, make([]byte, n))
}

func TestPCIeLink(t *testing.T) {
	rd := tlp.NewMemRead(dev, 5, 0x1010, 256) // 0x1010..0x1110: RCB 64, MPS 128
	wr := tlp.NewMemWrite(dev, 0, 0x2000, make([]byte, 64))
	big := tlp.NewMemWrite(dev, 0, 0x2f80, make([]byte, 256)) // crosses 0x3000
	rdAt := tlp.NewMemRead(dev, 6, 0x3000, 8)
	rdZero := tlp.NewMemRead(dev, 7, 0x3004, 0)
	// The worked example: 0x1010, 256 bytes, MPS 128, RCB 64 → 112 (to
	// 0x1080), 128 (to 0x1100), 16.
	good := []ev{{"pass", 0, 10, 1, rd}, {"pass", 1, 20, 2, cpl(&rd, 256, 0x10, 112)}, {"pass", 1, 30, 2, cpl(&rd, 144, 0x00, 128)}, {"pass", 1, 40, 2, cpl(&rd, 16, 0x00, 16)}}
	tests := []struct {
		name   string
		spec   DirSpec
		events []ev
		rules  []string // the rules that must fire, in order; none for a legal sequence
	}{
		{"read split at the RCB", DirSpec{}, good, nil},
		{"zero-length read", DirSpec{}, []ev{{"pass", 0, 1, 1, rdZero}, {"pass", 1, 2, 2, tlp.NewCompletion(&rdZero, 0, tlp.SC, 1, 0x04, make([]byte, 4))}}, nil},
		{"split off the RCB", DirSpec{}, []ev{good[0], {"pass", 1, 20, 2, cpl(&rd, 256, 0x10, 96)}, {"pass", 1, 25, 2, cpl(&rd, 160, 0x70, 16)}, good[2], good[3]},
			[]string{"PCIe RCB"}},
		{"wrong Lower Address", DirSpec{}, []ev{good[0], {"pass", 1, 20, 2, cpl(&rd, 256, 0x00, 112)}, good[2], good[3]}, []string{"PCIe Lower Address"}},
		{"wrong Byte Count", DirSpec{}, []ev{good[0], good[1], {"pass", 1, 30, 2, cpl(&rd, 256, 0x00, 128)}, good[3]}, []string{"PCIe Byte Count"}},
		{"completion without a request", DirSpec{}, []ev{{"pass", 1, 5, 2, cpl(&rdAt, 8, 0, 8)}}, []string{"PCIe completion"}},
		{"tag reused while outstanding", DirSpec{}, []ev{good[0], {"pass", 0, 15, 3, rd}}, []string{"PCIe tag"}},
		{"write crossing 4 KB", DirSpec{}, []ev{{"pass", 0, 1, 1, big}}, []string{"PCIe 4KB", "TLP format"}},
		{"payload above MPS", DirSpec{MPS: 32}, []ev{{"pass", 0, 1, 1, wr}}, []string{"PCIe MPS"}},
		{"writes in order", DirSpec{}, []ev{{"enter", 0, 1, 1, wr}, {"enter", 0, 2, 2, big}, {"arrive", 0, 9, 1, wr}, {"arrive", 0, 10, 2, big}}, []string{"PCIe 4KB", "TLP format"}},
		{"a read passes a write (B2a)", DirSpec{}, []ev{{"enter", 0, 1, 1, wr}, {"enter", 0, 2, 2, rdAt}, {"arrive", 0, 9, 2, rdAt}, {"arrive", 0, 10, 1, wr}}, []string{"PCIe B2a ordering"}},
		{"a write passes a read (A3)", DirSpec{}, []ev{{"enter", 0, 1, 1, rdAt}, {"enter", 0, 2, 2, wr}, {"arrive", 0, 9, 2, wr}, {"arrive", 0, 10, 1, rdAt}}, nil},
		{"receiver takes a read before a write", DirSpec{TakeOrder: true}, []ev{{"pass", 0, 1, 1, wr}, {"pass", 0, 2, 2, rdAt}, {"take", 0, 9, 2, rdAt}, {"take", 0, 10, 1, wr}}, []string{"PCIe B2a ordering"}},
		{"posted credits kept", DirSpec{Credits: [6]int{1, 0, 0, 0, 0, 0}, LatencyPS: 100, UpdateFCPS: 100},
			[]ev{{"pass", 0, 200, 1, wr}, {"take", 0, 300, 1, wr}, {"pass", 0, 501, 2, wr}}, nil},
		{"posted credit returned early", DirSpec{Credits: [6]int{1, 0, 0, 0, 0, 0}, LatencyPS: 100, UpdateFCPS: 100},
			[]ev{{"pass", 0, 200, 1, wr}, {"take", 0, 300, 1, wr}, {"pass", 0, 450, 2, wr}}, []string{"PCIe credits"}},
		{"data credits exceeded", DirSpec{Credits: [6]int{0, 6, 0, 0, 0, 0}, LatencyPS: 100, UpdateFCPS: 100},
			[]ev{{"pass", 0, 200, 1, wr}, {"pass", 0, 300, 2, wr}}, []string{"PCIe credits"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := NewLog(0)
			a := tc.spec
			a.Name = "link.up"
			l := NewPCIeLink(log, a, DirSpec{Name: "link.down", RCB: 64, MPS: 128})
			for _, e := range tc.events {
				switch e.op {
				case "enter":
					l.Enter(e.d, e.at, e.id, &e.t)
				case "arrive":
					l.Arrive(e.d, e.at, e.id, &e.t)
				case "take":
					l.Take(e.d, e.at, e.id, &e.t)
				case "pass":
					l.Pass(e.d, e.at, e.id, &e.t)
				}
			}
			var got []string
			for _, v := range log.Violations() {
				got = append(got, v.Rule)
				if !strings.Contains(v.String(), "link.") || !strings.Contains(v.String(), "txn") {
					t.Errorf("a report that names no link or transaction: %v", v)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.rules, ",") {
				t.Errorf("fired %q, want %q\n%v", got, tc.rules, log.Err())
			}
		})
	}
}
