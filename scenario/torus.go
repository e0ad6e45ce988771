package scenario

import (
	"fmt"
	"strings"

	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/torus"
)

// TorusSpec is machine.network.torus: the torus of topology torus, a
// Gemini-class one by default (machine.GeminiTorus; docs/scenarios.md).
type TorusSpec struct {
	// Dims is x, y and z (each 1..256), their product machine.nodes;
	// none: the near-cube machine.TorusDims chooses.
	Dims []int `yaml:"dims" json:"dims,omitempty"`
	// ClockMHz is the routers' clock (1..10000).
	ClockMHz uint64 `yaml:"clock_mhz" json:"clock_mhz"`
	// BytesPerCycle is a link's rate a direction (1, 2, 4, 8, 16 or 32).
	BytesPerCycle int `yaml:"bytes_per_cycle" json:"bytes_per_cycle"`
	// WireCycles and RouterCycles make a hop: the link's latency and the
	// router's pipeline.
	WireCycles   int `yaml:"wire_cycles" json:"wire_cycles"`
	RouterCycles int `yaml:"router_cycles" json:"router_cycles"`
	// EscapeChunks is the escape channel's buffer of an input port in
	// 32-byte chunks (16..4096): every frame travels on it.
	EscapeChunks int `yaml:"escape_chunks" json:"escape_chunks"`
	// Ties is how a packet halfway round a ring of even length goes:
	// split (+ from an even coordinate, − from an odd one) or plus (every
	// tie +).
	Ties string `yaml:"ties" json:"ties,omitempty"`
	// NodesPerRouter is 1 or 2 nodes on each router (0: 1), as a Gemini
	// ASIC serves two; dims then count routers, machine.nodes / it.
	NodesPerRouter int `yaml:"nodes_per_router" json:"nodes_per_router,omitempty"`
}

// defaultTorus is machine.GeminiTorus's figures.
func defaultTorus() TorusSpec {
	g := machine.GeminiTorus(1, 1, 1)
	return TorusSpec{ClockMHz: g.ClockMHz, BytesPerCycle: g.BytesPerCycle, WireCycles: g.WireCycles, RouterCycles: g.RouterCycles,
		EscapeChunks: g.VCChunks[torus.VCEscape]}
}

// torusSpec is the torus's spec for the cluster (dimensions zero: chosen).
func (s *Scenario) torusSpec() torus.Spec {
	t := &s.Machine.Network.Torus
	var d [3]int
	copy(d[:], t.Dims)
	g := machine.GeminiTorus(d[0], d[1], d[2])
	g.ClockMHz, g.BytesPerCycle, g.WireCycles, g.RouterCycles = t.ClockMHz, t.BytesPerCycle, t.WireCycles, t.RouterCycles
	g.VCChunks[torus.VCEscape] = t.EscapeChunks
	if g.BytesPerCycle == 1 {
		g.BytesPerCycle = 0 // a byte a cycle: CyclesPerByte's 1
	}
	return g
}

// checkTorus checks machine.network.torus beyond the ranges: three
// dimensions whose product is machine.nodes, a link rate the torus takes,
// one NIC a node.
func (s *Scenario) checkTorus() (string, error) {
	m := &s.Machine
	t := &m.Network.Torus
	if t.BytesPerCycle > 0 && torus.ChunkBytes%t.BytesPerCycle != 0 {
		return "machine.network.torus.bytes_per_cycle", input.Errorf(rangeOf["machine.network.torus.bytes_per_cycle"].text(), "%d does not divide the 32-byte chunk", t.BytesPerCycle)
	}
	switch t.Ties {
	case "", machine.TiesSplit, machine.TiesPlus:
	default:
		return "machine.network.torus.ties", notOneOf(t.Ties, "a choice of direction for ties", []string{machine.TiesSplit, machine.TiesPlus},
			machine.TiesSplit+": + from an even coordinate, − from an odd one; "+machine.TiesPlus+": every tie +")
	}
	if m.Network.Topology != machine.TopologyTorus {
		return "", nil
	}
	k := max(t.NodesPerRouter, 1)
	if m.Nodes%k != 0 {
		return "machine.network.torus.nodes_per_router", input.Errorf("1 or 2, dividing machine.nodes", "%d nodes a router for %d nodes", k, m.Nodes)
	}
	routers := m.Nodes / k
	if n := len(t.Dims); n != 0 && n != 3 {
		return "machine.network.torus.dims", input.Errorf("x, y and z, or none for the nearest a cube", "%d dimensions", n)
	}
	if len(t.Dims) == 3 {
		if n := t.Dims[0] * t.Dims[1] * t.Dims[2]; n != routers {
			d := machine.TorusDims(routers)
			if k > 1 {
				return "machine.network.torus.dims", input.Errorf(fmt.Sprintf("x·y·z = machine.nodes / nodes_per_router, %d: %d×%d×%d, say; none for that", routers, d[0], d[1], d[2]),
					"%d×%d×%d is %d routers", t.Dims[0], t.Dims[1], t.Dims[2], n)
			}
			return "machine.network.torus.dims", input.Errorf(fmt.Sprintf("x·y·z = machine.nodes, %d: %d×%d×%d, say; none for that", m.Nodes, d[0], d[1], d[2]),
				"%d×%d×%d is %d nodes", t.Dims[0], t.Dims[1], t.Dims[2], n)
		}
	}
	if m.NICs > 1 {
		return "machine.nics", input.Errorf("1 with machine.network.topology "+machine.TopologyTorus, "%d NICs a node on a torus", m.NICs)
	}
	sp := s.torusSpec()
	if sp.Dims == [3]int{} {
		sp.Dims = machine.TorusDims(routers)
	}
	if err := sp.Validate(); err != nil {
		// The torus's own checks name its keys torus.KEY.
		msg := err.Error()
		key, problem, _ := strings.Cut(msg, ": ")
		return "machine.network." + key, input.Errorf("see docs/scenarios.md", "%s", problem)
	}
	return "", nil
}
