package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// machine.cpu.polling_hyperthreads places AA-SP's polling hyperthreads: with
// a log a process, the node's one thread runs every log's handler (its
// busy time grows with the node's processes), while with a thread a core
// each core's sibling runs its own process's log and the node's thread
// does nothing. The DHT's table is right either way, and with a thread a
// core the inserts finish sooner: the handlers of a node run side by side
// (on wires and links fast enough not to bound them).
func TestPollingHyperthreadsPlacement(t *testing.T) {
	const src = `machine:
  nodes: 2
  cores: 8
  transport: srd
  wire: {rate_mbps: 80000, latency_ns: 50}
  pcie: {gen: 3, width: 16, latency_ns: 100}
  iommu: {flush_buffer_entries: 8}
  cpu: {polling_hyperthreads: %s}
workload:
  dht: {inserts: 40, procs_per_node: 8, aa_logs: process, schemes: [AA-SP], collisions: [0.05]}
`
	busy := func(e *sim.Engine, name string) uint64 {
		st, ok := e.Stats().Get(name + ".busy_ps")
		ctr, isCounter := st.(*sim.Counter)
		if !ok || !isCounter {
			t.Fatalf("no counter %s.busy_ps", name)
		}
		return ctr.Value()
	}
	rate := map[string]float64{}
	for _, place := range []string{"node", "core"} {
		s, err := ParseScenario("s.yaml", fmt.Appendf(nil, src, place))
		if err != nil {
			t.Fatal(err)
		}
		e := sim.NewEngine(s.Seed)
		c, finish, err := s.Prepare(e, s.Experiments()[0])
		if err != nil {
			t.Fatal(err)
		}
		end := c.Run(sim.S, c.AppsDone)
		n := c.Nodes[1]
		var siblings uint64
		for k := range n.Cores {
			if place == "core" {
				b := busy(n.Eng, fmt.Sprintf("node1.cpu%d_poll", k))
				if b == 0 {
					t.Errorf("core: core %d's sibling never ran its process's log", k)
				}
				siblings += b
			}
		}
		node := busy(n.Eng, "node1.cpu_poll")
		switch {
		case place == "node" && (node == 0 || n.Pollers != nil):
			t.Errorf("node: the node's polling thread was busy %d ps (siblings %d)", node, len(n.Pollers))
		case place == "core" && (node != 0 || len(n.Pollers) != len(n.Cores)):
			t.Errorf("core: the node's polling thread was busy %d ps; %d siblings for %d cores", node, len(n.Pollers), len(n.Cores))
		}
		o, err := finish(end)
		if err != nil {
			t.Fatal(err)
		}
		rate[place] = o.DHT.InsertsPerSec
	}
	t.Logf("inserts/s: a thread a node %.3g, a sibling a core %.3g", rate["node"], rate["core"])
	if rate["core"] <= rate["node"] {
		t.Errorf("a sibling a core: %.3g inserts/s, not more than the node's one thread's %.3g", rate["core"], rate["node"])
	}
}

// A sibling a core counts in the memory estimate as a core does.
func TestPollingHyperthreadsInTheEstimate(t *testing.T) {
	est := func(place string) uint64 {
		s, err := ParseScenario("s.yaml", fmt.Appendf(nil, "machine:\n  nodes: 64\n  cores: 32\n  transport: srd\n  cpu: {polling_hyperthreads: %s}\n", place))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.MemoryEstimate()
		return b
	}
	node, core := est("node"), est("core")
	if want := uint64(64 * 32 * memCore); core-node != want {
		t.Errorf("estimate with a sibling a core %d, with a thread a node %d: %d more, want %d", core, node, core-node, want)
	}
}

// A memory refusal whose largest term is the nodes' says to make the
// numbers smaller and the choice of siblings "node", not "smaller".
func TestMemoryRefusalNamesTheSmallerChoice(t *testing.T) {
	_, err := ParseScenario("s.yaml", []byte("machine:\n  nodes: 512\n  cores: 64\n  transport: srd\n  cpu: {polling_hyperthreads: core}\nmax_memory_mib: 1024\n"))
	if err == nil {
		t.Fatal("a machine over max_memory_mib was accepted")
	}
	want := "make machine.nodes or machine.cores smaller, or machine.cpu.polling_hyperthreads: node, or raise max_memory_mib"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\ndoes not say %q", err, want)
	}
}
