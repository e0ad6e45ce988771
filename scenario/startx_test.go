package scenario

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/sim"
)

// machine.startx gives the two nodes StarT-X NIUs: its keys reach the
// NIU's and the line's specs, 0 keeps a default, and the machine builds.
func TestStartXKeys(t *testing.T) {
	def := startx.DefaultSpec()
	for _, tc := range []struct {
		name, yaml string
		check      func(s *Scenario, c machine.Spec) bool
	}{
		{"absent", "machine: {nodes: 2}\n", func(s *Scenario, c machine.Spec) bool { return c.StartX == nil && s.StartXBlock() }},
		{"empty: the defaults", "machine: {startx: {}}\n", func(s *Scenario, c machine.Spec) bool {
			return *c.StartX == def && c.StartXLine == startx.DefaultLineSpec() && s.StartXBlock()
		}},
		{"every key", "machine:\n  startx:\n    tx_depth: 2\n    rx_depth: 3\n    access_ns: 60\n    rdma_packet_bytes: 80\n    rdma_reads: 4\n    rdma_commands: 5\n    queue_tlps: 6\n    access_bytes: 8\n    line: {rate_mbps: 800, latency_ns: 2000}\n",
			func(s *Scenario, c machine.Spec) bool {
				x := c.StartX
				return x.TXDepth == 2 && x.RXDepth == 3 && x.AccessPS == 60*sim.NS && x.RDMAPacketBytes == 80 && x.RDMAReads == 4 &&
					x.RDMACommands == 5 && x.QueueTLPs == 6 && !s.StartXBlock() &&
					c.StartXLine == startx.LineSpec{RateMbps: 800, LatencyPS: 2 * sim.US}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseScenario("s.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			c := s.ClusterSpec()
			if !tc.check(&s, c) {
				t.Fatalf("spec %+v, line %+v", c.StartX, c.StartXLine)
			}
			cl, err := machine.New(sim.NewEngine(1), c)
			if err != nil {
				t.Fatal(err)
			}
			if (c.StartX != nil) != (cl.Nodes[0].NIU != nil) || c.StartX != nil && len(cl.StartXLines) != 2 {
				t.Fatalf("the machine's NIUs do not follow machine.startx")
			}
		})
	}
}

// Bad values of machine.startx are refused as file:line: key: what
// (allowed), and so is a StarT-X machine of more nodes than the Arctic
// network of 4-port routers joins.
func TestStartXErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"machine:\n  startx:\n    tx_depth: 2000\n", "s.yaml:3: machine.startx.tx_depth: 2000 is out of range (0..1024 messages; 0: 8)"},
		{"machine:\n  startx:\n    rx_depth: -1\n", "s.yaml:3: machine.startx.rx_depth: -1 is out of range (0..1024 messages; the line's credits; 0: 32)"},
		{"machine:\n  startx:\n    rdma_packet_bytes: 12\n", "s.yaml:3: machine.startx.rdma_packet_bytes: 12 is not a multiple of 8 (a multiple of 8 in 8..80 bytes; 0: 64)"},
		{"machine:\n  startx:\n    rdma_packet_bytes: 88\n", "s.yaml:3: machine.startx.rdma_packet_bytes: 88 is out of range (a multiple of 8 in 8..80 bytes; 0: 64)"},
		{"machine:\n  startx:\n    access_bytes: 16\n", "s.yaml:3: machine.startx.access_bytes: 16 bytes is not an access the CPU makes (8 or 64 bytes (block stores and loads); 0: 64)"},
		{"machine:\n  startx:\n    line: {rate_mbps: 2000000}\n", "s.yaml:3: machine.startx.line.rate_mbps: 2000000 is out of range (0..1000000 Mb/s; 0: 1200)"},
		{"machine:\n  startx:\n    fifo_depth: 4\n", "s.yaml:3: machine.startx.fifo_depth: unknown key"},
		{"machine:\n  nodes: 9\n  startx: {}\n", "s.yaml:3: machine.startx: 9 nodes: a fat tree of 4-port Arctic routers holds at most 8 (machine.nodes: 2..8 with machine.startx (more with network: crossbar))"},
	} {
		_, err := ParseScenario("s.yaml", []byte(tc.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
}
