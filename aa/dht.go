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
	// AM-Int's completion-event moderation: an interrupt every AMIntCount
	// messages a node receives (default 10, as the paper reports), or
	// AMIntPeriodPS after the first of fewer (default 10 µs, AA-Int's
	// notification interval).
	AMIntCount    int
	AMIntPeriodPS sim.Tick
}

// Defaults of AM-Int's moderation.
const (
	DefaultAMIntCount  = 10
	DefaultAMIntPeriod = 10 * sim.US
)

// DHT layout in an owner's memory: cells of 32 bytes (key, value, last:
// index+1 of the cell's last overflow entry, unused), an overflow heap of
// 32-byte entries (key, value, next: index+1, unused), and the heap's
// next-free counter.
const (
	cellSize  = 32
	entrySize = 32
	dhtIUID   = 1
	amBuffers = 16 // receive buffers an AM server keeps posted per peer
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
	TargetPolls int `json:"target_polls,omitempty"`
	// Interrupts counts AM-Int's completion interrupts (handler runs).
	Interrupts int  `json:"interrupts,omitempty"`
	Verified   bool `json:"verified"`
}

// shard is one owner's part of the table.
type shard struct {
	node                  int
	table, heap, nextFree uint64
	keys                  []uint64 // inserted into this shard, in generation order
	used                  []bool   // key generation: cells taken so far
	usedList              []int
	gen                   []uint64
}

// source is one inserting process and its keys.
type source struct {
	node, core int
	keys       []uint64
	owners     []int // the shard of each key
}

type dht struct {
	cfg     DHTConfig
	c       *Cluster
	shards  []*shard // by node; nil where a node owns none
	sources []*source
	expect  [][][]int // expect[owner][core][src node]: AM messages a server awaits
	flags   []uint64  // by node: a word per (core, owner) the AM servers set when done
	ops     int
	polls   int
	irqs    int
	end     sim.Tick
}

// SetupDHT builds the shards and the inserting processes. Run the cluster,
// then call Result.
func SetupDHT(c *Cluster, cfg DHTConfig) (*dht, error) {
	if cfg.Cells < 1 || cfg.Cells&(cfg.Cells-1) != 0 {
		return nil, fmt.Errorf("dht cells: %d is not a power of two", cfg.Cells)
	}
	if cfg.Inserts < 1 || cfg.Collisions < 0 || cfg.Collisions > 1 {
		return nil, fmt.Errorf("dht: inserts %d, collisions %v", cfg.Inserts, cfg.Collisions)
	}
	if cfg.Procs < 0 || cfg.Procs > c.Spec.Cores {
		return nil, fmt.Errorf("dht procs: %d per node, but nodes have %d cores", cfg.Procs, c.Spec.Cores)
	}
	if cfg.PollPS == 0 {
		cfg.PollPS = sim.US
	}
	if cfg.AMIntCount == 0 {
		cfg.AMIntCount = DefaultAMIntCount
	}
	if cfg.AMIntPeriodPS == 0 {
		cfg.AMIntPeriodPS = DefaultAMIntPeriod
	}
	if cfg.AMIntCount < 1 {
		return nil, fmt.Errorf("dht: AM-Int moderation count %d, want at least 1", cfg.AMIntCount)
	}
	d := &dht{cfg: cfg, c: c, shards: make([]*shard, len(c.Nodes))}
	d.makeKeys()
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
		if _, err := owner.CreateLog(dhtIUID, 64<<10, cfg.Scheme.mode(), func(x *Ctx, r Record) { d.handle(x, sh, r) }); err != nil {
			return nil, err
		}
		if _, err := owner.CreateFlushPage(dhtIUID); err != nil {
			return nil, err
		}
		if err := owner.Register(sh.table, uint64(cfg.Cells*cellSize), iommu.Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: dhtIUID}); err != nil {
			return nil, err
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
		s := s
		n.Spawn(s.core, fmt.Sprintf("dht_insert%d", s.core), func(x *Ctx) { d.insertAll(x, s, buf, scratch) })
	}
	return d, nil
}

// makeKeys draws every process's keys and owners, so that the given
// fraction of each shard's inserts lands in an occupied cell. The hash of
// key k is k mod Cells.
func (d *dht) makeKeys() {
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
	for _, s := range d.sources {
		for i := 0; i < d.cfg.Inserts; i++ {
			owner := 1
			if d.cfg.Procs > 0 {
				owner = (s.node + 1 + r.IntN(n-1)) % n // another node's shard
			}
			sh := d.shards[owner]
			if sh.used == nil {
				sh.used, sh.gen = make([]bool, cells), make([]uint64, cells)
			}
			var cell int
			if len(sh.usedList) > 0 && (r.Float64() < d.cfg.Collisions || len(sh.usedList) == cells) {
				cell = sh.usedList[r.IntN(len(sh.usedList))]
			} else {
				for {
					cell = r.IntN(cells)
					if !sh.used[cell] {
						break
					}
				}
				sh.used[cell] = true
				sh.usedList = append(sh.usedList, cell)
			}
			sh.gen[cell]++
			key := uint64(cell) + uint64(cells)*sh.gen[cell] // never 0, unique in the shard
			sh.keys = append(sh.keys, key)
			s.keys = append(s.keys, key)
			s.owners = append(s.owners, owner)
		}
	}
}

func (d *dht) cell(sh *shard, key uint64) uint64 {
	return sh.table + (key%uint64(d.cfg.Cells))*cellSize
}

func value(key uint64) uint64 { return key*0x9e3779b97f4a7c15 | 1 }

// insertAll is an inserting process.
func (d *dht) insertAll(x *Ctx, s *source, buf, scratch uint64) {
	sent := make([]bool, len(d.c.Nodes))
	for i, key := range s.keys {
		owner := s.owners[i]
		sh := d.shards[owner]
		sent[owner] = true
		x.P.Op("dht.insert")
		if d.cfg.Compute > 0 {
			x.P.Compute(d.cfg.Compute)
		}
		if d.cfg.Scheme == RMA {
			d.insertRMA(x, sh, key, scratch)
			continue
		}
		slot := buf + uint64(i%256)*16
		x.P.Store64(slot, key)
		x.P.Store64(slot+8, value(key))
		if d.cfg.Scheme.activeMessages() {
			x.Send(owner, slot, 16) // one message per insert
		} else {
			x.Put(owner, slot, d.cell(sh, key), 16) // one active put per insert
		}
		d.ops++
	}
	switch d.cfg.Scheme {
	case RMA:
	case AM, AMExp, AMOnload, AMInt:
		// Each owner's server sets a flag once it has handled every message.
		x.P.Op("dht.flush")
		for owner, ok := range sent {
			if ok {
				flag := d.flagAddr(s.node, s.core, owner)
				x.P.Poll(func() bool { return x.N.Mem.Load64(flag) != 0 })
			}
		}
	default:
		x.P.Op("dht.flush")
		for owner, ok := range sent {
			if ok {
				x.Flush(owner)
				x.ActiveFlush(owner, dhtIUID)
			}
		}
	}
	d.end = max(d.end, x.Now())
}

// setupAM gives every owner a server process per inserting core: it serves
// the messages of the processes on that core of the other nodes (they share
// a connection), and sets each one's flag when it has handled them all.
func (d *dht) setupAM() error {
	n := len(d.c.Nodes)
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
				total := 0
				for _, c := range d.expect[sh.node][k] {
					total += c
				}
				if total == 0 {
					continue
				}
				rbuf := owner.Alloc(uint64(n * amBuffers * 16))
				if err := owner.Register(rbuf, uint64(n*amBuffers*16), rw); err != nil {
					return err
				}
				lanes = append(lanes, &amLane{core: k, rbuf: rbuf, left: append([]int(nil), d.expect[sh.node][k]...), posted: make([]int, n)})
			}
			if len(lanes) == 0 {
				continue
			}
			one := owner.Alloc(4096)
			if err := owner.Register(one, 4096, rw); err != nil {
				return err
			}
			sh := sh
			owner.Spawn(sv.core, fmt.Sprintf("dht_am_server%d", sv.core), func(x *Ctx) { d.serveAM(x, sh, lanes, one) })
		}
	}
	return nil
}

// setupExpectAndFlags counts the messages every owner's server awaits per
// (core, source node), and gives every node its done flags: a word per
// (core, owner), written by the owners.
func (d *dht) setupExpectAndFlags() error {
	n := len(d.c.Nodes)
	cores := max(d.cfg.Procs, 1)
	d.expect = make([][][]int, n)
	for i := range d.expect {
		d.expect[i] = make([][]int, cores)
		for k := range d.expect[i] {
			d.expect[i][k] = make([]int, n)
		}
	}
	for _, s := range d.sources {
		for _, o := range s.owners {
			d.expect[o][s.core][s.node]++
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
func (d *dht) flagAddr(node, core, owner int) uint64 {
	return d.flags[node] + uint64(core*len(d.c.Nodes)+owner)*8
}

// amLane is a server's share of one inserting core's connections.
type amLane struct {
	core   int
	rbuf   uint64
	left   []int // messages still expected, by source node
	posted []int // receive requests posted, by source node
}

// serveAM is an owner's active-message server for the inserting processes
// of its lanes' cores on the other nodes: it keeps receive buffers posted,
// polls for messages (AM: every PollPS; AM-Exp: the interval doubling while
// nothing arrives; AM-Onload: without pause, on its own core), inserts each
// key locally and, when a peer's messages are all handled, sets that peer's
// done flag with a put.
func (d *dht) serveAM(x *Ctx, sh *shard, lanes []*amLane, one uint64) {
	n := len(d.c.Nodes)
	remaining := 0
	for _, l := range lanes {
		lx := &Ctx{N: x.N, P: x.P, core: l.core} // the lane's connections
		for src := 0; src < n; src++ {
			for l.posted[src] < min(amBuffers, l.left[src]) {
				lx.PostRecv(src, d.amSlot(l.rbuf, src, l.posted[src]), 16)
				l.posted[src]++
			}
			remaining += l.left[src]
		}
	}
	x.P.Store64(one, 1)
	interval := d.cfg.PollPS
	msg := make([]byte, 16)
	for remaining > 0 {
		got := false
		for _, l := range lanes {
			lx := &Ctx{N: x.N, P: x.P, core: l.core}
			for src := 0; src < n; src++ {
				if l.left[src] == 0 {
					continue
				}
				cqe, ok := lx.TryRecv(src)
				d.polls++
				if !ok {
					continue
				}
				got = true
				slot := d.amSlot(l.rbuf, src, int(cqe.WRID))
				x.P.Read(slot, msg)
				key := le64(msg)
				d.insertLocal(x, sh, d.cell(sh, key), key, le64(msg[8:]))
				l.left[src]--
				remaining--
				if l.posted[src] < d.expect[sh.node][l.core][src] {
					lx.PostRecv(src, slot, 16)
					l.posted[src]++
				}
				if l.left[src] == 0 {
					lx.Put(src, one, d.flagAddr(src, l.core, sh.node), 8)
				}
			}
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

// amSlot is the receive buffer the i-th receive request from src uses.
func (d *dht) amSlot(rbuf uint64, src, i int) uint64 {
	return rbuf + uint64(src*amBuffers+i%amBuffers)*16
}

// insertRMA: CAS the key into the cell; on a collision take an overflow
// entry (FAO), write it (put + flush), and link it: CAS the cell's last
// pointer, then put the previous entry's next pointer (+ flush).
func (d *dht) insertRMA(x *Ctx, sh *shard, key, scratch uint64) {
	cell, o := d.cell(sh, key), sh.node
	old, _ := x.CAS(o, cell, 0, key)
	d.ops++
	if old == 0 {
		x.P.Store64(scratch, value(key))
		x.Put(o, scratch, cell+8, 8)
		x.Flush(o)
		d.ops += 2
		return
	}
	idx, _ := x.FetchAdd(o, sh.nextFree, 1)
	x.P.Store64(scratch, key)
	x.P.Store64(scratch+8, value(key))
	x.P.Store64(scratch+16, 0)
	x.Put(o, scratch, sh.heap+idx*entrySize, 24)
	x.Flush(o)
	d.ops += 3
	expect := uint64(0)
	for {
		prev, _ := x.CAS(o, cell+16, expect, idx+1)
		d.ops++
		if prev == expect {
			break
		}
		expect = prev
	}
	if expect != 0 {
		x.P.Store64(scratch, idx+1)
		x.Put(o, scratch, sh.heap+(expect-1)*entrySize+16, 8)
		x.Flush(o)
		d.ops += 2
	}
}

// handle is an owner's AA handler: the same insert, done locally.
func (d *dht) handle(x *Ctx, sh *shard, r Record) {
	if len(r.Data) != 16 {
		return
	}
	d.insertLocal(x, sh, r.IOVA, le64(r.Data), le64(r.Data[8:])) // the table is mapped one to one
}

// insertLocal is the owner's own insert: into the cell, or at the end of
// the cell's overflow chain. Several servers of one shard may interleave
// (each operation yields the core), so the chain's tail moves by CAS.
func (d *dht) insertLocal(x *Ctx, sh *shard, cell, key, val uint64) {
	p := x.P
	if p.CAS(cell, 0, key) == 0 {
		p.Store64(cell+8, val)
		return
	}
	idx := p.FetchAdd(sh.nextFree, 1)
	e := sh.heap + idx*entrySize
	p.Store64(e, key)
	p.Store64(e+8, val)
	p.Store64(e+16, 0)
	last := p.Load64(cell + 16)
	for {
		if prev := p.CAS(cell+16, last, idx+1); prev == last {
			break
		} else {
			last = prev
		}
	}
	if last != 0 {
		p.Store64(sh.heap+(last-1)*entrySize+16, idx+1)
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
// keys inserted into it with their values, each in its own cell or in the
// overflow heap.
func (d *dht) Verify() error {
	for _, sh := range d.shards {
		if sh == nil {
			continue
		}
		if err := d.verifyShard(sh); err != nil {
			return fmt.Errorf("node %d's shard: %w", sh.node, err)
		}
	}
	return nil
}

func (d *dht) verifyShard(sh *shard) error {
	m := d.c.Nodes[sh.node].Mem
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
		a := sh.table + uint64(cell)*cellSize
		if k := m.Load64(a); k != 0 {
			if k%uint64(d.cfg.Cells) != uint64(cell) {
				return fmt.Errorf("cell %d holds key %d of another cell", cell, k)
			}
			if err := add(k, m.Load64(a+8), fmt.Sprintf("cell %d", cell)); err != nil {
				return err
			}
		}
	}
	used := m.Load64(sh.nextFree)
	for e := uint64(0); e < used; e++ {
		ea := sh.heap + e*entrySize
		if err := add(m.Load64(ea), m.Load64(ea+8), fmt.Sprintf("overflow entry %d", e)); err != nil {
			return err
		}
	}
	for _, k := range sh.keys {
		if !found[k] {
			return fmt.Errorf("key %d is not in the table", k)
		}
	}
	if len(found) != len(sh.keys) {
		return fmt.Errorf("the table holds %d keys, %d were inserted", len(found), len(sh.keys))
	}
	return nil
}

// Result measures the run: the rate is every insert over the time the last
// process finished.
func (d *dht) Result() DHTResult {
	end := d.end
	st := d.c.Eng.Stats()
	tlps := 0.0
	for _, n := range d.c.Nodes {
		if s, ok := st.Get(fmt.Sprintf("node%d.iommu.tlps", n.ID)); ok {
			tlps += float64(s.(*sim.Counter).Value())
		}
	}
	total := 0
	for _, s := range d.sources {
		total += len(s.keys)
	}
	n := float64(total)
	res := DHTResult{Scheme: d.cfg.Scheme, Collisions: d.cfg.Collisions, Nodes: len(d.c.Nodes), Procs: d.cfg.Procs,
		Inserts: total, SimTimePS: uint64(end),
		InsertsPerSec: n / (float64(end) / 1e12), RemoteOps: float64(d.ops) / n,
		TLPs: tlps / n, WireBytes: float64(d.c.WireBytes()) / n, TargetPolls: d.polls, Interrupts: d.irqs}
	res.Verified = d.Verify() == nil
	return res
}
