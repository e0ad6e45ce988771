package machine

import (
	"fmt"

	"github.com/aaemu/aaemu/iommu/pte"
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
	// The smallest IOMMU page whose walks keep up (BulkHostFits); regions
	// on smaller pages go TLP by TLP.
	minPage uint64
}

// allowed asks the IOMMU whether n bytes at addr may go by the bulk path
// (each TLP a plain translated access); a refusal is counted and its
// first reason kept (Node.BulkRefusal), and the NIC goes TLP by TLP.
func (b bulkPath) allowed(addr uint64, n int, write bool) bool {
	nd := b.n
	err := nd.IOMMU.BulkCheck(nd.NICs[b.r].Spec().ID, addr, n, write, b.minPage)
	if err == nil {
		return true
	}
	if nd.stBulkRefused == nil {
		nd.stBulkRefused = nd.Eng.Stats().Counter(fmt.Sprintf("node%d.bulk_refused", nd.ID), "work requests",
			"bulk DMA transfers refused by the IOMMU (logged, faulted or small pages: TLP by TLP)")
	}
	nd.stBulkRefused.Inc()
	if nd.bulkRefusal == "" {
		nd.bulkRefusal = fmt.Sprintf("nic%d: %v", b.r, err)
	}
	return false
}

// run is a piece of a bulk transfer contiguous in physical memory.
type run struct {
	pa       uint64
	off, len int
	tlps     uint64
}

// translate passes each TLP of a bulk transfer (its address and length
// from seg) through the IOMMU as the port would have taken it and returns
// the transfer as runs contiguous in physical memory.
func (b bulkPath) translate(addr uint64, n int, write bool, seg func(a uint64, rest int) int) []run {
	io, id := b.n.IOMMU, b.n.NICs[b.r].Spec().ID
	var runs []run
	for off := 0; off < n; {
		a := addr + uint64(off)
		c := seg(a, n-off)
		pa := io.BulkAccess(id, a, write)
		if k := len(runs) - 1; k >= 0 && runs[k].pa+uint64(runs[k].len) == pa {
			runs[k].len += c
			runs[k].tlps++
		} else {
			runs = append(runs, run{pa: pa, off: off, len: c, tlps: 1})
		}
		off += c
	}
	return runs
}

// Read reads b at addr for the NIC: its MRd TLPs up the link, their
// completions down, the reads at the root complex (translated there when
// the IOMMU is on the DMA path) and memory.
func (b bulkPath) Read(addr uint64, buf []byte) bool {
	n := b.n
	x := n.NICs[b.r]
	sz, mem := x.Spec().Sizes, n.c.Spec.Memory.Sizes
	if !b.allowed(addr, len(buf), false) {
		return false
	}
	up, down := n.Ups[b.r], n.Downs[b.r]
	var reqs, upWire, cpls, cplPay, cplWire uint64
	seg := func(a uint64, rest int) int {
		c := min(sz.MRRS-int(a%uint64(sz.MRRS)), rest)
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
		return c
	}
	for _, r := range b.translate(addr, len(buf), false, seg) {
		n.MC.BulkRead(r.pa, buf[r.off:r.off+r.len], r.tlps)
	}
	up.CountBulk(reqs, 0, upWire)
	if down != nil {
		down.CountBulk(cpls, cplPay, cplWire)
	}
	return true
}

// Write writes data at addr for the NIC: its MWr TLPs up the link, the
// writes at the root complex (translated there when the IOMMU is on the
// DMA path) and memory.
func (b bulkPath) Write(addr uint64, data []byte) bool {
	n := b.n
	x := n.NICs[b.r]
	sz := x.Spec().Sizes
	if !b.allowed(addr, len(data), true) {
		return false
	}
	up := n.Ups[b.r]
	var k, pay, wire uint64
	seg := func(a uint64, rest int) int {
		c := min(sz.MPS-int(a%uint64(sz.MPS)), rest)
		dw, length, _, _ := tlp.ByteEnables(a, c)
		t := tlp.TLP{Kind: tlp.MWr, Addr64: dw >= 1<<32, Length: length}
		k++
		pay += uint64(t.PayloadBytes())
		wire += uint64(up.Spec().WireBytes(&t))
		return c
	}
	for _, r := range b.translate(addr, len(data), true, seg) {
		n.MC.BulkWrite(r.pa, data[r.off:r.off+r.len], r.tlps)
	}
	up.CountBulk(k, pay, wire)
	return true
}

// BulkHostFits says whether the host side of a node of spec s keeps up
// with every NIC streaming at its wire's rate both ways at once, so that
// a bulk path, which takes no time, moves bytes no sooner than the wire
// needs or brings them — from the rates the blocks' specs give: a
// path-MTU packet's time on the wire against its TLPs' time on the PCIe
// link (writes in and reads out share the upstream direction), the root
// complex's one TLP per fabric edge for every NIC's TLPs, the memory
// controller's bandwidth for every NIC's reads and writes, and the
// IOMMU's translation rate (BulkMinPage). It also needs no StarT-X NIUs on
// the node (their traffic would share the root complex). The error says
// which condition fails.
func BulkHostFits(s Spec) error {
	_, err := BulkMinPage(s)
	return err
}

// BulkMinPage is BulkHostFits with, when the IOMMU is on the DMA path, the
// smallest page (4 KB, 2 MB or 1 GB) whose translations keep up: the bulk
// path refuses regions on smaller pages (iommu.BulkCheck). The IOTLB keeps
// 4 KB entries, so a stream walks the page tables once every 4 KB of each
// direction, a walk of a page at level L costing ProcessPS + (5 − L) ×
// MemAccessPS. Per packet time on the wire, every NIC's TLPs of a packet
// both ways must be:
//   - one TLP at a time (Spec.Slots 0): processed and their walks done;
//   - pipelined: taken one per edge (the root complex's condition), their
//     walks done by Walkers walkers, and in flight in at most Slots at
//     once by Little's law, each TLP held at most one walk (its own or the
//     one ahead of it in its port).
func BulkMinPage(s Spec) (uint64, error) {
	if s.StartX != nil {
		return 0, fmt.Errorf("StarT-X NIUs share the root complex")
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
		return 0, fmt.Errorf("a packet's TLPs take the PCIe link %d ps, the wire %d ps", linkPS, wirePS)
	case rcPS >= wirePS:
		return 0, fmt.Errorf("%d NICs' TLPs of a packet take the root complex %d ps, the wire %d ps", rails, rcPS, wirePS)
	case memPS >= wirePS:
		return 0, fmt.Errorf("%d NICs' reads and writes of a packet take memory %d ps, the wire %d ps", rails, memPS, wirePS)
	}
	io := s.IOMMU
	if io.Bypass {
		return 0, nil
	}
	// Walks per packet time: each direction's stream of every NIC walks
	// once per 4 KB it moves.
	walks := 2 * rails * uint64(max(mtu, 4096)) / 4096
	var why string
	for level := 1; level <= 3; level++ {
		walkPS := uint64(io.ProcessPS) + uint64(pte.Levels-level+1)*uint64(io.MemAccessPS)
		page := pte.PageSize(level)
		if io.Slots == 0 {
			t := rails*tlps*uint64(io.ProcessPS) + walks*(walkPS-uint64(io.ProcessPS))
			if t < wirePS {
				return page, nil
			}
			why = fmt.Sprintf("the IOMMU, one TLP at a time, takes %d NICs' TLPs of a packet %d ps even on %s pages, the wire %d ps", rails, t, pageName(page), wirePS)
			continue
		}
		walkers := walks * walkPS / uint64(io.Walkers)
		inFlight := rails * tlps * walkPS // slot·ps per packet time
		if walkers < wirePS && inFlight <= uint64(io.Slots)*wirePS {
			return page, nil
		}
		why = fmt.Sprintf("the IOMMU's %d walkers take %d NICs' walks of a packet %d ps and their TLPs need %.1f of its %d slots, even on %s pages (the wire: %d ps)",
			io.Walkers, rails, walkers, float64(inFlight)/float64(wirePS), io.Slots, pageName(page), wirePS)
	}
	return 0, fmt.Errorf("%s", why)
}

// pageName is a page size as people say it: 4 KB, 2 MB, 1 GB.
func pageName(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%d GB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%d MB", b>>20)
	}
	return fmt.Sprintf("%d KB", b>>10)
}

// EnableBulk gives every NIC of every node its bulk DMA path, or says why
// the machine cannot have one (BulkHostFits). NICs use it only for work
// requests marked bulk.
func (c *Cluster) EnableBulk() error {
	minPage, err := BulkMinPage(c.Spec)
	if err != nil {
		return fmt.Errorf("bulk DMA path: %w", err)
	}
	for _, n := range c.Nodes {
		for r, x := range n.NICs {
			x.Bulk = bulkPath{n: n, r: r, minPage: minPage}
		}
	}
	return nil
}

// BulkRefusal is the reason of the node's first bulk transfer the IOMMU
// refused ("" if none): its TLPs, and those of every refused transfer,
// went one by one.
func (n *Node) BulkRefusal() string { return n.bulkRefusal }

var _ nic.HostBulk = bulkPath{}
