// Package splitc runs Split-C style programs over Active Messages II: the
// stand-ins of seed 000's three applications (3D FFT, connected
// components, EM3D). A program is SPMD: every processor (rank) runs the
// same function, exchanges one-way stores (short AM-II requests of up to 8
// words, bulk ones of up to 8 kB) and meets the others at Sync, Split-C's
// all_store_sync: a barrier that returns once every store sent before it
// has run its handler, with a global reduction.
//
// Two runtimes run the same program: AM (on the machine, every rank an
// AM-II endpoint on a core, every store an AM-II request, the barrier a
// tree of AM-II requests, every memory access costed) and Tally (no
// machine: the stores are counted and delivered at the barrier, so the
// per-processor message counts of seed 000's Table 4 come at the paper's
// full sizes in seconds). The programs are written so that what they send
// does not depend on when a store arrives, so both count the same stores;
// a test checks it.
package splitc

import (
	"errors"
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Limits of a store (AM-II's, seed 000 L68).
const (
	MaxArgs  = 8
	MaxBulk  = 8192
	Handlers = 16 // a program's handler indices 1..Handlers-1
)

// Msg is what a store's handler gets on the receiving rank.
type Msg struct {
	From int      // the sending rank
	Args []uint32 // up to MaxArgs
	Data uint64   // bulk data in the receiver's memory, Len bytes, valid until the handler returns
	Len  int
}

// Handler runs a store on the receiving rank (on its processor).
type Handler func(m *Msg)

// Op is a Sync's reduction.
type Op int

// Reductions.
const (
	Sum Op = iota
	Max
	Or
)

func (o Op) apply(a, b uint64) uint64 {
	switch o {
	case Max:
		return max(a, b)
	case Or:
		return a | b
	}
	return a + b
}

// Rank is one processor of a program: its stores, barrier and costed
// memory. Addresses are in the rank's node memory (Alloc).
type Rank interface {
	ID() int
	Procs() int
	// Handle installs handler i (1..Handlers-1); every rank installs the
	// same ones before its first Sync, and nothing is sent before it.
	Handle(i int, h Handler) error
	// Store sends a short store to rank dst's handler h.
	Store(dst, h int, args ...uint32) error
	// StoreBulk sends n bytes at src (1..MaxBulk) to rank dst's handler h.
	StoreBulk(dst, h int, src uint64, n int, args ...uint32) error
	// Sync waits until every rank has reached it and every store sent
	// before it has run, then returns the reduction of every rank's v()
	// (called once every store to this rank has run).
	Sync(op Op, v func() uint64) (uint64, error)
	Alloc(n uint64) uint64
	Read(addr uint64, b []byte)
	Write(addr uint64, b []byte)
	Copy(dst, src, n uint64)
	Compute(cycles int)
	Now() sim.Tick
	// Poke and Peek write and read memory without a cost: a program's
	// input before its first Sync and its result after the last.
	Poke(addr uint64, b []byte)
	Peek(addr uint64, b []byte)
}

// Program is what every rank runs.
type Program func(r Rank) error

// Layout places ranks on a machine: rank i on core i % PerNode of node
// i / PerNode.
type Layout struct {
	Nodes, PerNode int
}

// Procs is the layout's rank count.
func (l Layout) Procs() int { return l.Nodes * l.PerNode }

// Node is the node of rank i.
func (l Layout) Node(i int) int { return i / l.PerNode }

func (l Layout) String() string {
	if l.Nodes == 1 {
		return fmt.Sprintf("one SMP of %d", l.PerNode)
	}
	if l.PerNode == 1 {
		return fmt.Sprintf("a NOW of %d", l.Nodes)
	}
	return fmt.Sprintf("a Clump of %d × %d", l.Nodes, l.PerNode)
}

// Validate checks the layout.
func (l Layout) Validate() error {
	if l.Nodes < 1 || l.PerNode < 1 || l.Procs() > 256 {
		return fmt.Errorf("splitc: layout %d nodes × %d ranks: want at least one of each and at most 256 ranks (AM-II's destination table)", l.Nodes, l.PerNode)
	}
	return nil
}

// Counts are what a rank sent, by destination rank: application stores
// (short and bulk), the replies to the stores it received (every AM-II
// request is answered by an empty short reply), and the barrier's
// messages with their replies.
type Counts struct {
	Short, Bulk []uint64 // by destination
	BulkBytes   []uint64
	Reply       []uint64 // by destination: the stores' senders
	Sync        uint64
}

func newCounts(p int) Counts {
	return Counts{Short: make([]uint64, p), Bulk: make([]uint64, p), BulkBytes: make([]uint64, p), Reply: make([]uint64, p)}
}

// Split is a rank's messages split into local (to a rank of its own
// node) and network (another node's): short ones (short stores and the
// replies to all stores, as seed 000's Table 4 counts short messages) and
// bulk stores.
type Split struct {
	NetShort, NetBulk, LocalShort, LocalBulk uint64
}

// Split classifies the counts of rank i by layout l.
func (c Counts) Split(l Layout, i int) Split {
	var s Split
	for d := range c.Short {
		if l.Node(d) == l.Node(i) {
			s.LocalShort += c.Short[d] + c.Reply[d]
			s.LocalBulk += c.Bulk[d]
		} else {
			s.NetShort += c.Short[d] + c.Reply[d]
			s.NetBulk += c.Bulk[d]
		}
	}
	return s
}

// checkStore validates a store before anything is sent.
func checkStore(p, dst, h, n int, args []uint32, handlers []Handler) error {
	switch {
	case dst < 0 || dst >= p:
		return fmt.Errorf("splitc: store to rank %d of %d", dst, p)
	case h < 1 || h >= Handlers:
		return fmt.Errorf("splitc: handler %d, want 1..%d", h, Handlers-1)
	case handlers[h] == nil:
		return fmt.Errorf("splitc: handler %d not installed", h)
	case len(args) > MaxArgs:
		return fmt.Errorf("splitc: %d arguments, want at most %d", len(args), MaxArgs)
	case n < 0 || n > MaxBulk:
		return fmt.Errorf("splitc: a bulk store of %d bytes, want 1..%d", n, MaxBulk)
	}
	return nil
}

// errStopped ends the ranks of a run another rank failed.
var errStopped = errors.New("splitc: stopped: another rank failed")
