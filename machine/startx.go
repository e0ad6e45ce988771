package machine

import (
	"fmt"

	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// StartXBARBase is the StarT-X NIU's BAR (Spec.StartX), below the RDMA
// NIC's.
const StartXBARBase = 0xe000_0000

// StartXID is the NIU's requester ID: the bus after the RDMA NICs' (1 to MaxNICs).
var StartXID = tlp.NewID(1+MaxNICs, 0, 0)

// startXNode puts a StarT-X NIU in the node as a second PCIe endpoint on a
// link of its own (the node's PCIe spec, and its down link when PCIeDown
// is set), behind the same root complex and IOMMU domain as the NIC, so
// that memory registered for the NIC is the NIU's pinned RDMA memory too.
func (n *Node) startXNode() error {
	s := n.c.Spec
	if s.StartX == nil {
		return nil
	}
	p := fmt.Sprintf("node%d.", n.ID)
	ns := *s.StartX
	ns.ID, ns.Node, ns.BAR = StartXID, n.ID, StartXBARBase
	var err error
	if n.NIU, err = startx.New(n.Fabric, p+"startx", ns); err != nil {
		return err
	}
	if n.NIUUp, err = pcie.NewDir(n.Fabric, p+"pcie1.up", s.PCIe, n.NIU.Unit(), n.IOMMU.Unit()); err != nil {
		return err
	}
	var down, in *sim.Chan[pcie.Packet]
	if s.PCIeDown {
		if n.NIUDown, err = pcie.NewDir(n.Fabric, p+"pcie1.down", s.PCIe, n.IOMMU.Unit(), n.NIU.Unit()); err != nil {
			return err
		}
		pcie.Pair(n.NIUUp, n.NIUDown)
		down, in = n.NIUDown.In, n.NIUDown.Out
	} else {
		down = pcie.NewClassChan(n.IOMMU.Unit(), n.NIU.Unit(), p+"pcie1.down", [3]int{8, 8, 8})
		in = down
	}
	n.NIU.In, n.NIU.Out = in, n.NIUUp.In
	port := n.IOMMU.AddPort(n.NIUUp.Out, down)
	n.IOMMU.SetBAR(port, StartXBARBase, startx.BARSize)
	return n.Driver.Attach(StartXID, nicDomain)
}

// startXNetwork joins the NIUs: two nodes by a line each way, more
// through one crossbar switch (startx.Switch) with a line each way to
// every node. The Arctic fabric's routers are not modelled: two nodes is
// the cluster of every figure of seed 001; the switch is the Myrinet
// switch of seed 000's clusters.
func (c *Cluster) startXNetwork() error {
	s := c.Spec
	if s.StartX == nil {
		return nil
	}
	line := s.StartXLine
	if line == (startx.LineSpec{}) {
		line = startx.DefaultLineSpec()
	}
	if s.Nodes > 2 {
		nius := make([]*startx.NIU, len(c.Nodes))
		for i, n := range c.Nodes {
			nius[i] = n.NIU
		}
		sw, err := startx.NewSwitch(c.Fabric, "startx.switch", line, nius)
		if err != nil {
			return err
		}
		c.StartXSwitch = sw
		c.StartXLines = sw.Lines
		return nil
	}
	for i := 0; i < 2; i++ {
		a, b := c.Nodes[i], c.Nodes[1-i]
		l, err := startx.NewLine(a.Fabric, fmt.Sprintf("arctic.line%d%d", i, 1-i), line, a.NIU, b.NIU)
		if err != nil {
			return err
		}
		c.StartXLines = append(c.StartXLines, l)
	}
	return nil
}
