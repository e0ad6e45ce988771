package iommu

import (
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// VT-d fault reasons (legacy DMA remapping) and aaemu's Active Access
// reasons, which use the implementation-specific range above 0x7f.
const (
	FRRootNotPresent   uint8 = 0x1
	FRCtxNotPresent    uint8 = 0x2
	FRCtxInvalid       uint8 = 0x3
	FRAddrBeyondAW     uint8 = 0x4
	FRWrite            uint8 = 0x5 // write without W (also not present)
	FRRead             uint8 = 0x6 // read without R (also not present)
	FRRootReserved     uint8 = 0xA
	FRCtxReserved      uint8 = 0xB
	FRPTEReserved      uint8 = 0xC
	FRBlockedByTT      uint8 = 0xD
	FRAALoggedWrite    uint8 = 0x80 // AA, E=0: a permitted write logged to the fault log
	FRAALoggedRead     uint8 = 0x81 // AA, E=0: a permitted read logged to the fault log
	FRAANoAccessLog    uint8 = 0x82 // AA, E=1: the page's IUID has no access log
	FRAATooLarge       uint8 = 0x83 // AA: a record larger than MaxActiveBytes or than half its log
	FRAATagBufferError uint8 = 0x84 // AA: a completion with no tag-buffer entry
)

// ctxEntry is what the context cache keeps per source ID.
type ctxEntry struct {
	present bool
	fault   uint8
	did     uint16
	top     uint64
	tt      uint64
	fpd     bool
}

// tlbKey tags an IOTLB entry: domain (bits 63:48) and 4 KB page number
// (bits 35:0 of a 48-bit IOVA). Large pages are kept fractured into 4 KB
// entries, as several IOMMUs do; page-selective invalidation removes every
// fracture of a range. One integer rather than a struct: the cache compares
// tags on every lookup.
type tlbKey uint64

func makeTLBKey(did uint16, vpn uint64) tlbKey { return tlbKey(uint64(did)<<48 | vpn) }
func (k tlbKey) did() uint16                   { return uint16(k >> 48) }
func (k tlbKey) vpn() uint64                   { return uint64(k) & (1<<48 - 1) }

type tlbEntry struct {
	leaf  uint64 // the leaf entry (permissions, AA bits, IUID)
	frame uint64 // physical address of the 4 KB page
	r, w  bool   // effective permissions over all levels
	level int
}

// translation is the outcome of translating one request.
type translation struct {
	fault    uint8 // 0: translated
	fpd      bool  // fault processing disabled for this device
	pa       uint64
	leaf     uint64
	r, w     bool
	level    int
	did      uint16
	accesses int  // memory reads it cost
	ctxHit   bool // context cache hit
	tlbHit   bool
}

// lookupContext returns sid's context, from the cache or the tables. The
// last context used sits in a register in front of the cache: a stream of
// TLPs from one device does not search the cache each time.
func (m *IOMMU) lookupContext(sid tlp.ID, tr *translation) *ctxEntry {
	if m.lastCtxValid && m.lastSID == sid {
		tr.ctxHit = true
		m.stCtxHits.Inc()
		return &m.lastCtx
	}
	if c, ok := m.ctxCache.Lookup(sid); ok {
		m.lastSID, m.lastCtx, m.lastCtxValid = sid, c, true
		tr.ctxHit = true
		m.stCtxHits.Inc()
		return &m.lastCtx
	}
	m.stCtxMisses.Inc()
	c := m.contextFromTables(sid, tr)
	// Only present contexts are cached (caching mode off).
	if c.present {
		m.ctxCache.Insert(sid, c)
		m.lastSID, m.lastCtx, m.lastCtxValid = sid, c, true
		return &m.lastCtx
	}
	return &c
}

// contextFromTables reads sid's root and context entries from memory,
// counting the accesses in tr.
func (m *IOMMU) contextFromTables(sid tlp.ID, tr *translation) ctxEntry {
	c := ctxEntry{}
	re := m.mem.Load64(m.spec.RootTable + uint64(sid.Bus())*16)
	tr.accesses++
	switch {
	case re&pte.RootP == 0:
		c.fault = FRRootNotPresent
	case re&pte.RootLoReserved != 0:
		c.fault = FRRootReserved
	default:
		ca := re&pte.AddrMask + uint64(sid&0xff)*16
		lo, hi := m.mem.Load64(ca), m.mem.Load64(ca+8)
		tr.accesses++
		c.fpd = lo&pte.CtxFPD != 0
		c.tt = lo & pte.CtxTTMask >> pte.CtxTTShift
		switch {
		case lo&pte.CtxP == 0:
			c.fault = FRCtxNotPresent
		case lo&pte.CtxLoReserved != 0 || hi&pte.CtxHiReserved != 0:
			c.fault = FRCtxReserved
		case hi&pte.CtxAWMask != 2 || (c.tt != pte.TTUntranslated && c.tt != pte.TTPassThrough):
			c.fault = FRCtxInvalid
		default:
			c.present, c.did, c.top = true, pte.DID(hi), lo&pte.AddrMask
		}
	}
	return c
}

// TranslateTL translates one access at the transaction level: zero time, no
// ports, the same context cache, IOTLB and page walk as the cycle-level
// block. It returns the physical address, whether the IOTLB hit, how many
// page-table levels were read, and the fault reason (0 if none).
func (m *IOMMU) TranslateTL(sid tlp.ID, iova uint64, write bool) (pa uint64, hit bool, walked int, fault uint8) {
	var tr translation
	// Fast path: the last device again (the context register), one IOTLB
	// lookup, then the walk on a miss.
	if c := &m.lastCtx; m.kinds == nil && m.lastCtxValid && m.lastSID == sid && c.tt == pte.TTUntranslated && iova < 1<<48 {
		m.stCtxHits.Inc()
		key := makeTLBKey(c.did, iova>>12)
		if e := m.iotlb.LookupIn(iova>>12, key); e != nil { // set index = low VPN bits
			m.stTLBHits.Inc()
			tr.pa, tr.tlbHit, tr.r, tr.w, tr.level = e.frame|iova&0xfff, true, e.r, e.w, e.level
		} else {
			tr.did, tr.fpd, tr.ctxHit = c.did, c.fpd, true
			m.walk(&tr, c, key, iova, write)
		}
	} else {
		m.translate(&tr, sid, iova, write)
	}
	if tr.fault == 0 && !tr.tlbHit && tr.level > 0 {
		walked = 4 - tr.level + 1
	}
	fault = tr.fault
	switch {
	case fault == 0 && write && !tr.w:
		fault = FRWrite
	case fault == 0 && !write && !tr.r:
		fault = FRRead
	}
	return tr.pa, tr.tlbHit, walked, fault
}

// translate maps a device's IOVA to a physical address: context, IOTLB,
// then a page walk costing one memory access per level. Effective R/W is
// the AND over all levels; a not-present entry denies both.
func (m *IOMMU) translate(tr *translation, sid tlp.ID, iova uint64, write bool) {
	c := m.lookupContext(sid, tr)
	tr.fpd = c.fpd
	if !c.present {
		tr.fault = c.fault
		return
	}
	tr.did = c.did
	if c.tt == pte.TTPassThrough {
		tr.pa, tr.r, tr.w, tr.level = iova, true, true, 1
		return
	}
	if iova >= 1<<48 {
		tr.fault = FRAddrBeyondAW
		return
	}
	if k := m.kinds; k != nil {
		page := makeTLBKey(c.did, iova>>12) // its label
		if k.bypasses(page) {
			m.outside(tr, c, iova, write)
			return
		}
		defer func() { k.count(page, tr.tlbHit) }()
	}
	key := makeTLBKey(c.did, iova>>12)
	if e, ok := m.iotlb.Lookup(key); ok {
		tr.tlbHit = true
		m.stTLBHits.Inc()
		tr.pa, tr.leaf, tr.r, tr.w, tr.level = e.frame|iova&0xfff, e.leaf, e.r, e.w, e.level
		return
	}
	m.walk(tr, c, key, iova, write)
}

// walk is an IOTLB miss: the 4-level page walk, one memory access per
// level, and the IOTLB fill.
func (m *IOMMU) walk(tr *translation, c *ctxEntry, key tlbKey, iova uint64, write bool) {
	m.stTLBMisses.Inc()
	table := c.top
	r, w := true, true
	for level := pte.Levels; level >= 1; level-- {
		e := m.mem.Load64(table + pte.Index(iova, level)*8)
		tr.accesses++
		m.stWalkReads.Inc()
		leaf := level == 1 || (level <= 3 && e&pte.PS != 0 && pte.Present(e))
		if (level == 1 && !pte.LeafPresent(e)) || (level > 1 && !pte.Present(e)) {
			tr.fault = FRRead
			if write {
				tr.fault = FRWrite
			}
			return
		}
		if pte.Reserved(e, level, leaf) != 0 {
			tr.fault = FRPTEReserved
			return
		}
		r = r && e&pte.R != 0
		w = w && e&pte.W != 0
		if leaf {
			size := pte.PageSize(level)
			frame := e&pte.AddrMask&^(size-1) | iova&(size-1)&^0xfff
			te := tlbEntry{leaf: e, frame: frame, r: r, w: w, level: level}
			if level > 1 {
				te.leaf &^= pte.PS // a large page carries no AA bits
			}
			m.iotlb.FillIn(key.vpn(), key, te) // it just missed
			tr.pa, tr.leaf, tr.r, tr.w, tr.level = frame|iova&0xfff, te.leaf, r, w, level
			return
		}
		table = e & pte.AddrMask
	}
}

// InvalidateContext drops sid's context-cache entry (device-selective).
func (m *IOMMU) InvalidateContext(sid tlp.ID) {
	m.ctxCache.Invalidate(sid)
	m.lastCtxValid = false
}

// InvalidateAllContexts empties the context cache (global).
func (m *IOMMU) InvalidateAllContexts() {
	m.ctxCache.InvalidateAll()
	m.lastCtxValid = false
}

// InvalidateDomain drops every IOTLB entry of domain did (domain-selective).
func (m *IOMMU) InvalidateDomain(did uint16) {
	m.iotlb.InvalidateIf(func(k tlbKey, _ tlbEntry) bool { return k.did() == did })
}

// InvalidateRange drops the IOTLB entries of [iova, iova+size) in domain
// did (page-selective).
func (m *IOMMU) InvalidateRange(did uint16, iova, size uint64) {
	lo, hi := iova>>12, (iova+size+0xfff)>>12
	if hi-lo <= 64 {
		for vpn := lo; vpn < hi; vpn++ {
			m.iotlb.Invalidate(makeTLBKey(did, vpn))
		}
		return
	}
	m.iotlb.InvalidateIf(func(k tlbKey, _ tlbEntry) bool { return k.did() == did && k.vpn() >= lo && k.vpn() < hi })
}

// InvalidateIOTLB empties the IOTLB (global).
func (m *IOMMU) InvalidateIOTLB() { m.iotlb.InvalidateAll() }
