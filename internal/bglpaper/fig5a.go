package bglpaper

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// The series of Figure 5a's stand-in.
const (
	coMode workload.Scheme = "coprocessor (a task a node)"
	vnMode workload.Scheme = "virtual node (two tasks a node)"
	// irqMode is a task a node in heater mode, its layer interrupt-driven
	// (L94): the halos read by the main core's handlers.
	irqMode workload.Scheme = "interrupts (a task a node, heater)"
)

// Kernel is a compute-bound stand-in for a NAS benchmark (the reference's
// §3.9: the NAS codes are out as codes): each step, every task sweeps its
// N³ grid points (BytesPerPoint of arrays each, read and written in
// place, FlopsPerPoint of arithmetic each) through the node's shared
// memory system, then exchanges one 8-byte value per point of each face
// with its six neighbours of a periodic 3D grid of tasks.
type Kernel struct {
	Name                         string
	N                            int
	BytesPerPoint, FlopsPerPoint int
}

// The stand-in kernels, chosen before any run: three whose two tasks'
// arrays fit the 4 MB L3 together (1.3 MB each: BT-like at 200 flops a
// point, SP-like at 100, EP-like at 400 on a small grid) and one whose
// arrays fit it alone but not two at once (2.6 MB: MG-like, 100 flops a
// point). Every one is compute-bound on its own core: its flops take
// longer than its stream of memory (at 4 flops and 9.1 bytes a cycle, a
// point's 40 bytes take 4.4 cycles, its flops 25 to 100).
var kernels = []Kernel{
	{Name: "EP-like", N: 16, BytesPerPoint: 40, FlopsPerPoint: 400},
	{Name: "BT-like", N: 32, BytesPerPoint: 40, FlopsPerPoint: 200},
	{Name: "SP-like", N: 32, BytesPerPoint: 40, FlopsPerPoint: 100},
	{Name: "MG-like", N: 40, BytesPerPoint: 40, FlopsPerPoint: 100},
}

// VirtualNode is Figure 5a's set-up: the nodes (L192: 32 compute nodes),
// the kernels and the steps timed (after one that warms the L3).
type VirtualNode struct {
	Dims    [3]int
	Kernels []Kernel
	Steps   int
}

// DefaultVirtualNode: 32 nodes (4×4×2), every kernel, 3 steps.
func DefaultVirtualNode() VirtualNode {
	return VirtualNode{Dims: [3]int{4, 4, 2}, Kernels: kernels, Steps: 3}
}

// ReducedVirtualNode: 8 nodes (2×2×2), two kernels, 2 steps.
func ReducedVirtualNode() VirtualNode {
	return VirtualNode{Dims: [3]int{2, 2, 2}, Kernels: []Kernel{kernels[1], kernels[3]}, Steps: 2}
}

// StandInResult is what a run of the stand-in measured.
type StandInResult struct {
	// Step is the mean over the tasks of a task's time a step, Sweep the
	// part of it in the kernel's sweep (computation and memory) and the
	// rest its halo exchange (communication and waiting for neighbours).
	Step, Sweep sim.Tick
	// Tasks is the number of tasks; Memory the nodes' memory systems'
	// counts summed; Copied the messages copied between the two tasks of
	// a node (L144), Virtual the packets through the virtual FIFOs.
	Tasks           int
	Memory          bgl.MemoryStats
	Copied, Virtual uint64
	// Interrupts is the interrupts the layers took (StandInInterrupts).
	Interrupts uint64
}

// StandIn runs kernel k on a dims machine in mode (coprocessor: a task a
// node on its main core, the coprocessor receiving its halos, L135–L137;
// virtual node: a task a core, L114) for 1 + steps steps, through the
// message layer, and times the last steps.
func StandIn(dims [3]int, mode bgl.Mode, k Kernel, steps int) (StandInResult, error) {
	if mode != bgl.CoprocessorMode && mode != bgl.VirtualNodeMode {
		return StandInResult{}, fmt.Errorf("stand-in: mode %v (coprocessor or virtual-node)", mode)
	}
	return standIn(dims, mode, bglml.Polling, k, steps)
}

// StandInInterrupts is the stand-in with a task a node in heater mode,
// each node's layer interrupt-driven (L94): the handlers read the halos
// and answer the rendezvous's scouts while the tasks sweep (between two
// of the sweep's blocks: the model's cores take an interrupt between
// operations), and a task waiting for its halos halts.
func StandInInterrupts(dims [3]int, k Kernel, steps int) (StandInResult, error) {
	return standIn(dims, bgl.HeaterMode, bglml.Interrupts, k, steps)
}

func standIn(dims [3]int, mode bgl.Mode, how bglml.Progress, k Kernel, steps int) (StandInResult, error) {
	var res StandInResult
	if k.N < 1 || k.N > 256 || k.BytesPerPoint < 8 || k.BytesPerPoint > 1024 || k.FlopsPerPoint < 0 || k.FlopsPerPoint > 1<<20 || steps < 1 || steps > 255 {
		return res, fmt.Errorf("stand-in: kernel %q of %d³ points, %d bytes and %d flops a point, %d steps", k.Name, k.N, k.BytesPerPoint, k.FlopsPerPoint, steps)
	}
	spec := bgl.DefaultSpec(dims[0], dims[1], dims[2]).WithMode(mode)
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return res, err
	}
	tasks := mode.Tasks()
	// The grid of tasks: the torus's, twice as long in x in virtual node
	// mode, the two tasks of a node side by side (grid x = 2x + t).
	grid := [3]int{dims[0] * tasks, dims[1], dims[2]}
	n := grid[0] * grid[1] * grid[2]
	res.Tasks = n
	taskOf := func(g [3]int) int { // grid place → the layer's address
		node := g[0]/tasks + dims[0]*(g[1]+dims[1]*g[2])
		return node*tasks + g[0]%tasks
	}
	points := k.N * k.N * k.N
	face := k.N * k.N * 8
	params := bglml.DefaultParams()
	params.Coprocessor = mode == bgl.CoprocessorMode
	layers := make([]*bglml.Layer, n)
	var failed error
	var sum, sweep sim.Tick
	for gi := 0; gi < n; gi++ {
		g := [3]int{gi % grid[0], gi / grid[0] % grid[1], gi / (grid[0] * grid[1])}
		me := taskOf(g)
		nd := m.Nodes[me/tasks]
		// The six neighbours: −x, +x, −y, +y, −z, +z; what arrives from
		// direction d was sent towards d^1.
		var nb [6]int
		for d := 0; d < 6; d++ {
			h := g
			h[d/2] = (h[d/2] + grid[d/2] + 2*(d%2) - 1) % grid[d/2]
			nb[d] = taskOf(h)
		}
		arrays := nd.Alloc(points * k.BytesPerPoint)
		send := nd.Alloc(6 * face)
		recv := nd.Alloc(2 * 6 * face) // two steps' halos: a neighbour can be one step ahead
		got := make([]int, steps+1)
		up := func(_ int, info []byte, size int) (uint64, func()) {
			s, d := int(info[0]), int(info[1])
			return recv + uint64(((s%2)*6+(d^1))*face), func() { got[s]++ }
		}
		var l *bglml.Layer
		if tasks > 1 {
			l, err = bglml.NewTask(m, me, params, Costs.Costs(), up)
		} else {
			l, err = bglml.New(m, me, params, Costs.Costs(), up)
		}
		if err != nil {
			return res, err
		}
		layers[gi] = l
		if how == bglml.Interrupts {
			if err := l.StartInterrupts(); err != nil {
				return res, err
			}
		}
		l.Core().Spawn("task", func(p *cpu.Proc) {
			var start sim.Tick
			for s := 0; s <= steps; s++ {
				if s == 1 {
					start = p.Now()
				}
				t0 := p.Now()
				if err := nd.MemSys.Sweep(p, arrays, points*k.BytesPerPoint, int64(points)*int64(k.FlopsPerPoint), true); err != nil {
					failed = err
					return
				}
				if s > 0 {
					sweep += (p.Now() - t0) / sim.Tick(steps)
				}
				sent := 0
				for d := 0; d < 6; d++ {
					msg := &bglml.Message{Dst: nb[d], Info: []byte{byte(s), byte(d)}, Addr: send + uint64(d*face), Len: face, Done: func() { sent++ }}
					if err := l.Send(p, msg); err != nil {
						failed = err
						return
					}
				}
				if how == bglml.Interrupts {
					for l.Advance(p) {
					}
					l.WaitInterrupts(p, func() bool { return got[s] == 6 && sent == 6 })
				} else {
					l.Until(p, func() bool { return got[s] == 6 && sent == 6 })
				}
			}
			sum += (p.Now() - start) / sim.Tick(steps)
			// Serve the neighbours' last halos' protocols to the end.
			if how == bglml.Interrupts {
				l.WaitInterrupts(p, l.Idle)
			} else {
				l.Until(p, l.Idle)
			}
		})
	}
	m.World.Run(10 * sim.S)
	if failed != nil {
		return res, failed
	}
	for gi, l := range layers {
		if !l.Idle() {
			return res, fmt.Errorf("stand-in: task %d did not finish in 10 s of simulated time", gi)
		}
		res.Copied += l.Stats.Copied
		res.Interrupts += l.IrqStats.Raised
	}
	for _, nd := range m.Nodes {
		st := nd.MemSys.Stats
		res.Memory.Hits += st.Hits
		res.Memory.Misses += st.Misses
		res.Memory.Writebacks += st.Writebacks
		res.Memory.StallCycles += st.StallCycles
		if nd.VN != nil {
			res.Virtual += nd.VN.To[0].Stats.Packets + nd.VN.To[1].Stats.Packets
		}
	}
	res.Step, res.Sweep = sum/sim.Tick(n), sweep/sim.Tick(n)
	return res, nil
}

// Fig5a is Figure 5a's stand-in (L192–L194, claim B15): per-task
// performance of compute-bound kernels with a 3D halo exchange, in
// coprocessor mode (a task a node) and virtual node mode (two tasks a
// node, the same work each), as the time a task takes a step.
func Fig5a(v VirtualNode) *paper.Figure {
	var names []string
	for _, k := range v.Kernels {
		names = append(names, k.Name)
	}
	kernel := func(name string) Kernel {
		for _, k := range v.Kernels {
			if k.Name == name {
				return k
			}
		}
		return Kernel{Name: name}
	}
	c := paper.NewCustom(paper.Custom{X: []int{v.Dims[0] * v.Dims[1] * v.Dims[2]}, Categories: names, CategoryLabel: "kernel",
		Schemes: []workload.Scheme{coMode, vnMode, irqMode}, YLabel: "time a step per task", YUnit: "ms"},
		func(_ context.Context, _ int, cat string, s workload.Scheme) (float64, error) {
			var r StandInResult
			var err error
			switch s {
			case irqMode:
				r, err = StandInInterrupts(v.Dims, kernel(cat), v.Steps)
			case vnMode:
				r, err = StandIn(v.Dims, bgl.VirtualNodeMode, kernel(cat), v.Steps)
			default:
				r, err = StandIn(v.Dims, bgl.CoprocessorMode, kernel(cat), v.Steps)
			}
			return float64(r.Step) / float64(sim.MS), err
		})
	pairs := func(pts []paper.Point) (slow, total []float64, text []string) {
		for _, name := range names {
			var co, vn float64
			for _, p := range pts {
				if p.Category == name && p.Scheme == coMode {
					co = p.Y
				} else if p.Category == name && p.Scheme == vnMode {
					vn = p.Y
				}
			}
			if co <= 0 || vn <= 0 {
				slow, total = append(slow, math.NaN()), append(total, math.NaN())
				continue
			}
			slow = append(slow, vn/co-1)
			total = append(total, 2*co/vn)
			text = append(text, fmt.Sprintf("%s %.1f %% (%.2f×)", name, 100*(vn/co-1), 2*co/vn))
		}
		return slow, total, text
	}
	return &paper.Figure{
		Name: "5a",
		Title: fmt.Sprintf("Figure 5a's stand-in: compute-bound kernels with a 3D halo exchange on %d×%d×%d nodes, coprocessor mode (%d tasks) against virtual node mode (%d tasks), per task",
			v.Dims[0], v.Dims[1], v.Dims[2], v.Dims[0]*v.Dims[1]*v.Dims[2], 2*v.Dims[0]*v.Dims[1]*v.Dims[2]),
		Custom: c,
		PointClaims: []paper.PointClaim{
			{Text: "B15 per-task slowdown in virtual node mode", Paper: "2–20 % (L194)", Tolerance: "0–25 % for every kernel",
				Measure: func(pts []paper.Point) (string, bool) {
					slow, _, text := pairs(pts)
					ok := len(slow) > 0
					for _, s := range slow {
						ok = ok && s >= 0 && s <= 0.25
					}
					return strings.Join(text, ", "), ok
				}},
			{Text: "B15 total throughput, virtual node over coprocessor mode", Paper: "< 2× (L193)", Tolerance: "> 1.6× for every kernel",
				Measure: func(pts []paper.Point) (string, bool) {
					_, total, _ := pairs(pts)
					ok := len(total) > 0
					lo, hi := math.Inf(1), math.Inf(-1)
					for _, x := range total {
						ok = ok && x > 1.6
						lo, hi = min(lo, x), max(hi, x)
					}
					return fmt.Sprintf("%.2f× to %.2f×", lo, hi), ok
				}},
			{Text: "L94 interrupts: a task a node, interrupt-driven, against the coprocessor's help", Paper: "no number (L94: ~103 cycles a context switch; L135–L137: the coprocessor receives)", Tolerance: "slower a step than coprocessor mode, every kernel",
				Measure: func(pts []paper.Point) (string, bool) {
					var text []string
					ok := len(names) > 0
					for _, name := range names {
						var co, irq float64
						for _, p := range pts {
							if p.Category == name && p.Scheme == coMode {
								co = p.Y
							} else if p.Category == name && p.Scheme == irqMode {
								irq = p.Y
							}
						}
						if co <= 0 || irq <= 0 {
							ok = false
							continue
						}
						ok = ok && irq > co
						text = append(text, fmt.Sprintf("%s %+.1f %%", name, 100*(irq/co-1)))
					}
					return strings.Join(text, ", "), ok
				}},
		},
	}
}
