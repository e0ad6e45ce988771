package mpi

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Config describes a run: where the ranks run, the transports and their
// protocol parameters, the software overheads and the collectives. Zero
// fields take their defaults.
type Config struct {
	// Nodes is how many of the cluster's nodes run ranks (default: all);
	// PerNode how many ranks each runs (default: the cluster's cores per
	// node). Ranks are placed in blocks: rank r on node r/PerNode, core
	// r%PerNode.
	Nodes, PerNode int
	// Place, when set, places Ranks ranks instead (one per core).
	Place func(rank int) Place
	Ranks int

	Shm  ShmConfig  // the shared-memory transport
	RDMA RDMAConfig // the RDMA transport
	// Transports replaces the default transports (Shm, then RDMA): a pair
	// of ranks talks over the first that reaches.
	Transports []TransportMaker

	// CallCycles is the software overhead of entering an MPI call (default
	// 100 core cycles); MatchCycles that of examining one queue entry when
	// matching (default 10). Negative: none.
	CallCycles, MatchCycles int

	// Collectives implements the collective operations (default
	// Algorithms: binomial, dissemination, recursive doubling, pairwise).
	Collectives Collectives
	// PollPolicy makes a rank's polling policy (default: PollAll).
	PollPolicy func(rank int) PollPolicy
	// IdlePS is how long a rank waiting in an MPI call pauses after a
	// progress pass that found nothing, before the next (default: its
	// core's PollIntervalPS, 50 ns): the loop's own time, and it bounds
	// the events a long wait costs the simulation when polls are cheap.
	// 1 ps is a spin.
	IdlePS sim.Tick

	// Channel, if set, sees every call a rank makes into a transport, as
	// MPICH's channel interface sees them (seed 001's Figure 3): each
	// packet sent (Kind Eager with its data bytes, or a control packet RTS,
	// CTS, FIN with none) and each rendezvous's data transfer (Kind Data,
	// the message's bytes, once however many puts or gets of
	// Params.ChunkBytes the transport moves them in), in the order the
	// ranks make them.
	Channel func(ChannelCall)

	// Limit is the simulated time after which a run that has not finished
	// stops with an error (default 10 s).
	Limit sim.Tick
	// Stop, if set, is asked between slices of simulated time: true ends
	// the run there with ErrStopped (a command interrupted).
	Stop func() bool
}

// ErrStopped is the error of a run that Config.Stop ended.
var ErrStopped = errors.New("mpi: the run was stopped")

func (c Config) withDefaults(h Host) Config {
	if c.Nodes == 0 {
		c.Nodes = h.Nodes()
	}
	if c.PerNode == 0 {
		c.PerNode = h.CoresPerNode()
	}
	switch {
	case c.CallCycles == 0:
		c.CallCycles = 100
	case c.CallCycles < 0:
		c.CallCycles = 0
	}
	switch {
	case c.MatchCycles == 0:
		c.MatchCycles = 10
	case c.MatchCycles < 0:
		c.MatchCycles = 0
	}
	if c.Collectives == nil {
		c.Collectives = Algorithms{}
	}
	if c.PollPolicy == nil {
		c.PollPolicy = func(int) PollPolicy { return PollAll{} }
	}
	if c.Limit == 0 {
		c.Limit = 10 * sim.S
	}
	if _, ok := h.(clusterHost); ok && c.Transports == nil {
		c.Transports = []TransportMaker{Shm(c.Shm), RDMA(c.RDMA)}
	}
	return c
}

// places lays the ranks out.
func (c Config) places(h Host) ([]Place, error) {
	nodes, cores := h.Nodes(), h.CoresPerNode()
	var ps []Place
	if c.Place != nil {
		if c.Ranks < 1 {
			return nil, fmt.Errorf("mpi: a placement function needs Ranks (%d)", c.Ranks)
		}
		for r := 0; r < c.Ranks; r++ {
			ps = append(ps, c.Place(r))
		}
	} else {
		if c.Nodes < 1 || c.Nodes > nodes {
			return nil, fmt.Errorf("mpi: %d nodes, the cluster has %d", c.Nodes, nodes)
		}
		if c.PerNode < 1 || c.PerNode > cores {
			return nil, fmt.Errorf("mpi: %d ranks per node, the nodes have %d cores", c.PerNode, cores)
		}
		for r := 0; r < c.Nodes*c.PerNode; r++ {
			ps = append(ps, Place{Node: r / c.PerNode, Core: r % c.PerNode})
		}
	}
	seen := map[Place]int{}
	for r, p := range ps {
		if p.Node < 0 || p.Node >= nodes || p.Core < 0 || p.Core >= cores {
			return nil, fmt.Errorf("mpi: rank %d on %v, outside the cluster (%d nodes × %d cores)", r, p, nodes, cores)
		}
		if o, dup := seen[p]; dup {
			return nil, fmt.Errorf("mpi: ranks %d and %d both on %v", o, r, p)
		}
		seen[p] = r
	}
	return ps, nil
}

// world is one run: the ranks and what they share.
type world struct {
	h        Host
	c        *machine.Cluster // nil on a machine that is not a cluster
	cfg      Config
	places   []Place
	trans    []Transport
	params   []Params
	ranks    []*rank
	inflight []int // per rank: packets sent to it it has not taken yet
	finished int
	aborted  *AbortError // the first rank that could not go on
	epoch    uint64      // counts every step any rank made (the deadlock detector's clock)
	ctxIDs   map[ctxKey]uint32
	nextCtx  uint32
	stats    []Stat
	colls    []CollStat
}

type ctxKey struct {
	parent uint32
	seq    int
	color  int
}

// context returns the context pair (point-to-point, collective) of the
// communicator the members of parent with this color make in their seq-th
// split: the same for every member, whoever asks first.
func (w *world) context(parent uint32, seq, color int) (uint32, error) {
	k := ctxKey{parent, seq, color}
	if id, ok := w.ctxIDs[k]; ok {
		return id, nil
	}
	if w.nextCtx+1 > MaxCtx {
		return 0, fmt.Errorf("mpi: out of communicator contexts (%d)", MaxCtx/2)
	}
	id := w.nextCtx
	w.nextCtx += 2
	w.ctxIDs[k] = id
	return id, nil
}

// Result is what a run reports.
type Result struct {
	Ranks  int
	Places []Place
	// End is when the last rank finished; Finish when each did.
	End    sim.Tick
	Finish []sim.Tick
	// Stats counts the messages each transport carried by protocol.
	Stats []Stat
	// Transports names the run's transports in order.
	Transports []string
	// Collectives counts the collective operations by the implementation
	// that did them, where the collectives choose one (BGL).
	Collectives []CollStat
}

// CollStat is how many operations of one collective call an
// implementation did, and their bytes (each operation counted once, by
// the communicator's rank 0).
type CollStat struct {
	Call, Impl string
	Calls      uint64
	Bytes      uint64
}

func (w *world) countColl(call, impl string, bytes int) {
	for i := range w.colls {
		if s := &w.colls[i]; s.Call == call && s.Impl == impl {
			s.Calls++
			s.Bytes += uint64(bytes)
			return
		}
	}
	w.colls = append(w.colls, CollStat{Call: call, Impl: impl, Calls: 1, Bytes: uint64(bytes)})
}

// ChannelCall is one call of a rank into a transport (Config.Channel).
type ChannelCall struct {
	Rank, Peer int
	Transport  string
	Kind       Kind
	Bytes      int // the data it moves (0 for a control packet)
}

// Stat is the messages and bytes of one protocol over one transport.
type Stat struct {
	Transport string
	Protocol  string // "eager" or "rendezvous-" + the mode
	Messages  uint64
	Bytes     uint64
}

func (w *world) count(t int, proto string, bytes int) {
	name := w.trans[t].Name()
	for i := range w.stats {
		if s := &w.stats[i]; s.Transport == name && s.Protocol == proto {
			s.Messages++
			s.Bytes += uint64(bytes)
			return
		}
	}
	w.stats = append(w.stats, Stat{Transport: name, Protocol: proto, Messages: 1, Bytes: uint64(bytes)})
}

// DeadlockError reports a run whose ranks all wait in MPI calls with
// nothing left in flight that could ever wake them, or that ran out of
// time: each line says what a rank waits on.
type DeadlockError struct {
	At      sim.Tick
	Timeout bool // the run reached Config.Limit
	Waits   []string
}

func (e *DeadlockError) Error() string {
	what := "deadlock: every rank left waits in an MPI call and nothing is in flight"
	if e.Timeout {
		what = "the run did not finish before its time limit"
	}
	return fmt.Sprintf("mpi: %s (at %s):\n  %s", what, e.At.Human(), strings.Join(e.Waits, "\n  "))
}

// AbortError reports a run that a rank aborted: its transport failed
// (a connection ran out of retries and flushed its work), or its program
// panicked.
type AbortError struct {
	Rank   int
	At     sim.Tick
	Reason string
}

func (e *AbortError) Error() string {
	return fmt.Sprintf("mpi: rank %d aborted the run at %s: %s", e.Rank, e.At.Human(), e.Reason)
}

// ErrDeadlock is what a DeadlockError is (errors.Is).
var ErrDeadlock = errors.New("mpi: deadlock")

// Is makes errors.Is(err, ErrDeadlock) true for a detected deadlock.
func (e *DeadlockError) Is(target error) bool { return target == ErrDeadlock && !e.Timeout }

// Run runs body as every rank's program on the cluster, each rank a
// process on its core, and simulates until all have finished (returning
// from body ends a rank, as MPI_Finalize: it first completes its pending
// requests). body gets the rank's world communicator. A run that
// deadlocks, or does not finish within Config.Limit, returns a
// *DeadlockError with what each rank waits on; the cluster's processes
// are then left where they stopped. One run per cluster.
func Run(c *machine.Cluster, cfg Config, body func(c *Comm)) (*Result, error) {
	return RunOn(clusterHost{c}, cfg, body)
}

// RunOn is Run on any Host. On a machine that is not a machine.Cluster,
// Config.Transports must be given (the default ones are the cluster's),
// and Comm.Node is nil.
func RunOn(c Host, cfg Config, body func(c *Comm)) (*Result, error) {
	w, err := newWorld(c, cfg)
	if err != nil {
		return nil, err
	}
	// The ranks of every node count into one world (finished ranks, an
	// abort, the statistics): its nodes run on one goroutine.
	c.Serial("mpi: the ranks of all nodes share the world's bookkeeping")
	for _, r := range w.ranks {
		r := r
		c.Core(r.place.Node, r.place.Core).Spawn(fmt.Sprintf("mpi.rank%d", r.id), func(p *cpu.Proc) {
			r.run(p, body)
		})
	}
	// A deadlock is declared when two checks a slice of simulated time
	// apart (5 µs) both find every rank stuck and no rank moved between
	// them: a rank's pass that has not reached the poll that would find
	// something is not mistaken for an idle one.
	deadlock, suspect, at, stopped := false, false, uint64(0), false
	c.Run(w.cfg.Limit, func() bool {
		if w.finished == len(w.ranks) || w.aborted != nil {
			return true
		}
		if w.cfg.Stop != nil && w.cfg.Stop() {
			stopped = true
			return true
		}
		stuck := w.stuck()
		deadlock = stuck && suspect && w.epoch == at
		suspect, at = stuck, w.epoch
		return deadlock
	})
	res := &Result{Ranks: len(w.ranks), Places: w.places, Stats: slices.Clone(w.stats), Collectives: slices.Clone(w.colls)}
	slices.SortFunc(res.Collectives, func(a, b CollStat) int {
		return strings.Compare(a.Call+"/"+a.Impl, b.Call+"/"+b.Impl)
	})
	for _, t := range w.trans {
		res.Transports = append(res.Transports, t.Name())
	}
	slices.SortFunc(res.Stats, func(a, b Stat) int {
		return strings.Compare(a.Transport+"/"+a.Protocol, b.Transport+"/"+b.Protocol)
	})
	for _, r := range w.ranks {
		res.Finish = append(res.Finish, r.finish)
		res.End = max(res.End, r.finish)
	}
	if w.aborted != nil {
		return res, w.aborted
	}
	if stopped {
		return res, ErrStopped
	}
	if w.finished < len(w.ranks) {
		return res, &DeadlockError{At: c.Now(), Timeout: !deadlock, Waits: w.report()}
	}
	return res, nil
}

func newWorld(h Host, cfg Config) (*world, error) {
	cfg = cfg.withDefaults(h)
	if len(cfg.Transports) == 0 {
		return nil, fmt.Errorf("mpi: no transports (a machine that is not a cluster has no default ones)")
	}
	ps, err := cfg.places(h)
	if err != nil {
		return nil, err
	}
	w := &world{h: h, cfg: cfg, places: ps, inflight: make([]int, len(ps)), ctxIDs: map[ctxKey]uint32{}, nextCtx: 2}
	if ch, ok := h.(clusterHost); ok {
		w.c = ch.c
	}
	s := &Setup{Cluster: w.c, Host: h, Places: ps}
	for _, mk := range cfg.Transports {
		t, err := mk(s)
		if err != nil {
			return nil, err
		}
		w.trans = append(w.trans, t)
		w.params = append(w.params, t.Params())
	}
	for r := range ps {
		w.ranks = append(w.ranks, newRank(w, r))
	}
	// Every pair must be reachable.
	for a := range ps {
		for b := range ps {
			if w.route(a, b) < 0 {
				return nil, fmt.Errorf("mpi: no transport from rank %d (%v) to rank %d (%v)", a, ps[a], b, ps[b])
			}
		}
	}
	return w, nil
}

// route is the transport from rank a to rank b, or -1.
func (w *world) route(a, b int) int {
	for i, t := range w.trans {
		if t.Reaches(w.places[a], w.places[b]) {
			return i
		}
	}
	return -1
}

// stuck reports whether every rank that has not finished waits in an MPI
// call, its last progress pass did nothing, nothing is in flight towards
// it and none of its transports has work under way: nothing can ever
// happen again.
func (w *world) stuck() bool {
	for _, r := range w.ranks {
		if r.finished {
			continue
		}
		if !r.blocked || !r.idle || w.inflight[r.id] > 0 || len(r.xfers) > 0 {
			return false
		}
		for _, ep := range r.eps {
			if ep != nil && ep.Busy() {
				return false
			}
		}
	}
	return true
}

// report says what each rank that has not finished is doing.
func (w *world) report() []string {
	var out []string
	for _, r := range w.ranks {
		switch {
		case r.finished:
			if n := w.inflight[r.id]; n > 0 {
				out = append(out, fmt.Sprintf("rank %d has finished with %d packet(s) sent to it not received", r.id, n))
			}
		case r.blocked:
			out = append(out, fmt.Sprintf("rank %d waits in %s", r.id, r.describe()))
		default:
			out = append(out, fmt.Sprintf("rank %d is running (not in a blocking MPI call)", r.id))
		}
	}
	return out
}
