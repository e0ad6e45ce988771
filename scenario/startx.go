package scenario

import (
	"fmt"

	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/sim"
)

// StartXSpec is machine.startx: a StarT-X NIU in every node, two joined by
// an Arctic line each way, more by Arctic routers (seed 001,
// docs/mpi-start.md). Present, even
// empty ({}), it adds them; every key's 0 is the NIU's default.
type StartXSpec struct {
	TXDepth int `yaml:"tx_depth" json:"tx_depth,omitempty"` // messages of each transmit FIFO, 1..1024; 0: 8
	RXDepth int `yaml:"rx_depth" json:"rx_depth,omitempty"` // of each receive FIFO (the line's credits), 1..1024; 0: 32
	// AccessNS is the NIU's time to serve one host access of its BAR.
	AccessNS        uint64 `yaml:"access_ns" json:"access_ns,omitempty"`
	RDMAPacketBytes int    `yaml:"rdma_packet_bytes" json:"rdma_packet_bytes,omitempty"` // a multiple of 8 in 8..80; 0: 64
	RDMAReads       int    `yaml:"rdma_reads" json:"rdma_reads,omitempty"`               // DMA reads in flight, 1..32; 0: 1
	RDMACommands    int    `yaml:"rdma_commands" json:"rdma_commands,omitempty"`         // send commands queued, 1..64; 0: 2
	QueueTLPs       int    `yaml:"queue_tlps" json:"queue_tlps,omitempty"`               // TLPs waiting for the link up, 1..1024; 0: 16
	// AccessBytes is the hosts' stores and loads of the FIFOs: 8, or 64
	// (the UltraSPARC's block stores and loads, stda/ldda; the default).
	AccessBytes int `yaml:"access_bytes" json:"access_bytes,omitempty"`
	Line        struct {
		RateMbps  uint64 `yaml:"rate_mbps" json:"rate_mbps,omitempty"`   // 1..1000000; 0: 1200 (150 MB/s)
		LatencyNS uint64 `yaml:"latency_ns" json:"latency_ns,omitempty"` // 1..1e9; 0: 500
	} `yaml:"line" json:"line"`
}

// maxStartXNodes is the nodes the Arctic network of default routers joins
// (machine.startXSwitched: two levels of 4-port routers).
const maxStartXNodes = 8

// checkStartX validates machine.startx beyond its ranges: the nodes the
// Arctic network joins, an
// RDMA packet of whole words, an access width the CPU has.
func (s *Scenario) checkStartX() (string, error) {
	x := s.Machine.StartX
	switch {
	case x == nil:
		return "", nil
	case s.Machine.Nodes > maxStartXNodes:
		return "machine.startx", input.Errorf(fmt.Sprintf("machine.nodes: 2..%d with machine.startx", maxStartXNodes),
			"%d nodes: a fat tree of 4-port Arctic routers holds at most %d", s.Machine.Nodes, maxStartXNodes)
	case x.RDMAPacketBytes%8 != 0:
		return "machine.startx.rdma_packet_bytes", input.Errorf(rangeOf["machine.startx.rdma_packet_bytes"].text(), "%d is not a multiple of 8", x.RDMAPacketBytes)
	case x.AccessBytes != 0 && x.AccessBytes != 8 && x.AccessBytes != 64:
		return "machine.startx.access_bytes", input.Errorf(rangeOf["machine.startx.access_bytes"].text(), "%d bytes is not an access the CPU makes", x.AccessBytes)
	}
	return "", nil
}

// startXSpec puts machine.startx into the cluster spec.
func (s *Scenario) startXSpec(c *machine.Spec) {
	x := s.Machine.StartX
	if x == nil {
		return
	}
	ns := startx.DefaultSpec()
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	set(&ns.TXDepth, x.TXDepth)
	set(&ns.RXDepth, x.RXDepth)
	set(&ns.RDMAPacketBytes, x.RDMAPacketBytes)
	set(&ns.RDMAReads, x.RDMAReads)
	set(&ns.RDMACommands, x.RDMACommands)
	set(&ns.QueueTLPs, x.QueueTLPs)
	if x.AccessNS != 0 {
		ns.AccessPS = sim.Tick(x.AccessNS) * sim.NS
	}
	c.StartX = &ns
	c.StartXLine = startx.DefaultLineSpec()
	if x.Line.RateMbps != 0 {
		c.StartXLine.RateMbps = x.Line.RateMbps
	}
	if x.Line.LatencyNS != 0 {
		c.StartXLine.LatencyPS = sim.Tick(x.Line.LatencyNS) * sim.NS
	}
}

// StartXBlock reports whether the hosts access the StarT-X FIFOs with
// 64-byte block stores and loads (machine.startx.access_bytes).
func (s *Scenario) StartXBlock() bool {
	return s.Machine.StartX == nil || s.Machine.StartX.AccessBytes != 8
}
