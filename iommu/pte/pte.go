// Package pte is the bit layout of the VT-d remapping structures in legacy
// mode — root entries, context entries, second-level paging entries — and of
// the Active Access control bits aaemu adds to leaf entries. It is a leaf
// package: no model, no kernel, so the golden model can share it.
//
// # Where the AA bits live
//
// The paper puts WL, WLD, RL, RLD in bits 7–10 and the IUID in bits 52–61 of
// the leaf PTE, bits the VT-d hardware ignores. That holds for 4 KB leaves in
// legacy mode: bits 7–10 are ignored there. It does not hold for 2 MB and 1 GB
// leaves, where bit 7 is PS = 1, so aaemu defines AA bits on 4 KB leaves only
// (a large-page leaf carries none; the driver refuses to set them). Bits 8 and
// 9 would become accessed/dirty in scalable mode with second-level A/D, which
// aaemu does not model. E goes in bit 63, which every VT-d revision ignores.
// Linux's newest second-stage format treats bits 52–60 as ignored and leaves
// bit 61 unspecified; aaemu follows the paper and uses 52–61 for the IUID.
package pte

// Second-level paging entry bits.
const (
	R  uint64 = 1 << 0 // read allowed
	W  uint64 = 1 << 1 // write allowed
	PS uint64 = 1 << 7 // page size: a leaf at level 2 (2 MB) or 3 (1 GB)

	// Active Access bits (4 KB leaves only).
	WL  uint64 = 1 << 7  // log writes (metadata)
	WLD uint64 = 1 << 8  // log writes with their data
	RL  uint64 = 1 << 9  // log reads (metadata)
	RLD uint64 = 1 << 10 // log reads with the data returned
	E   uint64 = 1 << 63 // route records to the IUID's access log (else the fault log)

	IUIDShift        = 52
	IUIDMask  uint64 = 0x3ff << IUIDShift // 10 bits: 1024 IOMMU user domains

	// AddrMask selects the page frame or next-table address (HAW = 52).
	AddrMask uint64 = 0x000f_ffff_ffff_f000
	// SNP is bit 11; aaemu's IOMMU reports no snoop control, so it is reserved.
	SNP uint64 = 1 << 11
)

// Levels of a 4-level (48-bit, AW = 2) second-level table.
const Levels = 4

// Index returns the table index of iova at level (4 = top, 1 = leaf 4 KB).
func Index(iova uint64, level int) uint64 { return iova >> (12 + 9*uint(level-1)) & 0x1ff }

// PageSize of a leaf at level: 4 KB, 2 MB or 1 GB.
func PageSize(level int) uint64 { return 1 << (12 + 9*uint(level-1)) }

// Present reports whether a non-leaf or large-page entry is present: R or
// W set (VT-d has no present bit).
func Present(e uint64) bool { return e&(R|W) != 0 }

// LeafPresent reports whether a 4 KB leaf is present. VT-d would say R or W;
// Active Access needs pages that are present with R = W = 0 (the active put
// targets a page a device may not write), so aaemu counts any non-zero leaf
// as present: a mapped frame, an AA bit, E or an IUID. Drivers clear a leaf
// to zero to unmap it, so unmapped pages still fault as VT-d says.
func LeafPresent(e uint64) bool { return e != 0 }

// IUID extracts the IOMMU user domain ID of a leaf.
func IUID(e uint64) uint16 { return uint16(e & IUIDMask >> IUIDShift) }

// WithIUID sets the IUID field of a leaf.
func WithIUID(e uint64, iuid uint16) uint64 {
	return e&^IUIDMask | uint64(iuid&0x3ff)<<IUIDShift
}

// Reserved returns the bits of e that must be zero at level for a present
// entry: above the address width (51:52 are within HAW here, so only the
// architectural reserved bits), SNP, PS at L1 (where bit 7 is ignored),
// PS at L4, and the frame bits below a large page.
func Reserved(e uint64, level int, leaf bool) uint64 {
	r := e & SNP
	switch {
	case level == 4:
		r |= e & PS
	case leaf && level == 2:
		r |= e & (0x1ff << 12) // frame bits 20:12 of a 2 MB page
	case leaf && level == 3:
		r |= e & (0x3ffff << 12) // frame bits 29:12 of a 1 GB page
	}
	return r
}

// Root entry (128 bits; the high half is reserved in legacy mode).
const (
	RootP uint64 = 1 << 0
)

// Context entry low and high words.
const (
	CtxP       uint64 = 1 << 0
	CtxFPD     uint64 = 1 << 1
	CtxTTShift        = 2 // 00: untranslated requests through the SL tables
	CtxTTMask  uint64 = 3 << CtxTTShift
	CtxAWMask  uint64 = 7 // high word: 2 = 48-bit, 4-level
	CtxDIDShft        = 8
	CtxDIDMask uint64 = 0xffff << CtxDIDShft
	// Reserved bits of the high word (QEMU's mask): 7 and 63:24.
	CtxHiReserved uint64 = 0xffff_ffff_ff00_0080
	// Reserved bits of the low word: 11:4.
	CtxLoReserved  uint64 = 0xff0
	RootLoReserved uint64 = 0xffe
)

// Context entry translation types.
const (
	TTUntranslated uint64 = 0
	TTDeviceTLB    uint64 = 1
	TTPassThrough  uint64 = 2
)

// RootEntry builds the low word of a present root entry.
func RootEntry(ctxTable uint64) uint64 { return ctxTable&AddrMask | RootP }

// ContextEntry builds the two words of a present context entry for a 4-level
// table at slptptr in domain did.
func ContextEntry(slptptr uint64, did uint16, tt uint64, fpd bool) (lo, hi uint64) {
	lo = slptptr&AddrMask | tt<<CtxTTShift | CtxP
	if fpd {
		lo |= CtxFPD
	}
	hi = uint64(did)<<CtxDIDShft | 2 // AW = 2: 48-bit, 4-level
	return
}

// DID extracts the domain ID from a context entry's high word.
func DID(hi uint64) uint16 { return uint16(hi & CtxDIDMask >> CtxDIDShft) }
