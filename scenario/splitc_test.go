package scenario

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/sim"
)

// splitCMachine is two nodes of four cores with Myrinet-like NIUs, three
// a node on a crossbar.
const splitCMachine = "machine:\n  nodes: 2\n  cores: 4\n  startx: {nius: 3, network: crossbar, dma_mbps: 38, rdma_frame_bytes: 8256, rdma_commands: 64}\n"

// machine.startx's AM-II keys reach the machine's spec, workload.splitc's
// reach AM-II's and the run's, its schemes are the experiments, and 0
// keeps each default.
func TestSplitCKeys(t *testing.T) {
	s, err := ParseScenario("s.yaml", []byte(splitCMachine+"workload:\n  kind: splitc\n  splitc:\n    app: em3d-good\n    em3d_nodes: 40\n    em3d_steps: 1\n"+
		"    schemes: [adaptive, 1/8, 1/32]\n    slots: 8\n    blocks: 2\n    net_blocks: 3\n    staging: 4\n    pending: 5\n    poll_gap: 16\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.ClusterSpec()
	if c.StartXNICs != 3 || !c.StartXCrossbar || c.StartX.DMAMBps != 38 || c.StartX.RDMAFrameBytes != 8256 {
		t.Errorf("the NIUs: %d a node, crossbar %v, %+v", c.StartXNICs, c.StartXCrossbar, *c.StartX)
	}
	w := &s.Workload.SplitC
	spec := w.amSpec(am2.Policy{Every: 8})
	if spec.Slots != 8 || spec.Blocks != 2 || spec.Net != (am2.NetSpec{Blocks: 3, Staging: 4, Pending: 5}) || spec.Poll.Every != 8 {
		t.Errorf("AM-II's spec %+v", spec)
	}
	if err := spec.Validate(); err != nil {
		t.Error(err)
	}
	var got []string
	for _, x := range s.Experiments() {
		got = append(got, string(x.Scheme))
	}
	if strings.Join(got, " ") != "adaptive 1/8 1/32" {
		t.Errorf("experiments %v", got)
	}
	d, err := ParseScenario("s.yaml", []byte(splitCMachine+"workload:\n  kind: splitc\n"))
	if err != nil {
		t.Fatal(err)
	}
	if spec := d.Workload.SplitC.amSpec(am2.Policy{}); spec.Slots != 256 || spec.Blocks != 16 || spec.Net != (am2.NetSpec{}) {
		t.Errorf("the defaults: %+v", spec)
	}
	if xs := d.Experiments(); len(xs) != 1 || xs[0].Scheme != "adaptive" {
		t.Errorf("no schemes: %v, want adaptive", xs)
	}
	if a := startXDefaults(t); a.StartXNICs != 0 || a.StartXCrossbar || a.StartX.DMAMBps != 0 || a.StartX.RDMAFrameBytes != 0 {
		t.Errorf("machine.startx: {} has AM-II's figures: %+v", a)
	}
}

func startXDefaults(t *testing.T) (c struct {
	StartXNICs     int
	StartXCrossbar bool
	StartX         struct {
		DMAMBps        uint64
		RDMAFrameBytes int
	}
}) {
	s, err := ParseScenario("s.yaml", []byte("machine: {startx: {}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := s.ClusterSpec()
	c.StartXNICs, c.StartXCrossbar = m.StartXNICs, m.StartXCrossbar
	c.StartX.DMAMBps, c.StartX.RDMAFrameBytes = m.StartX.DMAMBps, m.StartX.RDMAFrameBytes
	return c
}

// A splitc scenario runs: each policy's experiment builds the machine
// and the ranks, runs to the end, and the result is checked against the
// serial computation.
func TestSplitCRuns(t *testing.T) {
	s, err := ParseScenario("s.yaml", []byte(splitCMachine+"workload:\n  kind: splitc\n  splitc: {app: fft, fft_n: 16, schemes: [adaptive, 1/1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var times []uint64
	for _, x := range s.Experiments() {
		p, err := s.PrepareRun(sim.NewEngine(s.Seed), x)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.Sys.Cluster.Nodes[0].NIUs); n != 3 {
			t.Fatalf("%d NIUs on node 0, want 3", n)
		}
		end := p.Sys.Cluster.Run(sim.S, p.Sys.Cluster.AppsDone)
		if f := p.Progress(); f != 1 {
			t.Errorf("progress %v at the end", f)
		}
		o, err := p.Finish(end)
		if err != nil {
			t.Fatal(err)
		}
		r := o.Workload
		if !r.Verified || r.Scheme != x.Scheme || r.Workload != KindSplitC || r.SimTimePS == 0 || r.Unit != "messages/s" ||
			!strings.Contains(r.Detail, "3D FFT on a Clump of 2 × 4") || !strings.Contains(r.Detail, "bulk 64 and 48") {
			t.Fatalf("%+v", r)
		}
		times = append(times, r.SimTimePS)
	}
	// Polling the network on every poll costs the FFT's time.
	if times[1] <= times[0] {
		t.Errorf("1/1 %d ps not slower than adaptive %d ps", times[1], times[0])
	}
}

// Bad values of the AM-II keys are refused before anything is built as
// file:line: key: what (allowed).
func TestSplitCErrors(t *testing.T) {
	w := func(body string) string {
		return splitCMachine + "workload:\n  kind: splitc\n  splitc:\n    " + body + "\n"
	}
	for _, tc := range []struct{ yaml, want string }{
		{w("app: fftt"), `s.yaml:8: workload.splitc.app: "fftt" is not a Split-C run (did you mean "fft"? fft, con-comm, con-comp, em3d-naive, em3d-good)`},
		{w("fft_n: 48"), "s.yaml:8: workload.splitc.fft_n: 48 is not a power of two (2..1024; a power of two, a multiple of the ranks)"},
		{w("fft_n: 4"), "s.yaml:8: workload.splitc.fft_n: 4 is not a multiple of the 8 ranks (a power of two, a multiple of the 8 ranks (nodes × procs_per_node))"},
		{w("fft_n: 2048"), "s.yaml:8: workload.splitc.fft_n: 2048 is out of range (2..1024; a power of two, a multiple of the ranks)"},
		{w("{app: con-comm, procs_per_node: 3}"), "s.yaml:7: workload.splitc.nodes: 2 nodes × 3 ranks is 6 ranks, and con-comm has no processor grid for them (8 or 32 ranks (nodes × procs_per_node): the processor grids of seed 000's runs)"},
		{w("procs_per_node: 5"), "s.yaml:8: workload.splitc.procs_per_node: 5 is more than machine.cores (0..4: up to machine.cores; 0: every core)"},
		{w("nodes: 3"), "s.yaml:8: workload.splitc.nodes: 3 is more than machine.nodes (0..2: up to machine.nodes; 0: every node)"},
		{w("schemes: [adaptive, shm-only]"), "s.yaml:8: workload.splitc.schemes[1]: shm-only reaches no other node, and the ranks are on 2 (adaptive or 1/k with the ranks on more than one node; shm-only on one (workload.splitc.nodes: 1))"},
		{w("schemes: [net-only]"), "s.yaml:8: workload.splitc.schemes[0]: net-only reaches no rank of the sender's node, and a node has 4 (adaptive or 1/k with more than one rank a node; net-only with one (workload.splitc.procs_per_node: 1))"},
		{w("schemes: [1/0]"), `s.yaml:8: workload.splitc.schemes[0]: "1/0" is not a polling policy (did you mean "1/8"? adaptive, 1/k (k 1..256), shm-only or net-only)`},
		{w("schemes: [1/8, 1/8]"), "s.yaml:8: workload.splitc.schemes[1]: 1/8 is in the list twice (each policy once)"},
		{w("slots: 5000"), "s.yaml:8: workload.splitc.slots: 5000 is out of range (0..4096; packets of a shared-memory queue; 0: 256)"},
		{w("poll_gap: -1"), "s.yaml:8: workload.splitc.poll_gap: -1 is out of range (0..100000 cycles; between two empty polls of a waiting rank; 0: 32)"},
		{w("{app: em3d-naive, em3d_nodes: 1}"), "s.yaml:8: workload.splitc.em3d_nodes: 1 is out of range (2..1048576; per rank)"},
		{"machine: {nodes: 2, cores: 4}\nworkload:\n  kind: splitc\n", "s.yaml:1: machine.startx: absent, but workload.splitc polls the network under adaptive (a machine.startx section (the NIUs AM-II's network protocol runs on; docs/am2.md), or only shm-only on one node)"},
		{"workload:\n  kind: splitc\n  splitc: {nodes: 1, schemes: [shm-only, 1/8]}\n", "s.yaml:1: machine.startx: absent, but workload.splitc polls the network under 1/8 (a machine.startx section (the NIUs AM-II's network protocol runs on; docs/am2.md), or only shm-only on one node)"},
		{"machine:\n  startx: {nius: 3}\n", "s.yaml:2: machine.startx.nius: 3 NIUs a node, but the Arctic network joins one a node (1 with the Arctic network; 1..4 with machine.startx.network: crossbar)"},
		{"machine:\n  startx: {nius: 5, network: crossbar}\n", "s.yaml:2: machine.startx.nius: 5 is out of range (0..4; NIUs a node, each on a PCIe link of its own; more than 1 needs network: crossbar; 0: 1)"},
		{"machine:\n  startx: {network: mesh}\n", `s.yaml:2: machine.startx.network: "mesh" is not a StarT-X network (arctic: Arctic lines and 4-port routers, one NIU a node, up to 8 nodes; crossbar: one crossbar switch, a port a NIU)`},
		{"machine:\n  nodes: 100\n  startx: {nius: 3, network: crossbar}\n", "s.yaml:3: machine.startx.nius: 100 nodes × 3 NIUs need 300 ports (machine.nodes × nius at most 256: the crossbar's ports)"},
		{"machine:\n  startx: {rdma_frame_bytes: 100}\n", "s.yaml:2: machine.startx.rdma_frame_bytes: 100 is not a multiple of 64 (0, or a multiple of rdma_packet_bytes (64) up to 65536)"},
		{"machine:\n  nodes: 2\n  cores: 4\n  startx: {nius: 3, network: crossbar}\nworkload: {kind: splitc}\n", "s.yaml:4: machine.startx.rdma_commands: 2, but 4 ranks a node on 3 NIUs with 2 staging blocks each need 4 (4..64: a command for each staging block of the ranks that share a NIU)"},
		{"machine:\n  startx: {dma_mbps: 2000000}\n", "s.yaml:2: machine.startx.dma_mbps: 2000000 is out of range (0..1000000 MB/s; the NIU's DMA, reads and writes together, capped (an I/O bus); 0: no cap)"},
		{"machine:\n  nodes: 32\n  cores: 1\n  startx: {network: crossbar}\nworkload:\n  kind: splitc\n  splitc: {app: fft, fft_n: 1024, schemes: [net-only]}\n",
			"s.yaml:7: workload.splitc.fft_n: the scenario needs about 113 GiB of memory, 113 GiB for the run's data (fft) (at most max_memory_mib, 4096 MiB: make workload.splitc.fft_n or workload.splitc.procs_per_node or workload.splitc.nodes smaller, or raise max_memory_mib)"},
	} {
		_, err := ParseScenario("s.yaml", []byte(tc.yaml))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
	// One SMP without NIUs under shared memory only is a valid run; the
	// NOW of 32 on a crossbar is a valid machine: more nodes than the
	// Arctic network's 8.
	if _, err := ParseScenario("s.yaml", []byte("machine: {cores: 8}\nworkload:\n  kind: splitc\n  splitc: {nodes: 1, schemes: [shm-only]}\n")); err != nil {
		t.Error(err)
	}
	if _, err := ParseScenario("s.yaml", []byte("machine:\n  nodes: 32\n  cores: 1\n  startx: {network: crossbar}\nworkload:\n  kind: splitc\n  splitc: {app: em3d-good, schemes: [net-only]}\n")); err != nil {
		t.Error(err)
	}
}
