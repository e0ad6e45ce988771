package collective

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// client is a test's message layer on one node: it writes its packets into
// the tree as room allows, reads the results, and arms the barrier at the
// given times.
type client struct {
	u        *sim.Unit
	nd       *Node
	send     []Packet
	got      []Packet
	gotAt    []sim.Tick
	armAt    []sim.Tick
	armed    []sim.Tick
	released []sim.Tick
	then     func(c *client, now sim.Tick) // runs when a result arrives
}

func (c *client) Tick(now sim.Tick) bool {
	for len(c.send) > 0 && c.nd.Inj.Ready() {
		c.nd.Inj.Send(c.send[0])
		c.send = c.send[1:]
	}
	for c.nd.Rec.Valid() {
		c.got = append(c.got, c.nd.Rec.Recv())
		c.gotAt = append(c.gotAt, now)
		if c.then != nil {
			c.then(c, now)
		}
	}
	if len(c.armAt) > 0 && c.armAt[0] <= now && c.nd.Arm.Ready() {
		c.nd.Arm.Send(struct{}{})
		c.armed = append(c.armed, now)
		c.armAt = c.armAt[1:]
	}
	if len(c.armAt) > 0 && c.armAt[0] > now {
		c.u.WakeAt(c.armAt[0])
	}
	for c.nd.Release.Valid() {
		c.nd.Release.Recv()
		c.released = append(c.released, now)
	}
	return len(c.send) > 0
}

type rig struct {
	w    *sim.World
	tree *Tree
	cl   []*client
}

// newRig builds n nodes, each a domain with a 700 MHz clock and a client.
func newRig(t testing.TB, n int, spec Spec, partitions int) *rig {
	t.Helper()
	w := sim.NewWorld(1, sim.Partitions(partitions))
	period, _ := sim.NearestPeriodOfMHz(700)
	r := &rig{w: w}
	var units []*sim.Unit
	for i := 0; i < n; i++ {
		eng := w.Domain(fmt.Sprintf("node%d", i))
		c := &client{}
		c.u = eng.NewClock("clk", period, 0).Add(fmt.Sprintf("node[%d].ml", i), c)
		units = append(units, c.u)
		r.cl = append(r.cl, c)
	}
	tree, err := New("coll", units, spec)
	if err != nil {
		t.Fatal(err)
	}
	r.tree = tree
	for i, c := range r.cl {
		c.nd = tree.Nodes[i]
	}
	return r
}

// TestReductions reduces packets on trees of several sizes with every
// operation and checks every node's result against the reduction done
// here, for a stream of packets (the ALU combines the k-th of each node).
func TestReductions(t *testing.T) {
	for _, n := range []int{1, 2, 7, 13, 64} {
		for op := OpAdd; op < numOps; op++ {
			t.Run(fmt.Sprintf("%d nodes %v", n, op), func(t *testing.T) {
				r := newRig(t, n, DefaultSpec(), 1)
				rng := sim.NewRand(uint64(n), "test")
				const packets = 5
				want := make([][Words]uint64, packets)
				for k := 0; k < packets; k++ {
					for i, c := range r.cl {
						p := Packet{Op: op}
						for w := range p.W {
							p.W[w] = rng.Uint64() >> (w % 40)
						}
						if i == 0 {
							want[k] = p.W
						} else {
							op.apply(&want[k], &p.W)
						}
						c.send = append(c.send, p)
					}
				}
				r.w.Run(sim.S)
				for i, c := range r.cl {
					if len(c.got) != packets {
						t.Fatalf("node %d got %d results, want %d", i, len(c.got), packets)
					}
					for k, p := range c.got {
						if p.W != want[k] || p.Mismatch {
							t.Fatalf("node %d result %d wrong (mismatch %v)", i, k, p.Mismatch)
						}
					}
				}
			})
		}
	}
}

// TestBroadcast has one node contribute data and the rest zeros with OR:
// every node receives the data.
func TestBroadcast(t *testing.T) {
	for _, root := range []int{0, 5, 12} {
		r := newRig(t, 13, DefaultSpec(), 1)
		var data [Words]uint64
		for w := range data {
			data[w] = uint64(w)*0x9e3779b97f4a7c15 ^ uint64(root)
		}
		for i, c := range r.cl {
			p := Packet{Op: OpOr}
			if i == root {
				p.W = data
			}
			c.send = append(c.send, p)
		}
		r.w.Run(sim.S)
		for i, c := range r.cl {
			if len(c.got) != 1 || c.got[0].W != data {
				t.Fatalf("broadcast from %d: node %d did not receive the data", root, i)
			}
		}
	}
}

// TestMismatch flags a result whose contributions asked for different
// operations.
func TestMismatch(t *testing.T) {
	r := newRig(t, 5, DefaultSpec(), 1)
	for i, c := range r.cl {
		op := OpAdd
		if i == 4 {
			op = OpXor
		}
		c.send = append(c.send, Packet{Op: op})
	}
	r.w.Run(sim.S)
	for i, c := range r.cl {
		if len(c.got) != 1 || !c.got[0].Mismatch {
			t.Fatalf("node %d: mismatch not flagged", i)
		}
	}
}

// TestStreamRate streams packets through the tree and checks that
// results reach a leaf one per (256 + 10) · 2 cycles: η × 0.5 B/cycle.
func TestStreamRate(t *testing.T) {
	spec := DefaultSpec()
	r := newRig(t, 15, spec, 1)
	const n = 30
	for _, c := range r.cl {
		for k := 0; k < n; k++ {
			c.send = append(c.send, Packet{Op: OpAdd})
		}
	}
	r.w.Run(sim.S)
	period, _ := sim.NearestPeriodOfMHz(700)
	leaf := r.cl[14]
	want := sim.Tick(spec.PacketCycles()) * period
	for k := 5; k < n; k++ {
		if d := leaf.gotAt[k] - leaf.gotAt[k-1]; d != want {
			t.Fatalf("results %d and %d %v apart, want %v", k-1, k, d, want)
		}
	}
}

// TestFloatSum runs the two-pass floating-point sum: the exponents' maximum,
// then the aligned mantissas' sum. Values of one scale sum exactly, equal
// to the serial sum; values of any scale sum to within the fixed point's
// resolution of the exact sum.
func TestFloatSum(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		val   func(rng *sim.Rand) float64
		exact bool
	}{
		{"one scale", 64, func(rng *sim.Rand) float64 {
			return float64(int64(rng.Uint64()>>34)-(1<<29)) / (1 << 20)
		}, true},
		{"mixed signs and scales", 13, func(rng *sim.Rand) float64 {
			return math.Ldexp(float64(rng.Uint64()>>11)/(1<<53)-0.5, int(rng.Uint32N(40))-20)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.n, DefaultSpec(), 2)
			rng := sim.NewRand(3, tc.name)
			vals := make([][]float64, tc.n)
			for i := range vals {
				for w := 0; w < Words; w++ {
					vals[i] = append(vals[i], tc.val(rng))
				}
			}
			sums := make([][]float64, tc.n)
			for i, c := range r.cl {
				i := i
				c.send = append(c.send, ExponentPacket(vals[i]))
				c.then = func(c *client, now sim.Tick) {
					switch len(c.got) {
					case 1:
						c.send = append(c.send, MantissaPacket(vals[i], c.got[0], tc.n))
						c.u.WakeAt(now + 1)
					case 2:
						sums[i] = FloatSums(c.got[1], c.got[0], tc.n, Words)
					}
				}
			}
			r.w.Run(sim.S)
			for w := 0; w < Words; w++ {
				serial := 0.0
				exact := new(big.Float).SetPrec(2000)
				maxAbs := 0.0
				for i := range vals {
					serial += vals[i][w]
					exact.Add(exact, new(big.Float).SetFloat64(vals[i][w]))
					maxAbs = max(maxAbs, math.Abs(vals[i][w]))
				}
				ex, _ := exact.Float64()
				for i := range sums {
					got := sums[i][w]
					if got != sums[0][w] {
						t.Fatalf("word %d: node %d has %v, node 0 %v", w, i, got, sums[0][w])
					}
					if tc.exact && got != serial {
						t.Fatalf("word %d: %v, serial sum %v", w, got, serial)
					}
					// Each value loses less than one unit of the fixed point.
					unit := math.Ldexp(maxAbs, -(61 - headroom(tc.n) - 1))
					if math.Abs(got-ex) > float64(tc.n)*unit {
						t.Fatalf("word %d: %v, exact sum %v (more than %d units of %g apart)", w, got, ex, tc.n, unit)
					}
				}
			}
		})
	}
}

// TestBarrier arms the barrier at random times on every node, several
// rounds, and checks that no node is released before the last one armed,
// and every node within 2 · depth hops of it.
func TestBarrier(t *testing.T) {
	for _, n := range []int{1, 2, 9, 64} {
		t.Run(fmt.Sprintf("%d nodes", n), func(t *testing.T) {
			spec := DefaultSpec()
			r := newRig(t, n, spec, 1)
			rng := sim.NewRand(uint64(n), "barrier")
			period, _ := sim.NearestPeriodOfMHz(700)
			const rounds = 4
			for k := 0; k < rounds; k++ {
				for _, c := range r.cl {
					c.armAt = append(c.armAt, sim.Tick(k)*10*sim.US+sim.Tick(rng.Uint32N(3000))*sim.NS/1000)
				}
			}
			r.w.Run(sim.S)
			lat := sim.Tick(spec.BarrierLatency(r.tree.Depth())) * period
			for k := 0; k < rounds; k++ {
				last := sim.Tick(0)
				for _, c := range r.cl {
					last = max(last, c.armed[k])
				}
				for i, c := range r.cl {
					if len(c.released) != rounds {
						t.Fatalf("node %d released %d times, want %d", i, len(c.released), rounds)
					}
					d := c.released[k] - last
					if c.released[k] < last || d > lat+3*period {
						t.Fatalf("round %d node %d released %v after the last arm, want at most %v", k, i, d, lat)
					}
				}
			}
		})
	}
}

// TestPartitions runs reductions and barriers on 1, 2 and 4 goroutines with
// the same results and times.
func TestPartitions(t *testing.T) {
	var ref string
	for _, parts := range []int{1, 2, 4} {
		r := newRig(t, 21, DefaultSpec(), parts)
		for i, c := range r.cl {
			for k := 0; k < 4; k++ {
				c.send = append(c.send, Packet{Op: OpAdd, W: [Words]uint64{uint64(i*k + 1)}})
			}
			c.armAt = []sim.Tick{sim.Tick(i) * 7 * sim.NS}
		}
		r.w.Run(sim.S)
		var b strings.Builder
		for i, c := range r.cl {
			fmt.Fprintln(&b, i, c.gotAt, c.released)
			for _, p := range c.got {
				fmt.Fprintln(&b, p.W[0], p.ID)
			}
		}
		if ref == "" {
			ref = b.String()
		} else if b.String() != ref {
			t.Fatalf("%d partitions differ from one", parts)
		}
	}
}

// TestBadSpec names the field out of range.
func TestBadSpec(t *testing.T) {
	s := DefaultSpec()
	s.BufferPackets = 0
	if _, err := New("coll", nil, s); err == nil || !strings.Contains(err.Error(), "collective.buffer_packets: 0 out of range (1 to 1024)") {
		t.Fatalf("got %v", err)
	}
	if _, err := New("coll", nil, DefaultSpec()); err == nil || !strings.Contains(err.Error(), "no nodes") {
		t.Fatalf("got %v", err)
	}
}

// TestLatency checks one reduction's latency on trees of several depths:
// two tree hops (up and down) per level, then the root's pipeline and the
// packet streaming into the reception FIFO.
func TestLatency(t *testing.T) {
	spec := DefaultSpec()
	period, _ := sim.NearestPeriodOfMHz(700)
	for _, n := range []int{2, 13, 64} {
		r := newRig(t, n, spec, 1)
		for _, c := range r.cl {
			c.send = append(c.send, Packet{Op: OpAdd})
		}
		r.w.Run(sim.S)
		last := sim.Tick(0)
		for _, c := range r.cl {
			last = max(last, c.gotAt[0])
		}
		want := 2*r.tree.Depth()*(spec.WireCycles+spec.RouterCycles) + spec.RouterCycles + spec.PacketCycles() + 1
		if got := int(last / period); got != want {
			t.Fatalf("%d nodes (depth %d): last result after %d cycles, want %d", n, r.tree.Depth(), got, want)
		}
	}
}
