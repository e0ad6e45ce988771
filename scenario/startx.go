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
// docs/mpi-start.md), or NIUs set up as Myrinet NICs joined by a crossbar
// (seed 000's AM-II, docs/am2.md). Present, even empty ({}), it adds
// them; every key's 0 is the NIU's default.
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
	// NIUs a node (0..4; 0: 1), each on a PCIe link of its own: seed
	// 000's SMPs have three Myrinet NICs (docs/am2.md).
	NIUs int `yaml:"nius" json:"nius,omitempty"`
	// Network joins the NIUs: arctic (the default: two by a line each
	// way, up to 8 by 4-port Arctic routers) or crossbar (one crossbar
	// switch of a port a NIU, as a Myrinet switch: any number of NIUs a
	// node, up to 256 ports).
	Network string `yaml:"network" json:"network,omitempty"`
	// DMAMBps caps the NIU's DMA, reads and writes together: the I/O bus
	// it sits on (a Myrinet M2F's SBus: 38). 0: no cap.
	DMAMBps uint64 `yaml:"dma_mbps" json:"dma_mbps,omitempty"`
	// RDMAFrameBytes makes the RDMA engine store and forward packets of up
	// to this many bytes (a Myrinet LANai's staging in its SRAM); 0: cut
	// through, every DMA read a packet.
	RDMAFrameBytes int `yaml:"rdma_frame_bytes" json:"rdma_frame_bytes,omitempty"`
	Line           struct {
		RateMbps  uint64 `yaml:"rate_mbps" json:"rate_mbps,omitempty"`   // 1..1000000; 0: 1200 (150 MB/s)
		LatencyNS uint64 `yaml:"latency_ns" json:"latency_ns,omitempty"` // 1..1e9; 0: 500
	} `yaml:"line" json:"line"`
}

// maxStartXNodes is the nodes the Arctic network of default routers joins
// (machine.startXSwitched: two levels of 4-port routers).
const maxStartXNodes = 8

// maxCrossbarPorts bounds the crossbar network: a port a NIU.
const maxCrossbarPorts = 256

// The networks of machine.startx.network.
const (
	startXArctic   = "arctic"
	startXCrossbar = "crossbar"
)

// checkStartX validates machine.startx beyond its ranges: the network, the
// nodes and NIUs it joins, an RDMA packet of whole words and a frame of
// whole packets, an access width the CPU has.
func (s *Scenario) checkStartX() (string, error) {
	x := s.Machine.StartX
	if x == nil {
		return "", nil
	}
	nius := max(x.NIUs, 1)
	pkt := x.RDMAPacketBytes
	if pkt == 0 {
		pkt = startx.DefaultSpec().RDMAPacketBytes
	}
	crossbar := x.Network == startXCrossbar
	switch {
	case x.Network != "" && x.Network != startXArctic && !crossbar:
		return "machine.startx.network", notOneOf(x.Network, "a StarT-X network", []string{startXArctic, startXCrossbar},
			startXArctic+": Arctic lines and 4-port routers, one NIU a node, up to 8 nodes; "+startXCrossbar+": one crossbar switch, a port a NIU")
	case crossbar && s.Machine.Nodes*nius > maxCrossbarPorts:
		return "machine.startx.nius", input.Errorf(fmt.Sprintf("machine.nodes × nius at most %d: the crossbar's ports", maxCrossbarPorts),
			"%d nodes × %d NIUs need %d ports", s.Machine.Nodes, nius, s.Machine.Nodes*nius)
	case !crossbar && nius > 1:
		return "machine.startx.nius", input.Errorf("1 with the Arctic network; 1..4 with machine.startx.network: "+startXCrossbar,
			"%d NIUs a node, but the Arctic network joins one a node", nius)
	case !crossbar && s.Machine.Nodes > maxStartXNodes:
		return "machine.startx", input.Errorf(fmt.Sprintf("machine.nodes: 2..%d with machine.startx (more with network: %s)", maxStartXNodes, startXCrossbar),
			"%d nodes: a fat tree of 4-port Arctic routers holds at most %d", s.Machine.Nodes, maxStartXNodes)
	case x.RDMAPacketBytes%8 != 0:
		return "machine.startx.rdma_packet_bytes", input.Errorf(rangeOf["machine.startx.rdma_packet_bytes"].text(), "%d is not a multiple of 8", x.RDMAPacketBytes)
	case x.AccessBytes != 0 && x.AccessBytes != 8 && x.AccessBytes != 64:
		return "machine.startx.access_bytes", input.Errorf(rangeOf["machine.startx.access_bytes"].text(), "%d bytes is not an access the CPU makes", x.AccessBytes)
	case x.RDMAFrameBytes%pkt != 0:
		return "machine.startx.rdma_frame_bytes", input.Errorf(fmt.Sprintf("0, or a multiple of rdma_packet_bytes (%d) up to 65536", pkt), "%d is not a multiple of %d", x.RDMAFrameBytes, pkt)
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
	ns.DMAMBps, ns.RDMAFrameBytes = x.DMAMBps, x.RDMAFrameBytes
	c.StartXNICs, c.StartXCrossbar = x.NIUs, x.Network == startXCrossbar
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
