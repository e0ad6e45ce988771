package bglml

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/torus"
)

// The torus broadcast (L153–L155): van de Geijn's mesh broadcast with the
// deposit bit, pipelined packet by packet over up to three routes that
// share no directed link. The paper's figure of a route is missing; these
// routes are ours. From the root at node (0,0,0), route r takes the
// dimensions in the order d0, d1, d2 = r, r+1, r+2 (mod 3):
//
//  1. the root deposits the packet along d0+ (the line c[d1] = c[d2] = 0);
//  2. every node of that line but the root deposits it along d1+;
//  3. every node with c[d0] ≥ 1 and c[d2] = 0 deposits it along d2+;
//  4. every node with c[d0] = 1 off the first line sends it one hop d0−,
//     to the node with c[d0] = 0 (which steps 1–3 never reach).
//
// Route r uses d0+ links on its first line, d1+ links where c[d0] ≥ 1 and
// c[d2] = 0, d2+ links where c[d0] ≥ 1, and d0− links; the three routes'
// + links of each dimension are then on disjoint sets of lines (for x:
// y = z = 0, y = 0 < z, and y ≥ 1) and each uses the − links of its own
// first dimension only, so no link carries two routes (TestBcastRoutes
// checks it link by link). Every node gets each packet once.

// bcastNext is what node c forwards of a route-r packet: the destinations
// of its deposit lines and one-hop sends, with the hints that make them go
// the route's way.
func bcastNext(dims torus.Coord, r int, c torus.Coord) (out []bcastHop) {
	d0, d1, d2 := r%3, (r+1)%3, (r+2)%3
	line := func(d int, dir int8) {
		to := c
		if dir > 0 {
			to[d] = dims[d] - 1
		} else {
			to[d] = c[d] - 1
		}
		if to != c {
			var h [3]int8
			h[d] = dir
			out = append(out, bcastHop{to: to, hint: h, deposit: dir > 0})
		}
	}
	root := c == torus.Coord{}
	switch {
	case root:
		line(d0, 1)
		return out
	case c[d1] == 0 && c[d2] == 0: // on the first line
		line(d1, 1)
	}
	if c[d0] >= 1 && c[d2] == 0 {
		line(d2, 1)
	}
	if c[d0] == 1 && (c[d1] != 0 || c[d2] != 0) {
		line(d0, -1)
	}
	return out
}

type bcastHop struct {
	to      torus.Coord
	hint    [3]int8
	deposit bool
}

// bcast is a node's part of a torus broadcast under way.
type bcast struct {
	addr      uint64
	size, got int
	routes    int
	done      func()
	root      torus.Coord
}

// frame maps the routes, built from the origin, onto a broadcast from
// root: along a dimension that wraps around, which looks the same from
// every node, by translation; along one that does not (a mesh's, a
// torus's of two nodes), where the root must then be at an end, by
// reflection if it is at the far end.
type frame struct {
	dims, root torus.Coord
	mesh       bool
}

// wraps reports whether dimension d has wrap-around links (a torus's
// dimension of more than two nodes); the others are reflected.
func (f frame) wraps(d int) bool { return !f.mesh && f.dims[d] > 2 }

// rel is node c's coordinates as the routes from the origin see them.
func (f frame) rel(c torus.Coord) (r torus.Coord) {
	for d := 0; d < 3; d++ {
		switch {
		case f.wraps(d):
			r[d] = (c[d] - f.root[d] + f.dims[d]) % f.dims[d]
		case f.root[d] == 0:
			r[d] = c[d]
		default:
			r[d] = f.dims[d] - 1 - c[d]
		}
	}
	return r
}

// abs is the inverse of rel, and a hop's hint turned with it.
func (f frame) abs(h bcastHop) bcastHop {
	out := h
	for d := 0; d < 3; d++ {
		switch {
		case f.wraps(d):
			out.to[d] = (h.to[d] + f.root[d]) % f.dims[d]
		case f.root[d] != 0:
			out.to[d] = f.dims[d] - 1 - h.to[d]
			out.hint[d] = -h.hint[d]
		}
	}
	return out
}

// Bcast takes part in a torus broadcast of size bytes at addr from node
// (0,0,0) (the root's data; every other node's buffer) over routes routes
// (1 to 3): packet k goes on route k mod routes. The root writes its
// packets, every node places the packets it gets and forwards them along
// its route; done is called when the node has the whole message (at the
// root, when its packets are written). One broadcast at a time.
func (l *Layer) Bcast(p *cpu.Proc, addr uint64, size, routes int, done func()) error {
	return l.BcastFrom(p, torus.Coord{}, addr, size, routes, done)
}

// BcastFrom is Bcast from the node at root: any node of a torus, a
// corner of a mesh (the routes turned to start there).
func (l *Layer) BcastFrom(p *cpu.Proc, root torus.Coord, addr uint64, size, routes int, done func()) error {
	if routes < 1 || routes > 3 || size < 1 || size > MaxMessage {
		return fmt.Errorf("bglml: broadcast of %d bytes over %d routes (1 to 3)", size, routes)
	}
	if l.bc != nil {
		return fmt.Errorf("bglml: node %d: a broadcast while one is under way", l.nd.Index)
	}
	if l.tasks > 1 {
		return fmt.Errorf("bglml: node %d: the torus broadcast in virtual node mode (one task a node only)", l.nd.Index)
	}
	dims := l.dims()
	for d := 0; d < 3; d++ {
		if dims[d] < 2 {
			return fmt.Errorf("bglml: a torus broadcast on a %d×%d×%d machine (the routes need two nodes in every dimension)", dims[0], dims[1], dims[2])
		}
	}
	for d := 0; d < 3; d++ {
		if root[d] < 0 || root[d] >= dims[d] || l.meshed && root[d] != 0 && root[d] != dims[d]-1 {
			return fmt.Errorf("bglml: broadcast from %v on a %d×%d×%d %s (any node of a torus, a corner of a mesh)", root, dims[0], dims[1], dims[2], map[bool]string{true: "mesh", false: "torus"}[l.meshed])
		}
	}
	p.Compute(l.costs.Post)
	l.bc = &bcast{addr: addr, size: size, routes: routes, done: done, root: root}
	if l.nd.Torus.At != root {
		return nil
	}
	fr := l.frame()
	n := (size + torus.MaxPayload - 1) / torus.MaxPayload
	for r := 0; r < routes; r++ {
		r := r
		hops := bcastNext(dims, r, torus.Coord{})
		hops[0] = fr.abs(hops[0])
		k0 := r
		o := &out{dst: l.nodeAt(hops[0].to), n: (n - k0 + routes - 1) / routes, from: bgl.FromMemory, ready: true,
			build: func(j int) *torus.Packet {
				k := k0 + j*routes
				off := k * torus.MaxPayload
				return l.bcastPacket(hops[0], r, k, l.data(addr+uint64(off), min(torus.MaxPayload, size-off)))
			}}
		if r == routes-1 {
			o.sent = func() { l.endBcast(p) }
		}
		if o.n > 0 {
			l.queue(o)
		} else if r == routes-1 {
			l.endBcast(p)
		}
	}
	return nil
}

func (l *Layer) endBcast(p *cpu.Proc) {
	bc := l.bc
	l.bc = nil
	if bc.done != nil {
		p.Compute(l.costs.Callback)
		bc.done()
	}
}

// frame is the current broadcast's frame.
func (l *Layer) frame() frame { return frame{dims: l.dims(), root: l.bc.root, mesh: l.meshed} }

func (l *Layer) dims() torus.Coord {
	last := l.nodes[len(l.nodes)-1].Torus.At
	return torus.Coord{last[0] + 1, last[1] + 1, last[2] + 1}
}

func (l *Layer) nodeAt(c torus.Coord) int {
	d := l.dims()
	return c[0] + d[0]*(c[1]+d[1]*c[2])
}

func (l *Layer) bcastPacket(h bcastHop, r, k int, data []byte) *torus.Packet {
	return &torus.Packet{Dst: h.to, Hint: h.hint, Deposit: h.deposit, Soft: soft(tBcast, 0, uint16(r), k), Payload: data}
}

// onBcast places a broadcast packet and queues its forwards.
func (l *Layer) onBcast(p *cpu.Proc, f int, r, k int) {
	bc := l.bc
	if bc == nil {
		panic(fmt.Sprintf("bglml: node %d: a broadcast packet with no broadcast under way", l.nd.Index))
	}
	p.Compute(l.costs.Lookup)
	pk, err := l.pl.Read(p, f, (bc.addr+uint64(k*torus.MaxPayload))%16 == 0)
	if err != nil || pk == nil {
		panic(fmt.Sprintf("bglml: node %d: FIFO %d: %v", l.nd.Index, f, err))
	}
	l.nd.Mem.Write(bc.addr+uint64(k*torus.MaxPayload), pk.Payload)
	bc.got += len(pk.Payload)
	fr := l.frame()
	for _, h := range bcastNext(l.dims(), r, fr.rel(l.nd.Torus.At)) {
		h := fr.abs(h)
		// The forward is written from the data just read (in the cache),
		// on the route's FIFO, so that its packets stay in order.
		l.queue(&out{dst: l.nodeAt(h.to), n: 1, from: bgl.FromCache, ready: true,
			build: func(int) *torus.Packet { return l.bcastPacket(h, r, k, pk.Payload) }})
	}
	if bc.got == bc.size {
		l.endBcast(p)
	}
}
