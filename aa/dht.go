package aa

import (
	"fmt"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/sim"
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
)

// ParseScheme reads a scheme name.
func ParseScheme(s string) (Scheme, error) {
	for _, k := range []Scheme{AAPoll, AAInt, AASP, RMA, AM, AMExp} {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("scheme %q: want AA-Poll, AA-Int, AA-SP, RMA, AM or AM-Exp", s)
}

func (s Scheme) mode() iommu.Notify {
	switch s {
	case AAInt:
		return iommu.Int
	case AASP:
		return iommu.SP
	}
	return iommu.Poll
}

// DHTConfig is the distributed hashtable insert benchmark (DESIGN.md §5):
// one process on node 0 inserts into the table that node 1 owns.
type DHTConfig struct {
	Scheme     Scheme
	Inserts    int     // keys inserted
	Cells      int     // table cells (a power of two)
	Collisions float64 // fraction of inserts whose cell is already taken
	Compute    int     // cycles of local work between two inserts
	Seed       uint64
	// AM: the target's polling interval (default 1 µs; AM-Exp starts at it
	// and doubles up to 64× while nothing arrives).
	PollPS sim.Tick
}

// DHT layout in node 1's memory: cells of 32 bytes (key, value, last:
// index+1 of the cell's last overflow entry, unused), an overflow heap of
// 32-byte entries (key, value, next: index+1, unused), and the heap's
// next-free counter.
const (
	cellSize  = 32
	entrySize = 32
	dhtIUID   = 1
)

// DHTResult is what one run measured.
type DHTResult struct {
	Scheme        Scheme  `json:"scheme"`
	Collisions    float64 `json:"collisions"`
	Inserts       int     `json:"inserts"`
	SimTimePS     uint64  `json:"sim_time_ps"`
	InsertsPerSec float64 `json:"inserts_per_second"`
	RemoteOps     float64 `json:"remote_ops_per_insert"`
	TLPs          float64 `json:"pcie_tlps_per_insert"`
	WireBytes     float64 `json:"wire_bytes_per_insert"`
	// TargetPolls counts the AM target's polls of its receive queue (empty
	// or not): the CPU time active messages take from the target process.
	TargetPolls int  `json:"target_polls,omitempty"`
	Verified    bool `json:"verified"`
}

type dht struct {
	cfg      DHTConfig
	c        *Cluster
	table    uint64
	heap     uint64
	nextFree uint64
	cap      int
	keys     []uint64
	ops      int
	polls    int
	end      sim.Tick
}

// SetupDHT builds the table on node 1 and the inserting process on node 0.
// Run the cluster, then call Result.
func SetupDHT(c *Cluster, cfg DHTConfig) (*dht, error) {
	if cfg.Cells < 1 || cfg.Cells&(cfg.Cells-1) != 0 {
		return nil, fmt.Errorf("dht cells: %d is not a power of two", cfg.Cells)
	}
	if cfg.Inserts < 1 || cfg.Collisions < 0 || cfg.Collisions > 1 {
		return nil, fmt.Errorf("dht: inserts %d, collisions %v", cfg.Inserts, cfg.Collisions)
	}
	d := &dht{cfg: cfg, c: c, cap: cfg.Inserts}
	owner, src := c.Nodes[1], c.Nodes[0]
	d.table = owner.Alloc(uint64(cfg.Cells * cellSize))
	d.heap = owner.Alloc(uint64(d.cap * entrySize))
	d.nextFree = owner.Alloc(4096)
	rw := iommu.Perm{Bits: pte.R | pte.W}
	if cfg.Scheme == AM || cfg.Scheme == AMExp {
		if d.cfg.PollPS == 0 {
			d.cfg.PollPS = sim.US
		}
		rbuf := owner.Alloc(256 * 16)
		if err := owner.Register(rbuf, 256*16, rw); err != nil {
			return nil, err
		}
		owner.Spawn(0, "dht_am_target", func(x *Ctx) { d.serveAM(x, rbuf) })
	}
	if cfg.Scheme == RMA || cfg.Scheme == AM || cfg.Scheme == AMExp {
		if err := owner.Register(d.table, uint64(cfg.Cells*cellSize), rw); err != nil {
			return nil, err
		}
		if err := owner.Register(d.heap, uint64(d.cap*entrySize), rw); err != nil {
			return nil, err
		}
		if err := owner.Register(d.nextFree, 4096, rw); err != nil {
			return nil, err
		}
	} else {
		// The table's pages are active: a put is logged with its data and
		// never written (W=0, WL=1, WLD=1); the handler inserts locally.
		if _, err := owner.CreateLog(dhtIUID, 64<<10, cfg.Scheme.mode(), d.handle); err != nil {
			return nil, err
		}
		if _, err := owner.CreateFlushPage(dhtIUID); err != nil {
			return nil, err
		}
		if err := owner.Register(d.table, uint64(cfg.Cells*cellSize), iommu.Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: dhtIUID}); err != nil {
			return nil, err
		}
	}
	d.keys = d.makeKeys()
	buf := src.Alloc(256 * 16)
	if err := src.Register(buf, 256*16, rw); err != nil {
		return nil, err
	}
	src.Spawn(0, "dht_insert", func(x *Ctx) { d.insertAll(x, buf) })
	return d, nil
}

// makeKeys draws keys so that the given fraction lands in an occupied cell.
// The hash of key k is k mod Cells.
func (d *dht) makeKeys() []uint64 {
	r := sim.NewRand(d.cfg.Seed, "dht.keys")
	n := d.cfg.Cells
	used := make([]bool, n)
	var usedList []int
	gen := make([]uint64, n)
	keys := make([]uint64, 0, d.cfg.Inserts)
	for i := 0; i < d.cfg.Inserts; i++ {
		var cell int
		if len(usedList) > 0 && (r.Float64() < d.cfg.Collisions || len(usedList) == n) {
			cell = usedList[r.IntN(len(usedList))]
		} else {
			for {
				cell = r.IntN(n)
				if !used[cell] {
					break
				}
			}
			used[cell] = true
			usedList = append(usedList, cell)
		}
		gen[cell]++
		keys = append(keys, uint64(cell)+uint64(n)*gen[cell]) // never 0, unique
	}
	return keys
}

func (d *dht) cell(key uint64) uint64 { return d.table + (key%uint64(d.cfg.Cells))*cellSize }

func value(key uint64) uint64 { return key*0x9e3779b97f4a7c15 | 1 }

// insertAll is the inserting process.
func (d *dht) insertAll(x *Ctx, buf uint64) {
	for i, key := range d.keys {
		x.P.Op("dht.insert")
		if d.cfg.Compute > 0 {
			x.P.Compute(d.cfg.Compute)
		}
		if d.cfg.Scheme == RMA {
			d.insertRMA(x, key)
			continue
		}
		slot := buf + uint64(i%256)*16
		x.P.Store64(slot, key)
		x.P.Store64(slot+8, value(key))
		if d.cfg.Scheme == AM || d.cfg.Scheme == AMExp {
			x.Send(1, slot, 16) // one message per insert
		} else {
			x.Put(1, slot, d.cell(key), 16) // one active put per insert
		}
		d.ops++
	}
	switch d.cfg.Scheme {
	case RMA:
	case AM, AMExp:
		// The target answers once it has handled every message.
		x.P.Op("dht.flush")
		done := x.N.scratch()
		x.PostRecv(1, done, 16)
		x.Recv(1)
	default:
		x.P.Op("dht.flush")
		x.Flush(1)
		x.ActiveFlush(1, dhtIUID)
	}
	d.end = x.Now()
}

// serveAM is the target's process for the active-message schemes: it keeps
// receive buffers posted, polls for messages every PollPS (AM-Exp: doubling
// the interval while nothing arrives), inserts each key locally and answers
// when all have arrived.
func (d *dht) serveAM(x *Ctx, rbuf uint64) {
	const slots = 256
	for i := 0; i < slots; i++ {
		x.PostRecv(0, rbuf+uint64(i)*16, 16)
	}
	interval := d.cfg.PollPS
	handled := 0
	for handled < len(d.keys) {
		cqe, ok := x.TryRecv(0)
		d.polls++
		if !ok {
			x.P.Sleep(interval) // the process's own work until the next poll
			if d.cfg.Scheme == AMExp && interval < 64*d.cfg.PollPS {
				interval *= 2
			}
			continue
		}
		interval = d.cfg.PollPS
		slot := rbuf + (cqe.WRID%slots)*16
		msg := make([]byte, 16)
		x.P.Read(slot, msg)
		key := le64(msg)
		d.insertLocal(x, d.cell(key), key, le64(msg[8:]))
		handled++
		x.PostRecv(0, slot, 16)
	}
	reply := x.N.scratch()
	x.Wait(x.Send(0, reply, 16))
}

// insertRMA: CAS the key into the cell; on a collision take an overflow
// entry (FAO), write it (put + flush), and link it: CAS the cell's last
// pointer, then put the previous entry's next pointer (+ flush).
func (d *dht) insertRMA(x *Ctx, key uint64) {
	cell := d.cell(key)
	scratch := x.N.scratch()
	old, _ := x.CAS(1, cell, 0, key)
	d.ops++
	if old == 0 {
		x.P.Store64(scratch, value(key))
		x.Put(1, scratch, cell+8, 8)
		x.Flush(1)
		d.ops += 2
		return
	}
	idx, _ := x.FetchAdd(1, d.nextFree, 1)
	x.P.Store64(scratch, key)
	x.P.Store64(scratch+8, value(key))
	x.P.Store64(scratch+16, 0)
	x.Put(1, scratch, d.heap+idx*entrySize, 24)
	x.Flush(1)
	d.ops += 3
	expect := uint64(0)
	for {
		prev, _ := x.CAS(1, cell+16, expect, idx+1)
		d.ops++
		if prev == expect {
			break
		}
		expect = prev
	}
	if expect != 0 {
		x.P.Store64(scratch, idx+1)
		x.Put(1, scratch, d.heap+(expect-1)*entrySize+16, 8)
		x.Flush(1)
		d.ops += 2
	}
}

// handle is the AA handler on node 1: the same insert, done locally.
func (d *dht) handle(x *Ctx, r Record) {
	if len(r.Data) != 16 {
		return
	}
	d.insertLocal(x, r.IOVA, le64(r.Data), le64(r.Data[8:])) // the table is mapped one to one
}

// insertLocal is the target's own insert: into the cell, or at the end of
// the cell's overflow chain.
func (d *dht) insertLocal(x *Ctx, cell, key, val uint64) {
	p := x.P
	if p.CAS(cell, 0, key) == 0 {
		p.Store64(cell+8, val)
		return
	}
	idx := p.FetchAdd(d.nextFree, 1)
	e := d.heap + idx*entrySize
	p.Store64(e, key)
	p.Store64(e+8, val)
	p.Store64(e+16, 0)
	last := p.Load64(cell + 16)
	p.Store64(cell+16, idx+1)
	if last != 0 {
		p.Store64(d.heap+(last-1)*entrySize+16, idx+1)
	}
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// Verify walks the table in node 1's memory: it must hold exactly the
// inserted keys with their values, each in its own cell or in the overflow
// heap.
func (d *dht) Verify() error {
	m := d.c.Nodes[1].Mem
	found := map[uint64]bool{}
	add := func(k, v uint64, where string) error {
		if v != value(k) {
			return fmt.Errorf("%s: key %d has value %#x", where, k, v)
		}
		if found[k] {
			return fmt.Errorf("%s: key %d is in the table twice", where, k)
		}
		found[k] = true
		return nil
	}
	for cell := 0; cell < d.cfg.Cells; cell++ {
		a := d.table + uint64(cell)*cellSize
		if k := m.Load64(a); k != 0 {
			if k%uint64(d.cfg.Cells) != uint64(cell) {
				return fmt.Errorf("cell %d holds key %d of another cell", cell, k)
			}
			if err := add(k, m.Load64(a+8), fmt.Sprintf("cell %d", cell)); err != nil {
				return err
			}
		}
	}
	used := m.Load64(d.nextFree)
	for e := uint64(0); e < used; e++ {
		ea := d.heap + e*entrySize
		if err := add(m.Load64(ea), m.Load64(ea+8), fmt.Sprintf("overflow entry %d", e)); err != nil {
			return err
		}
	}
	for _, k := range d.keys {
		if !found[k] {
			return fmt.Errorf("key %d is not in the table", k)
		}
	}
	if len(found) != len(d.keys) {
		return fmt.Errorf("the table holds %d keys, %d were inserted", len(found), len(d.keys))
	}
	return nil
}

// Result measures the run.
func (d *dht) Result() DHTResult {
	end := d.end
	st := d.c.Eng.Stats()
	sum := func(names ...string) float64 {
		t := 0.0
		for _, n := range names {
			if s, ok := st.Get(n); ok {
				t += float64(s.(*sim.Counter).Value())
			}
		}
		return t
	}
	n := float64(len(d.keys))
	res := DHTResult{Scheme: d.cfg.Scheme, Collisions: d.cfg.Collisions, Inserts: len(d.keys), SimTimePS: uint64(end),
		InsertsPerSec: n / (float64(end) / 1e12), RemoteOps: float64(d.ops) / n,
		TLPs:      sum("node0.iommu.tlps", "node1.iommu.tlps") / n,
		WireBytes: float64(d.c.WireBytes()) / n, TargetPolls: d.polls}
	res.Verified = d.Verify() == nil
	return res
}
