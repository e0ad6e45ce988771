// Package verify proves that aaemu's cycle-level IOMMU does what DESIGN.md §2
// says. It holds an untimed golden model written from the specification,
// a seeded constrained-random stimulus generator, a scoreboard that compares
// every observable effect, coverage bins and a shrinker.
//
// The package imports no package that holds a model — only the format-only
// leaf packages pcie/tlp, iommu/pte and iommu/record — so it cannot check
// the models against themselves. The harness that runs the DUT lives in
// internal/conformance and reports what it saw as an Observation.
package verify

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"

	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// Device is a requester behind the IOMMU.
type Device struct {
	ID       tlp.ID `json:"id"`
	Attached bool   `json:"attached"`         // has a context entry
	Domain   uint16 `json:"domain,omitempty"` // 1 (or 0) or 2: whose page table its context entry points to
}

// Dom is the device's domain.
func (d *Device) Dom() uint16 { return max(d.Domain, 1) }

// Page is a page of domain 1's IO address space: 4 KB, or a large page
// of 2 MB or 1 GB (Size), which has R and W only (the AA bits live in 4 KB
// leaves).
type Page struct {
	IOVA   uint64 `json:"iova"`
	PA     uint64 `json:"pa"`
	Mapped bool   `json:"mapped"`
	Bits   uint64 `json:"bits"` // pte.R, W, WL, WLD, RL, RLD, E
	IUID   uint16 `json:"iuid"`
	Size   uint64 `json:"size,omitempty"`   // 4096 (or 0), 2 MB or 1 GB
	Domain uint16 `json:"domain,omitempty"` // 1 (or 0) or 2
	// Leaf is the size of the pages that map a large page's region (0:
	// its Size): 4 KB leaves may carry the AA bits, which then hold for
	// every 4 KB page of the region alike; 2 MB leaves split a 1 GB page.
	Leaf uint64 `json:"leaf,omitempty"`
}

// Dom is the page's domain.
func (p *Page) Dom() uint16 { return max(p.Domain, 1) }

// LeafBytes is the size of the pages that map it.
func (p *Page) LeafBytes() uint64 {
	if p.Leaf == 0 {
		return p.Bytes()
	}
	return p.Leaf
}

// Large page sizes.
const (
	Page2M = 2 << 20
	Page1G = 1 << 30
)

// Bytes is the page's size.
func (p *Page) Bytes() uint64 {
	if p.Size == 0 {
		return 4096
	}
	return p.Size
}

// pageOf finds the page that holds iova: a 4 KB page at its address, or
// a large page around it.
func pageOf[P interface{ *Page }](pages map[uint64]P, iova uint64) P {
	if pg := pages[iova&^0xfff]; pg != nil {
		return pg
	}
	for _, size := range []uint64{Page2M, Page1G} {
		if pg := pages[iova&^(size-1)]; pg != nil && (*Page)(pg).Bytes() == size {
			return pg
		}
	}
	return nil
}

// Frames lists the 4 KB frames whose memory a run sets up and compares:
// every 4 KB page's, and of each large page the frames an op addresses
// (a 1 GB page is not copied whole). Both the harness and the golden model
// take this list, a function of the stimulus alone.
func Frames(s *Stimulus) []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	add := func(pa uint64) {
		if !seen[pa] {
			seen[pa] = true
			out = append(out, pa)
		}
	}
	large := map[uint64]*Page{}
	for i := range s.Pages {
		pg := &s.Pages[i]
		if pg.Bytes() == 4096 {
			add(pg.PA)
		} else {
			large[pg.IOVA] = pg
		}
	}
	if len(large) == 0 {
		return out
	}
	for _, op := range s.Ops {
		for _, size := range []uint64{Page2M, Page1G} {
			if pg := large[op.TLP.Addr&^(size-1)]; pg != nil && pg.Bytes() == size {
				add(pg.PA + (op.TLP.Addr-pg.IOVA)&^0xfff)
			}
		}
	}
	return out
}

// Log is an access log: ring size in bytes and notification mode (0 Poll,
// 1 Int, 2 SP).
type Log struct {
	IUID uint16 `json:"iuid"`
	Size uint64 `json:"size"`
	Mode uint8  `json:"mode"`
}

// Flush makes a page the flushing page of a log.
type Flush struct {
	IUID uint16 `json:"iuid"`
	IOVA uint64 `json:"iova"`
}

// Op is one TLP a device sends (addresses are IOVAs).
type Op struct {
	Dev int     `json:"dev"`
	TLP tlp.TLP `json:"tlp"`
}

// Change is a driver call made during the run, once every TLP before op
// After has been taken and completed and its records consumed (the IOMMU
// quiet, as after a driver's invalidation wait): SetBits, Unmap or Map of
// a 4 KB page of domain 1 or 2, a large page's region split into smaller
// pages or its pages merged into larger ones (split, merge: Size the new
// pages' size, Bits and IUID theirs), Detach or Attach of a device, the
// removal of a Poll log (unregister) and its registration again with a
// ring of Size bytes (register), or software reading and clearing every
// pending fault record and the overflow flag (clearfaults). The IOMMU must
// use the new tables for every TLP after it (a stale IOTLB, context-cache
// or log-table entry shows as the old decision) and the old ones for every
// TLP before.
type Change struct {
	After  int    `json:"after"` // ops[:after] are done when it is made
	Kind   string `json:"kind"`  // setbits, unmap, map, split, merge, detach, attach, unregister, register, clearfaults
	IOVA   uint64 `json:"iova,omitempty"`
	Domain uint16 `json:"domain,omitempty"` // setbits, unmap, map, split, merge: the page's domain, 1 (or 0) or 2
	Bits   uint64 `json:"bits,omitempty"`   // setbits, map, split, merge
	IUID   uint16 `json:"iuid,omitempty"`   // setbits, map, split, merge, unregister, register
	Dev    int    `json:"dev,omitempty"`    // detach, attach
	Size   uint64 `json:"size,omitempty"`   // register: the new ring's bytes; split, merge: the new pages'
	// Racing: a clearfaults call clears the fault records the moment the
	// IOMMU has taken every op before After, while their faults may still
	// be on their way to the registers, rather than at a quiet point; a
	// setbits, map, unmap, split, merge, detach or attach call writes the
	// tables and invalidates the moment the IOMMU takes op After-1, while
	// the other TLPs before After may still be in flight (each decided
	// with the tables as they are when the IOMMU takes it). A log's
	// removal or registration never races (RacesTables).
	Racing bool `json:"racing,omitempty"`
}

// Dom is the domain of the page the call changes.
func (c *Change) Dom() uint16 { return max(c.Domain, 1) }

// Stimulus is one test: the set-up and the TLPs every device sends in order.
type Stimulus struct {
	Seed         uint64   `json:"seed"`
	Devices      []Device `json:"devices"`
	Pages        []Page   `json:"pages"`
	Logs         []Log    `json:"logs"`
	Flushes      []Flush  `json:"flushes"`
	Ops          []Op     `json:"ops"`
	ConsumerNS   uint64   `json:"consumer_period_ns"` // the handler drains every log this often
	FaultRecords int      `json:"fault_records"`
	Changes      []Change `json:"changes,omitempty"` // in order of After
}

// Pattern is the initial content of physical memory: byte i of the address
// space holds a function of i, so reads have known data.
func Pattern(pa uint64) byte { return byte(pa*31 + pa>>8*7 + 1) }

// Addresses of the stimulus: pages of domain 1 from PageBase, frames from
// FrameBase, logs from LogBase.
const (
	PageBase  = 0x4000_0000
	FrameBase = 0x5000_0000
	LogBase   = 0x0300_0000
)

// Generate draws a stimulus from seed: page set-ups over every combination
// of control bits, E and IUIDs, unmapped pages, devices with and without a
// context entry, puts, gets, atomics and flushes of 1 B to 4 KB at aligned
// and unaligned addresses from several devices, small logs that overflow,
// and slow or fast consumers.
func Generate(seed uint64) *Stimulus {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &Stimulus{Seed: seed, FaultRecords: 4 + r.IntN(8)}
	ndev := 1 + r.IntN(3)
	for i := 0; i < ndev; i++ {
		s.Devices = append(s.Devices, Device{ID: tlp.NewID(uint8(1+i), 0, 0), Attached: true})
	}
	switch r.IntN(4) {
	case 0: // a device on an attached device's bus, without a context entry
		s.Devices = append(s.Devices, Device{ID: tlp.NewID(1, 0, 1)})
	case 1: // a device on a bus without a root entry
		s.Devices = append(s.Devices, Device{ID: tlp.NewID(9, 0, 0)})
	}
	// Logs: small rings overflow under a burst; some IUIDs have no log.
	nlogs := 1 + r.IntN(3)
	for i := 0; i < nlogs; i++ {
		size := []uint64{256, 512, 1024, 8192, 65536}[r.IntN(5)]
		s.Logs = append(s.Logs, Log{IUID: uint16(1 + i), Size: size, Mode: uint8(r.IntN(3))})
	}
	npages := 4 + r.IntN(8)
	for i := 0; i < npages; i++ {
		p := Page{IOVA: PageBase + uint64(i)*4096, PA: FrameBase + uint64(i)*4096, Mapped: r.IntN(8) != 0}
		if p.Mapped {
			p.Bits = randomBits(r)
			p.IUID = uint16(1 + r.IntN(nlogs+1)) // nlogs+1 has no log
		}
		s.Pages = append(s.Pages, p)
	}
	// A flushing page per log, readable.
	for i, l := range s.Logs {
		if r.IntN(2) == 0 {
			iova := PageBase + uint64(npages+i)*4096
			s.Pages = append(s.Pages, Page{IOVA: iova, PA: FrameBase + uint64(npages+i)*4096, Mapped: true, Bits: pte.R})
			s.Flushes = append(s.Flushes, Flush{IUID: l.IUID, IOVA: iova})
		}
	}
	s.ConsumerNS = []uint64{50, 200, 2000, 20000}[r.IntN(4)]
	nops := 5 + r.IntN(40)
	for i := 0; i < nops; i++ {
		s.Ops = append(s.Ops, randomOp(r, s, i))
	}
	if r.IntN(2) == 0 {
		burst(r, s, ndev)
	}
	changes(seed, s, npages, nops)
	racing(seed, s)
	relogs(seed, s, nops)
	iuids(seed, s)
	if first, ok := largePages(seed, s); ok {
		resizes(seed, s, first)
	}
	domains(seed, s, npages)
	racingTables(seed, s)
	return s
}

// RacesTables reports whether a call changes the tables racing the TLPs in
// flight (Change.Racing on a setbits, map, unmap, split, merge, detach or
// attach). A log's removal or registration never races: the driver frees
// or hands over the ring, so it must first quiesce the log (every record
// reserved in it written and consumed), which is the quiet point the
// harness waits for.
func (c *Change) RacesTables() bool {
	return c.Racing && racesTables(c.Kind)
}

func racesTables(kind string) bool {
	switch kind {
	case "setbits", "map", "unmap", "split", "merge", "detach", "attach":
		return true
	}
	return false
}

// racingTables makes, from a stream of its own, half of the page calls
// (setbits, map, unmap) that have a place of their own (no other call at
// the same op) race the TLPs in flight: the driver writes the tables and
// invalidates the moment the IOMMU takes op After-1, while the devices'
// TLPs before After may still be in their links or held at a port.
func racingTables(seed uint64, s *Stimulus) {
	r := rand.New(rand.NewPCG(seed, 0x7ab1e))
	for i := range s.Changes {
		c := &s.Changes[i]
		alone := c.After > 0 && (i == 0 || s.Changes[i-1].After < c.After) && (i+1 == len(s.Changes) || s.Changes[i+1].After > c.After)
		if (c.Kind == "setbits" || c.Kind == "map" || c.Kind == "unmap") && alone && r.IntN(2) == 0 {
			c.Racing = true
		}
	}
	// Split, merge (Driver.Remap), detach and attach race from a stream of
	// their own, so the page calls above race as they did before them. A
	// driver may make each with traffic in flight: Remap writes the new
	// entry and invalidates the whole range at one instant, Attach and
	// Detach write the context entry and invalidate the context cache (a
	// device's TLPs in flight at a detach fault, as VT-d has it).
	r = rand.New(rand.NewPCG(seed, 0xc0de7ab1))
	for i := range s.Changes {
		c := &s.Changes[i]
		alone := c.After > 0 && (i == 0 || s.Changes[i-1].After < c.After) && (i+1 == len(s.Changes) || s.Changes[i+1].After > c.After)
		if (c.Kind == "split" || c.Kind == "merge" || c.Kind == "detach" || c.Kind == "attach") && alone && r.IntN(2) == 0 {
			c.Racing = true
		}
	}
}

// Domain2Frames is where the frames of domain 2's pages are.
const Domain2Frames = 0x5800_0000

// domains adds, from a stream of its own, a device in domain 2 and pages
// of domain 2 at IOVAs of domain 1's pages (other frames, other bits),
// and accesses to those IOVAs from the devices of both domains in turn
// after the other ops: the IOTLB and the context cache must keep the
// domains apart.
func domains(seed uint64, s *Stimulus, npages int) {
	r := rand.New(rand.NewPCG(seed, 0xd0a2))
	if r.IntN(2) == 0 {
		return
	}
	s.Devices = append(s.Devices, Device{ID: tlp.NewID(12, 0, 0), Attached: true, Domain: 2})
	d2 := len(s.Devices) - 1
	var iovas []uint64
	for _, i := range r.Perm(npages)[:min(npages, 2+r.IntN(3))] {
		iuid := uint16(0)
		if len(s.Logs) > 0 {
			iuid = s.Logs[r.IntN(len(s.Logs))].IUID
		}
		s.Pages = append(s.Pages, Page{IOVA: s.Pages[i].IOVA, PA: Domain2Frames + uint64(i)*4096, Mapped: true,
			Bits: randomBits(r), IUID: iuid, Domain: 2})
		iovas = append(iovas, s.Pages[i].IOVA)
	}
	start := len(s.Ops)
	count := 6 + r.IntN(11)
	for n := 0; n < count; n++ {
		dev := d2
		if n%2 == 1 {
			dev = r.IntN(d2) // a device of domain 1 (or one without a context entry)
		}
		id := s.Devices[dev].ID
		size := sizes[r.IntN(len(sizes))]
		addr := iovas[r.IntN(len(iovas))] + uint64(r.IntN(4096-size+1))
		tag := uint16(0x120 + n) // apart from the other ops' tags
		if r.IntN(2) == 0 {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.NewMemWrite(id, tag, addr, data)})
		} else {
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.NewMemRead(id, tag, addr, size)})
		}
	}
	domain2Changes(seed, s, d2, start)
}

// domain2Changes draws, from a stream of its own, driver calls on domain
// 2 between its TLPs (ops from start on): SetBits, Unmap and Map of its
// pages, whose IOVAs domain 1 maps too, and Detach and Attach of its
// device. A page-selective invalidation must drop domain 2's entry for
// the IOVA and leave domain 1's (the TLPs alternate between the domains'
// devices). Most calls change a page a later TLP uses.
func domain2Changes(seed uint64, s *Stimulus, d2, start int) {
	r := rand.New(rand.NewPCG(seed, 0xd0c2))
	if r.IntN(4) == 0 {
		return
	}
	var pages []int
	mapped, bits := map[int]bool{}, map[int]uint64{}
	for i := range s.Pages {
		if s.Pages[i].Dom() == 2 {
			pages = append(pages, i)
			mapped[i], bits[i] = s.Pages[i].Mapped, s.Pages[i].Bits
		}
	}
	attached := true
	end := len(s.Ops)
	step := max((end-start)/3, 1)
	for after, n := start+1+r.IntN(step), 1+r.IntN(3); n > 0 && after < end; after, n = after+1+r.IntN(step), n-1 {
		c := Change{After: after}
		if r.IntN(5) == 0 {
			c.Kind, c.Dev = "detach", d2
			if !attached {
				c.Kind = "attach"
			}
			attached = !attached
			s.Changes = append(s.Changes, c)
			continue
		}
		i := pages[r.IntN(len(pages))]
		if r.IntN(4) != 0 {
			addr := s.Ops[after+r.IntN(end-after)].TLP.Addr &^ 0xfff
			for _, j := range pages {
				if s.Pages[j].IOVA == addr {
					i = j
				}
			}
		}
		c.IOVA, c.Domain = s.Pages[i].IOVA, 2
		switch {
		case !mapped[i]:
			c.Kind, c.Bits, c.IUID = "map", randomBits(r), s.Logs[r.IntN(len(s.Logs))].IUID
		case r.IntN(4) == 0:
			c.Kind = "unmap"
		default:
			c.Kind, c.Bits, c.IUID = "setbits", bits[i], s.Pages[i].IUID
			for c.Bits == bits[i] || c.Bits == 0 {
				c.Bits = bits[i] ^ []uint64{pte.R, pte.W, pte.WL, pte.WLD, pte.RL, pte.RLD, pte.E}[r.IntN(7)]
			}
		}
		if c.Kind != "unmap" {
			bits[i] = c.Bits
		}
		mapped[i] = c.Kind != "unmap"
		s.Changes = append(s.Changes, c)
	}
}

// Where large pages are: 2 MB pages of IOVA from Large2MBase on frames
// from Large2MFrames, the 1 GB page at Large1GBase on a frame at the
// same address.
const (
	Large2MBase   = 0x8000_0000
	Large2MFrames = 0x6000_0000
	Large1GBase   = 0x1_0000_0000
)

// largePages adds, from a stream of its own (the rest of the stimulus
// stays the seed's), a 2 MB page or two and a 1 GB page with R, W or
// both, and puts, gets and atomics through them after the other ops: at
// their first and last 4 KB and between, so that the frame is the large
// page's frame plus the offset within it.
func largePages(seed uint64, s *Stimulus) (first int, ok bool) {
	r := rand.New(rand.NewPCG(seed, 0x1a9e))
	if r.IntN(2) == 0 {
		return 0, false
	}
	first = len(s.Ops)
	perm := func() uint64 { return []uint64{pte.R | pte.W, pte.R, pte.W}[r.IntN(3)] }
	var large []Page
	for k := uint64(0); k < uint64(1+r.IntN(2)); k++ {
		large = append(large, Page{IOVA: Large2MBase + k*Page2M, PA: Large2MFrames + k*Page2M, Mapped: true, Bits: perm(), Size: Page2M})
	}
	if r.IntN(2) == 0 {
		large = append(large, Page{IOVA: Large1GBase, PA: Large1GBase, Mapped: true, Bits: perm(), Size: Page1G})
	}
	s.Pages = append(s.Pages, large...)
	count := 4 + r.IntN(12)
	for n := 0; n < count; n++ {
		pg := large[r.IntN(len(large))]
		frames := pg.Size / 4096
		frame := []uint64{0, frames - 1, uint64(r.IntN(int(frames)))}[r.IntN(3)]
		dev := r.IntN(len(s.Devices))
		id := s.Devices[dev].ID
		size := sizes[r.IntN(len(sizes))]
		addr := pg.IOVA + frame*4096 + uint64(r.IntN(4096-size+1))
		tag := uint16(0x100 + n) // apart from randomOp's and the burst's
		switch k := r.IntN(8); {
		case k < 4:
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.NewMemWrite(id, tag, addr, data)})
		case k < 7:
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.NewMemRead(id, tag, addr, size)})
		default:
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.TLP{Kind: tlp.FetchAdd, Length: 2, RequesterID: id, Tag: tag,
				Addr: addr &^ 7, Addr64: addr >= 1<<32, Data: []byte{byte(r.Uint32()), 0, 0, 0, 0, 0, 0, 0}}})
		}
	}
	return first, true
}

// resizes draws, from a stream of its own, changes of the pages that map
// the large pages, between the TLPs through them (ops from first on), so
// that the IOTLB holds 4 KB fractures of the old pages when the driver
// changes them: half the time the first 2 MB page is mapped at set-up by
// 4 KB pages carrying AA bits and an IUID, to be merged into one 2 MB
// page; a 2 MB page split into 4 KB pages with AA bits; the 1 GB page
// split into 2 MB or 4 KB pages, or merged back. Most calls change a page
// a later TLP uses.
func resizes(seed uint64, s *Stimulus, first int) {
	r := rand.New(rand.NewPCG(seed, 0x5b11))
	if r.IntN(4) == 0 {
		return
	}
	var large []int
	leaf := map[int]uint64{}
	for i := range s.Pages {
		if s.Pages[i].Bytes() != 4096 {
			large = append(large, i)
			leaf[i] = s.Pages[i].Bytes()
		}
	}
	aa := func() (uint64, uint16) { return randomBits(r), s.Logs[r.IntN(len(s.Logs))].IUID }
	if r.IntN(2) == 0 { // large[0] is a 2 MB page
		pg := &s.Pages[large[0]]
		pg.Leaf, leaf[large[0]] = 4096, 4096
		pg.Bits, pg.IUID = aa()
	}
	end := len(s.Ops)
	step := max((end-first)/3, 1)
	for after, n := first+1+r.IntN(step), 1+r.IntN(3); n > 0 && after < end; after, n = after+1+r.IntN(step), n-1 {
		i := large[r.IntN(len(large))]
		if r.IntN(4) != 0 {
			addr := s.Ops[after+r.IntN(end-after)].TLP.Addr
			for _, j := range large {
				if pg := &s.Pages[j]; addr >= pg.IOVA && addr < pg.IOVA+pg.Bytes() {
					i = j
				}
			}
		}
		pg := &s.Pages[i]
		var below, above []uint64
		for _, size := range []uint64{4096, Page2M, Page1G} {
			switch {
			case size < leaf[i]:
				below = append(below, size)
			case size > leaf[i] && size <= pg.Bytes():
				above = append(above, size)
			}
		}
		c := Change{After: after, Kind: "split", IOVA: pg.IOVA}
		if len(below) > 0 && (len(above) == 0 || r.IntN(2) == 0) {
			c.Size = below[r.IntN(len(below))]
		} else {
			c.Kind, c.Size = "merge", above[r.IntN(len(above))]
		}
		if c.Size == 4096 {
			c.Bits, c.IUID = aa()
		} else {
			c.Bits = []uint64{pte.R | pte.W, pte.R, pte.W}[r.IntN(3)]
		}
		leaf[i] = c.Size
		s.Changes = append(s.Changes, c)
	}
}

// iuids gives the logs and the pages' IUIDs values over the whole 10-bit
// range, 0 and 1023 included, drawn from a stream of their own (the rest
// of the stimulus stays the seed's): the generator numbers logs 1, 2, ...
// and the IUID without a log after them; each number becomes another
// value. (IUID 0 of the pages that log nothing stays 0: its bits log
// nothing whatever log IUID 0 has.)
func iuids(seed uint64, s *Stimulus) {
	r := rand.New(rand.NewPCG(seed, 0x1d1d))
	used := map[uint16]bool{}
	val := map[uint16]uint16{0: 0}
	for k := uint16(1); int(k) <= len(s.Logs)+1; k++ {
		v := uint16(1 + r.IntN(maxIUID-1))
		switch r.IntN(4) {
		case 0:
			v = 0
		case 1:
			v = maxIUID
		}
		for used[v] {
			v = uint16(1 + r.IntN(maxIUID-1))
		}
		used[v], val[k] = true, v
	}
	for i := range s.Logs {
		s.Logs[i].IUID = val[s.Logs[i].IUID]
	}
	for i := range s.Pages {
		s.Pages[i].IUID = val[s.Pages[i].IUID]
	}
	for i := range s.Flushes {
		s.Flushes[i].IUID = val[s.Flushes[i].IUID]
	}
	for i := range s.Changes {
		s.Changes[i].IUID = val[s.Changes[i].IUID]
	}
}

// changes draws, from a stream of its own (the rest of the stimulus stays
// the seed's), driver calls between the random TLPs: SetBits, Unmap and
// Map of the generated pages (not the flushing pages nor the burst's),
// Detach and Attach of the devices, so that entries the IOTLB and the
// context cache hold go stale.
func changes(seed uint64, s *Stimulus, npages, nops int) {
	r := rand.New(rand.NewPCG(seed, 0xc4a9))
	if r.IntN(2) == 0 || nops < 2 {
		return
	}
	mapped, bits := make([]bool, npages), make([]uint64, npages)
	for i := range mapped {
		mapped[i], bits[i] = s.Pages[i].Mapped, s.Pages[i].Bits
	}
	attached := make([]bool, len(s.Devices))
	for i, d := range s.Devices {
		attached[i] = d.Attached
	}
	// Poll logs without a flushing page may be removed and registered
	// again (the notification checks follow one ring per log; a flush
	// waits on a log that stays).
	var poll []int
	registered := make([]bool, len(s.Logs))
	for i, l := range s.Logs {
		registered[i] = true
		flushed := false
		for _, f := range s.Flushes {
			flushed = flushed || f.IUID == l.IUID
		}
		if l.Mode == 0 && !flushed {
			poll = append(poll, i)
		}
	}
	after := 1 + r.IntN(nops/2+1)
	for n := 1 + r.IntN(6); n > 0 && after < nops; n-- {
		c := Change{After: after}
		switch k := r.IntN(8); {
		case k == 0:
			c.Kind = "clearfaults"
		case k == 1 && len(poll) > 0:
			i := poll[r.IntN(len(poll))]
			c.IUID, c.Kind = s.Logs[i].IUID, "unregister"
			if !registered[i] {
				c.Kind, c.Size = "register", []uint64{256, 512, 1024, 8192, 65536}[r.IntN(5)]
			}
			registered[i] = !registered[i]
		case k < 4:
			c.Dev = r.IntN(len(s.Devices))
			c.Kind = "detach"
			if !attached[c.Dev] {
				c.Kind = "attach"
			}
			attached[c.Dev] = !attached[c.Dev]
		default:
			// Half the time a page a later TLP uses, so the change shows.
			pg := r.IntN(npages)
			if r.IntN(2) == 0 {
				if k := s.Ops[after+r.IntN(nops-after)].TLP.Addr&^0xfff - PageBase; k < uint64(npages)*4096 {
					pg = int(k / 4096)
				}
			}
			c.IOVA = s.Pages[pg].IOVA
			switch {
			case !mapped[pg]:
				c.Kind, c.Bits, c.IUID = "map", randomBits(r), uint16(1+r.IntN(len(s.Logs)+1))
			case r.IntN(3) == 0:
				c.Kind = "unmap"
			default:
				// One permission granted or revoked (E, a log bit, R
				// or W), as a driver changes a page in use.
				c.Kind, c.Bits, c.IUID = "setbits", bits[pg], s.Pages[pg].IUID
				for c.Bits == bits[pg] || c.Bits == 0 {
					c.Bits = bits[pg] ^ []uint64{pte.R, pte.W, pte.WL, pte.WLD, pte.RL, pte.RLD, pte.E}[r.IntN(7)]
				}
			}
			if c.Kind != "unmap" {
				bits[pg] = c.Bits
			}
			mapped[pg] = c.Kind != "unmap"
		}
		s.Changes = append(s.Changes, c)
		after += r.IntN(max(nops/3, 1))
	}
}

// relogs removes, from a stream of its own, a log of any notification
// mode, with a flushing page or not, between the random TLPs and registers
// it again later with a new ring, so that TLPs after either use it; a log
// the calls of changes did not touch.
func relogs(seed uint64, s *Stimulus, nops int) {
	r := rand.New(rand.NewPCG(seed, 0x4e10))
	if r.IntN(2) == 0 || nops < 4 {
		return
	}
	var free []uint16
	for _, l := range s.Logs {
		touched := false
		for _, c := range s.Changes {
			touched = touched || (c.Kind == "unregister" || c.Kind == "register") && c.IUID == l.IUID
		}
		if !touched {
			free = append(free, l.IUID)
		}
	}
	if len(free) == 0 {
		return
	}
	iuid := free[r.IntN(len(free))]
	off := 1 + r.IntN(nops/2)
	on := off + 1 + r.IntN(nops-off-1)
	add := func(c Change) {
		i := len(s.Changes)
		for i > 0 && s.Changes[i-1].After > c.After {
			i--
		}
		s.Changes = slices.Insert(s.Changes, i, c)
	}
	add(Change{After: off, Kind: "unregister", IUID: iuid})
	add(Change{After: on, Kind: "register", IUID: iuid, Size: []uint64{256, 512, 1024, 8192, 65536}[r.IntN(5)]})
}

// racing makes, from a stream of its own, half of the clears of the fault
// records race the faults still in flight (Change.Racing).
func racing(seed uint64, s *Stimulus) {
	r := rand.New(rand.NewPCG(seed, 0xfa17))
	for i := range s.Changes {
		if s.Changes[i].Kind == "clearfaults" && s.Changes[i].After > 0 && r.IntN(2) == 0 {
			s.Changes[i].Racing = true
		}
	}
}

// burst appends many short accesses to a page logged into one small log,
// so that its ring wraps a few times while the consumer drains it (PAD
// records and skips at its end, sequence numbers counting the PADs); a
// write is often read back at once by its device (a read must see the
// write before it, however the memory controller queues them); 4 KB
// writes to a page without logging keep the memory controller's queues
// full; and the devices' tags are counted per device, so the same tag
// values are outstanding from several devices at once.
func burst(r *rand.Rand, s *Stimulus, ndev int) {
	l := &s.Logs[r.IntN(len(s.Logs))]
	if l.Size > 2048 {
		l.Size = []uint64{512, 1024, 2048}[r.IntN(3)]
	}
	next := uint64(0) // the first page after every page so far
	for _, p := range s.Pages {
		next = max(next, (p.IOVA-PageBase)/4096+1)
	}
	page := func(bits uint64, iuid uint16) uint64 {
		iova := PageBase + next*4096
		s.Pages = append(s.Pages, Page{IOVA: iova, PA: FrameBase + next*4096, Mapped: true, Bits: bits, IUID: iuid})
		next++
		return iova
	}
	logged := page(pte.R|pte.W|pte.WL|pte.WLD|pte.RL|pte.E, l.IUID)
	bulk := page(pte.W, 0)
	plain := page(pte.R|pte.W, 0)
	// An AtomicOp on a page that logs writes without E: a fault, not a
	// record (decision/atomic/allowed/meta/E0).
	noE := page(pte.R|pte.W|pte.WL, l.IUID)
	withE := page(pte.R|pte.W|pte.WL|pte.E, l.IUID)
	dev := r.IntN(ndev)
	s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.TLP{Kind: tlp.FetchAdd, Length: 2, RequesterID: s.Devices[dev].ID, Tag: 0x1ff,
		Addr: noE + uint64(r.IntN(512))*8, Data: []byte{byte(r.Uint32()), 0, 0, 0, 0, 0, 0, 0}}})
	tags := make([]uint16, ndev)
	tag := func(dev int) uint16 {
		t := tags[dev]
		tags[dev] = (t + 1) & 0x3ff
		return 0x200 | t&0x1ff // apart from randomOp's tags (op indices)
	}
	// And one on a page that logs writes with E, after the burst: a
	// record without data (decision/atomic/allowed/meta/E1).
	defer func() {
		dev := r.IntN(ndev)
		s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.TLP{Kind: tlp.FetchAdd, Length: 1, RequesterID: s.Devices[dev].ID, Tag: 0x1fe,
			Addr: withE + uint64(r.IntN(1024))*4, Data: []byte{byte(r.Uint32()), 0, 0, 0}}})
	}()
	n := min(int(3*l.Size/48), 200)
	for k := 0; k < n; k++ {
		dev := r.IntN(ndev)
		id := s.Devices[dev].ID
		if k%8 == 7 {
			data := make([]byte, 4096)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.NewMemWrite(id, tag(dev), bulk, data)})
			continue
		}
		if k%16 == 5 {
			// Zero-length: one DW, no byte enabled (a read flushes
			// earlier writes; neither touches memory, both are decided
			// and logged).
			addr := logged + uint64(r.IntN(1024))*4
			t := tlp.NewMemRead(id, tag(dev), addr, 0)
			if r.IntN(2) == 0 {
				t = tlp.NewMemWrite(id, tag(dev), addr, nil)
			}
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: t})
			continue
		}
		size := 1 + r.IntN(40)
		at := logged
		if r.IntN(3) == 0 {
			at = plain // nothing logged between the write and the read
		}
		addr := at + uint64(r.IntN(4096-size+1))
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.NewMemWrite(id, tag(dev), addr, data)})
		if r.IntN(2) == 0 {
			s.Ops = append(s.Ops, Op{Dev: dev, TLP: tlp.NewMemRead(id, tag(dev), addr, size)})
		}
	}
}

// randomBits draws a page's bits: every combination of R, W, WL, WLD, RL,
// RLD, E is possible.
func randomBits(r *rand.Rand) uint64 {
	var b uint64
	for _, bit := range []uint64{pte.R, pte.W, pte.WL, pte.WLD, pte.RL, pte.RLD, pte.E} {
		if r.IntN(2) == 0 {
			b |= bit
		}
	}
	if b == 0 {
		b = pte.W // an all-zero leaf would be "not present"
	}
	return b
}

var sizes = []int{1, 2, 3, 4, 7, 8, 15, 16, 31, 64, 100, 256, 512, 1000, 2048, 4096}

func randomOp(r *rand.Rand, s *Stimulus, tag int) Op {
	dev := r.IntN(len(s.Devices))
	id := s.Devices[dev].ID
	var page Page
	if r.IntN(5) == 0 && len(s.Flushes) > 0 {
		f := s.Flushes[r.IntN(len(s.Flushes))]
		return Op{Dev: dev, TLP: tlp.NewMemRead(id, uint16(tag), f.IOVA, 4)}
	}
	page = s.Pages[r.IntN(len(s.Pages))]
	n := sizes[r.IntN(len(sizes))]
	off := 0
	if r.IntN(2) == 0 {
		off = r.IntN(4096 - n + 1)
	} else {
		off = (r.IntN(4096/8) * 8) % (4096 - n + 1) &^ 7
	}
	addr := page.IOVA + uint64(off)
	switch k := r.IntN(10); {
	case k < 5:
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		return Op{Dev: dev, TLP: tlp.NewMemWrite(id, uint16(tag), addr, data)}
	case k < 9:
		return Op{Dev: dev, TLP: tlp.NewMemRead(id, uint16(tag), addr, n)}
	default:
		a := page.IOVA + uint64(r.IntN(512))*8
		t := tlp.TLP{Kind: tlp.FetchAdd, Length: 2, RequesterID: id, Tag: uint16(tag), Addr: a,
			Data: []byte{byte(r.Uint32()), 0, 0, 0, 0, 0, 0, 0}}
		if r.IntN(2) == 0 {
			t.Kind, t.Length = tlp.CAS, 4
			t.Data = append(make([]byte, 8), 1, 2, 3, 4, 5, 6, 7, 8)
		}
		return Op{Dev: dev, TLP: t}
	}
}

// Limits of a replay file's stimulus: what the harness gives it (one
// IOMMU with the default flush buffer, logs 1 MiB apart from LogBase) and
// bounds on its size.
const (
	MaxDevices    = 64
	MaxPages      = 4096
	MaxLogs       = 64
	MaxFlushes    = 8 // the IOMMU's flush buffer
	MaxOps        = 100_000
	MaxLogSize    = 0x10_0000 // the space between two logs
	MaxConsumerNS = 1_000_000
	MaxChanges    = 1024
	maxIUID       = 0x3ff
	// pageTables is where the harness's IOMMU keeps its tables: no page
	// may lie there.
	pageTables, pageTablesEnd = 0x100_0000, 0x200_0000
)

// Validate checks a stimulus read from a replay file: every field in its
// range, every reference (an op's device, a flush's log and page) to
// something the stimulus has. The error is an *input.Error that names the
// field as a key (ops[3].dev).
func (s *Stimulus) Validate() error {
	bad := func(key, allowed, format string, a ...any) error {
		return &input.Error{Key: key, Problem: fmt.Sprintf(format, a...), Allowed: allowed}
	}
	if len(s.Devices) < 1 || len(s.Devices) > MaxDevices {
		return bad("devices", fmt.Sprintf("1..%d devices", MaxDevices), "%d devices", len(s.Devices))
	}
	ids := map[tlp.ID]int{}
	for i, d := range s.Devices {
		if d.Domain > 2 {
			return bad(fmt.Sprintf("devices[%d].domain", i), "1 (or 0) or 2", "%d is no domain", d.Domain)
		}
		if j, ok := ids[d.ID]; ok {
			return bad(fmt.Sprintf("devices[%d].id", i), "a requester ID once", "%v is devices[%d]'s too", d.ID, j)
		}
		ids[d.ID] = i
	}
	if len(s.Pages) > MaxPages {
		return bad("pages", fmt.Sprintf("0..%d pages", MaxPages), "%d pages", len(s.Pages))
	}
	if len(s.Logs) > MaxLogs {
		return bad("logs", fmt.Sprintf("0..%d logs", MaxLogs), "%d logs", len(s.Logs))
	}
	logsEnd := uint64(LogBase) + uint64(len(s.Logs))*MaxLogSize
	const bits = pte.R | pte.W | pte.WL | pte.WLD | pte.RL | pte.RLD | pte.E
	iovas := map[uint64]int{}  // domain 1's pages
	iovas2 := map[uint64]int{} // domain 2's
	for i, p := range s.Pages {
		k := fmt.Sprintf("pages[%d]", i)
		n := p.Bytes()
		switch {
		case p.Domain > 2:
			return bad(k+".domain", "1 (or 0) or 2", "%d is no domain", p.Domain)
		case n != 4096 && n != Page2M && n != Page1G:
			return bad(k+".size", "4096, 2097152 (2 MB) or 1073741824 (1 GB)", "%d is no page size", p.Size)
		case p.IOVA%n != 0 || p.IOVA+n > 1<<48:
			return bad(k+".iova", "a multiple of the page's size below 2^48", "%#x", p.IOVA)
		case p.PA%n != 0 || p.PA+n > 1<<52:
			return bad(k+".pa", "a multiple of the page's size below 2^52", "%#x", p.PA)
		case p.PA < pageTablesEnd && p.PA+n > pageTables:
			return bad(k+".pa", fmt.Sprintf("outside the IOMMU's tables, %#x..%#x", pageTables, pageTablesEnd), "%#x is in the IOMMU's tables", p.PA)
		case p.PA < logsEnd && p.PA+n > LogBase:
			return bad(k+".pa", fmt.Sprintf("outside the logs, %#x..%#x", LogBase, logsEnd), "%#x is in the access logs", p.PA)
		case p.Leaf != 0 && (p.Leaf > n || n%p.Leaf != 0 || (p.Leaf != 4096 && p.Leaf != Page2M && p.Leaf != Page1G)):
			return bad(k+".leaf", "4096, 2097152 (2 MB) or 1073741824 (1 GB), at most the page's size", "%d is no page size for a page of %d bytes", p.Leaf, n)
		case p.LeafBytes() != 4096 && (p.Bits&^(pte.R|pte.W) != 0 || p.IUID != 0):
			return bad(k+".bits", "R and W only, IUID 0, on a large page (the AA bits live in 4 KB leaves)", "%#x, IUID %d", p.Bits, p.IUID)
		case p.Bits&^bits != 0:
			return bad(k+".bits", "R, W, WL, WLD, RL, RLD and E only", "%#x has other bits", p.Bits)
		case p.IUID > maxIUID:
			return bad(k+".iuid", "0..1023: 10 bits", "%d is out of range", p.IUID)
		}
		in := iovas
		if p.Dom() == 2 {
			in = iovas2
		}
		if j, ok := in[p.IOVA]; ok {
			return bad(k+".iova", "a page once in its domain", "%#x is pages[%d]'s too", p.IOVA, j)
		}
		in[p.IOVA] = i
	}
	// A large page holds no other page (its table entry is the leaf).
	for i, p := range s.Pages {
		if p.Bytes() == 4096 {
			continue
		}
		for j, q := range s.Pages {
			if j != i && q.Dom() == p.Dom() && q.IOVA+q.Bytes() > p.IOVA && q.IOVA < p.IOVA+p.Bytes() {
				return bad(fmt.Sprintf("pages[%d].iova", j), "outside every large page", "%#x is inside pages[%d], a page of %d bytes at %#x", q.IOVA, i, p.Bytes(), p.IOVA)
			}
		}
	}
	logs := map[uint16]int{}
	for i, l := range s.Logs {
		k := fmt.Sprintf("logs[%d]", i)
		switch {
		case l.IUID > maxIUID:
			return bad(k+".iuid", "0..1023: 10 bits", "%d is out of range", l.IUID)
		case l.Size < 64 || l.Size > MaxLogSize || l.Size%8 != 0:
			return bad(k+".size", fmt.Sprintf("a multiple of 8 from 64 to %d bytes", MaxLogSize), "%d is out of range", l.Size)
		case l.Mode > 2:
			return bad(k+".mode", "0: Poll, 1: Int, 2: SP", "%d is not a notification mode", l.Mode)
		}
		if j, ok := logs[l.IUID]; ok {
			return bad(k+".iuid", "a log per IUID", "%d is logs[%d]'s too", l.IUID, j)
		}
		logs[l.IUID] = i
	}
	if len(s.Flushes) > MaxFlushes {
		return bad("flushes", fmt.Sprintf("0..%d flushing pages: the IOMMU's flush buffer", MaxFlushes), "%d flushing pages", len(s.Flushes))
	}
	flushes := map[uint64]int{}
	for i, f := range s.Flushes {
		k := fmt.Sprintf("flushes[%d]", i)
		if _, ok := logs[f.IUID]; !ok {
			return bad(k+".iuid", "the IUID of one of logs", "%d has no log", f.IUID)
		}
		if _, ok := iovas[f.IOVA]; !ok {
			return bad(k+".iova", "the iova of one of pages", "%#x is no page", f.IOVA)
		}
		if j, ok := flushes[f.IOVA]; ok {
			return bad(k+".iova", "a flushing page once", "%#x is flushes[%d]'s too", f.IOVA, j)
		}
		flushes[f.IOVA] = i
	}
	if len(s.Ops) > MaxOps {
		return bad("ops", fmt.Sprintf("0..%d operations", MaxOps), "%d operations", len(s.Ops))
	}
	for i, op := range s.Ops {
		k := fmt.Sprintf("ops[%d]", i)
		if op.Dev < 0 || op.Dev >= len(s.Devices) {
			return bad(k+".dev", fmt.Sprintf("0..%d: an index into devices", len(s.Devices)-1), "%d is no device", op.Dev)
		}
		if _, err := op.TLP.Encode(); err != nil {
			key := k + ".tlp"
			var fe *tlp.FieldError
			if errors.As(err, &fe) {
				if _, ok := reflect.TypeOf(tlp.TLP{}).FieldByName(fe.Field); ok {
					return bad(key+"."+fe.Field, "a TLP that encodes", "%s", fe.Msg)
				}
				return bad(key, "a TLP that encodes", "%s: %s", fe.Field, fe.Msg)
			}
			return bad(key, "a TLP that encodes", "%v", err)
		}
	}
	if err := s.validateChanges(flushes, logs); err != nil {
		return err
	}
	if s.ConsumerNS < 1 || s.ConsumerNS > MaxConsumerNS {
		return bad("consumer_period_ns", fmt.Sprintf("1..%d ns", MaxConsumerNS), "%d is out of range", s.ConsumerNS)
	}
	if s.FaultRecords < 1 || s.FaultRecords > 256 {
		return bad("fault_records", "1..256", "%d is out of range", s.FaultRecords)
	}
	return nil
}

// validateChanges checks the driver calls in order, following which pages
// are mapped, what pages map each large page and which logs registered:
// SetBits and Unmap of a mapped 4 KB page, Map of an unmapped one; split
// and merge of a large page to smaller or larger pages; unregister of a
// registered Poll log without a flushing page, register of one
// unregistered.
func (s *Stimulus) validateChanges(flushes map[uint64]int, logs map[uint16]int) error {
	if len(s.Changes) > MaxChanges {
		return &input.Error{Key: "changes", Problem: fmt.Sprintf("%d changes", len(s.Changes)), Allowed: fmt.Sprintf("0..%d changes", MaxChanges)}
	}
	type state struct {
		mapped bool
		size   uint64 // the page's
		leaf   uint64 // the pages that map it now
	}
	pages := map[[2]uint64]*state{} // (domain, iova)
	for _, p := range s.Pages {
		pages[[2]uint64{uint64(p.Dom()), p.IOVA}] = &state{p.Mapped, p.Bytes(), p.LeafBytes()}
	}
	const bits = pte.R | pte.W | pte.WL | pte.WLD | pte.RL | pte.RLD | pte.E
	unregistered := map[uint16]bool{}
	prev := 0
	for i, c := range s.Changes {
		k := fmt.Sprintf("changes[%d]", i)
		bad := func(key, allowed, format string, a ...any) error {
			return &input.Error{Key: k + key, Problem: fmt.Sprintf(format, a...), Allowed: allowed}
		}
		if c.After < prev || c.After > len(s.Ops) {
			return bad(".after", fmt.Sprintf("%d..%d: an op index, in order", prev, len(s.Ops)), "%d is out of range", c.After)
		}
		prev = c.After
		if c.Racing && c.Kind != "clearfaults" && !c.RacesTables() {
			return bad(".racing", "clearfaults, setbits, map, unmap, split, merge, detach and attach only: a log's removal or registration waits for the log to be quiet", "a %s call cannot race", c.Kind)
		}
		if c.RacesTables() && (c.After < 1 || i > 0 && s.Changes[i-1].After == c.After || i+1 < len(s.Changes) && s.Changes[i+1].After == c.After) {
			return bad(".racing", "a racing setbits, map, unmap, split, merge, detach or attach after a TLP (after >= 1) and alone at its place", "a %s call at op %d races nothing there", c.Kind, c.After)
		}
		switch c.Kind {
		case "detach", "attach":
			if c.Dev < 0 || c.Dev >= len(s.Devices) {
				return bad(".dev", fmt.Sprintf("0..%d: an index into devices", len(s.Devices)-1), "%d is no device", c.Dev)
			}
			continue
		case "clearfaults":
			continue
		case "unregister", "register":
			_, ok := logs[c.IUID]
			switch {
			case !ok:
				return bad(".iuid", "the IUID of one of logs", "%d has no log", c.IUID)
			case (c.Kind == "register") != unregistered[c.IUID]:
				return bad(".kind", "unregister of a registered log, register of an unregistered one", "%s of a log that is %s", c.Kind,
					map[bool]string{true: "unregistered", false: "registered"}[unregistered[c.IUID]])
			case c.Kind == "register" && (c.Size < 64 || c.Size > MaxLogSize || c.Size%8 != 0):
				return bad(".size", fmt.Sprintf("a multiple of 8 from 64 to %d bytes", MaxLogSize), "%d is out of range", c.Size)
			}
			unregistered[c.IUID] = c.Kind == "unregister"
			continue
		case "setbits", "unmap", "map", "split", "merge":
		default:
			return bad(".kind", "setbits, unmap, map, split, merge, detach, attach, unregister, register or clearfaults", "%q is no driver call", c.Kind)
		}
		if c.Domain > 2 {
			return bad(".domain", "1 (or 0) or 2", "%d is no domain", c.Domain)
		}
		pg := pages[[2]uint64{uint64(c.Dom()), c.IOVA}]
		if pg == nil {
			return bad(".iova", "the iova of one of the domain's pages", "%#x is no page of domain %d", c.IOVA, c.Dom())
		}
		if _, ok := flushes[c.IOVA]; ok && c.Dom() == 1 {
			return bad(".iova", "a page that is no flushing page", "%#x is a flushing page", c.IOVA)
		}
		aa := c.Size == 4096 // split and merge: the new pages may carry the AA bits
		switch c.Kind {
		case "split", "merge":
			switch {
			case pg.size == 4096:
				return bad(".iova", "a large page's", "%#x is a 4 KB page", c.IOVA)
			case c.Size != 4096 && c.Size != Page2M && c.Size != Page1G || c.Size > pg.size:
				return bad(".size", "4096, 2097152 (2 MB) or 1073741824 (1 GB), at most the page's size", "%d", c.Size)
			case c.Kind == "split" && c.Size >= pg.leaf:
				return bad(".size", fmt.Sprintf("below %d: the size of the pages that map it now", pg.leaf), "%d is no split", c.Size)
			case c.Kind == "merge" && c.Size <= pg.leaf:
				return bad(".size", fmt.Sprintf("above %d: the size of the pages that map it now", pg.leaf), "%d is no merge", c.Size)
			}
			pg.leaf = c.Size
		default:
			if pg.size != 4096 {
				return bad(".iova", "a 4 KB page's (split or merge a large page)", "%#x is a page of %d bytes", c.IOVA, pg.size)
			}
			if (c.Kind == "map") == pg.mapped {
				return bad(".kind", "setbits or unmap of a mapped page, map of an unmapped one", "%s of a page that is %s", c.Kind, map[bool]string{true: "mapped", false: "not mapped"}[pg.mapped])
			}
			pg.mapped = c.Kind != "unmap"
			if c.Kind == "unmap" {
				continue
			}
			aa = true
		}
		if c.Bits == 0 || c.Bits&^bits != 0 {
			return bad(".bits", "R, W, WL, WLD, RL, RLD and E, at least one", "%#x", c.Bits)
		}
		if !aa && (c.Bits&^(pte.R|pte.W) != 0 || c.IUID != 0) {
			return bad(".bits", "R and W only, IUID 0, on pages larger than 4 KB (the AA bits live in 4 KB leaves)", "%#x, IUID %d", c.Bits, c.IUID)
		}
		if c.IUID > maxIUID {
			return bad(".iuid", "0..1023: 10 bits", "%d is out of range", c.IUID)
		}
	}
	return nil
}
