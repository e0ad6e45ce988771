// Package iommu is a VT-d style IOMMU (legacy mode) with the Active Access
// extensions, as a cycle-level block. Read it in this order:
//
//   - spec.go: every parameter, with its default.
//   - driver.go: the OS side: root, context and page tables written into
//     simulated memory in their real formats; access logs and flushing pages
//     registered; invalidations.
//   - translate.go: context cache, IOTLB and the 4-level page walk.
//   - decide.go: the AA decision tables (DESIGN.md §2.2, §2.3).
//   - write.go: the path of a device write (MWr, AtomicOp) through the IOMMU.
//   - read.go: the path of a device read (MRd) and its completions.
//   - accesslog.go: access-log table, reservations, holes, wrap, notification.
//   - faults.go: VT-d fault recording registers and the fault event.
//   - iommu.go: the block: ports, the processing pipeline, tracing.
package iommu

import (
	"errors"
	"fmt"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// Spec is the IOMMU's configuration.
type Spec struct {
	// Bypass takes the IOMMU off the DMA path (no-iommu; VT-d with
	// translation disabled, GCMD.TE=0): device requests go to memory
	// untranslated, at one TLP a cycle, with no processing delay, no context
	// cache, IOTLB or page walk, no AA decisions, records or faults. The root
	// complex still routes completions, doorbells and MSIs. Access logs and
	// flushing pages need the extended IOMMU, so a bypassed IOMMU refuses
	// them (Driver.CreateLog, RegisterFlushPage).
	Bypass bool

	// IOTLB: sets × ways (1 × N is fully associative, N × 1 direct-mapped).
	IOTLBSets, IOTLBWays int          // default 16 × 4
	IOTLBEviction        sim.Eviction // default LRU
	// IOTLBByKind counts the IOTLB's hits and misses by the label of the
	// page (Driver.Label; kinds.go). IOTLBOnly, if set, lets only the
	// pages of that label use the IOTLB (the others are translated outside
	// it at no cost); it counts by label too.
	IOTLBByKind bool
	IOTLBOnly   string
	// Context cache, keyed by source ID.
	CtxSets, CtxWays int // default 1 × 16
	CtxEviction      sim.Eviction

	ProcessPS   sim.Tick // IOMMU processing per TLP (default 5 ns)
	MemAccessPS sim.Tick // each memory access of the IOMMU: walk level, table read (default 70 ns)

	// Slots is how many TLPs the IOMMU has in flight at once. 0 (the
	// default, the AA paper's model) takes one TLP at a time: the next is
	// taken when the previous one's processing and memory accesses are
	// over. With Slots > 0 the translation is a pipeline: one TLP is taken
	// per edge while fewer than Slots are in flight, an IOTLB hit is done
	// ProcessPS later, a TLP with memory accesses (page walk, log
	// descriptor) waits for one of Walkers walkers and then takes them,
	// and a port's TLPs finish in the order they were taken (PCIe orders a
	// device's stream, not different devices' streams). Decisions are the
	// same as one at a time; only when they take effect changes.
	Slots   int
	Walkers int // walks in flight with Slots > 0 (at least 1)

	LogCAMEntries      int // access-log table entries on chip (default 16)
	TagBufferEntries   int // outstanding logged or flush reads (default 64)
	FlushBufferEntries int // flushing pages (default 8)
	FaultRecords       int // NFR: fault recording registers (default 8)
	MaxActiveBytes     int // largest active put/get (default 4096)
	// FlushWaiters is how many flush gets one flushing page holds at
	// once, each with its own requester, tag and log position. 0 (the
	// default) or 1: one; a second flush of the page waits at the head of
	// its port's non-posted lane until the first is released.
	FlushWaiters     int
	HeadPollPS       sim.Tick // re-read a log's head this often while waiting on it (default 100 ns)
	NotifyIntervalPS sim.Tick // Int mode: notify records below the threshold after this long (default 10 µs)
	MemQueue         int      // IOMMU writes to memory waiting for the controller before input stalls (default 64)
	DataPathBytes    int      // payload bytes a port's data path moves per cycle (default 32)

	RootTable uint64 // RTADDR: physical address of the root table
	LogTable  uint64 // physical address of the in-memory access-log table (1024 × 64 bytes)

	ID tlp.ID // the root complex / IOMMU's ID in the completions it makes (default 00:00.0)
}

// ErrBypassed is the error of an Active Access set-up on a bypassed IOMMU:
// without the extended IOMMU nothing logs accesses.
var ErrBypassed = errors.New("the IOMMU is bypassed (no-iommu); Active Access needs the extended IOMMU")

// DefaultSpec returns the defaults of DESIGN.md §3.
func DefaultSpec() Spec {
	return Spec{IOTLBSets: 16, IOTLBWays: 4, IOTLBEviction: sim.LRU, CtxSets: 1, CtxWays: 16, CtxEviction: sim.LRU,
		ProcessPS: 5 * sim.NS, MemAccessPS: 70 * sim.NS, LogCAMEntries: 16, TagBufferEntries: 64,
		FlushBufferEntries: 8, FaultRecords: 8, MaxActiveBytes: 4096, HeadPollPS: 100 * sim.NS,
		NotifyIntervalPS: 10 * sim.US, MemQueue: 64, DataPathBytes: 32,
		RootTable: 0x10_0000, LogTable: 0x20_0000}
}

// Validate checks the configuration and names the wrong field.
func (s Spec) Validate() error {
	switch {
	case s.IOTLBSets < 1 || s.IOTLBWays < 1:
		return fmt.Errorf("iotlb: %d sets × %d ways", s.IOTLBSets, s.IOTLBWays)
	case s.CtxSets < 1 || s.CtxWays < 1:
		return fmt.Errorf("context cache: %d sets × %d ways", s.CtxSets, s.CtxWays)
	case s.LogCAMEntries < 1:
		return fmt.Errorf("log_cam_entries: %d", s.LogCAMEntries)
	case s.TagBufferEntries < 1:
		return fmt.Errorf("tag_buffer_entries: %d", s.TagBufferEntries)
	case s.FlushBufferEntries < 1:
		return fmt.Errorf("flush_buffer_entries: %d", s.FlushBufferEntries)
	case s.FaultRecords < 1 || s.FaultRecords > 256:
		return fmt.Errorf("fault_records: %d out of 1..256", s.FaultRecords)
	case s.MaxActiveBytes < 4 || s.MaxActiveBytes > 1<<20:
		return fmt.Errorf("max_active_bytes: %d", s.MaxActiveBytes)
	case s.RootTable&0xfff != 0 || s.LogTable&0xfff != 0:
		return fmt.Errorf("root_table and log_table must be 4 KB aligned")
	case s.HeadPollPS == 0:
		return fmt.Errorf("head_poll_ps must be positive")
	case s.MemQueue < 1:
		return fmt.Errorf("mem_queue: %d", s.MemQueue)
	case s.FlushWaiters < 0 || s.FlushWaiters > 1024:
		return fmt.Errorf("flush waiters: %d out of 0..1024", s.FlushWaiters)
	case s.Slots < 0 || s.Slots > 1024:
		return fmt.Errorf("slots: %d out of 0..1024", s.Slots)
	case s.Slots > 0 && (s.Walkers < 1 || s.Walkers > s.Slots):
		return fmt.Errorf("walkers: %d out of 1..slots (%d)", s.Walkers, s.Slots)
	case s.DataPathBytes < 4:
		return fmt.Errorf("data_path_bytes: %d, want at least 4", s.DataPathBytes)
	}
	return nil
}
