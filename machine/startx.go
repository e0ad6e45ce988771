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

// startXNetwork joins the NIUs. With StartXCrossbar (a Myrinet switch,
// seed 000's clusters): two NIUs by a line each way, more through one
// crossbar switch (startx.Switch) with a line each way to every NIU.
// Otherwise the Arctic network of seed 001: two nodes by an Arctic line
// each way (the cluster of every figure of seed 001), unless StartXRouter
// asks for routers; more through Arctic routers (startXSwitched), one NIU
// a node.
func (c *Cluster) startXNetwork() error {
	s := c.Spec
	if s.StartX == nil {
		return nil
	}
	line := s.StartXLine
	if line == (startx.LineSpec{}) {
		line = startx.DefaultLineSpec()
	}
	if s.StartXCrossbar && s.Nodes*s.StartXPerNode() > 2 {
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
	if !s.StartXCrossbar && (s.Nodes > 2 || s.StartXRouter != nil) {
		return c.startXSwitched(line)
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

// startXSwitched builds the Arctic network of routers of k ports: one
// router when the nodes fit its ports (node i on port i); else a two-level
// fat tree, k/2 nodes on each leaf router's lower ports, its upper k/2
// ports one to each of k/2 spine routers, spine port l down to leaf l. A
// packet to another leaf goes up to spine (destination mod k/2) and down:
// up/down routing, which cannot deadlock, and one path per destination,
// which keeps a pair's packets in order. Every line is a hop of half the
// line's latency (a node's line to its router and back is the direct
// line's), in the sender's domain: the routers are the network's.
func (c *Cluster) startXSwitched(line startx.LineSpec) error {
	s := c.Spec
	rs := startx.DefaultRouterSpec()
	if s.StartXRouter != nil {
		rs = *s.StartXRouter
	}
	if err := rs.Validate(); err != nil {
		return err
	}
	k, n := rs.Ports, s.Nodes
	hop := line
	hop.LatencyPS = line.LatencyPS / 2
	if n <= k {
		route := make([]int, n)
		for d := range route {
			route[d] = d
		}
		r, err := startx.NewRouter(c.Fabric, "arctic.router", rs, route)
		if err != nil {
			return err
		}
		c.StartXRouters = []*startx.Router{r}
		for _, nd := range c.Nodes {
			if err := c.startXAttach(nd, r, nd.ID, hop); err != nil {
				return err
			}
		}
		return nil
	}
	down, spines := k/2, k/2
	leaves := (n + down - 1) / down
	if leaves > k {
		return fmt.Errorf("startx: %d nodes: a fat tree of %d-port Arctic routers holds at most %d (machine.startx.router.ports)", n, k, k*k/2)
	}
	leaf := make([]*startx.Router, leaves)
	for l := range leaf {
		route := make([]int, n)
		for d := range route {
			if d/down == l {
				route[d] = d % down
			} else {
				route[d] = down + d%spines
			}
		}
		r, err := startx.NewRouter(c.Fabric, fmt.Sprintf("arctic.leaf%d", l), rs, route)
		if err != nil {
			return err
		}
		leaf[l] = r
	}
	spine := make([]*startx.Router, spines)
	for m := range spine {
		route := make([]int, n)
		for d := range route {
			route[d] = d / down
		}
		r, err := startx.NewRouter(c.Fabric, fmt.Sprintf("arctic.spine%d", m), rs, route)
		if err != nil {
			return err
		}
		spine[m] = r
	}
	c.StartXRouters = append(leaf, spine...)
	for _, nd := range c.Nodes {
		if err := c.startXAttach(nd, leaf[nd.ID/down], nd.ID%down, hop); err != nil {
			return err
		}
	}
	for l, lr := range leaf {
		for m, sr := range spine {
			up, err := startx.LineBetween(c.Fabric, fmt.Sprintf("arctic.leaf%d_spine%d", l, m), hop, lr, down+m, sr, l)
			if err != nil {
				return err
			}
			dn, err := startx.LineBetween(c.Fabric, fmt.Sprintf("arctic.spine%d_leaf%d", m, l), hop, sr, l, lr, down+m)
			if err != nil {
				return err
			}
			c.StartXLines = append(c.StartXLines, up, dn)
		}
	}
	return nil
}

// startXAttach joins node nd's NIU to port of router r, a line each way.
func (c *Cluster) startXAttach(nd *Node, r *startx.Router, port int, hop startx.LineSpec) error {
	up, err := startx.LineToRouter(nd.Fabric, fmt.Sprintf("arctic.up%d", nd.ID), hop, nd.NIU, r, port)
	if err != nil {
		return err
	}
	dn, err := startx.LineFromRouter(c.Fabric, fmt.Sprintf("arctic.down%d", nd.ID), hop, r, port, nd.NIU)
	if err != nil {
		return err
	}
	c.StartXLines = append(c.StartXLines, up, dn)
	return nil
}
