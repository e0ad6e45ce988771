package machine

import (
	"fmt"

	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// StartXBARBase is the StarT-X NIU's BAR (Spec.StartX), below the RDMA
// NIC's; a node's further NIUs (Spec.StartXPerNode) follow, a BAR each.
const StartXBARBase = 0xe000_0000

// StartXID is the NIU's requester ID: the bus after the RDMA NICs' (1 to
// MaxNICs); a node's further NIUs take the buses after it.
var StartXID = tlp.NewID(1+MaxNICs, 0, 0)

// MaxStartXPerNode bounds the NIUs of a node (seed 000's SMPs have three
// Myrinet NICs).
const MaxStartXPerNode = 4

// StartXPerNode is the NIUs of every node (Spec.StartXPerNode, at least 1).
func (s Spec) StartXPerNode() int { return max(s.StartXNICs, 1) }

// StartXAddr is the network address of NIU r of node n: the node itself
// with one NIU a node, else n × the NIUs a node + r (the switch's port).
func (s Spec) StartXAddr(n, r int) int { return n*s.StartXPerNode() + r }

// startXNode puts the node's StarT-X NIUs in it, each a PCIe endpoint on a
// link of its own (the node's PCIe spec, and its down link when PCIeDown
// is set), behind the same root complex and IOMMU domain as the NIC, so
// that memory registered for the NIC is the NIUs' pinned RDMA memory too.
func (n *Node) startXNode() error {
	s := n.c.Spec
	if s.StartX == nil {
		return nil
	}
	for r := 0; r < s.StartXPerNode(); r++ {
		p := fmt.Sprintf("node%d.", n.ID)
		name, link := p+"startx", p+"pcie1"
		if r > 0 {
			name, link = fmt.Sprintf("%sstartx%d", p, r), fmt.Sprintf("%spcie_startx%d", p, r)
		}
		id := tlp.NewID(uint8(1+MaxNICs+r), 0, 0)
		bar := uint64(StartXBARBase + r*startx.BARSize)
		ns := *s.StartX
		ns.ID, ns.Node, ns.BAR = id, s.StartXAddr(n.ID, r), bar
		niu, err := startx.New(n.Fabric, name, ns)
		if err != nil {
			return err
		}
		up, err := pcie.NewDir(n.Fabric, link+".up", s.PCIe, niu.Unit(), n.IOMMU.Unit())
		if err != nil {
			return err
		}
		var down, in *sim.Chan[pcie.Packet]
		var downDir *pcie.Dir
		if s.PCIeDown {
			if downDir, err = pcie.NewDir(n.Fabric, link+".down", s.PCIe, n.IOMMU.Unit(), niu.Unit()); err != nil {
				return err
			}
			pcie.Pair(up, downDir)
			down, in = downDir.In, downDir.Out
		} else {
			down = pcie.NewClassChan(n.IOMMU.Unit(), niu.Unit(), link+".down", [3]int{8, 8, 8})
			in = down
		}
		niu.In, niu.Out = in, up.In
		port := n.IOMMU.AddPort(up.Out, down)
		n.IOMMU.SetBAR(port, bar, startx.BARSize)
		if err := n.Driver.Attach(id, nicDomain); err != nil {
			return err
		}
		n.NIUs = append(n.NIUs, niu)
		if r == 0 {
			n.NIU, n.NIUUp, n.NIUDown = niu, up, downDir
		}
	}
	return nil
}

// startXNetwork joins the NIUs: two by a line each way, more through one
// crossbar switch (startx.Switch) with a line each way to every NIU. The Arctic fabric's routers are not modelled: two nodes is
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
	if s.Nodes*s.StartXPerNode() > 2 {
		var nius []*startx.NIU // by network address
		for _, n := range c.Nodes {
			nius = append(nius, n.NIUs...)
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
