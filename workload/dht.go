package workload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// Scheme is how a workload talks to remote memory.
type Scheme string

// Schemes of DESIGN.md §4 that the DHT workload implements.
const (
	AAPoll Scheme = "AA-Poll"
	AAInt  Scheme = "AA-Int"
	AASP   Scheme = "AA-SP"
	RMA    Scheme = "RMA"
	AM     Scheme = "AM"     // active messages: SENDs the target polls for at a fixed interval
	AMExp  Scheme = "AM-Exp" // the same, the polling interval doubling while nothing arrives
	// AMOnload: C cores of every node only run servers, polling without
	// pause; the other cores insert.
	AMOnload Scheme = "AM-Onload"
	// AMInt: the SENDs of AM, but the owner's NIC interrupts the CPU: every
	// QP's receive completions go to one completion queue per node whose
	// events (moderated: an MSI every AMIntCount completions, or AMIntPeriod
	// after the first) run the handler on core 0, as AA-Int's log handler.
	AMInt Scheme = "AM-Int"
)

// ParseScheme reads a scheme name.
func ParseScheme(s string) (Scheme, error) {
	for _, k := range []Scheme{AAPoll, AAInt, AASP, RMA, AM, AMExp, AMOnload, AMInt} {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("scheme %q: want AA-Poll, AA-Int, AA-SP, RMA, AM, AM-Exp, AM-Onload or AM-Int", s)
}

// activeMessages: the scheme sends SENDs to server processes.
// Active says whether the scheme uses Active Access (access logs), which
// needs the extended IOMMU.
func (s Scheme) Active() bool { return s == AAPoll || s == AAInt || s == AASP }

func (s Scheme) activeMessages() bool { return s == AM || s == AMExp || s == AMOnload || s == AMInt }

func (s Scheme) mode() iommu.Notify {
	switch s {
	case AAInt:
		return iommu.Int
	case AASP:
		return iommu.SP
	}
	return iommu.Poll
}

// DHTConfig is the distributed hashtable insert benchmark (DESIGN.md §5).
// With Procs 0 it is the paper's two-node run: one process on node 0
// inserts into the table node 1 owns. With Procs P every node owns a shard
// of the table and runs P inserting processes (one per core), each
// inserting into shards of the other nodes drawn at random.
type DHTConfig struct {
	Scheme     Scheme
	Inserts    int     // keys inserted by each inserting process
	Cells      int     // cells of each shard (a power of two)
	Collisions float64 // fraction of inserts whose cell is already taken
	Compute    int     // cycles of local work between two inserts
	Procs      int     // processes per node; 0: the two-node run
	// OnloadCores: AM-Onload's server cores per node, out of Procs (the
	// other Procs−OnloadCores cores insert).
	OnloadCores int
	Seed        uint64
	// AM: the target's polling interval (default 1 µs; AM-Exp starts at it
	// and doubles up to 64× while nothing arrives).
	PollPS sim.Tick
	// Lookups and Deletes: the fractions of its own keys each process looks
	// up (plain gets walking the cell and its overflow chain, in every
	// scheme) and then deletes (AA: an active put of the key to the shard's
	// delete page; AM: a delete message; RMA: a lookup, then a CAS of the
	// key to a tombstone), once its inserts are in the table.
	Lookups, Deletes float64
	// LogBytes: the size of each owner's access log (AA; default 64 KiB).
	// A smaller log fills sooner and backpressures the puts.
	LogBytes uint64
	// AAIntRecords: AA-Int's interrupt moderation, an MSI once that many
	// insert records are in the log (0 or 1: every record), the rest after
	// the IOMMU's notification interval.
	AAIntRecords int
	// ProcessLogs (AA, Procs > 1): every inserting process owns an access
	// log of its node's shard, as the paper's threads do, instead of one
	// log per node. The table's pages are tagged with the processes' IUIDs
	// in turn, so each process handles the puts to its pages; AA-Poll's
	// process polls its own log on its own core (AA-Int's MSIs still go to
	// core 0, AA-SP's polling hyperthread polls every log).
	ProcessLogs bool
	// AM-Int's completion-event moderation: an interrupt every AMIntCount
	// messages a node receives (default 10, as the paper reports), or
	// AMIntPeriodPS after the first of fewer (default 10 µs, AA-Int's
	// notification interval).
	AMIntCount    int
	AMIntPeriodPS sim.Tick
	// PageZipf, if above 0, gives the keys locality: a new key's cell is
	// drawn in a page of its shard's table chosen by a Zipf law of this
	// exponent over the pages (rank k with weight 1/(k+1)^PageZipf, the
	// ranks scattered over the table), then uniformly in that page. 0
	// draws the cell uniformly, as random keys hash.
	PageZipf float64
}

// Defaults of AM-Int's moderation.
const (
	DefaultAMIntCount  = 10
	DefaultAMIntPeriod = 10 * sim.US
)

// DHT layout in an owner's memory: cells of 32 bytes (key, value, last:
// index+1 of the cell's newest overflow entry, unused), an overflow heap of
// 32-byte entries (key, value, prev: index+1 of the entry linked before it,
// unused), and the heap's next-free counter. A chain is walked from the
// cell's last entry back; an entry is complete before it is linked, so a
// get racing an insert sees the chain as it was or with the new entry.
// A deleted key is overwritten with the tombstone.
const (
	cellSize  = 32
	entrySize = 32
	dhtIUID   = 1
	// procIUID is the first IUID of the per-process logs (ProcessLogs):
	// process k's log is procIUID+k.
	procIUID  = 64
	amBuffers = 16 // receive buffers an AM server keeps posted per peer
	tombstone = ^uint64(0)
)

// DHTResult is what one run measured.
type DHTResult struct {
	Scheme        Scheme  `json:"scheme"`
	Collisions    float64 `json:"collisions"`
	Nodes         int     `json:"nodes"`
	Procs         int     `json:"procs_per_node"`
	Inserts       int     `json:"inserts"` // in total
	SimTimePS     uint64  `json:"sim_time_ps"`
	InsertsPerSec float64 `json:"inserts_per_second"`
	RemoteOps     float64 `json:"remote_ops_per_insert"`
	TLPs          float64 `json:"pcie_tlps_per_insert"`
	WireBytes     float64 `json:"wire_bytes_per_insert"`
	// TargetPolls counts the AM targets' polls of their receive queues
	// (empty or not): the CPU time active messages take from the targets.
	TargetPolls int     `json:"target_polls,omitempty"`
	Lookups     int     `json:"lookups,omitempty"`
	Deletes     int     `json:"deletes,omitempty"`
	OpsPerSec   float64 `json:"ops_per_second,omitempty"`
	// NICEnergyJ: the NICs' energy over the run (Spec.Power: idle power
	// throughout, active power while sending).
	NICEnergyJ float64 `json:"nic_energy_j"`
	// IOTLBHitRate: the IOTLB lookups that hit, over every node's IOMMU.
	IOTLBHitRate float64 `json:"iotlb_hit_rate"`
	// IOTLBByKind: the IOTLB's hits and misses by the kind of page looked
	// up, over every node (machine.iommu.iotlb_by_kind), in
	// machine.PageKinds' order and then the unlabelled ("other"); kinds
	// with no lookups are left out.
	IOTLBByKind []KindLookups `json:"iotlb_by_kind,omitempty"`
	// RouterEnergyJ: the switches' energy for the bytes they forwarded
	// (none on a direct link).
	RouterEnergyJ float64 `json:"router_energy_j"`
	// Interrupts counts AM-Int's completion interrupts (handler runs).
	Interrupts int  `json:"interrupts,omitempty"`
	Verified   bool `json:"verified"`
}

// KindLookups are the IOTLB lookups of one kind of page.
type KindLookups struct {
	Kind   string `json:"kind"`
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
}

// HitRate is the share of the lookups that hit (0 without lookups).
func (k KindLookups) HitRate() float64 {
	if k.Hits+k.Misses == 0 {
		return 0
	}
	return float64(k.Hits) / float64(k.Hits+k.Misses)
}

// shard is one owner's part of the table.
type shard struct {
	node                  int
	table, heap, nextFree uint64
	keys                  []uint64        // inserted into this shard, in generation order
	gen                   *cellGens       // key generation: keys drawn per cell so far
	usedList              []int           // the cells taken, in order
	hot                   *hotPages       // PageZipf: the pages' ranks and fill
	del                   uint64          // AA: the delete page
	deleted               map[uint64]bool // keys deleted from this shard
	// verdict is verifyShard's error ("" for none) as the rank that ran the
	// shard's node found it (over ranks only).
	verdict *string
}

// source is one inserting process and its keys.
type source struct {
	node, core int
	keys       []uint64
	owners     []int32 // the shard of each key (int32: a 1,024-node run holds millions)
	lookups    []int   // indices of keys it looks up, then
	deletes    []int   // of keys it deletes
	// AA: the logs it put to, a bit per (owner, log) (owner × logs + log),
	// which its flush waits for: a bit set, not a slice per owner, because a
	// process of a 1,024-node run touches hundreds of owners.
	touched []uint64
}

// touch notes an active put of s to owner's log k.
func (s *source) touch(owner, k, logs int) {
	i := owner*logs + k
	for len(s.touched) <= i/64 {
		s.touched = append(s.touched, 0)
	}
	s.touched[i/64] |= 1 << (i % 64)
}

// hasTouched reports whether s put to owner's log k.
func (s *source) hasTouched(owner, k, logs int) bool {
	i := owner*logs + k
	return i/64 < len(s.touched) && s.touched[i/64]&(1<<(i%64)) != 0
}

// dhtTally is what one node's processes counted.
type dhtTally struct {
	ops, polls, irqs int
	end              sim.Tick
	bad              []string // lookups or deletes that went wrong
	started          int      // operations started (progress)
}

// tally is the counts of x's node.
func (d *DHT) tally(x *aa.Ctx) *dhtTally { return &d.tallies[x.N.ID] }

type DHT struct {
	cfg     DHTConfig
	c       *aa.System
	shards  []*shard // by node; nil where a node owns none
	sources []*source
	expect  [][][]int // expect[owner][core][src node]: AM messages a server awaits
	flags   []uint64  // by node: a word per (core, owner) the AM servers set when done
	// tallies are counted per node, each by its own node's processes: the
	// nodes may run on several goroutines (partitions).
	tallies []dhtTally
	// dels[owner][core][src node]: delete messages among an AM server's
	// expected ones, which come after the lane's inserts.
	dels     [][][]int
	lookups  int
	deletes  int
	iuids    []uint16 // AA: the logs of every shard (one, or one per process)
	progress opProgress
}

// pageIUID is the log of the table page at byte offset off: the processes'
// logs take the pages in turn.
func (d *DHT) pageIUID(off uint64) uint16 { return d.iuids[d.pageLog(off)] }

func (d *DHT) pageLog(off uint64) int { return int(off/4096) % len(d.iuids) }

// SetupDHT builds the shards and the inserting processes. Run the cluster,
// then call Result.
func SetupDHT(c *aa.System, cfg DHTConfig) (*DHT, error) {
	if cfg.Cells < 1 || cfg.Cells&(cfg.Cells-1) != 0 {
		return nil, fmt.Errorf("dht cells: %d is not a power of two", cfg.Cells)
	}
	if cfg.Inserts < 1 || cfg.Collisions < 0 || cfg.Collisions > 1 {
		return nil, fmt.Errorf("dht: inserts %d, collisions %v", cfg.Inserts, cfg.Collisions)
	}
	if cfg.Lookups < 0 || cfg.Lookups > 1 || cfg.Deletes < 0 || cfg.Deletes > 1 {
		return nil, fmt.Errorf("dht: lookups %v and deletes %v are fractions of the keys (0..1)", cfg.Lookups, cfg.Deletes)
	}
	if cfg.Procs < 0 || cfg.Procs > c.Spec.Cores {
		return nil, fmt.Errorf("dht procs: %d per node, but nodes have %d cores", cfg.Procs, c.Spec.Cores)
	}
	if cfg.PollPS == 0 {
		cfg.PollPS = sim.US
	}
	if cfg.LogBytes == 0 {
		cfg.LogBytes = 64 << 10
	}
	if cfg.AAIntRecords < 0 || uint64(cfg.AAIntRecords)*uint64(record.Size(16)) > cfg.LogBytes/2 {
		return nil, fmt.Errorf("dht: AA-Int moderation of %d records, want 0..%d (half the %d-byte log)", cfg.AAIntRecords, cfg.LogBytes/2/uint64(record.Size(16)), cfg.LogBytes)
	}
	if cfg.AMIntCount == 0 {
		cfg.AMIntCount = DefaultAMIntCount
	}
	if cfg.AMIntPeriodPS == 0 {
		cfg.AMIntPeriodPS = DefaultAMIntPeriod
	}
	if cfg.PageZipf < 0 || cfg.PageZipf > 10 || math.IsNaN(cfg.PageZipf) {
		return nil, fmt.Errorf("dht: page Zipf exponent %v, want 0..10 (0: uniform keys)", cfg.PageZipf)
	}
	if cfg.AMIntCount < 1 {
		return nil, fmt.Errorf("dht: AM-Int moderation count %d, want at least 1", cfg.AMIntCount)
	}
	d := &DHT{cfg: cfg, c: c, shards: make([]*shard, len(c.Nodes)), iuids: []uint16{dhtIUID}, tallies: make([]dhtTally, len(c.Nodes))}
	if cfg.ProcessLogs && cfg.Scheme.Active() && cfg.Procs > 1 {
		if fb := c.Spec.IOMMU.FlushBufferEntries; fb < cfg.Procs {
			return nil, fmt.Errorf("dht: a log per process needs %d flushing pages, the IOMMU's flush buffer holds %d (machine.iommu.flush_buffer_entries)", cfg.Procs, fb)
		}
		d.iuids = nil
		for k := 0; k < cfg.Procs; k++ {
			d.iuids = append(d.iuids, procIUID+uint16(k))
		}
	}
	d.makeKeys()
	// Over ranks, each node's counts and its shard's verdict are read
	// where the node ran and kept on every rank (sim.World.Sync).
	for i, n := range c.Nodes {
		n.Eng.Keep(&tallyState{t: &d.tallies[i]})
		if sh := d.shards[i]; sh != nil {
			n.Eng.Keep(&verdictState{d: d, sh: sh})
		}
	}
	am := cfg.Scheme.activeMessages()
	if cfg.Scheme == AMOnload && (cfg.Procs < 2 || cfg.OnloadCores < 1 || cfg.OnloadCores >= cfg.Procs) {
		return nil, fmt.Errorf("dht: AM-Onload needs procs per node ≥ 2 and 1 ≤ onload cores < procs (have %d of %d)", cfg.OnloadCores, cfg.Procs)
	}
	rw := iommu.Perm{Bits: pte.R | pte.W}
	for _, sh := range d.shards {
		if sh == nil {
			continue
		}
		owner := c.Nodes[sh.node]
		sh.table = owner.Alloc(uint64(cfg.Cells * cellSize))
		sh.heap = owner.Alloc(uint64(max(len(sh.keys), 1) * entrySize))
		sh.nextFree = owner.Alloc(4096)
		for _, r := range [][2]uint64{{sh.table, uint64(cfg.Cells * cellSize)}, {sh.heap, uint64(max(len(sh.keys), 1) * entrySize)}, {sh.nextFree, 4096}} {
			if err := owner.Label(r[0], r[1], machine.KindTable); err != nil {
				return nil, err
			}
		}
		if cfg.Scheme == RMA || am {
			for _, r := range [][2]uint64{{sh.table, uint64(cfg.Cells * cellSize)}, {sh.heap, uint64(max(len(sh.keys), 1) * entrySize)}, {sh.nextFree, 4096}} {
				if err := owner.Register(r[0], r[1], rw); err != nil {
					return nil, err
				}
			}
			continue
		}
		// The table's pages are active: a put is logged with its data and
		// never written (W=0, WL=1, WLD=1); the handler inserts locally.
		sh := sh
		thresh := uint32(max(cfg.AAIntRecords, 1) * record.Size(16))
		for k, iuid := range d.iuids {
			opt := aa.LogOptions{Threshold: thresh}
			if d.cfg.ProcessLogs {
				opt.Core = k // the owning process's core
			}
			if _, err := owner.CreateLogWith(iuid, cfg.LogBytes, cfg.Scheme.mode(), opt, func(x *aa.Ctx, r aa.Record) { d.handle(x, sh, r) }); err != nil {
				return nil, err
			}
			if _, err := owner.CreateFlushPage(iuid); err != nil {
				return nil, err
			}
		}
		bits := pte.WL | pte.WLD | pte.E
		if cfg.Lookups > 0 || cfg.Deletes > 0 {
			bits |= pte.R // lookups read it with plain gets (RL=0: not logged)
		}
		tableBytes := uint64(cfg.Cells * cellSize)
		if len(d.iuids) == 1 {
			if err := owner.Register(sh.table, tableBytes, iommu.Perm{Bits: bits, IUID: d.iuids[0]}); err != nil {
				return nil, err
			}
		} else {
			for off := uint64(0); off < tableBytes; off += 4096 {
				if err := owner.Register(sh.table+off, 4096, iommu.Perm{Bits: bits, IUID: d.pageIUID(off)}); err != nil {
					return nil, err
				}
			}
		}
		if cfg.Lookups > 0 || cfg.Deletes > 0 {
			// Lookups read the heap too; deletes are active puts to the
			// delete page, logged like inserts.
			if err := owner.Register(sh.heap, uint64(max(len(sh.keys), 1)*entrySize), iommu.Perm{Bits: pte.R}); err != nil {
				return nil, err
			}
			sh.del = owner.Alloc(4096)
			if err := owner.Register(sh.del, 4096, iommu.Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: d.iuids[0]}); err != nil {
				return nil, err
			}
		}
	}
	if am {
		setup := d.setupAM
		if cfg.Scheme == AMInt {
			setup = d.setupAMInt
		}
		if err := setup(); err != nil {
			return nil, err
		}
	}
	for _, s := range d.sources {
		n := c.Nodes[s.node]
		buf := n.Alloc(256 * 16) // the process's own message slots
		if err := n.Register(buf, 256*16, rw); err != nil {
			return nil, err
		}
		scratch := n.Alloc(4096)
		if err := n.Register(scratch, 4096, rw); err != nil {
			return nil, err
		}
		if err := n.Label(buf, 256*16, machine.KindPayload); err != nil {
			return nil, err
		}
		if err := n.Label(scratch, 4096, machine.KindPayload); err != nil {
			return nil, err
		}
		s := s
		n.Spawn(s.core, fmt.Sprintf("dht_insert%d", s.core), func(x *aa.Ctx) { d.insertAll(x, s, buf, scratch) })
	}
	return d, nil
}

// makeKeys draws every process's keys and owners, so that the given
// fraction of each shard's inserts lands in an occupied cell. The hash of
// key k is k mod Cells.
func (d *DHT) makeKeys() {
	n := len(d.c.Nodes)
	if d.cfg.Procs == 0 {
		d.shards[1] = &shard{node: 1}
		d.sources = []*source{{node: 0, core: 0}}
	} else {
		for i := range d.shards {
			d.shards[i] = &shard{node: i}
		}
		inserters := d.cfg.Procs
		if d.cfg.Scheme == AMOnload {
			inserters -= d.cfg.OnloadCores
		}
		for node := 0; node < n; node++ {
			for core := 0; core < inserters; core++ {
				d.sources = append(d.sources, &source{node: node, core: core})
			}
		}
	}
	r := sim.NewRand(d.cfg.Seed, "dht.keys")
	cells := d.cfg.Cells
	var zipf *zipfTable
	if d.cfg.PageZipf > 0 {
		zipf = newZipfTable(max(cells*cellSize/4096, 1), d.cfg.PageZipf)
	}
	// How many keys each shard takes: its list is filled after the draws,
	// in the same order (source by source), at its final length rather
	// than grown through every shorter one.
	perShard := make([]int, len(d.shards))
	for _, s := range d.sources {
		s.keys = make([]uint64, 0, d.cfg.Inserts)
		s.owners = make([]int32, 0, d.cfg.Inserts)
		for i := 0; i < d.cfg.Inserts; i++ {
			owner := 1
			if d.cfg.Procs > 0 {
				owner = (s.node + 1 + r.IntN(n-1)) % n // another node's shard
			}
			sh := d.shards[owner]
			if sh.gen == nil {
				sh.gen = newCellGens(cells)
			}
			var cell int
			if len(sh.usedList) > 0 && (r.Float64() < d.cfg.Collisions || len(sh.usedList) == cells) {
				cell = sh.usedList[r.IntN(len(sh.usedList))]
			} else if d.cfg.PageZipf > 0 {
				if sh.hot == nil {
					sh.hot = newHotPages(zipf, cells, r)
				}
				cell = sh.hot.draw(r, sh.gen)
				sh.usedList = append(sh.usedList, cell)
			} else {
				for {
					cell = r.IntN(cells)
					if sh.gen.get(cell) == 0 {
						break
					}
				}
				sh.usedList = append(sh.usedList, cell)
			}
			key := uint64(cell) + uint64(cells)*sh.gen.inc(cell) // never 0, unique in the shard
			perShard[owner]++
			s.keys = append(s.keys, key)
			s.owners = append(s.owners, int32(owner))
		}
	}
	// What drew the keys is not needed again: a 1,024-node run would hold
	// it all run long.
	for i, sh := range d.shards {
		if sh != nil {
			sh.gen, sh.usedList, sh.hot = nil, nil, nil
			sh.keys = make([]uint64, 0, perShard[i])
		}
	}
	for _, s := range d.sources {
		for i, key := range s.keys {
			sh := d.shards[s.owners[i]]
			sh.keys = append(sh.keys, key)
		}
	}
	// A stream of its own, so that the keys are the same with or without
	// lookups and deletes.
	ro := sim.NewRand(d.cfg.Seed, "dht.lookups_deletes")
	for _, s := range d.sources {
		for i, key := range s.keys {
			if d.cfg.Lookups > 0 && ro.Float64() < d.cfg.Lookups {
				s.lookups = append(s.lookups, i)
			}
			if d.cfg.Deletes > 0 && ro.Float64() < d.cfg.Deletes {
				s.deletes = append(s.deletes, i)
				sh := d.shards[s.owners[i]]
				if sh.deleted == nil {
					sh.deleted = map[uint64]bool{}
				}
				sh.deleted[key] = true
			}
		}
		d.lookups += len(s.lookups)
		d.deletes += len(s.deletes)
	}
}

// zipfTable draws ranks 0..n-1 with weights 1/(k+1)^s: the cumulative
// weights, searched.
type zipfTable struct{ cum []float64 }

func newZipfTable(n int, s float64) *zipfTable {
	z := &zipfTable{cum: make([]float64, n)}
	sum := 0.0
	for k := range z.cum {
		sum += math.Pow(float64(k+1), -s)
		z.cum[k] = sum
	}
	return z
}

func (z *zipfTable) draw(r *sim.Rand) int {
	u := r.Float64() * z.cum[len(z.cum)-1]
	k, _ := slices.BinarySearch(z.cum, u)
	return min(k, len(z.cum)-1)
}

// hotPages is a shard's pages under PageZipf: rank k is page (k·mul + off)
// mod pages, an odd multiplier and a random offset scattering the hot
// pages over the table (a bijection: pages is a power of two), and each
// page's taken cells.
type hotPages struct {
	z              *zipfTable
	pages, perPage int
	mul, off       int
	used           []uint8 // cells taken a page (perPage ≤ 128)
}

func newHotPages(z *zipfTable, cells int, r *sim.Rand) *hotPages {
	pages := len(z.cum)
	return &hotPages{z: z, pages: pages, perPage: cells / pages, mul: 2*r.IntN(max(pages/2, 1)) + 1, off: r.IntN(pages), used: make([]uint8, pages)}
}

// draw picks a free cell: a page by rank (the next rank's page while a
// page is full), then a free cell of it uniformly.
func (h *hotPages) draw(r *sim.Rand, gen *cellGens) int {
	k := h.z.draw(r)
	page := 0
	for range h.pages {
		page = (k*h.mul + h.off) % h.pages
		if int(h.used[page]) < h.perPage {
			break
		}
		k = (k + 1) % h.pages
	}
	h.used[page]++
	for {
		cell := page*h.perPage + r.IntN(h.perPage)
		if gen.get(cell) == 0 {
			return cell
		}
	}
}

// cellGens counts the keys drawn for each cell of a shard (0: the cell is
// free): a slice for a small table, a map of the cells used for a large
// one, so that drawing the keys allocates for the keys, not for the table.
type cellGens struct {
	dense  []uint64
	sparse map[int]uint64
}

// denseCells is the largest table whose counts are a slice (512 KiB).
const denseCells = 1 << 16

func newCellGens(cells int) *cellGens {
	if cells <= denseCells {
		return &cellGens{dense: make([]uint64, cells)}
	}
	return &cellGens{sparse: map[int]uint64{}}
}

func (g *cellGens) get(cell int) uint64 {
	if g.dense != nil {
		return g.dense[cell]
	}
	return g.sparse[cell]
}

// inc counts one more key of the cell and returns the count.
func (g *cellGens) inc(cell int) uint64 {
	if g.dense != nil {
		g.dense[cell]++
		return g.dense[cell]
	}
	g.sparse[cell]++
	return g.sparse[cell]
}

func (d *DHT) cell(sh *shard, key uint64) uint64 {
	return sh.table + (key%uint64(d.cfg.Cells))*cellSize
}

func value(key uint64) uint64 { return key*0x9e3779b97f4a7c15 | 1 }

// dhtSlots is the 16-byte slots of an inserting process's send buffer,
// used in turn.
const dhtSlots = 256

// insertAll is an inserting process.
func (d *DHT) insertAll(x *aa.Ctx, s *source, buf, scratch uint64) {
	sent := make([]bool, len(d.c.Nodes))
	// inFlight is the put or send that last used each slot of buf.
	var inFlight []verbs.WR
	if len(s.keys) > dhtSlots && d.cfg.Scheme != RMA {
		inFlight = make([]verbs.WR, dhtSlots)
	}
	for i, key := range s.keys {
		owner := int(s.owners[i])
		sh := d.shards[owner]
		sent[owner] = true
		x.P.Op("dht.insert")
		d.tally(x).started++
		if d.cfg.Compute > 0 {
			x.P.Compute(d.cfg.Compute)
		}
		if d.cfg.Scheme == RMA {
			d.insertRMA(x, sh, key, scratch)
			continue
		}
		k := i % dhtSlots
		slot := buf + uint64(k)*16
		if i >= dhtSlots {
			// The slot's last put must be done before the slot is written
			// again: with puts to many owners outstanding (more than a
			// send queue holds, or completed out of order), it may not be.
			if _, err := x.Wait(inFlight[k]); err != nil {
				t := d.tally(x)
				t.bad = append(t.bad, fmt.Sprintf("key %d's slot: %v", s.keys[i-dhtSlots], err))
			}
		}
		x.P.Store64(slot, key)
		x.P.Store64(slot+8, value(key))
		var wr verbs.WR
		if d.cfg.Scheme.activeMessages() {
			wr = x.Send(owner, slot, 16) // one message per insert
		} else {
			wr = x.Put(owner, slot, d.cell(sh, key), 16) // one active put per insert
			s.touch(owner, d.pageLog(d.cell(sh, key)-sh.table), len(d.iuids))
		}
		if inFlight != nil {
			inFlight[k] = wr
		}
		d.tally(x).ops++
	}
	d.waitDone(x, s, sent, 1)
	if len(s.lookups) > 0 || len(s.deletes) > 0 {
		d.lookupsAndDeletes(x, s, buf, scratch)
	}
	t := d.tally(x)
	t.end = max(t.end, x.Now())
}

// lookupsAndDeletes is a process's second phase: its keys are in the table
// (its inserts were flushed); it looks some up, then deletes some and waits
// until the deletes are done.
func (d *DHT) lookupsAndDeletes(x *aa.Ctx, s *source, buf, scratch uint64) {
	for _, i := range s.lookups {
		key, sh := s.keys[i], d.shards[s.owners[i]]
		x.P.Op("dht.lookup")
		d.tally(x).started++
		if d.cfg.Compute > 0 {
			x.P.Compute(d.cfg.Compute)
		}
		_, val, ok := d.lookup(x, sh, key, scratch)
		switch {
		case !ok:
			d.tally(x).bad = append(d.tally(x).bad, fmt.Sprintf("key %d: not found on node %d", key, sh.node))
		case val != value(key):
			d.tally(x).bad = append(d.tally(x).bad, fmt.Sprintf("key %d: value %#x", key, val))
		}
	}
	sent := make([]bool, len(d.c.Nodes))
	for k, i := range s.deletes {
		key, owner := s.keys[i], int(s.owners[i])
		sh := d.shards[owner]
		x.P.Op("dht.delete")
		d.tally(x).started++
		if d.cfg.Compute > 0 {
			x.P.Compute(d.cfg.Compute)
		}
		sent[owner] = true
		if d.cfg.Scheme == RMA {
			addr, _, ok := d.lookup(x, sh, key, scratch)
			if !ok {
				d.tally(x).bad = append(d.tally(x).bad, fmt.Sprintf("key %d: not found to delete on node %d", key, sh.node))
				continue
			}
			x.CAS(owner, addr, key, tombstone)
			d.tally(x).ops++
			continue
		}
		slot := buf + uint64(k%256)*16
		x.P.Store64(slot, key)
		x.P.Store64(slot+8, 0) // no value: a delete
		if d.cfg.Scheme.activeMessages() {
			x.Send(owner, slot, 16)
		} else {
			x.Put(owner, slot, sh.del+(key%256)*16, 16)
			s.touch(owner, 0, len(d.iuids)) // the delete page is the first log's
		}
		d.tally(x).ops++
	}
	d.waitDone(x, s, sent, 2)
}

// waitDone returns when the owners the process sent to have performed it
// all: RMA's operations completed as they went; AA flushes and
// active-flushes each owner's log; with active messages each owner's server
// sets the process's flag to phase (1: its inserts, 2: its deletes too).
func (d *DHT) waitDone(x *aa.Ctx, s *source, sent []bool, phase uint64) {
	if d.cfg.Scheme == RMA {
		return
	}
	x.P.Op("dht.flush")
	for owner, ok := range sent {
		switch {
		case !ok:
		case d.cfg.Scheme.activeMessages():
			flag := d.flagAddr(s.node, s.core, owner)
			// The flag is written only by the owner's put: a watched
			// word, so a core with nothing else to do sleeps until it.
			x.P.PollWord(flag, func(v uint64) bool { return v >= phase })
		default:
			// The puts' completions (an RMA flush), then one flush(owner)
			// over every log of owner's this process put to: the flushing pages' gets go out together and are waited
			// for together, not one round trip after another (DESIGN.md
			// §2.6 asks that flush(target) return once the target's
			// handlers have taken the caller's accesses, nothing more).
			x.Flush(owner)
			var logs []uint16
			for k, iuid := range d.iuids {
				if s.hasTouched(owner, k, len(d.iuids)) {
					logs = append(logs, iuid)
				}
			}
			x.ActiveFlushLogs(owner, logs)
		}
	}
}

// lookup finds key in sh with plain gets: the cell, then its overflow chain
// from the newest entry back. It returns the address of the key's word and
// its value.
func (d *DHT) lookup(x *aa.Ctx, sh *shard, key, scratch uint64) (addr, val uint64, ok bool) {
	o := sh.node
	get := func(remote uint64) (k, v, link uint64) {
		x.Wait(x.Get(o, scratch, remote, 24))
		d.tally(x).ops++
		return x.P.Load64(scratch), x.P.Load64(scratch + 8), x.P.Load64(scratch + 16)
	}
	cell := d.cell(sh, key)
	k, v, e := get(cell)
	if k == key {
		return cell, v, true
	}
	for n := 0; e != 0; n++ {
		if n > len(sh.keys) {
			return 0, 0, false // a cycle: the chain is broken
		}
		a := sh.heap + (e-1)*entrySize
		if k, v, e = get(a); k == key {
			return a, v, true
		}
	}
	return 0, 0, false
}

// setupAM gives every owner a server process per inserting core: it serves
// the messages of the processes on that core of the other nodes (they share
// a connection), and sets each one's flag when it has handled them all.
func (d *DHT) setupAM() error {
	cores := max(d.cfg.Procs, 1)
	if err := d.setupExpectAndFlags(); err != nil {
		return err
	}
	rw := iommu.Perm{Bits: pte.R | pte.W}
	// Which inserting cores' connections each server serves, and where it
	// runs: AM and AM-Exp, a server on every inserting core for that core;
	// AM-Onload, C dedicated cores sharing the inserting cores among them.
	type server struct {
		core  int
		lanes []int
	}
	var servers []server
	if d.cfg.Scheme == AMOnload {
		ins := d.cfg.Procs - d.cfg.OnloadCores
		for s := 0; s < d.cfg.OnloadCores; s++ {
			sv := server{core: ins + s}
			for k := s; k < ins; k += d.cfg.OnloadCores {
				sv.lanes = append(sv.lanes, k)
			}
			servers = append(servers, sv)
		}
	} else {
		for k := 0; k < cores; k++ {
			servers = append(servers, server{core: k, lanes: []int{k}})
		}
	}
	for _, sh := range d.shards {
		if sh == nil {
			continue
		}
		owner := d.c.Nodes[sh.node]
		for _, sv := range servers {
			var lanes []*amLane
			for _, k := range sv.lanes {
				l, err := d.newLane(sh, k)
				if err != nil {
					return err
				}
				if l != nil {
					lanes = append(lanes, l)
				}
			}
			if len(lanes) == 0 {
				continue
			}
			one := owner.Alloc(4096)
			if err := owner.Register(one, 4096, rw); err != nil {
				return err
			}
			sh := sh
			owner.Spawn(sv.core, fmt.Sprintf("dht_am_server%d", sv.core), func(x *aa.Ctx) { d.serveAM(x, sh, lanes, one) })
		}
	}
	return nil
}

// setupExpectAndFlags counts the messages every owner's server awaits per
// (core, source node), and gives every node its done flags: a word per
// (core, owner), written by the owners.
func (d *DHT) setupExpectAndFlags() error {
	n := len(d.c.Nodes)
	cores := max(d.cfg.Procs, 1)
	d.expect = make([][][]int, n)
	for i := range d.expect {
		d.expect[i] = make([][]int, cores)
		for k := range d.expect[i] {
			d.expect[i][k] = make([]int, n)
		}
	}
	d.dels = make([][][]int, n)
	for i := range d.dels {
		d.dels[i] = make([][]int, cores)
		for k := range d.dels[i] {
			d.dels[i][k] = make([]int, n)
		}
	}
	for _, s := range d.sources {
		for _, o := range s.owners {
			d.expect[o][s.core][s.node]++
		}
		for _, i := range s.deletes {
			d.expect[s.owners[i]][s.core][s.node]++
			d.dels[s.owners[i]][s.core][s.node]++
		}
	}
	rw := iommu.Perm{Bits: pte.R | pte.W}
	for _, node := range d.c.Nodes {
		a := node.Alloc(uint64(cores * n * 8))
		if err := node.Register(a, uint64(cores*n*8), rw); err != nil {
			return err
		}
		d.flags = append(d.flags, a)
	}
	return nil
}

// flagAddr is the word on node that owner's server for core sets.
func (d *DHT) flagAddr(node, core, owner int) uint64 {
	return d.flags[node] + uint64(core*len(d.c.Nodes)+owner)*8
}

// amLane is a server's share of one inserting core's connections: their
// receive buffers, and how many of each source's messages are deletes.
type amLane struct {
	*amRecv
	dels []int // of the messages expected, deletes (they come last), by source node
}

// newLane gives owner sh's server the receive buffers of core k's
// connections, or nil when none of them sends it anything.
func (d *DHT) newLane(sh *shard, k int) (*amLane, error) {
	r, err := newAMRecv(d.c, d.c.Nodes[sh.node], k, d.expect[sh.node][k], 16)
	if r == nil || err != nil {
		return nil, err
	}
	return &amLane{amRecv: r, dels: d.dels[sh.node][k]}, nil
}

// amMessage performs one active message: an insert, or a delete (values
// are odd, so 0 marks a delete).
func (d *DHT) amMessage(x *aa.Ctx, sh *shard, msg []byte) {
	if key, val := le64(msg), le64(msg[8:]); val == 0 {
		d.deleteLocal(x, sh, key)
	} else {
		d.insertLocal(x, sh, d.cell(sh, key), key, val)
	}
}

// flag says which word to put into src's done flag after a message from
// src: a peer waits for 1 (at one) after its inserts and for 2 (at one+8)
// after its deletes, which come last on its connection.
func (l *amLane) flag(src int, one uint64) (uint64, bool) {
	switch {
	case l.left[src] == 0 && l.dels[src] > 0:
		return one + 8, true
	case l.left[src] == l.dels[src]:
		return one, true
	}
	return 0, false
}

// serveAM is an owner's active-message server for the inserting processes
// of its lanes' cores on the other nodes: it keeps receive buffers posted,
// polls for messages (AM: every PollPS; AM-Exp: the interval doubling while
// nothing arrives; AM-Onload: without pause, on its own core), inserts each
// key locally and, when a peer's messages are all handled, sets that peer's
// done flag with a put.
func (d *DHT) serveAM(x *aa.Ctx, sh *shard, lanes []*amLane, one uint64) {
	remaining := 0
	for _, l := range lanes {
		l.postAll(x)
		remaining += l.expectAll
	}
	x.P.Store64(one, 1)   // a peer's inserts are done
	x.P.Store64(one+8, 2) // and its deletes
	interval := d.cfg.PollPS
	msg := make([]byte, 16)
	for remaining > 0 {
		got := false
		for _, l := range lanes {
			polls, any := l.poll(x, func(src int, slot uint64) {
				x.P.Read(slot, msg)
				d.amMessage(x, sh, msg)
				remaining--
			}, func(src int) {
				if w, ok := l.flag(src, one); ok {
					x.OnCore(l.core).Put(src, w, d.flagAddr(src, l.core, sh.node), 8)
				}
			})
			d.tally(x).polls += polls
			got = got || any
		}
		if got || d.cfg.Scheme == AMOnload {
			interval = d.cfg.PollPS
			continue
		}
		x.P.Sleep(interval) // the process's own work until the next poll
		if d.cfg.Scheme == AMExp && interval < 64*d.cfg.PollPS {
			interval *= 2
		}
	}
}

// insertRMA: CAS the key into the cell; on a collision take an overflow
// entry (FAO), write it (put + flush), and link it: CAS the cell's last
// pointer, then put the previous entry's next pointer (+ flush).
func (d *DHT) insertRMA(x *aa.Ctx, sh *shard, key, scratch uint64) {
	cell, o := d.cell(sh, key), sh.node
	old, _ := x.CAS(o, cell, 0, key)
	d.tally(x).ops++
	if old == 0 {
		x.P.Store64(scratch, value(key))
		x.Put(o, scratch, cell+8, 8)
		x.Flush(o)
		d.tally(x).ops += 2
		return
	}
	idx, _ := x.FetchAdd(o, sh.nextFree, 1)
	e := sh.heap + idx*entrySize
	x.P.Store64(scratch, key)
	x.P.Store64(scratch+8, value(key))
	x.P.Store64(scratch+16, 0)
	x.Put(o, scratch, e, 24)
	x.Flush(o)
	d.tally(x).ops += 3
	expect := uint64(0) // the entry is written, linked to nothing yet
	for {
		prev, _ := x.CAS(o, cell+16, expect, idx+1)
		d.tally(x).ops++
		if prev == expect {
			return
		}
		// Another entry was linked first: point at it, then try again.
		expect = prev
		x.P.Store64(scratch, expect)
		x.Put(o, scratch, e+16, 8)
		x.Flush(o)
		d.tally(x).ops += 2
	}
}

// handle is an owner's AA handler: the same insert, done locally.
func (d *DHT) handle(x *aa.Ctx, sh *shard, r aa.Record) {
	if len(r.Data) != 16 {
		return
	}
	if sh.del != 0 && r.IOVA >= sh.del && r.IOVA < sh.del+4096 {
		d.deleteLocal(x, sh, le64(r.Data))
		return
	}
	d.insertLocal(x, sh, r.IOVA, le64(r.Data), le64(r.Data[8:])) // the table is mapped one to one
}

// deleteLocal is the owner's own delete: the key's word, in its cell or its
// chain, becomes the tombstone. Only the process that inserted a key
// deletes it, so nothing races the store.
func (d *DHT) deleteLocal(x *aa.Ctx, sh *shard, key uint64) {
	p := x.P
	cell := d.cell(sh, key)
	if p.Load64(cell) == key {
		p.Store64(cell, tombstone)
		return
	}
	for e := p.Load64(cell + 16); e != 0; {
		a := sh.heap + (e-1)*entrySize
		if p.Load64(a) == key {
			p.Store64(a, tombstone)
			return
		}
		e = p.Load64(a + 16)
	}
	d.tallies[sh.node].bad = append(d.tallies[sh.node].bad, fmt.Sprintf("key %d: not found to delete on node %d", key, sh.node))
}

// insertLocal is the owner's own insert: into the cell, or at the end of
// the cell's overflow chain. Several servers of one shard may interleave
// (each operation yields the core), so the chain's tail moves by CAS.
func (d *DHT) insertLocal(x *aa.Ctx, sh *shard, cell, key, val uint64) {
	p := x.P
	if p.CAS(cell, 0, key) == 0 {
		p.Store64(cell+8, val)
		return
	}
	idx := p.FetchAdd(sh.nextFree, 1)
	e := sh.heap + idx*entrySize
	p.Store64(e, key)
	p.Store64(e+8, val)
	last := p.Load64(cell + 16)
	for {
		p.Store64(e+16, last) // complete before it is linked
		prev := p.CAS(cell+16, last, idx+1)
		if prev == last {
			return
		}
		last = prev
	}
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// Verify walks every shard in its owner's memory: it must hold exactly the
// keys inserted into it and not deleted, with their values, each in its own
// cell or in the cell's overflow chain, and every overflow entry must be on
// exactly one chain. Every lookup must have found its key's value.
func (d *DHT) Verify() error {
	for _, sh := range d.shards {
		if sh == nil {
			continue
		}
		if !d.c.Nodes[sh.node].Eng.Local() {
			// Its memory is on another rank, which sent its verdict.
			if sh.verdict == nil {
				return fmt.Errorf("node %d's shard: not verified on its rank", sh.node)
			}
			if *sh.verdict != "" {
				return fmt.Errorf("node %d's shard: %s", sh.node, *sh.verdict)
			}
			continue
		}
		if err := d.verifyShard(sh); err != nil {
			return fmt.Errorf("node %d's shard: %w", sh.node, err)
		}
	}
	if t := d.total(); len(t.bad) > 0 {
		return fmt.Errorf("%d lookups or deletes went wrong, the first: %s", len(t.bad), t.bad[0])
	}
	return nil
}

// total sums the nodes' tallies (their bad lookups in node order).
func (d *DHT) total() dhtTally {
	var t dhtTally
	for _, n := range d.tallies {
		t.ops += n.ops
		t.polls += n.polls
		t.irqs += n.irqs
		t.started += n.started
		t.end = max(t.end, n.end)
		t.bad = append(t.bad, n.bad...)
	}
	return t
}

func (d *DHT) verifyShard(sh *shard) error {
	m := d.c.Nodes[sh.node].Mem
	found := map[uint64]bool{}
	add := func(k, v uint64, cell int, where string) error {
		switch {
		case k == tombstone:
			return nil
		case k%uint64(d.cfg.Cells) != uint64(cell):
			return fmt.Errorf("%s holds key %d of another cell", where, k)
		case v != value(k):
			return fmt.Errorf("%s: key %d has value %#x", where, k, v)
		case found[k]:
			return fmt.Errorf("%s: key %d is in the table twice", where, k)
		}
		found[k] = true
		return nil
	}
	used := m.Load64(sh.nextFree)
	onChain := make([]bool, used)
	for cell := 0; cell < d.cfg.Cells; cell++ {
		a := sh.table + uint64(cell)*cellSize
		if k := m.Load64(a); k != 0 {
			if err := add(k, m.Load64(a+8), cell, fmt.Sprintf("cell %d", cell)); err != nil {
				return err
			}
		}
		for e := m.Load64(a + 16); e != 0; {
			if e > used || onChain[e-1] {
				return fmt.Errorf("cell %d's chain reaches entry %d twice or beyond the %d used", cell, e-1, used)
			}
			onChain[e-1] = true
			ea := sh.heap + (e-1)*entrySize
			if err := add(m.Load64(ea), m.Load64(ea+8), cell, fmt.Sprintf("overflow entry %d", e-1)); err != nil {
				return err
			}
			e = m.Load64(ea + 16)
		}
	}
	for e, ok := range onChain {
		if !ok {
			return fmt.Errorf("overflow entry %d is on no chain", e)
		}
	}
	want := 0
	for _, k := range sh.keys {
		if sh.deleted[k] {
			if found[k] {
				return fmt.Errorf("key %d was deleted but is in the table", k)
			}
			continue
		}
		want++
		if !found[k] {
			return fmt.Errorf("key %d is not in the table", k)
		}
	}
	if len(found) != want {
		return fmt.Errorf("the table holds %d keys, %d were inserted and not deleted", len(found), want)
	}
	return nil
}

// Result measures the run: the rate is every insert over the time the last
// process finished.
func (d *DHT) Result() DHTResult {
	t := d.total()
	end := t.end
	st := d.c.Eng.Stats()
	tlps, hits, misses := 0.0, 0.0, 0.0
	count := func(name string) float64 {
		if s, ok := st.Get(name); ok {
			return float64(s.(*sim.Counter).Value())
		}
		return 0
	}
	for _, n := range d.c.Nodes {
		tlps += count(fmt.Sprintf("node%d.iommu.tlps", n.ID))
		hits += count(fmt.Sprintf("node%d.iommu.iotlb.hits", n.ID))
		misses += count(fmt.Sprintf("node%d.iommu.iotlb.misses", n.ID))
	}
	total := 0
	for _, s := range d.sources {
		total += len(s.keys)
	}
	n := float64(total)
	res := DHTResult{Scheme: d.cfg.Scheme, Collisions: d.cfg.Collisions, Nodes: len(d.c.Nodes), Procs: d.cfg.Procs,
		Inserts: total, SimTimePS: uint64(end),
		InsertsPerSec: n / (float64(end) / 1e12), RemoteOps: float64(t.ops) / n,
		TLPs: tlps / n, WireBytes: float64(d.c.WireBytes()) / n, TargetPolls: t.polls, Interrupts: t.irqs,
		Lookups: d.lookups, Deletes: d.deletes, NICEnergyJ: d.c.NICEnergy(float64(end) / 1e12),
		RouterEnergyJ: d.c.RouterEnergy()}
	if hits+misses > 0 {
		res.IOTLBHitRate = hits / (hits + misses)
	}
	for _, kind := range append(slices.Clone(machine.PageKinds), "other") {
		k := KindLookups{Kind: kind}
		for _, n := range d.c.Nodes {
			k.Hits += uint64(count(fmt.Sprintf("node%d.iommu.iotlb.kind.%s.hits", n.ID, kind)))
			k.Misses += uint64(count(fmt.Sprintf("node%d.iommu.iotlb.kind.%s.misses", n.ID, kind)))
		}
		if k.Hits+k.Misses > 0 {
			res.IOTLBByKind = append(res.IOTLBByKind, k)
		}
	}
	if d.lookups+d.deletes > 0 {
		res.OpsPerSec = float64(total+d.lookups+d.deletes) / (float64(end) / 1e12)
	}
	res.Verified = d.Verify() == nil
	return res
}

// Progress is the share of the DHT's inserts, lookups and deletes its
// processes have started, 0..1 (for a progress display).
func (d *DHT) Progress() float64 {
	if d.progress.total == 0 {
		for _, s := range d.sources {
			d.progress.total += len(s.keys) + len(s.lookups) + len(s.deletes)
		}
	}
	d.progress.started.Store(int64(d.total().started))
	return d.progress.Progress()
}

// tallyState carries a node's tally between ranks.
type tallyState struct{ t *dhtTally }

func (s *tallyState) AppendState(b []byte) []byte {
	t := s.t
	for _, v := range []uint64{uint64(t.ops), uint64(t.polls), uint64(t.irqs), uint64(t.end), uint64(t.started), uint64(len(t.bad))} {
		b = binary.AppendUvarint(b, v)
	}
	for _, m := range t.bad {
		b = binary.AppendUvarint(b, uint64(len(m)))
		b = append(b, m...)
	}
	return b
}

func (s *tallyState) LoadState(b []byte) ([]byte, error) {
	var v [6]uint64
	for i := range v {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("dht: a tally cut short")
		}
		v[i], b = x, b[n:]
	}
	t := s.t
	t.ops, t.polls, t.irqs, t.end, t.started = int(v[0]), int(v[1]), int(v[2]), sim.Tick(v[3]), int(v[4])
	t.bad = nil
	for k := uint64(0); k < v[5]; k++ {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, errors.New("dht: a tally cut short")
		}
		t.bad = append(t.bad, string(b[w:w+int(n)]))
		b = b[w+int(n):]
	}
	return b, nil
}

// verdictState carries a shard's verification from the rank that holds
// its memory.
type verdictState struct {
	d  *DHT
	sh *shard
}

func (s *verdictState) AppendState(b []byte) []byte {
	v := ""
	if err := s.d.verifyShard(s.sh); err != nil {
		v = err.Error()
	}
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func (s *verdictState) LoadState(b []byte) ([]byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, errors.New("dht: a verdict cut short")
	}
	v := string(b[w : w+int(n)])
	s.sh.verdict = &v
	return b[w+int(n):], nil
}
