package iommu

import (
	"fmt"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// A device's bulk DMA path (nic.HostBulk, machine/bulk.go) moves a work
// request's bytes by one copy instead of TLP by TLP. Through the IOMMU it
// may do so only where every one of those TLPs would have been a plain
// translated access: BulkCheck says so without changing anything, and
// BulkAccess then translates each TLP's address as decide does, with the
// same context-cache, IOTLB and walk counters.

// BulkCheck reports why a device's n bytes at iova (a write, or a read)
// cannot go by the bulk path, or nil: each TLP of them would be translated
// and performed with nothing logged, faulted or held — the device has a
// context, every 4 KB page is mapped with the permission and without
// Active Access bits that log the access, no page is a flushing page or
// the interrupt window — on pages of at least minPage bytes (the smallest
// page whose walks the IOMMU keeps up with, machine.BulkHostFits). It
// changes nothing: no cache entry is filled or touched, nothing counted,
// so a refusal leaves the IOMMU as the per-TLP path will find it.
func (m *IOMMU) BulkCheck(sid tlp.ID, iova uint64, n int, write bool, minPage uint64) error {
	if m.spec.Bypass || n <= 0 {
		return nil
	}
	var c ctxEntry
	switch {
	case m.lastCtxValid && m.lastSID == sid:
		c = m.lastCtx
	default:
		var ok bool
		if c, ok = m.ctxCache.Peek(sid); !ok {
			var tr translation
			c = m.contextFromTables(sid, &tr)
		}
	}
	if !c.present {
		return fmt.Errorf("device %v has no context (fault %#x)", sid, c.fault)
	}
	for page := iova &^ 0xfff; page < iova+uint64(n); page += 4096 {
		if InterruptWindow(page) {
			return fmt.Errorf("%#x is in the interrupt window", page)
		}
		if !write && m.flushPage(page) != nil {
			return fmt.Errorf("page %#x is a flushing page", page)
		}
		if c.tt == pte.TTPassThrough {
			continue
		}
		if page >= 1<<48 {
			return fmt.Errorf("page %#x is beyond the address width (fault)", page)
		}
		leaf, r, w, level, fault := m.peekTranslation(&c, page)
		act := decideRead(leaf, r)
		if write {
			act = decideWrite(leaf, w)
		}
		switch {
		case fault != 0:
			return fmt.Errorf("page %#x: fault %#x", page, fault)
		case !act.perform:
			return fmt.Errorf("page %#x: not %s (fault)", page, map[bool]string{false: "readable", true: "writable"}[write])
		case act.log != logNone:
			return fmt.Errorf("page %#x logs its accesses (Active Access bits)", page)
		case pte.PageSize(level) < minPage:
			return fmt.Errorf("page %#x is a %d KB page: the IOMMU's walks would not keep up (pages of %d KB and more do)",
				page, pte.PageSize(level)>>10, minPage>>10)
		}
	}
	return nil
}

// peekTranslation is the leaf, effective permissions and level of page
// in context c, from the IOTLB or the tables, as translate would find
// them, changing nothing.
func (m *IOMMU) peekTranslation(c *ctxEntry, page uint64) (leaf uint64, r, w bool, level int, fault uint8) {
	if e, ok := m.iotlb.Peek(makeTLBKey(c.did, page>>12)); ok {
		return e.leaf, e.r, e.w, e.level, 0
	}
	table := c.top
	r, w = true, true
	for level := pte.Levels; level >= 1; level-- {
		e := m.mem.Load64(table + pte.Index(page, level)*8)
		isLeaf := level == 1 || (level <= 3 && e&pte.PS != 0 && pte.Present(e))
		if (level == 1 && !pte.LeafPresent(e)) || (level > 1 && !pte.Present(e)) {
			return 0, false, false, level, FRRead
		}
		if pte.Reserved(e, level, isLeaf) != 0 {
			return 0, false, false, level, FRPTEReserved
		}
		r = r && e&pte.R != 0
		w = w && e&pte.W != 0
		if isLeaf {
			if level > 1 {
				e &^= pte.PS
			}
			return e, r, w, level, 0
		}
		table = e & pte.AddrMask
	}
	return 0, false, false, 1, FRRead
}

// BulkAccess is one TLP of a bulk transfer BulkCheck allowed, a write or
// a read of addr from device sid: it is counted as the port would have
// taken it, translated as decide translates it (context, IOTLB, walk and
// their counters), and its physical address returned. A bypassed IOMMU
// passes addr as it is.
func (m *IOMMU) BulkAccess(sid tlp.ID, addr uint64, write bool) uint64 {
	m.stTLPs.Inc()
	if write {
		m.stWrites.Inc()
	} else {
		m.stReads.Inc()
	}
	if m.spec.Bypass {
		return addr
	}
	var tr translation
	m.translate(&tr, sid, addr, write)
	if tr.fault != 0 {
		// BulkCheck allowed it: the tables changed without an
		// invalidation in between, which the driver never does.
		panic(fmt.Sprintf("iommu: bulk access at %#x from %v faulted (%#x) after its check", addr, sid, tr.fault))
	}
	return tr.pa
}
