package splitc

import (
	"encoding/binary"
	"fmt"
)

// CONConfig is the connected-components stand-in (seed 000's CON, Table
// 3): a 2D or 3D lattice, Side nodes a side on each rank (Side² or Side³
// nodes), each edge present with probability Edge. Every rank finds the
// components of its block with a union-find (a computation over its
// nodes), then the ranks agree on labels across the blocks' faces in
// rounds: a rank stores the label of each component that changed over
// each present edge leaving its block (one short store of 2 words), the
// owner of the other end lowers its component's label to it, and a Sync
// with an OR tells whether any label changed. The local phase reads and
// writes every node's record (64 bytes, Table 3's memory per node): CON
// steps through its data, which on an SMP shares the node's memory
// bandwidth. A component's label is the
// smallest global node id in it.
type CONConfig struct {
	Dims  int // 2 or 3
	Side  int
	Edge  float64
	Grid  [3]int // the processor grid (Grid[2] = 1 in 2D)
	Block [3]int // an SMP's block of it, as EM3DConfig's
	// CyclesPerNode is the local union-find's compute per node (its finds
	// and unions); default 20, an assumption, not a figure of the seed.
	CyclesPerNode int
	// RecordBytes is a node's state in memory, which the local phase
	// reads and writes whole; default 64: Table 3's memory per processor
	// over its nodes (32 MB / 512,000 and 40 MB / 640,000, 000:L178–L197).
	RecordBytes int
	Seed        uint64
}

// CON is a run of the stand-in.
type CON struct {
	cfg    CONConfig
	p, n   int
	layout *EM3D // the grid and its numbering (no graph)
	labels [][]uint32
	rounds int
}

// Handler of the label stores.
const hCONLabel = 1

// NewCON checks the configuration.
func NewCON(cfg CONConfig) (*CON, error) {
	if cfg.CyclesPerNode == 0 {
		cfg.CyclesPerNode = 20
	}
	if cfg.RecordBytes == 0 {
		cfg.RecordBytes = 64
	}
	switch {
	case cfg.Dims != 2 && cfg.Dims != 3:
		return nil, fmt.Errorf("con: %d dimensions, want 2 or 3", cfg.Dims)
	case cfg.Side < 1:
		return nil, fmt.Errorf("con: side %d", cfg.Side)
	case !(cfg.Edge >= 0 && cfg.Edge <= 1):
		return nil, fmt.Errorf("con: edge probability %v, want 0..1", cfg.Edge)
	case cfg.Dims == 2 && (cfg.Grid[2] != 1 || cfg.Block[2] != 1):
		return nil, fmt.Errorf("con: a 2D lattice on a grid %v in blocks %v, want z = 1", cfg.Grid, cfg.Block)
	case cfg.CyclesPerNode < 0:
		return nil, fmt.Errorf("con: %d cycles per node", cfg.CyclesPerNode)
	case cfg.RecordBytes < 8 || cfg.RecordBytes > 4096:
		return nil, fmt.Errorf("con: %d bytes a node record, want 8..4096", cfg.RecordBytes)
	}
	n := cfg.Side * cfg.Side
	if cfg.Dims == 3 {
		n *= cfg.Side
	}
	g := cfg.Grid
	if uint64(n)*uint64(g[0]*g[1]*g[2]) >= 1<<32 {
		return nil, fmt.Errorf("con: %d nodes on each of %d ranks: the labels are 32-bit", n, g[0]*g[1]*g[2])
	}
	// The grid's numbering is EM3D's; a graph of no nodes is not drawn.
	l, err := NewEM3D(EM3DConfig{Nodes: 2, Degree: 1, Steps: 1, Grid: cfg.Grid, Block: cfg.Block})
	if err != nil {
		return nil, fmt.Errorf("con: %w", err)
	}
	return &CON{cfg: cfg, p: l.p, n: n, layout: l, labels: make([][]uint32, l.p)}, nil
}

// Procs is the ranks.
func (c *CON) Procs() int { return c.p }

// Rounds is the label rounds the last run took.
func (c *CON) Rounds() int { return c.rounds }

// coord is the global lattice coordinates of node i of rank r.
func (c *CON) coord(r, i int) [3]int {
	s := c.cfg.Side
	pos := c.layout.pos[r]
	return [3]int{pos[0]*s + i%s, pos[1]*s + i/s%s, pos[2]*s + i/(s*s)}
}

// node is the rank and index of the node at global coordinates x, if any.
func (c *CON) node(x [3]int) (int, int, bool) {
	s := c.cfg.Side
	var g, l [3]int
	for d := 0; d < 3; d++ {
		if x[d] < 0 {
			return 0, 0, false
		}
		g[d], l[d] = x[d]/s, x[d]%s
	}
	if c.cfg.Dims == 2 && x[2] != 0 {
		return 0, 0, false
	}
	r, ok := c.layout.rankAt(g)
	return r, l[0] + s*(l[1]+s*l[2]), ok
}

// present says whether the edge from global x along dim (to x + 1) is.
func (c *CON) present(x [3]int, dim int) bool {
	h := mix(c.cfg.Seed ^ uint64(x[0])<<42 ^ uint64(x[1])<<21 ^ uint64(x[2]) ^ uint64(dim)<<62)
	return float64(h>>11)/float64(1<<53) < c.cfg.Edge
}

// id is the global id of node i of rank r.
func (c *CON) id(r, i int) uint32 { return uint32(r*c.n + i) }

type conCross struct {
	local, rank, remote int
}

// Program is what every rank runs.
func (c *CON) Program() Program {
	return func(r Rank) error {
		me, n, dims := r.ID(), c.n, c.cfg.Dims
		// The input: a byte per node, bit d for the edge along d.
		bits := make([]byte, n)
		var cross []conCross
		for i := 0; i < n; i++ {
			x := c.coord(me, i)
			for d := 0; d < dims; d++ {
				up := x
				up[d]++
				if q, j, ok := c.node(up); ok && c.present(x, d) {
					bits[i] |= 1 << d
					if q != me {
						cross = append(cross, conCross{i, q, j})
					}
				}
				down := x
				down[d]--
				if q, j, ok := c.node(down); ok && q != me && c.present(down, d) {
					cross = append(cross, conCross{i, q, j})
				}
			}
		}
		// A record per node: its edge bits (byte 0), its label (bytes 4–7)
		// and the rest of the node's state, RecordBytes in all.
		rec := uint64(c.cfg.RecordBytes)
		nodes := r.Alloc(uint64(n) * rec)
		img := make([]byte, uint64(n)*rec)
		for i, x := range bits {
			img[uint64(i)*rec] = x
		}
		r.Poke(nodes, img)
		inbox := r.Alloc(uint64(max(1, len(cross))) * 8) // a store's (node, label)
		parent := make([]int32, n)
		type pend struct {
			round  uint32
			node   int
			label  uint32
			offset uint64
		}
		var pending []pend
		round := uint32(0)
		if err := r.Handle(hCONLabel, func(m *Msg) {
			var b [8]byte
			binary.LittleEndian.PutUint32(b[:], m.Args[1])
			binary.LittleEndian.PutUint32(b[4:], m.Args[2])
			off := uint64(len(pending)%max(1, len(cross))) * 8
			r.Write(inbox+off, b[:])
			pending = append(pending, pend{round: m.Args[0], node: int(m.Args[1]), label: m.Args[2], offset: off})
		}); err != nil {
			return err
		}
		if _, err := r.Sync(Sum, zero); err != nil {
			return err
		}
		// Local union-find over the block's edges; roots are the smallest
		// index, so a root's global id is its component's smallest.
		var find func(i int) int
		find = func(i int) int {
			for int(parent[i]) != i {
				parent[i] = parent[parent[i]]
				i = int(parent[i])
			}
			return i
		}
		union := func(a, b int) {
			a, b = find(a), find(b)
			if a < b {
				parent[b] = int32(a)
			} else if b < a {
				parent[a] = int32(b)
			}
		}
		for i := range parent {
			parent[i] = int32(i)
		}
		r.Read(nodes, img)
		s := c.cfg.Side
		stride := [3]int{1, s, s * s}
		for i := 0; i < n; i++ {
			for d := 0; d < dims; d++ {
				if img[uint64(i)*rec]&(1<<d) != 0 && (i/stride[d])%s+1 < s {
					union(i, i+stride[d])
				}
			}
		}
		label := make([]uint32, n)
		for i := range label {
			label[i] = c.id(me, find(i))
		}
		r.Compute(n * c.cfg.CyclesPerNode)
		for i, l := range label {
			binary.LittleEndian.PutUint32(img[uint64(i)*rec+4:], l)
		}
		r.Write(nodes, img)
		changed := make([]bool, n)
		var dirty []int // the roots whose label changed this round
		for i := range changed {
			if find(i) == i {
				changed[i] = true
				dirty = append(dirty, i)
			}
		}
		// apply lowers the labels of this round's stores.
		apply := func() uint64 {
			any := uint64(0)
			keep := pending[:0]
			for _, p := range pending {
				if p.round != round {
					keep = append(keep, p)
					continue
				}
				var w [8]byte
				r.Read(inbox+p.offset, w[:])
				root := find(p.node)
				var lb [4]byte
				r.Read(nodes+uint64(root)*rec+4, lb[:])
				if p.label < label[root] {
					label[root] = p.label
					if !changed[root] {
						changed[root] = true
						dirty = append(dirty, root)
					}
					binary.LittleEndian.PutUint32(lb[:], p.label)
					r.Write(nodes+uint64(root)*rec+4, lb[:])
				}
			}
			pending = keep
			if len(dirty) > 0 {
				any = 1
			}
			return any
		}
		for {
			type out struct {
				rank int
				node uint32
				lab  uint32
			}
			var msgs []out
			for _, x := range cross {
				if root := find(x.local); changed[root] {
					msgs = append(msgs, out{x.rank, uint32(x.remote), label[root]})
				}
			}
			for _, i := range dirty {
				changed[i] = false
			}
			dirty = dirty[:0]
			for _, m := range msgs {
				if err := r.Store(m.rank, hCONLabel, round, m.node, m.lab); err != nil {
					return err
				}
			}
			any, err := r.Sync(Or, apply)
			if err != nil {
				return err
			}
			round++
			if any == 0 {
				break
			}
		}
		if me == 0 {
			c.rounds = int(round)
		}
		final := make([]uint32, n)
		for i := range final {
			final[i] = label[find(i)]
		}
		c.labels[me] = final
		return nil
	}
}

// Check compares every node's label with a serial union-find over the
// whole lattice: the smallest global id of its component.
func (c *CON) Check() error {
	total := c.p * c.n
	parent := make([]int32, total)
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(i int) int {
		for int(parent[i]) != i {
			parent[i] = parent[parent[i]]
			i = int(parent[i])
		}
		return i
	}
	for r := 0; r < c.p; r++ {
		for i := 0; i < c.n; i++ {
			x := c.coord(r, i)
			for d := 0; d < c.cfg.Dims; d++ {
				up := x
				up[d]++
				if q, j, ok := c.node(up); ok && c.present(x, d) {
					a, b := find(int(c.id(r, i))), find(int(c.id(q, j)))
					if a < b {
						parent[b] = int32(a)
					} else if b < a {
						parent[a] = int32(b)
					}
				}
			}
		}
	}
	for r := 0; r < c.p; r++ {
		if c.labels[r] == nil {
			return fmt.Errorf("con: rank %d has no result", r)
		}
		for i := 0; i < c.n; i++ {
			if want := uint32(find(int(c.id(r, i)))); c.labels[r][i] != want {
				return fmt.Errorf("con: rank %d node %d (at %v) labelled %d, the serial union-find's %d", r, i, c.coord(r, i), c.labels[r][i], want)
			}
		}
	}
	return nil
}
