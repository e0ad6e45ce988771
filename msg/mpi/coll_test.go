package mpi

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aaemu/aaemu/machine"
)

// 64 ranks (one node of 64 cores, 64 nodes, 8 × 8) allreduce a vector:
// every rank gets the arithmetic sum, and the same bits of a float sum.
func TestAllreduce64(t *testing.T) {
	const n = 64
	for _, f := range fabrics {
		t.Run(f.name, func(t *testing.T) {
			t0 := time.Now()
			res, _, err := run(t, f, n, fast, func(c *Comm) {
				me := uint64(c.Rank())
				send, recv := c.Alloc(32), c.Alloc(32)
				c.WriteUint64s(send, []uint64{me + 1, 2 * me, me * me, 1})
				if err := c.Allreduce(send, recv, SumUint64); err != nil {
					t.Error(err)
				}
				want := []uint64{n * (n + 1) / 2, n * (n - 1), (n - 1) * n * (2*n - 1) / 6, n}
				if got := c.Uint64s(recv); !slices.Equal(got, want) {
					t.Errorf("rank %d: %v, want %v", me, got, want)
				}
				fs, fr := c.Alloc(8), c.Alloc(8)
				c.WriteFloat64s(fs, []float64{1 / float64(me+3)})
				if err := c.Allreduce(fs, fr, SumFloat64); err != nil {
					t.Error(err)
				}
				mx := c.Alloc(8)
				c.Allreduce(fr, mx, MaxFloat64)
				mn := c.Alloc(8)
				c.Allreduce(fr, mn, MinFloat64)
				if a, b := c.Float64s(mx)[0], c.Float64s(mn)[0]; a != b {
					t.Errorf("rank %d: the float sums differ between ranks (%v..%v)", me, b, a)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d ranks: %v simulated, %v", n, res.End.Human(), time.Since(t0).Round(time.Millisecond))
		})
	}
}

// The other collectives on a power of two and on an odd size, every root.
func TestCollectives(t *testing.T) {
	for _, f := range fabrics {
		for _, n := range []int{6, 8} {
			t.Run(fmt.Sprintf("%s/%d", f.name, n), func(t *testing.T) {
				_, _, err := run(t, f, n, fast, func(c *Comm) {
					me := c.Rank()
					for root := 0; root < n; root++ {
						// Bcast: an eager and a rendezvous size.
						for _, size := range []int{24, 30000} {
							b := c.Alloc(size)
							if me == root {
								c.Write(b, pattern(uint64(root), size))
							}
							if err := c.Bcast(b, root); err != nil {
								t.Error(err)
							}
							if err := checkPattern(c.Read(b), uint64(root), size); err != nil {
								t.Errorf("bcast from %d to %d: %v", root, me, err)
							}
						}
						send, recv := c.Alloc(16), c.Alloc(16)
						c.WriteUint64s(send, []uint64{uint64(me + root), uint64(me)})
						if err := c.Reduce(send, recv, MaxUint64, root); err != nil {
							t.Error(err)
						}
						if me == root {
							if got := c.Uint64s(recv); !slices.Equal(got, []uint64{uint64(n - 1 + root), uint64(n - 1)}) {
								t.Errorf("reduce to %d: %v", root, got)
							}
						}
					}
					sum := c.Alloc(8)
					one := c.Alloc(8)
					c.WriteUint64s(one, []uint64{uint64(me)})
					if err := c.Allreduce(one, sum, SumInt64); err != nil || c.Uint64s(sum)[0] != uint64(n*(n-1)/2) {
						t.Errorf("allreduce: %v %v", c.Uint64s(sum), err)
					}
					// Alltoall: block j from i is i*n+j.
					const blk = 40
					send, recv := c.Alloc(n*blk), c.Alloc(n*blk)
					for j := 0; j < n; j++ {
						c.Write(send.Slice(j*blk, blk), pattern(uint64(me*n+j), blk))
					}
					if err := c.Alltoall(send, recv); err != nil {
						t.Error(err)
					}
					for i := 0; i < n; i++ {
						if err := checkPattern(c.Read(recv.Slice(i*blk, blk)), uint64(i*n+me), blk); err != nil {
							t.Errorf("alltoall block from %d at %d: %v", i, me, err)
						}
					}
					// Barrier: nobody leaves before the last one enters.
					c.Compute(1000 * me)
					entered := c.Now()
					if err := c.Barrier(); err != nil {
						t.Error(err)
					}
					last := c.Alloc(8)
					in := c.Alloc(8)
					c.WriteUint64s(in, []uint64{uint64(entered)})
					c.Allreduce(in, last, MaxUint64)
					if left := c.Now(); uint64(left) < c.Uint64s(last)[0] {
						t.Errorf("rank %d left the barrier before the last rank entered it", me)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// Split makes independent communicators: by node here, with the same tags
// in flight on the world and on the node communicators at once; a
// collective in each; Dup's context is its own.
func TestSplit(t *testing.T) {
	_, _, err := run(t, fabrics[2], 8, nil, func(c *Comm) {
		me := c.Rank()
		node := c.Place(me).Node
		nc, err := c.Split(node, -me) // reversed order inside a node
		if err != nil {
			t.Fatal(err)
		}
		var members []int
		for r := 0; r < c.Size(); r++ {
			if c.Place(r).Node == node {
				members = append([]int{r}, members...)
			}
		}
		if nc.Size() != len(members) || nc.WorldRank(nc.Rank()) != me || !slices.Equal(nc.group, members) {
			t.Errorf("rank %d: node communicator %v (me %d), want %v", me, nc.group, nc.Rank(), members)
		}
		// The same tag to the same peer on both communicators: each
		// receive gets its own communicator's message.
		peer := nc.WorldRank((nc.Rank() + 1) % nc.Size())
		from := nc.WorldRank((nc.Rank() + nc.Size() - 1) % nc.Size())
		w, l := c.Alloc(8), c.Alloc(8)
		c.WriteUint64s(w, []uint64{1})
		c.WriteUint64s(l, []uint64{2})
		q1 := nc.Isend(l, (nc.Rank()+1)%nc.Size(), 5)
		q2 := c.Isend(w, peer, 5)
		rw, rl := c.Alloc(8), c.Alloc(8)
		if _, err := c.Recv(rw, from, 5); err != nil {
			t.Error(err)
		}
		if _, err := nc.Recv(rl, (nc.Rank()+nc.Size()-1)%nc.Size(), 5); err != nil {
			t.Error(err)
		}
		c.Waitall(q1, q2)
		if a, b := c.Uint64s(rw)[0], c.Uint64s(rl)[0]; a != 1 || b != 2 {
			t.Errorf("rank %d: world got %d, node communicator got %d", me, a, b)
		}
		sum, one := c.Alloc(8), c.Alloc(8)
		c.WriteUint64s(one, []uint64{1})
		nc.Allreduce(one, sum, SumUint64)
		if got := c.Uint64s(sum)[0]; got != uint64(nc.Size()) {
			t.Errorf("node allreduce %d, want %d", got, nc.Size())
		}
		d, err := c.Dup()
		if err != nil || d.Context() == c.Context() || d.Context() == nc.Context() || d.Size() != c.Size() {
			t.Errorf("dup: context %d (world %d, node %d), %v", d.Context(), c.Context(), nc.Context(), err)
		}
		if odd, _ := c.Split(map[bool]int{true: 1, false: Undefined}[me%2 == 1], 0); (odd == nil) != (me%2 == 0) {
			t.Errorf("rank %d: split with Undefined gave %v", me, odd)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// twoStage is a topology-aware broadcast as a later layer would plug it
// in: root to one leader per node over the network, then inside each node
// (seed 001's SMP-aware broadcast); it keeps its communicators on the
// communicator's attributes.
type twoStage struct {
	Algorithms
	calls *int
}

type twoStageComms struct{ node, leaders *Comm }

func (ts twoStage) Bcast(c *Comm, b Buf, root int) error {
	*ts.calls++
	v, ok := c.Attr(ts)
	if !ok {
		me := c.Rank()
		node := c.Place(me).Node
		// The root leads its node; elsewhere the lowest rank.
		key := me
		if me == root {
			key = -1
		}
		nc, err := c.Split(node, key)
		if err != nil {
			return err
		}
		color := Undefined
		if nc.Rank() == 0 {
			color = 0
		}
		lc, err := c.Split(color, key)
		if err != nil {
			return err
		}
		v = twoStageComms{nc, lc}
		c.SetAttr(ts, v)
	}
	cs := v.(twoStageComms)
	if cs.leaders != nil {
		if err := ts.Algorithms.Bcast(cs.leaders, b, 0); err != nil {
			return err
		}
	}
	return ts.Algorithms.Bcast(cs.node, b, 0)
}

func TestCollectivesHook(t *testing.T) {
	calls := 0
	_, _, err := run(t, fabrics[2], 8, func(_ *machine.Spec, cfg *Config) {
		cfg.Collectives = twoStage{calls: &calls}
	}, func(c *Comm) {
		for i := 0; i < 3; i++ {
			b := c.Alloc(5000)
			if c.Rank() == 0 {
				c.Write(b, pattern(uint64(i), 5000))
			}
			if err := c.Bcast(b, 0); err != nil {
				t.Error(err)
			}
			if err := checkPattern(c.Read(b), uint64(i), 5000); err != nil {
				t.Errorf("rank %d: %v", c.Rank(), err)
			}
		}
		c.Barrier() // the default algorithm for what the hook does not override
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 8*3 {
		t.Errorf("the hook ran %d times, want 24", calls)
	}
}
