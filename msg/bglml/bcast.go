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
// routes are ours. In offsets u from the root (u = 0 at the root, each
// u[d] between the box's ends lo[d] ≤ 0 ≤ hi[d]), route r takes the
// dimensions in the order d0, d1, d2 = r, r+1, r+2 (mod 3):
//
//  1. the root deposits the packet along d0 both ways, to the box's ends
//     (the line u[d1] = u[d2] = 0);
//  2. every node of that line but the root deposits it along d1 both ways;
//  3. every node with u[d0] ≠ 0 and u[d2] = 0 deposits it along d2 both
//     ways;
//  4. every node with u[d0] = b off the first line sends it one hop
//     towards the root's plane u[d0] = 0 (which steps 1–3 never reach),
//     b being 1, or −1 when the root is at the box's high end along d0.
//
// Route r uses d0 links away from the root on its first line, d1 links
// away from u[d1] = 0 where u[d0] ≠ 0 and u[d2] = 0, d2 links away from
// u[d2] = 0 where u[d0] ≠ 0, and d0 links towards u[d0] = 0 (one hop);
// the three routes' links of each dimension leading away from the root's
// plane are then on disjoint sets of lines (for x: y = z = 0, y = 0 ≠ z,
// and y ≠ 0) and each uses the links towards it of its own first
// dimension only, so no link carries two routes (TestBcastRoutes checks
// it link by link, from corners and from interior roots). Every node gets
// each packet once. From a corner (lo = 0) the lines go one way: the
// root writes each packet once a route; from a mesh's interior node,
// twice (once each way along d0).

// bcastNext is what the node at offset u from the root forwards of a
// route-r packet in a box whose offsets run from lo to hi: the
// destinations (offsets) of its deposit lines and one-hop sends, with the
// hints that make them go the route's way.
func bcastNext(lo, hi torus.Coord, r int, u torus.Coord) (out []bcastHop) {
	d0, d1, d2 := r%3, (r+1)%3, (r+2)%3
	lines := func(d int) {
		for _, dir := range [2]int8{1, -1} {
			to := u
			if dir > 0 {
				to[d] = hi[d]
			} else {
				to[d] = lo[d]
			}
			if to != u {
				var h [3]int8
				h[d] = dir
				out = append(out, bcastHop{to: to, hint: h, deposit: true})
			}
		}
	}
	if u == (torus.Coord{}) {
		lines(d0)
		return out
	}
	if u[d1] == 0 && u[d2] == 0 { // on the first line
		lines(d1)
	}
	if u[d0] != 0 && u[d2] == 0 {
		lines(d2)
	}
	back := 1
	if hi[d0] == 0 {
		back = -1
	}
	if u[d0] == back && (u[d1] != 0 || u[d2] != 0) {
		to := u
		to[d0] = 0
		var h [3]int8
		h[d0] = int8(-back)
		out = append(out, bcastHop{to: to, hint: h})
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
	routes    []int // the routes in use: packet k takes routes[k mod len]
	done      func()
	fr        frame
	key       uint32
	// Virtual node mode: the node's torus part is its task 0's (the
	// deposit lines fill FIFO set 0); torusDone says it has the data (at
	// the root: its packets are written). have marks the packets read,
	// prefix counts those read from the first on and told the bytes of
	// that prefix the other task was told of; peerDone says the other
	// task has copied all of them.
	torusDone, peerDone bool
	have                []bool
	prefix, told        int
	unit                int // bytes a packet of have (0: a torus packet's; the tree's 256)
}

// VNBcastChunk is how many bytes of a broadcast's data, received in
// order from the first, the node's task 0 lets the other task copy at a
// time (virtual node mode): a notice through the virtual FIFO (190
// cycles to write, 190 to read) a chunk, against 893 cycles of copy. Our
// choice: the paper gives none.
const VNBcastChunk = 16 * torus.MaxPayload

// Box is a rectangular region of the torus: the nodes Lo + c (modulo the
// torus's size along a dimension that wraps) for 0 ≤ c < Ext.
type Box struct{ Lo, Ext torus.Coord }

// frame maps the routes, built in offsets from the root, onto a
// broadcast from root in the box at lo of extent ext: along a dimension
// the box covers whole and that wraps around, which looks the same from
// every node, the offsets run round the ring from 0 to its size − 1 (one
// way); along one that does not (a mesh's, a torus's of two nodes, or a
// part of a ring) from the box's low end to its high end, a root inside
// the box having nodes on both sides.
type frame struct {
	dims, root, lo, ext torus.Coord
	mesh                bool
}

// wraps reports whether dimension d is a ring the box covers whole (of
// more than two nodes).
func (f frame) wraps(d int) bool { return !f.mesh && f.dims[d] > 2 && f.ext[d] == f.dims[d] }

// off is c's offset from the box's low corner along d.
func (f frame) off(c torus.Coord, d int) int { return (c[d] - f.lo[d] + f.dims[d]) % f.dims[d] }

// bounds is the lowest and highest offsets from the root in the box.
func (f frame) bounds() (lo, hi torus.Coord) {
	for d := 0; d < 3; d++ {
		if f.wraps(d) {
			hi[d] = f.dims[d] - 1
			continue
		}
		lo[d] = -f.off(f.root, d)
		hi[d] = f.ext[d] - 1 - f.off(f.root, d)
	}
	return lo, hi
}

// rel is node c's offset from the root.
func (f frame) rel(c torus.Coord) (u torus.Coord) {
	for d := 0; d < 3; d++ {
		if f.wraps(d) {
			u[d] = (c[d] - f.root[d] + f.dims[d]) % f.dims[d]
		} else {
			u[d] = f.off(c, d) - f.off(f.root, d)
		}
	}
	return u
}

// abs is the inverse of rel, for a hop.
func (f frame) abs(h bcastHop) bcastHop {
	out := h
	for d := 0; d < 3; d++ {
		out.to[d] = ((f.root[d]+h.to[d])%f.dims[d] + f.dims[d]) % f.dims[d]
	}
	return out
}

// MaxBcast is the longest torus broadcast: a packet's index has 22 bits
// (the other two of the software header's 24 are its route).
const MaxBcast = 1 << 22 * torus.MaxPayload

// Bcast takes part in a torus broadcast of size bytes at addr from node
// (0,0,0) (the root's data; every other node's buffer) over routes routes
// (1 to 3): packet k goes on route k mod routes. The root writes its
// packets, every node places the packets it gets and forwards them along
// its route; done is called when the node has the whole message (at the
// root, when its packets are written). One broadcast at a time.
func (l *Layer) Bcast(p *cpu.Proc, addr uint64, size, routes int, done func()) error {
	return l.BcastFrom(p, torus.Coord{}, addr, size, routes, done)
}

// BcastFrom is Bcast from the node at root: any node (in a mesh, from an
// interior node the lines go both ways). A machine with a
// dimension of one node has fewer routes (BcastBox). In virtual node
// mode every task calls it; the data is the root node's task 0's, each
// node's task 0 takes the node's part of the routes and its task 1 copies
// the data from task 0's buffer (tellPeer).
func (l *Layer) BcastFrom(p *cpu.Proc, root torus.Coord, addr uint64, size, routes int, done func()) error {
	return l.BcastBox(p, Box{Ext: l.dims()}, root, addr, size, routes, 0, done)
}

// BcastBox is a torus broadcast among the nodes of box only (an MPI
// sub-communicator's): the routes are built in the box, along a
// dimension the box covers whole and that wraps around one way round the
// ring, along the others both ways from the root (one way from an end of
// the box); a dimension of one
// node has no route of its own, so a plane has two routes at most and a
// line one. key names the broadcast (every node of the box gives the
// same, and no two broadcasts under way at a node share one): a packet
// that arrives before its node has posted its broadcast is read into the
// layer's memory and placed and forwarded when it posts (the
// synchronisation the paper names as a limit, L155).
func (l *Layer) BcastBox(p *cpu.Proc, box Box, root torus.Coord, addr uint64, size, routes int, key uint32, done func()) error {
	defer l.mask()()
	if routes < 1 || routes > 3 || size < 1 || size > MaxBcast {
		return fmt.Errorf("bglml: broadcast of %d bytes over %d routes (1 to 3 routes, 1 to %d bytes)", size, routes, MaxBcast)
	}
	if l.bc != nil {
		return fmt.Errorf("bglml: node %d: a broadcast while one is under way", l.nd.Index)
	}
	dims := l.dims()
	fr := frame{dims: dims, root: root, lo: box.Lo, ext: box.Ext, mesh: l.meshed}
	meshName := map[bool]string{true: "mesh", false: "torus"}[l.meshed]
	for d := 0; d < 3; d++ {
		if box.Lo[d] < 0 || box.Lo[d] >= dims[d] || box.Ext[d] < 1 || box.Ext[d] > dims[d] || l.meshed && box.Lo[d]+box.Ext[d] > dims[d] {
			return fmt.Errorf("bglml: broadcast box at %v of %v on a %d×%d×%d %s", box.Lo, box.Ext, dims[0], dims[1], dims[2], meshName)
		}
	}
	for d := 0; d < 3; d++ {
		if root[d] < 0 || root[d] >= dims[d] || fr.off(root, d) >= box.Ext[d] {
			return fmt.Errorf("bglml: broadcast from %v, outside the box at %v of %v on a %d×%d×%d %s", root, box.Lo, box.Ext, dims[0], dims[1], dims[2], meshName)
		}
	}
	me := l.nd.Torus.At
	for d := 0; d < 3; d++ {
		if fr.off(me, d) >= box.Ext[d] {
			return fmt.Errorf("bglml: node %d at %v is outside the broadcast box at %v of %v", l.nd.Index, me, box.Lo, box.Ext)
		}
	}
	var use []int
	for r := 0; r < 3 && len(use) < routes; r++ {
		if box.Ext[r] > 1 {
			use = append(use, r)
		}
	}
	p.Compute(l.costs.Post)
	bc := &bcast{addr: addr, size: size, routes: use, done: done, fr: fr, key: key, peerDone: l.tasks == 1}
	l.bc = bc
	l.Stats.Bcasts++
	if l.tasks > 1 && l.self%l.tasks != 0 {
		// The node's second task: its data comes from task 0 by copies.
		for _, pk := range l.vnEarly {
			l.onBcastCopy(p, pk)
		}
		l.vnEarly = nil
		return nil
	}
	if me == root && l.tasks > 1 {
		// The root's data is all here: the other task may copy it at once.
		bc.prefix = (size + torus.MaxPayload - 1) / torus.MaxPayload
		l.tellPeer(p)
	}
	if len(use) == 0 { // a box of one node
		l.torusDone(p)
		return nil
	}
	if me != root {
		if l.tasks > 1 {
			bc.have = make([]bool, (size+torus.MaxPayload-1)/torus.MaxPayload)
		}
		// What came before the broadcast was posted: copied from the
		// layer's memory to its place, then forwarded.
		for _, s := range l.bcEarly[key] {
			p.Compute(l.pl.CopyCost(len(s.data)))
			l.deliverBcast(p, s.route, s.idx, s.data)
			if l.bc != bc {
				break // it ended
			}
		}
		delete(l.bcEarly, key)
		return nil
	}
	n := (size + torus.MaxPayload - 1) / torus.MaxPayload
	lo, hi := fr.bounds()
	// One send queue entry for each of the root's lines (two a route from
	// an interior node of a mesh); the root's part is done when the last
	// route's are written (or at once if that route has no packet).
	left := 0
	for i, r := range use {
		r, k0 := r, i
		cnt := (n - k0 + len(use) - 1) / len(use)
		if cnt == 0 {
			continue
		}
		for _, h := range bcastNext(lo, hi, r, torus.Coord{}) {
			h := fr.abs(h)
			o := &out{dst: l.nodeAt(h.to) * l.tasks, n: cnt, from: bgl.FromMemory, ready: true,
				build: func(j int) *torus.Packet {
					k := k0 + j*len(use)
					off := k * torus.MaxPayload
					return l.bcastPacket(h, key, r, k, l.data(addr+uint64(off), min(torus.MaxPayload, size-off)))
				}}
			if i == len(use)-1 {
				left++
				o.sent = func() {
					if left--; left == 0 {
						l.torusDone(p)
					}
				}
			}
			l.queue(o)
		}
	}
	if left == 0 {
		l.torusDone(p)
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

func (l *Layer) dims() torus.Coord {
	last := l.nodes[len(l.nodes)-1].Torus.At
	return torus.Coord{last[0] + 1, last[1] + 1, last[2] + 1}
}

func (l *Layer) nodeAt(c torus.Coord) int {
	d := l.dims()
	return c[0] + d[0]*(c[1]+d[1]*c[2])
}

// bcastPacket is a broadcast packet: its key in the software header's
// source and number fields, its route in the top two bits of its index.
func (l *Layer) bcastPacket(h bcastHop, key uint32, r, k int, data []byte) *torus.Packet {
	return &torus.Packet{Dst: h.to, Hint: h.hint, Deposit: h.deposit, Soft: soft(tBcast, int(key&0xffff), uint16(key>>16), k|r<<22), Payload: data}
}

// bcastStaged is a broadcast packet read before its broadcast was posted.
type bcastStaged struct {
	route, idx int
	data       []byte
}

// onBcast reads a broadcast packet: placed and forwarded if its broadcast
// is under way here, else kept in the layer's memory until it is posted.
func (l *Layer) onBcast(p *cpu.Proc, f int, key uint32, x int) {
	r, k := x>>22, x&(1<<22-1)
	p.Compute(l.costs.Lookup)
	bc := l.bc
	if bc == nil || bc.key != key {
		pk := l.read(p, f)
		l.Stats.BcastStaged++
		if l.bcEarly == nil {
			l.bcEarly = map[uint32][]bcastStaged{}
		}
		l.bcEarly[key] = append(l.bcEarly[key], bcastStaged{route: r, idx: k, data: pk.Payload})
		return
	}
	pk, err := l.pl.Read(p, f, (bc.addr+uint64(k*torus.MaxPayload))%16 == 0)
	if err != nil || pk == nil {
		panic(fmt.Sprintf("bglml: node %d: FIFO %d: %v", l.nd.Index, f, err))
	}
	l.deliverBcast(p, r, k, pk.Payload)
}

// deliverBcast places packet k of route r of the broadcast under way and
// queues its forwards.
func (l *Layer) deliverBcast(p *cpu.Proc, r, k int, data []byte) {
	bc := l.bc
	l.nd.Mem.Write(bc.addr+uint64(k*torus.MaxPayload), data)
	bc.got += len(data)
	fr := bc.fr
	lo, hi := fr.bounds()
	for _, h := range bcastNext(lo, hi, r, fr.rel(l.nd.Torus.At)) {
		h := fr.abs(h)
		// The forward is written from the data just read (in the cache),
		// on the route's FIFO, so that its packets stay in order.
		l.bcFwd++
		l.queue(&out{dst: l.nodeAt(h.to) * l.tasks, n: 1, from: bgl.FromCache, ready: true, forward: true,
			build: func(int) *torus.Packet { return l.bcastPacket(h, bc.key, r, k, data) }})
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

// Forwarding is the number of broadcast packets the node has yet to
// forward (queued, not yet written): an upper layer that wants its
// broadcast's part done before it leaves the advance loop (MPI_Bcast)
// waits for none.
func (l *Layer) Forwarding() int { return l.bcFwd }

// tellPeer, on task 0 in virtual node mode, lets the other task copy the
// data received in order from the first that it was not told of, once
// that is a chunk (VNBcastChunk) or the rest of the message. L144's
// protocol, not the virtual FIFO's packets: "much faster ... because the
// message data is not cycled through uncached memory". The lines are
// written back first (the L1s are not coherent, L34); the other task
// invalidates its own and copies.
func (l *Layer) tellPeer(p *cpu.Proc) {
	bc := l.bc
	unit := bc.unit
	if unit == 0 {
		unit = torus.MaxPayload
	}
	upto := min(bc.prefix*unit, bc.size)
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
