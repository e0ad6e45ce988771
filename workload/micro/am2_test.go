package micro

import (
	"os"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/scenario"
)

// e5000Config is the E5000 preset (an SMP node with the coherence model)
// with AM-II between two of its cores, shared memory only (the single-
// protocol system).
func e5000Config(t *testing.T) Config {
	t.Helper()
	data, err := os.ReadFile("../../examples/machines/e5000.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.ParseScenario("e5000.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return Config{Machine: s.ClusterSpec(), Layer: AM2, Path: IntraNode, Seed: s.Seed, AM2Poll: am2.Policy{Protocols: am2.ShmOnly}}
}

// An AM-II ping-pong on the E5000 node: short messages (up to 32 bytes of
// arguments) take one time, bulk ones longer, and the round trip grows,
// and the bandwidth rises, with the size — past 8 kB too, where the
// chunks pipeline through the queue's bulk blocks. Deterministic.
func TestAM2PingPong(t *testing.T) {
	sizes := []int{0, 8, 32, 64, 1024, 8192, 16384, 32768}
	c := e5000Config(t)
	pts, err := PingPong(c, sizes)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range pts {
		t.Logf("%6d B: round trip %v, %.2f MB/s", x.Bytes, x.RoundTrip.Human(), x.MBps)
		if x.Bytes != sizes[i] || x.RoundTrip == 0 || x.OneWay != x.RoundTrip/2 {
			t.Fatalf("point %+v", x)
		}
		if i == 0 || x.Bytes <= 32 {
			continue
		}
		if x.RoundTrip <= pts[i-1].RoundTrip {
			t.Errorf("%d B took %v, %d B %v", x.Bytes, x.RoundTrip.Human(), pts[i-1].Bytes, pts[i-1].RoundTrip.Human())
		}
		if x.MBps <= pts[i-1].MBps {
			t.Errorf("%d B at %.2f MB/s, %d B at %.2f", x.Bytes, x.MBps, pts[i-1].Bytes, pts[i-1].MBps)
		}
	}
	// Short messages carry their bytes as arguments: one packet, and one
	// line of each buffer, whether 8 or 32 bytes; a bulk one costs more.
	if pts[1].RoundTrip != pts[2].RoundTrip || pts[3].RoundTrip <= pts[2].RoundTrip {
		t.Errorf("8 B round trip %v, 32 B %v, 64 B %v: want the short messages alike and the bulk one longer", pts[1].RoundTrip.Human(), pts[2].RoundTrip.Human(), pts[3].RoundTrip.Human())
	}
	again, err := PingPong(c, sizes)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if again[i] != pts[i] {
			t.Fatalf("run 2 differs at %d B: %+v, %+v", sizes[i], again[i], pts[i])
		}
	}
}

// The LogGP parameters of AM-II on the E5000 node: every one measured and
// positive where it must be, the gap no shorter than the send overhead,
// the overheads shorter than the round trip.
func TestAM2LogGP(t *testing.T) {
	l, err := MeasureLogGP(e5000Config(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("am2 shm on the E5000: RTT %v, o_s %v, o_r %v, L %d ps, g %v, G %.1f ps/B (%.1f MB/s)", l.RTT.Human(), l.Os.Human(), l.Or.Human(), l.L, l.Gap.Human(), l.G, l.GMBps())
	if l.RTT == 0 || l.Os == 0 || l.Or == 0 || l.Gap == 0 || l.G <= 0 {
		t.Fatalf("%+v", l)
	}
	if l.Gap < l.Os {
		t.Errorf("g = %v shorter than o_s = %v", l.Gap.Human(), l.Os.Human())
	}
	if l.Os >= l.RTT || l.Or >= l.RTT {
		t.Errorf("an overhead as long as the round trip: %+v", l)
	}
}

// AM-II between two nodes on the network protocol: the short message's
// round trip is longer than on shm (uncached loads and stores of the NIU,
// the line), the bulk bandwidth lower (the 38 MB/s bus); a single-protocol
// system on the path it does not reach is a clear error, not a hang; and
// a layer's name is parsed.
func TestAM2Network(t *testing.T) {
	c := e5000Config(t)
	shm, err := PingPong(c, []int{8, 65536})
	if err != nil {
		t.Fatal(err)
	}
	c.Path, c.AM2Poll = InterNode, am2.Policy{}
	net, err := PingPong(c, []int{8, 65536})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("8 B round trip shm %v, net %v; 64 kB shm %.1f MB/s, net %.1f MB/s", shm[0].RoundTrip.Human(), net[0].RoundTrip.Human(), shm[1].MBps, net[1].MBps)
	if net[0].RoundTrip <= 2*shm[0].RoundTrip || net[1].MBps >= shm[1].MBps/2 || net[1].MBps > 38 {
		t.Errorf("net %+v not slower than shm %+v", net, shm)
	}
	for _, tc := range []struct {
		path   Path
		policy am2.Policy
		want   string
	}{
		{InterNode, am2.Policy{Protocols: am2.ShmOnly}, "does not reach another node"},
		{IntraNode, am2.Policy{Protocols: am2.NetOnly}, "does not reach a node's own"},
	} {
		c.Path, c.AM2Poll = tc.path, tc.policy
		if _, err := PingPong(c, []int{8}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %s: %v", tc.policy, tc.path, err)
		}
	}
	for _, l := range Layers {
		if got, err := ParseLayer(l.Name()); err != nil || got != l {
			t.Errorf("ParseLayer(%q) = %v, %v", l.Name(), got, err)
		}
	}
	if _, err := ParseLayer("myrinet"); err == nil || !strings.Contains(err.Error(), "am2") {
		t.Errorf("ParseLayer(myrinet): %v", err)
	}
}
