package iommu

import (
	"fmt"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// Driver is the operating system's side of the IOMMU: it writes the
// remapping structures into memory in their VT-d formats, as a driver would,
// allocating table pages from a region of physical memory, and invalidates
// the IOMMU's caches after every change, so that every later TLP sees it.
type Driver struct {
	mem      *memory.Store
	mmu      *IOMMU
	root     uint64
	next     uint64 // next free table page
	end      uint64
	logTable uint64
	slptptr  map[uint16]uint64 // domain → top-level table
	free     []uint64          // table pages a Remap gave back
}

// NewDriver manages the tables of mmu, taking table pages from
// [tablesBase, tablesBase+tablesSize).
func NewDriver(mmu *IOMMU, tablesBase, tablesSize uint64) *Driver {
	d := &Driver{mem: mmu.mem, mmu: mmu, root: mmu.spec.RootTable, next: tablesBase, end: tablesBase + tablesSize,
		logTable: mmu.spec.LogTable, slptptr: map[uint16]uint64{}}
	return d
}

func (d *Driver) alloc() (uint64, error) {
	var p uint64
	switch {
	case len(d.free) > 0:
		p, d.free = d.free[len(d.free)-1], d.free[:len(d.free)-1]
	case d.next+4096 > d.end:
		return 0, fmt.Errorf("iommu driver: out of page-table memory")
	default:
		p = d.next
		d.next += 4096
	}
	d.mem.Write(p, make([]byte, 4096))
	return p, nil
}

// Attach gives device sid a context entry in domain did, whose page table
// is shared by every device of the domain.
func (d *Driver) Attach(sid tlp.ID, did uint16) error {
	rootAddr := d.root + uint64(sid.Bus())*16
	re := d.mem.Load64(rootAddr)
	if re&pte.RootP == 0 {
		ctx, err := d.alloc()
		if err != nil {
			return err
		}
		re = pte.RootEntry(ctx)
		d.mem.Store64(rootAddr, re)
		d.mem.Store64(rootAddr+8, 0)
	}
	top, ok := d.slptptr[did]
	if !ok {
		var err error
		if top, err = d.alloc(); err != nil {
			return err
		}
		d.slptptr[did] = top
	}
	ctxAddr := re&pte.AddrMask + uint64(sid&0xff)*16
	lo, hi := pte.ContextEntry(top, did, pte.TTUntranslated, false)
	d.mem.Store64(ctxAddr, lo)
	d.mem.Store64(ctxAddr+8, hi)
	d.mmu.InvalidateContext(sid)
	d.mmu.InvalidateDomain(did)
	return nil
}

// Detach clears device sid's context entry: its requests fault from now on.
func (d *Driver) Detach(sid tlp.ID) {
	re := d.mem.Load64(d.root + uint64(sid.Bus())*16)
	if re&pte.RootP != 0 {
		ctxAddr := re&pte.AddrMask + uint64(sid&0xff)*16
		d.mem.Store64(ctxAddr, 0)
		d.mem.Store64(ctxAddr+8, 0)
	}
	d.mmu.InvalidateContext(sid)
}

// Perm are the bits of a mapping: R, W and, on 4 KB pages, the AA bits
// (pte.WL, WLD, RL, RLD, E) and an IUID.
type Perm struct {
	Bits uint64 // any of pte.R, W, WL, WLD, RL, RLD, E
	IUID uint16
}

// Map maps [iova, iova+size) of domain did to physical pa with pages of
// pageSize (4 KB, 2 MB or 1 GB), all aligned.
func (d *Driver) Map(did uint16, iova, pa, size, pageSize uint64, p Perm) error {
	level := 0
	switch pageSize {
	case 4096:
		level = 1
	case 2 << 20:
		level = 2
	case 1 << 30:
		level = 3
	default:
		return fmt.Errorf("map: page size %d: want 4 KB, 2 MB or 1 GB", pageSize)
	}
	if iova%pageSize != 0 || pa%pageSize != 0 || size%pageSize != 0 || size == 0 {
		return fmt.Errorf("map: iova %#x, pa %#x, size %#x not aligned to the %#x page", iova, pa, size, pageSize)
	}
	if iova+size > 1<<48 {
		return fmt.Errorf("map: iova %#x+%#x beyond the 48-bit address width", iova, size)
	}
	if p.Bits&^(pte.R|pte.W|pte.WL|pte.WLD|pte.RL|pte.RLD|pte.E) != 0 {
		return fmt.Errorf("map: bits %#x are not R, W, WL, WLD, RL, RLD or E", p.Bits)
	}
	aa := p.Bits & (pte.WL | pte.WLD | pte.RL | pte.RLD | pte.E)
	if level > 1 && (aa != 0 || p.IUID != 0) {
		return fmt.Errorf("map: Active Access bits live in 4 KB leaves only (bit 7 is PS in large pages)")
	}
	if p.IUID > 0x3ff {
		return fmt.Errorf("map: IUID %d needs more than 10 bits", p.IUID)
	}
	for off := uint64(0); off < size; off += pageSize {
		e, err := d.slot(did, iova+off, level, true)
		if err != nil {
			return err
		}
		leaf := (pa+off)&pte.AddrMask | p.Bits
		if level > 1 {
			leaf |= pte.PS
		} else {
			leaf = pte.WithIUID(leaf, p.IUID)
		}
		d.mem.Store64(e, leaf)
	}
	d.mmu.InvalidateRange(did, iova, size)
	return nil
}

// Remap changes the pages that map the naturally aligned large page
// [iova, iova+size) of domain did (size 2 MB or 1 GB) to pages of
// pageSize on [pa, pa+size) with p: a large page split into smaller pages
// (which may then carry AA bits, 4 KB ones), or smaller pages merged into
// larger ones. As VT-d has a driver do it, the new tables are written
// whole before the one entry that points to them changes (one 8-byte
// store, so a walk sees the old pages or the new ones, never a mix), then
// the IOTLB entries of the whole range are invalidated (page-selective
// with the range's address mask, which drops the paging-structure caches
// too), and only then are the old tables freed.
func (d *Driver) Remap(did uint16, iova, pa, size, pageSize uint64, p Perm) error {
	level := 0
	switch size {
	case 2 << 20:
		level = 2
	case 1 << 30:
		level = 3
	default:
		return fmt.Errorf("remap: size %d: want a 2 MB or 1 GB page", size)
	}
	if pageSize != 4096 && pageSize != 2<<20 && pageSize != 1<<30 || pageSize > size {
		return fmt.Errorf("remap: page size %d: want 4 KB, 2 MB or 1 GB, at most %d", pageSize, size)
	}
	if iova%size != 0 || pa%size != 0 || iova+size > 1<<48 {
		return fmt.Errorf("remap: iova %#x, pa %#x not aligned to the %#x page or beyond the address width", iova, pa, size)
	}
	if p.Bits&^(pte.R|pte.W|pte.WL|pte.WLD|pte.RL|pte.RLD|pte.E) != 0 || p.IUID > 0x3ff {
		return fmt.Errorf("remap: bits %#x, IUID %d: want R, W, WL, WLD, RL, RLD or E and 10 bits", p.Bits, p.IUID)
	}
	if pageSize != 4096 && (p.Bits&^(pte.R|pte.W) != 0 || p.IUID != 0) {
		return fmt.Errorf("remap: Active Access bits live in 4 KB leaves only (bit 7 is PS in large pages)")
	}
	e, err := d.slot(did, iova, level, true)
	if err != nil {
		return err
	}
	entry, err := d.build(level, pa, pageSize, p)
	if err != nil {
		return err
	}
	old := d.mem.Load64(e)
	d.mem.Store64(e, entry)
	d.mmu.InvalidateRange(did, iova, size)
	d.release(old, level)
	return nil
}

// build writes the tables below an entry of level that maps pa with pages
// of pageSize, and returns the entry.
func (d *Driver) build(level int, pa, pageSize uint64, p Perm) (uint64, error) {
	if pte.PageSize(level) == pageSize {
		if level == 1 {
			return pte.WithIUID(pa&pte.AddrMask|p.Bits, p.IUID), nil
		}
		return pa&pte.AddrMask | p.Bits | pte.PS, nil
	}
	t, err := d.alloc()
	if err != nil {
		return 0, err
	}
	for i := uint64(0); i < 512; i++ {
		e, err := d.build(level-1, pa+i*pte.PageSize(level-1), pageSize, p)
		if err != nil {
			return 0, err
		}
		d.mem.Store64(t+i*8, e)
	}
	return t | pte.R | pte.W, nil
}

// release gives back the tables below an entry of level that the driver
// no longer points to.
func (d *Driver) release(e uint64, level int) {
	if level == 1 || !pte.Present(e) || e&pte.PS != 0 {
		return
	}
	t := e & pte.AddrMask
	for i := uint64(0); i < 512; i++ {
		d.release(d.mem.Load64(t+i*8), level-1)
	}
	d.free = append(d.free, t)
}

// slot returns the address of the entry for iova at level, creating
// intermediate tables (with R and W, so that the leaf decides) on the way.
func (d *Driver) slot(did uint16, iova uint64, level int, create bool) (uint64, error) {
	table, ok := d.slptptr[did]
	if !ok {
		return 0, fmt.Errorf("domain %d has no page table (attach a device first)", did)
	}
	for l := pte.Levels; l > level; l-- {
		ea := table + pte.Index(iova, l)*8
		e := d.mem.Load64(ea)
		if !pte.Present(e) {
			if !create {
				return 0, nil
			}
			next, err := d.alloc()
			if err != nil {
				return 0, err
			}
			e = next | pte.R | pte.W
			d.mem.Store64(ea, e)
		} else if l <= 3 && e&pte.PS != 0 {
			return 0, fmt.Errorf("iova %#x is inside a large page at level %d", iova, l)
		}
		table = e & pte.AddrMask
	}
	return table + pte.Index(iova, level)*8, nil
}

// Unmap removes the 4 KB-page mappings of [iova, iova+size) in domain did.
func (d *Driver) Unmap(did uint16, iova, size uint64) error {
	for off := uint64(0); off < size; off += 4096 {
		e, err := d.slot(did, iova+off, 1, false)
		if err != nil {
			return err
		}
		if e != 0 {
			d.mem.Store64(e, 0)
		}
	}
	d.mmu.InvalidateRange(did, iova, size)
	return nil
}

// SetBits rewrites the permission and AA bits of the 4 KB page at iova,
// keeping its frame.
func (d *Driver) SetBits(did uint16, iova uint64, p Perm) error {
	e, err := d.slot(did, iova, 1, false)
	if err != nil {
		return err
	}
	if e == 0 {
		return fmt.Errorf("iova %#x is not mapped in domain %d", iova, did)
	}
	old := d.mem.Load64(e)
	leaf := pte.WithIUID(old&pte.AddrMask|p.Bits, p.IUID)
	d.mem.Store64(e, leaf)
	d.mmu.InvalidateRange(did, iova&^0xfff, 4096)
	return nil
}

// Log table entry layout in memory (128 bytes per IUID), written by the
// driver and read by the IOMMU:
//
//	0  base     ring buffer physical address (8-byte aligned)
//	8  size     ring size in bytes (0: no access log for this IUID)
//	16 head     bytes consumed so far (free-running), written by the CPU
//	24 tail     bytes of complete records so far (free-running), written by the IOMMU
//	32 mode     notification: 0 Poll, 1 Int, 2 SP (4 bytes); threshold in bytes (4 bytes)
//	40 msiAddr  Int mode: MSI address
//	48 msiData  Int mode: MSI data (4 bytes); SP mode: scratchpad slot (4 bytes)
//	56 seq      next record sequence number (the IOMMU's, written back on eviction)
//	64 reserved the reservation pointer (the IOMMU's, written back on eviction)
const (
	logEntrySize = 128
	offBase      = 0
	offSize      = 8
	offHead      = 16
	offTail      = 24
	offMode      = 32
	offMSIAddr   = 40
	offMSIData   = 48
	offSeq       = 56
	offReserved  = 64
)

// Notify is how the IOMMU tells the CPU about new records (DESIGN.md §2.5).
type Notify uint8

// Notification modes.
const (
	Poll Notify = iota // the process polls head/tail in memory
	Int                // an MSI when the fill level reaches a threshold
	SP                 // the tail is mirrored into the CPU's scratchpad
)

func (n Notify) String() string {
	switch n {
	case Poll:
		return "Poll"
	case Int:
		return "Int"
	case SP:
		return "SP"
	}
	return fmt.Sprintf("Notify(%d)", uint8(n))
}

// LogConfig registers an access log.
type LogConfig struct {
	Base, Size uint64
	Mode       Notify
	Threshold  uint32 // Int: bytes of records that trigger an MSI (default: any record)
	MSIAddr    uint64
	MSIData    uint32
	SPSlot     uint32 // SP: scratchpad slot of the tail mirror
}

// LogEntryAddr is where IUID's descriptor lives: the CPU reads tail and
// writes head there.
func (d *Driver) LogEntryAddr(iuid uint16) uint64 { return d.logTable + uint64(iuid)*logEntrySize }

// RegisterLog gives IUID an access log: a ring of c.Size bytes at c.Base.
func (d *Driver) RegisterLog(iuid uint16, c LogConfig) error {
	if d.mmu.spec.Bypass {
		return fmt.Errorf("access log of IUID %d: %w", iuid, ErrBypassed)
	}
	if iuid > 0x3ff {
		return fmt.Errorf("IUID %d needs more than 10 bits", iuid)
	}
	if c.Base%8 != 0 || c.Size%8 != 0 || c.Size < 64 {
		return fmt.Errorf("log of IUID %d: base %#x and size %d must be 8-byte aligned, size at least 64", iuid, c.Base, c.Size)
	}
	a := d.LogEntryAddr(iuid)
	d.mem.Store64(a+offBase, c.Base)
	d.mem.Store64(a+offSize, c.Size)
	d.mem.Store64(a+offHead, 0)
	d.mem.Store64(a+offTail, 0)
	d.mem.Store64(a+offMode, uint64(c.Mode)|uint64(c.Threshold)<<32)
	d.mem.Store64(a+offMSIAddr, c.MSIAddr)
	data := c.MSIData
	if c.Mode == SP {
		data = c.SPSlot
	}
	d.mem.Store64(a+offMSIData, uint64(data))
	d.mem.Store64(a+offSeq, 0)
	d.mem.Store64(a+offReserved, 0)
	d.mmu.InvalidateLog(iuid)
	return nil
}

// UnregisterLog removes IUID's access log: its size becomes 0 (no log), and
// the IOMMU drops its cached entry, so that later accesses that would log
// into it fault (no log) rather than write a ring the driver took away.
// The caller makes sure no record is in flight (the log drained), as a
// driver does before it frees the ring.
func (d *Driver) UnregisterLog(iuid uint16) error {
	if d.mmu.spec.Bypass {
		return fmt.Errorf("access log of IUID %d: %w", iuid, ErrBypassed)
	}
	if iuid > 0x3ff {
		return fmt.Errorf("IUID %d needs more than 10 bits", iuid)
	}
	d.mem.Store64(d.LogEntryAddr(iuid)+offSize, 0)
	d.mmu.InvalidateLog(iuid)
	return nil
}

// RegisterFlushPage makes the page at iova (in the address space of the
// devices that use it) the flushing page of IUID's log: an active get to it
// completes only when the log has been consumed up to where it stood when
// the get arrived.
func (d *Driver) RegisterFlushPage(iuid uint16, iova uint64) error {
	if d.mmu.spec.Bypass {
		return fmt.Errorf("flushing page of IUID %d: %w", iuid, ErrBypassed)
	}
	return d.mmu.addFlushPage(iuid, iova&^0xfff)
}
