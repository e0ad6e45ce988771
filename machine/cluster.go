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
	"github.com/aaemu/aaemu/torus"
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
	// PollingHyperthreads places the SP notification mode's polling
	// hyperthreads: PollingPerNode ("" too), one extra thread a node that
	// polls every SP log of the node and runs their handlers in turn, or
	// PollingPerCore, the SMT sibling of each core, which polls the logs
	// of that core's process (aa.LogOptions.Core) and runs their
	// handlers. A sibling is a cpu.Core of its own: it issues on its own
	// (no pipeline shared with its core: the model has no SMT), loads and
	// stores the node's memory at the same costs, reads the node's one
	// scratchpad, and under SMP is a cache of its own, as the node's
	// polling thread is.
	PollingHyperthreads string
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
	// switch and every leaf linked to each of Spines spine switches; or
	// any number of nodes: TopologyTorus, a torus router per node
	// (Torus).
	Topology     string
	NodesPerLeaf int
	Spines       int
	// Torus is the torus of TopologyTorus (GeminiTorus, say): its
	// dimensions, zero for the near-cube TorusDims of Nodes, or giving
	// Nodes nodes.
	Torus torus.Spec
	// NodesPerRouter is the nodes on each torus router (0 or 1: one; 2:
	// as a Gemini ASIC serves two nodes): the torus has Nodes /
	// NodesPerRouter routers, nodes k·r … k·r+k−1 on router r.
	NodesPerRouter int
	// TorusTies is how the torus adapter routes a packet halfway round a
	// ring of even length: TiesSplit ("" too) or TiesPlus.
	TorusTies string
	// Power: the NICs' and routers' power figures, for the energy a run
	// reports (assumptions; see energy.DefaultParams).
	Power energy.Params
	// NICs is the RDMA NICs of every node (0 is 1; at most MaxNICs): NIC r
	// sits behind a PCIe link of its own into the node's one IOMMU, at
	// bus r+1 with its BAR at BARBase + r × BARStride, and sends on a wire
	// of its own into network plane r (a switch per plane). The QPs of
	// rail r connect NIC r of every node.
	NICs int
	// SMP makes every node a symmetric multiprocessor: its cores (and
	// polling thread) share a coherence model and the node's memory
	// bandwidth (cpu.SMP). Nil: every access costs CPU.MemAccessPS.
	SMP *cpu.SMPSpec
	// StartX puts a StarT-X NIU (seed 001) beside the NIC in every node,
	// joined by lines of StartXLine (zero: startx.DefaultLineSpec): two
	// nodes directly, more through Arctic routers (StartXRouter) or a
	// crossbar switch (StartXCrossbar). Nil: none.
	StartX     *startx.Spec
	StartXLine startx.LineSpec
	// StartXNICs is the NIUs of every node (0 is 1; at most
	// MaxStartXPerNode): each on a PCIe link of its own, NIU r of node n
	// at network address StartXAddr(n, r).
	StartXNICs int
	// StartXRouter makes the Arctic network a switched one of routers of
	// this spec (startXNetwork): always with more than two nodes (nil:
	// startx.DefaultRouterSpec), and with two when set.
	StartXRouter *startx.RouterSpec
	// StartXCrossbar joins the NIUs through one crossbar switch (the
	// Myrinet switch of seed 000's clusters; am2.WithMyrinet sets it)
	// rather than the Arctic network of seed 001.
	StartXCrossbar bool
}

// DefaultSpec is the paper's two-node set-up: 1 GbE NICs on PCIe Gen3 x8.
func DefaultSpec() Spec {
	return Spec{Nodes: 2, Cores: 1, CPU: cpu.DefaultSpec(), IOMMU: iommu.DefaultSpec(), Memory: memory.DefaultSpec(),
		NIC: nic.DefaultSpec(), PCIe: pcie.DefaultLinkSpec(), Wire: nic.DefaultWireSpec(), FabricMHz: 1000, SQSize: 256,
		SwitchLatencyPS: 500 * sim.NS, Power: energy.DefaultParams()}
}

// MaxNICs bounds the NICs of a node (Spec.NICs): the multirail nodes of
// the BXI paper have up to four.
const MaxNICs = 4

// BARStride separates the BARs of a node's NICs: a NIC's BAR stays within
// 128 MB (nic.MaxSRAMBytes).
const BARStride = 128 << 20

// Rails is the NICs of every node (Spec.NICs, at least 1).
func (s Spec) Rails() int { return max(s.NICs, 1) }

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
	Eng    *sim.Engine
	Fabric *sim.Clock // the node's fabric clock: IOMMU, memory controller, NIC, PCIe
	CPUClk *sim.Clock // its cores' clock
	c      *Cluster
	Mem    *memory.Store
	IOMMU  *iommu.IOMMU
	Driver *iommu.Driver
	MC     *memory.Controller
	NIC    *nic.NIC  // NIC 0 (NICs[0])
	Up     *pcie.Dir // NIC 0 → root complex
	Down   *pcie.Dir // root complex → NIC 0 (Spec.PCIeDown; nil: a channel)
	// NICs, with their links, by rail (Spec.NICs): NICs[0] is NIC.
	NICs       []*nic.NIC
	Ups, Downs []*pcie.Dir
	Cores      []*cpu.Core
	Poller     *cpu.Core // the node's polling hyperthread (SP mode, PollingPerNode)
	// Pollers are the cores' SMT siblings (SP mode, PollingPerCore; nil
	// otherwise): Pollers[k] polls the SP logs of core k's process.
	Pollers    []*cpu.Core
	SMP        *cpu.SMP      // the cores' coherence model (Spec.SMP; nil: none)
	NIU        *startx.NIU   // the StarT-X NIU (Spec.StartX; nil: none), on its own link
	NIUs       []*startx.NIU // all its NIUs (Spec.StartXNICs): NIUs[0] is NIU
	NIUUp      *pcie.Dir
	NIUDown    *pcie.Dir
	SP         *scratchpad.Scratchpad
	heap       uint64
	qps        []map[int][]*QP // by rail, then remote node, one per core (transport rc)
	queues     [][]*QP         // by rail, one per core (transport srd)
	scratchBuf uint64
	outs       []*nic.Wire // the wires the NICs send on, by rail
	// The bulk DMA path's refusals (machine/bulk.go): counted, the first
	// one's reason kept.
	stBulkRefused *sim.Counter
	bulkRefusal   string
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
	// Torus is the network of TopologyTorus (nil for the others).
	Torus    *torus.Network
	adapters []*torusAdapter
	// StartXLines are the lines between the StarT-X NIUs (Spec.StartX):
	// two nodes' direct lines, or every line into and out of StartXSwitch,
	// the crossbar that joins more than two.
	StartXLines  []*startx.Line
	StartXSwitch *startx.Switch
	// StartXRouters are the Arctic routers of a switched network (leaves,
	// then spines).
	StartXRouters []*startx.Router
	onStop        []func() // what Run calls when it ends (the systems' consumers)
	// quiet: the last Run found nothing left to happen from quietAt on
	// (Quiet).
	quiet   bool
	quietAt sim.Tick
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
	switch s.PollingHyperthreads {
	case "", PollingPerNode, PollingPerCore:
	default:
		return nil, fmt.Errorf("polling hyperthreads %q: want %s or %s", s.PollingHyperthreads, PollingPerNode, PollingPerCore)
	}
	if s.NICs < 0 || s.NICs > MaxNICs {
		return nil, fmt.Errorf("nics: %d, want 1..%d", s.NICs, MaxNICs)
	}
	if s.StartXNICs < 0 || s.StartXNICs > MaxStartXPerNode || (s.StartXNICs > 1 && s.StartX == nil) {
		return nil, fmt.Errorf("startx nius: %d a node, want 1..%d, with machine.startx", s.StartXNICs, MaxStartXPerNode)
	}
	if s.StartXNICs > 1 && !s.StartXCrossbar {
		return nil, fmt.Errorf("startx nius: %d a node need the crossbar network (StartXCrossbar): the Arctic network joins one NIU a node", s.StartXNICs)
	}
	if s.Rails() > 1 && s.Nodes > 2 && s.Topology == TopologyLeafSpine {
		return nil, fmt.Errorf("nics: %d NICs a node need topology %s (a switch per rail), not %s", s.NICs, TopologyStar, s.Topology)
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
		for r := 0; r < s.Rails(); r++ {
			for _, a := range c.Nodes {
				if err := c.createQueues(a, r); err != nil {
					return nil, err
				}
			}
		}
		return c, nil
	default:
		return nil, fmt.Errorf("transport %q: want %s or %s", s.Transport, TransportRC, TransportSRD)
	}
	// Connected QPs between every pair of nodes, on every rail.
	for r := 0; r < s.Rails(); r++ {
		for _, a := range c.Nodes {
			for _, b := range c.Nodes {
				if a != b {
					if err := c.connect(a, b, r); err != nil {
						return nil, err
					}
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

// Topologies lists the network topologies a cluster may have.
var Topologies = []string{TopologyStar, TopologyLeafSpine, TopologyTorus}

// network joins two nodes by a direct link (a wire each way), more through
// a switch with a wire each way to every node, or through leaf and spine
// switches: one such plane per rail (Spec.NICs), NIC r of every node on
// plane r.
func (c *Cluster) network() error {
	s := c.Spec
	if s.Topology == TopologyTorus {
		return c.torusNetwork()
	}
	if s.Nodes > 2 && s.Topology == TopologyLeafSpine {
		return c.leafSpine()
	}
	for r := 0; r < s.Rails(); r++ {
		if err := c.plane(r); err != nil {
			return err
		}
	}
	return nil
}

// plane builds rail r's network: its names are rail 0's ("net.switch",
// "net.up3") with "net.r<r>." in front of them for the others.
func (c *Cluster) plane(r int) error {
	s := c.Spec
	pre := "net."
	if r > 0 {
		pre = fmt.Sprintf("net.r%d.", r)
	}
	if s.Nodes == 2 {
		for i := 0; i < 2; i++ {
			a, b := c.Nodes[i], c.Nodes[1-i]
			w, err := nic.NewWire(a.Fabric, fmt.Sprintf("%swire%d%d", pre, i, 1-i), s.Wire, a.NICs[r].Unit(), b.NICs[r].Unit())
			if err != nil {
				return err
			}
			a.NICs[r].NetOut, b.NICs[r].NetIn = w.In, w.Out
			a.outs[r] = w
			c.Wires = append(c.Wires, w)
		}
		return nil
	}
	sw, err := nic.NewSwitch(c.Fabric, pre+"switch", nic.SwitchSpec{Ports: s.Nodes, LatencyPS: s.SwitchLatencyPS, QueueLen: 64})
	if err != nil {
		return err
	}
	if r == 0 {
		c.Switch = sw
	}
	c.Switches = append(c.Switches, sw)
	for _, n := range c.Nodes {
		up, err := nic.NewWire(n.Fabric, fmt.Sprintf("%sup%d", pre, n.ID), s.Wire, n.NICs[r].Unit(), sw.Unit())
		if err != nil {
			return err
		}
		down, err := nic.NewWire(c.Fabric, fmt.Sprintf("%sdown%d", pre, n.ID), s.Wire, sw.Unit(), n.NICs[r].Unit())
		if err != nil {
			return err
		}
		n.NICs[r].NetOut, n.NICs[r].NetIn = up.In, down.Out
		n.outs[r] = up
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
		n.outs[0] = up
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
	n := &Node{ID: id, c: c, Mem: memory.NewStore(), heap: heapBase, outs: make([]*nic.Wire, s.Rails())}
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
	n.Driver = iommu.NewDriver(n.IOMMU, tablesBase, tablesSize)
	for r := 0; r < s.Rails(); r++ {
		if err := n.addNIC(r); err != nil {
			return nil, err
		}
	}
	n.NIC, n.Up, n.Down = n.NICs[0], n.Ups[0], n.Downs[0]
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
	for r := range n.NICs {
		n.attachDriver(r)
	}
	if err := n.startXNode(); err != nil {
		return nil, err
	}
	n.Poller = cpu.NewCore(n.CPUClk, p+"cpu_poll", s.CPU, n.Mem)
	if s.PollingHyperthreads == PollingPerCore {
		for k := range n.Cores {
			n.Pollers = append(n.Pollers, cpu.NewCore(n.CPUClk, fmt.Sprintf("%scpu%d_poll", p, k), s.CPU, n.Mem))
		}
	}
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
	n.SP = scratchpad.New(n.CPUClk, p+"scratchpad", ScratchpadSlots, n.IOMMU.Unit())
	n.IOMMU.SP = n.SP.In
	return n, nil
}

// addNIC gives the node its NIC r: PCIe requester ID r+1:00.0 (behind a
// root port of its own), its BAR at BARBase + r × BARStride, a link each
// way into the IOMMU, and the IOMMU domain every NIC of the node shares
// (memory registered once is registered for all of them).
func (n *Node) addNIC(r int) error {
	s := n.c.Spec
	p := fmt.Sprintf("node%d.", n.ID)
	ns := s.NIC
	ns.ID, ns.Node, ns.Index, ns.BAR = tlp.NewID(uint8(1+r), 0, 0), n.ID, r, BARBase+uint64(r)*BARStride
	if size := ns.BARSize(); size > BARStride {
		return fmt.Errorf("nic: a BAR of %d bytes is more than the %d a NIC has", size, BARStride)
	}
	if sw := ns.Software; sw != nil {
		// Its driver's interrupt, to core 0 (attachDriver).
		soft := *sw
		soft.MSIAddr, soft.MSIData = 0xfee0_0000|uint64(n.ID)<<12, softVector(r)
		ns.Software = &soft
	}
	if d := ns.Descriptors; d != nil {
		// The e1000-like rings of this NIC, in the node's memory,
		// registered for it once its domain is attached (below).
		rings := *d
		rings.TX = n.Alloc(uint64(rings.Entries * nic.DescSize))
		rings.RX = n.Alloc(uint64(rings.Entries * nic.DescSize))
		ns.Descriptors = &rings
	}
	x, err := nic.NewNIC(n.Fabric, fmt.Sprintf("%snic%d", p, r), ns)
	if err != nil {
		return err
	}
	up, err := pcie.NewDir(n.Fabric, fmt.Sprintf("%spcie%d.up", p, r), s.PCIe, x.Unit(), n.IOMMU.Unit())
	if err != nil {
		return err
	}
	var downDir *pcie.Dir
	var down, nicIn *sim.Chan[pcie.Packet]
	if s.PCIeDown {
		if downDir, err = pcie.NewDir(n.Fabric, fmt.Sprintf("%spcie%d.down", p, r), s.PCIe, n.IOMMU.Unit(), x.Unit()); err != nil {
			return err
		}
		pcie.Pair(up, downDir)
		down, nicIn = downDir.In, downDir.Out
	} else {
		down = sim.NewChan[pcie.Packet](n.IOMMU.Unit(), x.Unit(), fmt.Sprintf("%spcie%d.down", p, r), 8)
		nicIn = down
	}
	x.DMAOut, x.DMAIn = up.In, nicIn
	port := n.IOMMU.AddPort(up.Out, down)
	n.IOMMU.SetBAR(port, ns.BAR, x.Spec().BARSize())
	if err := n.Driver.Attach(ns.ID, nicDomain); err != nil {
		return err
	}
	if d := ns.Descriptors; d != nil {
		rw := iommu.Perm{Bits: pte.R | pte.W}
		for _, ring := range []uint64{d.TX, d.RX} {
			if err := n.Register(ring, uint64(d.Entries*nic.DescSize), rw); err != nil {
				return fmt.Errorf("nic descriptor ring: %w", err)
			}
			if err := n.Label(ring, uint64(d.Entries*nic.DescSize), KindQueues); err != nil {
				return err
			}
		}
	}
	n.NICs, n.Ups, n.Downs = append(n.NICs, x), append(n.Ups, up), append(n.Downs, downDir)
	return nil
}

// The placements of the polling hyperthreads (Spec.PollingHyperthreads).
const (
	PollingPerNode = "node" // one a node, for every SP log of the node
	PollingPerCore = "core" // one a core, its SMT sibling, for its process's logs
)

// ScratchpadSlots is the tail mirrors a node's scratchpad holds: one an SP
// log.
const ScratchpadSlots = 64

// PollerOf is the polling hyperthread that serves an SP log of core k's
// process: core k's sibling (PollingPerCore) or the node's one.
func (n *Node) PollerOf(k int) *cpu.Core {
	if n.Pollers != nil {
		return n.Pollers[k]
	}
	return n.Poller
}

// pollers is every polling hyperthread of the node: its own and the
// cores' siblings.
func (n *Node) pollers() []*cpu.Core { return append([]*cpu.Core{n.Poller}, n.Pollers...) }

// smp attaches the node's cores, then its polling threads (each a cache
// of its own), to the node's SMP when the spec has one.
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
	for _, t := range n.pollers() {
		if err := n.SMP.Attach(t); err != nil {
			return err
		}
	}
	return nil
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

// SentBytes is every byte the node's NICs put on their wires: their frames
// as sent, with Ethernet framing (retransmissions included).
func (n *Node) SentBytes() uint64 {
	var b uint64
	for _, w := range n.outs {
		b += w.Bytes()
	}
	return b
}

// RailBytes is the bytes NIC r of the node put on its wire.
func (n *Node) RailBytes(r int) uint64 { return n.outs[r].Bytes() }

// NICEnergy is the energy in joules the nodes' NICs spent over the first
// seconds of the run: idle power throughout, and the active power's excess
// while each sent what it sent (Spec.Power).
func (c *Cluster) NICEnergy(seconds float64) float64 {
	e := 0.0
	for _, n := range c.Nodes {
		for _, w := range n.outs {
			e += c.Spec.Power.NIC(w.Bytes(), float64(c.Spec.Wire.RateMbps), seconds)
		}
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

// RegisterHuge takes size bytes of the node's memory on 2 MB pages and
// maps them for the NICs with 2 MB IOMMU pages (hugepage-backed buffers:
// one IOTLB entry covers 512 small pages' worth of DMA).
func (n *Node) RegisterHuge(size uint64, p iommu.Perm) (uint64, error) {
	const huge = 2 << 20
	n.heap = (n.heap + huge - 1) &^ (huge - 1)
	size = (size + huge - 1) &^ (huge - 1)
	a := n.Alloc(size)
	return a, n.Driver.Map(nicDomain, a, a, size, huge, p)
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

// FaultReport says which nodes' IOMMUs blocked DMA requests with a
// translation fault, and how many (up to max nodes named): a blocked write
// is dropped, and a process that waits for it waits for ever. It is empty
// when none did.
func (c *Cluster) FaultReport(max int) string {
	var total uint64
	var nodes []string
	for _, n := range c.Nodes {
		f := n.IOMMU.Faults()
		if f == 0 {
			continue
		}
		total += f
		if len(nodes) < max {
			nodes = append(nodes, fmt.Sprintf("node %d: %d", n.ID, f))
		} else if len(nodes) == max {
			nodes = append(nodes, "…")
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("the IOMMUs blocked %d DMA requests with a translation fault (a write to memory not registered for it is dropped): %s",
		total, strings.Join(nodes, "; "))
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
		for r, x := range n.NICs {
			hx := x.Health()
			h.Retransmitted += hx.Retransmitted
			h.Timeouts += hx.Timeouts
			h.RetryExceeded += hx.RetryExceeded
			h.Flushed += hx.Flushed
			for _, q := range x.Pending() {
				total++
				if len(pending) < max {
					name := fmt.Sprintf("node %d", n.ID)
					if r > 0 {
						name += fmt.Sprintf(" nic %d", r)
					}
					pending = append(pending, fmt.Sprintf("%s %s", name, q))
				}
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
