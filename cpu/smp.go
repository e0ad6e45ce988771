package cpu

import (
	"fmt"
	"math/bits"

	"github.com/aaemu/aaemu/sim"
)

// SMPSpec is the memory system a node's cores share when the node is a
// symmetric multiprocessor: cache-line coherence between the cores'
// caches, and the node's memory bandwidth. Cycle figures are core cycles
// (Spec.PeriodPS).
type SMPSpec struct {
	LineBytes int // coherence unit, a power of two (default 64)
	L2Bytes   int // each core's cache capacity
	L2Ways    int // its associativity, LRU (default 8)

	HitCycles  int // an access to a line the core's cache holds
	MissCycles int // a miss served by memory (no cache holds the line dirty)
	C2CCycles  int // a miss served by another core's cache (it wrote the line last)
	// UpgradeCycles: a store or atomic to a line the core holds and other
	// cores hold too, the bus transaction that takes it exclusive.
	UpgradeCycles int
	// InvalCycles: per copy of the line in another core's cache that a
	// store or atomic invalidates (added to the hit, miss or upgrade).
	InvalCycles int
	CASCycles   int // an atomic (CAS, fetch-and-add) once the line is held exclusively

	// MemoryMBps is the node's aggregate memory bandwidth, shared by every
	// line filled from memory (0: unlimited). MB = 10⁶ bytes.
	MemoryMBps uint64
	// MemcpyMBps is one core's copy bandwidth (Proc.Memcpy); 0: a copy
	// costs its loads and stores, line by line.
	MemcpyMBps uint64
}

// maxSMPCores bounds the cores (and polling threads) of one SMP.
const maxSMPCores = 128

const maxMBps = 1_000_000 // 1 TB/s

// WithDefaults fills the zero line size and associativity.
func (s SMPSpec) WithDefaults() SMPSpec {
	if s.LineBytes == 0 {
		s.LineBytes = 64
	}
	if s.L2Ways == 0 {
		s.L2Ways = 8
	}
	return s
}

// Validate checks the spec (after WithDefaults).
func (s SMPSpec) Validate() error {
	switch {
	case s.LineBytes < 8 || s.LineBytes > 4096 || s.LineBytes&(s.LineBytes-1) != 0:
		return fmt.Errorf("line of %d bytes: want a power of two in 8..4096", s.LineBytes)
	case s.L2Ways < 1 || s.L2Ways > 64:
		return fmt.Errorf("%d ways: want 1..64", s.L2Ways)
	case s.L2Bytes < s.LineBytes*s.L2Ways:
		return fmt.Errorf("cache of %d bytes: want at least one set (%d ways × %d-byte lines)", s.L2Bytes, s.L2Ways, s.LineBytes)
	case s.HitCycles < 0 || s.MissCycles < 0 || s.C2CCycles < 0 || s.UpgradeCycles < 0 || s.InvalCycles < 0 || s.CASCycles < 0:
		return fmt.Errorf("negative cycle figure")
	case s.MemoryMBps > maxMBps || s.MemcpyMBps > maxMBps:
		return fmt.Errorf("bandwidth above %d MB/s", maxMBps)
	}
	return nil
}

// SMP is the coherence directory and memory bandwidth of one node: every
// core attached to it has a private cache, and the SMP keeps, per line,
// which caches hold it, which one wrote it last (its copy is dirty: a
// load elsewhere is a cache-to-cache transfer), and until when a transfer
// or an atomic keeps the line busy (later accesses that need the line wait
// for it: contended atomics serialise). Costs follow a MOESI protocol on a
// snooping bus; memory is a pipelined resource of MemoryMBps.
//
// Like every costed operation, an access takes effect (on memory, and on
// the directory) when the process issues it and costs the time until it
// completes.
type SMP struct {
	spec   SMPSpec
	shift  uint
	lines  directory
	caches []*sim.Cache[uint64, struct{}]
	mem    bandwidth

	stHits, stMem, stC2C, stUpgrades, stInvals, stAtomics, stMemBytes, stWritebacks *sim.Counter
}

// line is the directory entry of one cache line.
type line struct {
	holders holders
	owner   int      // the core whose copy is dirty (it wrote last), -1: memory is current
	busy    sim.Tick // a transfer or an atomic holds the line until then
}

// holders is a set of core indices.
type holders [maxSMPCores / 64]uint64

func (h *holders) add(i int)          { h[i>>6] |= 1 << (i & 63) }
func (h *holders) remove(i int)       { h[i>>6] &^= 1 << (i & 63) }
func (h *holders) has(i int) bool     { return h[i>>6]&(1<<(i&63)) != 0 }
func (h *holders) empty() bool        { return *h == holders{} }
func (h *holders) count() (n int)     { return bits.OnesCount64(h[0]) + bits.OnesCount64(h[1]) }
func (h *holders) each(f func(i int)) { h.eachWord(0, f); h.eachWord(1, f) }

func (h *holders) eachWord(w int, f func(int)) {
	for x := h[w]; x != 0; x &= x - 1 {
		f(w*64 + bits.TrailingZeros64(x))
	}
}

// NewSMP makes the memory system of a node; name prefixes its statistics.
func NewSMP(e *sim.Engine, name string, spec SMPSpec) (*SMP, error) {
	spec = spec.WithDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	s := &SMP{spec: spec, shift: uint(bits.TrailingZeros(uint(spec.LineBytes))), lines: directory{chunks: map[uint64]*dirChunk{}},
		mem: bandwidth{mbps: spec.MemoryMBps}}
	st := e.Stats()
	s.stHits = st.Counter(name+".hits", "accesses", "accesses that hit the core's own cache")
	s.stMem = st.Counter(name+".memory_misses", "accesses", "misses served by memory")
	s.stC2C = st.Counter(name+".c2c", "accesses", "misses served by another core's cache")
	s.stUpgrades = st.Counter(name+".upgrades", "accesses", "stores and atomics to a shared line the core held")
	s.stInvals = st.Counter(name+".invalidations", "lines", "copies invalidated in other cores' caches")
	s.stAtomics = st.Counter(name+".atomics", "operations", "CAS and fetch-and-add")
	s.stMemBytes = st.Counter(name+".memory_bytes", "bytes", "bytes filled from memory")
	s.stWritebacks = st.Counter(name+".writebacks", "lines", "dirty lines evicted to memory")
	return s, nil
}

// Spec is the SMP's spec, defaults filled.
func (s *SMP) Spec() SMPSpec { return s.spec }

// Attach gives core c a private cache in the SMP: its loads, stores,
// atomics and copies are costed by the coherence model from then on.
func (s *SMP) Attach(c *Core) error {
	if c.smp != nil {
		return fmt.Errorf("%s: already in an SMP", c.u.Name())
	}
	if len(s.caches) == maxSMPCores {
		return fmt.Errorf("%s: an SMP holds at most %d cores", c.u.Name(), maxSMPCores)
	}
	sets := s.spec.L2Bytes / s.spec.LineBytes / s.spec.L2Ways
	cache, err := sim.NewCache[uint64, struct{}](sets, s.spec.L2Ways, sim.LRU, func(ln uint64) uint64 { return ln }, nil)
	if err != nil {
		return err
	}
	c.smp, c.smpID = s, len(s.caches)
	s.caches = append(s.caches, cache)
	return nil
}

// SMP is the memory system the core is attached to (nil: none, every
// access costs Spec.MemAccessPS).
func (c *Core) SMP() *SMP { return c.smp }

// SMPCounts are the SMP's counts so far.
type SMPCounts struct {
	Hits, MemoryMisses, C2C, Upgrades, Invalidations, Atomics, MemoryBytes, Writebacks uint64
}

// Counts returns the SMP's counts so far.
func (s *SMP) Counts() SMPCounts {
	return SMPCounts{Hits: s.stHits.Value(), MemoryMisses: s.stMem.Value(), C2C: s.stC2C.Value(), Upgrades: s.stUpgrades.Value(),
		Invalidations: s.stInvals.Value(), Atomics: s.stAtomics.Value(), MemoryBytes: s.stMemBytes.Value(), Writebacks: s.stWritebacks.Value()}
}

// Holders lists the cores (by attach order) whose caches hold the line of
// addr, and the one that holds it dirty (-1: none).
func (s *SMP) Holders(addr uint64) (cores []int, owner int) {
	l := s.lines.find(addr >> s.shift)
	if l == nil {
		return nil, -1
	}
	l.holders.each(func(i int) { cores = append(cores, i) })
	return cores, l.owner
}

// Invalidate drops every cached copy of the lines of [addr, addr+n) (dirty
// ones written back): a device wrote that memory.
func (s *SMP) Invalidate(addr, n uint64) {
	if n == 0 {
		return
	}
	for ln := addr >> s.shift; ln <= (addr+n-1)>>s.shift; ln++ {
		l := s.lines.find(ln)
		if l == nil {
			continue
		}
		l.holders.each(func(i int) { s.caches[i].Invalidate(ln) })
		if l.owner >= 0 {
			s.stWritebacks.Inc()
		}
		l.holders, l.owner = holders{}, -1
	}
}

type accessKind uint8

const (
	accLoad accessKind = iota
	accStore
	accAtomic
)

func (s *SMP) entry(ln uint64) *line { return s.lines.entry(ln) }

// directory holds the lines' entries in chunks of dirChunkLines
// consecutive lines, found through a map of chunks and the last chunk
// used: a copy or a poll touches the same chunk over and over, and a map
// of every line held costs a hash and a cache miss an access. A line no
// cache holds and no transfer keeps busy is a fresh entry (no holders,
// owner -1, busy 0), which behaves as no entry: an access starts at
// max(now, busy) = now.
type directory struct {
	chunks map[uint64]*dirChunk
	lastN  uint64
	last   *dirChunk
}

const dirChunkShift = 8
const dirChunkLines = 1 << dirChunkShift

type dirChunk [dirChunkLines]line

// find is line ln's entry, nil if its chunk was never used.
func (d *directory) find(ln uint64) *line {
	n := ln >> dirChunkShift
	if d.last == nil || d.lastN != n {
		c := d.chunks[n]
		if c == nil {
			return nil
		}
		d.last, d.lastN = c, n
	}
	return &d.last[ln&(dirChunkLines-1)]
}

// entry is line ln's entry, its chunk made if need be.
func (d *directory) entry(ln uint64) *line {
	if l := d.find(ln); l != nil {
		return l
	}
	c := new(dirChunk)
	for i := range c {
		c[i].owner = -1
	}
	n := ln >> dirChunkShift
	d.chunks[n] = c
	d.last, d.lastN = c, n
	return &c[ln&(dirChunkLines-1)]
}

// access performs core id's access of kind k to line ln, issued at now, and
// returns when it completes; period is the core's clock period.
func (s *SMP) access(id int, ln uint64, k accessKind, now, period sim.Tick) sim.Tick {
	sp := &s.spec
	l := s.entry(ln)
	excl := k != accLoad
	start, cycles, busy := now, 0, false
	if l.holders.has(id) {
		s.caches[id].Lookup(ln) // a use, for LRU
		others := l.holders.count() - 1
		switch {
		case !excl:
			s.stHits.Inc()
			cycles = sp.HitCycles
		case others == 0: // held exclusively: a silent upgrade
			s.stHits.Inc()
			if k == accStore {
				cycles = sp.HitCycles
			}
			l.owner = id
		default:
			s.stUpgrades.Inc()
			start, busy = max(now, l.busy), true
			cycles = sp.UpgradeCycles + sp.InvalCycles*s.invalidateOthers(l, ln, id)
			l.owner = id
		}
	} else {
		start = max(now, l.busy)
		if l.owner >= 0 {
			s.stC2C.Inc()
			cycles, busy = sp.C2CCycles, true
		} else {
			s.stMem.Inc()
			s.stMemBytes.Add(uint64(sp.LineBytes))
			start, _ = s.mem.reserve(start, uint64(sp.LineBytes))
			cycles = sp.MissCycles
		}
		if excl {
			cycles += sp.InvalCycles * s.invalidateOthers(l, ln, id)
			l.owner, busy = id, true
		}
		s.fill(id, ln, l, now)
	}
	if k == accAtomic {
		s.stAtomics.Inc()
		cycles += sp.CASCycles
		busy = true
	}
	end := start + sim.Tick(cycles)*period
	if busy {
		l.busy = max(l.busy, end)
	}
	return end
}

// stream is one line of a copy at the core's copy bandwidth: the line
// changes state as a load (src) or store (dst) does, but its latency is
// overlapped with the stream's; it returns the earliest time the line can
// be done: when it is free, and, filled from memory, when the memory has
// moved it.
func (s *SMP) stream(id int, ln uint64, store bool, now sim.Tick) sim.Tick {
	l := s.entry(ln)
	if l.holders.has(id) {
		s.caches[id].Lookup(ln)
		if !store || l.holders.count() == 1 {
			s.stHits.Inc()
			if store {
				l.owner = id
			}
			return now
		}
		s.stUpgrades.Inc()
		s.invalidateOthers(l, ln, id)
		l.owner = id
		return max(now, l.busy)
	}
	t := max(now, l.busy)
	switch {
	case store: // a whole-line store: no fill from memory
		s.invalidateOthers(l, ln, id)
		l.owner = id
	case l.owner >= 0:
		s.stC2C.Inc()
	default:
		s.stMem.Inc()
		s.stMemBytes.Add(uint64(s.spec.LineBytes))
		_, t = s.mem.reserve(t, uint64(s.spec.LineBytes))
	}
	s.fill(id, ln, l, now)
	return t
}

// invalidateOthers drops line ln from every cache but core id's and
// returns how many it dropped.
func (s *SMP) invalidateOthers(l *line, ln uint64, id int) int {
	n := 0
	l.holders.each(func(i int) {
		if i != id {
			s.caches[i].Invalidate(ln)
			l.holders.remove(i)
			n++
		}
	})
	s.stInvals.Add(uint64(n))
	return n
}

// fill puts line ln into core id's cache, evicting the LRU line of its set.
func (s *SMP) fill(id int, ln uint64, l *line, now sim.Tick) {
	l.holders.add(id)
	victim, _, evicted := s.caches[id].Insert(ln, struct{}{})
	if !evicted {
		return
	}
	v := s.lines.find(victim)
	v.holders.remove(id)
	if v.owner == id {
		v.owner = -1
		s.stWritebacks.Inc()
	}
	if v.holders.empty() && v.busy <= now {
		*v = line{owner: -1} // as fresh: no cache holds it, nothing keeps it busy
	}
}

// bandwidth is a pipelined resource moving mbps × 10⁶ bytes a second, one
// transfer after another. Its timeline is kept as whole picoseconds and a
// remainder in units of 1/mbps ps, so that every transfer takes its exact
// share and no product of a time and a rate can overflow.
type bandwidth struct {
	mbps     uint64
	freePS   sim.Tick // when the last transfer ends: freePS + freeFrac/mbps
	freeFrac uint64   // 0..mbps-1
}

// reserve queues n bytes from t and returns when they start and end
// moving (t, t without a limit).
func (b *bandwidth) reserve(t sim.Tick, n uint64) (start, end sim.Tick) {
	if b.mbps == 0 {
		return t, t
	}
	sPS, sFrac := t, uint64(0)
	if b.freePS > t || b.freePS == t && b.freeFrac > 0 {
		sPS, sFrac = b.freePS, b.freeFrac
	}
	// n bytes at mbps MB/s take n × 10^6 / mbps ps.
	num := sFrac + n*1_000_000
	b.freePS, b.freeFrac = sPS+sim.Tick(num/b.mbps), num%b.mbps
	start = sPS
	if sFrac > 0 {
		start++
	}
	end = b.freePS
	if b.freeFrac > 0 {
		end++
	}
	return start, end
}

// --- coherence-costed operations ---

func (p *Proc) waitUntil(t sim.Tick) { p.wait(t - p.Now()) }

// smpAccess costs an access of kind k to every line of [addr, addr+n), one
// after the other.
func (p *Proc) smpAccess(addr uint64, n int, k accessKind) {
	c := p.core
	s := c.smp
	if n <= 0 {
		p.wait(0)
		return
	}
	for ln := addr >> s.shift; ln <= (addr+uint64(n)-1)>>s.shift; ln++ {
		p.waitUntil(s.access(c.smpID, ln, k, p.Now(), c.spec.PeriodPS))
	}
}

// Memcpy copies n bytes of node memory from src to dst (overlapping ranges
// as memmove does). Without an SMP it costs a memory access per 64-byte
// line read and per line written. In an SMP with a copy bandwidth, the
// copy streams at that bandwidth, a line of src at a time: a line filled
// from memory also waits for the node's memory bandwidth, a line another
// core holds dirty comes from its cache (its latency hidden by the
// stream), and dst is written whole lines at a time (no fill). Without a
// copy bandwidth it costs its loads and stores line by line.
func (p *Proc) Memcpy(dst, src, n uint64) {
	c := p.core
	if n == 0 {
		p.wait(0)
		return
	}
	buf := make([]byte, n)
	c.mem.Read(src, buf)
	c.mem.Write(dst, buf)
	s := c.smp
	if s == nil {
		p.wait(c.spec.MemAccessPS * sim.Tick(2*((n+63)/64)))
		return
	}
	if s.spec.MemcpyMBps == 0 {
		p.smpAccess(src, int(n), accLoad)
		p.smpAccess(dst, int(n), accStore)
		return
	}
	start := p.Now()
	for off := uint64(0); off < n; {
		ln := (src + off) >> s.shift
		end := min(n, (ln+1)<<s.shift-src)
		now := p.Now()
		t := start + sim.Tick((end*1_000_000+s.spec.MemcpyMBps-1)/s.spec.MemcpyMBps)
		t = max(t, s.stream(c.smpID, ln, false, now))
		for d := (dst + off) >> s.shift; d <= (dst+end-1)>>s.shift; d++ {
			t = max(t, s.stream(c.smpID, d, true, now))
		}
		p.waitUntil(t)
		off = end
	}
}

// PollLoad64 loads the 64-bit word at addr until until holds for its value,
// and returns the value: a spin on a flag, every check a costed Load64 (in
// an SMP, hits in the core's cache until another core's store takes the
// line).
//
// until may only look (as a Poll condition): while the word's line stays
// in the core's cache, the core itself repeats the loads that hit and
// checks until between them (Core.spinLoad), at the times and with the
// effects the loop's own loads would have, without switching into the
// process for each; a load that misses the process makes itself.
func (p *Proc) PollLoad64(addr uint64, until func(v uint64) bool) uint64 {
	return p.pollLoad64(addr, 0, until)
}

// PollLoad64Every is PollLoad64 with cycles (at least 1) of computation
// between a load whose value fails until and the next load: the loop
//
//	for v = p.Load64(addr); !until(v); v = p.Load64(addr) { p.Compute(cycles) }
//
// (a spin that backs off a little, as a lock's). The core runs the
// computations too while the loads hit, each counted as the loop's
// Compute is.
func (p *Proc) PollLoad64Every(addr uint64, cycles int, until func(v uint64) bool) uint64 {
	if cycles < 1 {
		panic(fmt.Sprintf("cpu: process %s: PollLoad64Every of %d cycles, want at least 1", p.name, cycles))
	}
	return p.pollLoad64(addr, sim.Tick(cycles)*p.core.spec.PeriodPS, until)
}

func (p *Proc) pollLoad64(addr uint64, gap sim.Tick, until func(v uint64) bool) uint64 {
	for {
		v := p.Load64(addr)
		if until(v) {
			return v
		}
		if gap > 0 {
			p.wait(gap)
		}
		s := p.core.smp
		if s == nil || addr>>s.shift != (addr+7)>>s.shift {
			continue
		}
		// The next load is the core's to make, at once.
		p.lspin = &loadSpin{addr: addr, ln: addr >> s.shift, until: until, fresh: true, gap: gap}
		p.wait(0)
		sp := p.lspin
		p.lspin = nil
		if sp.ended {
			return sp.v
		}
		// A load missed: the process makes it (the loop goes on).
	}
}

// loadSpin is a PollLoad64 that the core runs for its process.
type loadSpin struct {
	addr, ln uint64
	until    func(uint64) bool
	fresh    bool     // no load made yet: the first is due where the process stopped
	v        uint64   // the value of the load in flight
	d        sim.Tick // the time the load (or the computation) takes
	ended    bool     // until held for v: the process returns it
	// gap is the computation between a load that failed until and the
	// next (PollLoad64Every; 0: none); computing says it is in flight,
	// so the next step is a load.
	gap       sim.Tick
	computing bool
}

// spinLoad is the core's step of its process's PollLoad64 at now: the
// load in flight ends (until checked on its value) and the next one is
// issued — or, with a gap, the computation after it, then the load. It
// reports whether the core made that step — a hit or the computation,
// costed and counted as the process's own Load64 or Compute is — so that
// the process need not run; false when until held or the load would
// miss: the process goes on (returning the value, or making the load
// itself).
func (c *Core) spinLoad(p *Proc, now sim.Tick) bool {
	sp := p.lspin
	if !sp.fresh && !sp.computing {
		c.inPoll = true
		held := sp.until(sp.v)
		c.inPoll = false
		if held {
			sp.ended = true
			return false
		}
		if sp.gap > 0 {
			sp.computing, sp.d = true, sp.gap
			return true
		}
	}
	end, ok := c.smp.hitLoad(c.smpID, sp.ln, now, c.spec.PeriodPS)
	if !ok {
		return false
	}
	sp.fresh, sp.computing = false, false
	sp.v = c.mem.Load64(sp.addr)
	sp.d = end - now
	return true
}

// hitLoad is core id's load of line ln at now when its cache holds the
// line: the hit costed and counted as access does it. ok is false, with
// nothing changed, when the cache does not hold it.
func (s *SMP) hitLoad(id int, ln uint64, now, period sim.Tick) (end sim.Tick, ok bool) {
	l := s.lines.find(ln)
	if l == nil || !l.holders.has(id) {
		return 0, false
	}
	s.caches[id].Lookup(ln)
	s.stHits.Inc()
	return now + sim.Tick(s.spec.HitCycles)*period, true
}
