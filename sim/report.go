package sim

import (
	"encoding/json"
	"io"
	"math"
	"runtime"
	"syscall"
	"time"
)

// StatsFormatVersion is the version of the statistics file layout. It
// changes whenever a field changes meaning or disappears.
const StatsFormatVersion = 1

// RunInfo is what the statistics file records about a run besides the
// statistics themselves.
type RunInfo struct {
	Version string        // aaemu version
	Config  any           // the full configuration, JSON-encodable
	Wall    time.Duration // host wall time of the run
	// Host includes the host's own speed (wall time, rates, peak memory).
	// Leave it out to get a file that is byte-identical across runs.
	Host bool
	// Results are the run's own measurements (a workload's table), written
	// as they are.
	Results any
}

type statsFile struct {
	Format        string               `json:"format"`
	FormatVersion int                  `json:"format_version"`
	AaemuVersion  string               `json:"aaemu_version"`
	Seed          uint64               `json:"seed"`
	Config        any                  `json:"config"`
	Simulation    simSummary           `json:"simulation"`
	Stats         map[string]statEntry `json:"stats"`
	Results       any                  `json:"results,omitempty"`
	Host          *HostSpeed           `json:"host,omitempty"`
}

type simSummary struct {
	EndTimePS       uint64         `json:"end_time_ps"`
	Transactions    uint64         `json:"transactions"`
	TimeSteps       uint64         `json:"time_steps"`
	UnitEvaluations uint64         `json:"unit_evaluations"`
	Cycles          uint64         `json:"cycles"`
	Clocks          []clockSummary `json:"clocks"`
}

type clockSummary struct {
	Name           string `json:"name"`
	PeriodPS       uint64 `json:"period_ps"`
	PhasePS        uint64 `json:"phase_ps"`
	Cycles         uint64 `json:"cycles"`
	EdgesEvaluated uint64 `json:"edges_evaluated"`
}

type bucket struct {
	LE    uint64 `json:"le"`
	Count uint64 `json:"count"`
}

type statEntry struct {
	Kind  string  `json:"kind"`
	Unit  string  `json:"unit"`
	Desc  string  `json:"desc"`
	Value *uint64 `json:"value,omitempty"`
	// histograms
	Count    *uint64  `json:"count,omitempty"`
	Sum      *uint64  `json:"sum,omitempty"`
	Min      *uint64  `json:"min,omitempty"`
	Max      *uint64  `json:"max,omitempty"`
	Mean     *float64 `json:"mean,omitempty"`
	Buckets  []bucket `json:"buckets,omitempty"`
	Overflow *uint64  `json:"overflow,omitempty"`
}

// HostSpeed is how fast the host ran a simulation: wall time, rates, peak
// memory. It differs from run to run.
type HostSpeed struct {
	WallSeconds       float64 `json:"wall_seconds"`
	SimPSPerWallS     float64 `json:"sim_ps_per_wall_second"`
	CyclesPerSecond   float64 `json:"cycles_per_wall_second"`
	EvalsPerSecond    float64 `json:"unit_evaluations_per_wall_second"`
	TxnPerSecond      float64 `json:"transactions_per_wall_second"`
	PeakRSSBytes      uint64  `json:"peak_rss_bytes"`
	GoVersion         string  `json:"go_version"`
	Platform          string  `json:"platform"`
	CPUs              int     `json:"cpus"`
	SimulatedSeconds  float64 `json:"simulated_seconds"`
	SlowdownVsRealHW  float64 `json:"slowdown_vs_real_time"`
	UnitEvaluationsNS float64 `json:"ns_per_unit_evaluation"`
}

// TotalCycles is the number of clock cycles elapsed in the domain's clocks
// up to the world's time (World.Now).
func (e *Engine) TotalCycles() uint64 { return e.cycles(e.w.Now()) }

func (e *Engine) cycles(now Tick) uint64 {
	var n uint64
	for _, c := range e.clks {
		n += c.Cycles(now)
	}
	return n
}

// TotalCycles is the number of clock cycles elapsed in all clocks of all
// domains up to now.
func (w *World) TotalCycles() uint64 {
	now := w.Now()
	var n uint64
	for _, d := range w.doms {
		n += d.cycles(now)
	}
	return n
}

// Snapshot is an engine's statistics at one moment, as the statistics
// file records them: deterministic for a given model and seed.
type Snapshot struct {
	Simulation simSummary           `json:"simulation"`
	Stats      map[string]statEntry `json:"stats"`
}

// Snapshot takes the statistics of the engine's world now (World.Snapshot).
func (e *Engine) Snapshot() Snapshot { return e.w.Snapshot() }

// Snapshot takes the world's statistics now: the end time is the world's
// time, the counts (transactions, time steps, unit evaluations, cycles) are
// sums over the domains, and the clocks are listed domain by domain, each
// under its Path. It is the same for any number of partitions.
func (w *World) Snapshot() Snapshot {
	s := Snapshot{Stats: map[string]statEntry{}}
	now := w.Now()
	s.Simulation = simSummary{EndTimePS: uint64(now), Transactions: w.Transactions(), TimeSteps: w.Steps(),
		UnitEvaluations: w.UnitTicks(), Cycles: w.TotalCycles()}
	for _, d := range w.doms {
		for _, c := range d.clks {
			s.Simulation.Clocks = append(s.Simulation.Clocks, clockSummary{Name: c.path, PeriodPS: uint64(c.period),
				PhasePS: uint64(c.phase), Cycles: c.Cycles(now), EdgesEvaluated: c.edges})
		}
	}
	for _, st := range w.stats.All() {
		ent := statEntry{Unit: st.Unit(), Desc: st.Desc()}
		switch s := st.(type) {
		case *Counter:
			ent.Kind = "counter"
			v := s.v
			ent.Value = &v
		case *Histogram:
			ent.Kind = "histogram"
			n, sum, mn, mx, mean := s.n, s.sum, s.min, s.max, s.Mean()
			if n == 0 {
				mn = 0
			}
			ent.Count, ent.Sum, ent.Min, ent.Max, ent.Mean = &n, &sum, &mn, &mx, &mean
			for i, b := range s.bounds {
				ent.Buckets = append(ent.Buckets, bucket{LE: b, Count: s.counts[i]})
			}
			ov := s.counts[len(s.bounds)]
			ent.Overflow = &ov
		}
		s.Stats[st.Name()] = ent
	}
	return s
}

// HostSpeed is the host's speed over a simulation of the engine's world.
func (e *Engine) HostSpeed(wallTime time.Duration) *HostSpeed { return e.w.HostSpeed(wallTime) }

// HostSpeed is the host's speed over a simulation that took wall time.
func (w *World) HostSpeed(wallTime time.Duration) *HostSpeed {
	wall := wallTime.Seconds()
	if wall <= 0 {
		wall = math.SmallestNonzeroFloat64
	}
	h := &HostSpeed{WallSeconds: wallTime.Seconds(), GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), PeakRSSBytes: peakRSS()}
	now, ticks := w.Now(), w.UnitTicks()
	cycles := w.TotalCycles()
	h.SimPSPerWallS = float64(now) / wall
	h.CyclesPerSecond = float64(cycles) / wall
	h.EvalsPerSecond = float64(ticks) / wall
	h.TxnPerSecond = float64(w.Transactions()) / wall
	h.SimulatedSeconds = float64(now) / 1e12
	if h.SimulatedSeconds > 0 {
		h.SlowdownVsRealHW = wall / h.SimulatedSeconds
	}
	if ticks > 0 {
		h.UnitEvaluationsNS = wall * 1e9 / float64(ticks)
	}
	return h
}

// WriteStatsJSON writes the statistics file of the engine's world
// (World.WriteStatsJSON).
func (e *Engine) WriteStatsJSON(w io.Writer, info RunInfo) error { return e.w.WriteStatsJSON(w, info) }

// WriteStatsJSON writes the statistics file: values with their units and
// descriptions, the configuration, the seed, the version and, optionally, the
// host's speed. Keys are sorted, so the file is deterministic without Host.
func (w *World) WriteStatsJSON(out io.Writer, info RunInfo) error {
	snap := w.Snapshot()
	f := statsFile{Format: "aaemu-stats", FormatVersion: StatsFormatVersion, AaemuVersion: info.Version,
		Seed: w.seed, Config: info.Config, Simulation: snap.Simulation, Stats: snap.Stats, Results: info.Results}
	if info.Host {
		f.Host = w.HostSpeed(info.Wall)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// peakRSS is the process's peak resident set size in bytes.
func peakRSS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) * 1024 // Linux reports kilobytes
}
