package sim

import (
	"fmt"
	"math"
	"sort"
	"sync"
)

// Stats is a registry of named statistics. Blocks declare each statistic
// once, with a unit and a one-line description; the run writes them all.
//
// One registry serves every domain of a world, and domains may declare
// statistics while they run (StatsOnUse), so the registry itself is safe for
// concurrent use. A statistic's value is not: each counter or histogram
// must be updated by the blocks of one domain only (a link's transfers
// count in the consumer's domain, its stalls in the producer's).
type Stats struct {
	mu     sync.Mutex
	byName map[string]Stat
	order  []Stat
	// pending are the statistics made but declared on use (StatsOnUse):
	// over ranks, the rank that uses one may not be the one whose
	// registry reports it (World.Sync).
	pending map[string]Stat
}

// Stat is a counter or a histogram.
type Stat interface {
	Name() string
	Unit() string
	Desc() string
}

func newStats() *Stats { return &Stats{byName: map[string]Stat{}, pending: map[string]Stat{}} }

// pend keeps statistics declared on use until they are.
func (s *Stats) pend(sts ...Stat) {
	s.mu.Lock()
	for _, st := range sts {
		s.pending[st.Name()] = st
	}
	s.mu.Unlock()
}

// used lists the pending statistics that have counted something, by name:
// over ranks, one rank may count what another declared (World.Sync).
func (s *Stats) used() []Stat {
	s.mu.Lock()
	var out []Stat
	for _, st := range s.pending {
		switch x := st.(type) {
		case *Counter:
			if x.v != 0 {
				out = append(out, st)
			}
		case *Histogram:
			if x.n != 0 {
				out = append(out, st)
			}
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// declareOnce declares a statistic made with pend, unless World.Sync
// already has.
func (s *Stats) declareOnce(st Stat) {
	s.mu.Lock()
	_, done := s.byName[st.Name()]
	s.mu.Unlock()
	if !done {
		s.add(st)
	}
}

// declareForSync returns the statistic called name, declaring it (a pending
// one, or a new one of the kind: 0 a counter, 1 a histogram) when another
// rank has; nil if it is of another kind here.
func (s *Stats) declareForSync(name string, kind byte, unit, desc string, bounds []uint64) Stat {
	s.mu.Lock()
	st, ok := s.byName[name]
	p, pend := s.pending[name]
	s.mu.Unlock()
	switch {
	case ok:
	case pend:
		s.add(p)
		st = p
	case kind == 0:
		st = s.Counter(name, unit, desc)
	default:
		st = s.Histogram(name, unit, desc, bounds)
	}
	switch st.(type) {
	case *Counter:
		if kind != 0 {
			return nil
		}
	case *Histogram:
		if kind != 1 {
			return nil
		}
	}
	return st
}

type statMeta struct{ name, unit, desc string }

func (m *statMeta) Name() string { return m.name }
func (m *statMeta) Unit() string { return m.unit }
func (m *statMeta) Desc() string { return m.desc }

func (s *Stats) add(st Stat) {
	name := st.Name()
	if err := CheckName(name); err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byName[name]; dup {
		panic(fmt.Sprintf("sim: statistic %q declared twice", name))
	}
	s.byName[name] = st
	s.order = append(s.order, st)
	delete(s.pending, name)
}

// Counter is a monotonically increasing count.
type Counter struct {
	statMeta
	v uint64
}

// Counter declares a counter.
func (s *Stats) Counter(name, unit, desc string) *Counter {
	c := &Counter{statMeta: statMeta{name, unit, desc}}
	s.add(c)
	return c
}

// Inc adds one.
func (c *Counter) Inc() { c.v++ }

// Add adds n.
func (c *Counter) Add(n uint64) { c.v += n }

// Value is the count.
func (c *Counter) Value() uint64 { return c.v }

// Histogram counts samples into buckets with upper bounds Bounds (a sample v
// falls in the first bucket with v ≤ bound; larger samples in an overflow
// bucket), and keeps count, sum, min and max.
type Histogram struct {
	statMeta
	bounds []uint64
	counts []uint64 // len(bounds)+1
	n      uint64
	sum    uint64
	min    uint64
	max    uint64
}

// Histogram declares a histogram with the given ascending bucket bounds.
func (s *Stats) Histogram(name, unit, desc string, bounds []uint64) *Histogram {
	if !sort.SliceIsSorted(bounds, func(i, j int) bool { return bounds[i] < bounds[j] }) {
		panic(fmt.Sprintf("sim: histogram %s: bounds must ascend", name))
	}
	h := &Histogram{statMeta: statMeta{name, unit, desc}, bounds: append([]uint64(nil), bounds...),
		counts: make([]uint64, len(bounds)+1), min: math.MaxUint64}
	s.add(h)
	return h
}

// PowersOfTwo returns bucket bounds 1, 2, 4, … up to and including max.
func PowersOfTwo(max uint64) []uint64 {
	var b []uint64
	for v := uint64(1); v <= max && v != 0; v <<= 1 {
		b = append(b, v)
	}
	return b
}

// Observe records one sample.
func (h *Histogram) Observe(v uint64) {
	// Few buckets: a linear scan beats a binary search here.
	i := 0
	for i < len(h.bounds) && v > h.bounds[i] {
		i++
	}
	h.counts[i]++
	h.n++
	h.sum += v
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Sum of the samples.
func (h *Histogram) Sum() uint64 { return h.sum }

// Mean of the samples (0 when empty).
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return float64(h.sum) / float64(h.n)
}

// Get returns the statistic called name.
func (s *Stats) Get(name string) (Stat, bool) {
	s.mu.Lock()
	st, ok := s.byName[name]
	s.mu.Unlock()
	return st, ok
}

// All returns the statistics sorted by name.
func (s *Stats) All() []Stat {
	s.mu.Lock()
	out := append([]Stat(nil), s.order...)
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}
