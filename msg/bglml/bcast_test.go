package bglml

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TestBcastRoutes follows every route's packets hop by hop on several
// shapes: each node but the root gets a route's packet exactly once, and
// no directed link carries packets of two routes.
func TestBcastRoutes(t *testing.T) {
	for _, c := range []struct{ dims, root torus.Coord }{
		{torus.Coord{4, 4, 2}, torus.Coord{}}, {torus.Coord{4, 4, 4}, torus.Coord{}}, {torus.Coord{2, 2, 2}, torus.Coord{}},
		{torus.Coord{3, 5, 2}, torus.Coord{}}, {torus.Coord{8, 8, 8}, torus.Coord{}}, {torus.Coord{4, 4, 1}, torus.Coord{}},
		{torus.Coord{4, 1, 3}, torus.Coord{}}, {torus.Coord{1, 5, 2}, torus.Coord{}}, {torus.Coord{6, 1, 1}, torus.Coord{}},
		{torus.Coord{1, 1, 4}, torus.Coord{}},
		// Interior roots of a mesh, and roots at the high end.
		{torus.Coord{4, 4, 2}, torus.Coord{1, 2, 0}}, {torus.Coord{4, 4, 2}, torus.Coord{3, 3, 1}},
		{torus.Coord{4, 4, 4}, torus.Coord{1, 2, 3}}, {torus.Coord{3, 5, 3}, torus.Coord{1, 1, 1}},
		{torus.Coord{8, 8, 8}, torus.Coord{3, 4, 5}}, {torus.Coord{4, 4, 1}, torus.Coord{2, 1, 0}},
		{torus.Coord{5, 1, 3}, torus.Coord{2, 0, 1}}, {torus.Coord{6, 1, 1}, torus.Coord{4, 0, 0}},
		{torus.Coord{1, 3, 4}, torus.Coord{0, 2, 1}},
	} {
		dims := c.dims
		var lo, hi torus.Coord
		for d := 0; d < 3; d++ {
			lo[d], hi[d] = -c.root[d], dims[d]-1-c.root[d]
		}
		t.Run(fmt.Sprint(dims, c.root), func(t *testing.T) {
			type arc struct {
				from torus.Coord
				dim  int
				dir  int8
			}
			owner := map[arc]int{}
			for r := 0; r < 3; r++ {
				if dims[r] < 2 {
					continue // no route starts along a dimension of one node
				}
				got := map[torus.Coord]int{}
				queue := []torus.Coord{{}}
				for len(queue) > 0 {
					c := queue[0]
					queue = queue[1:]
					for _, h := range bcastNext(lo, hi, r, c) {
						d := -1
						for k := 0; k < 3; k++ {
							if h.to[k] != c[k] {
								if d >= 0 {
									t.Fatalf("route %d: %v → %v is not on a line", r, c, h.to)
								}
								d = k
							}
						}
						if h.to[d] < lo[d] || h.to[d] > hi[d] {
							t.Fatalf("route %d: %v → %v leaves the box", r, c, h.to)
						}
						dir := h.hint[d]
						for at := c; at != h.to; {
							a := arc{at, d, dir}
							if o, used := owner[a]; used && o != r {
								t.Errorf("route %d and route %d both use the link from %v along %c%+d", o, r, at, "xyz"[d], dir)
							}
							owner[a] = r
							if at[d] += int(dir); at[d] < lo[d] || at[d] > hi[d] {
								t.Fatalf("route %d: %v → %v along %c%+d leaves the box", r, c, h.to, "xyz"[d], dir)
							}
							if h.deposit || at == h.to {
								if got[at]++; got[at] == 1 { // forwarded once
									queue = append(queue, at)
								}
							}
						}
					}
				}
				for i := 0; i < dims[0]*dims[1]*dims[2]; i++ {
					c := torus.Coord{i%dims[0] + lo[0], i/dims[0]%dims[1] + lo[1], i/(dims[0]*dims[1]) + lo[2]}
					if want := map[bool]int{true: 0, false: 1}[c == torus.Coord{}]; got[c] != want {
						t.Errorf("route %d: node %v gets the packet %d times, want %d", r, c, got[c], want)
					}
				}
			}
		})
	}
}

// bcastRun broadcasts size bytes from node 0 over routes routes on a
// machine of spec and returns the time the last node had all of it, after
// checking every byte at every node.
func bcastRun(t testing.TB, spec bgl.Spec, routes, size int) sim.Tick {
	t.Helper()
	end, err := BcastTime(spec, DefaultParams(), DefaultCosts(), routes, size, func(node int, got []byte, want []byte) {
		if !bytes.Equal(got, want) {
			t.Errorf("node %d: %d routes, %d bytes: data differs", node, routes, size)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// TestBcast broadcasts sizes from one byte to several packets per route
// on a mesh and a torus over one, two and three routes, and checks that
// every node gets every byte.
func TestBcast(t *testing.T) {
	for _, mesh := range []bool{true, false} {
		spec := bgl.DefaultSpec(4, 4, 2)
		spec.Torus.Mesh = mesh
		for routes := 1; routes <= 3; routes++ {
			for _, size := range []int{1, 241, 2000} {
				bcastRun(t, spec, routes, size)
			}
		}
	}
}

// TestBcastRoutesFaster: with a long message, three routes beat one
// (three of the root's links instead of one).
func TestBcastRoutesFaster(t *testing.T) {
	spec := bgl.DefaultSpec(4, 4, 2)
	spec.Torus.Mesh = true
	one, three := bcastRun(t, spec, 1, 48000), bcastRun(t, spec, 3, 48000)
	if float64(one)/float64(three) < 1.5 {
		t.Errorf("48 kB: one route %v, three %v: want three at least 1.5× as fast", one, three)
	}
	t.Logf("48 kB on a 4×4×2 mesh: one route %v, three routes %v (%.2f×)", one, three, float64(one)/float64(three))
}

// TestBcastBadInput checks the broadcast's refusals.
func TestBcastBadInput(t *testing.T) {
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(4, 4, 1))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := New(m, 0, DefaultParams(), DefaultCosts(), nil)
	m.Nodes[0].Cores[0].Spawn("bad", func(p *cpu.Proc) {
		if err := l.Bcast(p, 0, 100, 4, nil); err == nil || !strings.Contains(err.Error(), "over 4 routes") {
			t.Errorf("4 routes: %v", err)
		}
		for _, c := range []struct {
			box  Box
			root torus.Coord
			want string
		}{
			{Box{torus.Coord{1, 1, 0}, torus.Coord{3, 2, 1}}, torus.Coord{1, 1, 0}, "outside the broadcast box"},
			{Box{torus.Coord{0, 0, 0}, torus.Coord{5, 1, 1}}, torus.Coord{0, 0, 0}, "broadcast box at (0,0,0) of (5,1,1)"},
			{Box{torus.Coord{0, 0, 0}, torus.Coord{4, 0, 1}}, torus.Coord{0, 0, 0}, "broadcast box"},
			{Box{torus.Coord{0, 0, 0}, torus.Coord{4, 4, 1}}, torus.Coord{0, 4, 0}, "outside the box"},
			{Box{torus.Coord{1, 1, 0}, torus.Coord{2, 2, 1}}, torus.Coord{0, 1, 0}, "outside the box"},
		} {
			if err := l.BcastBox(p, c.box, c.root, 0, 100, 3, 1, nil); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v from %v: %v, want %q", c.box, c.root, err, c.want)
			}
		}
	})
	m.World.Run(sim.S)
}

// TestBcastFrom broadcasts from roots other than the origin: every node
// of a torus (by translation of the routes), every corner of a mesh (by
// reflection) and interior nodes of a mesh (lines both ways), over one
// route and three, every byte at every node.
func TestBcastFrom(t *testing.T) {
	for _, c := range []struct {
		dims  torus.Coord
		mesh  bool
		roots []torus.Coord
	}{
		{torus.Coord{4, 4, 2}, false, []torus.Coord{{1, 2, 1}, {3, 3, 1}, {2, 0, 0}}},
		{torus.Coord{3, 5, 2}, false, []torus.Coord{{2, 4, 1}, {1, 3, 0}}},
		{torus.Coord{4, 4, 2}, true, []torus.Coord{{3, 0, 0}, {0, 3, 1}, {3, 3, 1}, {1, 2, 0}, {2, 0, 1}}},
		{torus.Coord{3, 3, 3}, true, []torus.Coord{{1, 1, 1}}},
	} {
		spec := bgl.DefaultSpec(c.dims[0], c.dims[1], c.dims[2])
		spec.Torus.Mesh = c.mesh
		for _, root := range c.roots {
			for _, routes := range []int{1, 3} {
				bad := 0
				_, err := BcastTimeFrom(spec, DefaultParams(), DefaultCosts(), root, routes, 3000, func(node int, got, want []byte) {
					if !bytes.Equal(got, want) {
						bad++
					}
				})
				if err != nil || bad > 0 {
					t.Errorf("%v mesh %v, root %v, %d routes: %v, %d nodes with wrong bytes", c.dims, c.mesh, root, routes, err, bad)
				}
			}
		}
	}
}

// boxJob is a broadcast among the nodes of a box.
type boxJob struct {
	box          Box
	root         torus.Coord
	size, routes int
	key          uint32
}

// boxRun runs the jobs on a machine of spec: every node takes part, in
// order, in the jobs whose box holds it, after computing a random while
// (so that packets come before their broadcast is posted), and checks
// every byte. It returns the end and the layers' statistics.
func boxRun(t *testing.T, spec bgl.Spec, jobs []boxJob, seed uint64) (sim.Tick, []Stats) {
	t.Helper()
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 5))
	var end sim.Tick
	layers := make([]*Layer, len(m.Nodes))
	for i, nd := range m.Nodes {
		i, nd := i, nd
		l, err := New(m, i, DefaultParams(), DefaultCosts(), nil)
		if err != nil {
			t.Fatal(err)
		}
		layers[i] = l
		delays := make([]int, len(jobs))
		for j := range delays {
			delays[j] = rng.IntN(20000)
		}
		nd.Cores[0].Spawn("box", func(p *cpu.Proc) {
			for j, b := range jobs {
				in := true
				for d := 0; d < 3; d++ {
					if (nd.Torus.At[d]-b.box.Lo[d]+spec.Torus.Dims[d])%spec.Torus.Dims[d] >= b.box.Ext[d] {
						in = false
					}
				}
				if !in {
					continue
				}
				want := make([]byte, b.size)
				for k := range want {
					want[k] = byte(k*7 + j*31 + k>>8 + 1)
				}
				a := nd.Alloc(b.size)
				if nd.Torus.At == b.root {
					nd.Mem.Write(a, want)
				}
				// Polling the layer meanwhile, as a rank in MPI does: packets
				// of this broadcast that come are staged.
				for until := p.Now() + sim.Tick(delays[j])*spec.Torus.Period(); p.Now() < until; {
					l.Advance(p)
				}
				fin := false
				if err := l.BcastBox(p, b.box, b.root, a, b.size, b.routes, b.key, func() { fin = true }); err != nil {
					t.Error(err)
					return
				}
				l.Until(p, func() bool { return fin })
				got := make([]byte, b.size)
				nd.Mem.Read(a, got)
				if !bytes.Equal(got, want) {
					t.Errorf("job %d, node %v: data differs", j, nd.Torus.At)
				}
			}
			l.Until(p, l.Idle)
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

// TestBcastBox broadcasts in sub-boxes of a torus and of a mesh: two
// disjoint boxes at once, then two broadcasts one after the other in one
// box and a plane and a line inside it, the nodes posting at random times;
// every byte at every node, packets that came early staged, and the same
// run twice.
func TestBcastBox(t *testing.T) {
	for _, mesh := range []bool{false, true} {
		t.Run(fmt.Sprintf("mesh=%v", mesh), func(t *testing.T) {
			spec := bgl.DefaultSpec(4, 4, 2)
			spec.Torus.Mesh = mesh
			jobs := []boxJob{
				{Box{torus.Coord{0, 0, 0}, torus.Coord{2, 4, 2}}, torus.Coord{1, 3, 1}, 5000, 3, 1},
				{Box{torus.Coord{2, 0, 0}, torus.Coord{2, 4, 2}}, torus.Coord{2, 0, 0}, 3000, 3, 2},
				{Box{torus.Coord{0, 1, 0}, torus.Coord{4, 3, 2}}, torus.Coord{3, 1, 0}, 4000, 3, 3},
				{Box{torus.Coord{0, 1, 0}, torus.Coord{4, 3, 2}}, torus.Coord{0, 3, 1}, 2000, 2, 4},
				{Box{torus.Coord{0, 1, 1}, torus.Coord{4, 3, 1}}, torus.Coord{3, 3, 1}, 2500, 3, 5},
				{Box{torus.Coord{0, 2, 0}, torus.Coord{4, 1, 1}}, torus.Coord{0, 2, 0}, 1500, 3, 6},
			}
			if !mesh {
				// along a ring the box covers whole, any root
				jobs = append(jobs, boxJob{Box{torus.Coord{0, 1, 0}, torus.Coord{4, 2, 1}}, torus.Coord{2, 2, 0}, 3500, 3, 7})
			}
			e1, s1 := boxRun(t, spec, jobs, 1)
			e2, s2 := boxRun(t, spec, jobs, 1)
			if e1 != e2 || fmt.Sprint(s1) != fmt.Sprint(s2) {
				t.Errorf("two runs differ: %v and %v", e1, e2)
			}
			staged := uint64(0)
			for _, s := range s1 {
				staged += s.BcastStaged
			}
			if staged == 0 {
				t.Error("no packet came before its broadcast was posted: the staging is not exercised")
			}
			t.Logf("end %v, %d packets staged", e1, staged)
		})
	}
}

// TestBcastVirtualNode broadcasts in virtual node mode (the deposit lines
// fill the FIFO set of every node's task 0, which lets task 1 copy the
// data by chunks): every byte at every task, on a mesh and a torus, from
// the origin and another root, over one and three routes, for sizes
// under a packet, under a chunk, and of several chunks; and the same run
// twice gives the same time.
func TestBcastVirtualNode(t *testing.T) {
	for _, c := range []struct {
		name string
		mesh bool
		root torus.Coord
		size int
	}{
		{"mesh, 1 byte", true, torus.Coord{}, 1},
		{"mesh, 2000 bytes", true, torus.Coord{}, 2000},
		{"mesh, 3 chunks and a bit", true, torus.Coord{3, 3, 1}, 3*VNBcastChunk + 100},
		{"torus, 3 chunks and a bit", false, torus.Coord{1, 2, 1}, 3*VNBcastChunk + 100},
	} {
		for _, routes := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%d routes", c.name, routes), func(t *testing.T) {
				spec := bgl.DefaultSpec(4, 4, 2).WithMode(bgl.VirtualNodeMode)
				spec.Torus.Mesh = c.mesh
				run := func() sim.Tick {
					tasks := 0
					end, err := BcastTimeFrom(spec, DefaultParams(), DefaultCosts(), c.root, routes, c.size, func(task int, got, want []byte) {
						tasks++
						if !bytes.Equal(got, want) {
							t.Errorf("task %d: data differs", task)
						}
					})
					if err != nil {
						t.Fatal(err)
					}
					if tasks != 64 {
						t.Errorf("%d tasks checked, want 64", tasks)
					}
					return end
				}
				a, b := run(), run()
				if a != b {
					t.Errorf("two runs: %v and %v", a, b)
				}
			})
		}
	}
}

// TestBcastVirtualNodeCopies: a second task copies the root's data in one
// piece (it is all there) and any other node's in chunks of
// VNBcastChunk as it arrives in order; a task 0 ends after its task 1
// (it waits for the copy's end before its buffer is free), and the
// broadcast takes longer than with one task a node, by less than half.
func TestBcastVirtualNodeCopies(t *testing.T) {
	for _, size := range []int{1000, 4 * VNBcastChunk} {
		spec := bgl.DefaultSpec(4, 4, 2)
		spec.Torus.Mesh = true
		one, err := BcastTime(spec, DefaultParams(), DefaultCosts(), 3, size, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := bgl.New(sim.NewWorld(1), "bgl", spec.WithMode(bgl.VirtualNodeMode))
		if err != nil {
			t.Fatal(err)
		}
		ls := make([]*Layer, 2*len(m.Nodes))
		var end sim.Tick
		var ends [2]sim.Tick
		for i := range ls {
			i := i
			if ls[i], err = NewTask(m, i, DefaultParams(), DefaultCosts(), nil); err != nil {
				t.Fatal(err)
			}
			nd := m.Nodes[i/2]
			buf := nd.Alloc(size)
			nd.Cores[i%2].Spawn("bcast", func(p *cpu.Proc) {
				have := false
				if err := ls[i].Bcast(p, buf, size, 3, func() { have = true }); err != nil {
					t.Error(err)
					return
				}
				ls[i].Until(p, func() bool { return have })
				end = max(end, p.Now())
				ends[i%2] = max(ends[i%2], p.Now())
				ls[i].Until(p, ls[i].Idle)
			})
		}
		m.World.Run(sim.S)
		chunks := uint64((size + VNBcastChunk - 1) / VNBcastChunk)
		for i := 1; i < len(ls); i += 2 {
			want := chunks
			if i == 1 {
				want = 1 // the root's node
			}
			if ls[i].Stats.Copied != want {
				t.Errorf("%d bytes: task %d copied %d times, want %d", size, i, ls[i].Stats.Copied, want)
			}
		}
		if end <= ends[1] || end <= one || 2*end > 3*one {
			t.Errorf("%d bytes: virtual node mode %v (task 0s %v, task 1s %v), one task a node %v: want task 0s last (they wait for the copies' end), and between 1 and 1.5 times one task a node", size, end, ends[0], ends[1], one)
		}
		t.Logf("%d bytes on a 4×4×2 mesh, 3 routes: one task a node %v, two tasks %v", size, one, end)
	}
}
