package micro

import (
	"math"
	"testing"

	"github.com/aaemu/aaemu/machine"
)

func defaultConfig(p Path) Config {
	return Config{Machine: machine.DefaultSpec(), Path: p, Seed: 1}
}

// A ping-pong on each path: the time grows with the size, shared memory
// is faster than the NICs for small messages, and the bandwidth between
// nodes approaches, and never exceeds, what the 1 Gb/s wire carries.
func TestPingPong(t *testing.T) {
	sizes := []int{0, 1, 64, 1024, 8192, 65536, 1 << 20}
	got := map[Path][]PingPongPoint{}
	for _, p := range Paths {
		pts, err := PingPong(defaultConfig(p), sizes)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range pts {
			if x.Bytes != sizes[i] || x.RoundTrip == 0 || x.OneWay != x.RoundTrip/2 {
				t.Fatalf("%s: point %+v", p, x)
			}
			if i > 0 && x.RoundTrip <= pts[i-1].RoundTrip {
				t.Errorf("%s: %d B took %v, %d B %v", p, x.Bytes, x.RoundTrip.Human(), pts[i-1].Bytes, pts[i-1].RoundTrip.Human())
			}
		}
		got[p] = pts
	}
	if s, r := got[IntraNode][1].RoundTrip, got[InterNode][1].RoundTrip; s >= r {
		t.Errorf("a 1-byte round trip through shared memory (%v) is not faster than through the NICs (%v)", s.Human(), r.Human())
	}
	wire := float64(machine.DefaultSpec().Wire.RateMbps) / 8 // MB/s
	last := got[InterNode][len(sizes)-1].MBps
	if last > wire || last < 0.85*wire {
		t.Errorf("1 MB between nodes at %.1f MB/s on a %.0f MB/s wire", last, wire)
	}
	// Deterministic: the same configuration gives the same times.
	again, err := PingPong(defaultConfig(InterNode), sizes)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if again[i] != got[InterNode][i] {
			t.Fatalf("run 2 differs at %d B: %+v, %+v", sizes[i], again[i], got[InterNode][i])
		}
	}
}

// The half-power point is interpolated on a log scale between the sizes
// around half the peak bandwidth.
func TestHalfPower(t *testing.T) {
	for _, tc := range []struct {
		mbps       []float64
		bytes      []int
		want, peak float64
	}{
		{[]float64{10, 50, 100}, []int{100, 1000, 10000}, 1000, 100},
		{[]float64{10, 40, 60, 100}, []int{100, 1000, 10000, 100000}, math.Sqrt(1000 * 10000), 100},
		{[]float64{80, 100}, []int{1, 2}, 1, 100},
	} {
		var pts []PingPongPoint
		for i := range tc.mbps {
			pts = append(pts, PingPongPoint{Bytes: tc.bytes[i], MBps: tc.mbps[i]})
		}
		n, peak := HalfPower(pts)
		if math.Abs(n-tc.want) > 1e-6*tc.want || peak != tc.peak {
			t.Errorf("%v: n½ = %g, peak %g; want %g, %g", tc.mbps, n, peak, tc.want, tc.peak)
		}
	}
}

// LogGP on each path: every parameter measured and positive where it must
// be, the gap no shorter than the send overhead, and 1/G
// between nodes the wire's payload rate (less than the line rate, more
// than 85 % of it).
func TestLogGP(t *testing.T) {
	for _, p := range Paths {
		l, err := MeasureLogGP(defaultConfig(p))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: RTT %v, o_s %v, o_r %v, L %d ps, g %v, G %.1f ps/B (%.1f MB/s)", p, l.RTT.Human(), l.Os.Human(), l.Or.Human(), l.L, l.Gap.Human(), l.G, l.GMBps())
		if l.RTT == 0 || l.Os == 0 || l.Or == 0 || l.Gap == 0 || l.G <= 0 {
			t.Fatalf("%s: %+v", p, l)
		}
		// Back-to-back sends each cost the sender at least its overhead:
		// the gap, measured from bursts, is no shorter than o_s, measured
		// from sends far apart.
		if l.Gap < l.Os {
			t.Errorf("%s: g = %v shorter than o_s = %v", p, l.Gap.Human(), l.Os.Human())
		}
		if l.Os >= l.RTT || l.Or >= l.RTT {
			t.Errorf("%s: an overhead as long as the round trip: %+v", p, l)
		}
	}
	l, err := MeasureLogGP(defaultConfig(InterNode))
	if err != nil {
		t.Fatal(err)
	}
	wire := float64(machine.DefaultSpec().Wire.RateMbps) / 8
	if l.GMBps() > wire || l.GMBps() < 0.85*wire {
		t.Errorf("1/G between nodes %.1f MB/s on a %.0f MB/s wire", l.GMBps(), wire)
	}
	if l.L <= int64(machine.DefaultSpec().Wire.LatencyPS) {
		t.Errorf("L = %d ps between nodes is not even the wire's latency", l.L)
	}
}
