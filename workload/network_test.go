package workload

import (
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// A leaf-spine network: frames between nodes of one leaf cross that leaf
// only, others go up to a spine and down, so every spine and every leaf
// forwards; the DHT at scale comes out exact under every kind of scheme,
// and crossing three switches instead of one takes more router energy for
// the same work than the star.
func TestLeafSpineNetwork(t *testing.T) {
	run := func(topo string) (*aa.System, DHTResult) {
		spec := machine.DefaultSpec()
		spec.Nodes, spec.Cores = 6, 2
		spec.Topology, spec.NodesPerLeaf, spec.Spines = topo, 2, 2
		c, err := aa.New(sim.NewEngine(5), spec)
		if err != nil {
			t.Fatal(err)
		}
		d := runChecked(t, c, DHTConfig{Scheme: AASP, Inserts: 30, Cells: 256, Collisions: 0.2, Procs: 2, Seed: 5}, topo)
		return c, d.Result()
	}
	c, ls := run(machine.TopologyLeafSpine)
	if len(c.Switches) != 3+2 {
		t.Fatalf("%d switches, want 3 leaves and 2 spines", len(c.Switches))
	}
	for _, sw := range c.Switches {
		if sw.ForwardedBytes() == 0 {
			t.Fatalf("%s forwarded nothing", sw.Unit().Name())
		}
	}
	_, star := run(machine.TopologyStar)
	t.Logf("leaf-spine: %.0f inserts/s, %.3g µJ in the switches; star: %.0f inserts/s, %.3g µJ", ls.InsertsPerSec, ls.RouterEnergyJ*1e6, star.InsertsPerSec, star.RouterEnergyJ*1e6)
	if ls.RouterEnergyJ <= 2*star.RouterEnergyJ || star.RouterEnergyJ <= 0 {
		t.Fatalf("router energy: leaf-spine %g J, star %g J", ls.RouterEnergyJ, star.RouterEnergyJ)
	}
	for _, s := range []Scheme{RMA, AM, AMInt} {
		spec := machine.DefaultSpec()
		spec.Nodes, spec.Cores = 5, 2
		spec.Topology, spec.NodesPerLeaf, spec.Spines = machine.TopologyLeafSpine, 2, 1
		c, err := aa.New(sim.NewEngine(5), spec)
		if err != nil {
			t.Fatal(err)
		}
		runChecked(t, c, DHTConfig{Scheme: s, Inserts: 20, Cells: 256, Collisions: 0.2, Procs: 2, Seed: 5, Lookups: 0.5, Deletes: 0.2}, string(s))
	}
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Topology, spec.NodesPerLeaf, spec.Spines = 4, machine.TopologyLeafSpine, 0, 1
	if _, err := aa.New(sim.NewEngine(1), spec); err == nil {
		t.Fatal("a leaf of no nodes was accepted")
	}
}

// A leaf-spine network whose nodes all fit on one leaf has no spines: the
// leaf alone forwards (and a scenario that asks for it builds).
func TestLeafSpineOneLeaf(t *testing.T) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Topology, spec.NodesPerLeaf, spec.Spines = 3, machine.TopologyLeafSpine, 8, 2
	c, err := aa.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Switches) != 1 {
		t.Fatalf("%d switches, want the one leaf", len(c.Switches))
	}
	runChecked(t, c, DHTConfig{Scheme: AASP, Inserts: 10, Cells: 64, Collisions: 0.1, Procs: 1, Seed: 1}, "one leaf")
	if c.Switches[0].ForwardedBytes() == 0 {
		t.Fatal("the leaf forwarded nothing")
	}
}
