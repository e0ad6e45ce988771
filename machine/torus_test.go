package machine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// torusSpec is a cluster of nodes on a Gemini-class torus of dims (zero:
// chosen), 10 GB/s host wires.
func torusSpec(nodes, cores int, dims [3]int, transport string) machine.Spec {
	s := machine.DefaultSpec()
	s.Nodes, s.Cores, s.Transport = nodes, cores, transport
	s.Topology = machine.TopologyTorus
	s.Torus = machine.GeminiTorus(dims[0], dims[1], dims[2])
	s.Wire.RateMbps, s.Wire.LatencyPS = 80_000, 50*sim.NS
	return s
}

// frameKey is what identifies a frame on its way: its transaction and
// its length.
type frameKey struct {
	id  sim.TxnID
	len int
}

// TestTorusAllToAll has every core of every node put buffers of 1 byte to
// 3 KB (one to four frames of up to 1 KB, one to five torus packets each)
// into every other node, and checks that every frame a NIC sent reached
// the NIC it was for exactly once, whole and in the order sent between the
// two nodes, and that the data landed: on tori, meshes and uneven shapes,
// on both transports; and on links 80 times slower than the host wires,
// where the injection FIFOs fill and hold the NICs back. With two nodes a
// router (as a Gemini ASIC has) the same holds, frames between the two
// nodes of a router passing across it without the torus.
func TestTorusAllToAll(t *testing.T) {
	for _, tc := range []struct {
		nodes     int
		dims      [3]int
		transport string
		slow      bool
		perRouter int
	}{
		{8, [3]int{2, 2, 2}, machine.TransportRC, false, 1},
		{12, [3]int{3, 2, 2}, machine.TransportSRD, false, 1},
		{9, [3]int{0, 0, 0}, machine.TransportRC, false, 1}, // chosen: 3×3×1
		{5, [3]int{5, 1, 1}, machine.TransportSRD, false, 1},
		{8, [3]int{4, 2, 1}, machine.TransportRC, true, 1},
		{8, [3]int{2, 2, 1}, machine.TransportRC, false, 2},
		{12, [3]int{0, 0, 0}, machine.TransportSRD, false, 2}, // chosen: 3×2×1 routers
		{8, [3]int{2, 2, 1}, machine.TransportRC, true, 2},
	} {
		t.Run(fmt.Sprintf("%d nodes %v %s slow %v per router %d", tc.nodes, tc.dims, tc.transport, tc.slow, tc.perRouter), func(t *testing.T) {
			const cores, size = 2, 3 << 10
			s := torusSpec(tc.nodes, cores, tc.dims, tc.transport)
			s.NodesPerRouter = tc.perRouter
			if tc.slow {
				s.Torus.CyclesPerByte, s.Torus.BytesPerCycle = 8, 0 // 125 MB/s
				// On links this slow an ACK can wait longer than the
				// 200 µs default behind the frames ahead of it (a router
				// that injects two nodes' frames; a ring, whose escape
				// buffers hold whole-packet slots), so the timeout is
				// one that congestion does not reach: this test is about
				// delivery, not about spurious retransmissions.
				s.NIC.RetransmitPS = 5 * sim.MS
			}
			c := newCluster(t, s)
			// Frames per (source, destination) as they go up to the
			// torus and as they come down from it.
			sent := map[[2]int][]frameKey{}
			got := map[[2]int][]frameKey{}
			for _, w := range c.Wires {
				name := w.Unit().Name()
				into := sent
				if strings.HasPrefix(name, "net.down") {
					into = got
				}
				w.AddTap(func(_ sim.Tick, f *nic.Frame, lost bool) {
					if lost {
						t.Errorf("%s lost a frame", name)
					}
					k := [2]int{f.SrcNode, f.DstNode}
					into[k] = append(into[k], frameKey{f.ID, f.Len()})
				})
			}
			rw := iommu.Perm{Bits: pte.R | pte.W}
			bufs := make([]uint64, tc.nodes)
			for _, n := range c.Nodes {
				bufs[n.ID] = n.Alloc(uint64(tc.nodes * cores * size))
				if err := n.Register(bufs[n.ID], uint64(tc.nodes*cores*size), rw); err != nil {
					t.Fatal(err)
				}
				for k := 0; k < cores; k++ {
					pat := make([]byte, size)
					for i := range pat {
						pat[i] = byte(n.ID*31 + k*7 + i)
					}
					n.Mem.Write(bufs[n.ID]+uint64((n.ID*cores+k)*size), pat)
				}
			}
			length := func(src, k, dst int) int { return 1 + (src*131+k*71+dst*37)%size }
			for _, n := range c.Nodes {
				for k := 0; k < cores; k++ {
					n, k := n, k
					verbs.Spawn(n, k, "putter", func(x *verbs.Ctx) {
						at := uint64((n.ID*cores + k) * size)
						var ws []verbs.WR
						for d := range c.Nodes {
							if d != n.ID {
								ws = append(ws, x.Put(d, bufs[n.ID]+at, bufs[d]+at, length(n.ID, k, d)))
							}
						}
						for _, w := range ws {
							if _, err := x.Wait(w); err != nil {
								t.Error(err)
							}
						}
					})
				}
			}
			c.Run(10*sim.MS, c.AppsDone)
			if !c.AppsDone() {
				t.Fatalf("did not finish: %s", c.TransportReport(4))
			}
			if r := c.TransportReport(4); r != "" {
				t.Fatalf("transport: %s", r)
			}
			if e := c.TorusErrors(); e != 0 {
				t.Fatalf("%d packets out of order for their frame", e)
			}
			frames := 0
			for k, up := range sent {
				down := got[k]
				if len(down) != len(up) {
					t.Fatalf("%d → %d: %d frames sent, %d delivered", k[0], k[1], len(up), len(down))
				}
				for i := range up {
					if up[i] != down[i] {
						t.Fatalf("%d → %d: frame %d sent %+v, delivered %+v", k[0], k[1], i, up[i], down[i])
					}
				}
				frames += len(up)
			}
			if len(got) != len(sent) {
				t.Fatalf("frames delivered between %d pairs of nodes, sent between %d", len(got), len(sent))
			}
			for _, n := range c.Nodes {
				for src := range c.Nodes {
					if src == n.ID {
						continue
					}
					for k := 0; k < cores; k++ {
						l := length(src, k, n.ID)
						b := make([]byte, l)
						n.Mem.Read(bufs[n.ID]+uint64((src*cores+k)*size), b)
						for i, v := range b {
							if v != byte(src*31+k*7+i) {
								t.Fatalf("node %d: byte %d of %d's core %d's put is %#x", n.ID, i, src, k, v)
							}
						}
					}
				}
			}
			if hops := statValue(c, "net.torus.node[0].router.delivered"); hops == 0 {
				t.Fatal("node 0's router delivered nothing")
			}
			// On slow links frames waited for room in the injection FIFOs.
			full, local := uint64(0), uint64(0)
			for i := range c.Nodes {
				if i < tc.nodes/tc.perRouter {
					full += statValue(c, fmt.Sprintf("net.torus.node[%d].adapter.fifo_full", i))
					if tc.perRouter > 1 {
						local += statValue(c, fmt.Sprintf("net.torus.node[%d].adapter.local", i))
					}
				}
			}
			if tc.slow && full == 0 {
				t.Fatal("slow links, and no frame ever waited for an injection FIFO")
			}
			// Two nodes a router: the frames between router-mates (both
			// ways, requests and ACKs) crossed it, none over the torus.
			if want := len(sent[[2]int{0, 1}]) + len(sent[[2]int{1, 0}]); tc.perRouter > 1 && (local == 0 || local < uint64(want)) {
				t.Fatalf("%d frames passed across routers, node 0 ↔ 1 alone sent %d", local, want)
			}
			t.Logf("%d frames, %v", frames, c.Now())
		})
	}
}

// TestTorusDims chooses the torus nearest a cube for a node count.
func TestTorusDims(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		want  [3]int
	}{
		{2, [3]int{2, 1, 1}},
		{8, [3]int{2, 2, 2}},
		{12, [3]int{3, 2, 2}},
		{32, [3]int{4, 4, 2}},
		{64, [3]int{4, 4, 4}},
		{256, [3]int{8, 8, 4}},
		{7, [3]int{7, 1, 1}},
		{4096, [3]int{16, 16, 16}},
	} {
		if got := machine.TorusDims(tc.nodes); got != tc.want {
			t.Errorf("%d nodes: %v, want %v", tc.nodes, got, tc.want)
		}
	}
}

// TestTorusBadSpec: a torus that does not hold the cluster's nodes, or
// several NICs a node on it, is an error naming it.
func TestTorusBadSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*machine.Spec)
		want string
	}{
		{"dims not the nodes", func(s *machine.Spec) { s.Torus.Dims = [3]int{2, 2, 1} }, "torus.dims: 2×2×1 is 4 nodes, the cluster has 8"},
		{"two NICs", func(s *machine.Spec) { s.NICs = 2 }, "nics: 2 NICs a node on a torus network"},
		{"bad link", func(s *machine.Spec) { s.Torus.BytesPerCycle = 3 }, "torus.bytes_per_cycle: 3"},
		{"two a router, dims of nodes", func(s *machine.Spec) { s.NodesPerRouter = 2; s.Torus.Dims = [3]int{2, 2, 2} }, "torus.dims: 2×2×2 is 8 routers of 2 nodes, the cluster has 8"},
		{"three a router", func(s *machine.Spec) { s.NodesPerRouter = 3 }, "torus: 3 nodes a router for 8 nodes (1..2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := torusSpec(8, 1, [3]int{}, machine.TransportRC)
			tc.edit(&s)
			_, err := machine.New(sim.NewEngine(1), s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestTorusTiesSplit: on rings of even length, the packets that go
// halfway round are split between the two directions (by the source's
// coordinate), so the + and − links carry the same bytes when every node
// puts the same to every other. With ties: plus every tie goes +, and a
// ring of 4 carries three times as much on its + links as on its −
// links (a ring of 6 twice, of 8 5/3).
func TestTorusTiesSplit(t *testing.T) {
	for _, tc := range []struct {
		dims [3]int
		ties string
	}{
		{[3]int{4, 1, 1}, ""}, {[3]int{6, 1, 1}, machine.TiesSplit}, {[3]int{4, 4, 1}, ""}, {[3]int{8, 2, 2}, ""},
		{[3]int{4, 1, 1}, machine.TiesPlus}, {[3]int{8, 2, 2}, machine.TiesPlus},
	} {
		dims := tc.dims
		t.Run(fmt.Sprintf("%dx%dx%d %s", dims[0], dims[1], dims[2], tc.ties), func(t *testing.T) {
			nodes := dims[0] * dims[1] * dims[2]
			const size = 2 << 10
			s := torusSpec(nodes, 1, dims, machine.TransportSRD)
			s.TorusTies = tc.ties
			c := newCluster(t, s)
			rw := iommu.Perm{Bits: pte.R | pte.W}
			bufs := make([]uint64, nodes)
			for _, n := range c.Nodes {
				bufs[n.ID] = n.Alloc(uint64(nodes * size))
				if err := n.Register(bufs[n.ID], uint64(nodes*size), rw); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range c.Nodes {
				n := n
				verbs.Spawn(n, 0, "putter", func(x *verbs.Ctx) {
					at := uint64(n.ID * size)
					var ws []verbs.WR
					for d := range c.Nodes {
						if d != n.ID {
							ws = append(ws, x.Put(d, bufs[n.ID]+at, bufs[d]+at, size))
						}
					}
					for _, w := range ws {
						if _, err := x.Wait(w); err != nil {
							t.Error(err)
						}
					}
				})
			}
			c.Run(10*sim.MS, c.AppsDone)
			if !c.AppsDone() {
				t.Fatalf("did not finish: %s", c.TransportReport(4))
			}
			for d, dim := range "xyz" {
				if dims[d] <= 2 {
					continue
				}
				var plus, minus uint64
				for i := range c.Nodes {
					plus += statValue(c, fmt.Sprintf("net.torus.node[%d].%cp.payload_bytes", i, dim))
					minus += statValue(c, fmt.Sprintf("net.torus.node[%d].%cm.payload_bytes", i, dim))
				}
				if tc.ties == machine.TiesPlus {
					// Ties + : the + links carry the ties' hops on top.
					if d == 0 && float64(plus) < 1.5*float64(minus) {
						t.Errorf("%c, every tie +: %d payload bytes on the + links, only %d on the − links", dim, plus, minus)
					}
					continue
				}
				if plus == 0 || minus == 0 || float64(max(plus, minus)) > 1.02*float64(min(plus, minus)) {
					t.Errorf("%c: %d payload bytes on the + links, %d on the − links", dim, plus, minus)
				}
			}
		})
	}
}
