package mpi

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/msg/shm"
)

// Op is a reduction operation on elements of Size bytes: Apply combines in
// into acc element by element (acc = acc ⊕ in, acc holding the lower
// ranks' contribution). Cycles is its cost per element on the core. The
// predefined ones are commutative.
type Op struct {
	Name   string
	Size   int
	Cycles int
	Apply  func(acc, in []byte)
	// Tree is what Blue Gene/L's collective network computes for it (zero:
	// nothing; the collectives of BGL then use the torus).
	Tree bglml.TreeReduction
}

func (o Op) onTree(t bglml.TreeReduction) Op { o.Tree = t; return o }

func u64op(name string, f func(a, b uint64) uint64) Op {
	return Op{Name: name, Size: 8, Cycles: 1, Apply: func(acc, in []byte) {
		for i := 0; i+8 <= len(acc); i += 8 {
			binary.LittleEndian.PutUint64(acc[i:], f(binary.LittleEndian.Uint64(acc[i:]), binary.LittleEndian.Uint64(in[i:])))
		}
	}}
}

func f64op(name string, f func(a, b float64) float64) Op {
	return Op{Name: name, Size: 8, Cycles: 2, Apply: func(acc, in []byte) {
		for i := 0; i+8 <= len(acc); i += 8 {
			a := math.Float64frombits(binary.LittleEndian.Uint64(acc[i:]))
			b := math.Float64frombits(binary.LittleEndian.Uint64(in[i:]))
			binary.LittleEndian.PutUint64(acc[i:], math.Float64bits(f(a, b)))
		}
	}}
}

// The predefined reductions on 64-bit elements.
var (
	SumUint64   = u64op("sum_uint64", func(a, b uint64) uint64 { return a + b }).onTree(bglml.TreeSumInt)
	MaxUint64   = u64op("max_uint64", func(a, b uint64) uint64 { return max(a, b) }).onTree(bglml.TreeMaxUint)
	MinUint64   = u64op("min_uint64", func(a, b uint64) uint64 { return min(a, b) }).onTree(bglml.TreeMinUint)
	SumInt64    = u64op("sum_int64", func(a, b uint64) uint64 { return uint64(int64(a) + int64(b)) }).onTree(bglml.TreeSumInt)
	MaxInt64    = u64op("max_int64", func(a, b uint64) uint64 { return uint64(max(int64(a), int64(b))) }).onTree(bglml.TreeMaxInt)
	MinInt64    = u64op("min_int64", func(a, b uint64) uint64 { return uint64(min(int64(a), int64(b))) }).onTree(bglml.TreeMinInt)
	BandUint64  = u64op("band_uint64", func(a, b uint64) uint64 { return a & b }).onTree(bglml.TreeAnd)
	BorUint64   = u64op("bor_uint64", func(a, b uint64) uint64 { return a | b }).onTree(bglml.TreeOr)
	BxorUint64  = u64op("bxor_uint64", func(a, b uint64) uint64 { return a ^ b }).onTree(bglml.TreeXor)
	SumFloat64  = f64op("sum_float64", func(a, b float64) float64 { return a + b }).onTree(bglml.TreeSumFloat)
	MaxFloat64  = f64op("max_float64", math.Max).onTree(bglml.TreeMaxFloat)
	MinFloat64  = f64op("min_float64", math.Min).onTree(bglml.TreeMinFloat)
	ProdFloat64 = f64op("prod_float64", func(a, b float64) float64 { return a * b })
)

// Collectives implements the collective operations of a communicator. The
// default, Algorithms, builds them from point-to-point messages; a
// topology-aware variant (an SMP-aware two-stage broadcast, a tree network)
// embeds Algorithms and overrides what it does better. Implementations send
// on c.Collective(), not on c.
type Collectives interface {
	Barrier(c *Comm) error
	Bcast(c *Comm, b Buf, root int) error
	// Reduce combines every rank's send into root's recv (recv is ignored
	// elsewhere); Allreduce into every rank's recv.
	Reduce(c *Comm, send, recv Buf, op Op, root int) error
	Allreduce(c *Comm, send, recv Buf, op Op) error
	// Alltoall sends block i of send to rank i and receives rank i's into
	// block i of recv; blocks are len(send)/size bytes.
	Alltoall(c *Comm, send, recv Buf) error
}

// Tags of the collectives' messages (in the collective context).
const (
	tagBarrier = 1 + iota
	tagBcast
	tagReduce
	tagAllreduce
	tagAlltoall
	tagSplit
)

// Algorithms are the collectives over point-to-point messages: a
// dissemination barrier, a binomial-tree broadcast and reduce, allreduce
// by recursive doubling (reduce then broadcast when the size is not a power
// of two), and a pairwise-exchange alltoall.
type Algorithms struct{}

// Barrier: in round k every rank sends to rank+2^k and receives from
// rank−2^k (⌈log2 n⌉ rounds).
func (Algorithms) Barrier(c *Comm) error {
	cc := c.Collective()
	n, me := c.Size(), c.Rank()
	for k := 1; k < n; k <<= 1 {
		if _, err := cc.Sendrecv(Buf{}, (me+k)%n, tagBarrier, Buf{}, (me-k+n)%n, tagBarrier); err != nil {
			return err
		}
	}
	return nil
}

// Bcast: a binomial tree rooted at root (MPICH's short-message algorithm).
func (Algorithms) Bcast(c *Comm, b Buf, root int) error {
	cc := c.Collective()
	n := c.Size()
	rel := (c.Rank() - root + n) % n
	mask := 1
	for mask < n {
		if rel&mask != 0 {
			if _, err := cc.Recv(b, (rel-mask+root)%n, tagBcast); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < n {
			if err := cc.Send(b, (rel+mask+root)%n, tagBcast); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reduce: a binomial tree towards root; a rank combines what its subtree
// sends it (higher ranks) after its own data.
func (Algorithms) Reduce(c *Comm, send, recv Buf, op Op, root int) error {
	r := c.r
	if err := checkOp(send, op); err != nil {
		return err
	}
	if c.Rank() == root && recv.Len != send.Len {
		return fmt.Errorf("mpi: Reduce into %d bytes from %d", recv.Len, send.Len)
	}
	cc := c.Collective()
	n := c.Size()
	rel := (c.Rank() - root + n) % n
	acc, in := r.tmp(send.Len), r.tmp(send.Len)
	defer r.release(acc)
	defer r.release(in)
	r.memcpy(acc, send)
	for mask := 1; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			if err := cc.Send(acc, (rel&^mask+root)%n, tagReduce); err != nil {
				return err
			}
			return nil
		}
		if rel|mask < n {
			if _, err := cc.Recv(in, (rel|mask+root)%n, tagReduce); err != nil {
				return err
			}
			r.reduce(acc, in, op)
		}
	}
	r.memcpy(recv, acc)
	return nil
}

// Allreduce by recursive doubling when the size is a power of two (each
// pair combines lower ⊕ upper, so every rank gets the same bits), else a
// reduce to rank 0 and a broadcast.
func (a Algorithms) Allreduce(c *Comm, send, recv Buf, op Op) error {
	r := c.r
	if err := checkOp(send, op); err != nil {
		return err
	}
	if recv.Len != send.Len {
		return fmt.Errorf("mpi: Allreduce into %d bytes from %d", recv.Len, send.Len)
	}
	n, me := c.Size(), c.Rank()
	if n&(n-1) != 0 {
		if err := a.Reduce(c, send, recv, op, 0); err != nil {
			return err
		}
		return a.Bcast(c, recv, 0)
	}
	cc := c.Collective()
	acc, in := r.tmp(send.Len), r.tmp(send.Len)
	r.memcpy(acc, send)
	for mask := 1; mask < n; mask <<= 1 {
		peer := me ^ mask
		if _, err := cc.Sendrecv(acc, peer, tagAllreduce, in, peer, tagAllreduce); err != nil {
			return err
		}
		if peer < me {
			r.reduce(in, acc, op) // theirs (lower) ⊕ mine
			acc, in = in, acc
		} else {
			r.reduce(acc, in, op)
		}
	}
	r.memcpy(recv, acc)
	r.release(acc)
	r.release(in)
	return nil
}

// Alltoall by pairwise exchange: in step i a rank sends to rank+i and
// receives from rank−i.
func (Algorithms) Alltoall(c *Comm, send, recv Buf) error {
	r := c.r
	n, me := c.Size(), c.Rank()
	if send.Len%n != 0 || recv.Len != send.Len {
		return fmt.Errorf("mpi: Alltoall of %d bytes into %d among %d ranks", send.Len, recv.Len, n)
	}
	blk := send.Len / n
	cc := c.Collective()
	r.memcpy(recv.Slice(me*blk, blk), send.Slice(me*blk, blk))
	for i := 1; i < n; i++ {
		dst, src := (me+i)%n, (me-i+n)%n
		if _, err := cc.Sendrecv(send.Slice(dst*blk, blk), dst, tagAlltoall, recv.Slice(src*blk, blk), src, tagAlltoall); err != nil {
			return err
		}
	}
	return nil
}

func checkOp(b Buf, op Op) error {
	if op.Size < 1 || op.Apply == nil {
		return fmt.Errorf("mpi: reduction %q has no element size or function", op.Name)
	}
	if b.Len%op.Size != 0 {
		return fmt.Errorf("mpi: %s over %d bytes, not a whole number of %d-byte elements", op.Name, b.Len, op.Size)
	}
	return nil
}

// memcpy copies src into dst (the rank's loads and stores).
func (r *rank) memcpy(dst, src Buf) {
	if src.Len > dst.Len {
		panic(fmt.Sprintf("mpi: copying %d bytes into %d", src.Len, dst.Len))
	}
	if src.Len > 0 && dst.Addr != src.Addr {
		shm.Copy(r.p, dst.Addr, src.Addr, src.Len)
	}
}

// reduce computes acc = acc ⊕ in in memory: both read, combined on the
// core, acc written back.
func (r *rank) reduce(acc, in Buf, op Op) {
	if acc.Len == 0 {
		return
	}
	a, b := make([]byte, acc.Len), make([]byte, in.Len)
	r.p.Read(acc.Addr, a)
	r.p.Read(in.Addr, b)
	op.Apply(a, b)
	r.compute(op.Cycles * (acc.Len / op.Size))
	r.p.Write(acc.Addr, a)
}

// --- the collectives of Comm ---

func (c *Comm) collective(name string, f func() error) error {
	c.enter()
	r := c.r
	r.frames = append(r.frames, name)
	err := f()
	r.frames = r.frames[:len(r.frames)-1]
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Barrier returns when every rank of the communicator has entered it
// (MPI_Barrier).
func (c *Comm) Barrier() error {
	return c.collective("Barrier", func() error { return c.r.w.cfg.Collectives.Barrier(c) })
}

// Bcast sends root's b to every rank's b (MPI_Bcast).
func (c *Comm) Bcast(b Buf, root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("mpi: Bcast from root %d of %d", root, c.Size())
	}
	return c.collective("Bcast", func() error { return c.r.w.cfg.Collectives.Bcast(c, b, root) })
}

// Reduce combines every rank's send with op into root's recv (MPI_Reduce).
func (c *Comm) Reduce(send, recv Buf, op Op, root int) error {
	if root < 0 || root >= c.Size() {
		return fmt.Errorf("mpi: Reduce to root %d of %d", root, c.Size())
	}
	return c.collective("Reduce", func() error { return c.r.w.cfg.Collectives.Reduce(c, send, recv, op, root) })
}

// Allreduce combines every rank's send with op into every rank's recv
// (MPI_Allreduce).
func (c *Comm) Allreduce(send, recv Buf, op Op) error {
	return c.collective("Allreduce", func() error { return c.r.w.cfg.Collectives.Allreduce(c, send, recv, op) })
}

// Alltoall exchanges a block with every rank (MPI_Alltoall).
func (c *Comm) Alltoall(send, recv Buf) error {
	return c.collective("Alltoall", func() error { return c.r.w.cfg.Collectives.Alltoall(c, send, recv) })
}

// Split makes a communicator of the ranks that give the same color,
// ordered by key then by rank here (MPI_Comm_split); color Undefined gets
// nil. Every rank of c must call it.
func (c *Comm) Split(color, key int) (*Comm, error) {
	var out *Comm
	err := c.collective("Split", func() error {
		var err error
		out, err = c.split(color, key)
		return err
	})
	return out, err
}

// Dup makes a communicator of the same group with a context of its own
// (MPI_Comm_dup).
func (c *Comm) Dup() (*Comm, error) {
	var out *Comm
	err := c.collective("Dup", func() error {
		var err error
		out, err = c.split(0, c.Rank())
		return err
	})
	return out, err
}

// split gathers every rank's (color, key) at rank 0, broadcasts the table
// and builds the new group.
func (c *Comm) split(color, key int) (*Comm, error) {
	r := c.r
	cc := c.Collective()
	n := c.Size()
	table := r.tmp(16 * n)
	defer r.release(table)
	mine := r.tmp(16)
	defer r.release(mine)
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(int64(color)))
	binary.LittleEndian.PutUint64(b[8:], uint64(int64(key)))
	r.p.Write(mine.Addr, b[:])
	if c.Rank() == 0 {
		r.memcpy(table.Slice(0, 16), mine)
		for i := 1; i < n; i++ {
			if _, err := cc.Recv(table.Slice(16*i, 16), i, tagSplit); err != nil {
				return nil, err
			}
		}
	} else if err := cc.Send(mine, 0, tagSplit); err != nil {
		return nil, err
	}
	if err := (Algorithms{}).Bcast(c, table, 0); err != nil {
		return nil, err
	}
	data := make([]byte, 16*n)
	r.p.Read(table.Addr, data)
	seq := c.splits
	c.splits++
	if color == Undefined {
		return nil, nil
	}
	type member struct{ key, rank int }
	var ms []member
	for i := 0; i < n; i++ {
		if int(int64(binary.LittleEndian.Uint64(data[16*i:]))) == color {
			ms = append(ms, member{int(int64(binary.LittleEndian.Uint64(data[16*i+8:]))), i})
		}
	}
	slices.SortStableFunc(ms, func(a, b member) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return cmp.Compare(a.rank, b.rank)
	})
	group := make([]int, len(ms))
	for i, m := range ms {
		group[i] = c.group[m.rank]
	}
	ctx, err := r.w.context(c.ctx, seq, color)
	if err != nil {
		return nil, err
	}
	return newComm(r, ctx, group), nil
}
