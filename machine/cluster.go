// Package machine assembles the hardware every system of aaemu runs on:
// nodes (memory, IOMMU, memory controller, RDMA NIC on a PCIe link, CPU
// cores, a scratchpad) joined into a cluster by Ethernet wires and
// switches, with the connected queue pairs a driver sets up at boot. It
// knows no scheme: Active Access (package aa), the message layers (msg/)
// and the workloads are built over it.
package machine

import (
	"fmt"
	"strings"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/energy"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/scratchpad"
	"github.com/aaemu/aaemu/sim"
)

// Spec describes a cluster.
type Spec struct {
	Nodes  int
	Cores  int // cores per node running processes (a polling hyperthread is extra)
	CPU    cpu.Spec
	IOMMU  iommu.Spec
	Memory memory.Spec
	NIC    nic.Spec
	PCIe   pcie.LinkSpec
	// PCIeDown makes the root port → NIC direction a PCIe link too (a
	// pcie.Dir of the PCIe spec, paired with the NIC → root port one):
	// doorbells, the cores' uncached loads and stores, and the completions
	// of the NIC's DMA reads pay its serialisation, latency and credits.
	// False: that direction is a channel of one fabric cycle, the model
	// earlier scenarios' outputs were made with.
	PCIeDown  bool
	Wire      nic.WireSpec
	FabricMHz uint64 // clock of the IOMMU, memory controller, NIC, links (default 1000; period rounded to the nearest ps)
	SQSize    int    // send-queue entries per QP (default 256)
	// Transport is the NICs' transport: TransportRC ("" too), a connected
	// queue pair per core per peer node, or TransportSRD, one queue per
	// core that reaches every node over one reliable context per peer NIC
	// (nic.CreateQueue).
	Transport string
	// SwitchLatencyPS is the switch's forwarding latency (more than two nodes).
	SwitchLatencyPS sim.Tick
	// Topology joins more than two nodes: TopologyStar, one switch with a
	// port per node, or TopologyLeafSpine, NodesPerLeaf nodes on each leaf
	// switch and every leaf linked to each of Spines spine switches.
	Topology     string
	NodesPerLeaf int
	Spines       int
	// Power: the NICs' and routers' power figures, for the energy a run
	// reports (assumptions; see energy.DefaultParams).
	Power energy.Params
	// SMP makes every node a symmetric multiprocessor: its cores (and
	// polling thread) share a coherence model and the node's memory
	// bandwidth (cpu.SMP). Nil: every access costs CPU.MemAccessPS.
	SMP *cpu.SMPSpec
	// StartX puts a StarT-X NIU (seed 001) beside the NIC in every node,
	// joined by Arctic lines of StartXLine (zero: startx.DefaultLineSpec).
	// Nil: none.
	StartX     *startx.Spec
	StartXLine startx.LineSpec
}

// DefaultSpec is the paper's two-node set-up: 1 GbE NICs on PCIe Gen3 x8.
func DefaultSpec() Spec {
	return Spec{Nodes: 2, Cores: 1, CPU: cpu.DefaultSpec(), IOMMU: iommu.DefaultSpec(), Memory: memory.DefaultSpec(),
		NIC: nic.DefaultSpec(), PCIe: pcie.DefaultLinkSpec(), Wire: nic.DefaultWireSpec(), FabricMHz: 1000, SQSize: 256,
		SwitchLatencyPS: 500 * sim.NS, Power: energy.DefaultParams()}
}

// MaxRCQueuePairs is the queue pairs the rc transport may give a NIC: its
// QP numbers start at 0x100 and their doorbells must fit the BAR's pages.
const MaxRCQueuePairs = nic.MaxQPN - 0x100

// RCQueuePairs is the QP numbers the rc transport takes on each NIC: a
// number per core per node (nodes × cores; its own node's go unused).
func RCQueuePairs(nodes, cores int) int { return nodes * cores }

// MaxNodes bounds a cluster: node numbers take two bytes of the NICs'
// addresses (roce.NodeEndpoint), and a run of this many nodes must fit a
// workstation's memory with the srd transport.
const MaxNodes = 4096

// maxCores bounds the cores of a node: their requester IDs (CoreID) take
// devices 1 to 31 of bus 0, eight functions each.
const maxCores = 31 * 8

// CoreID is the PCIe requester ID of core k's MMIO requests: bus 0, device
// 1 + k/8, function k%8 (the root complex is 00:00.0, the NIC 01:00.0).
// The root complex routes the completions of the core's uncached reads
// back to it by this ID.
func CoreID(k int) tlp.ID { return tlp.NewID(0, uint8(1+k/8), uint8(k%8)) }

// Memory map of every node (physical addresses; the NIC's IO virtual
// addresses are the same, mapped one to one when memory is registered).
const (
	heapBase   = 0x1000_0000
	tablesBase = 0x0100_0000
	tablesSize = 0x0100_0000
	// BARBase is the NIC's BAR: its send-queue doorbells, then
	// nic.RQDoorbells and nic.CQDoorbells on, then its device memory from
	// nic.SRAMOffset (NIC.SRAMAddr).
	BARBase   = 0xf000_0000
	nicDomain = 1
)

// Node is one machine of the cluster.
type Node struct {
	ID int
	// Eng is the node's domain of the simulation: everything of the node
	// runs there, with clocks of its own, and talks to the network only
	// through its wires' links, so that nodes run in parallel (partitions).
	Eng        *sim.Engine
	Fabric     *sim.Clock // the node's fabric clock: IOMMU, memory controller, NIC, PCIe
	CPUClk     *sim.Clock // its cores' clock
	c          *Cluster
	Mem        *memory.Store
	IOMMU      *iommu.IOMMU
	Driver     *iommu.Driver
	MC         *memory.Controller
	NIC        *nic.NIC
	Up         *pcie.Dir // NIC → root complex
	Down       *pcie.Dir // root complex → NIC (Spec.PCIeDown; nil: a channel)
	Cores      []*cpu.Core
	Poller     *cpu.Core   // the polling hyperthread (SP mode)
	SMP        *cpu.SMP    // the cores' coherence model (Spec.SMP; nil: none)
	NIU        *startx.NIU // the StarT-X NIU (Spec.StartX; nil: none), on its own link
	NIUUp      *pcie.Dir
	NIUDown    *pcie.Dir
	SP         *scratchpad.Scratchpad
	heap       uint64
	qps        map[int][]*QP // by remote node, one per core (transport rc)
	queues     []*QP         // one per core (transport srd)
	scratchBuf uint64
	out        *nic.Wire // the wire the NIC sends on
}

// Cluster is the whole machine.
type Cluster struct {
	Eng      *sim.Engine // the network's domain (the nodes have their own)
	Spec     Spec
	Fabric   *sim.Clock // the network's clock: switches, and the wires they send on
	fabricPS sim.Tick
	Nodes    []*Node
	Wires    []*nic.Wire
	Switch   *nic.Switch   // the star's switch
	Switches []*nic.Switch // every switch of the network (leaves, then spines)
	// StartXLines are the Arctic lines between the StarT-X NIUs (Spec.StartX).
	StartXLines []*startx.Line
	onStop      []func() // what Run calls when it ends (the systems' consumers)
	// partitions asked for (SetPartitions) and why it must be one (Serial).
	partitions int
	serial     string
}

// New builds a cluster on engine e.
func New(e *sim.Engine, s Spec) (*Cluster, error) {
	if s.Nodes < 2 || s.Nodes > MaxNodes {
		return nil, fmt.Errorf("nodes: %d out of 2..%d", s.Nodes, MaxNodes)
	}
	if q := RCQueuePairs(s.Nodes, s.Cores); (s.Transport == TransportRC || s.Transport == "") && q > MaxRCQueuePairs {
		return nil, fmt.Errorf("transport rc: %d nodes × %d cores need %d queue pairs a NIC (a core's per node), more than its %d doorbells; use transport srd",
			s.Nodes, s.Cores, q, MaxRCQueuePairs)
	}
	if s.Cores < 1 || s.Cores > maxCores {
		return nil, fmt.Errorf("cores: %d, want 1..%d", s.Cores, maxCores)
	}
	if err := s.Power.Validate(); err != nil {
		return nil, err
	}
	fabric, err := sim.NearestPeriodOfMHz(s.FabricMHz)
	if err != nil {
		return nil, fmt.Errorf("fabric_mhz: %w", err)
	}
	c := &Cluster{Eng: e, Spec: s, Fabric: e.NewClock("clk_fabric", fabric, 0), fabricPS: fabric}
	for i := 0; i < s.Nodes; i++ {
		n, err := c.newNode(i)
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	if err := c.network(); err != nil {
		return nil, err
	}
	if err := c.startXNetwork(); err != nil {
		return nil, err
	}
	switch s.Transport {
	case TransportRC, "":
	case TransportSRD:
		for _, a := range c.Nodes {
			if err := c.createQueues(a); err != nil {
				return nil, err
			}
		}
		return c, nil
	default:
		return nil, fmt.Errorf("transport %q: want %s or %s", s.Transport, TransportRC, TransportSRD)
	}
	// Connected QPs between every pair of nodes.
	for _, a := range c.Nodes {
		for _, b := range c.Nodes {
			if a != b {
				if err := c.connect(a, b); err != nil {
					return nil, err
				}
			}
		}
	}
	return c, nil
}

// The topologies of more than two nodes.
const (
	TopologyStar      = "star"
	TopologyLeafSpine = "leaf-spine"
)

// network joins two nodes by a direct link (a wire each way), more through
// a switch with a wire each way to every node, or through leaf and spine
// switches.
func (c *Cluster) network() error {
	s := c.Spec
	if s.Nodes > 2 && s.Topology == TopologyLeafSpine {
		return c.leafSpine()
	}
	if s.Nodes == 2 {
		for i := 0; i < 2; i++ {
			a, b := c.Nodes[i], c.Nodes[1-i]
			w, err := nic.NewWire(a.Fabric, fmt.Sprintf("net.wire%d%d", i, 1-i), s.Wire, a.NIC.Unit(), b.NIC.Unit())
			if err != nil {
				return err
			}
			a.NIC.NetOut, b.NIC.NetIn = w.In, w.Out
			a.out = w
			c.Wires = append(c.Wires, w)
		}
		return nil
	}
	sw, err := nic.NewSwitch(c.Fabric, "net.switch", nic.SwitchSpec{Ports: s.Nodes, LatencyPS: s.SwitchLatencyPS, QueueLen: 64})
	if err != nil {
		return err
	}
	c.Switch = sw
	c.Switches = []*nic.Switch{sw}
	for _, n := range c.Nodes {
		up, err := nic.NewWire(n.Fabric, fmt.Sprintf("net.up%d", n.ID), s.Wire, n.NIC.Unit(), sw.Unit())
		if err != nil {
			return err
		}
		down, err := nic.NewWire(c.Fabric, fmt.Sprintf("net.down%d", n.ID), s.Wire, sw.Unit(), n.NIC.Unit())
		if err != nil {
			return err
		}
		n.NIC.NetOut, n.NIC.NetIn = up.In, down.Out
		n.out = up
		sw.SetWirePort(n.ID, up, down)
		c.Wires = append(c.Wires, up, down)
	}
	return nil
}

// leafSpine builds a two-level folded Clos: node i on leaf i/NodesPerLeaf,
// at that leaf's port i%NodesPerLeaf; leaf ports NodesPerLeaf.. go up, one
// to each spine; spine port l goes down to leaf l. A frame to another leaf
// goes up to spine (destination mod Spines) and down: up/down routing,
// which cannot deadlock a lossless network, and a fixed path per
// destination, which keeps a connection's frames in order.
func (c *Cluster) leafSpine() error {
	s := c.Spec
	per, spines := s.NodesPerLeaf, s.Spines
	if per < 1 || spines < 1 {
		return fmt.Errorf("leaf-spine: %d nodes per leaf and %d spines, want at least 1 of each", per, spines)
	}
	leaves := (s.Nodes + per - 1) / per
	if leaves == 1 {
		spines = 0 // every node on one leaf: nothing goes up
	}
	wire := func(name string, from, to *sim.Unit) (*nic.Wire, error) {
		w, err := nic.NewWire(from.Clock(), name, s.Wire, from, to) // in the sender's domain
		if err == nil {
			c.Wires = append(c.Wires, w)
		}
		return w, err
	}
	leaf := make([]*nic.Switch, leaves)
	for l := range leaf {
		route := make([]int, s.Nodes)
		for d := range route {
			if d/per == l {
				route[d] = d % per
			} else {
				route[d] = per + d%spines
			}
		}
		sw, err := nic.NewSwitch(c.Fabric, fmt.Sprintf("net.leaf%d", l), nic.SwitchSpec{Ports: per + spines, LatencyPS: s.SwitchLatencyPS, QueueLen: 64, Route: route})
		if err != nil {
			return err
		}
		leaf[l] = sw
	}
	spine := make([]*nic.Switch, spines)
	for k := range spine {
		route := make([]int, s.Nodes)
		for d := range route {
			route[d] = d / per
		}
		sw, err := nic.NewSwitch(c.Fabric, fmt.Sprintf("net.spine%d", k), nic.SwitchSpec{Ports: leaves, LatencyPS: s.SwitchLatencyPS, QueueLen: 64, Route: route})
		if err != nil {
			return err
		}
		spine[k] = sw
	}
	for _, n := range c.Nodes {
		sw := leaf[n.ID/per]
		up, err := wire(fmt.Sprintf("net.up%d", n.ID), n.NIC.Unit(), sw.Unit())
		if err != nil {
			return err
		}
		down, err := wire(fmt.Sprintf("net.down%d", n.ID), sw.Unit(), n.NIC.Unit())
		if err != nil {
			return err
		}
		n.NIC.NetOut, n.NIC.NetIn = up.In, down.Out
		n.out = up
		sw.SetWirePort(n.ID%per, up, down)
	}
	for l, lsw := range leaf {
		for k, ssw := range spine {
			up, err := wire(fmt.Sprintf("net.leaf%d_spine%d", l, k), lsw.Unit(), ssw.Unit())
			if err != nil {
				return err
			}
			down, err := wire(fmt.Sprintf("net.spine%d_leaf%d", k, l), ssw.Unit(), lsw.Unit())
			if err != nil {
				return err
			}
			lsw.SetWirePort(per+k, down, up)
			ssw.SetWirePort(l, up, down)
		}
	}
	c.Switches = append(leaf, spine...)
	return nil
}

// RouterEnergy is the energy in joules the network's switches spent
// forwarding what they forwarded (Spec.Power's energy per byte).
func (c *Cluster) RouterEnergy() float64 {
	var b uint64
	for _, sw := range c.Switches {
		b += sw.ForwardedBytes()
	}
	return float64(b) * c.Spec.Power.RouterJPerByte
}

func (c *Cluster) newNode(id int) (*Node, error) {
	s := c.Spec
	p := fmt.Sprintf("node%d.", id)
	n := &Node{ID: id, c: c, Mem: memory.NewStore(), heap: heapBase, qps: map[int][]*QP{}}
	n.Eng = c.Eng.World().Domain(fmt.Sprintf("node%d", id))
	n.Fabric = n.Eng.NewClock("clk_fabric", c.fabricPS, 0)
	n.CPUClk = n.Eng.NewClock("clk_cpu", s.CPU.PeriodPS, 0)
	var err error
	if n.IOMMU, err = iommu.New(n.Fabric, p+"iommu", s.IOMMU, n.Mem); err != nil {
		return nil, err
	}
	if n.MC, err = memory.NewController(n.Fabric, p+"mem", s.Memory, n.Mem, n.IOMMU.Unit(), n.IOMMU.Unit()); err != nil {
		return nil, err
	}
	n.IOMMU.ConnectMemory(n.MC.In, n.MC.Cpl)
	ns := s.NIC
	ns.ID, ns.Node, ns.Index, ns.BAR = tlp.NewID(1, 0, 0), id, 0, BARBase
	if n.NIC, err = nic.NewNIC(n.Fabric, p+"nic0", ns); err != nil {
		return nil, err
	}
	if n.Up, err = pcie.NewDir(n.Fabric, p+"pcie0.up", s.PCIe, n.NIC.Unit(), n.IOMMU.Unit()); err != nil {
		return nil, err
	}
	var down, nicIn *sim.Chan[pcie.Packet]
	if s.PCIeDown {
		if n.Down, err = pcie.NewDir(n.Fabric, p+"pcie0.down", s.PCIe, n.IOMMU.Unit(), n.NIC.Unit()); err != nil {
			return nil, err
		}
		pcie.Pair(n.Up, n.Down)
		down, nicIn = n.Down.In, n.Down.Out
	} else {
		down = sim.NewChan[pcie.Packet](n.IOMMU.Unit(), n.NIC.Unit(), p+"pcie0.down", 8)
		nicIn = down
	}
	n.NIC.DMAOut, n.NIC.DMAIn = n.Up.In, nicIn
	port := n.IOMMU.AddPort(n.Up.Out, down)
	n.IOMMU.SetBAR(port, BARBase, n.NIC.Spec().BARSize())
	n.Driver = iommu.NewDriver(n.IOMMU, tablesBase, tablesSize)
	if err := n.Driver.Attach(ns.ID, nicDomain); err != nil {
		return nil, err
	}
	// Every core has its own MMIO path into the root complex, and its own
	// path back for the completions of its uncached reads.
	for k := 0; k < s.Cores; k++ {
		core := cpu.NewCore(n.CPUClk, fmt.Sprintf("%scpu%d", p, k), s.CPU, n.Mem)
		core.SetRequesterID(CoreID(k))
		core.Host = sim.NewChan[pcie.Packet](core.Unit(), n.IOMMU.Unit(), fmt.Sprintf("%scpu%d.mmio", p, k), 4)
		core.Cpl = sim.NewChan[pcie.Packet](n.IOMMU.Unit(), core.Unit(), fmt.Sprintf("%scpu%d.mmio_cpl", p, k), 2, sim.StatsOnUse())
		n.IOMMU.ConnectHost(core.Host)
		n.IOMMU.ConnectHostCompletions(CoreID(k), core.Cpl)
		n.Cores = append(n.Cores, core)
	}
	if err := n.startXNode(); err != nil {
		return nil, err
	}
	n.Poller = cpu.NewCore(n.CPUClk, p+"cpu_poll", s.CPU, n.Mem)
	if err := n.smp(); err != nil {
		return nil, err
	}
	if n.SMP != nil {
		// DMA is coherent: what the memory controller writes for the I/O
		// side drops the lines from the cores' caches.
		n.MC.OnWrite(n.SMP.Invalidate)
	}
	irq := sim.NewChan[pcie.Packet](n.IOMMU.Unit(), n.Cores[0].Unit(), p+"irq", 8)
	n.IOMMU.Irq = irq
	n.Cores[0].Irq = irq
	n.SP = scratchpad.New(n.CPUClk, p+"scratchpad", 64, n.IOMMU.Unit())
	n.IOMMU.SP = n.SP.In
	return n, nil
}

// smp attaches the node's cores, then its polling thread (a cache of its
// own), to the node's SMP when the spec has one.
func (n *Node) smp() error {
	s := n.c.Spec.SMP
	if s == nil {
		return nil
	}
	var err error
	if n.SMP, err = cpu.NewSMP(n.Eng, fmt.Sprintf("node%d.smp", n.ID), *s); err != nil {
		return fmt.Errorf("smp: %w", err)
	}
	for _, core := range n.Cores {
		if err := n.SMP.Attach(core); err != nil {
			return err
		}
	}
	return n.SMP.Attach(n.Poller)
}

// WireBytes is every byte the network carried. A frame counts once per wire
// it crosses (two through a star's switch, four between leaves of a
// leaf-spine network), as it occupies each.
func (c *Cluster) WireBytes() uint64 {
	var t uint64
	for _, w := range c.Wires {
		t += w.Bytes()
	}
	return t
}

// SentBytes is every byte the node's NIC put on its wire: its frames as
// sent, with Ethernet framing (retransmissions included).
func (n *Node) SentBytes() uint64 { return n.out.Bytes() }

// NICEnergy is the energy in joules the nodes' NICs spent over the first
// seconds of the run: idle power throughout, and the active power's excess
// while each sent what it sent (Spec.Power).
func (c *Cluster) NICEnergy(seconds float64) float64 {
	e := 0.0
	for _, n := range c.Nodes {
		e += c.Spec.Power.NIC(n.SentBytes(), float64(c.Spec.Wire.RateMbps), seconds)
	}
	return e
}

// Alloc returns size bytes of the node's memory, page aligned.
func (n *Node) Alloc(size uint64) uint64 {
	a := n.heap
	n.heap += (size + 0xfff) &^ 0xfff
	return a
}

// Register maps [addr, addr+size) for the NIC, one to one, with bits (pte.R,
// W, and Active Access bits with an IUID on 4 KB pages).
func (n *Node) Register(addr, size uint64, p iommu.Perm) error {
	return n.Driver.Map(nicDomain, addr, addr, (size+0xfff)&^0xfff, 4096, p)
}

// SetBits changes the bits of a registered page (for Active Access: makes
// the page active, with AA bits and an IUID, or plain again).
func (n *Node) SetBits(addr uint64, p iommu.Perm) error {
	return n.Driver.SetBits(nicDomain, addr&^0xfff, p)
}

// Cluster is the machine the node belongs to.
func (n *Node) Cluster() *Cluster { return n.c }

// Scratch returns a registered 4 KB buffer of the node for the system
// libraries' own use (an active flush's landing place).
func (n *Node) Scratch() uint64 {
	if n.scratchBuf == 0 {
		n.scratchBuf = n.Alloc(4096)
		if err := n.Register(n.scratchBuf, 4096, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
			panic(err)
		}
	}
	return n.scratchBuf
}

// TransportReport says what the network and the NICs' reliable transport
// went through when it was not smooth: frames the wires lost, packets sent
// again, work requests that failed or were flushed, and every queue pair
// still with work (up to max of them). It is empty for a clean run.
func (c *Cluster) TransportReport(max int) string {
	var frames, lost uint64
	for _, w := range c.Wires {
		frames += w.Frames()
		lost += w.Lost()
	}
	var h nic.Health
	var pending []string
	total := 0
	for _, n := range c.Nodes {
		x := n.NIC.Health()
		h.Retransmitted += x.Retransmitted
		h.Timeouts += x.Timeouts
		h.RetryExceeded += x.RetryExceeded
		h.Flushed += x.Flushed
		for _, q := range n.NIC.Pending() {
			total++
			if len(pending) < max {
				pending = append(pending, fmt.Sprintf("node %d %s", n.ID, q))
			}
		}
	}
	if lost == 0 && h == (nic.Health{}) && total == 0 {
		return ""
	}
	s := fmt.Sprintf("the wires lost %d of %d frames; packets sent again: %d, after %d timeouts; work requests failed as their QP ran out of retries: %d, flushed: %d",
		lost, frames, h.Retransmitted, h.Timeouts, h.RetryExceeded, h.Flushed)
	if total > 0 {
		s += fmt.Sprintf("; queue pairs not idle: %d: %s", total, strings.Join(pending, "; "))
		if total > len(pending) {
			s += "; …"
		}
	}
	return s
}
