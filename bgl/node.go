package bgl

import (
	"fmt"

	"github.com/aaemu/aaemu/collective"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// Machine is Blue Gene/L nodes on a torus.
type Machine struct {
	Spec  Spec
	World *sim.World
	Torus *torus.Network
	Nodes []*Node
	// Tree is the collective and barrier networks, once Collective has
	// built them.
	Tree *collective.Tree
}

// Node is one compute node: its two cores and memory in the torus node's
// domain and clock, and its packet layer.
type Node struct {
	Index int
	Torus *torus.Node
	Mem   *memory.Store
	// Cores are the two PowerPC 440s. Their L1 caches are not coherent
	// with each other; the costs here are the packet layer's.
	Cores [2]*cpu.Core
	// PL is the packet layer on FIFO set 0 (the main core's), PLs one per
	// FIFO set: in coprocessor and virtual node mode the second core has
	// its own (L96).
	PL  *PacketLayer
	PLs []*PacketLayer
	// Tree is the node's side of the collective network (Collective).
	Tree *collective.Node
	// Co is the second core's work-unit pool in coprocessor mode (nil
	// otherwise).
	Co *Coprocessor
	// VN is the virtual torus device between the node's two tasks in
	// virtual node mode (nil otherwise).
	VN *VirtualNode
	// MemSys is the memory system (L3 and DDR) the two cores share.
	MemSys *MemorySystem
	heap   uint64
}

// Alloc takes n bytes of the node's memory, aligned to the 32-byte L1
// line (L74: what the two cores share is line-aligned).
func (n *Node) Alloc(size int) uint64 {
	a := n.heap
	n.heap += (uint64(size) + 31) &^ 31
	return a
}

// New builds the machine called name in world w: the torus (its blocks
// named name.node[i]…) and on every node two cores, name.node[i].cpu0 and
// cpu1, with the node's memory.
func New(w *sim.World, name string, spec Spec) (*Machine, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	net, err := torus.New(w, name, spec.Torus)
	if err != nil {
		return nil, err
	}
	m := &Machine{Spec: spec, World: w, Torus: net}
	period := spec.Torus.Period()
	cs := cpu.Spec{
		PeriodPS: period,
		// A poll looks at the FIFOs' status registers.
		PollIntervalPS: sim.Tick(spec.StatusCycles) * period,
		InterruptPS:    sim.Tick(spec.InterruptCycles) * period,
		// A load or store of a 64-byte line's worth, as a copy pays it:
		// a copy (a load and a store a line) then runs at the paper's
		// 4.3 B/cycle for large buffers (L70), 64/(2 × 4.3) ≈ 7 cycles.
		MemAccessPS: sim.Tick(spec.LineAccessCycles) * period,
		// Atomics and MMIO are not used (the PPC440 has no atomics, L34).
		AtomicPS: 100 * period, MMIOPS: 100 * period, ScratchpadPS: sim.Tick(spec.ScratchpadCycles) * period,
	}
	for i, tn := range net.Nodes {
		nd := &Node{Index: i, Torus: tn, Mem: memory.NewStore(), heap: 1 << 20}
		for k := range nd.Cores {
			nd.Cores[k] = cpu.NewCore(tn.Clk, fmt.Sprintf("%s.node[%d].cpu%d", name, i, k), cs, nd.Mem)
		}
		for g := 0; g < spec.Torus.Groups; g++ {
			nd.PLs = append(nd.PLs, &PacketLayer{nd: tn, spec: &m.Spec, period: period, group: g})
		}
		nd.PL = nd.PLs[0]
		if spec.Mode == CoprocessorMode {
			nd.Co = newCoprocessor(nd, &m.Spec)
		}
		if spec.Mode == VirtualNodeMode {
			nd.VN = newVirtualNode(nd, &m.Spec)
		}
		nd.MemSys = newMemorySystem(nd, &m.Spec)
		m.Nodes = append(m.Nodes, nd)
	}
	return m, nil
}
