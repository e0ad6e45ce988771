package bglml

import (
	"encoding/binary"
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

// bcast is a node's (in virtual node mode, a task's) part of a torus
// broadcast under way.
type bcast struct {
	addr      uint64
	size, got int
	routes    int
	done      func()
	root      torus.Coord
	// Virtual node mode: the node's torus part is its task 0's (the
	// deposit lines fill FIFO set 0); torusDone says it has the data (at
	// the root: its packets are written). have marks the packets read,
	// prefix counts those read from the first on and told the bytes of
	// that prefix the other task was told of; peerDone says the other
	// task has copied all of them.
	torusDone, peerDone bool
	have                []bool
	prefix, told        int
}

// VNBcastChunk is how many bytes of a broadcast's data, received in
// order from the first, the node's task 0 lets the other task copy at a
// time (virtual node mode): a notice through the virtual FIFO (190
// cycles to write, 190 to read) a chunk, against 893 cycles of copy. Our
// choice: the paper gives none.
const VNBcastChunk = 16 * torus.MaxPayload

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
// corner of a mesh (the routes turned to start there). In virtual node
// mode every task calls it; the data is the root node's task 0's, each
// node's task 0 takes the node's part of the routes and its task 1 copies
// the data from task 0's buffer (tellPeer).
func (l *Layer) BcastFrom(p *cpu.Proc, root torus.Coord, addr uint64, size, routes int, done func()) error {
	defer l.mask()()
	if routes < 1 || routes > 3 || size < 1 || size > MaxMessage {
		return fmt.Errorf("bglml: broadcast of %d bytes over %d routes (1 to 3)", size, routes)
	}
	if l.bc != nil {
		return fmt.Errorf("bglml: node %d: a broadcast while one is under way", l.nd.Index)
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
	l.bc = &bcast{addr: addr, size: size, routes: routes, done: done, root: root, peerDone: l.tasks == 1}
	if l.tasks > 1 && l.self%l.tasks != 0 {
		// The node's second task: its data comes from task 0 by copies.
		for _, pk := range l.bcEarly {
			l.onBcastCopy(p, pk)
		}
		l.bcEarly = nil
		return nil
	}
	if l.nd.Torus.At != root {
		if l.tasks > 1 {
			l.bc.have = make([]bool, (size+torus.MaxPayload-1)/torus.MaxPayload)
		}
		return nil
	}
	if l.tasks > 1 {
		// The root's data is all here: the other task may copy it at once.
		l.bc.prefix = (size + torus.MaxPayload - 1) / torus.MaxPayload
		l.tellPeer(p)
	}
	fr := l.frame()
	n := (size + torus.MaxPayload - 1) / torus.MaxPayload
	for r := 0; r < routes; r++ {
		r := r
		hops := bcastNext(dims, r, torus.Coord{})
		hops[0] = fr.abs(hops[0])
		k0 := r
		o := &out{dst: l.nodeAt(hops[0].to) * l.tasks, n: (n - k0 + routes - 1) / routes, from: bgl.FromMemory, ready: true,
			build: func(j int) *torus.Packet {
				k := k0 + j*routes
				off := k * torus.MaxPayload
				return l.bcastPacket(hops[0], r, k, l.data(addr+uint64(off), min(torus.MaxPayload, size-off)))
			}}
		if r == routes-1 {
			o.sent = func() { l.torusDone(p) }
		}
		if o.n > 0 {
			l.queue(o)
		} else if r == routes-1 {
			l.torusDone(p)
		}
	}
	return nil
}

// torusDone: the node's torus part of the broadcast is done; the
// broadcast ends here once the other task (virtual node mode) has its
// copy too, task 0's buffer being what it copies from.
func (l *Layer) torusDone(p *cpu.Proc) {
	l.bc.torusDone = true
	if l.bc.peerDone {
		l.endBcast(p)
	}
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
		l.queue(&out{dst: l.nodeAt(h.to) * l.tasks, n: 1, from: bgl.FromCache, ready: true,
			build: func(int) *torus.Packet { return l.bcastPacket(h, r, k, pk.Payload) }})
	}
	if bc.have != nil {
		bc.have[k] = true
		for bc.prefix < len(bc.have) && bc.have[bc.prefix] {
			bc.prefix++
		}
		l.tellPeer(p)
	}
	if bc.got == bc.size {
		l.torusDone(p)
	}
}

// tellPeer, on task 0 in virtual node mode, lets the other task copy the
// data received in order from the first that it was not told of, once
// that is a chunk (VNBcastChunk) or the rest of the message. L144's
// protocol, not the virtual FIFO's packets: "much faster ... because the
// message data is not cycled through uncached memory". The lines are
// written back first (the L1s are not coherent, L34); the other task
// invalidates its own and copies.
func (l *Layer) tellPeer(p *cpu.Proc) {
	bc := l.bc
	upto := min(bc.prefix*torus.MaxPayload, bc.size)
	if upto == bc.told || upto-bc.told < VNBcastChunk && upto < bc.size {
		return
	}
	off, n := bc.told, upto-bc.told
	bc.told = upto
	p.Compute(bgl.Lines(bc.addr+uint64(off), n) * l.bs.FlushLineCycles)
	pl := binary.LittleEndian.AppendUint32(addrLen(bc.addr+uint64(off), n), uint32(off))
	peer := l.self + 1
	l.control(p, peer, &torus.Packet{Dst: l.coord(peer), Soft: soft(tVNBcast, l.self, 0, 0), Payload: pl})
}

// onBcastCopy, on the node's second task, copies a chunk of the
// broadcast's data from task 0's buffer (the notice pk); with the last
// it tells task 0 its buffer is free, and the broadcast ends here.
func (l *Layer) onBcastCopy(p *cpu.Proc, pk *torus.Packet) {
	bc := l.bc
	from := binary.LittleEndian.Uint64(pk.Payload)
	n := int(binary.LittleEndian.Uint32(pk.Payload[8:]))
	off := int(binary.LittleEndian.Uint32(pk.Payload[12:]))
	if off != bc.got || off+n > bc.size {
		panic(fmt.Sprintf("bglml: %s: broadcast bytes %d to %d of %d copied after %d", l.name(), off, off+n, bc.size, bc.got))
	}
	p.Compute(l.costs.Lookup)
	l.copyFrom(p, bc.addr+uint64(off), from, n)
	bc.got += n
	if bc.got == bc.size {
		l.control(p, l.self-1, &torus.Packet{Dst: l.coord(l.self - 1), Soft: soft(tVNBcastDone, l.self, 0, 0)})
		l.endBcast(p)
	}
}
