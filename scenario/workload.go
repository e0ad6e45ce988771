package scenario

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// The workloads a scenario can run (workload.kind).
const (
	KindDHT        = "dht"
	KindCounter    = "counter"
	KindGetLog     = "getlog"
	KindCheckpoint = "checkpoint"
	KindXOR        = "xor"
	KindStream     = "stream"
	KindSort       = "sort"
)

// Kinds lists the workloads in the order the documentation gives them.
var Kinds = []string{KindDHT, KindCounter, KindGetLog, KindCheckpoint, KindXOR, KindStream, KindSort, KindSplitC}

// The scenario sections of the workloads other than the DHT. Processes
// per node default to the machine's cores.
type (
	// CounterSpec: the access counter (workload.SetupCounter).
	CounterSpec struct {
		Elements int      `yaml:"elements" json:"elements"`             // 1..2^20
		Accesses int      `yaml:"accesses" json:"accesses"`             // 1..10000000 per source process
		Procs    int      `yaml:"procs_per_node" json:"procs_per_node"` // 0..machine.cores
		Schemes  []string `yaml:"schemes" json:"schemes"`
	}
	// GetLogSpec: the logging of gets (workload.SetupGetLog).
	GetLogSpec struct {
		Gets    int      `yaml:"gets" json:"gets"`                     // 1..10000000 per process
		Words   int      `yaml:"words" json:"words"`                   // 1..512
		Procs   int      `yaml:"procs_per_node" json:"procs_per_node"` // 0..machine.cores
		Schemes []string `yaml:"schemes" json:"schemes"`
	}
	// CheckpointSpec: incremental checkpointing (workload.SetupCheckpoint; AA only).
	CheckpointSpec struct {
		Pages  int `yaml:"pages" json:"pages"`   // 1..65536
		Epochs int `yaml:"epochs" json:"epochs"` // 1..100000
		Puts   int `yaml:"puts" json:"puts"`     // 0..10000000 per epoch
	}
	// XORSpec: the XOR checksum checkpoint (workload.SetupXORCheckpoint).
	XORSpec struct {
		Words   int      `yaml:"words" json:"words"` // 1..131072
		Schemes []string `yaml:"schemes" json:"schemes"`
	}
	// StreamSpec: the streaming microbenchmark (workload.SetupStream); its
	// schemes are the IOMMU modes, no-iommu and e-iommu.
	StreamSpec struct {
		Op          string   `yaml:"op" json:"op"`                   // write or send
		MsgBytes    int      `yaml:"msg_bytes" json:"msg_bytes"`     // 1..1 MiB, × messages ≤ 1 GiB
		Messages    int      `yaml:"messages" json:"messages"`       // 2..2^30
		Outstanding int      `yaml:"outstanding" json:"outstanding"` // 1..256
		Schemes     []string `yaml:"schemes" json:"schemes"`
	}
	// SortSpec: the fault-tolerant parallel sort (workload.SetupSort).
	SortSpec struct {
		Keys    int      `yaml:"keys" json:"keys"`                     // nodes × procs..2^20 per process
		Procs   int      `yaml:"procs_per_node" json:"procs_per_node"` // 0..machine.cores
		Schemes []string `yaml:"schemes" json:"schemes"`
	}
)

// workloadSchemes are the schemes each workload knows.
var workloadSchemes = map[string][]workload.Scheme{
	KindCounter:    {workload.NoCnt, workload.AAPoll, workload.RMA, workload.AKV, workload.Allreduce},
	KindGetLog:     {workload.NoFT, workload.AAPoll, workload.RMA},
	KindCheckpoint: {workload.AAPoll},
	KindXOR:        {workload.AASP, workload.RMA},
	KindStream:     {workload.IOMMUNone, workload.IOMMUExtended},
	KindSort:       {workload.NoFT, workload.AAPoll, workload.AM, workload.RMA},
}

// defaultWorkloads are the sections' defaults: small runs of a second or
// less, every scheme.
func defaultWorkloads(w *WorkloadSpec) {
	w.Kind = KindDHT
	w.Counter = CounterSpec{Elements: 4096, Accesses: 100}
	w.GetLog = GetLogSpec{Gets: 50, Words: 64}
	w.Checkpoint = CheckpointSpec{Pages: 64, Epochs: 3, Puts: 20}
	w.XOR = XORSpec{Words: 512}
	w.Stream = StreamSpec{Op: "write", MsgBytes: 4096, Messages: 128, Outstanding: 1}
	w.Sort = SortSpec{Keys: 4096}
	w.SplitC = defaultSplitC()
}

// schemes is the workload's scheme list: the section's, or every scheme
// when it names none.
func (w *WorkloadSpec) schemes() []string {
	var l []string
	switch w.Kind {
	case KindCounter:
		l = w.Counter.Schemes
	case KindGetLog:
		l = w.GetLog.Schemes
	case KindXOR:
		l = w.XOR.Schemes
	case KindStream:
		l = w.Stream.Schemes
	case KindSort:
		l = w.Sort.Schemes
	case KindSplitC:
		return w.SplitC.policies()
	}
	if len(l) == 0 {
		for _, s := range workloadSchemes[w.Kind] {
			l = append(l, string(s))
		}
	}
	return l
}

// checkWorkload validates the section of a workload other than the DHT
// beyond the ranges: what depends on other keys, and its schemes. It
// returns the key at fault.
func (s *Scenario) checkWorkload() (string, error) {
	w := &s.Workload
	if w.Kind == KindSplitC {
		return s.checkSplitC()
	}
	k := "workload." + w.Kind + "."
	procs := func(v int) (string, error) {
		if v > s.Machine.Cores {
			return k + "procs_per_node", input.Errorf(fmt.Sprintf("0..%d: up to machine.cores; 0: every core", s.Machine.Cores), "%d is more than machine.cores", v)
		}
		return "", nil
	}
	var checks []func() (string, error)
	switch w.Kind {
	case KindCounter:
		checks = append(checks, func() (string, error) { return procs(w.Counter.Procs) })
	case KindGetLog:
		checks = append(checks, func() (string, error) { return procs(w.GetLog.Procs) })
	case KindStream:
		checks = append(checks,
			func() (string, error) {
				if _, err := workload.ParseStreamOp(w.Stream.Op); err != nil {
					return k + "op", notOneOf(w.Stream.Op, "a stream operation", []string{"write", "send"}, "write: RDMA WRITEs; send: SENDs")
				}
				return "", nil
			},
			func() (string, error) {
				st := w.Stream
				if b := uint64(st.MsgBytes) * uint64(st.Messages); b > 1<<30 {
					return k + "messages", input.Errorf("messages × msg_bytes at most 1 GiB", "%d messages of %d B are %d B", st.Messages, st.MsgBytes, b)
				}
				if sq := s.ClusterSpec().SQSize; st.Outstanding > sq {
					return k + "outstanding", input.Errorf(fmt.Sprintf("1..%d: the send-queue size", sq), "%d is more than the send queue holds", st.Outstanding)
				}
				cfg := workload.StreamConfig{MsgBytes: st.MsgBytes, Messages: st.Messages, Outstanding: st.Outstanding}
				if key, err := cfg.Check(s.ClusterSpec().SQSize); err != nil {
					return k + key, input.Errorf("", "%v", err)
				}
				return "", nil
			})
	case KindSort:
		checks = append(checks,
			func() (string, error) { return procs(w.Sort.Procs) },
			func() (string, error) {
				p := w.Sort.Procs
				if p == 0 {
					p = s.Machine.Cores
				}
				if n := s.Machine.Nodes * p; w.Sort.Keys < n {
					return k + "keys", input.Errorf(fmt.Sprintf("%d..%d: a key for every process, machine.nodes × procs_per_node, or more", n, 1<<20), "%d keys per process are fewer than the %d processes", w.Sort.Keys, n)
				}
				cfg := workload.SortConfig{Keys: w.Sort.Keys, Procs: p}
				if key, err := cfg.Check(s.Machine.Nodes, s.Machine.Cores); err != nil {
					return k + key, input.Errorf("", "%v", err)
				}
				return "", nil
			})
	}
	checks = append(checks, func() (string, error) {
		l := w.schemes()
		known := workloadSchemes[w.Kind]
		names := make([]string, len(known))
		for i, s := range known {
			names[i] = string(s)
		}
		for i, sc := range l {
			key := fmt.Sprintf("%sschemes[%d]", k, i)
			if !slices.Contains(known, workload.Scheme(sc)) {
				return key, notOneOf(sc, "a scheme of the "+w.Kind+" workload", names, strings.Join(names, ", "))
			}
			if slices.Index(l, sc) < i {
				return key, input.Errorf("each scheme once", "%s is in the list twice", sc)
			}
			if workload.Scheme(sc).Active() && s.Machine.IOMMU.Mode == workload.IOMMUNone {
				return "machine.iommu.mode", input.Errorf(workload.IOMMUExtended+" for the AA schemes", "%s, but workload.%s.schemes has %s, which needs the extended IOMMU", workload.IOMMUNone, w.Kind, sc)
			}
		}
		return "", nil
	})
	for _, c := range checks {
		if key, err := c(); err != nil {
			return key, err
		}
	}
	return "", nil
}

// WorkloadResult is one experiment of a workload other than the DHT: its
// rate in the workload's own unit, the simulated time the rate is taken
// over, the NICs' energy, and what the workload's own check found.
type WorkloadResult struct {
	Workload   string          `json:"workload"`
	Scheme     workload.Scheme `json:"scheme"`
	Rate       float64         `json:"rate"`
	Unit       string          `json:"unit"`
	SimTimePS  uint64          `json:"sim_time_ps"`
	NICEnergyJ float64         `json:"nic_energy_j"`
	// RouterEnergyJ: the switches' energy for the bytes they forwarded.
	RouterEnergyJ float64 `json:"router_energy_j"`
	Detail        string  `json:"detail"`
	Verified      bool    `json:"verified"`
}

// Workload is a workload set up on a cluster: run the cluster, then read
// the result.
type Workload interface{ Result() WorkloadResult }

// workloadFunc adapts closures to Workload.
type workloadFunc struct {
	result   func() WorkloadResult
	progress func() float64
}

func (f workloadFunc) Result() WorkloadResult { return f.result() }

// Progress is the share of the workload's operations its processes have
// started, 0..1 (for a progress display).
func (f workloadFunc) Progress() float64 { return f.progress() }

func perSecond(n float64, ps uint64) float64 { return n / (float64(max(ps, 1)) / 1e12) }

// BuildWorkload makes the cluster and the workload (not the DHT: see Build)
// of one experiment on engine e.
func (s *Scenario) BuildWorkload(e *sim.Engine, x Experiment) (*aa.System, Workload, error) {
	w := &s.Workload
	spec := s.ClusterSpec()
	if w.Kind == KindStream {
		spec.IOMMU.Bypass = x.Scheme == workload.IOMMUNone // the modes are the stream's schemes
	}
	c, err := aa.New(e, spec)
	if err != nil {
		return nil, nil, err
	}
	procs := func(p int) int {
		if p == 0 {
			return s.Machine.Cores
		}
		return p
	}
	sch, seed := x.Scheme, s.Seed
	var res func() WorkloadResult
	var progress func() float64
	switch w.Kind {
	case KindCounter:
		k, err := workload.SetupCounter(c, workload.CounterConfig{Scheme: sch, Elements: w.Counter.Elements, Accesses: w.Counter.Accesses, Procs: procs(w.Counter.Procs), Seed: seed})
		if err != nil {
			return nil, nil, err
		}
		progress = k.Progress
		res = func() WorkloadResult {
			r := k.Result()
			return WorkloadResult{Rate: r.AccessesPerSec, Unit: "accesses/s", SimTimePS: r.SimTimePS,
				Detail: strings.TrimSpace(fmt.Sprintf("%d accesses %s", r.Accesses, r.Problem)), Verified: r.Verified}
		}
	case KindGetLog:
		g, err := workload.SetupGetLog(c, workload.GetLogConfig{Scheme: sch, Gets: w.GetLog.Gets, Procs: procs(w.GetLog.Procs), Words: w.GetLog.Words, Seed: seed})
		if err != nil {
			return nil, nil, err
		}
		progress = g.Progress
		res = func() WorkloadResult {
			r := g.Result()
			return WorkloadResult{Rate: r.GetsPerSec, Unit: "gets/s", SimTimePS: r.SimTimePS,
				Detail: strings.TrimSpace(fmt.Sprintf("%d gets, %.0f wire bytes per get %s", r.Gets, r.WireBytes, r.Problem)), Verified: r.Verified}
		}
	case KindCheckpoint:
		k, err := workload.SetupCheckpoint(c, workload.CheckpointConfig{Pages: w.Checkpoint.Pages, Epochs: w.Checkpoint.Epochs, Puts: w.Checkpoint.Puts, Seed: seed})
		if err != nil {
			return nil, nil, err
		}
		progress = k.Progress
		res = func() WorkloadResult {
			r := k.Result()
			return WorkloadResult{Rate: perSecond(float64(r.Records), r.SimTimePS), Unit: "puts/s", SimTimePS: r.SimTimePS,
				Detail:   strings.TrimSpace(fmt.Sprintf("pages copied per checkpoint %v of %d %s", r.PagesCopied, w.Checkpoint.Pages, strings.Join(r.Problems, "; "))),
				Verified: r.Verified}
		}
	case KindXOR:
		k, err := workload.SetupXORCheckpoint(c, workload.XORConfig{Scheme: sch, Words: w.XOR.Words, Seed: seed})
		if err != nil {
			return nil, nil, err
		}
		progress = k.Progress
		res = func() WorkloadResult {
			r := k.Result()
			return WorkloadResult{Rate: perSecond(float64(r.Processes*r.Words), r.SimTimePS), Unit: "words/s", SimTimePS: r.SimTimePS,
				Detail:   strings.TrimSpace(fmt.Sprintf("%d TLPs at the checksum's node, %d remote ops %s", r.TargetTLPs, r.RemoteOps, r.Problem)),
				Verified: r.Verified}
		}
	case KindStream:
		op, err := workload.ParseStreamOp(w.Stream.Op)
		if err != nil {
			return nil, nil, err
		}
		k, err := workload.SetupStream(c, workload.StreamConfig{Op: op, MsgBytes: w.Stream.MsgBytes, Messages: w.Stream.Messages, Outstanding: w.Stream.Outstanding, Seed: seed})
		if err != nil {
			return nil, nil, err
		}
		progress = k.Progress
		res = func() WorkloadResult {
			r := k.Result()
			return WorkloadResult{Rate: r.BytesPerSec, Unit: "B/s", SimTimePS: r.SimTimePS,
				Detail: strings.TrimSpace(fmt.Sprintf("%d %ss of %d B, %d in flight, first to last arrival %s, target FNV-1a %#x %s",
					r.Messages, r.Op, r.MsgBytes, r.Outstanding, sim.Tick(r.LastPS-r.FirstPS).Human(), r.Checksum, r.Problem)),
				Verified: r.Verified}
		}
	case KindSort:
		k, err := workload.SetupSort(c, workload.SortConfig{Scheme: sch, Keys: w.Sort.Keys, Procs: procs(w.Sort.Procs), Seed: seed})
		if err != nil {
			return nil, nil, err
		}
		progress = k.Progress
		res = func() WorkloadResult {
			r := k.Result()
			return WorkloadResult{Rate: perSecond(float64(r.RemoteBytes), r.CommTimePS), Unit: "B/s", SimTimePS: r.CommTimePS,
				Detail: strings.TrimSpace(fmt.Sprintf("%d keys, %d bytes got from other nodes, %d on the wire (per NIC %v), %d logged %s",
					r.Keys, r.RemoteBytes, r.WireBytes, r.SentBytes, r.LogBytes, r.Problem)),
				Verified: r.Verified}
		}
	case KindSplitC:
		if res, progress, err = s.buildSplitC(c, sch); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("workload %q is not one BuildWorkload runs", w.Kind)
	}
	return c, workloadFunc{result: func() WorkloadResult {
		r := res()
		r.Workload, r.Scheme = w.Kind, sch
		r.NICEnergyJ = c.NICEnergy(float64(r.SimTimePS) / 1e12)
		r.RouterEnergyJ = c.RouterEnergy()
		return r
	}, progress: progress}, nil
}

// Outcome is one experiment's checked result: the DHT's, or another
// workload's.
type Outcome struct {
	DHT      workload.DHTResult
	Workload WorkloadResult
}

// Prepared is one experiment built on its engine, ready to run.
type Prepared struct {
	Sys *aa.System
	// Finish reads the result after the run: it fails, saying what went
	// wrong, if the processes did not finish by end or the workload's own
	// check did not pass.
	Finish func(end sim.Tick) (Outcome, error)
	// Progress is the share of the workload's operations its processes
	// have started, 0..1: for a progress display, read between slices.
	Progress func() float64
}

// Prepare builds one experiment of whatever workload the scenario runs on
// engine e. Run the cluster, then call finish: it reads the result and
// fails, saying what went wrong, if the processes did not finish by end or
// the workload's own check did not pass.
func (s *Scenario) Prepare(e *sim.Engine, x Experiment) (c *aa.System, finish func(end sim.Tick) (Outcome, error), err error) {
	p, err := s.PrepareRun(e, x)
	return p.Sys, p.Finish, err
}

// PrepareRun is Prepare with the workload's progress.
func (s *Scenario) PrepareRun(e *sim.Engine, x Experiment) (Prepared, error) {
	p, err := s.prepareRun(e, x)
	if err == nil {
		p.Sys.Cluster.SetPartitions(s.Partitions)
		p.Sys.Cluster.SetPollSleep(!s.CheckEveryPoll)
		// Once the result is read, the processes that did not finish (a
		// daemon, a run stopped early) end and free the cluster.
		finish := p.Finish
		p.Finish = func(end sim.Tick) (Outcome, error) {
			o, err := finish(end)
			p.Sys.Cluster.Close()
			return o, err
		}
	}
	return p, err
}

func (s *Scenario) prepareRun(e *sim.Engine, x Experiment) (Prepared, error) {
	if s.Workload.Kind == KindDHT {
		c, w, err := s.Build(e, x)
		if err != nil {
			return Prepared{}, err
		}
		what := fmt.Sprintf("%s at %.0f%% collisions", x.Scheme, 100*x.Collisions)
		return Prepared{Sys: c, Progress: w.Progress, Finish: func(end sim.Tick) (Outcome, error) {
			if !c.AppsDone() {
				return Outcome{}, fmt.Errorf("%s %s", what, c.NotFinished(end))
			}
			r := w.Result()
			if !r.Verified {
				return Outcome{}, fmt.Errorf("%s: the hashtable is wrong: %v%s", what, w.Verify(), transport(c))
			}
			return Outcome{DHT: r}, nil
		}}, nil
	}
	c, w, err := s.BuildWorkload(e, x)
	if err != nil {
		return Prepared{}, err
	}
	what := fmt.Sprintf("workload %s, %s", s.Workload.Kind, x.Scheme)
	var progress func() float64
	if p, ok := w.(interface{ Progress() float64 }); ok {
		progress = p.Progress
	}
	return Prepared{Sys: c, Progress: progress, Finish: func(end sim.Tick) (Outcome, error) {
		if !c.AppsDone() {
			return Outcome{}, fmt.Errorf("%s %s", what, c.NotFinished(end))
		}
		r := w.Result()
		if !r.Verified {
			return Outcome{}, fmt.Errorf("%s: the result is wrong: %s%s", what, r.Detail, transport(c))
		}
		return Outcome{Workload: r}, nil
	}}, nil
}

// Label names the experiment: its scheme, and a DHT's collision ratio.
func (x Experiment) Label(dht bool) string {
	if !dht {
		return string(x.Scheme)
	}
	return fmt.Sprintf("%s at %.0f%% collisions", x.Scheme, 100*x.Collisions)
}

// transport is what the network went through, when it explains a run that
// failed: lost frames, retransmissions, failed work requests, the queue
// pairs left with work, and DMA requests an IOMMU blocked.
func transport(c *aa.System) string {
	s := ""
	for _, r := range []string{c.TransportReport(4), c.FaultReport(4)} {
		if r != "" {
			s += "\n  " + r
		}
	}
	return s
}
