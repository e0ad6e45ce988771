package workload

import (
	"fmt"
	"strings"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/sim"
)

// Counting schemes of the access counter (the paper's §5.2.2) besides
// AA-Poll and RMA.
const (
	NoCnt     Scheme = "No-Cnt"    // no counting: the baseline
	AKV       Scheme = "A-KV"      // an application-level message per access to the owner, who counts
	Allreduce Scheme = "Allreduce" // each source counts locally; MPI_Allreduce sums the vectors at the end (allreduce.go)
)

// CounterConfig is the access counter: processes on every node but 0 write
// 8-byte values into random elements of node 0's array, and node 0 counts
// the accesses per element.
type CounterConfig struct {
	Scheme   Scheme // AA-Poll, RMA, A-KV, Allreduce or No-Cnt
	Elements int    // array elements (8 bytes each)
	Accesses int    // per source process
	Procs    int    // source processes per node (≤ cores)
	Seed     uint64
}

// CounterResult is what a run measured.
type CounterResult struct {
	Scheme         Scheme  `json:"scheme"`
	Accesses       int     `json:"accesses"`
	AccessesPerSec float64 `json:"accesses_per_second"`
	SimTimePS      uint64  `json:"sim_time_ps"`
	Verified       bool    `json:"verified"`
	Problem        string  `json:"problem,omitempty"`
}

const counterIUID = 4

type counterSrc struct {
	index      int // in counter.srcs
	node, core int
	elems      []int
	local      uint64 // Allreduce: the process's counts (its rank's vector)
}

type counter struct {
	cfg    CounterConfig
	c      *aa.System
	array  uint64  // node 0: the counted array
	counts uint64  // node 0: a 64-bit count per element
	ar     *arPlan // Allreduce: its ranks, the owner first
	srcs   []*counterSrc
	truth  []uint64 // the accesses per element, as generated
	end    lastEnd  // (nodes may run on several goroutines)
	opProgress
}

// SetupCounter builds the workload; the cluster needs 2+ nodes.
func SetupCounter(c *aa.System, cfg CounterConfig) (*counter, error) {
	switch cfg.Scheme {
	case AAPoll, RMA, AKV, Allreduce, NoCnt:
	default:
		return nil, fmt.Errorf("counter: scheme %s, want AA-Poll, RMA, A-KV, Allreduce or No-Cnt", cfg.Scheme)
	}
	if cfg.Elements < 1 || cfg.Elements > 1<<20 || cfg.Accesses < 0 || cfg.Procs < 1 || cfg.Procs > c.Spec.Cores {
		return nil, fmt.Errorf("counter: %d elements (1..%d), %d accesses, %d procs (1..cores, %d)", cfg.Elements, 1<<20, cfg.Accesses, cfg.Procs, c.Spec.Cores)
	}
	k := &counter{cfg: cfg, c: c, truth: make([]uint64, cfg.Elements)}
	r := sim.NewRand(cfg.Seed, "counter.elements")
	for _, n := range c.Nodes[1:] {
		for core := 0; core < cfg.Procs; core++ {
			s := &counterSrc{index: len(k.srcs), node: n.ID, core: core}
			for i := 0; i < cfg.Accesses; i++ {
				e := r.IntN(cfg.Elements)
				s.elems = append(s.elems, e)
				k.truth[e]++
				k.total++
			}
			k.srcs = append(k.srcs, s)
		}
	}
	n0 := c.Nodes[0]
	bytes := uint64(cfg.Elements * 8)
	pages := (bytes + 4095) &^ 4095
	rw := iommu.Perm{Bits: pte.R | pte.W}
	k.array, k.counts = n0.Alloc(pages), n0.Alloc(pages)
	if cfg.Scheme == AAPoll {
		// Writes land and are logged without data: the log is the count.
		if _, err := n0.CreateLog(counterIUID, 256<<10, iommu.Poll, k.logged); err != nil {
			return nil, err
		}
		if _, err := n0.CreateFlushPage(counterIUID); err != nil {
			return nil, err
		}
		if err := n0.Register(k.array, pages, iommu.Perm{Bits: pte.R | pte.W | pte.WL | pte.E, IUID: counterIUID}); err != nil {
			return nil, err
		}
	} else if err := n0.Register(k.array, pages, rw); err != nil {
		return nil, err
	}
	if err := n0.Register(k.counts, pages, rw); err != nil {
		return nil, err
	}
	if cfg.Scheme == Allreduce {
		if err := k.setupAllreduce(pages); err != nil {
			return nil, err
		}
	}
	if cfg.Scheme == AKV {
		if err := k.setupAKV(); err != nil {
			return nil, err
		}
	}
	for _, s := range k.srcs {
		n := c.Nodes[s.node]
		buf := n.Alloc(4096)
		if err := n.Register(buf, 4096, rw); err != nil {
			return nil, err
		}
		s := s
		n.Spawn(s.core, fmt.Sprintf("counter_src%d", s.core), func(x *aa.Ctx) { k.access(x, s, buf) })
	}
	return k, nil
}

// logged is node 0's AA-Poll handler: one put record is one access.
func (k *counter) logged(x *aa.Ctx, r aa.Record) {
	if r.Kind != record.Put || r.IOVA < k.array || r.IOVA >= k.array+uint64(k.cfg.Elements*8) {
		return
	}
	a := k.counts + (r.IOVA-k.array)&^7
	x.P.Store64(a, x.P.Load64(a)+1)
}

func (k *counter) access(x *aa.Ctx, s *counterSrc, buf uint64) {
	for i, e := range s.elems {
		x.P.Op("counter.access")
		k.start()
		slot := buf + uint64(i%256)*8
		x.P.Store64(slot, uint64(i)+1)
		target := k.array + uint64(e)*8
		x.Put(0, slot, target, 8)
		switch k.cfg.Scheme {
		case RMA:
			x.FetchAdd(0, k.counts+uint64(e)*8, 1)
		case AKV:
			x.P.Store64(slot+2048, uint64(e))
			x.Send(0, slot+2048, 8)
		case Allreduce:
			a := s.local + uint64(e)*8
			x.P.Store64(a, x.P.Load64(a)+1)
		}
	}
	x.P.Op("counter.flush")
	x.Flush(0)
	switch k.cfg.Scheme {
	case AAPoll:
		x.ActiveFlush(0, counterIUID)
	case Allreduce:
		// The sums: MPI_Allreduce among the sources and the owner.
		k.allreduce(x, s.index+1)
	}
	k.end.note(x.Now())
}

// setupAKV gives node 0 a server per source core that takes each access
// message and counts it.
func (k *counter) setupAKV() error {
	n0 := k.c.Nodes[0]
	n := len(k.c.Nodes)
	for core := 0; core < k.cfg.Procs; core++ {
		expect := make([]int, n)
		for _, s := range k.srcs {
			if s.core == core {
				expect[s.node] += len(s.elems)
			}
		}
		r, err := newAMRecv(k.c, n0, core, expect, 8)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		n0.Spawn(core, fmt.Sprintf("akv_server%d", core), func(x *aa.Ctx) { k.serveAKV(x, r) })
	}
	return nil
}

func (k *counter) serveAKV(x *aa.Ctx, r *amRecv) {
	r.postAll(x)
	remaining := r.expectAll
	for remaining > 0 {
		_, got := r.poll(x, func(_ int, slot uint64) {
			e := x.P.Load64(slot)
			// An atomic add: the servers of the other cores count into the
			// same array, and a load and a store would lose an update when
			// two of them meet on one element.
			x.P.FetchAdd(k.counts+e*8, 1)
			remaining--
		}, nil)
		if !got {
			x.P.Sleep(k.c.Spec.CPU.PollIntervalPS)
		}
	}
	k.end.note(x.Now())
}

// Result checks every element's count against the accesses generated
// (No-Cnt counts nothing and checks that the accesses landed).
func (k *counter) Result() CounterResult {
	total := 0
	for _, s := range k.srcs {
		total += len(s.elems)
	}
	res := CounterResult{Scheme: k.cfg.Scheme, Accesses: total, SimTimePS: uint64(k.end.get()),
		AccessesPerSec: float64(total) / (float64(k.end.get()) / 1e12)}
	m := k.c.Nodes[0].Mem
	var bad []string
	if k.ar != nil {
		if p := k.arFailed(); p != "" {
			bad = append(bad, p)
		}
	}
	for e, want := range k.truth {
		if k.cfg.Scheme == NoCnt {
			if want > 0 && m.Load64(k.array+uint64(e)*8) == 0 {
				bad = append(bad, fmt.Sprintf("element %d was written %d times but holds 0", e, want))
			}
		} else if got := m.Load64(k.counts + uint64(e)*8); got != want {
			bad = append(bad, fmt.Sprintf("element %d counted %d, accessed %d times", e, got, want))
		}
		if len(bad) == 3 {
			break
		}
	}
	if k.ar != nil && len(bad) == 0 {
		if p := k.arCheck(); p != "" {
			bad = append(bad, p)
		}
	}
	res.Problem = strings.Join(bad, "; ")
	res.Verified = len(bad) == 0
	return res
}
