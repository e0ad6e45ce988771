package lcp

import (
	"fmt"
	"strings"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// world is a run's shared state: the configuration, where the ranks are,
// and the driver state of the credit words.
type world struct {
	cfg    Config
	c      *machine.Cluster
	places []Place
	used   []bool       // nodes with ranks
	slot   int          // bytes per receive buffer
	credit [][][]uint64 // [node][rank][rail]: the word of node's memory where rank's posted count for it lands
	sent   [][][]uint64 // [node][rank][rail]: SENDs node's ranks made to rank
	procs  []*Proc
	ubufs  [][]uint64 // per rank: free blocks for unexpected data
	// arrived, with matching on arrival: [node][rail], when each receive
	// (QPN and index) completed in the NIC, until its rank polls it.
	arrived [][]map[recvKey]sim.Tick
	// bulk: fragments go by the NICs' bulk paths (Config.Bulk, the
	// machine allowing it); bulkOff: why not, when Batched was asked for.
	bulk    bool
	bulkOff string
}

type recvKey struct {
	qpn  uint32
	wrid uint64
}

// Result is what a run measured: when each rank finished its program and
// its protocol layer's counts.
type Result struct {
	Finish []sim.Tick
	Stats  []Stats
	// BulkOff says why a run asked to batch (Config.Bulk) went TLP by
	// TLP: the machine's host side could be a bottleneck.
	BulkOff string
	// BulkRefused is, when some bulk work requests went TLP by TLP all
	// the same, the first node's first reason (machine.Node.BulkRefusal:
	// a region the IOMMU logs, faults or maps on pages too small).
	BulkRefused string
}

// Run runs body as every rank of cfg.Places on the cluster, until each
// has returned from body and finished its requests, or cfg.Limit. One run
// per cluster.
func Run(c *machine.Cluster, cfg Config, body func(p *Proc)) (*Result, error) {
	s, err := Start(c, cfg, body)
	if err != nil {
		return nil, err
	}
	c.Run(s.w.cfg.Limit, c.AppsDone)
	return s.Result()
}

// Session is a run set up and its ranks spawned: the caller runs the
// cluster (until c.AppsDone) and then asks for the Result.
type Session struct{ w *world }

// Start sets up a run and spawns its ranks, as Run does, without running
// the cluster.
func Start(c *machine.Cluster, cfg Config, body func(p *Proc)) (*Session, error) {
	if cfg.Places == nil {
		for n := range c.Nodes {
			cfg.Places = append(cfg.Places, Place{Node: n})
		}
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(c); err != nil {
		return nil, err
	}
	if err := c.RequirePerPeerReceive("the LCP transport"); err != nil {
		return nil, err
	}
	rails := cfg.Rails
	if rails == 0 {
		rails = c.Spec.Rails()
	}
	nn := len(c.Nodes)
	w := &world{cfg: cfg, c: c, places: cfg.Places, used: make([]bool, nn), slot: (HeaderBytes + cfg.EagerLimit + 63) &^ 63,
		credit: make([][][]uint64, nn), sent: make([][][]uint64, nn), ubufs: make([][]uint64, len(cfg.Places))}
	for _, p := range cfg.Places {
		w.used[p.Node] = true
	}
	for n, u := range w.used {
		if !u {
			continue
		}
		node := c.Nodes[n]
		base, err := alloc(node, uint64(8*rails*len(cfg.Places)))
		if err != nil {
			return nil, err
		}
		w.credit[n], w.sent[n] = make([][]uint64, len(cfg.Places)), make([][]uint64, len(cfg.Places))
		for r := range cfg.Places {
			w.sent[n][r] = make([]uint64, rails)
			for k := 0; k < rails; k++ {
				w.credit[n][r] = append(w.credit[n][r], base+uint64(8*(r*rails+k)))
			}
		}
	}
	if cfg.Bulk == Batched {
		if err := c.EnableBulk(); err != nil {
			w.bulkOff = err.Error()
		} else {
			w.bulk = true
		}
	}
	if cfg.Matching == OnArrival {
		// The NICs tell when each receive completes: the matching unit,
		// part of the NIC, searches then (the hook runs in the node's own
		// domain, as its ranks do).
		w.arrived = make([][]map[recvKey]sim.Tick, nn)
		for n, u := range w.used {
			if !u {
				continue
			}
			for k := 0; k < rails; k++ {
				m := map[recvKey]sim.Tick{}
				w.arrived[n] = append(w.arrived[n], m)
				c.Nodes[n].NICs[k].OnReceive = func(qpn uint32, wrid uint64, at sim.Tick) { m[recvKey{qpn, wrid}] = at }
			}
		}
	}
	for r, pl := range cfg.Places {
		p := &Proc{w: w, rank: r, place: pl, node: c.Nodes[pl.Node], sends: map[uint64]*Request{}, recvs: map[uint64]*Request{},
			stats: Stats{Fragments: make([]uint64, rails)}}
		p.handlers[amTag], p.handlers[amAck], p.handlers[amFin] = p.onTag, p.onAck, p.onFin
		for k := 0; k < rails; k++ {
			t, err := newIface(p, k)
			if err != nil {
				return nil, err
			}
			p.ifaces = append(p.ifaces, t)
		}
		p.eps = make([]*Endpoint, len(cfg.Places))
		for d := range cfg.Places {
			p.eps[d] = &Endpoint{Peer: d, Rails: p.ifaces}
		}
		w.procs = append(w.procs, p)
	}
	for _, p := range w.procs {
		p := p
		p.node.Cores[p.place.Core].Spawn(fmt.Sprintf("lcp%d", p.rank), func(cp *cpu.Proc) {
			p.cp = cp
			for _, t := range p.ifaces {
				t.open()
			}
			body(p)
			p.waiting = "finishing its requests"
			for len(p.pending) > 0 {
				p.progress()
			}
			p.waiting = ""
			p.finish, p.finished = cp.Now(), true
		})
	}
	return &Session{w: w}, nil
}

// Result is what the run measured; an error names the ranks that have
// not finished.
func (s *Session) Result() (*Result, error) {
	res := &Result{BulkOff: s.w.bulkOff}
	for _, n := range s.w.c.Nodes {
		if r := n.BulkRefusal(); r != "" && res.BulkRefused == "" {
			res.BulkRefused = fmt.Sprintf("node%d: %s", n.ID, r)
		}
	}
	var stuck []string
	for _, p := range s.w.procs {
		res.Finish = append(res.Finish, p.finish)
		st := p.stats
		for _, t := range p.ifaces {
			st.Searched += t.unit.searched
		}
		res.Stats = append(res.Stats, st)
		if !p.finished {
			what := p.waiting
			if what == "" {
				what = "running"
			}
			stuck = append(stuck, fmt.Sprintf("  rank %d: %s", p.rank, what))
		}
	}
	if stuck != nil {
		return res, fmt.Errorf("lcp: ranks not finished at %v:\n%s", s.w.c.Eng.World().Now(), strings.Join(stuck, "\n"))
	}
	return res, nil
}
