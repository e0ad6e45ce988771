// Package micro holds the microbenchmarks the message-layer papers measured
// their layers with, run on the machine through a message layer (the MPI
// core or AM-II, behind the two-party Side interface): ping-pong
// latency and bandwidth over message size, with the half-power point, and
// the LogGP parameters (L, o_s, o_r, g, G and the round-trip time) measured
// the way Culler et al. measure LogP — from the times the processes see, not
// computed from the configuration.
package micro

import (
	"fmt"
	"math"

	"github.com/aaemu/aaemu/msg/am2"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

// Path is where the two ranks of a microbenchmark sit, and so which
// transport carries their messages.
type Path string

// The paths.
const (
	IntraNode Path = "shm"  // two cores of node 0: the shared-memory transport
	InterNode Path = "rdma" // node 0 and node 1: the RDMA NICs
)

// Paths lists the paths in the order tables give them.
var Paths = []Path{IntraNode, InterNode}

// ParsePath reads a path's name.
func ParsePath(s string) (Path, error) {
	for _, p := range Paths {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("path %q: want shm (two cores of a node) or rdma (two nodes)", s)
}

// Config is a microbenchmark's machine and message layer.
type Config struct {
	Machine machine.Spec
	// Layer is the message layer measured (nil: the MPI core).
	Layer Layer
	MPI   mpi.Config // the MPI core's transports and their protocol parameters
	// AM2Poll is the AM-II system's protocols and polling policy (layer
	// am2; zero: both protocols, adaptive polling).
	AM2Poll am2.Policy
	Path    Path
	Seed    uint64
	// Iters is how many round trips (or bursts) a measurement averages
	// after one to warm up (default 4). The simulator has no noise: more
	// only averages over the few effects that differ from one iteration to
	// the next (queue positions, credits).
	Iters int
}

func (c Config) iters() int {
	if c.Iters <= 0 {
		return 4
	}
	return c.Iters
}

// layer is the configuration's layer (the MPI core by default).
func (c Config) layer() Layer {
	if c.Layer == nil {
		return MPI
	}
	return c.Layer
}

// run runs body on the two sides placed on the path on a fresh machine.
func (c Config) run(body func(s Side)) error { return c.layer().Run(c, body) }

// PingPongPoint is one message size of a ping-pong.
type PingPongPoint struct {
	Bytes     int
	RoundTrip sim.Tick // mean of the measured round trips
	OneWay    sim.Tick // half the round trip
	// MBps is the bandwidth a one-way transfer of this size achieves,
	// bytes / one-way time, in 10^6 bytes per second.
	MBps float64
}

// PingPong measures, for every size, the round trip of a message there and
// back between the two ranks (rank 0 sends, rank 1 receives and sends the
// same size back), averaged over the iterations after a warm-up one.
// Sizes above 64 kB take one measured round trip.
func PingPong(c Config, sizes []int) ([]PingPongPoint, error) {
	largest := 0
	for _, s := range sizes {
		if s < 0 {
			return nil, fmt.Errorf("micro: a message of %d bytes", s)
		}
		largest = max(largest, s)
	}
	out := make([]PingPongPoint, len(sizes))
	err := c.run(func(comm Side) {
		buf := comm.Alloc(max(largest, 1))
		for i, size := range sizes {
			b := buf.Slice(0, size)
			iters := c.iters()
			if size > 64<<10 {
				iters = 1
			}
			var start sim.Tick
			for k := 0; k <= iters; k++ {
				if k == 1 {
					start = comm.Now() // after the warm-up round trip
				}
				if comm.Rank() == 0 {
					comm.Send(b, i)
					comm.Recv(b, i)
				} else {
					comm.Recv(b, i)
					comm.Send(b, i)
				}
			}
			if comm.Rank() == 0 {
				rt := (comm.Now() - start) / sim.Tick(iters)
				out[i] = PingPongPoint{Bytes: size, RoundTrip: rt, OneWay: rt / 2, MBps: mbps(size, rt/2)}
			}
		}
	})
	return out, err
}

// must panics with a layer's error inside a side: the benchmark's programs
// send what the other receives, so an error is a bug of the layer, and the
// layer's Run reports the side that stopped.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

func mbps(bytes int, t sim.Tick) float64 {
	if t <= 0 {
		return 0
	}
	return float64(bytes) / (float64(t) / 1e12) / 1e6
}

// HalfPower is the half-power point of a ping-pong: the peak bandwidth
// and the message size at which the bandwidth first reaches half of it
// (n½), interpolated between the measured sizes on a log scale.
func HalfPower(pts []PingPongPoint) (bytes, peakMBps float64) {
	for _, p := range pts {
		peakMBps = math.Max(peakMBps, p.MBps)
	}
	half := peakMBps / 2
	for i, p := range pts {
		if p.MBps < half {
			continue
		}
		if i == 0 || pts[i-1].Bytes <= 0 {
			return float64(p.Bytes), peakMBps
		}
		a, b := pts[i-1], p
		f := (half - a.MBps) / (b.MBps - a.MBps)
		return math.Exp(math.Log(float64(a.Bytes)) + f*(math.Log(float64(b.Bytes))-math.Log(float64(a.Bytes)))), peakMBps
	}
	return math.NaN(), peakMBps
}

// LogGP are the LogGP parameters of a path, as the microbenchmark measures
// them.
type LogGP struct {
	RTT sim.Tick // round trip of a small message
	Os  sim.Tick // the sender's time in a send of a small message
	Or  sim.Tick // the receiver's time in a receive of a message already there
	// L is the latency left of half the round trip, RTT/2 − o_s − o_r, in
	// ps: negative where the two overheads overlap the transfer (a
	// shared-memory receiver polls while the sender still writes).
	L int64
	// Gap is g: the time between two small messages a rank sends back to
	// back, in steady state.
	Gap sim.Tick
	// G is the time per byte of long messages sent back to back, in ps
	// per byte.
	G float64
	// Small and Long are the message sizes the parameters were measured
	// with.
	Small, Long1, Long2 int
}

// GMBps is 1/G, the long-message bandwidth in 10^6 bytes per second.
func (l LogGP) GMBps() float64 {
	if l.G <= 0 {
		return 0
	}
	return 1e12 / l.G / 1e6
}

// The sizes the LogGP measurement uses: a small (eager) message, and two
// long ones that both travel by rendezvous, so their difference is the
// time per byte alone.
const (
	loggpSmall = 8
	loggpLong1 = 64 << 10
	loggpLong2 = 256 << 10
	burstShort = 8  // messages in the shorter burst
	burstLong  = 32 // and in the longer
)

// MeasureLogGP measures the path's LogGP parameters:
//   - RTT: a ping-pong of a small message;
//   - o_s: the time rank 0 spends in Send of a small message when the
//     messages are spaced far apart (no gap limits it);
//   - o_r: the time rank 1 spends in Recv of a message it lets arrive first;
//   - g: the difference between bursts of k₂ and k₁ small messages sent back
//     to back and acknowledged by one reply, divided by k₂ − k₁ (the
//     differential cancels the round trip and start-up);
//   - G: the same gap for two long sizes, its difference divided by the
//     difference of the sizes;
//   - L = RTT/2 − o_s − o_r.
func MeasureLogGP(c Config) (LogGP, error) {
	l := LogGP{Small: loggpSmall, Long1: loggpLong1, Long2: loggpLong2}
	pp, err := PingPong(c, []int{loggpSmall})
	if err != nil {
		return l, err
	}
	l.RTT = pp[0].RoundTrip
	// Far enough apart that each message has arrived, and its effects
	// have settled, before the next.
	spacing := 4*l.RTT + 10*sim.US
	iters := c.iters()
	err = c.run(func(comm Side) {
		b := comm.Alloc(loggpSmall)
		start := comm.Now()
		for k := 0; k <= iters; k++ {
			at := start + sim.Tick(k)*spacing
			if comm.Rank() == 0 {
				sleepUntil(comm, at)
				t0 := comm.Now()
				comm.Send(b, k)
				if k > 0 {
					l.Os += comm.Now() - t0
				}
			} else {
				sleepUntil(comm, at+spacing/2)
				t0 := comm.Now()
				comm.Recv(b, k)
				if k > 0 {
					l.Or += comm.Now() - t0
				}
			}
		}
	})
	if err != nil {
		return l, err
	}
	l.Os /= sim.Tick(iters)
	l.Or /= sim.Tick(iters)
	l.L = int64(l.RTT/2) - int64(l.Os) - int64(l.Or)
	short, err := burst(c, loggpSmall, burstShort)
	if err != nil {
		return l, err
	}
	long, err := burst(c, loggpSmall, burstLong)
	if err != nil {
		return l, err
	}
	if long <= short {
		return l, fmt.Errorf("micro: a burst of %d messages took %v, one of %d %v: no gap to measure", burstLong, long.Human(), burstShort, short.Human())
	}
	l.Gap = (long - short) / (burstLong - burstShort)
	var g [2]sim.Tick
	for i, n := range []int{loggpLong1, loggpLong2} {
		a, err := burst(c, n, 2)
		if err != nil {
			return l, err
		}
		b, err := burst(c, n, 4)
		if err != nil {
			return l, err
		}
		if b <= a {
			return l, fmt.Errorf("micro: 4 messages of %d B took %v, 2 took %v: no gap to measure", n, b.Human(), a.Human())
		}
		g[i] = (b - a) / 2
	}
	if g[1] <= g[0] {
		return l, fmt.Errorf("micro: the gap of %d B messages (%v) is not above that of %d B ones (%v)", loggpLong2, g[1].Human(), loggpLong1, g[0].Human())
	}
	l.G = float64(g[1]-g[0]) / float64(loggpLong2-loggpLong1)
	return l, nil
}

// burst is the time from rank 0's first send of k messages of size bytes,
// sent back to back (each a non-blocking send, all then waited for), to
// the arrival of rank 1's one-byte reply after it received them all.
func burst(c Config, size, k int) (sim.Tick, error) {
	var t sim.Tick
	err := c.run(func(comm Side) {
		bufs := make([]Buf, k)
		for i := range bufs {
			bufs[i] = comm.Alloc(max(size, 1)).Slice(0, size)
		}
		ack := comm.Alloc(1)
		comm.Barrier()
		if comm.Rank() == 0 {
			t0 := comm.Now()
			comm.SendAll(bufs, 1)
			comm.Recv(ack, 2)
			t = comm.Now() - t0
		} else {
			comm.RecvAll(bufs, 1)
			comm.Send(ack, 2)
		}
	})
	return t, err
}

// sleepUntil lets the side's process wait, without using its core, until
// simulated time at.
func sleepUntil(comm Side, at sim.Tick) {
	if now := comm.Now(); at > now {
		comm.Sleep(at - now)
	}
}
