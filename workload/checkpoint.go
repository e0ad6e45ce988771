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

// CheckpointConfig is incremental checkpointing with AA (DESIGN.md §5, the
// paper's §4.3): node 1's region is mapped W=1, WL=1, WLD=0, so remote puts
// land and the IOMMU logs which page each one touched. Node 0 writes random
// pages in epochs; after each, node 1 takes a checkpoint by copying exactly
// the pages its access log names.
type CheckpointConfig struct {
	Pages  int // pages in the checkpointed region
	Epochs int // checkpoints taken
	Puts   int // remote 8-byte puts per epoch, each to a random page
	Seed   uint64
}

// CheckpointResult is what a run measured.
type CheckpointResult struct {
	Epochs      int      `json:"epochs"`
	PagesCopied []int    `json:"pages_copied"` // per checkpoint
	Records     int      `json:"records"`      // access-log records processed
	SimTimePS   uint64   `json:"sim_time_ps"`
	Dirty       [][]int  `json:"-"`
	Written     [][]int  `json:"-"`
	Verified    bool     `json:"verified"`
	Problems    []string `json:"problems,omitempty"`
}

const ckptIUID = 2

type checkpoint struct {
	cfg            CheckpointConfig
	c              *aa.System
	region, shadow uint64 // node 1: the live region and the checkpoint copy
	flag, ack      uint64 // node 1's epoch flag; node 0's acknowledgement
	dirty          map[int]bool
	res            CheckpointResult
	end            sim.Tick
	opProgress
}

// SetupCheckpoint builds the workload on a two-or-more-node cluster.
func SetupCheckpoint(c *aa.System, cfg CheckpointConfig) (*checkpoint, error) {
	if cfg.Pages < 1 || cfg.Pages > 1<<16 || cfg.Epochs < 1 || cfg.Puts < 0 {
		return nil, fmt.Errorf("checkpoint: %d pages (1..%d), %d epochs, %d puts", cfg.Pages, 1<<16, cfg.Epochs, cfg.Puts)
	}
	k := &checkpoint{cfg: cfg, c: c, dirty: map[int]bool{}}
	k.total = cfg.Epochs * (cfg.Puts + 1)
	src, own := c.Nodes[0], c.Nodes[1]
	size := uint64(cfg.Pages) * 4096
	k.region, k.shadow = own.Alloc(size), own.Alloc(size)
	// Writes land and are logged without their data: the log says which
	// pages changed, the pages themselves hold what changed.
	if _, err := own.CreateLog(ckptIUID, 64<<10, iommu.Poll, k.logged); err != nil {
		return nil, err
	}
	if _, err := own.CreateFlushPage(ckptIUID); err != nil {
		return nil, err
	}
	if err := own.Register(k.region, size, iommu.Perm{Bits: pte.R | pte.W | pte.WL | pte.E, IUID: ckptIUID}); err != nil {
		return nil, err
	}
	rw := iommu.Perm{Bits: pte.R | pte.W}
	k.flag = own.Alloc(4096)
	if err := own.Register(k.flag, 4096, rw); err != nil {
		return nil, err
	}
	k.ack = src.Alloc(4096)
	if err := src.Register(k.ack, 4096, rw); err != nil {
		return nil, err
	}
	buf := src.Alloc(4096)
	if err := src.Register(buf, 4096, rw); err != nil {
		return nil, err
	}
	one := own.Alloc(4096)
	if err := own.Register(one, 4096, rw); err != nil {
		return nil, err
	}
	src.Spawn(0, "ckpt_writer", func(x *aa.Ctx) { k.writer(x, buf) })
	own.Spawn(0, "ckpt_taker", func(x *aa.Ctx) { k.taker(x, one) })
	return k, nil
}

// logged is node 1's handler: a put record names a written page.
func (k *checkpoint) logged(_ *aa.Ctx, r aa.Record) {
	k.res.Records++
	if r.Kind == record.Put && r.IOVA >= k.region && r.IOVA < k.region+uint64(k.cfg.Pages)*4096 {
		k.dirty[int((r.IOVA-k.region)/4096)] = true
	}
}

// writer is node 0's process: per epoch, puts to random pages, then makes
// them visible and logged (Flush, ActiveFlush) and asks for a checkpoint.
func (k *checkpoint) writer(x *aa.Ctx, buf uint64) {
	r := sim.NewRand(k.cfg.Seed, "ckpt.pages")
	for e := 1; e <= k.cfg.Epochs; e++ {
		written := map[int]bool{}
		for i := 0; i < k.cfg.Puts; i++ {
			page := r.IntN(k.cfg.Pages)
			off := uint64(r.IntN(4096/8)) * 8
			slot := buf + uint64(i%512)*8
			x.P.Op("ckpt.put")
			k.start()
			x.P.Store64(slot, uint64(e)<<32|uint64(i)+1)
			x.Put(1, slot, k.region+uint64(page)*4096+off, 8)
			written[page] = true
		}
		x.P.Op("ckpt.epoch")
		k.start()
		x.Flush(1)
		x.ActiveFlush(1, ckptIUID)
		k.res.Written = append(k.res.Written, sortedKeys(written))
		// Ask node 1 for checkpoint e and wait for its acknowledgement.
		x.P.Store64(buf+4088, uint64(e))
		x.Wait(x.Put(1, buf+4088, k.flag, 8))
		ack := k.ack
		x.P.Poll(func() bool { return x.N.Mem.Load64(ack) == uint64(e) })
	}
	k.end = x.Now()
}

// taker is node 1's checkpointing process: on each request it copies the
// pages the log named since the last checkpoint into the shadow copy.
func (k *checkpoint) taker(x *aa.Ctx, one uint64) {
	page := make([]byte, 4096)
	for e := 1; e <= k.cfg.Epochs; e++ {
		flag := k.flag
		x.P.Poll(func() bool { return x.N.Mem.Load64(flag) == uint64(e) })
		dirty := sortedKeys(k.dirty)
		clear(k.dirty)
		for _, p := range dirty {
			a := uint64(p) * 4096
			x.P.Read(k.region+a, page)
			x.P.Write(k.shadow+a, page)
		}
		k.res.Dirty = append(k.res.Dirty, dirty)
		k.res.PagesCopied = append(k.res.PagesCopied, len(dirty))
		x.P.Store64(one, uint64(e))
		x.Wait(x.Put(0, one, k.ack, 8))
	}
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Result checks the run: each checkpoint copied exactly the pages written
// in its epoch, and the checkpoint restores the region byte for byte.
func (k *checkpoint) Result() CheckpointResult {
	res := k.res
	res.Epochs, res.SimTimePS = len(res.PagesCopied), uint64(k.end)
	if len(res.Dirty) != k.cfg.Epochs || len(res.Written) != k.cfg.Epochs {
		res.Problems = append(res.Problems, fmt.Sprintf("%d checkpoints and %d epochs of %d", len(res.Dirty), len(res.Written), k.cfg.Epochs))
	}
	for e := 0; e < min(len(res.Dirty), len(res.Written)); e++ {
		if !slices.Equal(res.Dirty[e], res.Written[e]) {
			res.Problems = append(res.Problems, fmt.Sprintf("checkpoint %d copied pages %v, the epoch wrote %v", e+1, res.Dirty[e], res.Written[e]))
		}
	}
	m := k.c.Nodes[1].Mem
	a, b := make([]byte, 4096), make([]byte, 4096)
	for p := 0; p < k.cfg.Pages; p++ {
		m.Read(k.region+uint64(p)*4096, a)
		m.Read(k.shadow+uint64(p)*4096, b)
		if !slices.Equal(a, b) {
			res.Problems = append(res.Problems, fmt.Sprintf("page %d: the checkpoint does not restore it", p))
			break
		}
	}
	res.Verified = len(res.Problems) == 0
	return res
}
