package bglml

import (
	"bytes"
	"fmt"
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
	for _, dims := range []torus.Coord{{4, 4, 2}, {4, 4, 4}, {2, 2, 2}, {3, 5, 2}, {8, 8, 8}} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			type arc struct {
				from torus.Coord
				dim  int
				dir  int8
			}
			owner := map[arc]int{}
			for r := 0; r < 3; r++ {
				got := map[torus.Coord]int{}
				queue := []torus.Coord{{}}
				for len(queue) > 0 {
					c := queue[0]
					queue = queue[1:]
					for _, h := range bcastNext(dims, r, c) {
						d := -1
						for k := 0; k < 3; k++ {
							if h.to[k] != c[k] {
								if d >= 0 {
									t.Fatalf("route %d: %v → %v is not on a line", r, c, h.to)
								}
								d = k
							}
						}
						dir := h.hint[d]
						for at := c; at != h.to; {
							a := arc{at, d, dir}
							if o, used := owner[a]; used && o != r {
								t.Errorf("route %d and route %d both use the link from %v along %c%+d", o, r, at, "xyz"[d], dir)
							}
							owner[a] = r
							at[d] += int(dir)
							if h.deposit || at == h.to {
								got[at]++
								queue = append(queue, at)
							}
						}
					}
				}
				for i := 0; i < dims[0]*dims[1]*dims[2]; i++ {
					c := torus.Coord{i % dims[0], i / dims[0] % dims[1], i / (dims[0] * dims[1])}
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
		if err := l.Bcast(p, 0, 100, 1, nil); err == nil || !strings.Contains(err.Error(), "two nodes in every dimension") {
			t.Errorf("4×4×1: %v", err)
		}
	})
	m.World.Run(sim.S)
}

// TestBcastFrom broadcasts from roots other than the origin: every node
// of a torus (by translation of the routes) and every corner of a mesh
// (by reflection), over three routes, every byte at every node; an
// interior root of a mesh is refused.
func TestBcastFrom(t *testing.T) {
	for _, c := range []struct {
		dims  torus.Coord
		mesh  bool
		roots []torus.Coord
	}{
		{torus.Coord{4, 4, 2}, false, []torus.Coord{{1, 2, 1}, {3, 3, 1}, {2, 0, 0}}},
		{torus.Coord{3, 5, 2}, false, []torus.Coord{{2, 4, 1}, {1, 3, 0}}},
		{torus.Coord{4, 4, 2}, true, []torus.Coord{{3, 0, 0}, {0, 3, 1}, {3, 3, 1}}},
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
	spec := bgl.DefaultSpec(4, 4, 2)
	spec.Torus.Mesh = true
	if _, err := BcastTimeFrom(spec, DefaultParams(), DefaultCosts(), torus.Coord{1, 0, 0}, 3, 100, nil); err == nil || !strings.Contains(err.Error(), "a corner of a mesh") {
		t.Errorf("interior root of a mesh: %v", err)
	}
}
