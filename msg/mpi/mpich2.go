package mpi

import "fmt"

// MPICH2 is MPICH2's broadcast as seed 002 describes it (L152): a binomial
// tree for short messages; for long ones (MPICH2's short-message limit,
// 12,288 bytes, by default) a binomial scatter of the message's n pieces
// followed by a ring allgather, so that the root sends each byte about
// once instead of log2 n times. Its alltoall chooses by block size as
// MPICH2's does (L201: "one of four strategies, depending on message size
// and communicator size"; MPICH2's own thresholds): Bruck's algorithm for
// blocks of up to 256 bytes among 8 ranks or more, every receive and send
// posted at once up to 32 KB, pairwise exchange above. The other
// collectives are Algorithms'.
type MPICH2 struct {
	Algorithms
	// ShortBytes is the largest broadcast that goes by the binomial tree
	// (0: 12,288).
	ShortBytes int
	// AlltoallShort and AlltoallMedium are the largest alltoall blocks
	// that go by Bruck's algorithm and by posting everything (0: 256 and
	// 32,768).
	AlltoallShort, AlltoallMedium int
}

// The alltoall's algorithms, as MPICH2 names them.
const (
	AlltoallBruck    = "bruck"
	AlltoallPosted   = "posted"
	AlltoallPairwise = "pairwise"
)

// AlltoallAlgorithm is the algorithm MPICH2's alltoall takes for blocks
// of blk bytes among n ranks.
func (m MPICH2) AlltoallAlgorithm(blk, n int) string {
	short, medium := m.AlltoallShort, m.AlltoallMedium
	if short == 0 {
		short = 256
	}
	if medium == 0 {
		medium = 32768
	}
	switch {
	case blk <= short && n >= 8:
		return AlltoallBruck
	case blk <= medium:
		return AlltoallPosted
	}
	return AlltoallPairwise
}

// Alltoall sends block i of send to rank i and receives rank i's into
// block i of recv, by the algorithm AlltoallAlgorithm chooses.
func (m MPICH2) Alltoall(c *Comm, send, recv Buf) error {
	n, me := c.Size(), c.Rank()
	if send.Len%n != 0 || recv.Len != send.Len {
		return fmt.Errorf("mpi: Alltoall of %d bytes into %d among %d ranks", send.Len, recv.Len, n)
	}
	blk := send.Len / n
	r, cc := c.r, c.Collective()
	switch m.AlltoallAlgorithm(blk, n) {
	case AlltoallBruck:
		return bruck(c, send, recv, blk)
	case AlltoallPosted:
		// Every receive, then every send, posted in the order rank+i
		// (MPICH2 spreads the destinations so that not all ranks send to
		// rank 0 first), then a wait for all.
		r.memcpy(recv.Slice(me*blk, blk), send.Slice(me*blk, blk))
		qs := make([]*Request, 0, 2*(n-1))
		for i := 1; i < n; i++ {
			src := (me + i) % n
			qs = append(qs, cc.Irecv(recv.Slice(src*blk, blk), src, tagAlltoall))
		}
		for i := 1; i < n; i++ {
			dst := (me + i) % n
			qs = append(qs, cc.Isend(send.Slice(dst*blk, blk), dst, tagAlltoall))
		}
		_, err := cc.Waitall(qs...)
		return err
	}
	// Pairwise exchange: with a power-of-two number of ranks step i pairs
	// rank with rank XOR i (MPICH2's choice), else sends to rank+i and
	// receives from rank−i.
	if n&(n-1) != 0 {
		return m.Algorithms.Alltoall(c, send, recv)
	}
	r.memcpy(recv.Slice(me*blk, blk), send.Slice(me*blk, blk))
	for i := 1; i < n; i++ {
		peer := me ^ i
		if _, err := cc.Sendrecv(send.Slice(peer*blk, blk), peer, tagAlltoall, recv.Slice(peer*blk, blk), peer, tagAlltoall); err != nil {
			return err
		}
	}
	return nil
}

// bruck is Bruck's alltoall (MPICH2's for short blocks): ⌈log2 n⌉ steps
// instead of n−1. The blocks are first rotated so that block i is for
// rank me+i; in step k every block whose index has bit k goes, packed
// together, to rank me+2^k, and the same positions come back from
// me−2^k; a last rotation puts the block from rank j at j.
func bruck(c *Comm, send, recv Buf, blk int) error {
	n, me := c.Size(), c.Rank()
	r, cc := c.r, c.Collective()
	tmp := r.tmp(n * blk)
	defer r.release(tmp)
	for i := 0; i < n; i++ {
		r.memcpy(tmp.Slice(i*blk, blk), send.Slice(((me+i)%n)*blk, blk))
	}
	out, in := r.tmp(n/2*blk+blk), r.tmp(n/2*blk+blk)
	defer r.release(out)
	defer r.release(in)
	for pof2 := 1; pof2 < n; pof2 <<= 1 {
		k := 0
		for i := 1; i < n; i++ {
			if i&pof2 != 0 {
				r.memcpy(out.Slice(k*blk, blk), tmp.Slice(i*blk, blk))
				k++
			}
		}
		if _, err := cc.Sendrecv(out.Slice(0, k*blk), (me+pof2)%n, tagAlltoall, in.Slice(0, k*blk), (me-pof2+n)%n, tagAlltoall); err != nil {
			return err
		}
		k = 0
		for i := 1; i < n; i++ {
			if i&pof2 != 0 {
				r.memcpy(tmp.Slice(i*blk, blk), in.Slice(k*blk, blk))
				k++
			}
		}
	}
	// tmp[i] now holds the block from rank me−i.
	for i := 0; i < n; i++ {
		r.memcpy(recv.Slice(((me-i+n)%n)*blk, blk), tmp.Slice(i*blk, blk))
	}
	return nil
}

// Bcast broadcasts b from root.
func (m MPICH2) Bcast(c *Comm, b Buf, root int) error {
	short := m.ShortBytes
	if short == 0 {
		short = 12288
	}
	n := c.Size()
	if b.Len <= short || n < 3 || b.Len < n {
		return m.Algorithms.Bcast(c, b, root)
	}
	cc := c.Collective()
	rel := (c.Rank() - root + n) % n
	abs := func(r int) int { return (r%n + root) % n }
	piece := (b.Len + n - 1) / n
	// part is the pieces of relative ranks [from, to).
	part := func(from, to int) Buf {
		lo, hi := min(from*piece, b.Len), min(min(to, n)*piece, b.Len)
		return Buf{Addr: b.Addr + uint64(lo), Len: hi - lo}
	}
	// Scatter: a rank whose lowest set bit is mask receives its subtree's
	// pieces [rel, rel+mask) from its parent, then hands each child
	// rel+m (m = mask/2, mask/4, …) the pieces of that child's subtree.
	mask := 1
	for mask < n {
		if rel&mask != 0 {
			if _, err := cc.Recv(part(rel, rel+mask), abs(rel-mask), tagBcast); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < n {
			if err := cc.Send(part(rel+mask, rel+2*mask), abs(rel+mask), tagBcast); err != nil {
				return err
			}
		}
	}
	// Ring allgather: in step s every rank passes piece rel−s to its right
	// and takes piece rel−s−1 from its left.
	right, left := abs(rel+1), abs(rel+n-1)
	for s := 0; s < n-1; s++ {
		out, in := (rel-s+n)%n, (rel-s-1+2*n)%n
		if _, err := cc.Sendrecv(part(out, out+1), right, tagBcast, part(in, in+1), left, tagBcast); err != nil {
			return err
		}
	}
	return nil
}
