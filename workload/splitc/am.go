package splitc

import (
	"errors"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/sim"
)

// AMConfig is how RunAM runs a program.
type AMConfig struct {
	Spec am2.Spec // the endpoints' queues (zero: am2.DefaultSpec)
	// PollGap is the cycles a waiting rank computes between two polls
	// that found nothing (default 32), so that a wait is not an event per
	// cycle; a message waits at most that long for its poll.
	PollGap int
	Limit   sim.Tick    // simulated time at most (default 100 s)
	Stop    func() bool // checked every slice of simulated time: end early
}

// AM-II handler indices of the runtime: the program's 1..Handlers-1, then
// the barrier's.
const (
	hUp   = Handlers     // child → parent: its subtree's counts and value
	hDown = Handlers + 1 // parent → child: the result
	hAck  = Handlers + 2 // the reply to every request
)

// AMResult is what a run measured.
type AMResult struct {
	// Elapsed is from the first rank leaving the program's first Sync
	// (where the handlers are installed) to the last rank returning.
	Elapsed sim.Tick
	Counts  []Counts    // by rank
	Stats   []am2.Stats // the ranks' endpoints
	Syncs   int         // Sync calls of rank 0
	Rounds  int         // barrier rounds of rank 0 (a Sync repeats its round until every store has run)
}

// ErrStopped is returned when Stop ended the run.
var ErrStopped = errors.New("splitc: stopped before the program finished")

type amRun struct {
	c      *machine.Cluster
	l      Layout
	cfg    AMConfig
	ranks  []*amRank
	failed error
	done   int
}

type upMsg struct {
	seq     uint64
	diff, v uint64
}

// amRank is a rank on the machine: an AM-II endpoint and its process.
type amRank struct {
	id       int
	rt       *amRun
	node     *machine.Node
	ep       *am2.Endpoint
	p        *cpu.Proc
	handlers [Handlers]Handler
	counts   Counts
	sent     uint64 // application stores sent
	recv     uint64 // application stores whose handler ran
	seq      uint64 // barrier rounds
	up       [2]upMsg
	down     upMsg
	syncs    int
	start    sim.Tick
	started  bool
	end      sim.Tick
}

// RunAM runs prog on cluster c, rank i on core i % l.PerNode of node
// i / l.PerNode, each an AM-II endpoint: StartAM, the cluster run until
// every rank is done (or cfg.Limit, or cfg.Stop), then the result.
func RunAM(c *machine.Cluster, l Layout, cfg AMConfig, prog Program) (*AMResult, error) {
	a, err := StartAM(c, l, cfg, prog)
	if err != nil {
		return nil, err
	}
	stopped := false
	c.Run(a.cfg.Limit, func() bool {
		if a.cfg.Stop != nil && a.cfg.Stop() {
			stopped = true
			return true
		}
		return a.Done()
	})
	defer c.Close()
	if stopped && a.failed == nil && a.done < len(a.ranks) {
		return nil, ErrStopped
	}
	return a.Result()
}

// AMRun is a program started on a machine by StartAM: run the cluster
// (until Done), then read Result.
type AMRun struct{ *amRun }

// StartAM sets prog up on cluster c as RunAM does — the AM-II system, an
// endpoint a rank, every rank's process spawned — without running the
// cluster: a caller that runs the machine itself (aaemu run) reads Result
// once Done holds.
func StartAM(c *machine.Cluster, l Layout, cfg AMConfig, prog Program) (*AMRun, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if l.Nodes > len(c.Nodes) {
		return nil, fmt.Errorf("splitc: layout of %d nodes on a machine of %d", l.Nodes, len(c.Nodes))
	}
	for n := 0; n < l.Nodes; n++ {
		if len(c.Nodes[n].Cores) < l.PerNode {
			return nil, fmt.Errorf("splitc: %d ranks per node on node %d of %d cores", l.PerNode, n, len(c.Nodes[n].Cores))
		}
	}
	if cfg.Spec == (am2.Spec{}) {
		cfg.Spec = am2.DefaultSpec()
	}
	if cfg.PollGap == 0 {
		cfg.PollGap = 32
	}
	if cfg.PollGap < 1 {
		return nil, fmt.Errorf("splitc: poll gap %d cycles, want ≥ 1", cfg.PollGap)
	}
	if cfg.Limit == 0 {
		cfg.Limit = 100 * sim.S
	}
	sys, err := am2.New(c, cfg.Spec)
	if err != nil {
		return nil, err
	}
	rt := &amRun{l: l, cfg: cfg, c: c}
	p := l.Procs()
	for i := 0; i < p; i++ {
		ep, err := sys.NewEndpoint(l.Node(i), 0x5c00_0000_0000+uint64(i))
		if err != nil {
			return nil, err
		}
		if ep.Name() != (am2.Name{Node: l.Node(i), Index: i % l.PerNode}) {
			return nil, fmt.Errorf("splitc: rank %d got endpoint %v: node %d has other endpoints", i, ep.Name(), l.Node(i))
		}
		rt.ranks = append(rt.ranks, &amRank{id: i, rt: rt, node: c.Nodes[l.Node(i)], ep: ep, counts: newCounts(p)})
	}
	for _, r := range rt.ranks {
		for _, d := range rt.ranks {
			if err := r.ep.Map(d.id, d.ep.Name(), d.ep.Tag()); err != nil {
				return nil, err
			}
		}
		if err := r.install(); err != nil {
			return nil, err
		}
	}
	for _, r := range rt.ranks {
		core := c.Nodes[l.Node(r.id)].Cores[r.id%l.PerNode]
		core.Spawn(fmt.Sprintf("splitc.rank%d", r.id), func(p *cpu.Proc) {
			r.p = p
			err := r.ep.Attach(p)
			if err == nil {
				err = prog(r)
			}
			if err != nil {
				if rt.failed == nil && !errors.Is(err, errStopped) {
					rt.failed = fmt.Errorf("splitc: rank %d at %v: %w", r.id, p.Now().Human(), err)
				}
				return
			}
			r.end = p.Now()
			rt.done++
		})
	}
	return &AMRun{rt}, nil
}

// Done reports whether every rank has returned, or one has failed.
func (a *AMRun) Done() bool { return a.failed != nil || a.done == len(a.ranks) }

// Finished is the ranks that have returned.
func (a *AMRun) Finished() int { return a.done }

// Result is what the run measured, or why it did not finish: a rank's
// error, or the ranks still running at the cluster's time.
func (a *AMRun) Result() (*AMResult, error) {
	rt, p := a.amRun, len(a.ranks)
	switch {
	case rt.failed != nil:
		return nil, rt.failed
	case rt.done < p:
		return nil, fmt.Errorf("splitc: %d of %d ranks not done at %v (limit %v)", p-rt.done, p, rt.c.Now().Human(), rt.cfg.Limit.Human())
	}
	res := &AMResult{Syncs: rt.ranks[0].syncs, Rounds: int(rt.ranks[0].seq)}
	start, end := rt.ranks[0].start, sim.Tick(0)
	for _, r := range rt.ranks {
		if !r.started {
			return nil, fmt.Errorf("splitc: rank %d never called Sync", r.id)
		}
		if r.start < start {
			start = r.start
		}
		end = max(end, r.end)
		res.Counts = append(res.Counts, r.counts)
		res.Stats = append(res.Stats, r.ep.Stats())
	}
	res.Elapsed = end - start
	return res, nil
}

// install puts the runtime's AM-II handlers on the rank's endpoint.
func (r *amRank) install() error {
	rt := r.rt
	for h := 1; h < Handlers; h++ {
		h := h
		if err := r.ep.SetHandler(h, func(t *am2.Token, m *am2.Message) {
			r.recv++
			f := r.handlers[h]
			if f == nil {
				r.fail(fmt.Errorf("a store to handler %d, not installed", h))
				return
			}
			from := m.From.Node*rt.l.PerNode + m.From.Index
			f(&Msg{From: from, Args: m.Args, Data: m.Data, Len: m.Len})
			r.counts.Reply[from]++
			r.ack(t)
		}); err != nil {
			return err
		}
	}
	if err := r.ep.SetHandler(hAck, func(*am2.Token, *am2.Message) {}); err != nil {
		return err
	}
	if err := r.ep.SetHandler(0, func(_ *am2.Token, m *am2.Message) {
		r.fail(fmt.Errorf("a message to %v returned: its tag did not match", m.From))
	}); err != nil {
		return err
	}
	if err := r.ep.SetHandler(hUp, func(t *am2.Token, m *am2.Message) {
		c := m.From.Node*rt.l.PerNode + m.From.Index - (2*r.id + 1)
		r.up[c] = upMsg{seq: uint64(m.Args[0]), diff: join(m.Args[1], m.Args[2]), v: join(m.Args[3], m.Args[4])}
		r.counts.Sync++
		r.ack(t)
	}); err != nil {
		return err
	}
	return r.ep.SetHandler(hDown, func(t *am2.Token, m *am2.Message) {
		r.down = upMsg{seq: uint64(m.Args[0]), diff: join(m.Args[1], m.Args[2]), v: join(m.Args[3], m.Args[4])}
		r.counts.Sync++
		r.ack(t)
	})
}

// ack replies to a request, as AM-II's request/reply discipline has every
// request answered (and Split-C acknowledges its stores): an empty reply.
func (r *amRank) ack(t *am2.Token) {
	if err := t.Reply(hAck); err != nil {
		r.fail(err)
	}
}

func (r *amRank) fail(err error) {
	if r.rt.failed == nil {
		r.rt.failed = fmt.Errorf("splitc: rank %d: %w", r.id, err)
	}
}

func join(lo, hi uint32) uint64 { return uint64(lo) | uint64(hi)<<32 }

func split(v uint64) (uint32, uint32) { return uint32(v), uint32(v >> 32) }

func (r *amRank) ID() int    { return r.id }
func (r *amRank) Procs() int { return len(r.rt.ranks) }

func (r *amRank) Handle(i int, h Handler) error {
	if i < 1 || i >= Handlers {
		return fmt.Errorf("splitc: handler %d, want 1..%d", i, Handlers-1)
	}
	r.handlers[i] = h
	return nil
}

func (r *amRank) Store(dst, h int, args ...uint32) error {
	if err := checkStore(len(r.rt.ranks), dst, h, 0, args, r.handlers[:]); err != nil {
		return err
	}
	if err := r.ep.Request(dst, h, args...); err != nil {
		return err
	}
	r.sent++
	r.counts.Short[dst]++
	return r.rt.failed
}

func (r *amRank) StoreBulk(dst, h int, src uint64, n int, args ...uint32) error {
	if n < 1 {
		return fmt.Errorf("splitc: a bulk store of %d bytes, want 1..%d", n, MaxBulk)
	}
	if err := checkStore(len(r.rt.ranks), dst, h, n, args, r.handlers[:]); err != nil {
		return err
	}
	if err := r.ep.RequestBulk(dst, h, src, n, args...); err != nil {
		return err
	}
	r.sent++
	r.counts.Bulk[dst]++
	r.counts.BulkBytes[dst] += uint64(n)
	return r.rt.failed
}

// wait polls the endpoint until cond holds.
func (r *amRank) wait(cond func() bool) error {
	for !cond() {
		if r.rt.failed != nil {
			return errStopped
		}
		if r.ep.Poll() == 0 {
			r.p.Compute(r.rt.cfg.PollGap)
		}
	}
	return nil
}

// Sync is all_store_sync: rounds of a reduction up a binary tree of the
// ranks and a broadcast down it, each rank contributing (stores sent −
// stores run) and v(), until the sum is 0 — then no store is in flight,
// since a rank's count of stores run only grows, and the round's values
// were taken after each rank's last store had run.
func (r *amRank) Sync(op Op, v func() uint64) (uint64, error) {
	r.syncs++
	n := len(r.rt.ranks)
	for {
		r.seq++
		k := r.seq
		var kids []int
		for c := 2*r.id + 1; c <= 2*r.id+2 && c < n; c++ {
			kids = append(kids, c)
		}
		if err := r.wait(func() bool {
			for j := range kids {
				if r.up[j].seq != k {
					return false
				}
			}
			return true
		}); err != nil {
			return 0, err
		}
		diff, val := r.sent-r.recv, v()
		for j := range kids {
			diff += r.up[j].diff
			val = op.apply(val, r.up[j].v)
		}
		if r.id > 0 {
			if err := r.send(hUp, (r.id-1)/2, k, diff, val); err != nil {
				return 0, err
			}
			if err := r.wait(func() bool { return r.down.seq == k }); err != nil {
				return 0, err
			}
			diff, val = r.down.diff, r.down.v
		}
		for _, c := range kids {
			if err := r.send(hDown, c, k, diff, val); err != nil {
				return 0, err
			}
		}
		if !r.started {
			r.started, r.start = true, r.p.Now()
		}
		if diff == 0 {
			return val, nil
		}
	}
}

func (r *amRank) send(h, dst int, k, diff, v uint64) error {
	dl, dh := split(diff)
	vl, vh := split(v)
	r.counts.Sync++
	return r.ep.Request(dst, h, uint32(k), dl, dh, vl, vh)
}

func (r *amRank) Alloc(n uint64) uint64       { return r.node.Alloc(n) }
func (r *amRank) Read(addr uint64, b []byte)  { r.p.Read(addr, b) }
func (r *amRank) Write(addr uint64, b []byte) { r.p.Write(addr, b) }
func (r *amRank) Copy(dst, src, n uint64)     { r.p.Memcpy(dst, src, n) }
func (r *amRank) Compute(cycles int)          { r.p.Compute(cycles) }
func (r *amRank) Now() sim.Tick               { return r.p.Now() }
func (r *amRank) Poke(addr uint64, b []byte)  { r.node.Mem.Write(addr, b) }
func (r *amRank) Peek(addr uint64, b []byte)  { r.node.Mem.Read(addr, b) }
