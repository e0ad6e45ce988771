package am2paper

import (
	"fmt"
	"sync"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/examples/machines"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload/micro"
)

// The experiments run on two E5000 nodes of the preset
// (examples/machines/e5000.yaml), each with a Myrinet-class NIU
// (am2.WithMyrinet): the Clump's SMP and its network.

var preset struct {
	once sync.Once
	spec machine.Spec
	seed uint64
	err  error
}

// Machine is the spec of a cluster of the preset's E5000s: nodes SMPs of
// cores processors, each with nius Myrinet-class NIUs (am2.ClumpNICs for
// the Clump's), and the preset's seed. The figures of this paper run on
// two nodes of one NIU; the Clump is Machine(4, 8, am2.ClumpNICs).
func Machine(nodes, cores, nius int) (machine.Spec, uint64, error) {
	preset.once.Do(func() {
		sc, err := scenario.ParseScenario("e5000.yaml", machines.E5000)
		if err != nil {
			preset.err = err
			return
		}
		preset.spec, preset.seed = am2.WithMyrinet(sc.ClusterSpec()), sc.Seed
	})
	s := preset.spec
	s.Nodes, s.Cores, s.StartXNICs = nodes, cores, nius
	return s, preset.seed, preset.err
}

// e5000 is the machine spec of the experiments: two E5000s (the preset's
// processors) of one NIU each.
func e5000() (machine.Spec, uint64, error) {
	spec, seed, err := Machine(2, 0, 1)
	if err == nil {
		spec.Cores = preset.spec.Cores
	}
	return spec, seed, err
}

// column is one of Table 2's four columns: a path and a system.
type column struct {
	name   string
	path   micro.Path
	policy am2.Policy
	// The paper's Table 2 (000:L135–L145): L, o_s, o_r, g, RTT in µs,
	// G in ns per byte, 1/G in MB/s, the half-power point in bytes.
	l, os, or, g, rtt, gns, bw, half float64
}

// The columns in the paper's order (the reference's note: the network
// columns are multi-protocol, then single-protocol, 000:L133).
var columns = []column{
	{"shm single-protocol", micro.IntraNode, am2.Policy{Protocols: am2.ShmOnly}, -0.3, 1.8, 1.3, 3.1, 5.6, 6.02, 166, 5.1e3},
	{"shm multi-protocol", micro.IntraNode, am2.Policy{}, 0.1, 2.1, 1.4, 3.6, 7.2, 6.25, 160, 5.3e3},
	{"Myrinet multi-protocol", micro.InterNode, am2.Policy{}, 15.5, 3.3, 8.6, 17.6, 55, 30.5, 32.8, 8.6e3},
	{"Myrinet single-protocol", micro.InterNode, am2.Policy{Protocols: am2.NetOnly}, 13.8, 5.6, 8.1, 17.6, 55, 31.5, 31.7, 8.7e3},
}

func columnNamed(name string) (column, error) {
	for _, c := range columns {
		if c.name == name {
			return c, nil
		}
	}
	return column{}, fmt.Errorf("am2: no column %q", name)
}

func (c column) config(iters int) (micro.Config, error) {
	spec, seed, err := e5000()
	if err != nil {
		return micro.Config{}, err
	}
	return micro.Config{Machine: spec, Layer: micro.AM2, Path: c.path, AM2Poll: c.policy, Seed: seed, Iters: iters}, nil
}

// memo runs each measurement once however many points of a figure ask
// for it (the points may run in parallel).
type memo[T any] struct {
	mu   sync.Mutex
	runs map[string]*memoRun[T]
}

type memoRun[T any] struct {
	once sync.Once
	v    T
	err  error
}

func (m *memo[T]) get(key string, f func() (T, error)) (T, error) {
	m.mu.Lock()
	if m.runs == nil {
		m.runs = map[string]*memoRun[T]{}
	}
	r := m.runs[key]
	if r == nil {
		r = &memoRun[T]{}
		m.runs[key] = r
	}
	m.mu.Unlock()
	r.once.Do(func() { r.v, r.err = f() })
	return r.v, r.err
}

var loggps memo[micro.LogGP]

// logGP is a column's LogGP parameters, averaged over iters.
func logGP(c column, iters int) (micro.LogGP, error) {
	return loggps.get(fmt.Sprintf("%s/%d", c.name, iters), func() (micro.LogGP, error) {
		cfg, err := c.config(iters)
		if err != nil {
			return micro.LogGP{}, err
		}
		return micro.MeasureLogGP(cfg)
	})
}

var pingpongs memo[[]micro.PingPongPoint]

// pingPong is a column's ping-pong over sizes.
func pingPong(c column, sizes []int) ([]micro.PingPongPoint, error) {
	return pingpongs.get(fmt.Sprintf("%s/%v", c.name, sizes), func() ([]micro.PingPongPoint, error) {
		cfg, err := c.config(2)
		if err != nil {
			return nil, err
		}
		return micro.PingPong(cfg, sizes)
	})
}

// sendCase is a bar of Figure 4: a system, and whether the receiver
// polls (its queue's lines then in its cache) or sleeps (the packet lines
// come from memory: the seed's base case).
type sendCase struct {
	name     string
	policy   am2.Policy
	sleeping bool
}

var sendCases = []sendCase{
	{"base (packet line not in the receiver's cache)", am2.Policy{Protocols: am2.ShmOnly}, true},
	{"shm single-protocol", am2.Policy{Protocols: am2.ShmOnly}, false},
	{"multi-protocol", am2.Policy{}, false},
}

var sendCosts memo[am2.SendCost]

// sendCost is the cost of n short requests of 8 arguments from one core
// of an E5000 to an endpoint on another, each sent when the last has been
// handled (the receiver polling, or asleep until all are sent): the
// sender's Stats.Send, after a warm-up of one message.
func sendCost(sc sendCase, n int) (am2.SendCost, error) {
	return sendCosts.get(fmt.Sprintf("%s/%d", sc.name, n), func() (am2.SendCost, error) {
		spec, seed, err := e5000()
		if err != nil {
			return am2.SendCost{}, err
		}
		spec.Cores = max(spec.Cores, 2)
		c, err := machine.New(sim.NewEngine(seed), spec)
		if err != nil {
			return am2.SendCost{}, err
		}
		paper.PollOption(c)
		as := am2.DefaultSpec()
		as.Poll = sc.policy
		sys, err := am2.New(c, as)
		if err != nil {
			return am2.SendCost{}, err
		}
		a, err := sys.NewEndpoint(0, 1)
		if err != nil {
			return am2.SendCost{}, err
		}
		b, err := sys.NewEndpoint(0, 2)
		if err != nil {
			return am2.SendCost{}, err
		}
		if err := a.Map(0, b.Name(), b.Tag()); err != nil {
			return am2.SendCost{}, err
		}
		got := 0
		if err := b.SetHandler(1, func(*am2.Token, *am2.Message) { got++ }); err != nil {
			return am2.SendCost{}, err
		}
		var warm am2.SendCost
		var failed error
		done := 0
		node := c.Nodes[0]
		node.Cores[0].Spawn("sender", func(p *cpu.Proc) {
			defer func() { done++ }()
			if failed = a.Attach(p); failed != nil {
				return
			}
			for i := 0; i <= n; i++ {
				if i == 1 {
					warm = a.Stats().Send
				}
				if failed = a.Request(0, 1, 1, 2, 3, 4, 5, 6, 7, uint32(i)); failed != nil {
					return
				}
				if !sc.sleeping {
					for got <= i {
						p.Sleep(sim.US)
					}
				}
				p.Sleep(5 * sim.US) // far apart: no gap limits a send
			}
		})
		node.Cores[1].Spawn("receiver", func(p *cpu.Proc) {
			defer func() { done++ }()
			if err := b.Attach(p); err != nil {
				failed = err
				return
			}
			if sc.sleeping {
				p.Poll(func() bool { return done > 0 })
			}
			for got < n+1 {
				b.Poll()
			}
		})
		c.Run(sim.S, func() bool { return done == 2 || failed != nil })
		if failed != nil {
			return am2.SendCost{}, failed
		}
		if done < 2 {
			return am2.SendCost{}, fmt.Errorf("am2: send costs (%s): not done at %v", sc.name, c.Now().Human())
		}
		return a.Stats().Send.Minus(warm), nil
	})
}

var idlePolls memo[sim.Tick]

// idlePoll is the mean time of a poll that finds nothing, n of them in a
// row: a shared-memory one (shm-only) or a network one (net-only).
func idlePoll(policy am2.Policy, n int) (sim.Tick, error) {
	return idlePolls.get(fmt.Sprintf("%s/%d", policy, n), func() (sim.Tick, error) {
		spec, seed, err := e5000()
		if err != nil {
			return 0, err
		}
		c, err := machine.New(sim.NewEngine(seed), spec)
		if err != nil {
			return 0, err
		}
		paper.PollOption(c)
		as := am2.DefaultSpec()
		as.Poll = policy
		sys, err := am2.New(c, as)
		if err != nil {
			return 0, err
		}
		e, err := sys.NewEndpoint(0, 1)
		if err != nil {
			return 0, err
		}
		var d sim.Tick
		var failed error
		done := false
		c.Nodes[0].Cores[0].Spawn("poller", func(p *cpu.Proc) {
			defer func() { done = true }()
			if failed = e.Attach(p); failed != nil {
				return
			}
			e.Poll() // warm: its lines in the cache
			t0 := p.Now()
			for i := 0; i < n; i++ {
				e.Poll()
			}
			d = (p.Now() - t0) / sim.Tick(n)
		})
		c.Run(sim.S, func() bool { return done })
		if failed != nil {
			return 0, failed
		}
		return d, nil
	})
}
