package splitc

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// EM3DConfig is the EM3D stand-in (seed 000, Table 3): a bipartite graph
// of E and H nodes, Nodes per rank (half of each kind), every node with
// Degree edges to nodes of the other kind, a fraction Remote of them to a
// rank next to its own in the processor grid (one of the 26 offsets,
// drawn uniformly; an offset off the grid leaves the edge local, so a rank
// at the grid's edge has fewer remote edges — as in Table 4, where the
// good layout's corner processors send fewer stores than the mean); each step updates every E
// node from its H neighbours, then every H node from its E neighbours,
// each half step ending with the new values stored into the ghost copies
// other ranks hold (one short store per value and consuming rank) and a
// Sync.
type EM3DConfig struct {
	Nodes, Degree int
	Remote        float64
	Steps         int
	// Grid is the processor grid (x, y, z), its product the ranks; Block
	// the block of it an SMP's ranks hold (seed 000: 4×4×2 on 32, the
	// naive layout 4×2×1 per SMP, the good one 2×2×2). Ranks are numbered
	// SMP by SMP, inside one in x, then y, then z order.
	Grid, Block [3]int
	// Faces draws a remote edge's rank from the 6 face neighbours only
	// (edges that reach only the nearest blocks of the coordinate space),
	// not from the 26 offsets.
	Faces bool
	// CyclesPerEdge is the compute of one edge of an update (a multiply
	// and an add, the coefficient's and the neighbour's loads); default
	// 4, an assumption, not a figure of the seed.
	CyclesPerEdge int
	Seed          uint64
}

// EM3D is a run of the stand-in: the graph, and the result.
type EM3D struct {
	cfg   EM3DConfig
	p     int
	pos   [][3]int // grid position of each rank
	at    []int    // rank at each grid position, x fastest
	ranks []*em3dRank
	out   [][]float64 // each rank's values (E then H) after the run
}

type em3dEdge struct {
	rank, node int // the neighbour: its rank and index there
	coef       float64
}

type em3dRank struct {
	nodes [][]em3dEdge // by node: E nodes first, then H
	// ghosts: the other ranks' nodes this rank reads, sorted, by kind
	ghosts [2][][2]int
	ghost  [2]map[[2]int]int
	// consumers of each local node: (rank, ghost index there)
	consumers [][][2]int
}

// Handlers of the ghost stores: E values, H values.
const (
	hGhostE = 1
	hGhostH = 2
)

// NewEM3D builds the graph (set-up, not a cost of the run).
func NewEM3D(cfg EM3DConfig) (*EM3D, error) {
	if cfg.CyclesPerEdge == 0 {
		cfg.CyclesPerEdge = 4
	}
	p := cfg.Grid[0] * cfg.Grid[1] * cfg.Grid[2]
	switch {
	case cfg.Nodes < 2 || cfg.Nodes > 1<<20:
		return nil, fmt.Errorf("em3d: %d nodes per rank, want 2..%d", cfg.Nodes, 1<<20)
	case cfg.Degree < 1 || cfg.Degree > 64:
		return nil, fmt.Errorf("em3d: degree %d, want 1..64", cfg.Degree)
	case !(cfg.Remote >= 0 && cfg.Remote <= 1):
		return nil, fmt.Errorf("em3d: remote fraction %v, want 0..1", cfg.Remote)
	case cfg.Steps < 1:
		return nil, fmt.Errorf("em3d: %d steps", cfg.Steps)
	case cfg.CyclesPerEdge < 0:
		return nil, fmt.Errorf("em3d: %d cycles per edge", cfg.CyclesPerEdge)
	}
	for d := 0; d < 3; d++ {
		if cfg.Grid[d] < 1 || cfg.Block[d] < 1 || cfg.Grid[d]%cfg.Block[d] != 0 {
			return nil, fmt.Errorf("em3d: grid %v in blocks of %v: want whole blocks", cfg.Grid, cfg.Block)
		}
	}
	if p > 256 {
		return nil, fmt.Errorf("em3d: a grid of %d ranks, want at most 256", p)
	}
	e := &EM3D{cfg: cfg, p: p, at: make([]int, p), out: make([][]float64, p)}
	b, g := cfg.Block, cfg.Grid
	per := b[0] * b[1] * b[2]
	for x := 0; x < g[0]; x++ {
		for y := 0; y < g[1]; y++ {
			for z := 0; z < g[2]; z++ {
				smp := x/b[0] + g[0]/b[0]*(y/b[1]+g[1]/b[1]*(z/b[2]))
				in := x%b[0] + b[0]*(y%b[1]+b[1]*(z%b[2]))
				e.at[x+g[0]*(y+g[1]*z)] = smp*per + in
			}
		}
	}
	e.pos = make([][3]int, p)
	for x := 0; x < g[0]; x++ {
		for y := 0; y < g[1]; y++ {
			for z := 0; z < g[2]; z++ {
				e.pos[e.at[x+g[0]*(y+g[1]*z)]] = [3]int{x, y, z}
			}
		}
	}
	for r := 0; r < p; r++ {
		e.ranks = append(e.ranks, e.generate(r))
	}
	for _, rk := range e.ranks {
		rk.consumers = make([][][2]int, cfg.Nodes)
	}
	for c, rk := range e.ranks {
		for k := 0; k < 2; k++ {
			for g, id := range rk.ghosts[k] {
				q := e.ranks[id[0]]
				q.consumers[id[1]] = append(q.consumers[id[1]], [2]int{c, g})
			}
		}
	}
	return e, nil
}

// rankAt is the rank at grid position c, if it is in the grid.
func (e *EM3D) rankAt(c [3]int) (int, bool) {
	g := e.cfg.Grid
	for d := 0; d < 3; d++ {
		if c[d] < 0 || c[d] >= g[d] {
			return 0, false
		}
	}
	return e.at[c[0]+g[0]*(c[1]+g[1]*c[2])], true
}

// PerSMP is the ranks an SMP holds.
func (e *EM3D) PerSMP() int { return e.cfg.Block[0] * e.cfg.Block[1] * e.cfg.Block[2] }

// Procs is the ranks.
func (e *EM3D) Procs() int { return e.p }

// kindStart is the index of the first node of kind k (0 E, 1 H).
func (e *EM3D) kindStart(k int) int { return k * (e.cfg.Nodes / 2) }
func (e *EM3D) kindLen(k int) int   { return e.kindStart(k+1) - e.kindStart(k) + k*(e.cfg.Nodes%2) }

// generate draws rank r's edges from the seed: independent of the other
// ranks' draws.
func (e *EM3D) generate(r int) *em3dRank {
	cfg := e.cfg
	rk := &em3dRank{nodes: make([][]em3dEdge, cfg.Nodes)}
	for k := 0; k < 2; k++ {
		rk.ghost[k] = map[[2]int]int{}
	}
	type ref struct{ rank, node int }
	var remote [2][]ref
	for i := 0; i < cfg.Nodes; i++ {
		kind := 0
		if i >= e.kindStart(1) {
			kind = 1
		}
		other := 1 - kind
		for j := 0; j < cfg.Degree; j++ {
			h := mix(cfg.Seed ^ uint64(r)<<48 ^ uint64(i)<<16 ^ uint64(j))
			q := r
			if float64(h>>11)/float64(1<<53) < cfg.Remote {
				// one of the 26 offsets (or of the 6 faces); off the
				// grid, the edge stays local
				c := e.pos[r]
				if cfg.Faces {
					f := int(mix(h) % 6)
					c[f/2] += 2*(f%2) - 1
				} else {
					o := int(mix(h) % 26)
					if o >= 13 {
						o++ // skip (0, 0, 0)
					}
					c = [3]int{c[0] + o%3 - 1, c[1] + o/3%3 - 1, c[2] + o/9 - 1}
				}
				if n, ok := e.rankAt(c); ok {
					q = n
				}
			}
			h2 := mix(h ^ 0x5bd1e995)
			node := e.kindStart(other) + int(h2%uint64(e.kindLen(other)))
			coef := float64(mix(h2)>>11) / float64(1<<53) * 0.1 / float64(cfg.Degree)
			rk.nodes[i] = append(rk.nodes[i], em3dEdge{rank: q, node: node, coef: coef})
			if q != r {
				remote[other] = append(remote[other], ref{q, node})
			}
		}
	}
	for k := 0; k < 2; k++ {
		sort.Slice(remote[k], func(a, b int) bool {
			if remote[k][a].rank != remote[k][b].rank {
				return remote[k][a].rank < remote[k][b].rank
			}
			return remote[k][a].node < remote[k][b].node
		})
		for _, x := range remote[k] {
			id := [2]int{x.rank, x.node}
			if _, ok := rk.ghost[k][id]; !ok {
				rk.ghost[k][id] = len(rk.ghosts[k])
				rk.ghosts[k] = append(rk.ghosts[k], id)
			}
		}
	}
	return rk
}

// EM3DInput is node i of rank r's initial value.
func EM3DInput(seed uint64, r, i int) float64 {
	return float64(mix(seed^0xe3d^uint64(r)<<32^uint64(i))>>11)/float64(1<<53)*2 - 1
}

// StoresPerStep is the short stores rank r sends in a step.
func (e *EM3D) StoresPerStep(r int) []uint64 {
	out := make([]uint64, e.p)
	for _, cs := range e.ranks[r].consumers {
		for _, c := range cs {
			out[c[0]]++
		}
	}
	return out
}

// Program is what every rank runs.
func (e *EM3D) Program() Program {
	return func(r Rank) error {
		id, n := r.ID(), e.cfg.Nodes
		rk := e.ranks[id]
		vals := r.Alloc(uint64(n) * 8)
		var ghosts [2]uint64
		for k := 0; k < 2; k++ {
			ghosts[k] = r.Alloc(uint64(max(1, len(rk.ghosts[k]))) * 8)
		}
		// The edges as the update reads them: per node, per edge the
		// neighbour's slot (local node, or ghost index with the top bit)
		// and the coefficient, 12 bytes.
		edges := r.Alloc(uint64(n*e.cfg.Degree) * 12)
		eb := make([]byte, n*e.cfg.Degree*12)
		for i, es := range rk.nodes {
			for j, ed := range es {
				slot := uint32(ed.node)
				if ed.rank != id {
					kind := 0
					if ed.node >= e.kindStart(1) {
						kind = 1
					}
					slot = uint32(rk.ghost[kind][[2]int{ed.rank, ed.node}]) | 1<<31
				}
				o := (i*e.cfg.Degree + j) * 12
				binary.LittleEndian.PutUint32(eb[o:], slot)
				binary.LittleEndian.PutUint64(eb[o+4:], math.Float64bits(ed.coef))
			}
		}
		r.Poke(edges, eb)
		v := make([]float64, n)
		for i := range v {
			v[i] = EM3DInput(e.cfg.Seed, id, i)
		}
		r.Poke(vals, f64bytes(v))
		for k := 0; k < 2; k++ { // the ghosts hold the neighbours' inputs
			g := make([]float64, len(rk.ghosts[k]))
			for i, x := range rk.ghosts[k] {
				g[i] = EM3DInput(e.cfg.Seed, x[0], x[1])
			}
			r.Poke(ghosts[k], f64bytes(g))
		}
		for k, h := range []int{hGhostE, hGhostH} {
			base := ghosts[k]
			if err := r.Handle(h, func(m *Msg) {
				var b [8]byte
				binary.LittleEndian.PutUint32(b[:], m.Args[1])
				binary.LittleEndian.PutUint32(b[4:], m.Args[2])
				r.Write(base+8*uint64(m.Args[0]), b[:])
			}); err != nil {
				return err
			}
		}
		if _, err := r.Sync(Sum, zero); err != nil {
			return err
		}
		for step := 0; step < e.cfg.Steps; step++ {
			for kind := 0; kind < 2; kind++ {
				lo, hi := e.kindStart(kind), e.kindStart(kind)+e.kindLen(kind)
				other := 1 - kind
				vb := make([]byte, n*8)
				r.Read(vals, vb)
				v := bytesF64(vb)
				gb := make([]byte, len(rk.ghosts[other])*8)
				r.Read(ghosts[other], gb)
				g := bytesF64(gb)
				eb := make([]byte, (hi-lo)*e.cfg.Degree*12)
				r.Read(edges+uint64(lo*e.cfg.Degree*12), eb)
				for i := lo; i < hi; i++ {
					acc := v[i]
					for j := 0; j < e.cfg.Degree; j++ {
						o := ((i-lo)*e.cfg.Degree + j) * 12
						slot := binary.LittleEndian.Uint32(eb[o:])
						c := math.Float64frombits(binary.LittleEndian.Uint64(eb[o+4:]))
						x := 0.0
						if slot&(1<<31) != 0 {
							x = g[slot&^(1<<31)]
						} else {
							x = v[slot]
						}
						acc -= c * x
					}
					v[i] = acc
				}
				r.Compute((hi - lo) * e.cfg.Degree * e.cfg.CyclesPerEdge)
				r.Write(vals+uint64(lo)*8, f64bytes(v[lo:hi]))
				h := hGhostE
				if kind == 1 {
					h = hGhostH
				}
				for i := lo; i < hi; i++ {
					bits := math.Float64bits(v[i])
					for _, c := range rk.consumers[i] {
						if err := r.Store(c[0], h, uint32(c[1]), uint32(bits), uint32(bits>>32)); err != nil {
							return err
						}
					}
				}
				if _, err := r.Sync(Sum, zero); err != nil {
					return err
				}
			}
		}
		out := make([]byte, n*8)
		r.Peek(vals, out)
		e.out[id] = bytesF64(out)
		return nil
	}
}

// Check compares the ranks' values with a serial computation on the
// whole graph (the same sums in the same order: equal to the bit).
func (e *EM3D) Check() error {
	n := e.cfg.Nodes
	v := make([][]float64, e.p)
	for r := range v {
		v[r] = make([]float64, n)
		for i := range v[r] {
			v[r][i] = EM3DInput(e.cfg.Seed, r, i)
		}
	}
	for step := 0; step < e.cfg.Steps; step++ {
		for kind := 0; kind < 2; kind++ {
			lo, hi := e.kindStart(kind), e.kindStart(kind)+e.kindLen(kind)
			for r, rk := range e.ranks {
				for i := lo; i < hi; i++ {
					acc := v[r][i]
					for _, ed := range rk.nodes[i] {
						acc -= ed.coef * v[ed.rank][ed.node]
					}
					v[r][i] = acc
				}
			}
		}
	}
	for r := range v {
		if e.out[r] == nil {
			return fmt.Errorf("em3d: rank %d has no result", r)
		}
		for i := range v[r] {
			if e.out[r][i] != v[r][i] {
				return fmt.Errorf("em3d: rank %d node %d is %v, the serial computation's %v", r, i, e.out[r][i], v[r][i])
			}
		}
	}
	return nil
}

func f64bytes(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func bytesF64(b []byte) []float64 {
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}
