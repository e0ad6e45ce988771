package mpi

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/torus"
)

// The implementations BGL chooses from (BGL.BcastWith, BGL.ReduceWith, and
// what Result.Collectives names).
const (
	// ImplTree is the collective network (L60): a broadcast is an OR the
	// root contributes its data to, a reduction the tree's ALU (and the
	// float sum's two passes). MPI_COMM_WORLD only (L61).
	ImplTree = "tree"
	// ImplDeposit is the message layer's torus broadcast with the deposit
	// bit over up to three edge-disjoint routes (L153–L155), in the box of
	// the torus a communicator's nodes make.
	ImplDeposit = "deposit"
	// ImplMesh is the mesh-aware point-to-point broadcast: MPI messages
	// between torus neighbours along a spanning tree that follows the
	// mesh, pipelined in pieces; for a reduction, the same tree upwards,
	// each rank combining its children's partial results with its own
	// (an allreduce then broadcasts the result by BGL's Bcast).
	ImplMesh = "mesh"
	// ImplMPICH2 is MPICH2's broadcast (binomial; scatter and ring
	// allgather for long messages, L152).
	ImplMPICH2 = "mpich2"
	// ImplTorus is a reduction by point-to-point messages over the torus
	// (the MPI core's binomial reduce and recursive-doubling allreduce).
	ImplTorus = "torus"
	// ImplBarrier is the global barrier network (L38): MPI_Barrier on
	// MPI_COMM_WORLD (the torus's point-to-point algorithm, ImplTorus,
	// elsewhere).
	ImplBarrier = "barrier"
)

// BGL is Blue Gene/L's MPI collectives over the torus transport (seed
// 002, L147–L156, L60–L61). MPI_Bcast chooses as the paper's MPI does:
// the collective network for MPI_COMM_WORLD; the torus broadcast with the
// deposit bit for a communicator whose nodes make a rectangular box of
// the torus; the mesh-aware point-to-point broadcast otherwise.
// MPI_Barrier takes the global barrier network on MPI_COMM_WORLD and the
// MPI core's point-to-point algorithm elsewhere. MPI_Allreduce and
// MPI_Reduce take the collective network on
// MPI_COMM_WORLD for the operations its ALU can do (Op.Tree); otherwise
// MPICH2's point-to-point algorithms over the torus up to MeshReduceAbove
// bytes and the mesh-aware reduction beyond. The collective network
// needs the machine's tree built before the run (RunTorus builds it when
// Config.Collectives is a BGL). In virtual node mode each node's task 0
// takes the node's part and task 1 copies the data from it: MPI_Bcast on
// MPI_COMM_WORLD takes the tree (bglml.Layer.TreeBcast), on a
// communicator of both tasks of every node of a box the deposit broadcast
// (bglml.Layer.BcastBox), on others the mesh-aware broadcast; the
// reductions on MPI_COMM_WORLD take the tree, task 1 handing its
// contribution to task 0 first (treeReduce); MPI_Barrier there takes the
// barrier network, task 1 arriving at task 0 by a lockbox word (Barrier). Result.Collectives counts what
// each operation took.
type BGL struct {
	MPICH2
	// BcastWith forces MPI_Bcast's implementation (ImplTree, ImplDeposit,
	// ImplMesh, ImplMPICH2); "" chooses. A forced one the communicator
	// cannot take is an error.
	BcastWith string
	// ReduceWith forces the reductions' (ImplTree, ImplTorus, ImplMesh);
	// "" chooses.
	ReduceWith string
	// BarrierWith forces MPI_Barrier's (ImplBarrier, ImplTorus); ""
	// chooses.
	BarrierWith string
	// Routes is the deposit broadcast's routes (0: 3).
	Routes int
	// MeshPiece is the mesh-aware broadcast's pipeline unit in bytes (0:
	// 8,192): a rank forwards a piece as soon as it has it.
	MeshPiece int
	// MeshReduceAbove is the size in bytes above which a reduction the
	// collective network does not take (another communicator than
	// MPI_COMM_WORLD, or an operation its ALU cannot do) takes the
	// mesh-aware reduction rather than MPICH2's point-to-point algorithms
	// (0: DefaultMeshReduceAbove; −1: never; at most MaxMeshReduceAbove).
	MeshReduceAbove int
	// DepositViaCorner starts the deposit broadcast at the box's corner
	// nearest the root, the root first sending the message there (one
	// MPI message), instead of at the root's node.
	DepositViaCorner bool
}

// DefaultMeshReduceAbove is where the mesh-aware reduction starts to beat
// MPICH2's by our measurement (docs/bgl.md): float64 vectors on the
// 4×4×2 mesh, MPI_Allreduce on its planes and (a product, which the tree
// cannot do) on its world, MPI_Reduce on its planes. MPICH2's is faster
// up to 9 KB for both; the mesh-aware one from 10 KB for MPI_Reduce and
// from 11 KB for MPI_Allreduce (at 10 KB it is within 1.3 % of recursive
// doubling), once the vector is more than one MeshPiece of 8 KB and its
// pieces pipeline up the tree.
const DefaultMeshReduceAbove = 9 << 10

// MaxMeshReduceAbove is the largest MeshReduceAbove (2 GB).
const MaxMeshReduceAbove = 1<<31 - 1

// check refuses BGL's numeric parameters out of their ranges.
func (g BGL) check() error {
	switch {
	case g.MeshReduceAbove < -1 || g.MeshReduceAbove > MaxMeshReduceAbove:
		return fmt.Errorf("mpi: BGL.MeshReduceAbove %d: the size in bytes above which reductions take the mesh-aware algorithm (0: %d, measured; -1: never; 1 to %d)", g.MeshReduceAbove, DefaultMeshReduceAbove, MaxMeshReduceAbove)
	case g.MeshPiece < 0 || g.MeshPiece > MaxMeshReduceAbove:
		return fmt.Errorf("mpi: BGL.MeshPiece %d: the mesh-aware algorithms' piece in bytes (0: 8192; 1 to %d)", g.MeshPiece, MaxMeshReduceAbove)
	case g.Routes < 0 || g.Routes > 3:
		return fmt.Errorf("mpi: BGL.Routes %d: the deposit broadcast's routes (0: 3; 1 to 3)", g.Routes)
	}
	return nil
}

// bglEnv is what BGL's collectives need of a rank: its message layer and
// the machine.
func bglEnv(c *Comm) (*torusEP, *bgl.Machine) {
	for _, ep := range c.r.eps {
		if t, ok := ep.(*torusEP); ok {
			return t, t.t.cfg.Machine
		}
	}
	return nil, nil
}

// treeWorld reports whether c is MPI_COMM_WORLD of a run with every
// task of every node and the collective network built: what the tree's
// broadcast serves (in virtual node mode through the nodes' task 0).
func treeWorld(c *Comm, ep *torusEP, m *bgl.Machine) bool {
	return ep != nil && c.ctx == 0 && m.Tree != nil && c.Size() == len(m.Nodes)*ep.t.tasks
}

// commBox is the box of the torus c's nodes make, if they make one, with
// every task of each of its nodes in c (in virtual node mode, both).
func commBox(c *Comm, ep *torusEP, m *bgl.Machine) (bglml.Box, bool) {
	if ep == nil {
		return bglml.Box{}, false
	}
	tasks := ep.t.tasks
	if tasks > 1 {
		per := make([]int, len(m.Nodes))
		for r := 0; r < c.Size(); r++ {
			per[c.Place(r).Node]++
		}
		for _, k := range per {
			if k != 0 && k != tasks {
				return bglml.Box{}, false
			}
		}
	}
	dims := m.Torus.Spec.Dims
	var box bglml.Box
	for d := 0; d < 3; d++ {
		has := make([]bool, dims[d])
		n := 0
		for r := 0; r < c.Size(); r++ {
			if v := m.Nodes[c.Place(r).Node].Torus.At[d]; !has[v] {
				has[v] = true
				n++
			}
		}
		// The range's low end: a coordinate whose predecessor is absent
		// (on a ring, the one before it round the ring; in a mesh, or on a
		// ring the box covers whole, the lowest).
		lo := -1
		for v := 0; v < dims[d]; v++ {
			prev := v - 1
			if !m.Torus.Spec.Mesh && prev < 0 {
				prev = dims[d] - 1
			}
			if has[v] && (prev < 0 || !has[prev]) {
				if lo >= 0 {
					return bglml.Box{}, false // two runs: not a range
				}
				lo = v
			}
		}
		if n == dims[d] {
			lo = 0
		}
		if lo < 0 {
			return bglml.Box{}, false
		}
		box.Lo[d], box.Ext[d] = lo, n
	}
	if box.Ext[0]*box.Ext[1]*box.Ext[2]*tasks != c.Size() {
		return bglml.Box{}, false
	}
	return box, true
}

// bcastKey names a communicator's next deposit broadcast: its context and
// its count of them (every member counts the same).
type bcastKey struct{}

func nextBcastKey(c *Comm) uint32 {
	v, _ := c.Attr(bcastKey{})
	n, _ := v.(uint32)
	c.SetAttr(bcastKey{}, n+1)
	return uint32(c.ctx&0xffff) | n<<16
}

// Bcast broadcasts b from root by the implementation the communicator
// takes (or BcastWith).
func (g BGL) Bcast(c *Comm, b Buf, root int) error {
	if err := g.check(); err != nil {
		return err
	}
	ep, m := bglEnv(c)
	impl := g.BcastWith
	box, isBox := commBox(c, ep, m)
	if impl == "" {
		switch {
		case ep == nil:
			impl = ImplMPICH2
		case treeWorld(c, ep, m):
			impl = ImplTree
		case isBox:
			impl = ImplDeposit
		default:
			impl = ImplMesh
		}
	}
	if c.Rank() == 0 {
		c.r.w.countColl("Bcast", impl, b.Len)
	}
	if b.Len == 0 {
		return nil
	}
	switch impl {
	case ImplMPICH2:
		return g.MPICH2.Bcast(c, b, root)
	case ImplTree:
		if !treeWorld(c, ep, m) {
			return fmt.Errorf("mpi: the collective network serves MPI_COMM_WORLD (L61), not a communicator of %d ranks (context %d)", c.Size(), c.ctx)
		}
		// In virtual node mode the data goes in at the root node's task 0:
		// a root on task 1 first hands it over.
		from := root
		if c.Place(root).Core != 0 {
			for r := 0; r < c.Size(); r++ {
				if c.Place(r).Node == c.Place(root).Node && c.Place(r).Core == 0 {
					from = r
				}
			}
		}
		if err := handOver(c, b, root, from); err != nil {
			return err
		}
		done := false
		if err := ep.ml.TreeBcast(c.r.p, c.Rank() == from, b.Addr, b.Len, func() { done = true }); err != nil {
			return err
		}
		c.r.waitUntil(func() bool { return done })
		return nil
	case ImplDeposit:
		if !isBox {
			return fmt.Errorf("mpi: the deposit broadcast needs a communicator whose nodes make a box of the torus, with every task of each; these %d ranks do not", c.Size())
		}
		return g.depositBcast(c, ep, m, box, b, root)
	case ImplMesh:
		if ep == nil {
			return fmt.Errorf("mpi: the mesh-aware broadcast needs the torus transport")
		}
		return g.meshBcast(c, m, b, root)
	}
	return fmt.Errorf("mpi: broadcast implementation %q (%s, %s, %s, %s)", impl, ImplTree, ImplDeposit, ImplMesh, ImplMPICH2)
}

// handOver moves a broadcast's data from root to the rank from which an
// implementation must start it (nothing if they are one).
func handOver(c *Comm, b Buf, root, from int) error {
	if from == root {
		return nil
	}
	cc := c.Collective()
	switch c.Rank() {
	case root:
		return cc.Send(b, from, tagBcast)
	case from:
		_, err := cc.Recv(b, root, tagBcast)
		return err
	}
	return nil
}

// depositBcast is the message layer's torus broadcast in the box, from
// the root's node (its task 0 in virtual node mode: a root on task 1
// first hands the message to it). With DepositViaCorner the routes start
// at the box's corner nearest the root instead (anywhere along a ring it
// covers whole), the root first sending the message there.
func (g BGL) depositBcast(c *Comm, ep *torusEP, m *bgl.Machine, box bglml.Box, b Buf, root int) error {
	dims := m.Torus.Spec.Dims
	at := func(r int) torus.Coord { return m.Nodes[c.Place(r).Node].Torus.At }
	src := at(root)
	for d := 0; d < 3 && g.DepositViaCorner; d++ {
		wraps := !m.Torus.Spec.Mesh && dims[d] > 2 && box.Ext[d] == dims[d]
		off := (src[d] - box.Lo[d] + dims[d]) % dims[d]
		if !wraps && off != 0 && off != box.Ext[d]-1 {
			if off < box.Ext[d]-1-off {
				src[d] = box.Lo[d]
			} else {
				src[d] = (box.Lo[d] + box.Ext[d] - 1) % dims[d]
			}
		}
	}
	from := root
	for r := 0; r < c.Size(); r++ {
		if at(r) == src && c.Place(r).Core == 0 {
			from = r
		}
	}
	if err := handOver(c, b, root, from); err != nil {
		return err
	}
	routes := g.Routes
	if routes == 0 {
		routes = 3
	}
	// Every node of the box takes part (a root that handed its message
	// on forwards too, and gets it back).
	done := false
	if err := ep.ml.BcastBox(c.r.p, box, src, b.Addr, b.Len, routes, nextBcastKey(c), func() { done = true }); err != nil {
		return err
	}
	// Done when the node has the message and has forwarded its part.
	c.r.waitUntil(func() bool { return done && ep.ml.Forwarding() == 0 })
	return nil
}

// meshTree is the mesh-aware broadcast's spanning tree over c's ranks
// from root: each rank's parent is the rank nearest it (in torus hops)
// among those nearer the root, preferring a step along the highest
// dimension, so that in a box the tree is the root's x line, the y lines
// from it and the z lines from those — every edge a link of the torus,
// no link used twice. It works for any set of nodes (a parent may then be
// several hops away).
func meshTree(c *Comm, m *bgl.Machine, root int) (parent int, kids []int) {
	n := c.Size()
	dims := m.Torus.Spec.Dims
	at := func(r int) torus.Coord { return m.Nodes[c.Place(r).Node].Torus.At }
	hops := func(a, b torus.Coord) (h, top int) {
		top = -1
		for d := 0; d < 3; d++ {
			x := a[d] - b[d]
			if x < 0 {
				x = -x
			}
			if !m.Torus.Spec.Mesh {
				x = min(x, dims[d]-x)
			}
			if x > 0 {
				top = d
			}
			h += x
		}
		return h, top
	}
	rootAt := at(root)
	dist := make([]int, n)
	for r := range dist {
		dist[r], _ = hops(at(r), rootAt)
	}
	parentOf := func(r int) int {
		best, bh, bt := -1, 0, 0
		for q := 0; q < n; q++ {
			if dist[q] >= dist[r] {
				continue
			}
			h, top := hops(at(r), at(q))
			if best < 0 || h < bh || h == bh && top > bt {
				best, bh, bt = q, h, top
			}
		}
		return best
	}
	me := c.Rank()
	parent = -1
	if me != root {
		parent = parentOf(me)
	}
	for r := 0; r < n; r++ {
		if r != root && parentOf(r) == me {
			kids = append(kids, r)
		}
	}
	return parent, kids
}

// meshTreeKey caches a communicator's tree by root.
type meshTreeKey struct{ root int }

type meshTreeVal struct {
	parent int
	kids   []int
}

// meshPlan is the communicator's mesh-aware tree from root (built once,
// kept as an attribute) and the pipeline's piece size.
func (g BGL) meshPlan(c *Comm, m *bgl.Machine, root int) (meshTreeVal, int) {
	v, ok := c.Attr(meshTreeKey{root})
	if !ok {
		p, k := meshTree(c, m, root)
		v = meshTreeVal{p, k}
		c.SetAttr(meshTreeKey{root}, v)
	}
	piece := g.MeshPiece
	if piece == 0 {
		piece = 8192
	}
	return v.(meshTreeVal), piece
}

// meshBcast is the mesh-aware point-to-point broadcast: the message in
// pieces of MeshPiece bytes down meshTree, each rank passing a piece to
// its children as soon as it has it (MPI messages, so each piece is an
// eager message or a rendezvous by size).
func (g BGL) meshBcast(c *Comm, m *bgl.Machine, b Buf, root int) error {
	t, piece := g.meshPlan(c, m, root)
	cc := c.Collective()
	n := (b.Len + piece - 1) / piece
	part := func(k int) Buf { return b.Slice(k*piece, min(piece, b.Len-k*piece)) }
	var recvs []*Request
	if t.parent >= 0 {
		for k := 0; k < n; k++ {
			recvs = append(recvs, cc.Irecv(part(k), t.parent, tagBcast))
		}
	}
	var sends []*Request
	for k := 0; k < n; k++ {
		if t.parent >= 0 {
			if _, err := cc.Wait(recvs[k]); err != nil {
				return err
			}
		}
		for _, kid := range t.kids {
			sends = append(sends, cc.Isend(part(k), kid, tagBcast))
		}
	}
	_, err := cc.Waitall(sends...)
	return err
}

// meshReduce reduces up the mesh-aware broadcast's tree (meshTree) to
// root, in pieces of MeshPiece bytes (whole elements): a rank receives
// its children's partial results of a piece, combines them after its own
// in rank order of the children (own ⊕ first ⊕ second …), and sends the
// piece to its parent as soon as it is combined. Every edge of the tree
// is a link of the torus in a box, so no two partial results share one.
func (g BGL) meshReduce(c *Comm, send, recv Buf, op Op, root int) error {
	r := c.r
	if err := checkOp(send, op); err != nil || send.Len == 0 {
		return err
	}
	_, m := bglEnv(c)
	t, piece := g.meshPlan(c, m, root)
	piece = max(op.Size, piece/op.Size*op.Size)
	cc := c.Collective()
	n := (send.Len + piece - 1) / piece
	acc := r.tmp(send.Len)
	defer r.release(acc)
	r.memcpy(acc, send)
	part := func(b Buf, k int) Buf { return b.Slice(k*piece, min(piece, send.Len-k*piece)) }
	in := make([]Buf, len(t.kids))
	recvs := make([][]*Request, len(t.kids))
	for i, kid := range t.kids {
		in[i] = r.tmp(send.Len)
		defer r.release(in[i])
		for k := 0; k < n; k++ {
			recvs[i] = append(recvs[i], cc.Irecv(part(in[i], k), kid, tagReduce))
		}
	}
	var sends []*Request
	for k := 0; k < n; k++ {
		for i := range t.kids {
			if _, err := cc.Wait(recvs[i][k]); err != nil {
				return err
			}
			r.reduce(part(acc, k), part(in[i], k), op)
		}
		if t.parent >= 0 {
			sends = append(sends, cc.Isend(part(acc, k), t.parent, tagReduce))
		}
	}
	if _, err := cc.Waitall(sends...); err != nil {
		return err
	}
	if c.Rank() == root {
		r.memcpy(recv, acc)
	}
	return nil
}

// nodePeer is the rank of c on the other task of the caller's node in
// virtual node mode, or -1 (coprocessor mode, or not in c).
func nodePeer(c *Comm, ep *torusEP) int {
	if ep == nil || ep.t.tasks < 2 {
		return -1
	}
	for r := 0; r < c.Size(); r++ {
		if r != c.Rank() && c.Place(r).Node == c.Place(c.Rank()).Node {
			return r
		}
	}
	return -1
}

// treeReduce is a reduction on the collective network into recv of the
// ranks that want the result (every rank for root -1, MPI_Allreduce;
// root for MPI_Reduce). In virtual node mode task 1 first hands its
// contribution to its node's task 0 (a message to the other task of the
// node: the virtual FIFO for an eager message, the L144 copy beyond);
// task 0 combines the two on its core, the lower rank's on the left (acc
// = acc ⊕ in, Op.Apply), and takes part in the tree for the node; task 1,
// when it wants the result, copies it from task 0's buffer a chunk at a
// time as it comes from the tree (bglml.Layer.TreeAllreduceShared, the
// broadcasts' hand-over).
func treeReduce(c *Comm, ep *torusEP, send, recv Buf, op Op, root int) error {
	r := c.r
	me, peer := c.Rank(), nodePeer(c, ep)
	wants := func(k int) bool { return root < 0 || k == root }
	cc := c.Collective()
	if peer >= 0 && c.Place(me).Core != 0 {
		if err := cc.Send(send, peer, tagReduce); err != nil {
			return err
		}
		if !wants(me) {
			return nil
		}
		// The result: copied from task 0's as it comes from the tree.
		done := false
		if err := ep.ml.TreeAllreduceShared(r.p, op.Tree, 0, recv.Addr, send.Len/8, true, func() { done = true }); err != nil {
			return err
		}
		r.waitUntil(func() bool { return done })
		return nil
	}
	src := send
	if peer >= 0 {
		in, acc := r.tmp(send.Len), r.tmp(send.Len)
		defer r.release(in)
		defer r.release(acc)
		if _, err := cc.Recv(in, peer, tagReduce); err != nil {
			return err
		}
		lo, hi := send, in
		if peer < me {
			lo, hi = in, send
		}
		r.memcpy(acc, lo)
		r.reduce(acc, hi, op)
		src = acc
	}
	dst := recv
	if !wants(me) {
		dst = r.tmp(send.Len)
		defer r.release(dst)
	}
	// Task 0's done comes once task 1 (if it wants the result) has copied
	// it from dst.
	done := false
	if err := ep.ml.TreeAllreduceShared(r.p, op.Tree, src.Addr, dst.Addr, send.Len/8, peer >= 0 && wants(peer), func() { done = true }); err != nil {
		return err
	}
	r.waitUntil(func() bool { return done })
	return nil
}

// reduceImpl is the implementation a reduction of op on c takes (or
// ReduceWith), or why a forced one cannot.
func (g BGL) reduceImpl(c *Comm, send Buf, op Op) (string, *torusEP, error) {
	if err := g.check(); err != nil {
		return "", nil, err
	}
	ep, m := bglEnv(c)
	world := treeWorld(c, ep, m)
	fits := op.Tree != 0 && op.Size == 8
	switch g.ReduceWith {
	case "":
		above := g.MeshReduceAbove
		if above == 0 {
			above = DefaultMeshReduceAbove
		}
		switch {
		case world && fits && send.Len > 0:
			return ImplTree, ep, nil
		case ep != nil && above >= 0 && send.Len > above:
			return ImplMesh, ep, nil
		}
		return ImplTorus, ep, nil
	case ImplTorus:
		return ImplTorus, ep, nil
	case ImplMesh:
		if ep == nil {
			return "", nil, fmt.Errorf("mpi: the mesh-aware reduction needs the torus transport")
		}
		return ImplMesh, ep, nil
	case ImplTree:
		if !world {
			return "", nil, fmt.Errorf("mpi: the collective network serves MPI_COMM_WORLD (every task of every node, L61), not a communicator of %d ranks (context %d)", c.Size(), c.ctx)
		}
		if !fits {
			return "", nil, fmt.Errorf("mpi: %s on the collective network: its ALU adds, takes the maximum of, ands, ors and xors 64-bit integers (the software maps onto it signed and unsigned sums, maxima and minima, bitwise operations, and float64 maxima, minima and, in two passes, sums); %s is none of these", op.Name, op.Name)
		}
		return ImplTree, ep, nil
	}
	return "", nil, fmt.Errorf("mpi: reduction implementation %q (%s, %s, %s)", g.ReduceWith, ImplTree, ImplTorus, ImplMesh)
}

// Allreduce combines every rank's send into every rank's recv.
func (g BGL) Allreduce(c *Comm, send, recv Buf, op Op) error {
	impl, ep, err := g.reduceImpl(c, send, op)
	if err != nil {
		return err
	}
	if c.Rank() == 0 {
		c.r.w.countColl("Allreduce", impl, send.Len)
	}
	if impl == ImplTorus {
		return g.MPICH2.Allreduce(c, send, recv, op)
	}
	if impl == ImplMesh {
		if recv.Len != send.Len {
			return fmt.Errorf("mpi: Allreduce into %d bytes from %d", recv.Len, send.Len)
		}
		if err := g.meshReduce(c, send, recv, op, 0); err != nil {
			return err
		}
		return g.Bcast(c, recv, 0)
	}
	if err := checkOp(send, op); err != nil || send.Len == 0 {
		return err
	}
	if recv.Len != send.Len {
		return fmt.Errorf("mpi: Allreduce into %d bytes from %d", recv.Len, send.Len)
	}
	return treeReduce(c, ep, send, recv, op, -1)
}

// Reduce combines every rank's send into root's recv.
func (g BGL) Reduce(c *Comm, send, recv Buf, op Op, root int) error {
	impl, ep, err := g.reduceImpl(c, send, op)
	if err != nil {
		return err
	}
	if c.Rank() == 0 {
		c.r.w.countColl("Reduce", impl, send.Len)
	}
	if impl == ImplTorus {
		return g.MPICH2.Reduce(c, send, recv, op, root)
	}
	if impl == ImplMesh {
		if c.Rank() == root && recv.Len != send.Len {
			return fmt.Errorf("mpi: Reduce into %d bytes from %d", recv.Len, send.Len)
		}
		return g.meshReduce(c, send, recv, op, root)
	}
	if err := checkOp(send, op); err != nil || send.Len == 0 {
		return err
	}
	if c.Rank() == root && recv.Len != send.Len {
		return fmt.Errorf("mpi: Reduce into %d bytes from %d", recv.Len, send.Len)
	}
	return treeReduce(c, ep, send, recv, op, root)
}

// Barrier returns when every rank of c has entered it: on the global
// barrier network for MPI_COMM_WORLD (every node arms it, the wired AND
// releases them all), by the MPI core's algorithm otherwise.
//
// In virtual node mode both tasks of a node arrive before its task 0
// arms the barrier network: task 1 writes its arrival into a lockbox word
// that task 0 polls, task 0 arms once it sees it, and when task 0 sees
// the release it writes that into another word, which task 1 polls
// (bglml.Layer.GlobalBarrier).
func (g BGL) Barrier(c *Comm) error {
	ep, m := bglEnv(c)
	world := treeWorld(c, ep, m)
	impl := g.BarrierWith
	if impl == "" {
		impl = ImplTorus
		if world {
			impl = ImplBarrier
		}
	}
	if c.Rank() == 0 {
		c.r.w.countColl("Barrier", impl, 0)
	}
	switch impl {
	case ImplTorus:
		return g.MPICH2.Barrier(c)
	case ImplBarrier:
		if !world {
			return fmt.Errorf("mpi: the barrier network serves MPI_COMM_WORLD (every task of every node, L61), not a communicator of %d ranks (context %d)", c.Size(), c.ctx)
		}
		done := false
		if err := ep.ml.GlobalBarrier(c.r.p, func() { done = true }); err != nil {
			return err
		}
		c.r.waitUntil(func() bool { return done })
		return nil
	}
	return fmt.Errorf("mpi: barrier implementation %q (%s, %s)", impl, ImplBarrier, ImplTorus)
}
