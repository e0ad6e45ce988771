package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

func TestSMPKeyErrors(t *testing.T) {
	coh := "machine:\n  cpu:\n    coherence:\n      l2_kb: 512\n      miss_cycles: 50\n      c2c_cycles: 80\n      cas_cycles: 15\n"
	cases := []struct{ yaml, want string }{
		{"machine:\n  cpu:\n    mhz: 20000\n", "s.yaml:3: machine.cpu.mhz: 20000 is out of range (0..10000 MHz; 0: 2000; a period that is not a whole number of picoseconds is rounded to the nearest)"},
		{"machine:\n  cpu:\n    nic_write_cycles: -1\n", "s.yaml:3: machine.cpu.nic_write_cycles: -1 is out of range (0..100000 cycles; an uncached store's issue cost)"},
		{"machine:\n  memory:\n    bandwidth_mbps: 400\n", "s.yaml:3: machine.memory.bandwidth_mbps: 400 MB/s needs machine.cpu.coherence (the SMP model)"},
		{"machine:\n  cpu:\n    memcpy_mbps: 200\n", "s.yaml:3: machine.cpu.memcpy_mbps: 200 MB/s needs machine.cpu.coherence"},
		{coh + "  memory:\n    bandwidth_mbps: 2000000\n", "s.yaml:9: machine.memory.bandwidth_mbps: 2000000 is out of range (0..1000000 MB/s; needs machine.cpu.coherence; 0: unlimited)"},
		{"machine:\n  cpu:\n    coherence:\n      l2_kb: 512\n", "s.yaml:3: machine.cpu.coherence.miss_cycles: 0 is out of range (1..100000 cycles)"},
		{coh + "      line_bytes: 48\n", "s.yaml:8: machine.cpu.coherence.line_bytes: 48 is not a power of two from 8 (a power of two from 8 to 4096; 0: 64)"},
		{coh + "      l2_ways: 65\n", "s.yaml:8: machine.cpu.coherence.l2_ways: 65 is out of range (0..64; 0: 8)"},
		{strings.Replace(coh, "l2_kb: 512", "l2_kb: 0", 1), "s.yaml:4: machine.cpu.coherence.l2_kb: 0 is out of range (1..1048576 KB)"},
		{strings.Replace(coh, "l2_kb: 512", "l2_kb: 1", 1) + "      line_bytes: 4096\n", "s.yaml:4: machine.cpu.coherence.l2_kb: 1 KB holds fewer lines than its 8 ways (at least 8 lines of 4096 B: one per way)"},
		{coh + "      upgrade_cycles: -5\n", "s.yaml:8: machine.cpu.coherence.upgrade_cycles: -5 is out of range (0..100000 cycles)"},
		{coh + "      l3_kb: 4096\n", `s.yaml:8: machine.cpu.coherence.l3_kb: unknown key (did you mean "machine.cpu.coherence.l2_kb"?)`},
	}
	for _, c := range cases {
		_, err := ParseScenario("s.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
	s, err := ParseScenario("s.yaml", []byte(coh))
	if err != nil {
		t.Fatal(err)
	}
	if sp := s.ClusterSpec().SMP; sp == nil || sp.L2Bytes != 512<<10 || sp.MemoryMBps != 0 {
		t.Fatalf("coherence block: SMP spec %+v", sp)
	}
	d := DefaultScenario()
	if c := d.ClusterSpec(); c.SMP != nil || c.CPU != cpu.DefaultSpec() {
		t.Fatalf("the default machine has an SMP model or other CPU timings: %+v %+v", c.SMP, c.CPU)
	}
}

// The machine presets parse, validate and run; the E5000's figures (seed
// 000, Table 1) reach every core of every node.
func TestMachinePresets(t *testing.T) {
	files, err := filepath.Glob("../examples/machines/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no presets: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseScenario(f, data); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile("../examples/machines/e5000.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseScenario("e5000.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	const period = 5988 // 167 MHz
	want := cpu.SMPSpec{LineBytes: 64, L2Bytes: 512 << 10, L2Ways: 8, HitCycles: 2, MissCycles: 50, C2CCycles: 80,
		UpgradeCycles: 50, InvalCycles: 0, CASCycles: 15, MemoryMBps: 400, MemcpyMBps: 200}
	c, err := machine.New(sim.NewEngine(s.Seed), s.ClusterSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 4 {
		t.Fatalf("%d nodes", len(c.Nodes))
	}
	for _, n := range c.Nodes {
		if len(n.Cores) != 8 || n.SMP == nil || n.SMP.Spec() != want {
			t.Fatalf("node %d: %d cores, SMP %+v", n.ID, len(n.Cores), n.SMP)
		}
		for _, core := range append([]*cpu.Core{n.Poller}, n.Cores...) {
			sp := core.Spec()
			if core.SMP() != n.SMP || sp.PeriodPS != period || sp.UncachedWritePS != 54*period {
				t.Fatalf("%s: SMP %p (node's %p), spec %+v", core.Unit().Name(), core.SMP(), n.SMP, sp)
			}
		}
	}
	x := s.Experiments()[0]
	// On the E5000's 167 MHz cores the 50 ns between polling checks are
	// not whole periods: sleeping through the checks (the default) must
	// still give the run of checking every one.
	var runs []string
	for _, sleep := range []bool{true, false} {
		sys, w, err := s.Build(sim.NewEngine(s.Seed), x)
		if err != nil {
			t.Fatal(err)
		}
		sys.Cluster.SetPollSleep(sleep)
		end := sys.Run(sim.S, sys.AppsDone)
		if r := w.Result(); !r.Verified || !sys.AppsDone() {
			t.Fatalf("%v on the E5000, sleep %v: verified %v, done %v: %v", x.Scheme, sleep, r.Verified, sys.AppsDone(), w.Verify())
		}
		if n := sys.Nodes[1].SMP.Counts(); n.MemoryMisses == 0 || n.Hits == 0 {
			t.Fatalf("the run's accesses did not go through the SMP model: %+v", n)
		}
		snap, err := json.Marshal(sys.Cluster.Eng.World().Snapshot().Stats)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, fmt.Sprintf("end %d, %+v, %s", end, w.Result(), snap))
	}
	if runs[0] != runs[1] {
		t.Fatalf("the E5000 run differs when the cores sleep through their polls:\n%.2000s\nchecking every poll:\n%.2000s", runs[0], runs[1])
	}
}
