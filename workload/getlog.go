package workload

import (
	"fmt"
	"slices"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/sim"
)

// Schemes of the logging of gets (the paper's §5.2.3).
const (
	NoFT Scheme = "No-FT" // no logging: the baseline
)

// GetLogConfig is the logging of gets for fault tolerance: processes on
// every node get 8-byte values from random other nodes, and the target must
// keep a log of what each get read (so a crashed source can replay it).
// No-FT logs nothing; AA maps the data R=1, RL=1, RLD=1 so the target's
// IOMMU logs each get with its data; RMA has the source put the value back
// into the target's log after the get.
type GetLogConfig struct {
	Scheme Scheme // No-FT, AA-Poll or RMA
	Gets   int    // per process
	Procs  int    // processes per node
	Words  int    // 8-byte values per node
	Seed   uint64
}

// GetLogResult is what a run measured.
type GetLogResult struct {
	Scheme     Scheme  `json:"scheme"`
	Gets       int     `json:"gets"`
	GetsPerSec float64 `json:"gets_per_second"`
	WireBytes  float64 `json:"wire_bytes_per_get"`
	SimTimePS  uint64  `json:"sim_time_ps"`
	Verified   bool    `json:"verified"`
	Problem    string  `json:"problem,omitempty"`
}

const getlogIUID = 5

// logEntry is one logged get: the address read and the value.
type logEntry struct{ addr, value uint64 }

type getLog struct {
	cfg      GetLogConfig
	c        *aa.System
	data     []uint64 // per node: the values gets read
	logs     [][]logEntry
	want     [][]logEntry // per target: the gets issued to it
	rlog     []uint64     // RMA: per node, the log area sources put into
	rnext    []uint64     // RMA: per node, the log's next-slot counter
	rcap     int
	end      lastEnd           // (nodes may run on several goroutines)
	values   map[uint64]uint64 // node<<48 | address → value
	problems []string          // the first of each node's processes, by node (they may run at once)
	opProgress
}

// SetupGetLog builds the workload; the cluster needs 2+ nodes.
func SetupGetLog(c *aa.System, cfg GetLogConfig) (*getLog, error) {
	switch cfg.Scheme {
	case NoFT, AAPoll, RMA:
	default:
		return nil, fmt.Errorf("get logging: scheme %s, want No-FT, AA-Poll or RMA", cfg.Scheme)
	}
	if cfg.Gets < 0 || cfg.Words < 1 || cfg.Words > 512 || cfg.Procs < 1 || cfg.Procs > c.Spec.Cores {
		return nil, fmt.Errorf("get logging: %d gets, %d words, %d procs", cfg.Gets, cfg.Words, cfg.Procs)
	}
	n := len(c.Nodes)
	g := &getLog{cfg: cfg, c: c, logs: make([][]logEntry, n), want: make([][]logEntry, n), values: map[uint64]uint64{}, problems: make([]string, n)}
	r := sim.NewRand(cfg.Seed, "getlog")
	rw := iommu.Perm{Bits: pte.R | pte.W}
	// Every node's data page and every process's plan of gets.
	type plan struct {
		dst  []int
		addr []uint64
	}
	plans := make([][]plan, n)
	for i, node := range c.Nodes {
		page := node.Alloc(4096)
		g.data = append(g.data, page)
		for w := 0; w < cfg.Words; w++ {
			v := r.Uint64() | 1
			node.Mem.Store64(page+uint64(w)*8, v)
			g.values[uint64(i)<<48|page+uint64(w)*8] = v
		}
		perm := rw
		if cfg.Scheme == AAPoll {
			perm = iommu.Perm{Bits: pte.R | pte.W | pte.RL | pte.RLD | pte.E, IUID: getlogIUID}
			i := i
			if _, err := node.CreateLog(getlogIUID, 256<<10, iommu.Poll, func(_ *aa.Ctx, rec aa.Record) { g.logged(i, rec) }); err != nil {
				return nil, err
			}
			if _, err := node.CreateFlushPage(getlogIUID); err != nil {
				return nil, err
			}
		}
		if err := node.Register(page, 4096, perm); err != nil {
			return nil, err
		}
		plans[i] = make([]plan, cfg.Procs)
		for p := 0; p < cfg.Procs; p++ {
			for k := 0; k < cfg.Gets; k++ {
				dst := (i + 1 + r.IntN(n-1)) % n
				plans[i][p].dst = append(plans[i][p].dst, dst)
				g.total++
				plans[i][p].addr = append(plans[i][p].addr, uint64(r.IntN(cfg.Words))*8)
			}
		}
	}
	for i := range plans {
		for _, p := range plans[i] {
			for k, dst := range p.dst {
				a := g.data[dst] + p.addr[k]
				g.want[dst] = append(g.want[dst], logEntry{a, g.values[uint64(dst)<<48|a]})
			}
		}
	}
	if cfg.Scheme == RMA {
		g.rcap = n * cfg.Procs * cfg.Gets
		for _, node := range c.Nodes {
			a, ctr := node.Alloc(uint64(g.rcap*16+16)), node.Alloc(4096)
			if err := node.Register(a, uint64(g.rcap*16+16), rw); err != nil {
				return nil, err
			}
			if err := node.Register(ctr, 4096, rw); err != nil {
				return nil, err
			}
			g.rlog, g.rnext = append(g.rlog, a), append(g.rnext, ctr)
		}
	}
	for i, node := range c.Nodes {
		buf := node.Alloc(uint64(cfg.Procs) * 4096)
		if err := node.Register(buf, uint64(cfg.Procs)*4096, rw); err != nil {
			return nil, err
		}
		for p := 0; p < cfg.Procs; p++ {
			pl, b := plans[i][p], buf+uint64(p)*4096
			node.Spawn(p, fmt.Sprintf("getlog%d", p), func(x *aa.Ctx) { g.run(x, pl.dst, pl.addr, b) })
		}
	}
	return g, nil
}

// logged is a node's AA handler: a get record carries the address and the
// data the get returned.
func (g *getLog) logged(node int, r aa.Record) {
	if r.Kind == record.Get && len(r.Data) == 8 {
		g.logs[node] = append(g.logs[node], logEntry{r.IOVA, le64(r.Data)})
	}
}

func (g *getLog) run(x *aa.Ctx, dsts []int, offs []uint64, buf uint64) {
	for k, dst := range dsts {
		x.P.Op("getlog.get")
		g.start()
		a := g.data[dst] + offs[k]
		x.Wait(x.Get(dst, buf+8, a, 8))
		v := x.P.Load64(buf + 8)
		if want := g.values[uint64(dst)<<48|a]; v != want && g.problems[x.N.ID] == "" {
			g.problems[x.N.ID] = fmt.Sprintf("node %d's get of %#x on node %d returned %#x, want %#x", x.N.ID, a, dst, v, want)
		}
		if g.cfg.Scheme == RMA {
			// The target knows nothing of the get: put the value back into
			// its log (a slot claimed with fetch-and-add).
			slot, _ := x.FetchAdd(dst, g.rnext[dst], 1)
			x.P.Store64(buf+16, a)
			x.P.Store64(buf+24, v)
			x.Wait(x.Put(dst, buf+16, g.rlog[dst]+slot*16, 16))
		}
	}
	if g.cfg.Scheme == AAPoll {
		// Every get this process made is in its target's log when this
		// returns.
		for _, dst := range uniq(dsts) {
			x.ActiveFlush(dst, getlogIUID)
		}
	}
	g.end.note(x.Now())
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func uniq(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// Result checks that every get returned its value and that each target's
// log holds exactly the gets made to it (addresses and values), in any
// order; No-FT keeps no log.
func (g *getLog) Result() GetLogResult {
	total := 0
	for _, w := range g.want {
		total += len(w)
	}
	res := GetLogResult{Scheme: g.cfg.Scheme, Gets: total, SimTimePS: uint64(g.end.get()),
		GetsPerSec: float64(total) / (float64(g.end.get()) / 1e12), WireBytes: float64(g.c.WireBytes()) / float64(max(total, 1))}
	for _, p := range g.problems {
		if p != "" {
			res.Problem = p // the first node's
			break
		}
	}
	cmp := func(a, b logEntry) int {
		if c := cmpU(a.addr, b.addr); c != 0 {
			return c
		}
		return cmpU(a.value, b.value)
	}
	for node := range g.c.Nodes {
		if res.Problem != "" || g.cfg.Scheme == NoFT {
			break
		}
		got := slices.Clone(g.logs[node])
		if g.cfg.Scheme == RMA {
			m := g.c.Nodes[node].Mem
			for i := uint64(0); i < m.Load64(g.rnext[node]); i++ {
				e := g.rlog[node] + i*16
				got = append(got, logEntry{m.Load64(e), m.Load64(e + 8)})
			}
		}
		want := slices.Clone(g.want[node])
		slices.SortFunc(got, cmp)
		slices.SortFunc(want, cmp)
		if !slices.Equal(got, want) {
			res.Problem = fmt.Sprintf("node %d's log holds %d gets, %d were made to it (or their values differ)", node, len(got), len(want))
		}
	}
	res.Verified = res.Problem == ""
	return res
}
