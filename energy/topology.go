// Package energy estimates the energy the network spends on a run from the
// bytes its NICs sent: the NICs' (active while sending, idle otherwise) and
// the routers' of a topology the frames would cross (the paper's §5.2.5).
// The routers a frame crosses on average come from the topology itself,
// built as a graph at the run's node count and searched breadth first.
package energy

import (
	"fmt"
	"math"
	"math/bits"
)

// Topology names an interconnect.
type Topology string

// The topologies of the paper's Figure 8b: low radix (tori, hypercube) and
// high radix.
const (
	Torus3D            Topology = "Torus3D"
	Torus5D            Topology = "Torus5D"
	Hypercube          Topology = "Hypercube"
	Dragonfly          Topology = "Dragonfly"
	FlattenedButterfly Topology = "Flattened Butterfly"
	LongHop            Topology = "Long Hop"
	FatTree            Topology = "Fat tree"
)

// Topologies lists them in the paper's order.
var Topologies = []Topology{Torus3D, Torus5D, Hypercube, Dragonfly, FlattenedButterfly, LongHop, FatTree}

// Network is a topology built for a number of endpoints (nodes): routers,
// the links between them, and the router each endpoint hangs off.
type Network struct {
	Topology Topology
	adj      [][]int
	attach   []int
}

// Routers is the number of routers the network has (some may serve no
// endpoint when the node count does not fill the topology).
func (n *Network) Routers() int { return len(n.adj) }

// Build makes topology t for nodes endpoints:
//
//   - Torus3D, Torus5D: a router per node on a 3- or 5-dimensional torus
//     whose sides multiply to the node count, as equal as it allows;
//   - Hypercube: the smallest hypercube with a router per node;
//   - Long Hop: that hypercube with extra long links; aaemu uses the
//     smallest such network, the folded hypercube (each router also linked
//     to its bitwise complement);
//   - Dragonfly: p nodes per router, groups of a = 2p routers each fully
//     connected, h = p global links per router and a·h+1 groups, one link
//     between every two groups; the smallest p that holds the nodes;
//   - Flattened Butterfly: a k×k grid of routers, every row and every
//     column fully connected, k nodes per router, the smallest k with
//     k³ ≥ nodes;
//   - Fat tree: a 4-ary n-tree (radix-8 switches), the fewest levels that
//     hold the nodes.
//
// Nodes fill the routers in order.
func Build(t Topology, nodes int) (*Network, error) {
	if nodes < 2 || nodes > 1<<16 {
		return nil, fmt.Errorf("topology %s: %d nodes, want 2 to %d", t, nodes, 1<<16)
	}
	n := &Network{Topology: t}
	switch t {
	case Torus3D:
		n.torus(balancedFactors(nodes, 3))
	case Torus5D:
		n.torus(balancedFactors(nodes, 5))
	case Hypercube, LongHop:
		d := bits.Len(uint(nodes - 1))
		n.routers(1 << d)
		for r := 0; r < 1<<d; r++ {
			for b := 0; b < d; b++ {
				n.link(r, r^1<<b)
			}
			if t == LongHop && d >= 2 {
				n.link(r, r^(1<<d-1))
			}
		}
		n.fill(nodes, 1)
	case Dragonfly:
		p := 1
		for 2*p*p*(2*p*p+1) < nodes {
			p++
		}
		a, h := 2*p, p
		g := a*h + 1
		n.routers(a * g)
		for grp := 0; grp < g; grp++ {
			for i := 0; i < a; i++ {
				for j := i + 1; j < a; j++ {
					n.link(grp*a+i, grp*a+j)
				}
			}
		}
		// Group i's global ports in the order of the other groups: its port
		// to group k is k−1 above it, k below it; a router has h ports.
		port := func(i, k int) int {
			if k > i {
				return k - 1
			}
			return k
		}
		for i := 0; i < g; i++ {
			for k := i + 1; k < g; k++ {
				n.link(i*a+port(i, k)/h, k*a+port(k, i)/h)
			}
		}
		n.fill(nodes, p)
	case FlattenedButterfly:
		k := 2
		for k*k*k < nodes {
			k++
		}
		n.routers(k * k)
		for r := 0; r < k*k; r++ {
			for s := r + 1; s < k*k; s++ {
				if r/k == s/k || r%k == s%k {
					n.link(r, s)
				}
			}
		}
		n.fill(nodes, k)
	case FatTree:
		const k = 4
		levels := 1
		for pow(k, levels) < nodes {
			levels++
		}
		if levels == 1 {
			levels = 2 // a single switch is no tree; keep two levels
		}
		per := pow(k, levels-1) // switches per level
		n.routers(levels * per)
		// Switch w of level l links to the switches of level l+1 whose
		// words differ from w in digit l only.
		for l := 0; l+1 < levels; l++ {
			for w := 0; w < per; w++ {
				d := w / pow(k, l) % k
				for v := 0; v < k; v++ {
					n.link(l*per+w, (l+1)*per+w+(v-d)*pow(k, l))
				}
			}
		}
		n.fill(nodes, k)
	default:
		return nil, fmt.Errorf("topology %q: want one of %v", t, Topologies)
	}
	return n, nil
}

func pow(b, e int) int {
	r := 1
	for ; e > 0; e-- {
		r *= b
	}
	return r
}

func (n *Network) routers(r int) { n.adj = make([][]int, r) }

// link joins two routers (once, and never a router to itself).
func (n *Network) link(a, b int) {
	if a == b {
		return
	}
	for _, x := range n.adj[a] {
		if x == b {
			return
		}
	}
	n.adj[a] = append(n.adj[a], b)
	n.adj[b] = append(n.adj[b], a)
}

// fill hangs the nodes off the routers in order, per to a router.
func (n *Network) fill(nodes, per int) {
	for e := 0; e < nodes; e++ {
		n.attach = append(n.attach, e/per)
	}
}

// torus builds a router per node on a torus of the given sides.
func (n *Network) torus(sides []int) {
	total := 1
	for _, s := range sides {
		total *= s
	}
	n.routers(total)
	stride := 1
	for _, s := range sides {
		for r := 0; r < total; r++ {
			c := r / stride % s
			n.link(r, r+((c+1)%s-c)*stride)
		}
		stride *= s
	}
	n.fill(total, 1)
}

// balancedFactors splits n into d factors, as equal as n's divisors allow,
// the largest first.
func balancedFactors(n, d int) []int {
	var out []int
	for i := d; i >= 1; i-- {
		lim := int(math.Ceil(math.Pow(float64(n), 1/float64(i)) - 1e-9))
		f := 1
		for c := lim; c >= 1; c-- {
			if n%c == 0 {
				f = c
				break
			}
		}
		if i == 1 {
			f = n
		}
		out = append(out, f)
		n /= f
	}
	// Largest first, for the reader.
	for i := 0; i < len(out); i++ {
		for j := i + 1; j < len(out); j++ {
			if out[j] > out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// AvgRouters is the mean number of routers a frame crosses between two
// distinct nodes (uniform traffic, shortest paths): the hops between their
// routers plus one.
func (n *Network) AvgRouters() float64 {
	dist := make([]int, len(n.adj))
	total, pairs := 0, 0
	for a, ra := range n.attach {
		for i := range dist {
			dist[i] = -1
		}
		dist[ra] = 0
		queue := []int{ra}
		for len(queue) > 0 {
			r := queue[0]
			queue = queue[1:]
			for _, s := range n.adj[r] {
				if dist[s] < 0 {
					dist[s] = dist[r] + 1
					queue = append(queue, s)
				}
			}
		}
		for b, rb := range n.attach {
			if a != b {
				total += dist[rb] + 1
				pairs++
			}
		}
	}
	return float64(total) / float64(pairs)
}
