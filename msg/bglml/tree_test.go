package bglml

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// treeRun runs op on every node of a machine of dims with the collective
// network (each node's layer on its main core) and returns the time the
// last finished and the layers' statistics.
func treeRun(t testing.TB, x, y, z int, op func(l *Layer, p *cpu.Proc, node int, done func()) error) (sim.Tick, []Stats) {
	t.Helper()
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(x, y, z))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Collective(); err != nil {
		t.Fatal(err)
	}
	var end sim.Tick
	layers := make([]*Layer, len(m.Nodes))
	for i, nd := range m.Nodes {
		i := i
		l, err := New(m, i, DefaultParams(), DefaultCosts(), func(int, []byte, int) (uint64, func()) { return 0, nil })
		if err != nil {
			t.Fatal(err)
		}
		layers[i] = l
		nd.Cores[0].Spawn("tree", func(p *cpu.Proc) {
			fin := false
			if err := op(l, p, i, func() { fin = true }); err != nil {
				t.Error(err)
				return
			}
			l.Until(p, func() bool { return fin })
			end = max(end, p.Now())
		})
	}
	m.World.Run(sim.S)
	if end == 0 {
		t.Fatal("did not finish")
	}
	st := make([]Stats, len(layers))
	for i, l := range layers {
		st[i] = l.Stats
	}
	return end, st
}

// TestTreeBcast broadcasts over the collective network from several
// roots, through the advance loop, and checks every byte at every node.
func TestTreeBcast(t *testing.T) {
	for _, c := range []struct{ x, y, z, root, size int }{
		{2, 2, 2, 0, 1}, {2, 2, 2, 5, 256}, {4, 2, 2, 3, 1000}, {4, 4, 2, 31, 5000}, {4, 4, 2, 7, 20000},
	} {
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			want := make([]byte, c.size)
			for i := range want {
				want[i] = byte(i*13 + i>>8 + 1)
			}
			bufs := map[int]uint64{}
			treeRun(t, c.x, c.y, c.z, func(l *Layer, p *cpu.Proc, node int, done func()) error {
				nd := l.nd
				a := nd.Alloc(c.size)
				bufs[node] = a
				if node == c.root {
					nd.Mem.Write(a, want)
				}
				return l.TreeBcast(p, node == c.root, a, c.size, func() {
					got := make([]byte, c.size)
					nd.Mem.Read(a, got)
					if !bytes.Equal(got, want) {
						t.Errorf("node %d: data differs", node)
					}
					done()
				})
			})
			if len(bufs) != c.x*c.y*c.z {
				t.Errorf("%d nodes took part", len(bufs))
			}
		})
	}
}

// TestTreeAllreduce reduces every reduction the tree can do over several
// counts on 16 nodes and checks every element at every node against the
// serial result; the float sum of values of one scale (multiples of 2^−10
// below 2^20: exact in float64) equals the serial sum bit for bit.
func TestTreeAllreduce(t *testing.T) {
	const nodes = 16
	rng := rand.New(rand.NewPCG(16, 2))
	for red := TreeSumInt; red <= TreeSumFloat; red++ {
		for _, count := range []int{1, 32, 33, 100} {
			t.Run(fmt.Sprintf("%v/%d", red, count), func(t *testing.T) {
				in := make([][]uint64, nodes)
				for n := range in {
					in[n] = make([]uint64, count)
					for i := range in[n] {
						switch red {
						case TreeMaxFloat, TreeMinFloat:
							in[n][i] = math.Float64bits(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20))
						case TreeSumFloat:
							in[n][i] = math.Float64bits(float64(rng.IntN(1<<30)-1<<29) / 1024)
						default:
							in[n][i] = rng.Uint64()
						}
					}
				}
				want := make([]uint64, count)
				for i := range want {
					acc := in[0][i]
					for n := 1; n < nodes; n++ {
						acc = serial(red, acc, in[n][i])
					}
					want[i] = acc
				}
				run := func() (sim.Tick, []Stats) {
					return treeRun(t, 4, 2, 2, func(l *Layer, p *cpu.Proc, node int, done func()) error {
						nd := l.nd
						src, dst := nd.Alloc(8*count), nd.Alloc(8*count)
						b := make([]byte, 8*count)
						for i, v := range in[node] {
							binary.LittleEndian.PutUint64(b[8*i:], v)
						}
						nd.Mem.Write(src, b)
						return l.TreeAllreduce(p, red, src, dst, count, func() {
							got := make([]byte, 8*count)
							nd.Mem.Read(dst, got)
							for i := range want {
								if g := binary.LittleEndian.Uint64(got[8*i:]); g != want[i] {
									t.Errorf("node %d element %d: %#x, want %#x", node, i, g, want[i])
									return
								}
							}
							done()
						})
					})
				}
				e1, s1 := run()
				e2, s2 := run()
				if e1 != e2 || fmt.Sprint(s1) != fmt.Sprint(s2) {
					t.Errorf("two runs differ: %v and %v", e1, e2)
				}
				packets := (count + 31) / 32
				if red == TreeSumFloat {
					packets *= 2
				}
				if s1[0].TreeOps != 1 || s1[0].TreePackets != uint64(packets) {
					t.Errorf("node 0: %d operations, %d results read, want 1 and %d", s1[0].TreeOps, s1[0].TreePackets, packets)
				}
			})
		}
	}
}

// serial is the reduction of two elements on the core.
func serial(red TreeReduction, a, b uint64) uint64 {
	fa, fb := math.Float64frombits(a), math.Float64frombits(b)
	switch red {
	case TreeSumInt:
		return a + b
	case TreeMaxUint:
		return max(a, b)
	case TreeMinUint:
		return min(a, b)
	case TreeMaxInt:
		return uint64(max(int64(a), int64(b)))
	case TreeMinInt:
		return uint64(min(int64(a), int64(b)))
	case TreeAnd:
		return a & b
	case TreeOr:
		return a | b
	case TreeXor:
		return a ^ b
	case TreeMaxFloat:
		return math.Float64bits(math.Max(fa, fb))
	case TreeMinFloat:
		return math.Float64bits(math.Min(fa, fb))
	}
	return math.Float64bits(fa + fb)
}

// TestTreeBadInput: the refusals.
func TestTreeBadInput(t *testing.T) {
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(2, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(m, 0, DefaultParams(), DefaultCosts(), func(int, []byte, int) (uint64, func()) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	m.Nodes[0].Cores[0].Spawn("bad", func(p *cpu.Proc) {
		errs = append(errs, fmt.Sprint(l.TreeBcast(p, true, 0, 100, nil)))
	})
	m.World.Run(sim.MS)
	for _, c := range []struct {
		err  error
		want string
	}{
		{l.TreeAllreduce(nil, TreeReduction(99), 0, 0, 1, nil), "collective-network reduction tree_reduction99"},
		{l.TreeAllreduce(nil, TreeSumFloat, 0, 0, 0, nil), "reduction of 0 elements"},
		{l.TreeBcast(nil, true, 0, 0, nil), "broadcast of 0 bytes"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v, want %q", c.err, c.want)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "no collective network") {
		t.Errorf("without the collective network: %v", errs)
	}
}

// TestTreeAllreduceShared reduces over the collective network in virtual
// node mode with the result shared: each node's task 0 takes part with
// the node's contribution, and the task 1 of every other node copies the
// result from task 0's buffer in chunks of VNBcastChunk as it comes from
// the tree (the others do not call it); every element at every task that
// takes it, against the serial reduction.
func TestTreeAllreduceShared(t *testing.T) {
	for _, c := range []struct {
		red   TreeReduction
		count int
	}{{TreeSumInt, 1}, {TreeSumFloat, 40}, {TreeMaxInt, 1000}, {TreeSumFloat, 2000}} {
		t.Run(fmt.Sprintf("%v/%d", c.red, c.count), func(t *testing.T) {
			m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(4, 2, 2).WithMode(bgl.VirtualNodeMode))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Collective(); err != nil {
				t.Fatal(err)
			}
			nodes := len(m.Nodes)
			rng := rand.New(rand.NewPCG(uint64(c.count), 3))
			in := make([][]uint64, nodes)
			want := make([]uint64, c.count)
			for n := range in {
				in[n] = make([]uint64, c.count)
				for i := range in[n] {
					if c.red == TreeSumFloat {
						in[n][i] = math.Float64bits(float64(rng.IntN(1<<30)-1<<29) / 1024)
					} else {
						in[n][i] = rng.Uint64()
					}
					if n == 0 {
						want[i] = in[n][i]
					} else {
						want[i] = serial(c.red, want[i], in[n][i])
					}
				}
			}
			size := 8 * c.count
			ls := make([]*Layer, 2*nodes)
			dst := make([]uint64, len(ls))
			for i := range ls {
				if ls[i], err = NewTask(m, i, DefaultParams(), DefaultCosts(), nil); err != nil {
					t.Fatal(err)
				}
				nd := m.Nodes[i/2]
				share := i/2%2 == 0
				if i%2 == 1 && !share {
					continue
				}
				src := nd.Alloc(size)
				dst[i] = nd.Alloc(size)
				b := make([]byte, size)
				for k, v := range in[i/2] {
					binary.LittleEndian.PutUint64(b[8*k:], v)
				}
				nd.Mem.Write(src, b)
				nd.Cores[i%2].Spawn("reduce", func(p *cpu.Proc) {
					have := false
					if err := ls[i].TreeAllreduceShared(p, c.red, src, dst[i], c.count, share, func() { have = true }); err != nil {
						t.Error(err)
						return
					}
					ls[i].Until(p, func() bool { return have })
					ls[i].Until(p, ls[i].Idle)
				})
			}
			m.World.Run(sim.S)
			chunks := uint64((size + VNBcastChunk - 1) / VNBcastChunk)
			for i := range ls {
				if dst[i] == 0 {
					continue
				}
				got := make([]byte, size)
				m.Nodes[i/2].Mem.Read(dst[i], got)
				for k := range want {
					if g := binary.LittleEndian.Uint64(got[8*k:]); g != want[k] {
						t.Errorf("task %d element %d: %#x, want %#x", i, k, g, want[k])
						break
					}
				}
				if i%2 == 1 && ls[i].Stats.Copied != chunks {
					t.Errorf("task %d copied %d times, want %d", i, ls[i].Stats.Copied, chunks)
				}
			}
		})
	}
}

// TestTreeBcastVirtualNode broadcasts over the collective network in
// virtual node mode: every task calls TreeBcast, the root node's task 0
// has the data, each node's task 0 takes part in the tree and its task 1
// copies from task 0's buffer in chunks of VNBcastChunk as the results
// come (the root node's task 1 in one piece); every byte at every task.
func TestTreeBcastVirtualNode(t *testing.T) {
	for _, c := range []struct {
		root, size int
	}{{0, 1}, {5, 1000}, {13, 3*VNBcastChunk + 100}} {
		t.Run(fmt.Sprintf("root %d, %d bytes", c.root, c.size), func(t *testing.T) {
			m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(4, 2, 2).WithMode(bgl.VirtualNodeMode))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.Collective(); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, c.size)
			for k := range want {
				want[k] = byte(k*13 + k>>8 + 1)
			}
			ls := make([]*Layer, 2*len(m.Nodes))
			bufs := make([]uint64, len(ls))
			for i := range ls {
				if ls[i], err = NewTask(m, i, DefaultParams(), DefaultCosts(), nil); err != nil {
					t.Fatal(err)
				}
				nd := m.Nodes[i/2]
				bufs[i] = nd.Alloc(c.size)
				root := i == 2*c.root
				if root {
					nd.Mem.Write(bufs[i], want)
				}
				nd.Cores[i%2].Spawn("bcast", func(p *cpu.Proc) {
					have := false
					if err := ls[i].TreeBcast(p, root, bufs[i], c.size, func() { have = true }); err != nil {
						t.Error(err)
						return
					}
					ls[i].Until(p, func() bool { return have })
					ls[i].Until(p, ls[i].Idle)
				})
			}
			m.World.Run(sim.S)
			chunks := uint64((c.size + VNBcastChunk - 1) / VNBcastChunk)
			for i := range ls {
				got := make([]byte, c.size)
				m.Nodes[i/2].Mem.Read(bufs[i], got)
				if !bytes.Equal(got, want) {
					t.Errorf("task %d: data differs", i)
				}
				if i%2 == 1 {
					w := chunks
					if i/2 == c.root {
						w = 1
					}
					if ls[i].Stats.Copied != w {
						t.Errorf("task %d copied %d times, want %d", i, ls[i].Stats.Copied, w)
					}
				}
				if ls[i].Stats.TreeOps != 1 {
					t.Errorf("task %d: %d collective-network operations, want 1", i, ls[i].Stats.TreeOps)
				}
			}
		})
	}
}
