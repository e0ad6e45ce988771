package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/energy"
	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// Scenario is what `aaemu run` runs: a machine, a workload and the outputs.
// Every numeric key has a range (ranges.go), given in its comment: a value
// outside it is refused before anything is built.
type Scenario struct {
	Seed     uint64       `yaml:"seed" json:"seed"` // any
	Machine  MachineSpec  `yaml:"machine" json:"machine"`
	Workload WorkloadSpec `yaml:"workload" json:"workload"`
	Outputs  OutputSpec   `yaml:"outputs" json:"outputs"`
	// BGLML is Blue Gene/L's message layer as `aaemu paper bgl --scenario`
	// runs it: Costs, the profile of its and MPI's software costs,
	// estimated (the default) or table1 (bglml.CostProfile).
	BGLML struct {
		Costs string `yaml:"costs" json:"costs,omitempty"`
	} `yaml:"bglml" json:"-"`
	// MaxMemoryMiB bounds the memory one experiment may need, as
	// MemoryEstimate reckons it (64..1048576 MiB, default 4096): a larger
	// scenario is refused, naming the keys that make it large, unless
	// this is raised.
	MaxMemoryMiB uint64 `yaml:"max_memory_mib" json:"-"`
	// Partitions is how many goroutines run the nodes (--partitions; 0:
	// chosen by the cluster's size, machine.AutoPartitions). A run option,
	// not part of the model: it never changes a result, only the wall time.
	Partitions int `yaml:"-" json:"-"`
	// CheckEveryPoll makes the cores run every check of their polling
	// loops (--check-every-poll; machine.Cluster.SetPollSleep): a run
	// option, never changing a result, only the work done.
	CheckEveryPoll bool `yaml:"-" json:"-"`
}

// MachineSpec is the part of the cluster a scenario may change.
type MachineSpec struct {
	Nodes int `yaml:"nodes" json:"nodes"` // 2..64
	Cores int `yaml:"cores" json:"cores"` // 1..64
	// NICs per node (1..4), each on a PCIe link of its own into the node's
	// IOMMU and a network plane of its own (the multirail nodes of BXI).
	NICs int `yaml:"nics" json:"nics"`
	// FabricMHz: 1..10000; a frequency whose period is not a whole number
	// of picoseconds (300 MHz: 3333.3 ps) runs at the nearest one (3333
	// ps), which stats.json's clocks record.
	FabricMHz uint64 `yaml:"fabric_mhz" json:"fabric_mhz"`
	Wire      struct {
		RateMbps  uint64 `yaml:"rate_mbps" json:"rate_mbps"`   // 1..1000000
		LatencyNS uint64 `yaml:"latency_ns" json:"latency_ns"` // 0..1e9 (1 s)
		LossPPM   uint32 `yaml:"loss_ppm" json:"loss_ppm"`     // 0..1000000
	} `yaml:"wire" json:"wire"`
	PCIe struct {
		Gen       int    `yaml:"gen" json:"gen"`               // 1..5
		Width     int    `yaml:"width" json:"width"`           // 1, 2, 4, 8, 16
		LatencyNS uint64 `yaml:"latency_ns" json:"latency_ns"` // 0..1e9
		// DownLink makes the root port → NIC direction a link too (mmio.go).
		DownLink bool `yaml:"down_link" json:"down_link,omitempty"`
	} `yaml:"pcie" json:"pcie"`
	NIC struct {
		PMTU         int    `yaml:"pmtu" json:"pmtu"`                   // 256, 512, 1024, 2048, 4096
		RetransmitUS uint64 `yaml:"retransmit_us" json:"retransmit_us"` // 1..1000000
		// A NIC's power while it sends and while it does not, W: the
		// energy a run reports (assumed figures by default). 0..1000,
		// idle ≤ active.
		ActiveW float64 `yaml:"active_w" json:"active_w"`
		IdleW   float64 `yaml:"idle_w" json:"idle_w"`
		// SRAMAccessNS: the NIC's time to serve a host access of its
		// device memory (mmio.go).
		SRAMAccessNS uint64 `yaml:"sram_access_ns" json:"sram_access_ns,omitempty"`
		// ProcessNS: the NIC's receive side takes one frame per ProcessNS
		// (0: the NIC's default, 50 ns; 1..1e6).
		ProcessNS uint64 `yaml:"process_ns" json:"process_ns,omitempty"`
		// Descriptors: e1000 adds an Intel 8254x's descriptor DMAs to
		// every packet (a 16-byte descriptor read and write-back, on rings
		// of DescriptorRing entries, default 256: the Linux e1000
		// driver's); "" none (descriptors.go).
		Descriptors    string `yaml:"descriptors" json:"descriptors,omitempty"`
		DescriptorRing int    `yaml:"descriptor_ring" json:"descriptor_ring,omitempty"`
		// Offload: rdma (the default: puts, gets and atomics in the NIC)
		// or none, an e1000 without RDMA whose driver on core 0 takes
		// every packet after an interrupt (offload.go); InterruptRate its
		// throttle, interrupts a second at most (absent: 20000; 0: off),
		// DriverRxCycles and DriverTxCycles its work a packet (0: 2780).
		Offload        string `yaml:"offload" json:"offload,omitempty"`
		InterruptRate  *int   `yaml:"interrupt_rate" json:"interrupt_rate,omitempty"`
		DriverRxCycles int    `yaml:"driver_rx_cycles" json:"driver_rx_cycles,omitempty"`
		DriverTxCycles int    `yaml:"driver_tx_cycles" json:"driver_tx_cycles,omitempty"`
	} `yaml:"nic" json:"nic"`
	Network struct {
		// Topology of more than two nodes (two share a direct link): star,
		// one switch; leaf-spine, nodes_per_leaf nodes on each leaf switch,
		// every leaf linked to each of spines spine switches.
		Topology        string `yaml:"topology" json:"topology"`
		NodesPerLeaf    int    `yaml:"nodes_per_leaf" json:"nodes_per_leaf"`       // 1..64
		Spines          int    `yaml:"spines" json:"spines"`                       // 1..64
		SwitchLatencyNS uint64 `yaml:"switch_latency_ns" json:"switch_latency_ns"` // 0..1e9
		// RouterNJPerByte: a router's energy per byte it forwards, nJ
		// (0..1000).
		RouterNJPerByte float64 `yaml:"router_nj_per_byte" json:"router_nj_per_byte"`
		// Torus is topology torus's network (torus.go).
		Torus TorusSpec `yaml:"torus" json:"torus,omitzero"`
	} `yaml:"network" json:"network"`
	IOMMU struct {
		// The IOTLB: 1..65536 sets of 1..256 ways, 65536 entries at most.
		IOTLBSets int `yaml:"iotlb_sets" json:"iotlb_sets"`
		IOTLBWays int `yaml:"iotlb_ways" json:"iotlb_ways"`
		// IOTLBEntries, if not 0, is the IOTLB's size instead: its sets
		// are iotlb_entries / iotlb_ways, and iotlb_ways: 0 makes it fully
		// associative (one set), as Figure 7c varies size and
		// associativity apart.
		IOTLBEntries  int    `yaml:"iotlb_entries" json:"iotlb_entries,omitempty"`
		IOTLBEviction string `yaml:"iotlb_eviction" json:"iotlb_eviction"`
		// IOTLBByKind counts the IOTLB's hits and misses by the kind of
		// page (stats iommu.iotlb.kind.KIND.hits, .misses; the DHT's
		// result iotlb_by_kind); IOTLBOnly lets only the pages of one kind
		// use the IOTLB, the others translated outside it at no cost
		// (kinds.go).
		IOTLBByKind   bool   `yaml:"iotlb_by_kind" json:"iotlb_by_kind,omitempty"`
		IOTLBOnly     string `yaml:"iotlb_only" json:"iotlb_only,omitempty"`
		LogCAMEntries int    `yaml:"log_cam_entries" json:"log_cam_entries"` // 1..4096
		// FlushBufferEntries: flushing pages the IOMMU holds (one per log
		// that active flushes wait on), 1..4096.
		FlushBufferEntries int    `yaml:"flush_buffer_entries" json:"flush_buffer_entries"`
		ProcessNS          uint64 `yaml:"process_ns" json:"process_ns"`       // 0..1e9
		MemAccessNS        uint64 `yaml:"mem_access_ns" json:"mem_access_ns"` // 0..1e9
		// Slots: TLPs the IOMMU has in flight at once, 0 (one at a time,
		// the AA paper's model) or 1..1024, a pipeline whose walks and
		// log-descriptor reads share Walkers walkers (1..slots)
		// (docs/iommu.md, "One TLP at a time, or a pipeline").
		Slots   int `yaml:"slots" json:"slots,omitempty"`
		Walkers int `yaml:"walkers" json:"walkers,omitempty"`
		// FlushWaiters: flush gets a flushing page holds at once, 0..1024
		// (0 or 1: one; a second waits at the head of its port).
		FlushWaiters int `yaml:"flush_waiters" json:"flush_waiters,omitempty"`
		// Mode is e-iommu (the extended IOMMU on every node's PCIe path) or
		// no-iommu (no IOMMU: the NIC's requests reach memory untranslated).
		Mode string `yaml:"mode" json:"mode"`
	} `yaml:"iommu" json:"iommu"`
	CPU struct {
		InterruptNS  uint64 `yaml:"interrupt_ns" json:"interrupt_ns"`   // 0..1e9
		ScratchpadNS uint64 `yaml:"scratchpad_ns" json:"scratchpad_ns"` // 0..1e9
		// PollingHyperthreads places the SP mode's polling hyperthreads:
		// node (the default), one a node for every SP log; core, the SMT
		// sibling of each core for its process's logs.
		PollingHyperthreads string `yaml:"polling_hyperthreads" json:"polling_hyperthreads,omitempty"`

		CPUSMP `yaml:",inline"` // SMP nodes (smp.go)
	} `yaml:"cpu" json:"cpu"`
	Memory MemorySpec `yaml:"memory" json:"memory,omitzero"` // SMP nodes (smp.go)
	// StartX, when present, gives each of two nodes a StarT-X NIU (startx.go).
	StartX *StartXSpec `yaml:"startx" json:"startx,omitempty"`
	// Transport of the NICs: rc (the default), a connected queue pair per
	// core per peer node; srd, one queue per core that reaches every node
	// over one reliable context per peer NIC (docs/scenarios.md).
	Transport string `yaml:"transport" json:"transport,omitempty"`
}

// WorkloadSpec selects the workload.
type WorkloadSpec struct {
	// Kind is the workload the scenario runs (dht, counter, getlog,
	// checkpoint, xor, stream, sort, splitc): its section below says how.
	Kind       string         `yaml:"kind"`
	DHT        DHTSpec        `yaml:"dht"`
	Counter    CounterSpec    `yaml:"counter"`
	GetLog     GetLogSpec     `yaml:"getlog"`
	Checkpoint CheckpointSpec `yaml:"checkpoint"`
	XOR        XORSpec        `yaml:"xor"`
	Stream     StreamSpec     `yaml:"stream"`
	Sort       SortSpec       `yaml:"sort"`
	SplitC     SplitCSpec     `yaml:"splitc"`
}

// MarshalJSON writes the kind and its section only: stats.json records the
// workload that ran.
func (w WorkloadSpec) MarshalJSON() ([]byte, error) {
	sections := map[string]any{KindDHT: w.DHT, KindCounter: w.Counter, KindGetLog: w.GetLog, KindCheckpoint: w.Checkpoint,
		KindXOR: w.XOR, KindStream: w.Stream, KindSort: w.Sort, KindSplitC: w.SplitC}
	return json.Marshal(map[string]any{"kind": w.Kind, w.Kind: sections[w.Kind]})
}

// DHTSpec is the hashtable insert benchmark: every scheme at every
// collision ratio.
type DHTSpec struct {
	Inserts       int       `yaml:"inserts" json:"inserts"`               // 1..10000000 per process
	Cells         int       `yaml:"cells" json:"cells"`                   // a power of two 1..2^24
	Collisions    []float64 `yaml:"collisions" json:"collisions"`         // 1..64 ratios 0..1
	Schemes       []string  `yaml:"schemes" json:"schemes"`               // each scheme once
	ComputeCycles int       `yaml:"compute_cycles" json:"compute_cycles"` // 0..1e9
	// AMPollNS is the active-message target's polling interval (AM-Exp's
	// starting interval), 0..1e9; 0 means 1 µs.
	AMPollNS uint64 `yaml:"am_poll_ns" json:"am_poll_ns"`
	// ProcsPerNode: 0 is the two-node run (one process on node 0 inserts
	// into node 1's table); P > 0 (up to machine.cores) gives every node a
	// shard and P inserting processes on its first P cores, each inserting
	// Inserts keys into the other nodes' shards.
	ProcsPerNode int `yaml:"procs_per_node" json:"procs_per_node"`
	// AMOnloadCores: AM-Onload's server cores per node, out of
	// procs_per_node (fewer than it).
	AMOnloadCores int `yaml:"am_onload_cores" json:"am_onload_cores"`
	// Lookups and Deletes: fractions (0..1) of its own keys each process
	// looks up and then deletes once its inserts are in the table.
	Lookups float64 `yaml:"lookups" json:"lookups,omitempty"`
	Deletes float64 `yaml:"deletes" json:"deletes,omitempty"`
	// LogBytes: each owner's access log (AA schemes), 0 = 64 KiB; a
	// multiple of 8, at least twice the largest record (96 bytes), at
	// most 64 MiB.
	LogBytes uint64 `yaml:"log_bytes" json:"log_bytes,omitempty"`
	// AAIntRecords: AA-Int's interrupt moderation, an MSI every that many
	// records (0: every record), filling at most half the log.
	AAIntRecords int `yaml:"aa_int_records" json:"aa_int_records,omitempty"`
	// AALogs (AA schemes, procs_per_node > 1): node, one access log per
	// node's shard; process, one per inserting process, as the paper's
	// threads each own a log.
	AALogs string `yaml:"aa_logs" json:"aa_logs,omitempty"`
	// AMIntModeration: AM-Int's completion-event moderation count, an
	// interrupt every that many messages a node receives (0..65535; 0: 10,
	// as the paper reports); AMIntPeriodNS: the longest a message waits for
	// its interrupt (0..1e9; 0: 10 µs).
	AMIntModeration int    `yaml:"am_int_moderation" json:"am_int_moderation,omitempty"`
	AMIntPeriodNS   uint64 `yaml:"am_int_period_ns" json:"am_int_period_ns,omitempty"`
	// PageZipf (0..10): the keys' locality, new keys falling in the pages
	// of a shard by a Zipf law of this exponent (0: uniformly, as random
	// keys hash).
	PageZipf float64 `yaml:"page_zipf" json:"page_zipf,omitempty"`
}

// OutputSpec chooses what the traced experiment (the first scheme at the
// first collision ratio) writes.
type OutputSpec struct {
	VCD       bool   `yaml:"vcd" json:"vcd"`
	Trace     string `yaml:"trace" json:"trace"` // signal patterns
	TraceFrom string `yaml:"trace_from" json:"trace_from"`
	TraceTo   string `yaml:"trace_to" json:"trace_to"`
	Pcap      bool   `yaml:"pcap" json:"pcap"`
}

// DefaultScenario is `aaemu run` without a file: two nodes on 1 GbE, one
// process inserting into a remote hashtable with AA and with plain RMA at 5%
// and 25% collisions.
func DefaultScenario() Scenario {
	var s Scenario
	s.Seed = 1
	m := &s.Machine
	m.Nodes, m.Cores, m.FabricMHz, m.NICs = 2, 1, 1000, 1
	m.Wire.RateMbps, m.Wire.LatencyNS = 1000, 1000
	m.PCIe.Gen, m.PCIe.Width, m.PCIe.LatencyNS = 3, 8, 100
	m.NIC.PMTU, m.NIC.RetransmitUS = 1024, 200
	p := energy.DefaultParams()
	m.NIC.ActiveW, m.NIC.IdleW, m.Network.RouterNJPerByte = p.NICActiveW, p.NICIdleW, p.RouterJPerByte*1e9
	m.Network.Topology, m.Network.NodesPerLeaf, m.Network.Spines, m.Network.SwitchLatencyNS = machine.TopologyStar, 8, 2, 500
	m.Network.Torus = defaultTorus()
	m.IOMMU.Mode = workload.IOMMUExtended
	m.IOMMU.IOTLBSets, m.IOMMU.IOTLBWays, m.IOMMU.IOTLBEviction = 16, 4, "lru"
	m.IOMMU.LogCAMEntries, m.IOMMU.ProcessNS, m.IOMMU.MemAccessNS = 16, 5, 70
	m.IOMMU.FlushBufferEntries = 8
	m.CPU.InterruptNS, m.CPU.ScratchpadNS = 3000, 15
	s.MaxMemoryMiB = DefaultMaxMemoryMiB
	defaultWorkloads(&s.Workload)
	s.Workload.DHT = DHTSpec{Inserts: 2000, Cells: 1 << 14, Collisions: []float64{0.05, 0.25}, Schemes: []string{"AA-SP", "RMA"}}
	s.Outputs = OutputSpec{VCD: true, Trace: "node1.iommu,node1.nic0,node0.nic0,net", TraceFrom: "0", TraceTo: "40us", Pcap: true}
	return s
}

// ParseScenario reads a scenario file over the defaults. Every mistake is
// an error "file:line: dotted.key: what is wrong (what is allowed)":
// unknown keys (with the known key nearest to it), values of the wrong
// type (a float in an integer key, a negative number in an unsigned one),
// values out of their key's range, and a scenario too large for the host
// (MemoryEstimate over max_memory_mib).
func ParseScenario(name string, data []byte) (Scenario, error) {
	s, _, err := ParseScenarioLines(name, data)
	return s, err
}

// ParseScenarioLines is ParseScenario that also gives the line of a key in
// the file (of the nearest enclosing key the file has; 0: none).
func ParseScenarioLines(name string, data []byte) (Scenario, func(key string) int, error) {
	s := DefaultScenario()
	root, err := input.YAMLTree(name, data)
	if err != nil {
		return s, nil, err
	}
	// YAML replaces a list rather than merging it into the default.
	s.Workload.DHT.Collisions, s.Workload.DHT.Schemes = nil, nil
	dec := NewDecoder(name)
	err = dec.Decode(root, "", &s)
	d := DefaultScenario()
	if s.Workload.DHT.Collisions == nil {
		s.Workload.DHT.Collisions = d.Workload.DHT.Collisions
	}
	if s.Workload.DHT.Schemes == nil {
		s.Workload.DHT.Schemes = d.Workload.DHT.Schemes
	}
	if err != nil {
		return s, dec.Line, err
	}
	if key, err := s.Validate(); err != nil {
		return s, dec.Line, input.Place(err, name, key, dec.Line)
	}
	return s, dec.Line, nil
}

// NewDecoder is the decoder of scenario keys: its errors give each key's
// range as what is allowed. The sweep decodes its grid's values with it.
func NewDecoder(file string) *input.Decoder {
	return &input.Decoder{File: file, Tag: "yaml", Allowed: allowed}
}

// Set decodes n into the scenario's key (dotted, as KeyProblem accepts
// it) as a scenario file's value of that key would be: a section's keys
// are merged into the section, any other value replaces the key's. Errors
// name n as name (the sweep's grid.KEY[i]) and give the key's range.
func (s *Scenario) Set(file, name, key string, n *yaml.Node) error {
	v, _ := field(reflect.ValueOf(s).Elem(), key)
	if !v.IsValid() {
		return &input.Error{File: file, Line: n.Line, Key: name, Problem: "unknown key"}
	}
	base := input.PlainKey(name)
	dec := &input.Decoder{File: file, Tag: "yaml", Allowed: func(k string) string { return allowed(key + strings.TrimPrefix(k, base)) }}
	return dec.Decode(n, name, v.Addr().Interface())
}

// KeyProblem checks a dotted key of a scenario: nil, or an error (without
// a file) that says what is wrong and the key nearest to it.
func KeyProblem(key string) *input.Error {
	return NewDecoder("").Check(reflect.TypeOf(Scenario{}), key)
}

// Validate checks the scenario; it returns the dotted key of the first bad
// value and what is wrong with it, an *input.Error without a file or key
// ("problem (allowed)").
func (s *Scenario) Validate() (string, error) {
	m := &s.Machine
	checks := []func() (string, error){
		s.checkRanges,
		func() (string, error) {
			if v := s.BGLML.Costs; v != "" {
				if _, err := bglml.ParseCostProfile(v); err != nil {
					var known []string
					for _, c := range bglml.CostProfiles {
						known = append(known, c.String())
					}
					return "bglml.costs", notOneOf(v, "a cost profile", known, "estimated: the message layer's per-step estimates; table1: those and the per-message remainder of Table 1")
				}
			}
			return "", nil
		},
		func() (string, error) {
			if _, err := sim.NearestPeriodOfMHz(m.FabricMHz); err != nil {
				return "machine.fabric_mhz", outOfRange(rangeOf["machine.fabric_mhz"], m.FabricMHz)
			}
			return "", nil
		},
		func() (string, error) {
			switch m.PCIe.Width {
			case 1, 2, 4, 8, 16:
				return "", nil
			}
			return "machine.pcie.width", input.Errorf(rangeOf["machine.pcie.width"].text(), "x%d is not a link width", m.PCIe.Width)
		},
		func() (string, error) {
			switch m.NIC.PMTU {
			case 256, 512, 1024, 2048, 4096:
				return "", nil
			}
			return "machine.nic.pmtu", input.Errorf(rangeOf["machine.nic.pmtu"].text(), "%d is not a RoCE path MTU", m.NIC.PMTU)
		},
		func() (string, error) {
			if m.NIC.ActiveW < m.NIC.IdleW {
				return "machine.nic.active_w", input.Errorf(fmt.Sprintf("%v..1000 W: at least machine.nic.idle_w", m.NIC.IdleW), "%v W is below machine.nic.idle_w", m.NIC.ActiveW)
			}
			return "", nil
		},
		func() (string, error) {
			if t := m.Network.Topology; !slices.Contains(machine.Topologies, t) {
				return "machine.network.topology", notOneOf(t, "a topology", machine.Topologies,
					machine.TopologyStar+": one switch; "+machine.TopologyLeafSpine+": leaf and spine switches; "+machine.TopologyTorus+": a 3D torus (machine.network.torus)")
			}
			return "", nil
		},
		s.checkTorus,
		func() (string, error) {
			if m.NICs > 1 && m.Nodes > 2 && m.Network.Topology == machine.TopologyLeafSpine {
				return "machine.nics", input.Errorf("1 with machine.network.topology "+machine.TopologyLeafSpine+"; more with "+machine.TopologyStar+", a switch per NIC",
					"%d NICs a node on a %s network", m.NICs, machine.TopologyLeafSpine)
			}
			return "", nil
		},
		s.checkTransport,
		func() (string, error) {
			io := &m.IOMMU
			switch {
			case io.IOTLBEntries == 0 && io.IOTLBWays == 0:
				return "machine.iommu.iotlb_ways", input.Errorf("1..256; 0 (fully associative) only with machine.iommu.iotlb_entries", "0 ways, and no iotlb_entries to make fully associative")
			case io.IOTLBEntries > 0 && io.IOTLBWays > io.IOTLBEntries:
				return "machine.iommu.iotlb_ways", input.Errorf(fmt.Sprintf("0..%d: at most iotlb_entries (0: fully associative)", io.IOTLBEntries), "%d ways in an IOTLB of %d entries", io.IOTLBWays, io.IOTLBEntries)
			case io.IOTLBEntries > 0 && io.IOTLBWays > 0 && io.IOTLBEntries%io.IOTLBWays != 0:
				return "machine.iommu.iotlb_entries", input.Errorf(fmt.Sprintf("a multiple of iotlb_ways, %d", io.IOTLBWays), "%d entries are not sets of %d ways", io.IOTLBEntries, io.IOTLBWays)
			}
			return "", nil
		},
		func() (string, error) {
			switch io := &m.IOMMU; {
			case io.Slots == 0 && io.Walkers != 0:
				return "machine.iommu.walkers", input.Errorf("0 with machine.iommu.slots 0 (one TLP at a time)", "%d walkers without a pipeline", io.Walkers)
			case io.Slots > 0 && (io.Walkers < 1 || io.Walkers > io.Slots):
				return "machine.iommu.walkers", input.Errorf(fmt.Sprintf("1..%d: at most machine.iommu.slots", io.Slots), "%d walkers in a pipeline of %d slots", io.Walkers, io.Slots)
			}
			return "", nil
		},
		func() (string, error) {
			if m.IOMMU.IOTLBEntries > 0 {
				return "", nil // within its range
			}
			if e := m.IOMMU.IOTLBSets * m.IOMMU.IOTLBWays; e > maxIOTLBEntries {
				return "machine.iommu.iotlb_ways", input.Errorf(fmt.Sprintf("sets × ways at most %d", maxIOTLBEntries), "%d sets × %d ways is %d entries", m.IOMMU.IOTLBSets, m.IOMMU.IOTLBWays, e)
			}
			return "", nil
		},
		func() (string, error) {
			if o := m.IOMMU.IOTLBOnly; o != "" && !slices.Contains(machine.PageKinds, o) {
				return "machine.iommu.iotlb_only", notOneOf(o, "a kind of page", machine.PageKinds, strings.Join(machine.PageKinds, ", "))
			}
			return "", nil
		},
		func() (string, error) {
			if _, err := sim.ParseEviction(m.IOMMU.IOTLBEviction); err != nil {
				return "machine.iommu.iotlb_eviction", notOneOf(m.IOMMU.IOTLBEviction, "an eviction policy", []string{"lru", "fifo", "random"}, "lru, fifo or random")
			}
			return "", nil
		},
		s.checkPollingHyperthreads,
		func() (string, error) {
			switch m.IOMMU.Mode {
			case workload.IOMMUExtended, workload.IOMMUNone:
				return "", nil
			}
			return "machine.iommu.mode", notOneOf(m.IOMMU.Mode, "an IOMMU mode", []string{workload.IOMMUExtended, workload.IOMMUNone},
				workload.IOMMUExtended+": the extended IOMMU; "+workload.IOMMUNone+": no IOMMU on the PCIe path")
		},
		func() (string, error) {
			if !slices.Contains(Kinds, s.Workload.Kind) {
				return "workload.kind", notOneOf(s.Workload.Kind, "a workload", Kinds, strings.Join(Kinds, ", "))
			}
			if s.Workload.Kind != KindDHT {
				return s.checkWorkload()
			}
			return s.checkDHT()
		},
		s.checkSMP,
		s.checkMMIO,
		s.checkDescriptors,
		s.checkOffload,
		s.checkStartX,
		func() (string, error) {
			for _, t := range []struct{ key, v string }{{"outputs.trace_from", s.Outputs.TraceFrom}, {"outputs.trace_to", s.Outputs.TraceTo}} {
				if t.v == "" {
					continue
				}
				if _, err := sim.ParseTick(t.v); err != nil {
					return t.key, input.Errorf("a whole number with unit ps, ns, us, ms or s", "%q is not a time", t.v)
				}
			}
			return "", nil
		},
		s.checkMemory,
	}
	for _, c := range checks {
		if key, err := c(); err != nil {
			return key, err
		}
	}
	return "", nil
}

// notOneOf is the error of a name that is none of the known ones: the
// nearest one when it is a slip.
func notOneOf(v, what string, known []string, allowed string) *input.Error {
	if s := input.Suggest(v, known); s != "" {
		allowed = fmt.Sprintf("did you mean %q? %s", s, allowed)
	}
	return input.Errorf(allowed, "%q is not %s", v, what)
}

// checkPollingHyperthreads checks machine.cpu.polling_hyperthreads.
func (s *Scenario) checkPollingHyperthreads() (string, error) {
	const key = "machine.cpu.polling_hyperthreads"
	const allowed = machine.PollingPerNode + ": one polling hyperthread a node, for every SP log; " +
		machine.PollingPerCore + ": the SMT sibling of each core, for its process's logs"
	switch v := s.Machine.CPU.PollingHyperthreads; v {
	case "", machine.PollingPerNode, machine.PollingPerCore:
	default:
		return key, notOneOf(v, "a placement of the polling hyperthreads", []string{machine.PollingPerNode, machine.PollingPerCore}, allowed)
	}
	// (machine.cores ≤ 64: a node's SP logs, one a process at most, fit
	// its scratchpad's machine.ScratchpadSlots.)
	return "", nil
}

// checkTransport checks machine.transport: rc or srd, and rc for the
// schemes that receive SENDs per source node (srd has one receive queue
// per process).
func (s *Scenario) checkTransport() (string, error) {
	const allowed = "allowed: " + machine.TransportRC + ", " + machine.TransportSRD
	switch s.Machine.Transport {
	case "", machine.TransportRC:
		if q := machine.RCQueuePairs(s.Machine.Nodes, s.Machine.Cores); q > machine.MaxRCQueuePairs {
			return "machine.transport", input.Errorf(allowed+"; srd above that",
				"rc gives each of a NIC's %d cores a queue pair per node: %d nodes × %d cores need %d, more than a NIC's %d doorbells", s.Machine.Cores, s.Machine.Nodes, s.Machine.Cores, q, machine.MaxRCQueuePairs)
		}
		return "", nil
	case machine.TransportSRD:
	default:
		return "machine.transport", notOneOf(s.Machine.Transport, "a transport", []string{machine.TransportRC, machine.TransportSRD}, allowed)
	}
	// The sort's AM receives chunks per source node in an order of its own.
	w := &s.Workload
	if w.Kind != KindSort {
		return "", nil
	}
	for _, sc := range w.schemes() {
		if workload.Scheme(sc) == workload.AM {
			return "machine.transport", input.Errorf(allowed+"; rc for a scheme that receives SENDs per source node",
				"srd, but workload.%s.schemes has %s, whose receivers post their buffers per source node (srd has one receive queue per process)", w.Kind, sc)
		}
	}
	return "", nil
}

// checkDHT checks the DHT's section beyond the ranges.
func (s *Scenario) checkDHT() (string, error) {
	m := &s.Machine
	d := &s.Workload.DHT
	logBytes := d.LogBytes
	if logBytes == 0 {
		logBytes = 64 << 10
	}
	rec := uint64(record.Size(16))
	switch {
	case d.Cells&(d.Cells-1) != 0:
		return "workload.dht.cells", input.Errorf(rangeOf["workload.dht.cells"].text(), "%d is not a power of two", d.Cells)
	case len(d.Schemes) == 0:
		return "workload.dht.schemes", input.Errorf("one scheme or more: "+strings.Join(dhtSchemeNames(), ", "), "an empty list")
	case len(d.Collisions) == 0 || len(d.Collisions) > maxCollisions:
		return "workload.dht.collisions", input.Errorf(fmt.Sprintf("1..%d ratios 0..1", maxCollisions), "a list of %d ratios", len(d.Collisions))
	case d.ProcsPerNode > m.Cores:
		return "workload.dht.procs_per_node", input.Errorf(fmt.Sprintf("0..%d: up to machine.cores", m.Cores), "%d is more than machine.cores", d.ProcsPerNode)
	case d.AMOnloadCores > 0 && d.AMOnloadCores >= d.ProcsPerNode:
		return "workload.dht.am_onload_cores", input.Errorf(fmt.Sprintf("0..%d: fewer than procs_per_node", max(d.ProcsPerNode-1, 0)), "%d is not fewer than procs_per_node, %d", d.AMOnloadCores, d.ProcsPerNode)
	case d.LogBytes != 0 && d.LogBytes%8 != 0:
		return "workload.dht.log_bytes", input.Errorf(rangeOf["workload.dht.log_bytes"].text(), "%d is not a multiple of 8", d.LogBytes)
	case d.LogBytes != 0 && d.LogBytes < 2*rec:
		return "workload.dht.log_bytes", input.Errorf(rangeOf["workload.dht.log_bytes"].text(), "%d bytes do not hold two records of an insert", d.LogBytes)
	case d.AALogs != "" && d.AALogs != "node" && d.AALogs != "process":
		return "workload.dht.aa_logs", notOneOf(d.AALogs, "a log layout", []string{"node", "process"}, "node: one access log per node; process: one per inserting process")
	case uint64(d.AAIntRecords)*rec > logBytes/2:
		return "workload.dht.aa_int_records", input.Errorf(fmt.Sprintf("0..%d: records filling at most half the %d-byte log", logBytes/2/rec, logBytes), "%d records fill more than half the log", d.AAIntRecords)
	}
	for i, sc := range d.Schemes {
		k, err := workload.ParseScheme(sc)
		key := fmt.Sprintf("workload.dht.schemes[%d]", i)
		if err != nil {
			return key, notOneOf(sc, "a DHT scheme", dhtSchemeNames(), strings.Join(dhtSchemeNames(), ", "))
		}
		if slices.Index(d.Schemes, sc) < i {
			return key, input.Errorf("each scheme once", "%s is in the list twice", sc)
		}
		if k.Active() && m.IOMMU.Mode == workload.IOMMUNone {
			return "machine.iommu.mode", input.Errorf(workload.IOMMUExtended+" for the AA schemes", "%s, but workload.dht.schemes has %s, which needs the extended IOMMU", workload.IOMMUNone, sc)
		}
		if k == workload.AMOnload && d.AMOnloadCores == 0 {
			return "workload.dht.am_onload_cores", input.Errorf("1..procs_per_node−1 server cores", "0, but workload.dht.schemes has AM-Onload, which needs server cores")
		}
		if k.Active() && d.AALogs == "process" && d.ProcsPerNode > m.IOMMU.FlushBufferEntries {
			return "machine.iommu.flush_buffer_entries", input.Errorf(fmt.Sprintf("%d..4096: a flushing page per process (workload.dht.aa_logs: process)", d.ProcsPerNode),
				"%d flushing pages, fewer than workload.dht.procs_per_node", m.IOMMU.FlushBufferEntries)
		}
	}
	return "", nil
}

func dhtSchemeNames() []string {
	var l []string
	for _, k := range []workload.Scheme{workload.AAPoll, workload.AAInt, workload.AASP, workload.RMA, workload.AM, workload.AMExp, workload.AMOnload, workload.AMInt} {
		l = append(l, string(k))
	}
	return l
}

// maxAMIntModeration bounds AM-Int's moderation count: mlx5's cq_count
// field is 16 bits.
const maxAMIntModeration = 65535

// Power is the machine's power figures.
func (s *Scenario) Power() energy.Params {
	m := &s.Machine
	return energy.Params{NICActiveW: m.NIC.ActiveW, NICIdleW: m.NIC.IdleW, RouterJPerByte: m.Network.RouterNJPerByte * 1e-9}
}

// ClusterSpec turns the machine part into a cluster spec.
func (s *Scenario) ClusterSpec() machine.Spec {
	c := machine.DefaultSpec()
	m := &s.Machine
	c.Nodes, c.Cores, c.FabricMHz = m.Nodes, m.Cores, m.FabricMHz
	c.Transport, c.NICs = m.Transport, m.NICs
	c.Wire.RateMbps, c.Wire.LatencyPS, c.Wire.LossPPM = m.Wire.RateMbps, sim.Tick(m.Wire.LatencyNS)*sim.NS, m.Wire.LossPPM
	c.PCIe.Gen, c.PCIe.Width, c.PCIe.LatencyPS = m.PCIe.Gen, m.PCIe.Width, sim.Tick(m.PCIe.LatencyNS)*sim.NS
	c.NIC.PMTU, c.NIC.RetransmitPS = m.NIC.PMTU, sim.Tick(m.NIC.RetransmitUS)*sim.US
	c.Power = s.Power()
	c.Topology, c.NodesPerLeaf, c.Spines = m.Network.Topology, m.Network.NodesPerLeaf, m.Network.Spines
	c.SwitchLatencyPS = sim.Tick(m.Network.SwitchLatencyNS) * sim.NS
	c.Torus = s.torusSpec()
	c.NodesPerRouter = m.Network.Torus.NodesPerRouter
	c.TorusTies = m.Network.Torus.Ties
	c.IOMMU.Bypass = m.IOMMU.Mode == workload.IOMMUNone
	c.IOMMU.IOTLBSets, c.IOMMU.IOTLBWays = s.IOTLBShape()
	c.IOMMU.IOTLBEviction, _ = sim.ParseEviction(m.IOMMU.IOTLBEviction)
	c.IOMMU.IOTLBByKind, c.IOMMU.IOTLBOnly = m.IOMMU.IOTLBByKind, m.IOMMU.IOTLBOnly
	c.IOMMU.LogCAMEntries = m.IOMMU.LogCAMEntries
	c.IOMMU.FlushBufferEntries = m.IOMMU.FlushBufferEntries
	c.IOMMU.ProcessPS, c.IOMMU.MemAccessPS = sim.Tick(m.IOMMU.ProcessNS)*sim.NS, sim.Tick(m.IOMMU.MemAccessNS)*sim.NS
	c.IOMMU.Slots, c.IOMMU.Walkers = m.IOMMU.Slots, m.IOMMU.Walkers
	c.IOMMU.FlushWaiters = m.IOMMU.FlushWaiters
	if m.NIC.ProcessNS != 0 {
		c.NIC.ProcessPS = sim.Tick(m.NIC.ProcessNS) * sim.NS
	}
	c.CPU.InterruptPS, c.CPU.ScratchpadPS = sim.Tick(m.CPU.InterruptNS)*sim.NS, sim.Tick(m.CPU.ScratchpadNS)*sim.NS
	c.PollingHyperthreads = m.CPU.PollingHyperthreads
	s.smpSpec(&c)
	s.mmioSpec(&c)
	s.descriptorSpec(&c)
	s.offloadSpec(&c)
	s.startXSpec(&c)
	return c
}

// IOTLBShape is the IOTLB's sets and ways: iotlb_sets × iotlb_ways, or
// with iotlb_entries that many entries in sets of iotlb_ways ways (one set
// of them all for 0 ways: fully associative).
func (s *Scenario) IOTLBShape() (sets, ways int) {
	io := &s.Machine.IOMMU
	switch {
	case io.IOTLBEntries == 0:
		return io.IOTLBSets, io.IOTLBWays
	case io.IOTLBWays == 0:
		return 1, io.IOTLBEntries
	}
	return io.IOTLBEntries / io.IOTLBWays, io.IOTLBWays
}

// Experiment is one scheme at one collision ratio.
type Experiment struct {
	Scheme     workload.Scheme
	Collisions float64
}

// Experiments lists the scenario's runs in order; the first is traced.
func (s *Scenario) Experiments() []Experiment {
	var out []Experiment
	if s.Workload.Kind != KindDHT {
		for _, sc := range s.Workload.schemes() {
			out = append(out, Experiment{Scheme: workload.Scheme(sc)})
		}
		return out
	}
	for _, sc := range s.Workload.DHT.Schemes {
		k, _ := workload.ParseScheme(sc)
		for _, c := range s.Workload.DHT.Collisions {
			out = append(out, Experiment{Scheme: k, Collisions: c})
		}
	}
	return out
}

// Build makes the cluster and the workload of one experiment on engine e.
func (s *Scenario) Build(e *sim.Engine, x Experiment) (*aa.System, *workload.DHT, error) {
	c, err := aa.New(e, s.ClusterSpec())
	if err != nil {
		return nil, nil, err
	}
	w, err := workload.SetupDHT(c, s.DHTConfig(x))
	if err != nil {
		return nil, nil, err
	}
	return c, w, nil
}

// DHTConfig is the DHT's configuration of one experiment.
func (s *Scenario) DHTConfig(x Experiment) workload.DHTConfig {
	d := s.Workload.DHT
	return workload.DHTConfig{Scheme: x.Scheme, Inserts: d.Inserts, Cells: d.Cells, Collisions: x.Collisions,
		Compute: d.ComputeCycles, PollPS: sim.Tick(d.AMPollNS) * sim.NS, Procs: d.ProcsPerNode, OnloadCores: d.AMOnloadCores,
		Lookups: d.Lookups, Deletes: d.Deletes, LogBytes: d.LogBytes, AAIntRecords: d.AAIntRecords, ProcessLogs: d.AALogs == "process",
		AMIntCount: d.AMIntModeration, AMIntPeriodPS: sim.Tick(d.AMIntPeriodNS) * sim.NS, PageZipf: d.PageZipf, Seed: s.Seed}
}

// Clone is a deep copy of the scenario: setting a key of the copy (a
// sweep's point) never writes into the original, whose optional sections
// and lists it shares nothing of.
func (s Scenario) Clone() Scenario {
	c := s
	if p := s.Machine.CPU.Coherence; p != nil {
		q := *p
		c.Machine.CPU.Coherence = &q
	}
	w := &c.Workload
	w.DHT.Collisions = slices.Clone(w.DHT.Collisions)
	w.DHT.Schemes = slices.Clone(w.DHT.Schemes)
	w.Counter.Schemes = slices.Clone(w.Counter.Schemes)
	w.GetLog.Schemes = slices.Clone(w.GetLog.Schemes)
	w.XOR.Schemes = slices.Clone(w.XOR.Schemes)
	w.Stream.Schemes = slices.Clone(w.Stream.Schemes)
	w.Sort.Schemes = slices.Clone(w.Sort.Schemes)
	w.SplitC.Schemes = slices.Clone(w.SplitC.Schemes)
	return c
}
