package nic

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// testDriver is a host's driver for a NIC without offload, at no cost: an
// MSI from the NIC starts a poll one edge later that does the atomics on
// the host's memory, transmits and takes every frame, then turns the
// interrupt on again. run false leaves the frames where they are.
type testDriver struct {
	u    *sim.Unit
	n    *NIC
	h    *testHost
	run  bool
	due  bool
	msis []sim.Tick
}

func (d *testDriver) Tick(now sim.Tick) bool {
	if !d.due || !d.run {
		return false
	}
	d.due = false
	for {
		if op, ok := d.n.DriverOp(); ok {
			old := binary.LittleEndian.Uint64(d.h.mem[op.Addr:])
			v := old + op.Swap
			if op.CAS {
				v = old
				if old == op.Compare {
					v = op.Swap
				}
			}
			binary.LittleEndian.PutUint64(d.h.mem[op.Addr:], v)
			op.Done(old)
			continue
		}
		if d.n.DriverHasTx() {
			d.n.DriverTx()
			continue
		}
		if d.n.DriverHasRx() {
			d.n.DriverRx()
			continue
		}
		break
	}
	d.n.DriverDone()
	return false
}

// Without offload a NIC's frames wait for its driver: a compare-and-swap
// completes only when both drivers run, the target's driver does it on the
// host's memory (no AtomicOp reaches the host), and the target's
// interrupts are at least the throttle interval apart while a stream of
// writes arrives.
func TestSoftwarePath(t *testing.T) {
	const throttle = 20 * sim.US
	for _, tc := range []struct {
		name     string
		run      bool
		writes   int
		wantDone bool
	}{
		{"drivers off: nothing completes", false, 0, false},
		{"a compare-and-swap in software", true, 0, true},
		{"writes under the throttle", true, 40, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := DefaultSpec()
			spec.Software = &Software{MSIAddr: 0xfee0_0000, ThrottlePS: throttle, Ring: 256}
			b := newPair(t, 1, spec, WireSpec{RateMbps: 1000, LatencyPS: sim.US})
			b.connect(1)
			var atomicsUp int
			for i, nd := range b.nodes {
				d := &testDriver{n: nd.n, h: nd.h, run: tc.run}
				d.u = b.e.NewClock(fmt.Sprintf("drv%d", i), 1000, 0).Add(fmt.Sprintf("driver%d", i), d)
				nd.h.fromNIC.Watch(func(p *pcie.Packet) {
					switch {
					case p.TLP.Kind == tlp.MWr && p.TLP.Addr>>20 == 0xfee:
						d.msis = append(d.msis, b.e.Now())
						d.due = true
						d.u.WakeIn(1)
					case i == 1 && (p.TLP.Kind == tlp.CAS || p.TLP.Kind == tlp.FetchAdd):
						atomicsUp++
					}
				}, nil)
				t.Cleanup(func() {
					if i == 1 && tc.writes > 0 {
						for k := 1; k < len(d.msis); k++ {
							if gap := d.msis[k] - d.msis[k-1]; gap < throttle {
								t.Errorf("target's interrupts %d and %d %v apart, under the %v throttle", k-1, k, gap, throttle)
							}
						}
						if len(d.msis) < 2 {
							t.Errorf("%d interrupts for %d writes", len(d.msis), tc.writes)
						}
					}
				})
			}
			const word = dataBase + 0x100
			binary.LittleEndian.PutUint64(b.nodes[1].h.mem[word:], 7)
			var ws []WQE
			for k := 0; k < tc.writes; k++ {
				ws = append(ws, WQE{Opcode: OpWrite, Signaled: true, WRID: uint64(10 + k), Length: 64, Local: dataBase, Remote: dataBase + 0x1000 + uint64(k)*64})
			}
			ws = append(ws, WQE{Opcode: OpCAS, Signaled: true, WRID: 1, Remote: word, Compare: 7, Swap: 9, Local: dataBase + 0x800})
			b.post(0, 1, ws...)
			b.run(5 * sim.MS)
			cqes := b.sendCQEs(0, 1)
			ok := 0
			for _, c := range cqes {
				if c.Status == StatusOK {
					ok++
				}
			}
			if done := ok == len(ws); done != tc.wantDone {
				t.Fatalf("%d of %d work requests completed (a request the target never takes fails after its retries)", ok, len(ws))
			}
			if !tc.wantDone {
				if got := b.counter("nic1.driver_rx"); got != 0 {
					t.Errorf("%d frames handed on without a driver", got)
				}
				return
			}
			if c := cqes[len(cqes)-1]; c.Value != 7 || binary.LittleEndian.Uint64(b.nodes[1].h.mem[word:]) != 9 {
				t.Errorf("CAS: old %d, word now %d; want 7 and 9", c.Value, binary.LittleEndian.Uint64(b.nodes[1].h.mem[word:]))
			}
			if atomicsUp != 0 || b.counter("nic1.driver_ops") != 1 {
				t.Errorf("%d AtomicOps reached the target's host, %d done by its driver; want 0 and 1", atomicsUp, b.counter("nic1.driver_ops"))
			}
			if in, rx := b.counter("nic1.frames_in"), b.counter("nic1.driver_rx"); in != rx || in != uint64(tc.writes+1) {
				t.Errorf("target: %d frames in, %d handed on; want %d", in, rx, tc.writes+1)
			}
		})
	}
}
