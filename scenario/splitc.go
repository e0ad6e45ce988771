package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/workload"
	"github.com/aaemu/aaemu/workload/splitc"
)

// KindSplitC is a Split-C application stand-in over Active Messages II
// (seed 000, docs/am2.md): workload.splitc.
const KindSplitC = "splitc"

// SplitCSpec is workload.splitc: one of seed 000's application stand-ins
// (workload/splitc) on the machine's first nodes, every rank an AM-II
// endpoint. Its schemes are AM-II's polling policies, one experiment each.
// Every key's 0 is the default the comment gives.
type SplitCSpec struct {
	// App is the run: fft (3D FFT), con-comm, con-comp (connected
	// components), em3d-naive or em3d-good (EM3D's two layouts).
	App string `yaml:"app" json:"app"`
	// Nodes the ranks run on, the first of the machine's (0: every node;
	// 1: one SMP) and ranks a node (0: every core).
	Nodes        int `yaml:"nodes" json:"nodes"`
	ProcsPerNode int `yaml:"procs_per_node" json:"procs_per_node"`
	// The inputs: the 3D FFT's cube side (a power of two 2..1024, a
	// multiple of the ranks), CON's block side a rank (3D comm-bound, 2D
	// comp-bound), EM3D's nodes a rank and its steps.
	FFTN        int `yaml:"fft_n" json:"fft_n"`
	CONCommSide int `yaml:"con_comm_side" json:"con_comm_side"`
	CONCompSide int `yaml:"con_comp_side" json:"con_comp_side"`
	EM3DNodes   int `yaml:"em3d_nodes" json:"em3d_nodes"`
	EM3DSteps   int `yaml:"em3d_steps" json:"em3d_steps"`
	// Schemes are the polling policies, each an experiment: adaptive,
	// 1/k (k 1..256), shm-only or net-only (none: adaptive).
	Schemes []string `yaml:"schemes" json:"schemes"`
	// The endpoints' queues: packet slots and 8 kB bulk blocks of each
	// shared-memory queue (0: 256 and 16), the network's bulk blocks of a
	// channel (0: 4), staging blocks of an endpoint (0: 2) and requests
	// taken from the NIU ahead of running them (0: 32).
	Slots     int `yaml:"slots" json:"slots,omitempty"`
	Blocks    int `yaml:"blocks" json:"blocks,omitempty"`
	NetBlocks int `yaml:"net_blocks" json:"net_blocks,omitempty"`
	Staging   int `yaml:"staging" json:"staging,omitempty"`
	Pending   int `yaml:"pending" json:"pending,omitempty"`
	// PollGap is the cycles a waiting rank computes between two empty
	// polls (0: 32).
	PollGap int `yaml:"poll_gap" json:"poll_gap,omitempty"`
}

// splitCApps are the runs by their scenario names, in the paper's order.
var splitCApps = []struct {
	name string
	app  splitc.App
}{{"fft", splitc.FFT3D}, {"con-comm", splitc.CONComm}, {"con-comp", splitc.CONComp}, {"em3d-naive", splitc.EM3DNaive}, {"em3d-good", splitc.EM3DGood}}

func splitCAppNames() []string {
	var l []string
	for _, a := range splitCApps {
		l = append(l, a.name)
	}
	return l
}

func splitCApp(name string) (splitc.App, bool) {
	for _, a := range splitCApps {
		if a.name == name {
			return a.app, true
		}
	}
	return "", false
}

// defaultSplitC is a run of a second or less: the test suite's reduced
// inputs (docs/am2.md).
func defaultSplitC() SplitCSpec {
	return SplitCSpec{App: "fft", FFTN: 32, CONCommSide: 8, CONCompSide: 40, EM3DNodes: 250, EM3DSteps: 2}
}

// layout is the ranks' placement: nodes × ranks a node.
func (s *Scenario) splitCLayout() splitc.Layout {
	w := &s.Workload.SplitC
	l := splitc.Layout{Nodes: w.Nodes, PerNode: w.ProcsPerNode}
	if l.Nodes == 0 {
		l.Nodes = s.Machine.Nodes
	}
	if l.PerNode == 0 {
		l.PerNode = s.Machine.Cores
	}
	return l
}

func (w *SplitCSpec) sizes() splitc.Sizes {
	return splitc.Sizes{FFTN: w.FFTN, CommSide: w.CONCommSide, CompSide: w.CONCompSide, EM3DNodes: w.EM3DNodes, EM3DSteps: w.EM3DSteps}
}

// amSpec is AM-II's shape for a policy.
func (w *SplitCSpec) amSpec(policy am2.Policy) am2.Spec {
	spec := am2.DefaultSpec()
	if w.Slots != 0 {
		spec.Slots = w.Slots
	}
	if w.Blocks != 0 {
		spec.Blocks = w.Blocks
	}
	spec.Net = am2.NetSpec{Blocks: w.NetBlocks, Staging: w.Staging, Pending: w.Pending}
	spec.Poll = policy
	return spec
}

// checkSplitC checks workload.splitc beyond its ranges: the run, the
// ranks the machine holds and the stand-in's grid takes, the policies the
// layout can use, and the network they need.
func (s *Scenario) checkSplitC() (string, error) {
	w := &s.Workload.SplitC
	const k = "workload.splitc."
	app, ok := splitCApp(w.App)
	if !ok {
		return k + "app", notOneOf(w.App, "a Split-C run", splitCAppNames(), strings.Join(splitCAppNames(), ", "))
	}
	m := &s.Machine
	switch {
	case w.Nodes > m.Nodes:
		return k + "nodes", input.Errorf(fmt.Sprintf("0..%d: up to machine.nodes; 0: every node", m.Nodes), "%d is more than machine.nodes", w.Nodes)
	case w.ProcsPerNode > m.Cores:
		return k + "procs_per_node", input.Errorf(fmt.Sprintf("0..%d: up to machine.cores; 0: every core", m.Cores), "%d is more than machine.cores", w.ProcsPerNode)
	}
	l := s.splitCLayout()
	p := l.Procs()
	switch app {
	case splitc.FFT3D:
		if w.FFTN&(w.FFTN-1) != 0 {
			return k + "fft_n", input.Errorf(rangeOf[k+"fft_n"].text(), "%d is not a power of two", w.FFTN)
		}
		if w.FFTN%p != 0 {
			return k + "fft_n", input.Errorf(fmt.Sprintf("a power of two, a multiple of the %d ranks (nodes × procs_per_node)", p), "%d is not a multiple of the %d ranks", w.FFTN, p)
		}
	default:
		if p != 8 && p != 32 {
			return k + "nodes", input.Errorf("8 or 32 ranks (nodes × procs_per_node): the processor grids of seed 000's runs",
				"%d nodes × %d ranks is %d ranks, and %s has no processor grid for them", l.Nodes, l.PerNode, p, w.App)
		}
	}
	if u := uint64(w.EM3DNodes) * uint64(p); (app == splitc.EM3DNaive || app == splitc.EM3DGood) && u > 1<<22 {
		return k + "em3d_nodes", input.Errorf(fmt.Sprintf("at most %d nodes a rank on %d ranks (4194304 in all)", (1<<22)/p, p), "%d nodes a rank on %d ranks", w.EM3DNodes, p)
	}
	if x := m.StartX; x != nil {
		// Every endpoint's staging blocks take RDMA commands of its NIU:
		// the node's ranks share its NIUs in turn (am2.System).
		nius, staging, cmds := max(x.NIUs, 1), w.Staging, x.RDMACommands
		if staging == 0 {
			staging = 2
		}
		if cmds == 0 {
			cmds = startx.DefaultSpec().RDMACommands
		}
		if need := (l.PerNode + nius - 1) / nius * staging; need > cmds {
			return "machine.startx.rdma_commands", input.Errorf(fmt.Sprintf("%d..64: a command for each staging block of the ranks that share a NIU", need),
				"%d, but %d ranks a node on %d NIUs with %d staging blocks each need %d", cmds, l.PerNode, nius, staging, need)
		}
	}
	for i, sc := range w.policies() {
		key := fmt.Sprintf("%sschemes[%d]", k, i)
		pol, err := am2.ParsePolicy(sc)
		if err != nil {
			return key, notOneOf(sc, "a polling policy", []string{"adaptive", "1/8", "1/32", "shm-only", "net-only"}, "adaptive, 1/k (k 1..256), shm-only or net-only")
		}
		if slices.Index(w.policies(), sc) < i {
			return key, input.Errorf("each policy once", "%s is in the list twice", sc)
		}
		switch {
		case pol.Protocols == am2.ShmOnly && l.Nodes > 1:
			return key, input.Errorf("adaptive or 1/k with the ranks on more than one node; shm-only on one (workload.splitc.nodes: 1)",
				"shm-only reaches no other node, and the ranks are on %d", l.Nodes)
		case pol.Protocols == am2.NetOnly && l.PerNode > 1:
			return key, input.Errorf("adaptive or 1/k with more than one rank a node; net-only with one (workload.splitc.procs_per_node: 1)",
				"net-only reaches no rank of the sender's node, and a node has %d", l.PerNode)
		case pol.Protocols != am2.ShmOnly && m.StartX == nil:
			// Even on one node: a multi-protocol poll's network half is
			// what it costs (seed 000's Table 5).
			return "machine.startx", input.Errorf("a machine.startx section (the NIUs AM-II's network protocol runs on; docs/am2.md), or only shm-only on one node",
				"absent, but workload.splitc polls the network under %s", sc)
		}
	}
	return "", nil
}

// policies is the scheme list: the section's, or adaptive.
func (w *SplitCSpec) policies() []string {
	if len(w.Schemes) == 0 {
		return []string{"adaptive"}
	}
	return w.Schemes
}

// splitCMemory is the estimate's terms of workload.splitc: every
// endpoint's queue block and network channels, and the run's data in
// the simulated memories and the host's (a generous bound: every page
// touched).
func (s *Scenario) splitCMemory() []MemTerm {
	w := &s.Workload.SplitC
	l := s.splitCLayout()
	p, nodes := float64(l.Procs()), float64(l.Nodes)
	spec := w.amSpec(am2.Policy{})
	blocks := float64(w.NetBlocks)
	if blocks == 0 {
		blocks = 4
	}
	page := func(bytes float64) float64 { return bytes / 4096 * memPage }
	remote := p * (p - p/nodes) // endpoint pairs on two nodes
	terms := []MemTerm{
		{"AM-II's queue blocks (ranks × slots and blocks)", []string{"workload.splitc.blocks", "workload.splitc.slots", "workload.splitc.procs_per_node", "workload.splitc.nodes"},
			page(p * float64(spec.BlockBytes()))},
		{"AM-II's network channels (pairs of ranks on two nodes × net_blocks × 8 kB)", []string{"workload.splitc.net_blocks", "workload.splitc.nodes", "workload.splitc.procs_per_node"},
			page(remote * 2 * blocks * (am2.MaxBulk + am2.LineBytes))},
	}
	app, _ := splitCApp(w.App)
	var data float64
	var keys []string
	switch app {
	case splitc.FFT3D:
		n := float64(w.FFTN)
		// Four slabs a rank in memory, the rank's buffers and the result.
		data, keys = page(4*16*n*n*n)+3*16*n*n*n, []string{"workload.splitc.fft_n"}
	case splitc.CONComm:
		c := float64(w.CONCommSide)
		data, keys = p*c*c*c*(64+48), []string{"workload.splitc.con_comm_side"}
	case splitc.CONComp:
		c := float64(w.CONCompSide)
		data, keys = p*c*c*(64+48), []string{"workload.splitc.con_comp_side"}
	default:
		// A node's value, its edges' weights and sources, in memory and in
		// the generated graph, for E and H.
		data, keys = p*float64(w.EM3DNodes)*2*(16+20*24), []string{"workload.splitc.em3d_nodes"}
	}
	return append(terms, MemTerm{"the run's data (" + w.App + ")", append(keys, "workload.splitc.procs_per_node", "workload.splitc.nodes"), data})
}

// buildSplitC starts the run of policy sch on the cluster: the result
// once the ranks are done, the run time and the stores counted, the
// stand-in's result checked against its serial computation.
func (s *Scenario) buildSplitC(c *aa.System, sch workload.Scheme) (func() WorkloadResult, func() float64, error) {
	w := &s.Workload.SplitC
	pol, err := am2.ParsePolicy(string(sch))
	if err != nil {
		return nil, nil, err
	}
	app, _ := splitCApp(w.App)
	l := s.splitCLayout()
	run, err := splitc.NewRun(app, l, w.sizes())
	if err != nil {
		return nil, nil, err
	}
	a, err := splitc.StartAM(c.Cluster, l, splitc.AMConfig{Spec: w.amSpec(pol), PollGap: w.PollGap}, run.Program)
	if err != nil {
		return nil, nil, err
	}
	res := func() WorkloadResult {
		r, err := a.Result()
		if err != nil {
			return WorkloadResult{Unit: "stores/s", Detail: err.Error()}
		}
		var sp splitc.Split
		var netPolls, backoffs uint64
		for i, cnt := range r.Counts {
			x := cnt.Split(l, i)
			sp.NetShort += x.NetShort
			sp.NetBulk += x.NetBulk
			sp.LocalShort += x.LocalShort
			sp.LocalBulk += x.LocalBulk
			netPolls += r.Stats[i].NetPolls
			backoffs += r.Stats[i].Backoffs
		}
		stores := sp.NetShort + sp.NetBulk + sp.LocalShort + sp.LocalBulk
		detail := fmt.Sprintf("%s on %s: %s, short messages %d network and %d local, bulk %d and %d, %d network polls, %d back-offs, %d barriers",
			run.App, l, r.Elapsed.Human(), sp.NetShort, sp.LocalShort, sp.NetBulk, sp.LocalBulk, netPolls, backoffs, r.Syncs)
		verified := true
		if err := run.Check(); err != nil {
			detail, verified = detail+": "+err.Error(), false
		}
		return WorkloadResult{Rate: perSecond(float64(stores), uint64(r.Elapsed)), Unit: "messages/s", SimTimePS: uint64(r.Elapsed), Detail: detail, Verified: verified}
	}
	// The share of the ranks that have returned: the stand-ins' stores
	// are not known before they run.
	progress := func() float64 { return float64(a.Finished()) / float64(l.Procs()) }
	return res, progress, nil
}
