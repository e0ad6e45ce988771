package machine

import (
	"fmt"

	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// bulkPath is NIC r's bulk DMA path (nic.HostBulk): one copy between the
// node's memory and the NIC, with the TLPs it stands for counted at the
// NIC's PCIe link (both directions), the root complex and the memory
// controller as the per-TLP path counts them. It takes no simulated time,
// so a node gives it only where the host side cannot be the bottleneck of
// a stream (BulkHostFits); the layer that marks work requests bulk keeps
// the first and last of a stream per TLP, so that the pipeline's start
// and end, and everything behind them on the QP, run on the blocks.
type bulkPath struct {
	n *Node
	r int
}

// Read reads b at addr for the NIC: its MRd TLPs up the link, their
// completions down, the reads at the root complex and memory.
func (b bulkPath) Read(addr uint64, buf []byte) bool {
	n := b.n
	x := n.NICs[b.r]
	sz, mem := x.Spec().Sizes, n.c.Spec.Memory.Sizes
	up, down := n.Ups[b.r], n.Downs[b.r]
	var reqs, upWire, cpls, cplPay, cplWire uint64
	for off := 0; off < len(buf); {
		a := addr + uint64(off)
		c := min(sz.MRRS-int(a%uint64(sz.MRRS)), len(buf)-off)
		req := tlp.NewMemRead(x.Spec().ID, 0, a, c)
		reqs++
		upWire += uint64(up.Spec().WireBytes(&req))
		if down != nil {
			mem.CompletionPayloads(&req, func(p int) {
				cpl := tlp.TLP{Kind: tlp.CplD, Length: uint16(p / 4)}
				cpls++
				cplPay += uint64(p)
				cplWire += uint64(down.Spec().WireBytes(&cpl))
			})
		}
		off += c
	}
	n.MC.BulkRead(addr, buf, reqs)
	up.CountBulk(reqs, 0, upWire)
	if down != nil {
		down.CountBulk(cpls, cplPay, cplWire)
	}
	n.IOMMU.CountBulk(reqs, 0)
	return true
}

// Write writes data at addr for the NIC: its MWr TLPs up the link, the
// writes at the root complex and memory.
func (b bulkPath) Write(addr uint64, data []byte) bool {
	n := b.n
	x := n.NICs[b.r]
	sz := x.Spec().Sizes
	up := n.Ups[b.r]
	var k, pay, wire uint64
	for off := 0; off < len(data); {
		a := addr + uint64(off)
		c := min(sz.MPS-int(a%uint64(sz.MPS)), len(data)-off)
		dw, length, _, _ := tlp.ByteEnables(a, c)
		t := tlp.TLP{Kind: tlp.MWr, Addr64: dw >= 1<<32, Length: length}
		k++
		pay += uint64(t.PayloadBytes())
		wire += uint64(up.Spec().WireBytes(&t))
		off += c
	}
	n.MC.BulkWrite(addr, data, k)
	up.CountBulk(k, pay, wire)
	n.IOMMU.CountBulk(0, k)
	return true
}

// BulkHostFits says whether the host side of a node of spec s keeps up
// with every NIC streaming at its wire's rate both ways at once, so that
// a bulk path, which takes no time, moves bytes no sooner than the wire
// needs or brings them — from the rates the blocks' specs give: a
// path-MTU packet's time on the wire against its TLPs' time on the PCIe
// link (writes in and reads out share the upstream direction), the root
// complex's one TLP per fabric edge for every NIC's TLPs, and the memory
// controller's bandwidth for every NIC's reads and writes. It also needs
// the IOMMU off the DMA path (translations, logs and faults are per TLP)
// and no StarT-X NIUs on the node (their traffic would share the root
// complex). The error says which condition fails.
func BulkHostFits(s Spec) error {
	if !s.IOMMU.Bypass {
		return fmt.Errorf("the IOMMU is on the DMA path")
	}
	if s.StartX != nil {
		return fmt.Errorf("StarT-X NIUs share the root complex")
	}
	ns := s.NIC
	if ns.PMTU == 0 {
		ns = nic.DefaultSpec()
	}
	rails := uint64(s.Rails())
	mtu := ns.PMTU
	// A middle packet of a WRITE: Ethernet, IPv4, UDP, BTH, payload, ICRC.
	f := nic.Frame{}
	f.Packet.Opcode, f.Packet.Payload = roce.WriteMiddle, make([]byte, mtu)
	wirePS := uint64(roce.WireBytes(f.Len())) * 8 * 1_000_000 / s.Wire.RateMbps
	// Its TLPs on the upstream link: the MWr of the packet received and
	// the MRd of the packet sent.
	var upBytes uint64
	tlps := uint64(0)
	for off := 0; off < mtu; off += ns.Sizes.MPS {
		t := tlp.TLP{Kind: tlp.MWr, Addr64: true, Length: uint16(ns.Sizes.MPS / 4)}
		upBytes += uint64(s.PCIe.WireBytes(&t))
		tlps++
	}
	for off := 0; off < mtu; off += ns.Sizes.MRRS {
		t := tlp.TLP{Kind: tlp.MRd, Addr64: true, Length: uint16(ns.Sizes.MRRS / 4)}
		upBytes += uint64(s.PCIe.WireBytes(&t))
		tlps++
	}
	linkPS := uint64(float64(upBytes) / s.PCIe.BytesPerSecond() * 1e12)
	fabric := uint64(sim.Tick(1_000_000) / sim.Tick(max(s.FabricMHz, 1)))
	if s.FabricMHz == 0 {
		fabric = 1000
	}
	rcPS := rails * tlps * fabric
	var memPS uint64
	if s.Memory.BytesPerNS > 0 {
		memPS = 2 * rails * uint64(mtu) * 1000 / uint64(s.Memory.BytesPerNS)
	}
	switch {
	case linkPS >= wirePS:
		return fmt.Errorf("a packet's TLPs take the PCIe link %d ps, the wire %d ps", linkPS, wirePS)
	case rcPS >= wirePS:
		return fmt.Errorf("%d NICs' TLPs of a packet take the root complex %d ps, the wire %d ps", rails, rcPS, wirePS)
	case memPS >= wirePS:
		return fmt.Errorf("%d NICs' reads and writes of a packet take memory %d ps, the wire %d ps", rails, memPS, wirePS)
	}
	return nil
}

// EnableBulk gives every NIC of every node its bulk DMA path, or says why
// the machine cannot have one (BulkHostFits). NICs use it only for work
// requests marked bulk.
func (c *Cluster) EnableBulk() error {
	if err := BulkHostFits(c.Spec); err != nil {
		return fmt.Errorf("bulk DMA path: %w", err)
	}
	for _, n := range c.Nodes {
		for r, x := range n.NICs {
			x.Bulk = bulkPath{n: n, r: r}
		}
	}
	return nil
}

var _ nic.HostBulk = bulkPath{}
