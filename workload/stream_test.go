package workload

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

func statValue(t *testing.T, c *aa.System, name string) uint64 {
	t.Helper()
	st, ok := c.Eng.Stats().Get(name)
	if !ok {
		t.Fatalf("no statistic %s", name)
	}
	return st.(*sim.Counter).Value()
}

// The stream delivers every byte with WRITEs and SENDs, one and several in
// flight, with the extended IOMMU and without one. Without it nothing is
// translated (the IOTLB and the context cache are never looked up) and
// nothing is slower; with it the payload pages miss the IOTLB. With one
// write in flight the rate is bound by the round trip, so more in flight
// is faster; no stream beats the wire.
func TestStream(t *testing.T) {
	const msgs, size = 64, 1024
	rate := map[string]float64{}
	for _, mode := range []string{IOMMUNone, IOMMUExtended} {
		for _, op := range []StreamOp{StreamWrite, StreamSend} {
			for _, out := range []int{1, 16} {
				c := newCluster(t, func(sp *machine.Spec) { sp.IOMMU.Bypass = mode == IOMMUNone })
				s, err := SetupStream(c, StreamConfig{Op: op, MsgBytes: size, Messages: msgs, Outstanding: out, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				c.Run(sim.S, c.AppsDone)
				if !c.AppsDone() {
					t.Fatalf("%s %s ×%d: did not finish", mode, op, out)
				}
				r := s.Result()
				name := fmt.Sprintf("%s %s ×%d", mode, op, out)
				t.Logf("%-20s %8.4g B/s, %s", name, r.BytesPerSec, sim.Tick(r.LastPS-r.FirstPS).Human())
				if !r.Verified {
					t.Fatalf("%s: %s", name, r.Problem)
				}
				if r.BytesPerSec <= 0 || r.BytesPerSec > 125e6 {
					t.Errorf("%s: %.4g B/s of payload on a 1 Gb/s wire", name, r.BytesPerSec)
				}
				rate[name] = r.BytesPerSec
				lookups := uint64(0)
				for _, n := range []string{"node0", "node1"} {
					for _, k := range []string{"iotlb.hits", "iotlb.misses", "context_cache.hits", "context_cache.misses", "walk_reads"} {
						lookups += statValue(t, c, n+".iommu."+k)
					}
				}
				if bypassed := mode == IOMMUNone; bypassed != (lookups == 0) {
					t.Errorf("%s: %d IOMMU lookups", name, lookups)
				}
				if mode == IOMMUExtended && statValue(t, c, "node1.iommu.iotlb.misses") < size*msgs/4096 {
					t.Errorf("%s: %d IOTLB misses at the target for %d pages", name, statValue(t, c, "node1.iommu.iotlb.misses"), size*msgs/4096)
				}
			}
		}
	}
	for _, k := range []string{"write ×1", "write ×16", "send ×1", "send ×16"} {
		no, e := rate[IOMMUNone+" "+k], rate[IOMMUExtended+" "+k]
		if no < e*0.999 {
			t.Errorf("%s: no-iommu %.4g B/s slower than e-iommu %.4g", k, no, e)
		}
	}
	if rate[IOMMUExtended+" write ×16"] <= rate[IOMMUExtended+" write ×1"]*1.1 {
		t.Errorf("16 writes in flight (%.4g B/s) not faster than 1 (%.4g)", rate[IOMMUExtended+" write ×16"], rate[IOMMUExtended+" write ×1"])
	}
}

// The self-check fails when one byte of the target's buffer is wrong.
func TestStreamDetectsCorruption(t *testing.T) {
	c := newCluster(t, nil)
	s, err := SetupStream(c, StreamConfig{Op: StreamWrite, MsgBytes: 300, Messages: 5, Outstanding: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(sim.S, c.AppsDone)
	if r := s.Result(); !r.Verified {
		t.Fatal(r.Problem)
	}
	var b [1]byte
	c.Nodes[1].Mem.Read(s.dst+777, b[:])
	c.Nodes[1].Mem.Write(s.dst+777, []byte{b[0] ^ 0x10})
	if r := s.Result(); r.Verified || !strings.Contains(r.Problem, "byte 777 (message 2)") {
		t.Fatalf("a flipped byte: verified %v, %q", r.Verified, r.Problem)
	}
}

func TestStreamConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  StreamConfig
		want string
	}{
		{StreamConfig{Op: "read", MsgBytes: 8, Messages: 2, Outstanding: 1}, `stream op "read"`},
		{StreamConfig{Op: StreamWrite, MsgBytes: 0, Messages: 2, Outstanding: 1}, "message size 0 B"},
		{StreamConfig{Op: StreamWrite, MsgBytes: 8, Messages: 1, Outstanding: 1}, "1 messages, want at least 2"},
		{StreamConfig{Op: StreamSend, MsgBytes: 8, Messages: 2, Outstanding: 257}, "257 outstanding, want 1..256"},
	} {
		if _, err := SetupStream(newCluster(t, nil), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// Without the extended IOMMU there are no access logs: every AA workload
// refuses to set up, with the reason.
func TestNoIOMMURefusesActiveAccess(t *testing.T) {
	c := newCluster(t, func(sp *machine.Spec) { sp.IOMMU.Bypass = true })
	_, err := SetupDHT(c, DHTConfig{Scheme: AASP, Inserts: 1, Cells: 16, Seed: 1})
	if !errors.Is(err, iommu.ErrBypassed) {
		t.Fatalf("AA-SP on no-iommu: %v", err)
	}
}
