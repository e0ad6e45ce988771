package mpi

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/sim"
)

// bglRun runs body on one rank a node of an x×y×z torus (or mesh) with
// BGL's collectives g, and returns the result and the failures body
// reported.
func bglRun(t *testing.T, x, y, z int, mesh bool, g BGL, body func(c *Comm, fail func(string, ...any))) (*Result, []string) {
	t.Helper()
	spec := bgl.DefaultSpec(x, y, z)
	spec.Torus.Mesh = mesh
	return bglRunSpec(t, spec, g, body)
}

// bglRunSpec is bglRun on the machine of spec (virtual node mode: a rank
// a task).
func bglRunSpec(t *testing.T, spec bgl.Spec, g BGL, body func(c *Comm, fail func(string, ...any))) (*Result, []string) {
	t.Helper()
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	res, err := RunTorus(m, Config{Collectives: g}, TorusConfig{}, nil, func(c *Comm) {
		body(c, func(f string, a ...any) {
			failed = append(failed, fmt.Sprintf("rank %d: ", c.Rank())+fmt.Sprintf(f, a...))
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, failed
}

// commOf splits the world by the color color gives each node's
// coordinates (rank order kept).
func commOf(c *Comm, x, y int, color func(cx, cy, cz int) int) *Comm {
	r := c.Rank()
	sub, err := c.Split(color(r%x, r/x%y, r/(x*y)), r)
	if err != nil {
		panic(err)
	}
	return sub
}

// TestBGLBcast broadcasts on MPI_COMM_WORLD, on its duplicate, on boxes
// (planes, lines, a block of a mesh), on a communicator that is no box,
// and by MPICH2's algorithm, from several roots and sizes, each rank
// computing a random while before each broadcast; every byte at every
// rank, the implementation each took in Result.Collectives, and the same
// run twice.
func TestBGLBcast(t *testing.T) {
	const X, Y, Z = 4, 4, 2
	cases := []struct {
		name  string
		mesh  bool
		with  string
		comm  func(c *Comm) *Comm
		roots []int
		impl  string
	}{
		{"world", false, "", func(c *Comm) *Comm { return c }, []int{0, 21}, ImplTree},
		{"world-mesh", true, "", func(c *Comm) *Comm { return c }, []int{5}, ImplTree},
		{"dup", false, "", func(c *Comm) *Comm { d, _ := c.Dup(); return d }, []int{0, 9}, ImplDeposit},
		{"dup-mesh", true, "", func(c *Comm) *Comm { d, _ := c.Dup(); return d }, []int{31, 6}, ImplDeposit},
		{"planes", false, "", func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return z }) }, []int{0, 6}, ImplDeposit},
		{"planes-mesh", true, "", func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return z }) }, []int{5, 15}, ImplDeposit},
		{"rows-mesh", true, "", func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return y + Y*z }) }, []int{1, 3}, ImplDeposit},
		{"blocks-mesh", true, "", func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return x / 2 }) }, []int{0, 7}, ImplDeposit},
		{"wrapped-halves", false, "", func(c *Comm) *Comm {
			return commOf(c, X, Y, func(x, y, z int) int { return map[bool]int{true: 0, false: 1}[x == 0 || x == 3] })
		}, []int{0, 1}, ImplDeposit},
		{"checkerboard", false, "", func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return (x + y + z) % 2 }) }, []int{0, 5}, ImplMesh},
		{"checkerboard-mesh", true, "", func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return (x + y + z) % 2 }) }, []int{3}, ImplMesh},
		{"mesh-forced", true, ImplMesh, func(c *Comm) *Comm { return c }, []int{0, 13}, ImplMesh},
		{"mpich2-forced", true, ImplMPICH2, func(c *Comm) *Comm { return c }, []int{2}, ImplMPICH2},
	}
	sizes := []int{1, 240, 3000, 20000}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func() *Result {
				res, failed := bglRun(t, X, Y, Z, tc.mesh, BGL{BcastWith: tc.with, MeshPiece: 4096}, func(w *Comm, fail func(string, ...any)) {
					c := tc.comm(w)
					rng := rand.New(rand.NewPCG(uint64(w.Rank()), 3))
					for _, root := range tc.roots {
						root %= c.Size()
						for k, n := range sizes {
							b := c.Alloc(n)
							want := torusPattern(root, k, n)
							if c.Rank() == root {
								c.Write(b, want)
							}
							c.Compute(rng.IntN(5000))
							if err := c.Bcast(b, root); err != nil {
								fail("%v", err)
								return
							}
							if !bytes.Equal(c.Read(b), want) {
								fail("%d bytes from %d: data differs", n, root)
							}
						}
					}
				})
				for _, f := range failed {
					t.Error(f)
				}
				return res
			}
			r1, r2 := run(), run()
			if fmt.Sprint(r1.Finish, r1.Stats, r1.Collectives) != fmt.Sprint(r2.Finish, r2.Stats, r2.Collectives) {
				t.Errorf("two runs differ:\n%v\n%v", r1.Collectives, r2.Collectives)
			}
			bcasts := uint64(0)
			for _, s := range r1.Collectives {
				if s.Call != "Bcast" {
					continue
				}
				if s.Impl != tc.impl {
					t.Errorf("%d broadcasts took %s, want %s", s.Calls, s.Impl, tc.impl)
				}
				bcasts += s.Calls
			}
			// every communicator the split makes counts its own
			comms := uint64(1)
			if strings.Contains(tc.name, "planes") || strings.Contains(tc.name, "checker") || strings.Contains(tc.name, "blocks") || strings.Contains(tc.name, "wrapped") {
				comms = 2
			}
			if strings.Contains(tc.name, "rows") {
				comms = Y * Z
			}
			if want := comms * uint64(len(tc.roots)*len(sizes)); bcasts != want {
				t.Errorf("%d broadcasts counted, want %d", bcasts, want)
			}
			t.Logf("end %v", r1.End)
		})
	}
}

// f64s packs float64s as bytes.
func f64s(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

// TestBGLReduce reduces on MPI_COMM_WORLD (the collective network) and
// on planes (the torus) with every operation the tree does and one it
// does not (a product, which the choice sends to the torus), checks every
// element at every rank against the serial reduction in rank order — the
// float sum of values of one scale (multiples of 2^−10 under 2^19, whose
// sum float64 holds exactly) bit for bit — and the implementation each
// took.
func TestBGLReduce(t *testing.T) {
	const X, Y, Z = 4, 2, 2
	ops := []Op{SumInt64, SumUint64, MaxInt64, MinInt64, MaxUint64, MinUint64, BandUint64, BorUint64, BxorUint64, MaxFloat64, MinFloat64, SumFloat64, ProdFloat64}
	value := func(op Op, rank, i int) uint64 {
		rng := rand.New(rand.NewPCG(uint64(rank), uint64(i)))
		switch op.Name {
		case "sum_float64":
			return math.Float64bits(float64(rng.IntN(1<<29)-1<<28) / 1024)
		case "prod_float64":
			return math.Float64bits(1 + float64(rng.IntN(8))/8)
		case "max_float64", "min_float64":
			return math.Float64bits(rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-30))
		}
		return rng.Uint64()
	}
	for _, c := range []struct {
		sub   bool
		count int
		with  string
	}{{false, 1, ""}, {false, 40, ""}, {true, 1, ""}, {true, 40, ""}, {false, 40, ImplMesh}, {true, 1000, ImplMesh}} {
		sub, count := c.sub, c.count
		{
			t.Run(fmt.Sprintf("planes=%v/count=%d/%s", sub, count, c.with), func(t *testing.T) {
				res, failed := bglRun(t, X, Y, Z, false, BGL{ReduceWith: c.with, MeshPiece: 2048}, func(w *Comm, fail func(string, ...any)) {
					c := w
					if sub {
						c = commOf(w, X, Y, func(x, y, z int) int { return z })
					}
					for _, op := range ops {
						mine := make([]byte, 8*count)
						want := make([]byte, 8*count)
						for i := 0; i < count; i++ {
							binary.LittleEndian.PutUint64(mine[8*i:], value(op, c.WorldRank(c.Rank()), i))
							binary.LittleEndian.PutUint64(want[8*i:], value(op, c.WorldRank(0), i))
						}
						for r := 1; r < c.Size(); r++ {
							in := make([]byte, 8*count)
							for i := 0; i < count; i++ {
								binary.LittleEndian.PutUint64(in[8*i:], value(op, c.WorldRank(r), i))
							}
							op.Apply(want, in)
						}
						send, recv := c.Alloc(8*count), c.Alloc(8*count)
						c.Write(send, mine)
						if err := c.Allreduce(send, recv, op); err != nil {
							fail("%v", err)
							return
						}
						if got := c.Read(recv); !bytes.Equal(got, want) {
							fail("Allreduce %s: differs from the serial reduction", op.Name)
						}
						root := 3 % c.Size()
						c.Write(recv, make([]byte, 8*count))
						if err := c.Reduce(send, recv, op, root); err != nil {
							fail("%v", err)
							return
						}
						if got := c.Read(recv); c.Rank() == root && !bytes.Equal(got, want) {
							fail("Reduce %s: differs from the serial reduction", op.Name)
						}
					}
				})
				for _, f := range failed {
					t.Error(f)
				}
				for _, s := range res.Collectives {
					if s.Call != "Allreduce" && s.Call != "Reduce" {
						continue
					}
					var want uint64
					switch {
					case c.with == ImplMesh && s.Impl == ImplMesh:
						want = uint64(len(ops))
						if sub {
							want *= 2
						}
					case c.with == ImplMesh:
					case sub && s.Impl == ImplTorus:
						want = 2 * uint64(len(ops)) // two planes
					case !sub && s.Impl == ImplTree:
						want = uint64(len(ops) - 1)
					case !sub && s.Impl == ImplTorus:
						want = 1 // the product
					}
					if s.Calls != want {
						t.Errorf("%s by %s: %d operations, want %d", s.Call, s.Impl, s.Calls, want)
					}
				}
				t.Logf("%v", res.Collectives)
			})
		}
	}
}

// TestBGLBcastInterior broadcasts by the deposit broadcast from roots
// inside a mesh's boxes (the world's duplicate, a plane, a row; a root on
// either task in virtual node mode) straight from the root's node and,
// for comparison, through the nearest corner (DepositViaCorner): every
// byte at every rank both ways, and the direct one faster by more than a
// quarter of the time (it saves the whole message's hop to the corner).
func TestBGLBcastInterior(t *testing.T) {
	const X, Y, Z = 4, 4, 2
	const N = X * Y * Z
	for _, c := range []struct {
		name string
		vn   bool
		comm func(c *Comm) *Comm
		root int
	}{
		{"dup (1,1,0)", false, func(c *Comm) *Comm { d, _ := c.Dup(); return d }, 5},
		{"dup (2,2,1)", false, func(c *Comm) *Comm { d, _ := c.Dup(); return d }, 26},
		{"plane z=1 (1,2,1)", false, func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return z }) }, 9},
		{"row y=1 z=0 (2,1,0)", false, func(c *Comm) *Comm { return commOf(c, X, Y, func(x, y, z int) int { return y + Y*z }) }, 2},
		{"vn dup (1,2,1) task 1", true, func(c *Comm) *Comm { d, _ := c.Dup(); return d }, N + 25},
	} {
		t.Run(c.name, func(t *testing.T) {
			const size = 6000
			var took [2]sim.Tick
			for i, corner := range []bool{false, true} {
				spec := bgl.DefaultSpec(X, Y, Z)
				spec.Torus.Mesh = true
				if c.vn {
					spec = spec.WithMode(bgl.VirtualNodeMode)
				}
				var start, end sim.Tick
				res, failed := bglRunSpec(t, spec, BGL{DepositViaCorner: corner}, func(w *Comm, fail func(string, ...any)) {
					cm := c.comm(w)
					b := cm.Alloc(size)
					want := make([]byte, size)
					for k := range want {
						want[k] = byte(k*7 + c.root)
					}
					if cm.Rank() == c.root {
						cm.Write(b, want)
					}
					if err := w.Barrier(); err != nil {
						fail("%v", err)
						return
					}
					if w.Rank() == 0 {
						start = w.Now()
					}
					if err := cm.Bcast(b, c.root); err != nil {
						fail("%v", err)
						return
					}
					end = max(end, w.Now())
					if !bytes.Equal(cm.Read(b), want) {
						fail("corner=%v: the data differs", corner)
					}
				})
				for _, f := range failed {
					t.Error(f)
				}
				for _, s := range res.Collectives {
					if s.Call == "Bcast" && s.Impl != ImplDeposit {
						t.Errorf("corner=%v: took %s, want the deposit broadcast", corner, s.Impl)
					}
				}
				took[i] = end - start
			}
			if 4*took[0] > 3*took[1] {
				t.Errorf("%d B from rank %d: direct %v, through the corner %v: want the direct one under three quarters of it", size, c.root, took[0], took[1])
			}
			t.Logf("%d B from rank %d: direct %v, through the corner %v", size, c.root, took[0], took[1])
		})
	}
}

// TestBGLReduceChoice checks BGL's choice of a reduction by communicator,
// operation and size on a 4×2×2 mesh: the collective network on the world
// for what its ALU does; otherwise MPICH2's point-to-point algorithms up
// to MeshReduceAbove bytes and the mesh-aware reduction beyond (the
// default's 9 KB, a smaller one, −1 for never). MPI_Allreduce and
// MPI_Reduce each, every element at every rank that gets the result
// against the serial reduction (integer sums, and products of powers of
// two, which no order rounds).
func TestBGLReduceChoice(t *testing.T) {
	const X, Y, Z = 4, 2, 2
	for _, c := range []struct {
		name   string
		planes bool
		op     Op
		count  int
		above  int
		impl   string
	}{
		{"world sum: tree", false, SumInt64, 1500, 0, ImplTree},
		{"world prod 320 B: torus", false, ProdFloat64, 40, 0, ImplTorus},
		{"world prod 12,000 B: mesh", false, ProdFloat64, 1500, 0, ImplMesh},
		{"world prod 12,000 B, never: torus", false, ProdFloat64, 1500, -1, ImplTorus},
		{"planes 9,216 B: torus", true, SumInt64, 1152, 0, ImplTorus},
		{"planes 9,224 B: mesh", true, SumInt64, 1153, 0, ImplMesh},
		{"planes 320 B above 256: mesh", true, SumInt64, 40, 256, ImplMesh},
		{"planes 256 B above 256: torus", true, ProdFloat64, 32, 256, ImplTorus},
	} {
		t.Run(c.name, func(t *testing.T) {
			value := func(rank, i int) uint64 {
				rng := rand.New(rand.NewPCG(uint64(rank), uint64(i)))
				if c.op.Name == "prod_float64" {
					return math.Float64bits(math.Ldexp(1, rng.IntN(9)-4))
				}
				return rng.Uint64()
			}
			res, failed := bglRun(t, X, Y, Z, true, BGL{MeshReduceAbove: c.above}, func(w *Comm, fail func(string, ...any)) {
				cm := w
				if c.planes {
					cm = commOf(w, X, Y, func(x, y, z int) int { return z })
				}
				n := c.count
				mine, want := make([]byte, 8*n), make([]byte, 8*n)
				for i := 0; i < n; i++ {
					binary.LittleEndian.PutUint64(mine[8*i:], value(cm.WorldRank(cm.Rank()), i))
					binary.LittleEndian.PutUint64(want[8*i:], value(cm.WorldRank(0), i))
				}
				for r := 1; r < cm.Size(); r++ {
					in := make([]byte, 8*n)
					for i := 0; i < n; i++ {
						binary.LittleEndian.PutUint64(in[8*i:], value(cm.WorldRank(r), i))
					}
					c.op.Apply(want, in)
				}
				send, recv := cm.Alloc(8*n), cm.Alloc(8*n)
				cm.Write(send, mine)
				if err := cm.Allreduce(send, recv, c.op); err != nil {
					fail("%v", err)
					return
				}
				if !bytes.Equal(cm.Read(recv), want) {
					fail("Allreduce: differs from the serial reduction")
				}
				cm.Write(recv, make([]byte, 8*n))
				root := 5 % cm.Size()
				if err := cm.Reduce(send, recv, c.op, root); err != nil {
					fail("%v", err)
					return
				}
				if cm.Rank() == root && !bytes.Equal(cm.Read(recv), want) {
					fail("Reduce: differs from the serial reduction")
				}
			})
			for _, f := range failed {
				t.Error(f)
			}
			got := map[string]string{}
			for _, s := range res.Collectives {
				if s.Call == "Allreduce" || s.Call == "Reduce" {
					got[s.Call] += s.Impl
				}
			}
			if got["Allreduce"] != c.impl || got["Reduce"] != c.impl {
				t.Errorf("took %v, want %s for both", got, c.impl)
			}
		})
	}
}

// TestBGLBadInput: a broadcast root outside the communicator, a reduction
// the collective network cannot do forced onto it, the tree or the deposit
// broadcast forced onto a communicator that cannot take it.
func TestBGLBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		g    BGL
		do   func(c *Comm) error
		want string
	}{
		{"root", BGL{}, func(c *Comm) error { return c.Bcast(c.Alloc(8), 8) }, "Bcast from root 8 of 8"},
		{"negative root", BGL{}, func(c *Comm) error { return c.Bcast(c.Alloc(8), -1) }, "Bcast from root -1 of 8"},
		{"prod on the tree", BGL{ReduceWith: ImplTree}, func(c *Comm) error {
			b := c.Alloc(8)
			return c.Allreduce(b, c.Alloc(8), ProdFloat64)
		}, "prod_float64 on the collective network"},
		{"user op on the tree", BGL{ReduceWith: ImplTree}, func(c *Comm) error {
			b := c.Alloc(8)
			return c.Reduce(b, c.Alloc(8), Op{Name: "mine", Size: 8, Apply: func(a, b []byte) {}}, 0)
		}, "mine on the collective network"},
		{"tree on a plane", BGL{BcastWith: ImplTree}, func(c *Comm) error {
			return commOf(c, 2, 2, func(x, y, z int) int { return z }).Bcast(c.Alloc(8), 0)
		}, "serves MPI_COMM_WORLD"},
		{"deposit on a checkerboard", BGL{BcastWith: ImplDeposit}, func(c *Comm) error {
			return commOf(c, 2, 2, func(x, y, z int) int { return (x + y + z) % 2 }).Bcast(c.Alloc(8), 0)
		}, "make a box"},
		{"unknown", BGL{BcastWith: "fast"}, func(c *Comm) error { return c.Bcast(c.Alloc(8), 0) }, `implementation "fast"`},
		{"mesh reduction's threshold", BGL{MeshReduceAbove: -2}, func(c *Comm) error {
			return c.Allreduce(c.Alloc(8), c.Alloc(8), ProdFloat64)
		}, "BGL.MeshReduceAbove -2"},
		{"mesh piece", BGL{MeshPiece: -8}, func(c *Comm) error {
			return commOf(c, 2, 2, func(x, y, z int) int { return (x + y + z) % 2 }).Bcast(c.Alloc(8), 0)
		}, "BGL.MeshPiece -8"},
		{"routes", BGL{Routes: 4}, func(c *Comm) error { return c.Reduce(c.Alloc(8), c.Alloc(8), SumInt64, 0) }, "BGL.Routes 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := make([]error, 8)
			bglRun(t, 2, 2, 2, false, c.g, func(w *Comm, fail func(string, ...any)) {
				errs[w.Rank()] = c.do(w)
			})
			t.Log(errs[0])
			if errs[0] == nil || !strings.Contains(errs[0].Error(), c.want) {
				t.Errorf("got %v, want %q", errs[0], c.want)
			}
		})
	}
}

// TestBGLBarrier enters MPI_Barrier after a random while at every rank,
// several times, on MPI_COMM_WORLD (the global barrier network), on it
// with the torus's algorithm forced, on its duplicate and on planes (the
// MPI core's algorithm): no rank leaves before the last of its
// communicator enters, and Result.Collectives says which ran. The world's
// barrier network takes, from the last rank entering to the last
// leaving, what the arming, the tree's AND and release and the looks
// cost (logged against the paper's 1.5 µs at 65,536 nodes, L38).
func TestBGLBarrier(t *testing.T) {
	const X, Y, Z, rounds = 4, 4, 2, 4
	cases := []struct {
		name   string
		with   string
		planes bool
		dup    bool
		vn     bool
		mesh   bool
		impl   string
	}{
		{"world", "", false, false, false, false, ImplBarrier},
		{"world-torus", ImplTorus, false, false, false, false, ImplTorus},
		{"dup", "", false, true, false, false, ImplTorus},
		{"planes", "", true, false, false, false, ImplTorus},
		// Virtual node mode: task 1 arrives at task 0, which arms, and
		// leaves on task 0's word of the release (lockbox words: at most
		// 0.3 µs over a node's barrier; messages through the virtual FIFO
		// took about 1.1).
		{"vn-world", "", false, false, true, false, ImplBarrier},
		{"vn-world-mesh", "", false, false, true, true, ImplBarrier},
		{"vn-dup", "", false, true, true, false, ImplTorus},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := X * Y * Z
			spec := bgl.DefaultSpec(X, Y, Z)
			spec.Torus.Mesh = tc.mesh
			if tc.vn {
				spec = spec.WithMode(bgl.VirtualNodeMode)
				n *= 2
			}
			enter := make([][rounds]sim.Tick, n)
			leave := make([][rounds]sim.Tick, n)
			group := make([]int, n)
			res, failed := bglRunSpec(t, spec, BGL{BarrierWith: tc.with}, func(w *Comm, fail func(string, ...any)) {
				c := w
				if tc.dup {
					c, _ = w.Dup()
				}
				if tc.planes {
					c = commOf(w, X, Y, func(x, y, z int) int { return z })
					group[w.Rank()] = w.Rank() / (X * Y)
				}
				rng := rand.New(rand.NewPCG(uint64(w.Rank()), 7))
				for k := range rounds {
					c.Compute(rng.IntN(20000))
					enter[w.Rank()][k] = c.Now()
					if err := c.Barrier(); err != nil {
						fail("%v", err)
						return
					}
					leave[w.Rank()][k] = c.Now()
				}
			})
			for _, f := range failed {
				t.Error(f)
			}
			for k := range rounds {
				last, first, end := map[int]sim.Tick{}, map[int]sim.Tick{}, map[int]sim.Tick{}
				for r := range n {
					g := group[r]
					last[g] = max(last[g], enter[r][k])
					if f, ok := first[g]; !ok || leave[r][k] < f {
						first[g] = leave[r][k]
					}
					end[g] = max(end[g], leave[r][k])
				}
				for g := range last {
					if first[g] < last[g] {
						t.Errorf("round %d, communicator %d: a rank left at %v, before the last entered at %v", k, g, first[g], last[g])
					}
				}
				took := float64(end[0]-last[0]) / float64(sim.US)
				if tc.impl == ImplBarrier && took > 1.1 {
					t.Errorf("round %d: last entered to last left %.2f µs, want at most 1.1 (the barrier network's 0.5 µs at depth 5, the looks and, in virtual node mode, the lockbox words)", k, took)
				}
				t.Logf("round %d: last entered to last left %.2f µs", k, took)
			}
			comms := uint64(1) // every communicator counts its own
			if tc.planes {
				comms = Z
			}
			calls := uint64(0)
			for _, s := range res.Collectives {
				if s.Call == "Barrier" {
					if s.Impl != tc.impl {
						t.Errorf("%d barriers took %s, want %s", s.Calls, s.Impl, tc.impl)
					}
					calls += s.Calls
				}
			}
			if calls != comms*rounds {
				t.Errorf("%d barriers counted, want %d", calls, comms*rounds)
			}
		})
	}
}

// TestBGLBcastVirtualNode broadcasts in virtual node mode (two ranks a
// node, XYZT with t slowest, so that rank r and r+N share a node): on
// MPI_COMM_WORLD (the tree), on its duplicate and on the tasks of planes
// of nodes (boxes with both tasks of each node: the deposit broadcast),
// task 1 copying from task 0 in both,
// on the ranks of one task per node (no box in this sense: the mesh-aware
// broadcast), from roots on task 0 and task 1, corners and interiors;
// every byte at every task, and the implementation each took.
func TestBGLBcastVirtualNode(t *testing.T) {
	const X, Y, Z = 4, 2, 2
	const N = X * Y * Z
	cases := []struct {
		name  string
		mesh  bool
		comm  func(c *Comm) *Comm
		comms uint64
		roots []int
		impl  string
	}{
		{"world", false, func(c *Comm) *Comm { return c }, 1, []int{0, N + 5, 6}, ImplTree},
		{"world-mesh", true, func(c *Comm) *Comm { return c }, 1, []int{N + 3, 9}, ImplTree},
		{"dup", false, func(c *Comm) *Comm { d, _ := c.Dup(); return d }, 1, []int{0, N + 5, 6}, ImplDeposit},
		{"dup-mesh", true, func(c *Comm) *Comm { d, _ := c.Dup(); return d }, 1, []int{N + 3, 9}, ImplDeposit},
		{"planes", false, func(c *Comm) *Comm {
			s, _ := c.Split(c.Rank()%N/(X*Y), c.Rank())
			return s
		}, Z, []int{1, 11}, ImplDeposit},
		{"task-halves", false, func(c *Comm) *Comm {
			s, _ := c.Split(c.Rank()/N, c.Rank())
			return s
		}, 2, []int{0, 7}, ImplMesh},
	}
	sizes := []int{1, 1000, 9000}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := bgl.DefaultSpec(X, Y, Z).WithMode(bgl.VirtualNodeMode)
			spec.Torus.Mesh = tc.mesh
			m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			res, err := RunTorus(m, Config{Collectives: BGL{MeshPiece: 4096}}, TorusConfig{}, nil, func(w *Comm) {
				c := tc.comm(w)
				rng := rand.New(rand.NewPCG(uint64(w.Rank()), 4))
				for _, root := range tc.roots {
					root %= c.Size()
					for k, n := range sizes {
						b := c.Alloc(n)
						want := torusPattern(root, k, n)
						if c.Rank() == root {
							c.Write(b, want)
						}
						c.Compute(rng.IntN(3000))
						if err := c.Bcast(b, root); err != nil {
							failed = append(failed, fmt.Sprintf("rank %d: %v", w.Rank(), err))
							return
						}
						if !bytes.Equal(c.Read(b), want) {
							failed = append(failed, fmt.Sprintf("rank %d: %d bytes from %d: data differs", w.Rank(), n, root))
						}
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range failed {
				t.Error(f)
			}
			bcasts := uint64(0)
			for _, s := range res.Collectives {
				if s.Call == "Bcast" {
					if s.Impl != tc.impl {
						t.Errorf("%d broadcasts took %s, want %s", s.Calls, s.Impl, tc.impl)
					}
					bcasts += s.Calls
				}
			}
			if want := tc.comms * uint64(len(tc.roots)*len(sizes)); bcasts != want {
				t.Errorf("%d broadcasts counted, want %d", bcasts, want)
			}
		})
	}
}

// TestBGLReduceVirtualNode reduces in virtual node mode (two ranks a node,
// rank r and r+N on one node) on MPI_COMM_WORLD (the tree: task 1 hands
// its part to task 0, which combines and takes part) and on its duplicate
// (the torus), torus and mesh, with every operation the tree does and the
// product, MPI_Reduce to roots on task 0 and task 1: every element at
// every rank that gets the result against the serial reduction in rank
// order (the float sum of values float64 sums exactly, bit for bit), the
// implementation each took, and the same ticks on a second run.
func TestBGLReduceVirtualNode(t *testing.T) {
	const X, Y, Z = 4, 2, 2
	const N = X * Y * Z
	ops := []Op{SumInt64, SumUint64, MaxInt64, MinInt64, MaxUint64, MinUint64, BandUint64, BorUint64, BxorUint64, MaxFloat64, MinFloat64, SumFloat64, ProdFloat64}
	value := func(op Op, rank, i int) uint64 {
		rng := rand.New(rand.NewPCG(uint64(rank), uint64(i)))
		switch op.Name {
		case "sum_float64":
			return math.Float64bits(float64(rng.IntN(1<<29)-1<<28) / 1024)
		case "prod_float64":
			// Powers of two: the torus's algorithm combines in its own
			// order (MPICH2's), and 32 factors of 1+k/8 need more than
			// float64's 53 bits, so only exact products compare bit for bit.
			return math.Float64bits(math.Ldexp(1, rng.IntN(5)-2))
		case "max_float64", "min_float64":
			return math.Float64bits(rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-30))
		}
		return rng.Uint64()
	}
	cases := []struct {
		name  string
		mesh  bool
		dup   bool
		count int
		roots []int
	}{
		{"world/count=1", false, false, 1, []int{0, N + 3}},
		{"world/count=40", false, false, 40, []int{5, N + 6}},
		{"world-mesh/count=300", true, false, 300, []int{N + 1, 9}},
		{"dup/count=40", false, true, 40, []int{N + 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func() (*Result, []string, []sim.Tick) {
				spec := bgl.DefaultSpec(X, Y, Z).WithMode(bgl.VirtualNodeMode)
				spec.Torus.Mesh = tc.mesh
				ends := make([]sim.Tick, 2*N)
				res, failed := bglRunSpec(t, spec, BGL{}, func(w *Comm, fail func(string, ...any)) {
					c := w
					if tc.dup {
						c, _ = w.Dup()
					}
					rng := rand.New(rand.NewPCG(uint64(w.Rank()), 9))
					for _, op := range ops {
						mine, want := make([]byte, 8*tc.count), make([]byte, 8*tc.count)
						for i := 0; i < tc.count; i++ {
							binary.LittleEndian.PutUint64(mine[8*i:], value(op, c.Rank(), i))
							binary.LittleEndian.PutUint64(want[8*i:], value(op, 0, i))
						}
						for r := 1; r < c.Size(); r++ {
							in := make([]byte, 8*tc.count)
							for i := 0; i < tc.count; i++ {
								binary.LittleEndian.PutUint64(in[8*i:], value(op, r, i))
							}
							op.Apply(want, in)
						}
						send, recv := c.Alloc(8*tc.count), c.Alloc(8*tc.count)
						c.Write(send, mine)
						c.Compute(rng.IntN(3000))
						if err := c.Allreduce(send, recv, op); err != nil {
							fail("%v", err)
							return
						}
						if !bytes.Equal(c.Read(recv), want) {
							fail("Allreduce %s: differs from the serial reduction", op.Name)
						}
						for _, root := range tc.roots {
							c.Write(recv, make([]byte, 8*tc.count))
							c.Compute(rng.IntN(3000))
							if err := c.Reduce(send, recv, op, root); err != nil {
								fail("%v", err)
								return
							}
							if c.Rank() == root && !bytes.Equal(c.Read(recv), want) {
								fail("Reduce %s to %d: differs from the serial reduction", op.Name, root)
							}
						}
					}
					ends[w.Rank()] = w.Now()
				})
				return res, failed, ends
			}
			res, failed, ends := run()
			for _, f := range failed {
				t.Error(f)
			}
			calls := map[string]uint64{}
			for _, s := range res.Collectives {
				if s.Call == "Allreduce" || s.Call == "Reduce" {
					calls[s.Call+" "+s.Impl] += s.Calls
				}
			}
			tree, torus := uint64(len(ops)-1), uint64(1)
			if tc.dup {
				tree, torus = 0, uint64(len(ops))
			}
			roots := uint64(len(tc.roots))
			for k, want := range map[string]uint64{"Allreduce tree": tree, "Allreduce torus": torus, "Reduce tree": tree * roots, "Reduce torus": torus * roots} {
				if calls[k] != want {
					t.Errorf("%s: %d operations, want %d", k, calls[k], want)
				}
			}
			_, _, again := run()
			if !slices.Equal(ends, again) {
				t.Errorf("a second run ends at other ticks:\n%v\n%v", ends, again)
			}
			t.Logf("last rank done at %.2f µs", float64(slices.Max(ends))/float64(sim.US))
		})
	}
}
