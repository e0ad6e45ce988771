package workload

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/sim"
)

// XORConfig is the XOR checksum checkpoint (the paper's §4.5, RAID-5 style):
// every node but 0 holds a checkpoint of Words 64-bit words and folds it into
// the checksum on node 0. With AA each puts its whole checkpoint to the
// checksum page (W=0, WL=1, WLD=1): the IOMMU logs the data and node 0's
// handler XORs it in. With RMA each word goes by remote compare-and-swap,
// retried until it wins.
type XORConfig struct {
	Scheme Scheme // AA-SP or RMA
	Words  int
	Seed   uint64
}

// XORResult is what a run measured.
type XORResult struct {
	Scheme     Scheme `json:"scheme"`
	Processes  int    `json:"processes"`
	Words      int    `json:"words"`
	TargetTLPs uint64 `json:"target_tlps"` // requests through node 0's IOMMU
	RemoteOps  int    `json:"remote_ops"`
	SimTimePS  uint64 `json:"sim_time_ps"`
	Verified   bool   `json:"verified"`
	Problem    string `json:"problem,omitempty"`
}

const xorIUID = 3

type xorCkpt struct {
	cfg   XORConfig
	c     *aa.System
	sum   uint64       // node 0: the checksum
	data  [][]uint64   // each source node's checkpoint
	ops   atomic.Int64 // remote operations (nodes may run on several goroutines)
	end   lastEnd      // (nodes may run on several goroutines)
	tlps0 uint64
	opProgress
}

// SetupXORCheckpoint builds the workload; the cluster needs 2+ nodes.
func SetupXORCheckpoint(c *aa.System, cfg XORConfig) (*xorCkpt, error) {
	if cfg.Words < 1 || cfg.Words*8 > 1<<20 {
		return nil, fmt.Errorf("xor checkpoint: %d words, want 1..%d", cfg.Words, 1<<17)
	}
	if cfg.Scheme != AASP && cfg.Scheme != RMA {
		return nil, fmt.Errorf("xor checkpoint: scheme %s, want AA-SP or RMA", cfg.Scheme)
	}
	x := &xorCkpt{cfg: cfg, c: c}
	size := uint64(cfg.Words * 8)
	pages := (size + 4095) &^ 4095
	c0 := c.Nodes[0]
	x.sum = c0.Alloc(pages)
	if cfg.Scheme == AASP {
		if _, err := c0.CreateLog(xorIUID, 1<<20+64<<10, iommu.SP, x.fold); err != nil {
			return nil, err
		}
		if _, err := c0.CreateFlushPage(xorIUID); err != nil {
			return nil, err
		}
		if err := c0.Register(x.sum, pages, iommu.Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: xorIUID}); err != nil {
			return nil, err
		}
	} else if err := c0.Register(x.sum, pages, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
		return nil, err
	}
	r := sim.NewRand(cfg.Seed, "xor.data")
	for _, n := range c.Nodes[1:] {
		words := make([]uint64, cfg.Words)
		for i := range words {
			words[i] = r.Uint64()
		}
		x.data = append(x.data, words)
		buf := n.Alloc(pages)
		if err := n.Register(buf, pages, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
			return nil, err
		}
		for i, w := range words {
			n.Mem.Store64(buf+uint64(i)*8, w) // the checkpoint, already in memory
		}
		n.Spawn(0, "xor_ckpt", func(cx *aa.Ctx) { x.send(cx, words, buf) })
		x.total++
	}
	if s, ok := c.Eng.Stats().Get("node0.iommu.tlps"); ok {
		x.tlps0 = s.(*sim.Counter).Value()
	}
	return x, nil
}

// fold is node 0's AA handler: XOR the logged data into the checksum.
func (x *xorCkpt) fold(cx *aa.Ctx, r aa.Record) {
	for i := 0; i+8 <= len(r.Data); i += 8 {
		a := r.IOVA + uint64(i) // the checksum page is mapped one to one
		cx.P.Store64(a, cx.P.Load64(a)^le64(r.Data[i:]))
	}
}

func (x *xorCkpt) send(cx *aa.Ctx, words []uint64, buf uint64) {
	cx.P.Op("xor.checkpoint")
	x.start()
	if x.cfg.Scheme == AASP {
		cx.Put(0, buf, x.sum, len(words)*8) // one put of the whole checkpoint
		x.ops.Add(1)
		cx.Flush(0)
		cx.ActiveFlush(0, xorIUID)
	} else {
		for i, w := range words {
			a := x.sum + uint64(i)*8
			old := uint64(0)
			for {
				got, err := cx.CAS(0, a, old, old^w)
				x.ops.Add(1)
				if err != nil || got == old {
					break
				}
				old = got
			}
		}
	}
	x.end.note(cx.Now())
}

// Result checks the checksum against the XOR of every checkpoint.
func (x *xorCkpt) Result() XORResult {
	res := XORResult{Scheme: x.cfg.Scheme, Processes: len(x.data), Words: x.cfg.Words, RemoteOps: int(x.ops.Load()), SimTimePS: uint64(x.end.get())}
	if s, ok := x.c.Eng.Stats().Get("node0.iommu.tlps"); ok {
		res.TargetTLPs = s.(*sim.Counter).Value() - x.tlps0
	}
	m := x.c.Nodes[0].Mem
	var bad []string
	for i := 0; i < x.cfg.Words; i++ {
		want := uint64(0)
		for _, d := range x.data {
			want ^= d[i]
		}
		if got := m.Load64(x.sum + uint64(i)*8); got != want {
			bad = append(bad, fmt.Sprintf("word %d is %#x, want %#x", i, got, want))
			if len(bad) == 3 {
				break
			}
		}
	}
	res.Problem = strings.Join(bad, "; ")
	res.Verified = len(bad) == 0
	return res
}
