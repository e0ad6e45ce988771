package bglpaper

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/aaemu/aaemu/collective"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
	"github.com/aaemu/aaemu/workload"
)

// The series of the link figure and of the collective-network figure.
const (
	linkDir    workload.Scheme = "one link, one way"
	nodeAll    workload.Scheme = "one node, 6 links both ways"
	treeReduce workload.Scheme = "allreduce (collective network)"
	treeBar    workload.Scheme = "barrier (global barrier network)"
)

// streamer is a node's traffic source and sink on the torus alone (no
// core, no message layer): it writes its packets into the injection FIFO
// of each one's direction as room allows and takes every packet that
// arrives, noting when, per sending node.
type streamer struct {
	nd    *torus.Node
	queue [][]*torus.Packet // per injection FIFO
	first map[int]sim.Tick  // per source: first and last arrival, packets
	last  map[int]sim.Tick
	count map[int]int
}

func (s *streamer) Tick(now sim.Tick) bool {
	for f := 0; f < torus.NumRecFIFOs; f++ {
		for p := s.nd.Receive(f); p != nil; p = s.nd.Receive(f) {
			src := int(binary.LittleEndian.Uint32(p.Soft[:4]))
			if _, ok := s.first[src]; !ok {
				s.first[src] = now
			}
			s.last[src] = now
			s.count[src]++
		}
	}
	for f := range s.queue {
		for len(s.queue[f]) > 0 {
			err := s.nd.Inject(f, s.queue[f][0])
			if err == torus.ErrFIFOFull {
				break // woken when the router frees room
			}
			if err != nil {
				panic(err)
			}
			s.queue[f] = s.queue[f][1:]
		}
	}
	return false
}

// LinkRates streams packets full packets (240 payload bytes) from the
// centre of a 3×3×3 torus to each of its six neighbours and from each to
// it at once, on the torus alone, and measures in payload bytes per cycle
// the rate of one direction of one link (the centre's x+ link: packets−1
// packets between its first and last arrival) and the centre node's (the
// sum of its twelve directions' rates, each measured so).
func LinkRates(spec torus.Spec, packets int) (link, node float64, err error) {
	if packets < 2 || packets > 1<<16 {
		return 0, 0, fmt.Errorf("bglpaper: link rates over %d packets (2 to 65,536)", packets)
	}
	spec.Dims, spec.Mesh = [3]int{3, 3, 3}, false
	w := sim.NewWorld(1)
	net, err := torus.New(w, "torus", spec)
	if err != nil {
		return 0, 0, err
	}
	st := make([]*streamer, len(net.Nodes))
	for i, nd := range net.Nodes {
		st[i] = &streamer{nd: nd, queue: make([][]*torus.Packet, spec.InjFIFOs), first: map[int]sim.Tick{}, last: map[int]sim.Tick{}, count: map[int]int{}}
		u := nd.Clk.Add(fmt.Sprintf("torus.node[%d].stream", i), st[i])
		nd.NotifyReceive(u)
		nd.NotifyRoom(u)
	}
	centre := net.IndexOf(torus.Coord{1, 1, 1})
	send := func(src, dst, fifo int) {
		for k := 0; k < packets; k++ {
			p := &torus.Packet{Dst: net.CoordOf(dst), Payload: make([]byte, torus.MaxPayload)}
			binary.LittleEndian.PutUint32(p.Soft[:4], uint32(src))
			st[src].queue[fifo] = append(st[src].queue[fifo], p)
		}
	}
	var nbrs []int
	for d := 0; d < 3; d++ {
		for _, s := range []int{1, -1} {
			c := torus.Coord{1, 1, 1}
			c[d] += s
			nb := net.IndexOf(c)
			nbrs = append(nbrs, nb)
			f := 2 * d
			if s < 0 {
				f++
			}
			send(centre, nb, f)
			send(nb, centre, f^1) // the neighbour's link back towards the centre
		}
	}
	w.Run(sim.S)
	period := float64(net.Nodes[0].Clk.Period())
	rate := func(at *streamer, src int) (float64, error) {
		if at.count[src] != packets {
			return 0, fmt.Errorf("bglpaper: %d of %d packets from node %d arrived at node %d", at.count[src], packets, src, at.nd.Index)
		}
		return float64((packets-1)*torus.MaxPayload) / (float64(at.last[src]-at.first[src]) / period), nil
	}
	if link, err = rate(st[nbrs[0]], centre); err != nil {
		return 0, 0, err
	}
	for _, nb := range nbrs {
		out, err := rate(st[nb], centre)
		if err != nil {
			return 0, 0, err
		}
		in, err := rate(st[centre], nb)
		if err != nil {
			return 0, 0, err
		}
		node += out + in
	}
	return link, node, nil
}

// treeClient is a node's use of the collective and barrier networks with
// nothing else: it writes one contribution and arms the barrier at time 0
// and notes when the result and the release arrive.
type treeClient struct {
	nd                *collective.Node
	sent, armed       bool
	result, released  sim.Tick
	gotResult, gotRel bool
}

func (c *treeClient) Tick(now sim.Tick) bool {
	if !c.sent && c.nd.Inj.Ready() {
		c.nd.Inj.Send(collective.Packet{Op: collective.OpAdd, W: [collective.Words]uint64{1}})
		c.sent = true
	}
	if !c.armed && c.nd.Arm.Ready() {
		c.nd.Arm.Send(struct{}{})
		c.armed = true
	}
	for c.nd.Rec.Valid() {
		c.nd.Rec.Recv()
		c.result, c.gotResult = now, true
	}
	for c.nd.Release.Valid() {
		c.nd.Release.Recv()
		c.released, c.gotRel = now, true
	}
	return !c.sent || !c.armed
}

// TreeLatency builds the collective and barrier networks over n nodes
// (each a domain with a 700 MHz clock, as the machine's) and measures, in
// cycles, one allreduce (every node writes its contribution at time 0;
// until the last node has the result, which it checks is n) and one
// barrier (every node arms at 0; until the last is released), and the
// tree's depth.
func TreeLatency(spec collective.Spec, n int) (reduce, barrier float64, depth int, err error) {
	if n < 2 || n > 1<<16 {
		return 0, 0, 0, fmt.Errorf("bglpaper: a collective network of %d nodes (2 to 65,536)", n)
	}
	w := sim.NewWorld(1)
	period, err := sim.NearestPeriodOfMHz(700)
	if err != nil {
		return 0, 0, 0, err
	}
	cl := make([]*treeClient, n)
	units := make([]*sim.Unit, n)
	for i := range cl {
		cl[i] = &treeClient{}
		units[i] = w.Domain(fmt.Sprintf("node%d", i)).NewClock("clk", period, 0).Add(fmt.Sprintf("node[%d].ml", i), cl[i])
	}
	tree, err := collective.New("coll", units, spec)
	if err != nil {
		return 0, 0, 0, err
	}
	for i, c := range cl {
		c.nd = tree.Nodes[i]
	}
	w.Run(sim.S)
	var r, b sim.Tick
	for i, c := range cl {
		if !c.gotResult || !c.gotRel {
			return 0, 0, 0, fmt.Errorf("bglpaper: node %d of %d got no result or no release", i, n)
		}
		r, b = max(r, c.result), max(b, c.released)
	}
	return float64(r) / float64(period), float64(b) / float64(period), tree.Depth(), nil
}

// Network is the link and collective-network figures' set-up: packets a
// link stream, and the collective network's node counts.
type Network struct {
	Packets int
	Nodes   []int
}

// DefaultNetwork: 200 packets a stream; trees up to the full machine's
// 65,536 nodes.
func DefaultNetwork() Network {
	return Network{Packets: 200, Nodes: []int{64, 512, 4096, 65536}}
}

// ReducedNetwork: the test suite's, trees up to 512 nodes (B16 then
// scaled to 65,536 by the measured cost per level).
func ReducedNetwork() Network { return Network{Packets: 20, Nodes: []int{64, 512}} }

// mhz700 is the model's clock in MHz: 700 MHz to the nearest whole
// picosecond of period (1429 ps).
var mhz700 = func() float64 {
	p, err := sim.NearestPeriodOfMHz(700)
	if err != nil {
		panic(err)
	}
	return 1e6 / float64(p)
}()

// FigLink is claims B5 and B6 (L54–L55): a link's payload rate one way
// and its efficiency η against the raw 0.25 B/cycle, and a node's payload
// rate over its six links both ways, measured by streaming full packets
// on the torus alone.
func FigLink(nw Network) *paper.Figure {
	spec := torus.DefaultSpec(3, 3, 3)
	raw := 1 / float64(spec.CyclesPerByte) // B/cycle
	c := paper.NewCustom(paper.Custom{X: []int{nw.Packets}, Schemes: []workload.Scheme{linkDir, nodeAll},
		XLabel: "full packets a stream", YLabel: "payload rate", YUnit: "B/cycle"},
		func(_ context.Context, x int, _ string, s workload.Scheme) (float64, error) {
			link, node, err := LinkRates(spec, x)
			if s == linkDir {
				return link, err
			}
			return node, err
		})
	get := func(pts []paper.Point, s workload.Scheme) float64 {
		for _, p := range series(pts, s) {
			return p.Y
		}
		return math.NaN()
	}
	within := func(v, want, tol float64) bool { return math.Abs(v/want-1) <= tol }
	return &paper.Figure{
		Name:   "link",
		Title:  "torus link and node payload rates, full packets, 3×3×3 torus",
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: "B5 link payload bandwidth, one way", Paper: "154 MB/s", Tolerance: "±1 %",
				Measure: func(pts []paper.Point) (string, bool) {
					v := get(pts, linkDir) * mhz700
					return fmt.Sprintf("%.1f MB/s (%.4f B/cycle)", v, get(pts, linkDir)), within(v, 154, 0.01)
				}},
			{Text: "B5 link efficiency η (payload over raw 0.25 B/cycle)", Paper: "89 %", Tolerance: "±1 %",
				Measure: func(pts []paper.Point) (string, bool) {
					eta := get(pts, linkDir) / raw
					return fmt.Sprintf("%.2f %%", 100*eta), within(eta, 0.89, 0.01)
				}},
			{Text: "B6 node payload bandwidth, 6 links both ways", Paper: "2.64 B/cycle (1.8 GB/s)", Tolerance: "±2 % in B/cycle",
				Measure: func(pts []paper.Point) (string, bool) {
					v := get(pts, nodeAll)
					return fmt.Sprintf("%.3f B/cycle, %.2f GB/s (the paper's 1.8 GB/s is 2.64 B/cycle × 700 MHz = 1.85, rounded)", v, v*mhz700/1000), within(v, 2.64, 0.02)
				}},
		},
	}
}

// FigTree is claim B16 (L37–L38): one allreduce on the collective network
// and one barrier on the global barrier network, against the number of
// nodes (a binary tree: depth log2 n), up to the full machine's 65,536.
// The model's per-level delays (a router's pipeline and a wire, the
// barrier's hop) are assumptions, as the collective network's doc says;
// what this measures is that the latency the tree builds from them is
// their sum over its depth, at the full machine's depth.
func FigTree(nw Network) *paper.Figure {
	spec := collective.DefaultSpec()
	c := paper.NewCustom(paper.Custom{X: nw.Nodes, Schemes: []workload.Scheme{treeReduce, treeBar},
		XLabel: "nodes", LogX: true, YLabel: "latency", YUnit: "µs"},
		func(_ context.Context, x int, _ string, s workload.Scheme) (float64, error) {
			r, b, _, err := TreeLatency(spec, x)
			if s == treeBar {
				r = b
			}
			return r / mhz700, err
		})
	claim := func(s workload.Scheme, paperUS float64) func(pts []paper.Point) (string, bool) {
		return func(pts []paper.Point) (string, bool) {
			ps := series(pts, s)
			if len(ps) == 0 {
				return "no points", false
			}
			lastPt := ps[len(ps)-1]
			depth := func(n int) float64 { return float64(bits.Len(uint(n)) - 1) }
			v, how := lastPt.Y, fmt.Sprintf("measured at %d nodes", lastPt.X)
			if lastPt.X < 1<<16 && len(ps) >= 2 {
				// Scaled: the cost per level from the two largest trees.
				a := ps[len(ps)-2]
				per := (lastPt.Y - a.Y) / (depth(lastPt.X) - depth(a.X))
				v = lastPt.Y + per*(16-depth(lastPt.X))
				how = fmt.Sprintf("scaled from %d nodes to depth 16 by %.3f µs a level", lastPt.X, per)
			} else if lastPt.X < 1<<16 {
				return fmt.Sprintf("%.2f µs at %d nodes, not scaled (one point)", v, lastPt.X), false
			}
			return fmt.Sprintf("%.2f µs at 65,536 nodes (%s)", v, how), math.Abs(v/paperUS-1) <= 0.2
		}
	}
	return &paper.Figure{
		Name:   "tree",
		Title:  "collective network allreduce and global barrier latency against nodes (binary tree)",
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: "B16 collective network latency, full machine", Paper: "2.5 µs", Tolerance: "±20 % at 65,536 nodes", Measure: claim(treeReduce, 2.5)},
			{Text: "B16 barrier latency, full machine", Paper: "1.5 µs", Tolerance: "±20 % at 65,536 nodes", Measure: claim(treeBar, 1.5)},
		},
	}
}
