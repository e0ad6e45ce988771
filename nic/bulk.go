package nic

// HostBulk is a NIC's bulk DMA path to host memory, given by the machine
// that places the NIC. A work request marked bulk (WQE.Bulk) has its
// payload read, and the data of its frames written at the other end, by
// one copy each instead of TLP by TLP: the path counts the TLPs it stands
// for at the PCIe link, the root complex and the memory controller, and
// takes no time of its own. It is exact only where the host side is not
// the bottleneck — the data is in memory before the wire would want it
// and is written before anything that follows it on the same QP — which
// the machine checks when it gives a NIC the path (machine.Node) and the
// layer that marks work requests ensures by keeping a stream's first and
// last work requests per TLP (msg/lcp, Config.Bulk).
type HostBulk interface {
	// Read fills b from host memory at addr; false: the path cannot serve
	// it and the NIC reads TLP by TLP.
	Read(addr uint64, b []byte) bool
	// Write puts data into host memory at addr; false: the NIC writes TLP
	// by TLP.
	Write(addr uint64, data []byte) bool
}

// segments is the number of pieces n bytes at addr split into at most max
// bytes, none crossing a max-aligned boundary (pcie.Sizes' segmentation),
// counted without building them.
func segments(addr uint64, n, max int) uint64 {
	if n <= 0 {
		return 0
	}
	m := uint64(max)
	first, last := addr/m, (addr+uint64(n)-1)/m
	return last - first + 1
}

// bulkRead reads b at addr by the bulk path, counting the MRd TLPs the
// per-TLP path sends; false: no path, or it refused.
func (n *NIC) bulkRead(addr uint64, b []byte) bool {
	if n.Bulk == nil || len(b) == 0 || !n.Bulk.Read(addr, b) {
		return false
	}
	n.stTLPs.Add(segments(addr, len(b), n.spec.Sizes.MRRS))
	n.countBulk(len(b))
	return true
}

// bulkWrite writes data at addr by the bulk path, counting the MWr TLPs
// the per-TLP path sends.
func (n *NIC) bulkWrite(addr uint64, data []byte) bool {
	if n.Bulk == nil || len(data) == 0 || !n.Bulk.Write(addr, data) {
		return false
	}
	n.stTLPs.Add(segments(addr, len(data), n.spec.Sizes.MPS))
	n.countBulk(len(data))
	return true
}

// countBulk counts bytes moved by the bulk path; the counter is declared on
// first use, so runs that do not use the path keep their statistics.
func (n *NIC) countBulk(b int) {
	if n.stBulk == nil {
		n.stBulk = n.u.Engine().Stats().Counter(n.name+".bulk_bytes", "bytes", "bytes moved by the bulk DMA path (one copy; their TLPs counted in tlps)")
	}
	n.stBulk.Add(uint64(b))
}
