package bglml

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/collective"
	"github.com/aaemu/aaemu/cpu"
)

// Collectives on the collective (tree) network, driven by the advance
// loop (L60, L83: collectives may use the packet layer directly). Every
// node writes its contributions into its collective injection FIFO and
// reads the combined results from its reception FIFO; the tree's ALU
// combines the k-th packet of every node, so every node must take part
// in the same operations in the same order (MPI's collectives on
// MPI_COMM_WORLD, the only communicator the tree serves, L61). While an
// operation is under way every pass of the advance loop looks at the two
// FIFOs (a status look each, 13 cycles) and writes and reads what it can,
// so the torus's traffic goes on meanwhile; the pass does not doze (the
// torus does not wake the core for the tree's results).

// treeOp is a node's part of a collective-network operation under way.
type treeOp struct {
	n, wrote, read int
	// build is the k-th contribution; false while it waits for an earlier
	// result (the float sum's second pass needs the first's maximum).
	build func(p *cpu.Proc, k int) (collective.Packet, bgl.Source, bool)
	got   func(p *cpu.Proc, k int, r collective.Packet)
	done  func()
}

// TreeReduction is what a reduction on the collective network computes.
// The ALU works on unsigned 64-bit words (add, max, and, or, xor); the
// other reductions are the software's mapping of their values onto those:
// a signed maximum takes the maximum with the sign bit flipped, a minimum
// the maximum of the complements, a floating-point maximum the maximum of
// the values' bits mapped to an order-preserving unsigned integer, and a
// floating-point sum two passes (collective.ExponentPacket,
// MantissaPacket).
type TreeReduction uint8

// The reductions the collective network can do.
const (
	TreeSumInt   TreeReduction = iota + 1 // add modulo 2^64 (signed or unsigned)
	TreeMaxUint                           // unsigned maximum
	TreeMinUint                           // unsigned minimum
	TreeMaxInt                            // signed maximum
	TreeMinInt                            // signed minimum
	TreeAnd                               // bitwise and
	TreeOr                                // bitwise or
	TreeXor                               // bitwise xor
	TreeMaxFloat                          // float64 maximum
	TreeMinFloat                          // float64 minimum
	TreeSumFloat                          // float64 sum, two passes
)

var treeNames = [...]string{"", "sum_int", "max_uint", "min_uint", "max_int", "min_int", "and", "or", "xor", "max_float", "min_float", "sum_float"}

func (t TreeReduction) String() string {
	if int(t) < len(treeNames) && t > 0 {
		return treeNames[t]
	}
	return fmt.Sprintf("tree_reduction%d", uint8(t))
}

// Per-element software costs of the mappings, our estimates at about an
// instruction each (the paper gives none): an integer mapping (a flip or
// a complement) 1 cycle each way; the float sum's exponent extraction 2,
// its alignment to the maximum exponent 4 and its conversion back 4.
const (
	TreeMapCycles      = 1
	TreeExponentCycles = 2
	TreeAlignCycles    = 4
	TreeConvertCycles  = 4
)

// alu is the tree's operation for the reduction's (one-pass) words.
func (t TreeReduction) alu() collective.Op {
	switch t {
	case TreeSumInt:
		return collective.OpAdd
	case TreeAnd:
		return collective.OpAnd
	case TreeOr:
		return collective.OpOr
	case TreeXor:
		return collective.OpXor
	}
	return collective.OpMax
}

// enc maps a value onto the ALU's word and dec back; mapped says whether
// the mapping costs anything.
func (t TreeReduction) enc(v uint64) uint64 {
	switch t {
	case TreeMinUint:
		return ^v
	case TreeMaxInt:
		return v ^ 1<<63
	case TreeMinInt:
		return ^(v ^ 1<<63)
	case TreeMaxFloat:
		return floatOrder(v)
	case TreeMinFloat:
		return ^floatOrder(v)
	}
	return v
}

func (t TreeReduction) dec(v uint64) uint64 {
	switch t {
	case TreeMinUint:
		return ^v
	case TreeMaxInt:
		return v ^ 1<<63
	case TreeMinInt:
		return ^v ^ 1<<63
	case TreeMaxFloat:
		return floatUnorder(v)
	case TreeMinFloat:
		return floatUnorder(^v)
	}
	return v
}

func (t TreeReduction) mapped() bool {
	return t != TreeSumInt && t != TreeMaxUint && t != TreeAnd && t != TreeOr && t != TreeXor
}

// floatOrder maps a float64's bits to an unsigned integer in the order of
// the values: a positive value's sign bit set, a negative value's bits
// all complemented (−0 then orders just below +0).
func floatOrder(b uint64) uint64 {
	if b>>63 == 0 {
		return b | 1<<63
	}
	return ^b
}

func floatUnorder(u uint64) uint64 {
	if u>>63 == 1 {
		return u &^ (1 << 63)
	}
	return ^u
}

// startTree starts an operation of n packets.
func (l *Layer) startTree(p *cpu.Proc, op *treeOp) error {
	if l.nd.Tree == nil {
		return fmt.Errorf("bglml: node %d: no collective network (bgl.Machine.Collective before the run)", l.nd.Index)
	}
	if l.self%l.tasks != 0 {
		// In virtual node mode the tree's FIFOs are task 0's: it takes
		// part for its node (a broadcast's task 1 copies from it, a
		// reduction's hands it its contribution first).
		return fmt.Errorf("bglml: %s: the collective network in virtual node mode is task 0's", l.name())
	}
	if l.tree != nil {
		return fmt.Errorf("bglml: node %d: a collective-network operation while one is under way", l.nd.Index)
	}
	p.Compute(l.costs.Post)
	l.tree = op
	l.Stats.TreeOps++
	return nil
}

// treeStep is the advance loop's work on the collective network: up to
// Batch times, read a result if one is there and write the next
// contribution if the window (the injection FIFO's depth of packets ahead
// of the results read) and the FIFO allow; each try a status look.
func (l *Layer) treeStep(p *cpu.Proc) bool {
	t := l.tree
	if t == nil {
		return false
	}
	l.looks++ // a pass that looks at the tree does not doze
	did := false
	window := l.nd.Tree.Inj.Depth()
	for b := 0; b < l.params.Batch && l.tree == t; b++ {
		moved := false
		if t.read < t.wrote {
			r, ok, err := l.nd.TryTreeRead(p)
			if err != nil {
				panic(fmt.Sprintf("bglml: %v", err))
			}
			if ok {
				if r.Mismatch {
					panic(fmt.Sprintf("bglml: node %d: collective-network result %d combined different operations", l.nd.Index, t.read))
				}
				t.got(p, t.read, r)
				t.read++
				l.Stats.TreePackets++
				moved = true
			}
		}
		if t.wrote < t.n && t.wrote-t.read < window {
			if pkt, from, ok := t.build(p, t.wrote); ok {
				w, err := l.nd.TryTreeWrite(p, pkt, from)
				if err != nil {
					panic(fmt.Sprintf("bglml: %v", err))
				}
				if w {
					t.wrote++
					moved = true
				}
			}
		}
		if t.read == t.n {
			l.tree = nil
			if t.done != nil {
				p.Compute(l.costs.Callback)
				t.done()
			}
			return true
		}
		if !moved {
			break
		}
		did = true
	}
	return did
}

// TreeBcast takes part in a broadcast of size bytes at addr over the
// collective network (L60): the root (root true) writes its data a
// 256-byte packet at a time, every other node zeros, and the routers' OR
// is the root's data at every node, which each node but the root stores
// at addr. done is called when the node has read the whole message.
//
// In virtual node mode every task calls it: the node's task 0 takes part
// in the tree (its FIFOs are the main core's), the data at a root node
// being task 0's, and task 1 copies the data from task 0's buffer as it
// comes in (tellPeer, as in the torus broadcast); done is called at task 0
// once task 1 has copied it all.
func (l *Layer) TreeBcast(p *cpu.Proc, root bool, addr uint64, size int, done func()) error {
	defer l.mask()()
	if size < 1 || size > MaxMessage {
		return fmt.Errorf("bglml: collective-network broadcast of %d bytes (1 to %d)", size, MaxMessage)
	}
	n := (size + collective.PacketBytes - 1) / collective.PacketBytes
	part := func(k int) int { return min(collective.PacketBytes, size-k*collective.PacketBytes) }
	var bc *bcast
	if l.tasks > 1 {
		if l.nd.Tree == nil {
			return fmt.Errorf("bglml: node %d: no collective network (bgl.Machine.Collective before the run)", l.nd.Index)
		}
		if l.bc != nil || l.tree != nil {
			return fmt.Errorf("bglml: %s: a broadcast while one is under way", l.name())
		}
		bc = &bcast{addr: addr, size: size, done: done, unit: collective.PacketBytes}
		if l.self%l.tasks != 0 {
			// The node's second task: its data comes from task 0 by copies.
			l.awaitCopies(p, bc)
			return nil
		}
		bc.have = make([]bool, n)
		done = func() { l.torusDone(p) }
	}
	got := func(_ *cpu.Proc, k int, r collective.Packet) {
		if !root {
			b := make([]byte, collective.PacketBytes)
			for w, v := range r.W {
				binary.LittleEndian.PutUint64(b[8*w:], v)
			}
			l.nd.Mem.Write(addr+uint64(k*collective.PacketBytes), b[:part(k)])
		}
		if bc != nil && !root {
			bc.prefix = k + 1 // the results come in order
			l.tellPeer(p)
		}
	}
	op := &treeOp{n: n, done: done, got: got,
		build: func(_ *cpu.Proc, k int) (collective.Packet, bgl.Source, bool) {
			pkt := collective.Packet{Op: collective.OpOr}
			if !root {
				return pkt, bgl.FromCache, true // zeros: nothing to load
			}
			b := make([]byte, collective.PacketBytes)
			l.nd.Mem.Read(addr+uint64(k*collective.PacketBytes), b[:part(k)])
			for w := range pkt.W {
				pkt.W[w] = binary.LittleEndian.Uint64(b[8*w:])
			}
			return pkt, bgl.FromMemory, true
		}}
	if err := l.startTree(p, op); err != nil {
		return err
	}
	if bc != nil {
		l.bc = bc
		if root {
			// The root's data is all here: the other task may copy it at once.
			bc.prefix = n
			l.tellPeer(p)
		}
	}
	return nil
}

// TreeAllreduce takes part in a reduction over the collective network of
// count 64-bit elements at src into dst (every node gets the result;
// MPI_Reduce is the same with the others' results dropped). One pass of
// ceil(count/32) packets, or two for TreeSumFloat: the exponents' maximum,
// then the mantissas aligned to it as fixed-point integers, summed. done
// is called when the node has the result. In virtual node mode the
// node's task 0 calls it with the node's contribution (the two tasks'
// combined: the caller's part).
func (l *Layer) TreeAllreduce(p *cpu.Proc, red TreeReduction, src, dst uint64, count int, done func()) error {
	return l.TreeAllreduceShared(p, red, src, dst, count, false, done)
}

// TreeAllreduceShared is TreeAllreduce in virtual node mode with the
// result shared by the node's two tasks (share): task 0 takes part in the
// tree as TreeAllreduce's, and task 1, which calls it too (src unused),
// copies the result from task 0's dst into its own as it comes from the
// tree, a chunk (VNBcastChunk) at a time, as the broadcasts' task 1 does
// (tellPeer). done is called at task 1 when it has copied all, at task 0
// when task 1 has (task 0's dst is what it copies from).
func (l *Layer) TreeAllreduceShared(p *cpu.Proc, red TreeReduction, src, dst uint64, count int, share bool, done func()) error {
	if red < TreeSumInt || red > TreeSumFloat {
		return fmt.Errorf("bglml: collective-network reduction %v", red)
	}
	if count < 1 || count > MaxMessage/8 {
		return fmt.Errorf("bglml: collective-network reduction of %d elements (1 to %d)", count, MaxMessage/8)
	}
	var bc *bcast
	if share {
		if l.tasks < 2 {
			return fmt.Errorf("bglml: %s: a reduction's result shared between tasks needs virtual node mode", l.name())
		}
		if l.bc != nil || l.tree != nil {
			return fmt.Errorf("bglml: %s: a shared reduction while a broadcast or a collective-network operation is under way", l.name())
		}
		bc = &bcast{addr: dst, size: 8 * count, done: done, unit: collective.PacketBytes}
		if l.self%l.tasks != 0 {
			l.awaitCopies(p, bc)
			return nil
		}
		done = func() { l.torusDone(p) }
	}
	P := (count + collective.Words - 1) / collective.Words
	words := func(k int) int { return min(collective.Words, count-k*collective.Words) }
	load := func(k int) []uint64 {
		b := make([]byte, 8*words(k))
		l.nd.Mem.Read(src+uint64(8*k*collective.Words), b)
		v := make([]uint64, words(k))
		for i := range v {
			v[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
		return v
	}
	store := func(k int, v []uint64) {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], x)
		}
		l.nd.Mem.Write(dst+uint64(8*k*collective.Words), b)
		if bc != nil {
			bc.prefix = k + 1 // the results come in order
			l.tellPeer(p)
		}
	}
	start := func(op *treeOp) error {
		if err := l.startTree(p, op); err != nil {
			return err
		}
		if bc != nil {
			l.bc = bc
		}
		return nil
	}
	nodes := len(l.nodes)
	if red != TreeSumFloat {
		return start(&treeOp{n: P, done: done,
			build: func(p *cpu.Proc, k int) (collective.Packet, bgl.Source, bool) {
				pkt := collective.Packet{Op: red.alu()}
				for i, v := range load(k) {
					pkt.W[i] = red.enc(v)
				}
				if red.mapped() {
					p.Compute(TreeMapCycles * words(k))
				}
				return pkt, bgl.FromMemory, true
			},
			got: func(p *cpu.Proc, k int, r collective.Packet) {
				v := make([]uint64, words(k))
				for i := range v {
					v[i] = red.dec(r.W[i])
				}
				if red.mapped() {
					p.Compute(TreeMapCycles * words(k))
				}
				store(k, v)
			}})
	}
	// The float sum: packets 0..P-1 the exponents, P..2P-1 the mantissas;
	// mantissa packet j waits for exponent result j.
	exps := make([]*collective.Packet, P)
	floats := func(k int) []float64 {
		v := load(k)
		f := make([]float64, len(v))
		for i, x := range v {
			f[i] = math.Float64frombits(x)
		}
		return f
	}
	return start(&treeOp{n: 2 * P, done: done,
		build: func(p *cpu.Proc, k int) (collective.Packet, bgl.Source, bool) {
			if k < P {
				p.Compute(TreeExponentCycles * words(k))
				return collective.ExponentPacket(floats(k)), bgl.FromMemory, true
			}
			j := k - P
			if exps[j] == nil {
				return collective.Packet{}, 0, false
			}
			p.Compute(TreeAlignCycles * words(j))
			return collective.MantissaPacket(floats(j), *exps[j], nodes), bgl.FromMemory, true
		},
		got: func(p *cpu.Proc, k int, r collective.Packet) {
			if k < P {
				r := r
				exps[k] = &r
				return
			}
			j := k - P
			p.Compute(TreeConvertCycles * words(j))
			f := collective.FloatSums(r, *exps[j], nodes, words(j))
			v := make([]uint64, len(f))
			for i, x := range f {
				v[i] = math.Float64bits(x)
			}
			store(j, v)
		}})
}

// gbarrier is a node's part of a global barrier under way (in virtual
// node mode, a task's).
type gbarrier struct {
	armed bool
	done  func()
	// Virtual node mode: the barrier's number; on task 0, whether task 1
	// has arrived (its lockbox word says so); on task 1, that it waits
	// for task 0's word of the release.
	gen            uint32
	peerIn, second bool
}

// The lockbox words of the barrier in virtual node mode: task 1 writes
// the number of the barrier it has arrived at into one, task 0 the number
// of the barrier released into the other.
const (
	wordArrived  = 0
	wordReleased = 1
)

// GlobalBarrier takes part in a barrier on the global barrier network
// (L38): the advance loop arms it, then looks at it every pass (a status
// look; such a pass does not doze, as the tree's do not) until the
// release comes, and calls done. Every node of the machine takes part.
// In virtual node mode both tasks call it and task 0 alone arms the
// network: task 1 writes its arrival into a lockbox word (one uncached
// access, L115's lockbox), which task 0 looks at every pass before it
// arms; when the release comes task 0 writes it into another word, which
// task 1 looks at every pass meanwhile (no packet through the virtual
// FIFO either way).
func (l *Layer) GlobalBarrier(p *cpu.Proc, done func()) error {
	defer l.mask()()
	if l.nd.Tree == nil {
		return fmt.Errorf("bglml: node %d: no barrier network (bgl.Machine.Collective before the run)", l.nd.Index)
	}
	if l.gbar != nil {
		return fmt.Errorf("bglml: %s: a barrier while one is under way", l.name())
	}
	p.Compute(l.costs.Post)
	l.Stats.Barriers++
	b := &gbarrier{done: done, gen: uint32(l.Stats.Barriers), peerIn: l.tasks == 1, second: l.self%l.tasks != 0}
	l.gbar = b
	if b.second {
		if err := l.nd.VN.Lockbox.SetWord(p, wordArrived, b.gen); err != nil {
			return err
		}
	}
	l.barrierStep(p)
	return nil
}

// barrierStep is the advance loop's work on the barrier: on the node (its
// task 0) wait for task 1's arrival, arm the network, look for its
// release; on task 1 look for task 0's word of the release.
func (l *Layer) barrierStep(p *cpu.Proc) bool {
	b := l.gbar
	if b == nil {
		return false
	}
	l.looks++ // a pass that looks at the barrier does not doze
	lb := func(w int) uint32 {
		v, err := l.nd.VN.Lockbox.Word(p, w)
		if err != nil {
			panic(fmt.Sprintf("bglml: %v", err))
		}
		return v
	}
	if b.second {
		if lb(wordReleased) != b.gen {
			return false
		}
		l.endBarrier(p)
		return true
	}
	if !b.peerIn {
		if b.peerIn = lb(wordArrived) == b.gen; !b.peerIn {
			return false
		}
	}
	if !b.armed {
		ok, err := l.nd.TryBarrierArm(p)
		if err != nil {
			panic(fmt.Sprintf("bglml: %v", err))
		}
		b.armed = ok
		return ok
	}
	ok, err := l.nd.TryBarrierRelease(p)
	if err != nil {
		panic(fmt.Sprintf("bglml: %v", err))
	}
	if !ok {
		return false
	}
	if l.tasks > 1 {
		if err := l.nd.VN.Lockbox.SetWord(p, wordReleased, b.gen); err != nil {
			panic(fmt.Sprintf("bglml: %v", err))
		}
	}
	l.endBarrier(p)
	return true
}

func (l *Layer) endBarrier(p *cpu.Proc) {
	b := l.gbar
	l.gbar = nil
	if b.done != nil {
		p.Compute(l.costs.Callback)
		b.done()
	}
}

// awaitCopies makes bc the second task's part of a node's operation: its
// data comes from task 0 by copies, those that came early first.
func (l *Layer) awaitCopies(p *cpu.Proc, bc *bcast) {
	p.Compute(l.costs.Post)
	bc.peerDone = true
	l.bc = bc
	l.Stats.TreeOps++ // its part: the copies
	for _, pk := range l.vnEarly {
		l.onBcastCopy(p, pk)
	}
	l.vnEarly = nil
}
