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

// startXNetwork joins the NIUs: two nodes by an Arctic line each way (the
// cluster of every figure of seed 001), unless StartXRouter asks for
// routers; more through Arctic routers (startXSwitched).
func (c *Cluster) startXNetwork() error {
	s := c.Spec
	if s.StartX == nil {
		return nil
	}
	line := s.StartXLine
	if line == (startx.LineSpec{}) {
		line = startx.DefaultLineSpec()
	}
	if s.Nodes > 2 || s.StartXRouter != nil {
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
