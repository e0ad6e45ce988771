package bglml

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// AlltoallOrder is how the nodes of an alltoall inject their messages.
type AlltoallOrder uint8

// The orders: MPICH2's two for messages above 256 bytes (L201–L202: its
// algorithms "are essentially designed for multiported systems"), and the
// optimised one of L156.
const (
	// Pairwise is MPICH2's long-message algorithm (and the MPI core's):
	// in step i a node sends to r+i and receives from r−i, and waits for
	// both before the next step.
	Pairwise AlltoallOrder = iota
	// Posted is MPICH2's medium-message algorithm: every send posted at
	// once in the order r+1, r+2, …, each message's packets back to back,
	// by the protocol its size chooses (deterministic eager or
	// rendezvous).
	Posted
	// Spread is the optimised alltoall (L156, L203): every send posted
	// at once, the destinations in a random order of each node's, one
	// packet of each message in turn (Params.Interleave), every packet
	// adaptively routed, paced to the bisection bound (AlltoallPace) and
	// clocked by the node's own reception (AlltoallWindow).
	// Its messages are Unordered (one a pair, into a buffer known from
	// the start): one packet, or adaptive eager at any size without
	// confirmations or rendezvous.
	Spread
)

func (o AlltoallOrder) String() string {
	switch o {
	case Pairwise:
		return "pairwise"
	case Posted:
		return "posted"
	case Spread:
		return "spread"
	}
	return fmt.Sprintf("order%d", uint8(o))
}

// LinkLoad is one directed link's traffic in a run: the node it leaves,
// its port, and the time it was sending.
type LinkLoad struct {
	Node int
	At   torus.Coord
	Port torus.Port
	Busy sim.Tick
}

// AlltoallResult is an alltoall's time (from the start until the last
// node has everything) and every link's load.
type AlltoallResult struct {
	Time  sim.Tick
	Links []LinkLoad
	// Cut is, with AlltoallOptions.Sample, the mean utilisation of the
	// links across the middle of x (both ways) in each interval of the
	// run, and InNet the data packets written but not yet read at each
	// interval's end.
	Cut   []float64
	InNet []int
	// InInj and InRec are, of InNet, those in the injection and the
	// reception FIFOs.
	InInj, InRec []int
	// Escaped is the times an adaptive packet found no dynamic channel
	// with room and took the escape channel, over all routers.
	Escaped uint64
	// Crossings is, with AlltoallOptions.Crossings, where the packets
	// crossed the middle of x.
	Crossings *CutCrossings
}

// CutCrossings is where a run's packets crossed the middle of x (from
// x = X/2−1 to X/2 or back), against their source's and destination's
// (y, z).
type CutCrossings struct {
	// Cycles is, per direction (0: towards x+, 1: towards x−) and cut
	// link (index y + Y·z), the link cycles of the packets that crossed
	// on it.
	Cycles [2][]int64
	// AtSrc, AtDst, AtBoth and Elsewhere count the crossings at the
	// source's (y, z) only, at the destination's only, at both (they are
	// the same) and at neither.
	AtSrc, AtDst, AtBoth, Elsewhere int64
	// Offset counts the crossings by their distance in y and z (hops,
	// |Δy| + |Δz|) from the source's (y, z), and Span the crossing
	// packets by the distance between their source's and destination's.
	Offset, Span []int64
}

// AlltoallOptions are an alltoall's measurements.
type AlltoallOptions struct {
	// Sample: sample the cut's utilisation every so long (0: not).
	Sample sim.Tick
	// Unpaced leaves the Spread order's injection unpaced (its pace is
	// otherwise AlltoallPace's, unless Params.Pace sets one).
	Unpaced bool
	// Deterministic routes the Spread order's packets in dimension order
	// (eager) instead of adaptively.
	Deterministic bool
	// Unwindowed leaves the Spread order's writes unclocked by the
	// node's reception (its window is otherwise AlltoallWindow's,
	// unless Params.Window sets one).
	Unwindowed bool
	// Crossings notes where every packet crosses the middle of x
	// (AlltoallResult.Crossings).
	Crossings bool
}

// Alltoall runs an alltoall of size bytes between every pair of nodes
// through the message layer, every node's layer on its first core, in
// order order (seed: the Spread order's random destinations), and checks
// that every node got every other's block.
func Alltoall(spec bgl.Spec, params Params, costs Costs, size int, order AlltoallOrder, seed int64) (AlltoallResult, error) {
	return AlltoallWith(spec, params, costs, size, order, seed, AlltoallOptions{})
}

// AlltoallWith is Alltoall with measurements.
func AlltoallWith(spec bgl.Spec, params Params, costs Costs, size int, order AlltoallOrder, seed int64, opt AlltoallOptions) (AlltoallResult, error) {
	if opt.Sample < 0 {
		return AlltoallResult{}, fmt.Errorf("bglml: alltoall sampled every %v", opt.Sample)
	}
	if size < 1 || size > MaxMessage {
		return AlltoallResult{}, fmt.Errorf("bglml: alltoall of %d bytes (1 to %d)", size, MaxMessage)
	}
	if order > Spread {
		return AlltoallResult{}, fmt.Errorf("bglml: alltoall order %v (pairwise, posted, spread)", order)
	}
	if order == Spread {
		params.Interleave, params.Adaptive = true, !opt.Deterministic
		if params.Pace == 0 && !opt.Unpaced {
			params.Pace = AlltoallPace(spec, size)
		}
		if params.Window == 0 && !opt.Unwindowed {
			params.Window = AlltoallWindow(spec, size)
		}
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return AlltoallResult{}, err
	}
	n := len(m.Nodes)
	if uint64(n)*uint64(size) > 1<<31 {
		return AlltoallResult{}, fmt.Errorf("bglml: alltoall of %d bytes among %d nodes: %d bytes a node", size, n, n*size)
	}
	block := func(src, dst, k int) byte { return byte(src*131 + dst*17 + k) }
	rng := rand.New(rand.NewSource(seed))
	var end sim.Tick
	var failed error
	recv := make([]uint64, n)
	var all []*Layer
	for i := range m.Nodes {
		i := i
		nd := m.Nodes[i]
		send := nd.Alloc(n * size)
		recv[i] = nd.Alloc(n * size)
		b := make([]byte, size)
		for d := 0; d < n; d++ {
			for k := range b {
				b[k] = block(i, d, k)
			}
			nd.Mem.Write(send+uint64(d*size), b)
		}
		dsts := make([]int, 0, n-1)
		for k := 1; k < n; k++ {
			dsts = append(dsts, (i+k)%n)
		}
		if order == Spread {
			rng.Shuffle(len(dsts), func(a, b int) { dsts[a], dsts[b] = dsts[b], dsts[a] })
		}
		got, sent := 0, 0
		from := make([]bool, n)
		l, err := New(m, i, params, costs, func(src int, _ []byte, sz int) (uint64, func()) {
			return recv[i] + uint64(src*size), func() { got++; from[src] = true }
		})
		if err != nil {
			return AlltoallResult{}, err
		}
		all = append(all, l)
		nd.Cores[0].Spawn("alltoall", func(p *cpu.Proc) {
			post := func(d int) {
				m := &Message{Dst: d, Addr: send + uint64(d*size), Len: size, Done: func() { sent++ }}
				if order == Spread && !opt.Deterministic {
					// One message a pair into a buffer known from the
					// start: no order to keep, and nothing to ask the
					// receiver first (no rendezvous).
					m.Unordered = true
					if l.Choose(size, 0) != OnePacket {
						m.Proto = AdaptiveEager
					}
				}
				if err := l.Send(p, m); err != nil && failed == nil {
					failed = err
				}
			}
			if order == Pairwise {
				for k, d := range dsts {
					post(d)
					src := (i - k - 1 + n) % n
					l.Until(p, func() bool { return sent == k+1 && from[src] })
				}
			} else {
				for _, d := range dsts {
					post(d)
				}
			}
			l.Until(p, func() bool { return got == n-1 && sent == n-1 })
			end = max(end, p.Now())
			l.Until(p, l.Idle)
		})
	}
	var cross *CutCrossings
	if opt.Crossings {
		cross = watchCut(m)
	}
	var cut []float64
	var innet, inInj, inRec []int
	if opt.Sample > 0 {
		cutLinks := cutCounters(m)
		var prev uint64
		for t := opt.Sample; t <= 10*sim.S; t += opt.Sample {
			m.World.Run(t)
			var busy uint64
			for _, c := range cutLinks {
				busy += c.Value()
			}
			cut = append(cut, float64(busy-prev)/float64(opt.Sample)/float64(len(cutLinks)))
			prev = busy
			var w, r uint64
			for _, l := range all {
				w += l.Stats.Packets
				r += l.Stats.Read
			}
			innet = append(innet, int(w-r))
			var ni, nr int
			for _, nd := range m.Nodes {
				for _, f := range nd.Torus.Router.Inj {
					ni += f.Len()
				}
				for _, f := range nd.Torus.Router.Rec {
					nr += f.Len()
				}
			}
			inInj, inRec = append(inInj, ni), append(inRec, nr)
			if m.World.Next() == sim.Never {
				break
			}
		}
	} else {
		m.World.Run(10 * sim.S)
	}
	if failed != nil {
		return AlltoallResult{}, failed
	}
	b := make([]byte, size)
	for i, nd := range m.Nodes {
		for s := 0; s < n; s++ {
			if s == i {
				continue
			}
			nd.Mem.Read(recv[i]+uint64(s*size), b)
			for k := range b {
				if b[k] != block(s, i, k) {
					return AlltoallResult{}, fmt.Errorf("bglml: alltoall: node %d's block from node %d differs at byte %d (did it finish within 10 simulated seconds?)", i, s, k)
				}
			}
		}
	}
	var esc uint64
	for i := range m.Nodes {
		if c, ok := m.World.Stats().Get(fmt.Sprintf("bgl.node[%d].router.escaped", i)); ok {
			esc += c.(*sim.Counter).Value()
		}
	}
	return AlltoallResult{Time: end, Links: LinkLoads(m), Cut: cut, InNet: innet, InInj: inInj, InRec: inRec, Escaped: esc, Crossings: cross}, nil
}

// watchCut notes, as the run goes, where packets cross the middle of x.
// The machine runs on one goroutine (AlltoallWith's world).
func watchCut(m *bgl.Machine) *CutCrossings {
	ts := m.Spec.Torus
	d := ts.Dims
	mid := d[0]/2 - 1
	c := &CutCrossings{Offset: make([]int64, d[1]+d[2]), Span: make([]int64, d[1]+d[2])}
	for k := range c.Cycles {
		c.Cycles[k] = make([]int64, d[1]*d[2])
	}
	abs := func(v int) int { return max(v, -v) }
	// The header carries no source: a packet that will cross is noted
	// at its first hop, and forgotten as it crosses (once: its route is
	// minimal).
	from := map[sim.TxnID]torus.Coord{}
	m.Torus.Watch = func(node int, o torus.Port, p *torus.Packet) {
		at := m.Torus.Nodes[node].At
		if p.Hops == 0 && (at[0] <= mid) != (p.Dst[0] <= mid) {
			from[p.ID] = at
		}
		k := 0
		switch {
		case o == torus.XPlus && at[0] == mid:
		case o == torus.XMinus && at[0] == mid+1:
			k = 1
		default:
			return
		}
		c.Cycles[k][at[1]+d[1]*at[2]] += int64(ts.PacketCycles(p.Chunks()))
		sc := from[p.ID]
		delete(from, p.ID)
		src := at[1] == sc[1] && at[2] == sc[2]
		dst := at[1] == p.Dst[1] && at[2] == p.Dst[2]
		switch {
		case src && dst:
			c.AtBoth++
		case src:
			c.AtSrc++
		case dst:
			c.AtDst++
		default:
			c.Elsewhere++
		}
		c.Offset[abs(at[1]-sc[1])+abs(at[2]-sc[2])]++
		c.Span[abs(p.Dst[1]-sc[1])+abs(p.Dst[2]-sc[2])]++
	}
	return c
}

// LinkLoads is every link's load in machine m's run so far.
func LinkLoads(m *bgl.Machine) []LinkLoad {
	var ls []LinkLoad
	st := m.World.Stats()
	for i, nd := range m.Nodes {
		for o := torus.Port(0); o < torus.NumLinkPorts; o++ {
			c, ok := st.Get(fmt.Sprintf("bgl.node[%d].%v.busy_ps", i, o))
			if !ok {
				continue // no link there (a mesh's edge)
			}
			ls = append(ls, LinkLoad{Node: i, At: nd.Torus.At, Port: o, Busy: sim.Tick(c.(*sim.Counter).Value())})
		}
	}
	return ls
}

// cutCounters are the busy-time counters of the links across the middle
// of the x dimension, both ways.
func cutCounters(m *bgl.Machine) []*sim.Counter {
	mid := m.Spec.Torus.Dims[0]/2 - 1
	var cs []*sim.Counter
	st := m.World.Stats()
	for i, nd := range m.Nodes {
		var o torus.Port
		switch nd.Torus.At[0] {
		case mid:
			o = torus.XPlus
		case mid + 1:
			o = torus.XMinus
		default:
			continue
		}
		if c, ok := st.Get(fmt.Sprintf("bgl.node[%d].%v.busy_ps", i, o)); ok {
			cs = append(cs, c.(*sim.Counter))
		}
	}
	return cs
}

// BisectionTime is the least time an alltoall of size bytes between
// every pair of a mesh (or torus) of dims can take: the bytes that must
// cross the middle of its longest dimension, over the links that cross
// it, each carrying 240 payload bytes per 1,080-cycle packet (η × the
// raw rate, L54). With N nodes and X along that dimension, (N/2)² × size
// bytes cross each way over N/X links (2N/X in a torus).
func BisectionTime(spec bgl.Spec, size int) sim.Tick {
	d := spec.Torus.Dims
	n := d[0] * d[1] * d[2]
	x := max(d[0], d[1], d[2])
	links := n / x
	if !spec.Torus.Mesh {
		links *= 2
	}
	bytes := float64(n/2) * float64(n/2) * float64(size)
	perLink := float64(torus.MaxPayload) / float64(spec.Torus.PacketCycles(torus.MaxPacketBytes/torus.ChunkBytes)) // B/cycle
	return sim.Tick(bytes / (float64(links) * perLink) * float64(spec.Torus.Period()))
}

// AlltoallPace is the optimised alltoall's pace (Params.Pace) for
// messages of size bytes: the bisection bound spread evenly over the
// packets each node writes (one-packet or adaptive-eager messages), so
// that the nodes together inject no faster than the links across the
// middle of the network drain. (Every node sends as many packets, and
// the same share of them to the other half.)
func AlltoallPace(spec bgl.Spec, size int) sim.Tick {
	d := spec.Torus.Dims
	n := d[0] * d[1] * d[2]
	pk := 1 + max(0, (size-(torus.MaxPayload-firstHdr)+torus.MaxPayload-1)/torus.MaxPayload)
	return BisectionTime(spec, size) / sim.Tick((n-1)*pk)
}

// AlltoallWindow is the optimised alltoall's reception window
// (Params.Window) for messages of size bytes: what a node's injection
// FIFOs hold, in paces. Full, its FIFOs (InjFIFOs × InjChunks, in full
// packets) take so long to drain onto a link at the link's rate; the
// window is the packets the node's share of the bisection
// (AlltoallPace) delivers in that time, and never more than the FIFOs
// hold. A node whose share is a link's rate (a 4×4×4 mesh: 24 packets)
// may then have its FIFOs' worth unmatched by what it has read; one
// whose share is half a link's (8×8×8: 12) half of it. The network as
// a whole then holds that many a node beyond what it delivers, not the
// 50 or more at which it fills and its adaptive packets fall onto the
// escape channel.
func AlltoallWindow(spec bgl.Spec, size int) int {
	fifos := spec.Torus.InjFIFOs * spec.Torus.InjChunks / torus.MaxChunks
	drain := float64(fifos) * float64(spec.Torus.PacketCycles(torus.MaxChunks)) * float64(spec.Torus.Period())
	w := int(math.Round(drain / float64(AlltoallPace(spec, size))))
	return max(1, min(w, fifos))
}
