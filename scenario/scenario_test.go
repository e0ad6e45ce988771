package scenario

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

func TestScenarioErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"machine:\n  wire:\n    rate_mbps: 0\n", "s.yaml:3: machine.wire.rate_mbps: must be positive"},
		{"machine:\n  wyre: {}\n", "line 2: field wyre not found"},
		{"workload:\n  dht:\n    cells: 1000\n", "s.yaml:3: workload.dht.cells: 1000 is not a power of two"},
		{"workload:\n  dht:\n    schemes: [AA-SP, MPI]\n", `s.yaml:3: workload.dht.schemes: scheme "MPI"`},
		{"machine:\n  nodes: 65\n", "s.yaml:2: machine.nodes: 65 out of 2..64"},
		{"machine: [1, 2]\n", "cannot unmarshal"},
		{"workload:\n  dht:\n    procs_per_node: 2\n", "s.yaml:3: workload.dht.procs_per_node: 2, want 0..machine.cores (1)"},
		{"machine: {cores: 4}\nworkload:\n  dht:\n    procs_per_node: 4\n    schemes: [AM-Onload]\n", "workload.dht.am_onload_cores: AM-Onload needs server cores"},
		{"machine: {cores: 4}\nworkload:\n  dht:\n    procs_per_node: 4\n    am_onload_cores: 4\n", "s.yaml:5: workload.dht.am_onload_cores: 4, want fewer than procs_per_node (4)"},
		{"outputs:\n  trace_to: soon\n", "s.yaml:2: outputs.trace_to"},
		{"workload:\n  kind: quicksort\n", `s.yaml:2: workload.kind: "quicksort": want one of dht, counter, getlog, checkpoint, xor, stream, sort`},
		{"workload:\n  kind: counter\n  counter: {schemes: [AA-SP]}\n", `workload.counter.schemes: "AA-SP": the counter workload has No-Cnt, AA-Poll, RMA, A-KV, Allreduce`},
		{"workload:\n  kind: getlog\n  getlog:\n    gets: 0\n", "s.yaml:4: workload.getlog.gets: 0, want at least 1"},
		{"workload:\n  kind: stream\n  stream: {op: get}\n", "workload.stream.op"},
		{"workload:\n  kind: stream\n  stream:\n    messages: 1\n", "s.yaml:4: workload.stream.messages: stream: 1 messages, want at least 2"},
		{"workload:\n  kind: sort\n  sort:\n    procs_per_node: 3\n", "s.yaml:4: workload.sort.procs_per_node: 3, want 0..machine.cores (1; 0 is every core)"},
		{"workload:\n  kind: checkpoint\n  checkpoint:\n    pages: 0\n", "s.yaml:4: workload.checkpoint.pages: 0, want at least 1"},
		{"machine: {iommu: {mode: no-iommu}}\nworkload:\n  kind: counter\n  counter: {schemes: [No-Cnt, AA-Poll]}\n", "machine.iommu.mode: no-iommu: workload.counter.schemes has AA-Poll, which needs the extended IOMMU"},
		{"machine: {iommu: {mode: no-iommu}}\nworkload: {kind: checkpoint}\n", "workload.checkpoint.schemes has AA-Poll"},
		{"workload:\n  kind: stream\n  stream:\n    outstanding: 1000\n", "s.yaml:4: workload.stream.outstanding: stream: 1000 outstanding, want 1..256"},
		{"workload:\n  kind: stream\n  stream:\n    msg_bytes: 2000000\n", "s.yaml:4: workload.stream.msg_bytes: stream: message size 2000000 B"},
		{"machine: {nodes: 4, cores: 4}\nworkload:\n  kind: sort\n  sort:\n    keys: 8\n", "s.yaml:5: workload.sort.keys: sort: 8 keys per process, want 16"},
		{"machine:\n  nic: {active_w: 0.2}\n", "s.yaml:2: machine.nic.active_w: 0.2 W, below the idle 0.5 W"},
		{"machine:\n  network:\n    router_nj_per_byte: -1\n", "s.yaml:3: machine.network.router_nj_per_byte: -1 nJ is negative"},
		{"machine:\n  network: {topology: torus}\n", `s.yaml:2: machine.network.topology: "torus": want star (one switch) or leaf-spine`},
		{"machine:\n  network:\n    topology: leaf-spine\n    spines: 0\n", "s.yaml:4: machine.network.spines: 0, want at least 1"},
		{"workload:\n  dht:\n    lookups: 1.5\n", "s.yaml:3: workload.dht.lookups: 1.5 out of 0..1"},
		{"workload:\n  dht:\n    deletes: -0.1\n", "s.yaml:3: workload.dht.deletes: -0.1 out of 0..1"},
		{"workload:\n  dht:\n    log_bytes: 100\n", "s.yaml:3: workload.dht.log_bytes: 100, want a multiple of 8 of at least 96"},
		{"workload:\n  dht:\n    aa_logs: thread\n", `s.yaml:3: workload.dht.aa_logs: "thread": want node`},
		{"workload:\n  dht:\n    log_bytes: 4800\n    aa_int_records: 51\n", "s.yaml:4: workload.dht.aa_int_records: 51, want 0..50"},
		{"machine:\n  iommu: {mode: off}\n", `s.yaml:2: machine.iommu.mode: "off": want e-iommu (the extended IOMMU) or no-iommu`},
		{"machine:\n  iommu:\n    mode: no-iommu\n", "s.yaml:3: machine.iommu.mode: no-iommu: workload.dht.schemes has AA-SP, which needs the extended IOMMU (e-iommu)"},
		{"workload:\n  dht:\n    am_int_moderation: -1\n", "s.yaml:3: workload.dht.am_int_moderation: -1 out of 1..65535"},
		{"workload:\n  dht:\n    am_int_moderation: 65536\n", "s.yaml:3: workload.dht.am_int_moderation: 65536 out of 1..65535"},
		{"workload:\n  dht:\n    am_int_period_ns: 2000000000\n", "s.yaml:3: workload.dht.am_int_period_ns: 2000000000 ns: more than a second"},
	}
	for _, c := range cases {
		_, err := ParseScenario("s.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
	s, err := ParseScenario("s.yaml", []byte("workload:\n  dht:\n    inserts: 10\n    schemes: [RMA]\n"))
	if err != nil || s.Workload.DHT.Inserts != 10 || len(s.Experiments()) != 2 || s.Machine.Wire.RateMbps != 1000 {
		t.Fatalf("%+v %v", s.Workload, err)
	}
	if s.ClusterSpec().IOMMU.Bypass {
		t.Errorf("the default machine.iommu.mode bypasses the IOMMU")
	}
	s, err = ParseScenario("s.yaml", []byte("machine:\n  iommu: {mode: no-iommu}\nworkload:\n  dht:\n    schemes: [RMA, AM]\n"))
	if err != nil || !s.ClusterSpec().IOMMU.Bypass {
		t.Fatalf("no-iommu with RMA and AM: bypass %v, error %v", s.ClusterSpec().IOMMU.Bypass, err)
	}
}

// AM-Int's moderation comes from the scenario: an interrupt every message
// takes more interrupts than one every 50, and both tables come out exact.
func TestScenarioAMIntModeration(t *testing.T) {
	irqs := map[int]int{}
	for _, k := range []int{1, 50} {
		src := "workload:\n  dht:\n    inserts: 300\n    schemes: [AM-Int]\n    collisions: [0.25]\n    am_int_moderation: " + strconv.Itoa(k) + "\n    am_int_period_ns: 20000\n"
		s, err := ParseScenario("s.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		x := s.Experiments()[0]
		c, w, err := s.Build(sim.NewEngine(s.Seed), x)
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.S, c.AppsDone)
		r := w.Result()
		if !r.Verified || !c.AppsDone() {
			t.Fatalf("moderation %d: verified %v, done %v: %v", k, r.Verified, c.AppsDone(), w.Verify())
		}
		irqs[k] = r.Interrupts
	}
	if irqs[50] >= irqs[1] {
		t.Fatalf("interrupts: %d every message, %d every 50 messages", irqs[1], irqs[50])
	}
}

// Every scenario in examples/ parses and validates (sweeps are checked in
// internal/sweep).
func TestExampleScenariosParse(t *testing.T) {
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "sweep-") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseScenario(f, data)
		if err != nil {
			t.Fatal(err)
		}
		if key, err := s.Validate(); err != nil {
			t.Fatalf("%s: %s: %v", f, key, err)
		}
		if len(s.Experiments()) == 0 {
			t.Fatalf("%s: no experiments", f)
		}
		n++
	}
	if n < 6 {
		t.Fatalf("%d example scenarios", n)
	}
}

// A run whose wires lose everything gives up as RC transport does (the
// retry count runs out) and says what was pending, instead of retrying
// forever.
func TestTotalLossGivesUpAndSaysWhy(t *testing.T) {
	for _, kind := range []string{"dht", "counter"} {
		src := "machine:\n  wire: {loss_ppm: 1000000}\nworkload:\n  kind: " + kind + "\n  dht: {inserts: 10, schemes: [RMA], collisions: [0.05]}\n  counter: {accesses: 5, schemes: [RMA]}\n"
		s, err := ParseScenario("s.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		x := s.Experiments()[0]
		e := sim.NewEngine(1)
		c, finish, err := s.Prepare(e, x)
		if err != nil {
			t.Fatal(err)
		}
		end := c.Run(sim.S, c.AppsDone)
		_, err = finish(end)
		if err == nil {
			t.Fatalf("%s: a run that lost every frame passed", kind)
		}
		for _, want := range []string{"lost", "ran out of retries: ", "ERR after transport retries exceeded"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error does not say %q:\n%v", kind, want, err)
			}
		}
		// 8 transmissions 200 µs apart, then the error: far from the 1 s limit.
		if end > 10*sim.MS {
			t.Errorf("%s: gave up only at %v", kind, end.Human())
		}
	}
}
