package mpi

// MPICH2 is MPICH2's broadcast as seed 002 describes it (L152): a binomial
// tree for short messages; for long ones (MPICH2's short-message limit,
// 12,288 bytes, by default) a binomial scatter of the message's n pieces
// followed by a ring allgather, so that the root sends each byte about
// once instead of log2 n times. The other collectives are Algorithms'.
type MPICH2 struct {
	Algorithms
	// ShortBytes is the largest broadcast that goes by the binomial tree
	// (0: 12,288).
	ShortBytes int
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
