// Package mpiverify runs seeded random point-to-point traffic through the
// MPI core (msg/mpi) and checks what was delivered with the independent
// golden model (msg/mpi/mpicheck), as aaemu verify does for the IOMMU.
//
// A run is a number of phases separated by barriers. In each phase every
// rank sends messages of random sizes (zero bytes, inline, eager,
// rendezvous, chunked) with a few tags to random ranks, itself included,
// in the world or in its half of a split communicator, and posts the
// receives that take them: for each communicator of each rank and phase,
// exact (source, tag) receives, or receives with AnySource per tag, or
// AnyTag per source, or both wildcards — kinds whose receives can take any
// message of their class in any order, so that the program completes
// however messages race — a few with buffers too short (truncation). A
// rank posts its sends and receives in random order with random work in
// between, tests some, then waits for all. The program logs every send and
// receive as it posts them and every completion with its status and bytes;
// the log goes to mpicheck.
package mpiverify

import (
	"errors"
	"fmt"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/msg/mpi/mpicheck"
	"github.com/aaemu/aaemu/sim"
)

// Options of a run.
type Options struct {
	// Fabric places the ranks: "shm" (one node), "rdma" (one rank per
	// node) or "mixed" (cyclically over two nodes: neighbours talk over the
	// network, ranks two apart through shared memory). Default mixed.
	Fabric  string
	Ranks   int      // default 6
	Phases  int      // default 4
	Sends   int      // messages each rank sends per phase (default 8)
	MaxSize int      // largest message (default 40000)
	Mode    mpi.Mode // every transport's rendezvous mode (0: their defaults)
	Seed    uint64
}

func (o Options) withDefaults() Options {
	if o.Fabric == "" {
		o.Fabric = "mixed"
	}
	if o.Ranks == 0 {
		o.Ranks = 6
	}
	if o.Phases == 0 {
		o.Phases = 4
	}
	if o.Sends == 0 {
		o.Sends = 8
	}
	if o.MaxSize == 0 {
		o.MaxSize = 40000
	}
	return o
}

// Outcome is a run's check, its log and the MPI run's result.
type Outcome struct {
	Report mpicheck.Report
	Log    []mpicheck.Event
	Result *mpi.Result
}

// message is one planned send.
type message struct {
	src, dst int // world ranks
	comm     int // 0: the world; 1 + color: a half
	tag      int
	size     int
	id       uint64
}

// recvPlan is one planned receive.
type recvPlan struct {
	comm     int
	src, tag int // world rank or mpicheck.Any
	room     int
}

type action struct {
	send *message
	recv *recvPlan
	gap  int  // cycles of work before it
	test bool // test a request posted earlier after it
}

// plan is every rank's actions per phase.
type plan [][][]action // [phase][rank]

func half(ranks, color int) []int {
	var g []int
	for r := color; r < ranks; r += 2 {
		g = append(g, r)
	}
	return g
}

func makePlan(o Options) plan {
	rnd := sim.NewRand(o.Seed, "mpiverify")
	p := make(plan, o.Phases)
	for ph := range p {
		p[ph] = make([][]action, o.Ranks)
		var msgs []*message
		for s := 0; s < o.Ranks; s++ {
			for k := 0; k < o.Sends; k++ {
				m := &message{src: s, tag: rnd.IntN(4), id: uint64(ph)<<40 | uint64(s)<<20 | uint64(k) + 1}
				group := half(o.Ranks, s%2)
				if rnd.IntN(4) == 0 && len(group) > 1 {
					m.comm = 1 + s%2
					m.dst = group[rnd.IntN(len(group))]
				} else {
					m.dst = rnd.IntN(o.Ranks)
				}
				m.size = size(rnd, o.MaxSize)
				msgs = append(msgs, m)
				p[ph][s] = append(p[ph][s], action{send: m})
			}
		}
		for r := 0; r < o.Ranks; r++ {
			acts := p[ph][r]
			type comm struct {
				in   []*message
				kind int
			}
			var cs [3]comm
			for c := range cs {
				for _, m := range msgs {
					if m.dst == r && m.comm == c {
						cs[c].in = append(cs[c].in, m)
					}
				}
				if len(cs[c].in) == 0 {
					continue
				}
				cs[c].kind = rnd.IntN(4)
				for _, m := range cs[c].in {
					rp := class(m, cs[c].kind)
					acts = append(acts, action{recv: &rp})
				}
			}
			rnd.Shuffle(len(acts), func(i, j int) { acts[i], acts[j] = acts[j], acts[i] })
			// Room: exact receives fit the messages of their class in the
			// order they are posted (the order they match in); wildcard ones
			// the class's largest. Some are too short.
			next := map[recvPlan]int{}
			for _, a := range acts {
				if a.recv == nil {
					continue
				}
				key := *a.recv
				cm := cs[key.comm]
				var fit []*message
				for _, m := range cm.in {
					if class(m, cm.kind) == key {
						fit = append(fit, m)
					}
				}
				if cm.kind == 0 {
					a.recv.room = fit[next[key]].size
					next[key]++
				} else {
					for _, m := range fit {
						a.recv.room = max(a.recv.room, m.size)
					}
				}
				if rnd.IntN(25) == 0 {
					a.recv.room = rnd.IntN(a.recv.room + 1)
				}
			}
			for i := range acts {
				a := &acts[i]
				if rnd.IntN(2) == 0 {
					a.gap = rnd.IntN(3000)
				}
				a.test = rnd.IntN(6) == 0
			}
			p[ph][r] = acts
		}
	}
	return p
}

// class is the receive that takes m among the messages of a rank's
// communicator: every receive can take any message of its class.
func class(m *message, kind int) recvPlan {
	switch kind {
	case 0:
		return recvPlan{comm: m.comm, src: m.src, tag: m.tag}
	case 1:
		return recvPlan{comm: m.comm, src: mpicheck.Any, tag: m.tag}
	case 2:
		return recvPlan{comm: m.comm, src: m.src, tag: mpicheck.Any}
	}
	return recvPlan{comm: m.comm, src: mpicheck.Any, tag: mpicheck.Any}
}

// size draws a message size: zero, inline, eager, around the eager limit,
// rendezvous.
func size(rnd *sim.Rand, maxSize int) int {
	switch x := rnd.IntN(20); {
	case x == 0:
		return 0
	case x < 4:
		return 1 + rnd.IntN(40)
	case x < 12:
		return 41 + rnd.IntN(4000)
	case x < 15:
		return 8190 + rnd.IntN(5)
	}
	return min(maxSize, 8195+rnd.IntN(max(maxSize-8195, 1)))
}

func pattern(id uint64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(id>>20) ^ byte(i*29+int(id))
	}
	for i := 0; i < 8 && i < n; i++ {
		b[i] = byte(id >> (8 * i))
	}
	return b
}

// Run runs the random program of o.Seed and checks its log.
func Run(o Options) (*Outcome, error) {
	o = o.withDefaults()
	s := machine.DefaultSpec()
	// Random traffic makes incasts: a lossless switched fabric then queues
	// frames, ACKs among them, for milliseconds, which the 1 GbE default's
	// 200 µs retransmission timeout (8 tries) would take for a dead link.
	// RoCE deployments set the timeout far longer than that; the check is of
	// MPI's delivery rules, so the NICs wait 10 ms.
	s.NIC.RetransmitPS = 10 * sim.MS
	var cfg mpi.Config
	switch o.Fabric {
	case "shm":
		s.Cores = o.Ranks
		cfg.Nodes, cfg.PerNode = 1, o.Ranks
	case "rdma":
		s.Nodes = max(o.Ranks, 2)
		cfg.Nodes, cfg.PerNode = o.Ranks, 1
	case "mixed":
		s.Cores = (o.Ranks + 1) / 2
		cfg.Ranks = o.Ranks
		cfg.Place = func(r int) mpi.Place { return mpi.Place{Node: r % 2, Core: r / 2} }
	default:
		return nil, fmt.Errorf("mpiverify: fabric %q: want shm, rdma or mixed", o.Fabric)
	}
	if o.Mode != 0 {
		cfg.Shm.Params.Rendezvous, cfg.RDMA.Params.Rendezvous = o.Mode, o.Mode
	}
	c, err := machine.New(sim.NewEngine(o.Seed), s)
	if err != nil {
		return nil, err
	}
	p := makePlan(o)
	var log []mpicheck.Event
	var progErr error
	fail := func(err error) {
		if progErr == nil {
			progErr = err
		}
	}
	res, err := mpi.Run(c, cfg, func(w *mpi.Comm) {
		me := w.Rank()
		half, err := w.Split(me%2, me)
		if err != nil {
			fail(err)
			return
		}
		comms := []*mpi.Comm{w, nil, nil}
		comms[1+me%2] = half
		op := 0
		for ph := range p {
			type posted struct {
				q   *mpi.Request
				buf mpi.Buf
				ev  int // its Recv event (receives)
				c   *mpi.Comm
			}
			var all []posted
			for _, a := range p[ph][me] {
				w.Compute(a.gap)
				switch {
				case a.send != nil:
					m := a.send
					cm := comms[m.comm]
					b := w.Alloc(m.size)
					data := pattern(m.id, m.size)
					w.Write(b, data)
					log = append(log, mpicheck.Event{Kind: mpicheck.Send, Rank: me, Op: op, Comm: m.comm, Peer: m.dst, Tag: m.tag, Size: m.size, Data: data})
					op++
					all = append(all, posted{q: cm.Isend(b, rankIn(cm, m.dst), m.tag), ev: -1})
				default:
					rp := a.recv
					cm := comms[rp.comm]
					b := w.Alloc(rp.room)
					src := mpi.AnySource
					if rp.src != mpicheck.Any {
						src = rankIn(cm, rp.src)
					}
					tag := mpi.AnyTag
					if rp.tag != mpicheck.Any {
						tag = rp.tag
					}
					log = append(log, mpicheck.Event{Kind: mpicheck.Recv, Rank: me, Op: op, Comm: rp.comm, Peer: rp.src, Tag: rp.tag, Size: rp.room})
					all = append(all, posted{q: cm.Irecv(b, src, tag), buf: b, ev: op, c: cm})
					op++
				}
				if a.test {
					w.Test(all[len(all)/2].q)
				}
			}
			qs := make([]*mpi.Request, len(all))
			for i, x := range all {
				qs[i] = x.q
			}
			st, _ := w.Waitall(qs...)
			for i, x := range all {
				if x.ev < 0 {
					if st[i].Err != nil {
						fail(fmt.Errorf("rank %d: a send failed: %w", me, st[i].Err))
					}
					continue
				}
				if st[i].Err != nil && !errors.Is(st[i].Err, mpi.ErrTruncate) {
					fail(fmt.Errorf("rank %d: a receive failed: %w", me, st[i].Err))
				}
				data := w.Read(x.buf)[:st[i].Count]
				log = append(log, mpicheck.Event{Kind: mpicheck.Done, Rank: me, Op: x.ev, Source: x.c.WorldRank(st[i].Source),
					StatusTag: st[i].Tag, Count: st[i].Count, Truncated: errors.Is(st[i].Err, mpi.ErrTruncate), Data: data})
			}
			w.Barrier()
		}
	})
	if err != nil {
		return &Outcome{Log: log, Result: res}, err
	}
	if progErr != nil {
		return &Outcome{Log: log, Result: res}, progErr
	}
	return &Outcome{Report: mpicheck.Check(log), Log: log, Result: res}, nil
}

// rankIn is world rank w's rank in c.
func rankIn(c *mpi.Comm, w int) int {
	for r := 0; r < c.Size(); r++ {
		if c.WorldRank(r) == w {
			return r
		}
	}
	panic(fmt.Sprintf("mpiverify: rank %d is not in the communicator", w))
}
