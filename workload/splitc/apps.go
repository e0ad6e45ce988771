package splitc

import (
	"fmt"

	"github.com/aaemu/aaemu/machine"
)

// Platform is one of seed 000's machines for the applications (Tables 5
// and 6): its ranks' layout and the node each runs on.
type Platform struct {
	Name   string
	Layout Layout
	NOW    bool // U170 workstations (else E5000 SMPs)
}

// Seed 000's platforms.
var (
	SMP   = Platform{Name: "SMP", Layout: Layout{Nodes: 1, PerNode: 8}}
	NOW8  = Platform{Name: "NOW of 8", Layout: Layout{Nodes: 8, PerNode: 1}, NOW: true}
	Clump = Platform{Name: "Clump", Layout: Layout{Nodes: 4, PerNode: 8}}
	NOW32 = Platform{Name: "NOW of 32", Layout: Layout{Nodes: 32, PerNode: 1}, NOW: true}
)

// Machine is the platform's machine from its node's spec (a preset's):
// its nodes and cores (two nodes at least: one SMP runs on node 0 of two).
func (p Platform) Machine(node machine.Spec) machine.Spec {
	node.Nodes, node.Cores = max(2, p.Layout.Nodes), p.Layout.PerNode
	return node
}

// App is one of the application runs of seed 000's Tables 3–6.
type App string

// The runs.
const (
	FFT3D     App = "3D FFT"
	CONComm   App = "CON/comm"
	CONComp   App = "CON/comp"
	EM3DNaive App = "EM3D/naive"
	EM3DGood  App = "EM3D/good"
)

// Apps lists them in the paper's order.
var Apps = []App{FFT3D, CONComm, CONComp, EM3DNaive, EM3DGood}

// Sizes are the inputs of the runs: the paper's (Table 3) or smaller.
type Sizes struct {
	FFTN      int // the cube's side (256)
	CommSide  int // CON/comm's 3D block side per rank (80: 512,000 nodes)
	CompSide  int // CON/comp's 2D block side per rank (800: 640,000 nodes)
	EM3DNodes int // per rank (2,500)
	EM3DSteps int // not in the paper
}

// PaperSizes are Table 3's inputs; EM3D's step count is not in the seed.
var PaperSizes = Sizes{FFTN: 256, CommSide: 80, CompSide: 800, EM3DNodes: 2500, EM3DSteps: 10}

// Run is an application run set up for a platform: its program and the
// check of its result.
type Run struct {
	App     App
	Procs   int
	Program Program
	Check   func() error
	// Rounds is CON's label rounds after the run (0 for the others).
	Rounds func() int
}

// grid is the processor grid of p ranks in 3D and the block of 8 ranks
// that an SMP holds, or 8 workstations of one branch of a NOW's network
// (ranks are numbered block by block): seed 000's EM3D, 4×4×2 on 32, the
// naive block 4×2×1, the good one 2×2×2; 2×2×2 on 8.
func grid(p int, good bool) ([3]int, [3]int, error) {
	switch {
	case p == 32 && good:
		return [3]int{4, 4, 2}, [3]int{2, 2, 2}, nil
	case p == 32:
		return [3]int{4, 4, 2}, [3]int{4, 2, 1}, nil
	case p == 8:
		return [3]int{2, 2, 2}, [3]int{2, 2, 2}, nil
	}
	return [3]int{}, [3]int{}, fmt.Errorf("splitc: no processor grid for %d ranks (8 or 32)", p)
}

// grid2 is CON/comp's 2D grid: 8×4 on 32 (a block a row of 8), 4×2 on 8.
func grid2(p int) ([3]int, [3]int, error) {
	switch p {
	case 32:
		return [3]int{8, 4, 1}, [3]int{8, 1, 1}, nil
	case 8:
		return [3]int{4, 2, 1}, [3]int{4, 2, 1}, nil
	}
	return [3]int{}, [3]int{}, fmt.Errorf("splitc: no 2D processor grid for %d ranks (8 or 32)", p)
}

// NewRun sets app up on layout l at sizes z.
func NewRun(app App, l Layout, z Sizes) (*Run, error) {
	p := l.Procs()
	switch app {
	case FFT3D:
		f, err := NewFFT(FFTConfig{N: z.FFTN, Seed: 1}, p)
		if err != nil {
			return nil, err
		}
		return &Run{App: app, Procs: p, Program: f.Program(), Check: f.Check}, nil
	case CONComm, CONComp:
		cfg := CONConfig{Dims: 3, Side: z.CommSide, Edge: 0.25, Seed: 1}
		var err error
		if app == CONComm {
			cfg.Grid, cfg.Block, err = grid(p, false)
		} else {
			cfg = CONConfig{Dims: 2, Side: z.CompSide, Edge: 0.4, Seed: 1}
			cfg.Grid, cfg.Block, err = grid2(p)
		}
		if err != nil {
			return nil, err
		}
		c, err := NewCON(cfg)
		if err != nil {
			return nil, err
		}
		return &Run{App: app, Procs: p, Program: c.Program(), Check: c.Check, Rounds: c.Rounds}, nil
	case EM3DNaive, EM3DGood:
		g, b, err := grid(p, app == EM3DGood)
		if err != nil {
			return nil, err
		}
		e, err := NewEM3D(EM3DConfig{Nodes: z.EM3DNodes, Degree: 20, Remote: 0.4, Steps: z.EM3DSteps, Grid: g, Block: b, Seed: 1})
		if err != nil {
			return nil, err
		}
		return &Run{App: app, Procs: p, Program: e.Program(), Check: e.Check}, nil
	}
	return nil, fmt.Errorf("splitc: no application %q (have %v)", app, Apps)
}
