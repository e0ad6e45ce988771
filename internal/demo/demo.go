// Package demo is a small pipeline of kernel blocks: a transaction source, a
// chain of registered pipeline stages and a sink with a randomised ready, in
// two clock domains. `aaemu run` runs it until the full machine exists; the
// kernel's tests and benchmarks use it as their design under test.
package demo

import (
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// Item is the transaction the pipeline carries.
type Item struct {
	sim.Txn
	Seq  uint32 // position in the source's stream
	Data uint64 // payload, a function of Seq
	Born sim.Tick
}

// Payload is the data the source puts in item seq; sinks check it.
func Payload(seq uint32) uint64 {
	x := uint64(seq)*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	x ^= x >> 29
	return x
}

// Source emits Count items, one every Interval cycles when the channel is ready.
type Source struct {
	u        *sim.Unit
	Out      *sim.Chan[Item]
	count    uint32
	interval sim.Tick
	sent     *sim.Reg[uint32]
	nextAt   sim.Tick
}

// Tick sends the next item when it is due and the channel takes it.
func (s *Source) Tick(now sim.Tick) bool {
	n := s.sent.Q()
	if n >= s.count {
		return false
	}
	if now < s.nextAt {
		s.u.WakeAt(s.nextAt)
		return false
	}
	if !s.Out.Ready() {
		return false // woken when the channel frees space
	}
	tx := s.u.Engine().NewTxn(0, "item", s.u.Name())
	s.Out.Send(Item{Txn: tx, Seq: n, Data: Payload(n), Born: now})
	s.sent.D(n + 1)
	s.nextAt = now + s.interval
	if n+1 >= s.count {
		return false
	}
	if s.interval > s.u.Clock().Period() {
		s.u.WakeAt(s.nextAt) // sleep through the gap
		return false
	}
	return true
}

// Stage is a pipeline register: it takes an item when its register is empty
// (or emptying this cycle) and passes it on when the next channel is ready.
type Stage struct {
	In, Out *sim.Chan[Item]
	hold    *sim.Reg[Item]
	full    *sim.Reg[bool]
	passed  *sim.Counter
}

// Tick moves at most one item out and one item in.
func (s *Stage) Tick(now sim.Tick) bool {
	full := s.full.Q()
	freed := false
	if full && s.Out.Ready() {
		it := s.hold.Q()
		s.Out.Send(it)
		s.passed.Inc()
		freed = true
	}
	if (!full || freed) && s.In.Valid() {
		s.hold.D(s.In.Recv())
		s.full.D(true)
	} else if freed {
		s.full.D(false)
	}
	return false
}

// Received is one item as the sink saw it.
type Received struct {
	Item
	At sim.Tick
}

// Sink takes items whenever its randomised ready allows and keeps them.
type Sink struct {
	u        *sim.Unit
	In       *sim.Chan[Item]
	rng      *sim.Rand
	readyPct int
	got      []Received
	ready    *sim.Reg[bool]
	latency  *sim.Histogram
}

// Tick takes the head item if ready this cycle.
func (s *Sink) Tick(now sim.Tick) bool {
	if !s.In.Valid() {
		return false
	}
	ready := s.readyPct >= 100 || s.rng.IntN(100) < s.readyPct
	s.ready.D(ready)
	if !ready {
		return true // try again next cycle
	}
	it := s.In.Recv()
	s.got = append(s.got, Received{Item: it, At: now})
	s.latency.Observe(uint64((now - it.Born) / sim.NS))
	return s.In.Len() > 0
}

// Got returns the items received, in order.
func (s *Sink) Got() []Received { return s.got }

// Config describes a demonstration pipeline.
type Config struct {
	Stages       int    `yaml:"stages" json:"stages"`                 // pipeline stages between source and sink
	Items        uint32 `yaml:"items" json:"items"`                   // transactions the source sends
	Depth        int    `yaml:"depth" json:"depth"`                   // FIFO depth of every channel
	CorePeriodPS uint64 `yaml:"core_period_ps" json:"core_period_ps"` // source and stages clock
	SinkPeriodPS uint64 `yaml:"sink_period_ps" json:"sink_period_ps"` // sink clock (a second domain)
	SinkPhasePS  uint64 `yaml:"sink_phase_ps" json:"sink_phase_ps"`   // first edge of the sink clock
	IntervalCy   uint64 `yaml:"interval_cycles" json:"interval_cycles"`
	SinkReadyPct int    `yaml:"sink_ready_pct" json:"sink_ready_pct"` // chance the sink is ready in a cycle
}

// DefaultConfig is the pipeline `aaemu run` runs by default.
func DefaultConfig() Config {
	return Config{Stages: 8, Items: 64, Depth: 2, CorePeriodPS: 4000, SinkPeriodPS: 3200, SinkPhasePS: 1000,
		IntervalCy: 1, SinkReadyPct: 70}
}

// Validate checks a configuration and says which field is wrong.
func (c Config) Validate() error {
	switch {
	case c.Stages < 0 || c.Stages > 4096:
		return fmt.Errorf("stages: %d out of 0..4096", c.Stages)
	case c.Items == 0:
		return fmt.Errorf("items: must be at least 1")
	case c.Depth < 1 || c.Depth > 1<<16:
		return fmt.Errorf("depth: %d out of 1..65536", c.Depth)
	case c.CorePeriodPS == 0:
		return fmt.Errorf("core_period_ps: must be positive")
	case c.SinkPeriodPS == 0:
		return fmt.Errorf("sink_period_ps: must be positive")
	case c.SinkPhasePS >= c.SinkPeriodPS:
		return fmt.Errorf("sink_phase_ps: %d must be below sink_period_ps %d", c.SinkPhasePS, c.SinkPeriodPS)
	case c.IntervalCy == 0:
		return fmt.Errorf("interval_cycles: must be at least 1")
	case c.SinkReadyPct < 1 || c.SinkReadyPct > 100:
		return fmt.Errorf("sink_ready_pct: %d out of 1..100", c.SinkReadyPct)
	}
	return nil
}

// Pipeline is a built design.
type Pipeline struct {
	Src    *Source
	Stages []*Stage
	Sink   *Sink
	Core   *sim.Clock
	IO     *sim.Clock
}

// Build elaborates the pipeline on e under the instance name top.
func Build(e *sim.Engine, top string, c Config) (*Pipeline, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	core := e.NewClock(top+".clk_core", sim.Tick(c.CorePeriodPS), 0)
	io := e.NewClock(top+".clk_sink", sim.Tick(c.SinkPeriodPS), sim.Tick(c.SinkPhasePS))
	p := &Pipeline{Core: core, IO: io}

	src := &Source{count: c.Items, interval: sim.Tick(c.IntervalCy) * core.Period()}
	src.u = core.Add(top+".src", src)
	src.sent = sim.NewReg(src.u, "sent", uint32(0))
	p.Src = src

	prevUnit := src.u
	var prevOut **sim.Chan[Item] = &src.Out
	for i := 0; i < c.Stages; i++ {
		st := &Stage{}
		name := fmt.Sprintf("%s.stage%d", top, i)
		u := core.Add(name, st)
		ch := sim.NewChan[Item](prevUnit, u, name+".in", c.Depth)
		*prevOut = ch
		st.In = ch
		st.hold = sim.NewRegTraced(u, "hold", Item{}, 32, func(it Item) uint64 { return uint64(it.ID) })
		st.full = sim.NewReg(u, "full", false)
		st.passed = e.Stats().Counter(name+".passed", "items", "items the stage passed on")
		p.Stages = append(p.Stages, st)
		prevUnit, prevOut = u, &st.Out
	}
	sk := &Sink{readyPct: c.SinkReadyPct, rng: e.Rand(top + ".sink")}
	sk.u = io.Add(top+".sink", sk)
	sk.In = sim.NewChan[Item](prevUnit, sk.u, top+".sink.in", c.Depth)
	*prevOut = sk.In
	sk.ready = sim.NewReg(sk.u, "ready", false)
	sk.latency = e.Stats().Histogram(top+".sink.latency", "ns", "time from the source sending an item to the sink taking it",
		sim.PowersOfTwo(1<<16))
	p.Sink = sk
	return p, nil
}

// Check verifies that the sink got every item exactly once, in order, with
// its payload intact, and says what went wrong first.
func (p *Pipeline) Check() error {
	got := p.Sink.Got()
	if uint32(len(got)) != p.Src.count {
		return fmt.Errorf("sink got %d items, source sent %d", len(got), p.Src.count)
	}
	for i, r := range got {
		if r.Seq != uint32(i) {
			return fmt.Errorf("item %d: got sequence number %d (lost, duplicated or reordered)", i, r.Seq)
		}
		if r.Data != Payload(r.Seq) {
			return fmt.Errorf("item %d: payload %#x, want %#x", i, r.Data, Payload(r.Seq))
		}
	}
	return nil
}
