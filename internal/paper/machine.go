package paper

import (
	"fmt"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

// Preset is a machine the figures at scale run on (aaemu paper
// --machine): a scenario file whose machine section they take, with each
// point's node count.
type Preset struct {
	Name string // the file's name, as the sweeps name it (scenario: Name)
	Data []byte
	sc   scenario.Scenario
}

// NewPreset reads a machine preset; errors name the file and line.
func NewPreset(name string, data []byte) (*Preset, error) {
	sc, err := scenario.ParseScenario(name, data)
	if err != nil {
		return nil, err
	}
	if sc.Machine.Cores < 32 && sc.Machine.Nodes != 2 {
		return nil, fmt.Errorf("%s: machine.cores: %d, the figures at scale run 32 processes a node (or machine.nodes: 2, a two-node machine for 6a–6c)", name, sc.Machine.Cores)
	}
	return &Preset{Name: name, Data: data, sc: sc}, nil
}

// TwoNode says the preset is a two-node machine of fewer than 32 cores,
// which runs the two-node figures (6a–6c, Figure.OnMachine) rather than
// the figures at scale.
func (p *Preset) TwoNode() bool { return p.sc.Machine.Nodes == 2 && p.sc.Machine.Cores < 32 }

// OnTwoNode is figs on the two-node preset p: each figure's OnMachine, or
// an error naming the first figure that has none. None asked for by name
// (all) is every figure that has one.
func OnTwoNode(p *Preset, figs []*Figure, named bool) ([]*Figure, error) {
	var out []*Figure
	var have []string
	for _, f := range figs {
		if f.OnMachine != nil {
			out = append(out, f.OnMachine(p))
			have = append(have, f.Name)
		} else if named {
			return nil, fmt.Errorf("--machine %s: figure %s does not run on a two-node machine (figures that do: 6a, 6b, 6c)", p.Name, f.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--machine %s: no figure of this paper runs on a two-node machine", p.Name)
	}
	return out, nil
}

// Machine is the machine of the figures at scale: nil, the built-in one (10
// Gb/s wires into one switch, srd); set before the figures are made
// (Figure.AtScale reads it).
var Machine *Preset

// Load is the loader of a sweep whose base scenario is the preset.
func (p *Preset) Load(name string) (string, []byte, error) {
	if name != p.Name {
		return "", nil, fmt.Errorf("%s: not the machine preset %s", name, p.Name)
	}
	return p.Name, p.Data, nil
}

// spec is the preset's cluster of nodes × cores.
func (p *Preset) spec(nodes, cores int) machine.Spec {
	sc := p.sc.Clone()
	sc.Machine.Nodes, sc.Machine.Cores = nodes, max(cores, sc.Machine.Cores)
	return sc.ClusterSpec()
}

// clusterOn is a machine of nodes × cores: the preset's when one is set,
// else the built-in one on the transport at 10 Gb/s.
func clusterOn(p *Preset, nodes, cores int, transport string) (*aa.System, error) {
	if p == nil {
		return clusterOf(nodes, cores, transport)
	}
	c, err := aa.New(sim.NewEngine(1), p.spec(nodes, cores))
	if err == nil {
		Configure(c.Cluster)
	}
	return c, err
}

// network names the preset's network in a figure's title.
func (p *Preset) network() string {
	m := &p.sc.Machine
	if m.Network.Topology == machine.TopologyTorus {
		t := &m.Network.Torus
		return fmt.Sprintf("a torus of %d B/cycle links at %d MHz, %d-cycle hops", max(t.BytesPerCycle, 1), t.ClockMHz, t.WireCycles+t.RouterCycles)
	}
	return fmt.Sprintf("%s network, %d Mb/s wires", m.Network.Topology, m.Wire.RateMbps)
}

// logs names the preset's access logs (workload.dht.aa_logs).
func (p *Preset) logs() string {
	logs := "one a node"
	if p.sc.Workload.DHT.AALogs == "process" {
		logs = "one a process"
	}
	if p.sc.Machine.CPU.PollingHyperthreads == machine.PollingPerCore {
		logs += ", AA-SP's polled by each core's sibling hyperthread"
	}
	return logs
}

// cpuMHz is the preset's core clock (machine.cpu.mhz; 0 is 2000).
func (p *Preset) cpuMHz() uint64 {
	if p.sc.Machine.CPU.MHz == 0 {
		return 2000
	}
	return p.sc.Machine.CPU.MHz
}
