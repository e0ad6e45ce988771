package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"go.yaml.in/yaml/v3"
)

// Every error of a scenario file is "file:line: dotted.key: what is wrong
// (what is allowed)", exactly.
func TestScenarioErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"machine:\n  wire:\n    rate_mbps: 0\n", "s.yaml:3: machine.wire.rate_mbps: 0 is out of range (1..1000000 Mb/s)"},
		{"machine:\n  wyre: {}\n", `s.yaml:2: machine.wyre: unknown key (did you mean "machine.wire"?)`},
		{"workload:\n  dht:\n    cells: 1000\n", "s.yaml:3: workload.dht.cells: 1000 is not a power of two (a power of two 1..16777216)"},
		{"workload:\n  dht:\n    schemes: [AA-SP, MPI]\n", `s.yaml:3: workload.dht.schemes[1]: "MPI" is not a DHT scheme (AA-Poll, AA-Int, AA-SP, RMA, AM, AM-Exp, AM-Onload, AM-Int)`},
		{"workload:\n  dht:\n    schemes:\n      - AA-SP\n      - AA-sp\n", `s.yaml:5: workload.dht.schemes[1]: "AA-sp" is not a DHT scheme (did you mean "AA-SP"? AA-Poll, AA-Int, AA-SP, RMA, AM, AM-Exp, AM-Onload, AM-Int)`},
		{"workload:\n  dht:\n    schemes: [RMA, RMA]\n", "s.yaml:3: workload.dht.schemes[1]: RMA is in the list twice (each scheme once)"},
		{"machine:\n  nodes: 4097\n", "s.yaml:2: machine.nodes: 4097 is out of range (2..4096; two nodes share a direct link, more a switch, a leaf-spine network or a torus)"},
		{"machine: [1, 2]\n", "s.yaml:1: machine: a list where a section of keys belongs (the keys of machine: nodes, cores, nics, fabric_mhz, wire, pcie, nic, network, iommu, cpu, memory, startx, transport)"},
		{"workload:\n  dht:\n    procs_per_node: 2\n", "s.yaml:3: workload.dht.procs_per_node: 2 is more than machine.cores (0..1: up to machine.cores)"},
		{"machine: {cores: 4}\nworkload:\n  dht:\n    procs_per_node: 4\n    schemes: [AM-Onload]\n", "s.yaml:3: workload.dht.am_onload_cores: 0, but workload.dht.schemes has AM-Onload, which needs server cores (1..procs_per_node−1 server cores)"},
		{"machine: {cores: 4}\nworkload:\n  dht:\n    procs_per_node: 4\n    am_onload_cores: 4\n", "s.yaml:5: workload.dht.am_onload_cores: 4 is not fewer than procs_per_node, 4 (0..3: fewer than procs_per_node)"},
		{"outputs:\n  trace_to: soon\n", `s.yaml:2: outputs.trace_to: "soon" is not a time (a whole number with unit ps, ns, us, ms or s)`},
		{"workload:\n  kind: quicksort\n", `s.yaml:2: workload.kind: "quicksort" is not a workload (dht, counter, getlog, checkpoint, xor, stream, sort, splitc)`},
		{"workload:\n  kind: counter\n  counter: {schemes: [AA-SP]}\n", `s.yaml:3: workload.counter.schemes[0]: "AA-SP" is not a scheme of the counter workload (No-Cnt, AA-Poll, RMA, A-KV, Allreduce)`},
		{"workload:\n  kind: getlog\n  getlog:\n    gets: 0\n", "s.yaml:4: workload.getlog.gets: 0 is out of range (1..10000000; per process)"},
		{"workload:\n  kind: getlog\n  getlog:\n    words: 513\n", "s.yaml:4: workload.getlog.words: 513 is out of range (1..512; 64-bit words of each node's data page)"},
		{"workload:\n  kind: stream\n  stream: {op: get}\n", `s.yaml:3: workload.stream.op: "get" is not a stream operation (write: RDMA WRITEs; send: SENDs)`},
		{"workload:\n  kind: stream\n  stream:\n    messages: 1\n", "s.yaml:4: workload.stream.messages: 1 is out of range (2..1073741824; messages × msg_bytes at most 1 GiB)"},
		{"workload:\n  kind: stream\n  stream:\n    messages: 2048\n    msg_bytes: 1048576\n", "s.yaml:4: workload.stream.messages: 2048 messages of 1048576 B are 2147483648 B (messages × msg_bytes at most 1 GiB)"},
		{"workload:\n  kind: sort\n  sort:\n    procs_per_node: 3\n", "s.yaml:4: workload.sort.procs_per_node: 3 is more than machine.cores (0..1: up to machine.cores; 0: every core)"},
		{"workload:\n  kind: checkpoint\n  checkpoint:\n    pages: 0\n", "s.yaml:4: workload.checkpoint.pages: 0 is out of range (1..65536)"},
		{"machine: {iommu: {mode: no-iommu}}\nworkload:\n  kind: counter\n  counter: {schemes: [No-Cnt, AA-Poll]}\n", "s.yaml:1: machine.iommu.mode: no-iommu, but workload.counter.schemes has AA-Poll, which needs the extended IOMMU (e-iommu for the AA schemes)"},
		{"machine: {iommu: {mode: no-iommu}}\nworkload: {kind: checkpoint}\n", "s.yaml:1: machine.iommu.mode: no-iommu, but workload.checkpoint.schemes has AA-Poll, which needs the extended IOMMU (e-iommu for the AA schemes)"},
		{"workload:\n  kind: stream\n  stream:\n    outstanding: 1000\n", "s.yaml:4: workload.stream.outstanding: 1000 is out of range (1..256; the send-queue size)"},
		{"workload:\n  kind: stream\n  stream:\n    msg_bytes: 2000000\n", "s.yaml:4: workload.stream.msg_bytes: 2000000 is out of range (1..1048576 B; messages × msg_bytes at most 1 GiB)"},
		{"machine: {nodes: 4, cores: 4}\nworkload:\n  kind: sort\n  sort:\n    keys: 8\n", "s.yaml:5: workload.sort.keys: 8 keys per process are fewer than the 16 processes (16..1048576: a key for every process, machine.nodes × procs_per_node, or more)"},
		{"machine:\n  nic: {active_w: 0.2}\n", "s.yaml:2: machine.nic.active_w: 0.2 W is below machine.nic.idle_w (0.5..1000 W: at least machine.nic.idle_w)"},
		{"machine:\n  network:\n    router_nj_per_byte: -1\n", "s.yaml:3: machine.network.router_nj_per_byte: -1 is out of range (0..1000 nJ)"},
		{"machine: {nics: 0}\n", "s.yaml:1: machine.nics: 0 is out of range (1..4; RDMA NICs a node, each on its own PCIe link and network plane)"},
		{"machine: {nics: 5}\n", "s.yaml:1: machine.nics: 5 is out of range (1..4; RDMA NICs a node, each on its own PCIe link and network plane)"},
		{"machine:\n  nodes: 4\n  nics: 2\n  network: {topology: leaf-spine}\n", "s.yaml:3: machine.nics: 2 NICs a node on a leaf-spine network (1 with machine.network.topology leaf-spine; more with star, a switch per NIC)"},
		{"machine:\n  transport: ud\n", `s.yaml:2: machine.transport: "ud" is not a transport (allowed: rc, srd)`},
		{"max_memory_mib: 1000000\nmachine: {nodes: 1100, cores: 30}\n", "s.yaml:2: machine.transport: rc gives each of a NIC's 30 cores a queue pair per node: 1100 nodes × 30 cores need 33000, more than a NIC's 32512 doorbells (allowed: rc, srd; srd above that)"},
		{"machine:\n  transport: sdr\n", `s.yaml:2: machine.transport: "sdr" is not a transport (did you mean "srd"? allowed: rc, srd)`},
		{"machine: {transport: srd}\nworkload: {kind: sort}\n", "s.yaml:1: machine.transport: srd, but workload.sort.schemes has AM, whose receivers post their buffers per source node (srd has one receive queue per process) (allowed: rc, srd; rc for a scheme that receives SENDs per source node)"},
		{"machine:\n  network: {topology: tours}\n", `s.yaml:2: machine.network.topology: "tours" is not a topology (did you mean "torus"? star: one switch; leaf-spine: leaf and spine switches; torus: a 3D torus (machine.network.torus))`},
		{"machine:\n  nodes: 8\n  network:\n    topology: torus\n    torus:\n      dims: [2, 2, 1]\n", "s.yaml:6: machine.network.torus.dims: 2×2×1 is 4 nodes (x·y·z = machine.nodes, 8: 2×2×2, say; none for that)"},
		{"machine:\n  nodes: 8\n  network:\n    topology: torus\n    torus:\n      dims: [8, 1]\n", "s.yaml:6: machine.network.torus.dims: 2 dimensions (x, y and z, or none for the nearest a cube)"},
		{"machine:\n  network:\n    torus:\n      dims: [0, 1, 2]\n", "s.yaml:4: machine.network.torus.dims[0]: 0 is out of range (1..256; x, y and z, their product machine.nodes; none: the nearest a cube)"},
		{"machine:\n  network:\n    torus:\n      bytes_per_cycle: 5\n", "s.yaml:4: machine.network.torus.bytes_per_cycle: 5 does not divide the 32-byte chunk (1, 2, 4, 8, 16 or 32 bytes a cycle (a divisor of the 32-byte chunk))"},
		{"machine:\n  nics: 2\n  network: {topology: torus}\n", "s.yaml:2: machine.nics: 2 NICs a node on a torus (1 with machine.network.topology torus)"},
		{"machine:\n  network:\n    topology: torus\n    torus: {wire_cycles: 0}\n", "s.yaml:4: machine.network.torus.wire_cycles: 0 is out of range (1..1048576 cycles)"},
		{"machine:\n  network:\n    topology: torus\n    torus: {escape_chunks: 15}\n", "s.yaml:4: machine.network.torus.escape_chunks: 15 is out of range (16..4096 chunks; 32 bytes each; two full packets at least, the bubble)"},
		{"machine:\n  network:\n    topology: torus\n    torus: {ties: sideways}\n", "s.yaml:4: machine.network.torus.ties: \"sideways\" is not a choice of direction for ties (split: + from an even coordinate, − from an odd one; plus: every tie +)"},
		{"machine:\n  network:\n    topology: leaf-spine\n    spines: 0\n", "s.yaml:4: machine.network.spines: 0 is out of range (1..64)"},
		{"machine:\n  network:\n    spines: 1000000000\n", "s.yaml:3: machine.network.spines: 1000000000 is out of range (1..64)"},
		{"machine:\n  iommu: {iotlb_sets: 1048576}\n", "s.yaml:2: machine.iommu.iotlb_sets: 1048576 is out of range (1..65536; sets × ways at most 65536)"},
		{"machine:\n  iommu: {iotlb_sets: 65536, iotlb_ways: 2}\n", "s.yaml:2: machine.iommu.iotlb_ways: 65536 sets × 2 ways is 131072 entries (sets × ways at most 65536)"},
		{"machine:\n  nodes: 8\n  network:\n    topology: torus\n    torus: {nodes_per_router: 3}\n", "s.yaml:5: machine.network.torus.nodes_per_router: 3 is out of range (0..2; a Gemini ASIC serves two; 0: 1)"},
		{"machine:\n  nodes: 9\n  network:\n    topology: torus\n    torus: {nodes_per_router: 2}\n", "s.yaml:5: machine.network.torus.nodes_per_router: 2 nodes a router for 9 nodes (1 or 2, dividing machine.nodes)"},
		{"machine:\n  nodes: 8\n  network:\n    topology: torus\n    torus:\n      nodes_per_router: 2\n      dims: [2, 2, 2]\n", "s.yaml:7: machine.network.torus.dims: 2×2×2 is 8 routers (x·y·z = machine.nodes / nodes_per_router, 4: 2×2×1, say; none for that)"},
		{"machine:\n  nic: {descriptors: e100}\n", `s.yaml:2: machine.nic.descriptors: "e100" is not a descriptor format (did you mean "e1000"? e1000: an Intel 8254x's 16-byte legacy descriptors, read and written back per packet; none: the RDMA NIC's queues only)`},
		{"machine:\n  nic: {descriptor_ring: 64}\n", "s.yaml:2: machine.nic.descriptor_ring: a ring of 64, but no descriptors (with machine.nic.descriptors: e1000)"},
		{"machine:\n  nic: {descriptors: e1000, descriptor_ring: 100}\n", "s.yaml:2: machine.nic.descriptor_ring: 100 is not a multiple of 8 (0..65536; descriptors a ring, a multiple of 8; 0: 256)"},
		{"machine:\n  iommu: {iotlb_ways: 0}\n", "s.yaml:2: machine.iommu.iotlb_ways: 0 ways, and no iotlb_entries to make fully associative (1..256; 0 (fully associative) only with machine.iommu.iotlb_entries)"},
		{"machine:\n  iommu: {iotlb_entries: 4, iotlb_ways: 8}\n", "s.yaml:2: machine.iommu.iotlb_ways: 8 ways in an IOTLB of 4 entries (0..4: at most iotlb_entries (0: fully associative))"},
		{"machine:\n  iommu: {iotlb_entries: 12, iotlb_ways: 8}\n", "s.yaml:2: machine.iommu.iotlb_entries: 12 entries are not sets of 8 ways (a multiple of iotlb_ways, 8)"},
		{"machine:\n  iommu: {iotlb_entries: 131072}\n", "s.yaml:2: machine.iommu.iotlb_entries: 131072 is out of range (0..65536; 0: iotlb_sets × iotlb_ways; else sets of iotlb_ways ways)"},
		{"workload:\n  dht:\n    page_zipf: 11\n", "s.yaml:3: workload.dht.page_zipf: 11 is out of range (0..10; the Zipf exponent of the pages new keys fall in; 0: uniform)"},
		{"bglml:\n  costs: table2\n", `s.yaml:2: bglml.costs: "table2" is not a cost profile (did you mean "table1"? estimated: the message layer's per-step estimates; table1: those and the per-message remainder of Table 1)`},
		{"bglml:\n  costs: [table1]\n", "s.yaml:2: bglml.costs: a list where a single value belongs (a string)"},
		{"machine:\n  iommu: {iotlb_eviction: lfu}\n", `s.yaml:2: machine.iommu.iotlb_eviction: "lfu" is not an eviction policy (did you mean "lru"? lru, fifo or random)`},
		{"workload:\n  dht:\n    lookups: 1.5\n", "s.yaml:3: workload.dht.lookups: 1.5 is out of range (0..1; a fraction of each process's keys)"},
		{"workload:\n  dht:\n    deletes: -0.1\n", "s.yaml:3: workload.dht.deletes: -0.1 is out of range (0..1; a fraction of each process's keys)"},
		{"workload:\n  dht:\n    collisions: [0.1, 2]\n", "s.yaml:3: workload.dht.collisions[1]: 2 is out of range (0..1; a fraction of the inserts)"},
		{"workload:\n  dht:\n    collisions: []\n", "s.yaml:3: workload.dht.collisions: a list of 0 ratios (1..64 ratios 0..1)"},
		{"workload:\n  dht:\n    log_bytes: 100\n", "s.yaml:3: workload.dht.log_bytes: 100 is not a multiple of 8 (0: 64 KiB, or a multiple of 8 from 96 to 67108864)"},
		{"workload:\n  dht:\n    log_bytes: 88\n", "s.yaml:3: workload.dht.log_bytes: 88 bytes do not hold two records of an insert (0: 64 KiB, or a multiple of 8 from 96 to 67108864)"},
		{"machine:\n  cpu: {polling_hyperthreads: cores}\n", `s.yaml:2: machine.cpu.polling_hyperthreads: "cores" is not a placement of the polling hyperthreads (did you mean "core"? node: one polling hyperthread a node, for every SP log; core: the SMT sibling of each core, for its process's logs)`},
		{"machine:\n  cpu: {polling_hyperthreads: smt}\n", `s.yaml:2: machine.cpu.polling_hyperthreads: "smt" is not a placement of the polling hyperthreads (node: one polling hyperthread a node, for every SP log; core: the SMT sibling of each core, for its process's logs)`},
		{"workload:\n  dht:\n    aa_logs: thread\n", `s.yaml:3: workload.dht.aa_logs: "thread" is not a log layout (node: one access log per node; process: one per inserting process)`},
		{"workload:\n  dht:\n    log_bytes: 4800\n    aa_int_records: 51\n", "s.yaml:4: workload.dht.aa_int_records: 51 records fill more than half the log (0..50: records filling at most half the 4800-byte log)"},
		{"machine:\n  iommu: {mode: off}\n", `s.yaml:2: machine.iommu.mode: "off" is not an IOMMU mode (e-iommu: the extended IOMMU; no-iommu: no IOMMU on the PCIe path)`},
		{"machine:\n  iommu:\n    mode: no-iommu\n", "s.yaml:3: machine.iommu.mode: no-iommu, but workload.dht.schemes has AA-SP, which needs the extended IOMMU (e-iommu for the AA schemes)"},
		{"workload:\n  dht:\n    am_int_moderation: -1\n", "s.yaml:3: workload.dht.am_int_moderation: -1 is out of range (0..65535; messages per interrupt; 0: 10)"},
		{"workload:\n  dht:\n    am_int_moderation: 65536\n", "s.yaml:3: workload.dht.am_int_moderation: 65536 is out of range (0..65535; messages per interrupt; 0: 10)"},
		{"workload:\n  dht:\n    am_int_period_ns: 2000000000\n", "s.yaml:3: workload.dht.am_int_period_ns: 2000000000 is out of range (0..1000000000 ns; 0: 10 µs)"},
	}
	for _, c := range cases {
		_, err := ParseScenario("s.yaml", []byte(c.yaml))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.yaml, err, c.want)
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
// iotlb_entries sizes the IOTLB apart from its associativity: sets of
// iotlb_ways ways, one set of them all for 0 ways; without it the IOTLB is
// iotlb_sets × iotlb_ways.
func TestIOTLBShape(t *testing.T) {
	for _, c := range []struct {
		yaml       string
		sets, ways int
	}{
		{"machine:\n  iommu: {iotlb_sets: 8, iotlb_ways: 2}\n", 8, 2},
		{"machine:\n  iommu: {iotlb_entries: 64, iotlb_ways: 1}\n", 64, 1},
		{"machine:\n  iommu: {iotlb_entries: 64, iotlb_ways: 4}\n", 16, 4},
		{"machine:\n  iommu: {iotlb_sets: 2, iotlb_entries: 64, iotlb_ways: 0}\n", 1, 64},
		{"machine:\n  iommu: {iotlb_entries: 8, iotlb_ways: 8}\n", 1, 8},
	} {
		s, err := ParseScenario("s.yaml", []byte(c.yaml))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		spec := s.ClusterSpec()
		if spec.IOMMU.IOTLBSets != c.sets || spec.IOMMU.IOTLBWays != c.ways {
			t.Errorf("%q: %d sets × %d ways, want %d × %d", c.yaml, spec.IOMMU.IOTLBSets, spec.IOMMU.IOTLBWays, c.sets, c.ways)
		}
	}
}

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

// Every class of mistake the decoder finds names the key, exactly: unknown
// keys (with the nearest known key at that level, or the key of that name
// in another section), values of the wrong type, floats in integer keys,
// negative numbers in unsigned ones, numbers beyond the type, keys given
// twice, YAML that does not parse.
func TestScenarioKeyAndTypeErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"near miss", "machine:\n  wire: {rate_mpbs: 10}\n", `s.yaml:2: machine.wire.rate_mpbs: unknown key (did you mean "machine.wire.rate_mbps"?)`},
		{"near miss, case", "Machine:\n  nodes: 4\n", `s.yaml:1: Machine: unknown key (did you mean "machine"?)`},
		{"wrong section", "machine:\n  rate_mbps: 10\n", `s.yaml:2: machine.rate_mbps: unknown key (did you mean "machine.wire.rate_mbps" or "machine.startx.line.rate_mbps"?)`},
		{"wrong section, two places", "machine:\n  latency_ns: 10\n", `s.yaml:2: machine.latency_ns: unknown key (did you mean "machine.wire.latency_ns" or "machine.pcie.latency_ns" or "machine.startx.line.latency_ns"?)`},
		{"no near key", "machine:\n  disk: 1\n", "s.yaml:2: machine.disk: unknown key (the keys of machine: nodes, cores, nics, fabric_mhz, wire, pcie, nic, network, iommu, cpu, memory, startx, transport)"},
		{"merge key", "<<: {seed: 1}\n", "s.yaml:1: <<: unknown key (the keys of the file: seed, machine, workload, outputs, bglml, max_memory_mib)"},
		{"string in an integer key", "machine:\n  nodes: two\n", `s.yaml:2: machine.nodes: "two" is not a whole number (2..4096; two nodes share a direct link, more a switch, a leaf-spine network or a torus)`},
		{"quoted number", "machine:\n  nodes: \"4\"\n", `s.yaml:2: machine.nodes: "4" is not a whole number (2..4096; two nodes share a direct link, more a switch, a leaf-spine network or a torus)`},
		{"float in an integer key", "machine:\n  nodes: 2.5\n", "s.yaml:2: machine.nodes: 2.5 is not a whole number (2..4096; two nodes share a direct link, more a switch, a leaf-spine network or a torus)"},
		{"float in an unsigned key", "machine:\n  wire: {latency_ns: 0.5}\n", "s.yaml:2: machine.wire.latency_ns: 0.5 is not a whole number (0..1000000000 ns)"},
		{"negative in an unsigned key", "machine:\n  wire:\n    rate_mbps: -5\n", "s.yaml:3: machine.wire.rate_mbps: -5 is negative (1..1000000 Mb/s)"},
		{"negative float in an unsigned key", "machine:\n  fabric_mhz: -1e3\n", "s.yaml:2: machine.fabric_mhz: -1e3 is negative (1..10000 MHz; a period that is not a whole number of picoseconds is rounded to the nearest)"},
		{"beyond 64 bits", "seed: 18446744073709551616\n", "s.yaml:1: seed: 18446744073709551616 is too large (any whole number 0..18446744073709551615)"},
		{"beyond int", "machine:\n  cores: -9223372036854775809\n", "s.yaml:2: machine.cores: -9223372036854775809 is too small (1..64)"},
		{"beyond uint32", "machine:\n  wire: {loss_ppm: 4294967296}\n", "s.yaml:2: machine.wire.loss_ppm: 4294967296 is too large (0..1000000 ppm)"},
		{"huge float", "machine:\n  nic: {idle_w: 1e300}\n", "s.yaml:2: machine.nic.idle_w: 1e+300 is out of range (0..1000 W)"},
		{"not a number", "workload:\n  dht: {lookups: half}\n", `s.yaml:2: workload.dht.lookups: "half" is not a number (0..1; a fraction of each process's keys)`},
		{"NaN", "workload:\n  dht: {lookups: .nan}\n", "s.yaml:2: workload.dht.lookups: .nan is not a finite number (0..1; a fraction of each process's keys)"},
		{"infinity", "machine:\n  nic: {active_w: .inf}\n", "s.yaml:2: machine.nic.active_w: .inf is not a finite number (0..1000 W; at least machine.nic.idle_w)"},
		{"not a bool", "outputs: {vcd: maybe}\n", `s.yaml:1: outputs.vcd: "maybe" is not true or false (true or false)`},
		{"list for a value", "machine:\n  nodes: [2]\n", "s.yaml:2: machine.nodes: a list where a single value belongs (2..4096; two nodes share a direct link, more a switch, a leaf-spine network or a torus)"},
		{"value for a list", "workload:\n  dht: {collisions: 0.5}\n", "s.yaml:2: workload.dht.collisions: 0.5 where a list belongs (a list of values 0..1; a fraction of the inserts)"},
		{"value for a list of names", "workload:\n  dht: {schemes: AA-SP}\n", `s.yaml:2: workload.dht.schemes: "AA-SP" where a list belongs (a list of strings)`},
		{"wrong type in a list", "workload:\n  dht:\n    collisions:\n      - 0.1\n      - lots\n", `s.yaml:5: workload.dht.collisions[1]: "lots" is not a number (0..1; a fraction of the inserts)`},
		{"section for a value", "workload:\n  kind: {dht: 1}\n", "s.yaml:2: workload.kind: a section where a single value belongs (a string)"},
		{"value for a section", "machine: 3\n", "s.yaml:1: machine: 3 where a section of keys belongs (the keys of machine: nodes, cores, nics, fabric_mhz, wire, pcie, nic, network, iommu, cpu, memory, startx, transport)"},
		{"the file a list", "- 1\n", "s.yaml:1: a list where a section of keys belongs (the keys of the file: seed, machine, workload, outputs, bglml, max_memory_mib)"},
		{"given twice", "machine:\n  nodes: 2\n  nodes: 4\n", "s.yaml:3: machine.nodes: given twice (once; first at line 2)"},
		{"syntax", "machine:\n  nodes: 2\n   cores: 3\n", "s.yaml:3: cannot be read as YAML: mapping values are not allowed in this context"},
		{"frequency out of range", "machine:\n  fabric_mhz: 20000\n", "s.yaml:2: machine.fabric_mhz: 20000 is out of range (1..10000 MHz; a period that is not a whole number of picoseconds is rounded to the nearest)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScenario("s.yaml", []byte(c.yaml))
			if err == nil || err.Error() != c.want {
				t.Fatalf("%q:\n got %v\nwant %s", c.yaml, err, c.want)
			}
		})
	}
	// What a whole number may look like: a YAML integer in any base, or a
	// float without a fraction. Null keeps the default.
	s, err := ParseScenario("s.yaml", []byte("seed: 0x10\nmachine:\n  nodes: 4.0\n  cores: 1e0\n  wire: {rate_mbps: 10_000}\n  pcie: ~\n"))
	if err != nil || s.Seed != 16 || s.Machine.Nodes != 4 || s.Machine.Cores != 1 || s.Machine.Wire.RateMbps != 10000 || s.Machine.PCIe.Gen != 3 {
		t.Fatalf("%+v %v", s.Machine, err)
	}
}

// A clock whose period is not a whole number of picoseconds runs at the
// nearest one, which the cluster's clock has.
func TestFabricMHzRounds(t *testing.T) {
	for _, c := range []struct {
		mhz    string
		period sim.Tick
	}{{"300", 3333}, {"600", 1667}, {"1000", 1000}, {"2400", 417}, {"10000", 100}} {
		s, err := ParseScenario("s.yaml", []byte("machine: {fabric_mhz: "+c.mhz+"}\nworkload: {dht: {inserts: 5, schemes: [RMA], collisions: [0]}}\n"))
		if err != nil {
			t.Fatalf("%s MHz: %v", c.mhz, err)
		}
		sys, _, err := s.Build(sim.NewEngine(1), s.Experiments()[0])
		if err != nil {
			t.Fatalf("%s MHz: %v", c.mhz, err)
		}
		if p := sys.Fabric.Period(); p != c.period {
			t.Errorf("%s MHz: period %v, want %v", c.mhz, p, c.period)
		}
	}
}

// fuzzSeeds is FuzzScenario's seed corpus: the example scenarios, the
// machine presets and scenarios of the keys no example sets.
func fuzzSeeds() [][]byte {
	var out [][]byte
	for _, glob := range []string{"../examples/*.yaml", "../examples/machines/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			if b, err := os.ReadFile(name); err == nil && !strings.HasPrefix(filepath.Base(name), "sweep-") {
				out = append(out, b)
			}
		}
	}
	return append(out,
		[]byte("machine: {nodes: 3, cores: 2}\nworkload: {dht: {procs_per_node: 2, aa_logs: process, schemes: [AA-Poll, AM-Int], collisions: [0.5]}}\n"),
		[]byte("workload: {kind: sort, sort: {keys: 64}}\nmachine: {fabric_mhz: 300}\n"),
		[]byte("workload: {kind: stream, stream: {op: send, messages: 4, msg_bytes: 100}}\n"),
		[]byte("seed: 0x10\nmachine:\n  nodes: 4.0\n  wire: {rate_mbps: -1}\n"),
		[]byte("a: &x [1]\nb: *x\n"),
		[]byte("machine:\n  nodes: 6\n  network: {topology: torus, torus: {dims: [3, 2, 1], bytes_per_cycle: 8, wire_cycles: 3, escape_chunks: 16}}\n"),
		[]byte("machine:\n  startx: {tx_depth: 2, rdma_packet_bytes: 80, access_bytes: 8, line: {rate_mbps: 800}}\n"),
		[]byte("machine:\n  nodes: 4\n  cores: 8\n  startx: {nius: 3, network: crossbar, dma_mbps: 38, rdma_frame_bytes: 8256, rdma_commands: 64}\n"+
			"workload:\n  kind: splitc\n  splitc: {app: con-comm, nodes: 1, con_comm_side: 4, schemes: [shm-only, adaptive, 1/32], slots: 4, blocks: 1, net_blocks: 1, staging: 1, pending: 1, poll_gap: 1}\n"),
		[]byte("machine:\n  nodes: 8\n  cores: 1\n  startx: {network: crossbar}\nworkload:\n  kind: splitc\n  splitc: {app: em3d-naive, em3d_nodes: 2, em3d_steps: 1, schemes: [net-only, 1/1]}\n"),
		[]byte("machine:\n  startx: {nius: 2, network: arctic, rdma_frame_bytes: 64}\nworkload: {kind: splitc, splitc: {app: fft, fft_n: 8}}\n"),
		// The IOMMU's pipeline at its edges, the NIC's receive rate and
		// the polling hyperthreads a core.
		[]byte("machine:\n  nodes: 2\n  cores: 2\n  cpu: {polling_hyperthreads: core}\n  nic: {process_ns: 1}\n  iommu: {slots: 1, walkers: 1, flush_waiters: 1024}\n"+
			"workload: {dht: {procs_per_node: 2, aa_logs: process, schemes: [AA-SP], collisions: [0.5]}}\n"),
		[]byte("machine: {iommu: {slots: 1024, walkers: 1024, flush_waiters: 0}, nic: {process_ns: 1000000}, cpu: {polling_hyperthreads: node}}\n"),
	)
}

// The fuzz seeds set every key of today's options (the IOMMU's pipeline,
// the NIC's receive rate, the polling hyperthreads' placement), so that
// the fuzzer starts from scenarios that reach their checks and their
// machines.
func TestFuzzSeedsSetNewKeys(t *testing.T) {
	set := map[string]bool{}
	for _, b := range fuzzSeeds() {
		var root yaml.Node
		if yaml.Unmarshal(b, &root) != nil || len(root.Content) == 0 {
			continue
		}
		var walk func(n *yaml.Node, key string)
		walk = func(n *yaml.Node, key string) {
			if key != "" {
				set[key] = true
			}
			if n.Kind != yaml.MappingNode {
				return
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if key != "" {
					k = key + "." + k
				}
				walk(n.Content[i+1], k)
			}
		}
		walk(root.Content[0], "")
	}
	for _, key := range []string{"machine.iommu.slots", "machine.iommu.walkers", "machine.iommu.flush_waiters",
		"machine.nic.process_ns", "machine.cpu.polling_hyperthreads", "machine.network.torus.escape_chunks"} {
		if !set[key] {
			t.Errorf("no fuzz seed sets %s", key)
		}
	}
}

// FuzzScenario: no scenario file makes the reader panic or allocate
// beyond its estimate. What it accepts is within its memory limit, has
// experiments whose configurations the models accept, and — when it is
// small — builds every experiment's machine and workload (not run).
func FuzzScenario(f *testing.F) {
	for _, b := range fuzzSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario("f.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		total, _ := s.MemoryEstimate()
		if total > s.MaxMemoryMiB<<20 {
			t.Fatalf("accepted a scenario of %d bytes, over its %d MiB", total, s.MaxMemoryMiB)
		}
		xs := s.Experiments()
		if len(xs) == 0 {
			t.Fatal("no experiments")
		}
		spec := s.ClusterSpec()
		if _, err := sim.NearestPeriodOfMHz(spec.FabricMHz); err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{spec.IOMMU.Validate(), spec.Wire.Validate(), spec.PCIe.Validate(), spec.Power.Validate()} {
			if err != nil {
				t.Fatalf("the machine's configuration: %v", err)
			}
		}
		if spec.Topology == machine.TopologyTorus {
			ts := spec.Torus
			if ts.Dims == [3]int{} {
				ts.Dims = machine.TorusDims(spec.Nodes)
			}
			if err := ts.Validate(); err != nil || ts.Nodes() != spec.Nodes {
				t.Fatalf("the torus's configuration: %v, %d nodes for %d", err, ts.Nodes(), spec.Nodes)
			}
		}
		if spec.StartX != nil {
			if err := errors.Join(spec.StartX.Validate(), spec.StartXLine.Validate()); err != nil {
				t.Fatalf("the StarT-X configuration: %v", err)
			}
		}
		if s.Workload.Kind == KindDHT {
			for _, x := range xs {
				if c := s.DHTConfig(x); c.Inserts < 1 || c.Cells < 1 || c.Collisions < 0 || c.Collisions > 1 {
					t.Fatalf("DHT configuration %+v", c)
				}
			}
		}
		if total > 16<<20 || s.Machine.Nodes*s.Machine.Nodes*s.Machine.Cores > 512 {
			return // large: building it would slow the fuzzing down
		}
		for _, x := range xs {
			if _, _, err := s.Prepare(sim.NewEngine(s.Seed), x); err != nil {
				t.Fatalf("a valid scenario does not build: %v", err)
			}
		}
	})
}

// A scenario that would need more memory than max_memory_mib is refused
// before anything is built, naming the keys that make it large; raising
// max_memory_mib lets it through, and the largest machine alone fits.
func TestMemoryEstimate(t *testing.T) {
	big := "machine: {nodes: 64, cores: 64}\nworkload:\n  dht:\n    procs_per_node: 64\n    inserts: 100000\n"
	for _, c := range []struct{ yaml, want string }{
		{big, "s.yaml:5: workload.dht.inserts: the scenario needs about 538 GiB of memory, 525 GiB for the DHT's keys and the frames of their operations (at most max_memory_mib, 4096 MiB: make workload.dht.inserts or workload.dht.procs_per_node or machine.nodes smaller, or raise max_memory_mib)"},
		{"machine: {nodes: 64, cores: 64}\nworkload:\n  kind: sort\n  sort: {keys: 4096}\n", "s.yaml:4: workload.sort.procs_per_node: the scenario needs about 1.5 TiB of memory, 1.5 TiB for the sort's samples (every process gathers every process's) (at most max_memory_mib, 4096 MiB: make workload.sort.procs_per_node or machine.nodes smaller, or raise max_memory_mib)"},
		{"machine: {nodes: 64, cores: 64}\nworkload:\n  kind: counter\n  counter: {elements: 1048576}\n", "s.yaml:4: workload.counter.elements: the scenario needs about 97 GiB of memory, 96 GiB for the counter's arrays (at most max_memory_mib, 4096 MiB: make workload.counter.elements or workload.counter.procs_per_node or machine.nodes smaller, or raise max_memory_mib)"},
		{"max_memory_mib: 10\n", "s.yaml:1: max_memory_mib: 10 is out of range (64..1048576 MiB; the most memory an experiment's estimate may reach; default 4096)"},
	} {
		if _, err := ParseScenario("s.yaml", []byte(c.yaml)); err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.yaml, err, c.want)
		}
	}
	for _, ok := range []string{"max_memory_mib: 1048576\n" + big, "machine: {nodes: 64, cores: 64}\n",
		"workload:\n  kind: stream\n  stream: {messages: 1024, msg_bytes: 1048576}\n"} {
		if _, err := ParseScenario("s.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	// Every term names keys that exist.
	for _, kind := range Kinds {
		s := DefaultScenario()
		s.Workload.Kind = kind
		_, terms := s.MemoryEstimate()
		for _, term := range terms {
			for _, k := range term.Keys {
				if e := KeyProblem(k); e != nil {
					t.Errorf("%s: %s: %v", kind, term.What, e)
				}
			}
		}
	}
}

// Every numeric key of a scenario has a range (and no range names a key
// that is not one): a key added without one fails here.
func TestEveryNumericKeyHasARange(t *testing.T) {
	dec := NewDecoder("")
	for _, k := range dec.Keys(reflect.TypeOf(Scenario{}), "") {
		v, _ := field(reflect.ValueOf(&Scenario{}).Elem(), k)
		kind := v.Kind()
		if kind == reflect.Slice {
			kind, k = v.Type().Elem().Kind(), k+"[]"
		}
		switch kind {
		case reflect.String, reflect.Bool, reflect.Struct:
			continue
		}
		if _, ok := rangeOf[k]; !ok {
			t.Errorf("%s (%v) has no range in ranges", k, kind)
		}
	}
	for _, r := range ranges {
		if e := KeyProblem(strings.TrimSuffix(r.key, "[]")); e != nil {
			t.Errorf("the range of %s: %v", r.key, e)
		}
	}
}

// Sizes that took the host down (the Go runtime out of memory, a panic
// in make, gigabytes allocated before the first event) are refused while
// the file is read, each naming its key.
func TestScenarioSizesThatCrashed(t *testing.T) {
	for _, c := range []struct{ yaml, key string }{
		{"machine:\n  network: {topology: leaf-spine, spines: 1000000000}\nworkload: {dht: {procs_per_node: 1}}\n", "machine.network.spines"},
		{"machine:\n  iommu: {iotlb_sets: 1099511627776, iotlb_ways: 1099511627776}\n", "machine.iommu.iotlb_sets"},
		{"machine:\n  iommu: {log_cam_entries: 1000000000000}\n", "machine.iommu.log_cam_entries"},
		{"workload:\n  dht: {cells: 1099511627776}\n", "workload.dht.cells"},
		{"workload:\n  dht: {inserts: 1000000000}\n", "workload.dht.inserts"},
		{"machine: {nodes: 64, cores: 64}\nworkload:\n  dht: {procs_per_node: 64, inserts: 1000000}\n", "workload.dht.inserts"},
		{"machine: {nodes: 64, cores: 64}\nworkload:\n  kind: sort\n  sort: {keys: 1048576}\n", "workload.sort.procs_per_node"},
		{"machine: {nodes: 16, cores: 4}\nworkload:\n  kind: sort\n  sort: {keys: 1048576}\n", "workload.sort.keys"},
		{"machine: {nodes: 64, cores: 64}\nworkload:\n  kind: getlog\n  getlog: {gets: 10000000}\n", "workload.getlog.gets"},
		{"workload:\n  kind: xor\n  xor: {words: 1000000000000}\n", "workload.xor.words"},
	} {
		_, err := ParseScenario("s.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), ": "+c.key+": ") {
			t.Errorf("%q: %v, want an error naming %s", c.yaml, err, c.key)
		}
	}
}

// An SMP node's caches count in the memory estimate: a 1 GiB L2 of
// 8-byte lines per core is refused before anything is allocated.
func TestSMPCachesInTheEstimate(t *testing.T) {
	_, err := ParseScenario("s.yaml", []byte("machine:\n  cores: 4\n  cpu:\n    coherence: {line_bytes: 8, l2_kb: 1048576, l2_ways: 1, miss_cycles: 50, c2c_cycles: 80, cas_cycles: 15}\n"))
	if err == nil || !strings.Contains(err.Error(), "machine.cpu.coherence.l2_kb: the scenario needs about") || !strings.Contains(err.Error(), "SMP caches") {
		t.Fatalf("%v, want the memory estimate naming machine.cpu.coherence.l2_kb", err)
	}
}
