package workload

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/nic"
)

// The access counter's Allreduce: the paper sums the sources' counts with
// MPI's Allreduce (004:L362). A 32 KB vector among hundreds of ranks is a
// long one, for which MPICH takes Rabenseifner's algorithm: a reduce-scatter
// by recursive halving, then an allgather by recursive doubling, with the
// ranks beyond the largest power of two folded in first and given the
// result last. Each rank sends about twice its vector in all, and the
// largest pieces go to its nearest ranks, which MPI's block placement puts
// on its own node. Rank 0 is the array's owner (node 0, core 0, counting
// nothing itself), ranks 1… the sources in node order.
//
// A send is a put into the partner's memory followed by a put of a flag
// word, once the data's put completed (between ranks of one node, a copy
// and a store); each step has its own flag word and receive area, so a
// partner already at a later step cannot overwrite what a rank still sums.

// arRank is one rank of the Allreduce.
type arRank struct {
	node, core int
	vec        uint64 // its count vector, the result at the end
	tmp        uint64 // 2 vectors: the fold's whole vector, then the reduce-scatter's pieces
	flags      uint64 // a word per step, 1 when that step's data is in
	word       uint64 // a registered word the flags are put from
	newrank    int    // in the power-of-two group; −1 for a rank folded into its neighbour
	recvOff    []int  // reduce-scatter step k's piece: its offset in tmp, in elements
	err        error  // the first of its puts that failed (written by its own process only)
}

// arPlan is the Allreduce's shape, shared by every rank.
type arPlan struct {
	n     int   // elements
	pof2  int   // the largest power of two ≤ ranks
	rem   int   // ranks − pof2
	steps int   // log2(pof2)
	cnts  []int // elements of each of pof2 blocks
	disps []int // their offsets
	ranks []*arRank
}

// Flag words: 0 the fold, 1…steps the reduce-scatter, steps+1…2·steps the
// allgather, 2·steps+1 the result back to a folded rank.
func (pl *arPlan) flagPost() int { return 2*pl.steps + 1 }

func newARPlan(n, ranks int) *arPlan {
	pl := &arPlan{n: n, pof2: 1 << (bits.Len(uint(ranks)) - 1)}
	pl.rem = ranks - pl.pof2
	pl.steps = bits.Len(uint(pl.pof2)) - 1
	pl.cnts, pl.disps = make([]int, pl.pof2), make([]int, pl.pof2)
	for i := range pl.cnts {
		pl.cnts[i] = n / pl.pof2
		if i < n%pl.pof2 {
			pl.cnts[i]++
		}
		if i > 0 {
			pl.disps[i] = pl.disps[i-1] + pl.cnts[i-1]
		}
	}
	return pl
}

// rankOf is the rank of newrank r (MPICH's mapping: the first rem of the
// group are the odd ranks of the folded pairs).
func (pl *arPlan) rankOf(r int) int {
	if r < pl.rem {
		return 2*r + 1
	}
	return r + pl.rem
}

// span is the elements of blocks [from, to).
func (pl *arPlan) span(from, to int) (off, cnt int) {
	if from >= to {
		return 0, 0
	}
	return pl.disps[from], pl.disps[to-1] + pl.cnts[to-1] - pl.disps[from]
}

// arStep is one step of a rank in the power-of-two group.
type arStep struct {
	peer             int // rank
	sendOff, sendCnt int // elements of the vector sent
	recvOff, recvCnt int // elements of the vector received
}

// schedule is newrank r's reduce-scatter and allgather steps (MPICH's
// index arithmetic).
func (pl *arPlan) schedule(r int) (rs, ag []arStep) {
	sendIdx, recvIdx, lastIdx := 0, 0, pl.pof2
	mask := 1
	for mask < pl.pof2 {
		dst := r ^ mask
		var s arStep
		s.peer = pl.rankOf(dst)
		if r < dst {
			sendIdx = recvIdx + pl.pof2/(mask*2)
			s.sendOff, s.sendCnt = pl.span(sendIdx, lastIdx)
			s.recvOff, s.recvCnt = pl.span(recvIdx, sendIdx)
		} else {
			recvIdx = sendIdx + pl.pof2/(mask*2)
			s.sendOff, s.sendCnt = pl.span(sendIdx, recvIdx)
			s.recvOff, s.recvCnt = pl.span(recvIdx, lastIdx)
		}
		rs = append(rs, s)
		sendIdx = recvIdx
		mask <<= 1
		if mask < pl.pof2 {
			lastIdx = recvIdx + pl.pof2/mask
		}
	}
	mask >>= 1
	for mask > 0 {
		dst := r ^ mask
		var s arStep
		s.peer = pl.rankOf(dst)
		if r < dst {
			if mask != pl.pof2/2 {
				lastIdx += pl.pof2 / (mask * 2)
			}
			recvIdx = sendIdx + pl.pof2/(mask*2)
			s.sendOff, s.sendCnt = pl.span(sendIdx, recvIdx)
			s.recvOff, s.recvCnt = pl.span(recvIdx, lastIdx)
		} else {
			recvIdx = sendIdx - pl.pof2/(mask*2)
			s.sendOff, s.sendCnt = pl.span(sendIdx, lastIdx)
			s.recvOff, s.recvCnt = pl.span(recvIdx, sendIdx)
		}
		ag = append(ag, s)
		if r > dst {
			sendIdx = recvIdx
		}
		mask >>= 1
	}
	return rs, ag
}

// setupAllreduce gives every rank its vector, receive areas and flags, and
// starts the owner's rank; the sources' ranks run after their accesses.
func (k *counter) setupAllreduce(pages uint64) error {
	n := k.cfg.Elements
	pl := newARPlan(n, 1+len(k.srcs))
	rw := iommu.Perm{Bits: pte.R | pte.W}
	add := func(node, core int) (*arRank, error) {
		nd := k.c.Nodes[node]
		r := &arRank{node: node, core: core, newrank: -1}
		r.vec, r.tmp, r.flags = nd.Alloc(pages), nd.Alloc(2*pages), nd.Alloc(4096)
		for _, a := range []struct{ at, size uint64 }{{r.vec, pages}, {r.tmp, 2 * pages}, {r.flags, 4096}} {
			if err := nd.Register(a.at, a.size, rw); err != nil {
				return nil, err
			}
		}
		r.word = r.flags + 4088 // the page's last word: past every step's flag
		pl.ranks = append(pl.ranks, r)
		return r, nil
	}
	if _, err := add(0, 0); err != nil {
		return err
	}
	for _, s := range k.srcs {
		r, err := add(s.node, s.core)
		if err != nil {
			return err
		}
		s.local = r.vec
	}
	for i, r := range pl.ranks {
		switch {
		case i < 2*pl.rem && i%2 == 0:
		case i < 2*pl.rem:
			r.newrank = i / 2
		default:
			r.newrank = i - pl.rem
		}
	}
	// Where each reduce-scatter step's piece lands in its receiver's tmp:
	// after the fold's whole vector, one area a step.
	for _, r := range pl.ranks {
		if r.newrank < 0 {
			continue
		}
		rs, _ := pl.schedule(r.newrank)
		off := n
		for _, s := range rs {
			r.recvOff = append(r.recvOff, off)
			off += s.recvCnt
		}
	}
	k.ar = pl
	k.c.Nodes[0].Spawn(0, "counter_allreduce", func(x *aa.Ctx) {
		k.allreduce(x, 0)
		// The owner's counts are the reduction's result.
		x.P.Memcpy(k.counts, pl.ranks[0].vec, uint64(n*8))
		k.end.note(x.Now())
	})
	return nil
}

// allreduce runs rank me's part.
func (k *counter) allreduce(x *aa.Ctx, me int) {
	pl := k.ar
	r := pl.ranks[me]
	x.P.Op("counter.allreduce")
	if me < 2*pl.rem {
		if me%2 == 0 {
			k.arSend(x, me, me+1, r.vec, pl.ranks[me+1].tmp, pl.n, 0)
			k.arWait(x, r, pl.flagPost())
			return
		}
		k.arWait(x, r, 0)
		k.arSum(x, r.vec, r.tmp, pl.n)
	}
	rs, ag := pl.schedule(r.newrank)
	for i, s := range rs {
		// The piece goes where the peer takes its step i's piece.
		peer := pl.ranks[s.peer]
		k.arSend(x, me, s.peer, r.vec+uint64(s.sendOff*8), peer.tmp+uint64(peer.recvOff[i]*8), s.sendCnt, 1+i)
		k.arWait(x, r, 1+i)
		k.arSum(x, r.vec+uint64(s.recvOff*8), r.tmp+uint64(r.recvOff[i]*8), s.recvCnt)
	}
	for i, s := range ag {
		peer := pl.ranks[s.peer]
		k.arSend(x, me, s.peer, r.vec+uint64(s.sendOff*8), peer.vec+uint64(s.sendOff*8), s.sendCnt, 1+pl.steps+i)
		k.arWait(x, r, 1+pl.steps+i)
	}
	if me < 2*pl.rem {
		k.arSend(x, me, me-1, r.vec, pl.ranks[me-1].vec, pl.n, pl.flagPost())
	}
}

// arSend moves cnt elements from local address src to the peer's dst and
// then sets the peer's flag word.
func (k *counter) arSend(x *aa.Ctx, me, peer int, src, dst uint64, cnt, flag int) {
	r, p := k.ar.ranks[me], k.ar.ranks[peer]
	f := p.flags + uint64(flag*8)
	if p.node == r.node {
		// A rank of the same node: through shared memory.
		if cnt > 0 {
			x.P.Memcpy(dst, src, uint64(cnt*8))
		}
		x.P.Store64(f, 1)
		return
	}
	if cnt > 0 {
		r.failed(x.Wait(x.Put(p.node, src, dst, cnt*8)))
	}
	x.P.Store64(r.word, 1)
	r.failed(x.Wait(x.Put(p.node, r.word, f, 8)))
}

// failed keeps a rank's first failed put, for Result to report as what
// it is (the sums it leaves wrong would say only "wrong element").
func (r *arRank) failed(_ nic.CQE, err error) {
	if err != nil && r.err == nil {
		r.err = err
	}
}

func (k *counter) arWait(x *aa.Ctx, r *arRank, flag int) {
	// A word poll: the core sleeps through the checks that cannot see a
	// change (a run whose flag never comes ends at once).
	x.P.PollWord(r.flags+uint64(flag*8), func(v uint64) bool { return v == 1 })
}

// arSum adds cnt elements at in into acc: both read and acc written a line
// at a time, a cycle an element on the core (MPI's 64-bit sum).
func (k *counter) arSum(x *aa.Ctx, acc, in uint64, cnt int) {
	if cnt == 0 {
		return
	}
	a, b := make([]byte, cnt*8), make([]byte, cnt*8)
	x.P.Read(acc, a)
	x.P.Read(in, b)
	for i := 0; i < len(a); i += 8 {
		binary.LittleEndian.PutUint64(a[i:], binary.LittleEndian.Uint64(a[i:])+binary.LittleEndian.Uint64(b[i:]))
	}
	x.P.Compute(cnt)
	x.P.Write(acc, a)
}

// arCheck is the Allreduce's own check: every rank, not only the owner,
// must end with the whole sums (the first wrong rank, or "").
func (k *counter) arCheck() string {
	for i, r := range k.ar.ranks {
		m := k.c.Nodes[r.node].Mem
		for e, want := range k.truth {
			if got := m.Load64(r.vec + uint64(e)*8); got != want {
				return fmt.Sprintf("Allreduce rank %d (node %d core %d) ended with element %d = %d, the sum is %d", i, r.node, r.core, e, got, want)
			}
		}
	}
	return ""
}

// arFailed is the first rank whose put failed ("" if none): the run's
// problem is then the transport's, whatever the sums say.
func (k *counter) arFailed() string {
	for i, r := range k.ar.ranks {
		if r.err != nil {
			return fmt.Sprintf("Allreduce rank %d (node %d core %d): a put failed: %v", i, r.node, r.core, r.err)
		}
	}
	return ""
}
