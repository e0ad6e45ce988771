package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/energy"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// Scenario is what `aaemu run` runs: a machine, a workload and the outputs.
type Scenario struct {
	Seed     uint64       `yaml:"seed" json:"seed"`
	Machine  MachineSpec  `yaml:"machine" json:"machine"`
	Workload WorkloadSpec `yaml:"workload" json:"workload"`
	Outputs  OutputSpec   `yaml:"outputs" json:"outputs"`
}

// MachineSpec is the part of the cluster a scenario may change.
type MachineSpec struct {
	Nodes     int    `yaml:"nodes" json:"nodes"`
	Cores     int    `yaml:"cores" json:"cores"`
	FabricMHz uint64 `yaml:"fabric_mhz" json:"fabric_mhz"`
	Wire      struct {
		RateMbps  uint64 `yaml:"rate_mbps" json:"rate_mbps"`
		LatencyNS uint64 `yaml:"latency_ns" json:"latency_ns"`
		LossPPM   uint32 `yaml:"loss_ppm" json:"loss_ppm"`
	} `yaml:"wire" json:"wire"`
	PCIe struct {
		Gen       int    `yaml:"gen" json:"gen"`
		Width     int    `yaml:"width" json:"width"`
		LatencyNS uint64 `yaml:"latency_ns" json:"latency_ns"`
		// DownLink makes the root port → NIC direction a link too (mmio.go).
		DownLink bool `yaml:"down_link" json:"down_link,omitempty"`
	} `yaml:"pcie" json:"pcie"`
	NIC struct {
		PMTU         int    `yaml:"pmtu" json:"pmtu"`
		RetransmitUS uint64 `yaml:"retransmit_us" json:"retransmit_us"`
		// A NIC's power while it sends and while it does not, W: the
		// energy a run reports (assumed figures by default).
		ActiveW float64 `yaml:"active_w" json:"active_w"`
		IdleW   float64 `yaml:"idle_w" json:"idle_w"`
		// SRAMAccessNS: the NIC's time to serve a host access of its
		// device memory (mmio.go).
		SRAMAccessNS uint64 `yaml:"sram_access_ns" json:"sram_access_ns,omitempty"`
	} `yaml:"nic" json:"nic"`
	Network struct {
		// Topology of more than two nodes (two share a direct link): star,
		// one switch; leaf-spine, nodes_per_leaf nodes on each leaf switch,
		// every leaf linked to each of spines spine switches.
		Topology        string `yaml:"topology" json:"topology"`
		NodesPerLeaf    int    `yaml:"nodes_per_leaf" json:"nodes_per_leaf"`
		Spines          int    `yaml:"spines" json:"spines"`
		SwitchLatencyNS uint64 `yaml:"switch_latency_ns" json:"switch_latency_ns"`
		// RouterNJPerByte: a router's energy per byte it forwards, nJ.
		RouterNJPerByte float64 `yaml:"router_nj_per_byte" json:"router_nj_per_byte"`
	} `yaml:"network" json:"network"`
	IOMMU struct {
		IOTLBSets     int    `yaml:"iotlb_sets" json:"iotlb_sets"`
		IOTLBWays     int    `yaml:"iotlb_ways" json:"iotlb_ways"`
		IOTLBEviction string `yaml:"iotlb_eviction" json:"iotlb_eviction"`
		LogCAMEntries int    `yaml:"log_cam_entries" json:"log_cam_entries"`
		// FlushBufferEntries: flushing pages the IOMMU holds (one per log
		// that active flushes wait on).
		FlushBufferEntries int    `yaml:"flush_buffer_entries" json:"flush_buffer_entries"`
		ProcessNS          uint64 `yaml:"process_ns" json:"process_ns"`
		MemAccessNS        uint64 `yaml:"mem_access_ns" json:"mem_access_ns"`
		// Mode is e-iommu (the extended IOMMU on every node's PCIe path) or
		// no-iommu (no IOMMU: the NIC's requests reach memory untranslated).
		Mode string `yaml:"mode" json:"mode"`
	} `yaml:"iommu" json:"iommu"`
	CPU struct {
		InterruptNS  uint64 `yaml:"interrupt_ns" json:"interrupt_ns"`
		ScratchpadNS uint64 `yaml:"scratchpad_ns" json:"scratchpad_ns"`

		CPUSMP `yaml:",inline"` // SMP nodes (smp.go)
	} `yaml:"cpu" json:"cpu"`
	Memory MemorySpec `yaml:"memory" json:"memory,omitzero"` // SMP nodes (smp.go)
}

// WorkloadSpec selects the workload.
type WorkloadSpec struct {
	// Kind is the workload the scenario runs (dht, counter, getlog,
	// checkpoint, xor, stream, sort): its section below says how.
	Kind       string         `yaml:"kind"`
	DHT        DHTSpec        `yaml:"dht"`
	Counter    CounterSpec    `yaml:"counter"`
	GetLog     GetLogSpec     `yaml:"getlog"`
	Checkpoint CheckpointSpec `yaml:"checkpoint"`
	XOR        XORSpec        `yaml:"xor"`
	Stream     StreamSpec     `yaml:"stream"`
	Sort       SortSpec       `yaml:"sort"`
}

// MarshalJSON writes the kind and its section only: stats.json records the
// workload that ran.
func (w WorkloadSpec) MarshalJSON() ([]byte, error) {
	sections := map[string]any{KindDHT: w.DHT, KindCounter: w.Counter, KindGetLog: w.GetLog, KindCheckpoint: w.Checkpoint,
		KindXOR: w.XOR, KindStream: w.Stream, KindSort: w.Sort}
	return json.Marshal(map[string]any{"kind": w.Kind, w.Kind: sections[w.Kind]})
}

// DHTSpec is the hashtable insert benchmark: every scheme at every
// collision ratio.
type DHTSpec struct {
	Inserts       int       `yaml:"inserts" json:"inserts"`
	Cells         int       `yaml:"cells" json:"cells"`
	Collisions    []float64 `yaml:"collisions" json:"collisions"`
	Schemes       []string  `yaml:"schemes" json:"schemes"`
	ComputeCycles int       `yaml:"compute_cycles" json:"compute_cycles"`
	// AMPollNS is the active-message target's polling interval (AM-Exp's
	// starting interval); 0 means 1 µs.
	AMPollNS uint64 `yaml:"am_poll_ns" json:"am_poll_ns"`
	// ProcsPerNode: 0 is the two-node run (one process on node 0 inserts
	// into node 1's table); P > 0 gives every node a shard and P inserting
	// processes on its first P cores, each inserting Inserts keys into the
	// other nodes' shards.
	ProcsPerNode int `yaml:"procs_per_node" json:"procs_per_node"`
	// AMOnloadCores: AM-Onload's server cores per node, out of
	// procs_per_node.
	AMOnloadCores int `yaml:"am_onload_cores" json:"am_onload_cores"`
	// Lookups and Deletes: fractions (0..1) of its own keys each process
	// looks up and then deletes once its inserts are in the table.
	Lookups float64 `yaml:"lookups" json:"lookups,omitempty"`
	Deletes float64 `yaml:"deletes" json:"deletes,omitempty"`
	// LogBytes: each owner's access log (AA schemes), 0 = 64 KiB; a
	// multiple of 8, at least twice the largest record (96 bytes).
	LogBytes uint64 `yaml:"log_bytes" json:"log_bytes,omitempty"`
	// AAIntRecords: AA-Int's interrupt moderation, an MSI every that many
	// records (0: every record).
	AAIntRecords int `yaml:"aa_int_records" json:"aa_int_records,omitempty"`
	// AALogs (AA schemes, procs_per_node > 1): node, one access log per
	// node's shard; process, one per inserting process, as the paper's
	// threads each own a log.
	AALogs string `yaml:"aa_logs" json:"aa_logs,omitempty"`
	// AMIntModeration: AM-Int's completion-event moderation count, an
	// interrupt every that many messages a node receives (0: 10, as the
	// paper reports); AMIntPeriodNS: the longest a message waits for its
	// interrupt (0: 10 µs).
	AMIntModeration int    `yaml:"am_int_moderation" json:"am_int_moderation,omitempty"`
	AMIntPeriodNS   uint64 `yaml:"am_int_period_ns" json:"am_int_period_ns,omitempty"`
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
	m.Nodes, m.Cores, m.FabricMHz = 2, 1, 1000
	m.Wire.RateMbps, m.Wire.LatencyNS = 1000, 1000
	m.PCIe.Gen, m.PCIe.Width, m.PCIe.LatencyNS = 3, 8, 100
	m.NIC.PMTU, m.NIC.RetransmitUS = 1024, 200
	p := energy.DefaultParams()
	m.NIC.ActiveW, m.NIC.IdleW, m.Network.RouterNJPerByte = p.NICActiveW, p.NICIdleW, p.RouterJPerByte*1e9
	m.Network.Topology, m.Network.NodesPerLeaf, m.Network.Spines, m.Network.SwitchLatencyNS = machine.TopologyStar, 8, 2, 500
	m.IOMMU.Mode = workload.IOMMUExtended
	m.IOMMU.IOTLBSets, m.IOMMU.IOTLBWays, m.IOMMU.IOTLBEviction = 16, 4, "lru"
	m.IOMMU.LogCAMEntries, m.IOMMU.ProcessNS, m.IOMMU.MemAccessNS = 16, 5, 70
	m.IOMMU.FlushBufferEntries = 8
	m.CPU.InterruptNS, m.CPU.ScratchpadNS = 3000, 15
	defaultWorkloads(&s.Workload)
	s.Workload.DHT = DHTSpec{Inserts: 2000, Cells: 1 << 14, Collisions: []float64{0.05, 0.25}, Schemes: []string{"AA-SP", "RMA"}}
	s.Outputs = OutputSpec{VCD: true, Trace: "node1.iommu,node1.nic0,node0.nic0,net", TraceFrom: "0", TraceTo: "40us", Pcap: true}
	return s
}

// ParseScenario reads a scenario file over the defaults. Unknown keys, bad
// types and bad values are errors that name the file, the line and the key.
func ParseScenario(name string, data []byte) (Scenario, error) {
	s := DefaultScenario()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return s, fmt.Errorf("%s: %s", name, flatYAML(err))
	}
	// YAML replaces a list rather than merging it into the default.
	s.Workload.DHT.Collisions, s.Workload.DHT.Schemes = nil, nil
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return s, fmt.Errorf("%s: %s", name, flatYAML(err))
	}
	d := DefaultScenario()
	if s.Workload.DHT.Collisions == nil {
		s.Workload.DHT.Collisions = d.Workload.DHT.Collisions
	}
	if s.Workload.DHT.Schemes == nil {
		s.Workload.DHT.Schemes = d.Workload.DHT.Schemes
	}
	if key, err := s.Validate(); err != nil {
		if line := lineOf(&root, strings.Split(key, ".")); line > 0 {
			return s, fmt.Errorf("%s:%d: %s: %w", name, line, key, err)
		}
		return s, fmt.Errorf("%s: %s: %w", name, key, err)
	}
	return s, nil
}

func flatYAML(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return err.Error()
}

// lineOf finds the line of a dotted key in a YAML document.
func lineOf(n *yaml.Node, path []string) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, k := range path {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

// Validate checks the scenario; it returns the dotted key of the first bad
// value and what is wrong with it.
func (s *Scenario) Validate() (string, error) {
	m := &s.Machine
	pos := func(key string, v uint64) (string, error) {
		if v == 0 {
			return key, fmt.Errorf("must be positive")
		}
		return "", nil
	}
	checks := []func() (string, error){
		func() (string, error) {
			if m.Nodes < 2 || m.Nodes > 64 {
				return "machine.nodes", fmt.Errorf("%d out of 2..64 (two nodes share a direct link, more a switch)", m.Nodes)
			}
			return "", nil
		},
		func() (string, error) {
			if m.Cores < 1 || m.Cores > 64 {
				return "machine.cores", fmt.Errorf("%d out of 1..64", m.Cores)
			}
			return "", nil
		},
		func() (string, error) {
			if _, err := sim.PeriodOfMHz(m.FabricMHz); err != nil {
				return "machine.fabric_mhz", err
			}
			return "", nil
		},
		func() (string, error) { return pos("machine.wire.rate_mbps", m.Wire.RateMbps) },
		func() (string, error) {
			if m.Wire.LossPPM > 1_000_000 {
				return "machine.wire.loss_ppm", fmt.Errorf("%d exceeds one million", m.Wire.LossPPM)
			}
			return "", nil
		},
		func() (string, error) {
			if m.PCIe.Gen < 1 || m.PCIe.Gen > 5 {
				return "machine.pcie.gen", fmt.Errorf("%d out of 1..5", m.PCIe.Gen)
			}
			return "", nil
		},
		func() (string, error) {
			switch m.PCIe.Width {
			case 1, 2, 4, 8, 16:
				return "", nil
			}
			return "machine.pcie.width", fmt.Errorf("x%d: want 1, 2, 4, 8 or 16", m.PCIe.Width)
		},
		func() (string, error) {
			switch m.NIC.PMTU {
			case 256, 512, 1024, 2048, 4096:
				return "", nil
			}
			return "machine.nic.pmtu", fmt.Errorf("%d: want 256, 512, 1024, 2048 or 4096", m.NIC.PMTU)
		},
		func() (string, error) { return pos("machine.nic.retransmit_us", m.NIC.RetransmitUS) },
		func() (string, error) {
			switch {
			case m.NIC.IdleW < 0:
				return "machine.nic.idle_w", fmt.Errorf("%v W is negative", m.NIC.IdleW)
			case m.NIC.ActiveW < m.NIC.IdleW:
				return "machine.nic.active_w", fmt.Errorf("%v W, below the idle %v W", m.NIC.ActiveW, m.NIC.IdleW)
			case m.Network.RouterNJPerByte < 0:
				return "machine.network.router_nj_per_byte", fmt.Errorf("%v nJ is negative", m.Network.RouterNJPerByte)
			case m.Network.Topology != machine.TopologyStar && m.Network.Topology != machine.TopologyLeafSpine:
				return "machine.network.topology", fmt.Errorf("%q: want %s (one switch) or %s (leaf and spine switches)", m.Network.Topology, machine.TopologyStar, machine.TopologyLeafSpine)
			case m.Network.NodesPerLeaf < 1:
				return "machine.network.nodes_per_leaf", fmt.Errorf("%d, want at least 1", m.Network.NodesPerLeaf)
			case m.Network.Spines < 1:
				return "machine.network.spines", fmt.Errorf("%d, want at least 1", m.Network.Spines)
			}
			return "", nil
		},
		func() (string, error) {
			switch m.IOMMU.Mode {
			case workload.IOMMUExtended, workload.IOMMUNone:
				return "", nil
			}
			return "machine.iommu.mode", fmt.Errorf("%q: want %s (the extended IOMMU) or %s (no IOMMU on the PCIe path)", m.IOMMU.Mode, workload.IOMMUExtended, workload.IOMMUNone)
		},
		func() (string, error) { return pos("machine.iommu.iotlb_sets", uint64(max(m.IOMMU.IOTLBSets, 0))) },
		func() (string, error) { return pos("machine.iommu.iotlb_ways", uint64(max(m.IOMMU.IOTLBWays, 0))) },
		func() (string, error) {
			if _, err := sim.ParseEviction(m.IOMMU.IOTLBEviction); err != nil {
				return "machine.iommu.iotlb_eviction", err
			}
			return "", nil
		},
		func() (string, error) {
			return pos("machine.iommu.log_cam_entries", uint64(max(m.IOMMU.LogCAMEntries, 0)))
		},
		func() (string, error) {
			return pos("machine.iommu.flush_buffer_entries", uint64(max(m.IOMMU.FlushBufferEntries, 0)))
		},
		func() (string, error) {
			if !slices.Contains(Kinds, s.Workload.Kind) {
				return "workload.kind", fmt.Errorf("%q: want one of %s", s.Workload.Kind, strings.Join(Kinds, ", "))
			}
			if s.Workload.Kind != KindDHT {
				return s.checkWorkload()
			}
			d := &s.Workload.DHT
			logBytes := d.LogBytes
			if logBytes == 0 {
				logBytes = 64 << 10
			}
			switch {
			case d.Inserts < 1:
				return "workload.dht.inserts", fmt.Errorf("%d, want at least 1", d.Inserts)
			case d.Cells < 1 || d.Cells&(d.Cells-1) != 0:
				return "workload.dht.cells", fmt.Errorf("%d is not a power of two", d.Cells)
			case len(d.Schemes) == 0:
				return "workload.dht.schemes", fmt.Errorf("empty")
			case len(d.Collisions) == 0:
				return "workload.dht.collisions", fmt.Errorf("empty")
			case d.ComputeCycles < 0:
				return "workload.dht.compute_cycles", fmt.Errorf("negative")
			case d.ProcsPerNode < 0 || d.ProcsPerNode > m.Cores:
				return "workload.dht.procs_per_node", fmt.Errorf("%d, want 0..machine.cores (%d)", d.ProcsPerNode, m.Cores)
			case d.AMOnloadCores < 0 || d.AMOnloadCores > 0 && d.AMOnloadCores >= d.ProcsPerNode:
				return "workload.dht.am_onload_cores", fmt.Errorf("%d, want fewer than procs_per_node (%d)", d.AMOnloadCores, d.ProcsPerNode)
			case d.Lookups < 0 || d.Lookups > 1:
				return "workload.dht.lookups", fmt.Errorf("%v out of 0..1 (a fraction of each process's keys)", d.Lookups)
			case d.Deletes < 0 || d.Deletes > 1:
				return "workload.dht.deletes", fmt.Errorf("%v out of 0..1 (a fraction of each process's keys)", d.Deletes)
			case d.LogBytes != 0 && (d.LogBytes%8 != 0 || d.LogBytes < 2*uint64(record.Size(16))):
				return "workload.dht.log_bytes", fmt.Errorf("%d, want a multiple of 8 of at least %d (two records of an insert)", d.LogBytes, 2*record.Size(16))
			case d.AALogs != "" && d.AALogs != "node" && d.AALogs != "process":
				return "workload.dht.aa_logs", fmt.Errorf("%q: want node (one access log per node) or process (one per inserting process)", d.AALogs)
			case d.AAIntRecords < 0 || uint64(d.AAIntRecords)*uint64(record.Size(16)) > logBytes/2:
				return "workload.dht.aa_int_records", fmt.Errorf("%d, want 0..%d (records filling at most half the log)", d.AAIntRecords, logBytes/2/uint64(record.Size(16)))
			case d.AMIntModeration < 0 || d.AMIntModeration > maxAMIntModeration:
				return "workload.dht.am_int_moderation", fmt.Errorf("%d out of 1..%d messages per interrupt (0: %d)", d.AMIntModeration, maxAMIntModeration, workload.DefaultAMIntCount)
			case d.AMIntPeriodNS > uint64(sim.S/sim.NS):
				return "workload.dht.am_int_period_ns", fmt.Errorf("%d ns: more than a second (0: %d ns)", d.AMIntPeriodNS, uint64(workload.DefaultAMIntPeriod/sim.NS))
			}
			for _, sc := range d.Schemes {
				if sc == string(workload.AMOnload) && d.AMOnloadCores == 0 {
					return "workload.dht.am_onload_cores", fmt.Errorf("AM-Onload needs server cores (1..procs_per_node−1)")
				}
			}
			for _, c := range d.Collisions {
				if c < 0 || c > 1 {
					return "workload.dht.collisions", fmt.Errorf("%v out of 0..1", c)
				}
			}
			for _, sc := range d.Schemes {
				k, err := workload.ParseScheme(sc)
				if err != nil {
					return "workload.dht.schemes", err
				}
				if k.Active() && m.IOMMU.Mode == workload.IOMMUNone {
					return "machine.iommu.mode", fmt.Errorf("%s: workload.dht.schemes has %s, which needs the extended IOMMU (%s)", workload.IOMMUNone, sc, workload.IOMMUExtended)
				}
			}
			return "", nil
		},
		s.checkSMP,
		s.checkMMIO,
		func() (string, error) {
			for _, t := range []struct{ key, v string }{{"outputs.trace_from", s.Outputs.TraceFrom}, {"outputs.trace_to", s.Outputs.TraceTo}} {
				if t.v == "" {
					continue
				}
				if _, err := sim.ParseTick(t.v); err != nil {
					return t.key, err
				}
			}
			return "", nil
		},
	}
	for _, c := range checks {
		if key, err := c(); err != nil {
			return key, err
		}
	}
	return "", nil
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
	c.Wire.RateMbps, c.Wire.LatencyPS, c.Wire.LossPPM = m.Wire.RateMbps, sim.Tick(m.Wire.LatencyNS)*sim.NS, m.Wire.LossPPM
	c.PCIe.Gen, c.PCIe.Width, c.PCIe.LatencyPS = m.PCIe.Gen, m.PCIe.Width, sim.Tick(m.PCIe.LatencyNS)*sim.NS
	c.NIC.PMTU, c.NIC.RetransmitPS = m.NIC.PMTU, sim.Tick(m.NIC.RetransmitUS)*sim.US
	c.Power = s.Power()
	c.Topology, c.NodesPerLeaf, c.Spines = m.Network.Topology, m.Network.NodesPerLeaf, m.Network.Spines
	c.SwitchLatencyPS = sim.Tick(m.Network.SwitchLatencyNS) * sim.NS
	c.IOMMU.Bypass = m.IOMMU.Mode == workload.IOMMUNone
	c.IOMMU.IOTLBSets, c.IOMMU.IOTLBWays = m.IOMMU.IOTLBSets, m.IOMMU.IOTLBWays
	c.IOMMU.IOTLBEviction, _ = sim.ParseEviction(m.IOMMU.IOTLBEviction)
	c.IOMMU.LogCAMEntries = m.IOMMU.LogCAMEntries
	c.IOMMU.FlushBufferEntries = m.IOMMU.FlushBufferEntries
	c.IOMMU.ProcessPS, c.IOMMU.MemAccessPS = sim.Tick(m.IOMMU.ProcessNS)*sim.NS, sim.Tick(m.IOMMU.MemAccessNS)*sim.NS
	c.CPU.InterruptPS, c.CPU.ScratchpadPS = sim.Tick(m.CPU.InterruptNS)*sim.NS, sim.Tick(m.CPU.ScratchpadNS)*sim.NS
	s.smpSpec(&c)
	s.mmioSpec(&c)
	return c
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
	d := s.Workload.DHT
	w, err := workload.SetupDHT(c, workload.DHTConfig{Scheme: x.Scheme, Inserts: d.Inserts, Cells: d.Cells, Collisions: x.Collisions,
		Compute: d.ComputeCycles, PollPS: sim.Tick(d.AMPollNS) * sim.NS, Procs: d.ProcsPerNode, OnloadCores: d.AMOnloadCores,
		Lookups: d.Lookups, Deletes: d.Deletes, LogBytes: d.LogBytes, AAIntRecords: d.AAIntRecords, ProcessLogs: d.AALogs == "process",
		AMIntCount: d.AMIntModeration, AMIntPeriodPS: sim.Tick(d.AMIntPeriodNS) * sim.NS, Seed: s.Seed})
	if err != nil {
		return nil, nil, err
	}
	return c, w, nil
}
