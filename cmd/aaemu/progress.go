package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/sim"
)

// progress shows, on a terminal only, each running experiment's simulated
// time, its simulated time per wall second and an ETA, and for a sweep an
// overall line over its experiments. It writes to stderr and never to a
// file or a pipe, which stay deterministic. The ETAs come from the
// workload's own progress (the share of its operations started), not from
// the simulated-time limit.
type progress struct {
	p       *mpb.Progress
	overall *mpb.Bar // nil when there is a single experiment at a time
	label   string
	start   time.Time
	total   int // experiments in all

	mu       sync.Mutex
	finished int
	running  map[*meter]bool
}

// newProgress starts a display on stderr when stderr is a terminal (nil
// otherwise). label names the command; total > 1 adds the overall line.
func newProgress(stderr io.Writer, label string, total int) *progress {
	f, ok := stderr.(*os.File)
	if !ok || !isTerminal(f) {
		return nil
	}
	d := &progress{p: mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(30), mpb.WithRefreshRate(200*time.Millisecond)),
		label: label, start: time.Now(), total: total, running: map[*meter]bool{}}
	if total > 1 {
		d.overall = d.p.New(int64(total)*1000, mpb.BarStyle(),
			mpb.PrependDecorators(decor.Name(label+" ", decor.WCSyncSpaceR)),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return d.overallText() })))
	}
	return d
}

// context returns ctx with d as the runs' display (ctx itself for nil d).
func (d *progress) context(ctx context.Context) context.Context {
	if d == nil {
		return ctx
	}
	return runctl.WithDisplay(ctx, d)
}

// close removes the bars and waits for the last frame.
func (d *progress) close() {
	if d == nil {
		return
	}
	if d.overall != nil {
		d.overall.Abort(true)
	}
	d.p.Wait()
}

func (d *progress) overallText() string {
	d.mu.Lock()
	done := float64(d.finished)
	for m := range d.running {
		done += m.fraction()
	}
	n := d.finished
	d.mu.Unlock()
	f := done / float64(max(d.total, 1))
	return fmt.Sprintf("%d/%d experiments  %s", n, d.total, eta(time.Since(d.start), f))
}

// Start is runctl.Display's: a line for one experiment.
func (d *progress) Start(name string, limit sim.Tick) runctl.Meter {
	m := &meter{d: d, start: time.Now()}
	if d.overall == nil && d.label != "" {
		name = d.label + " " + name
	}
	if len(name) > 60 {
		name = "…" + name[len(name)-59:]
	}
	m.bar = d.p.New(1000, mpb.BarStyle(),
		mpb.PrependDecorators(decor.Name(name+" ", decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return m.text() })))
	d.mu.Lock()
	d.running[m] = true
	d.mu.Unlock()
	return m
}

type meter struct {
	d     *progress
	bar   *mpb.Bar
	start time.Time
	now   atomic.Uint64 // simulated ps
	frac  atomic.Uint64 // float64 bits
	last  time.Time     // of the bar's last update
}

func (m *meter) fraction() float64 { return math.Float64frombits(m.frac.Load()) }

// Update is runctl.Meter's; the bar moves at most every 50 ms.
func (m *meter) Update(now sim.Tick, frac float64) {
	m.now.Store(uint64(now))
	m.frac.Store(math.Float64bits(min(max(frac, 0), 1)))
	if t := time.Now(); t.Sub(m.last) >= 50*time.Millisecond {
		m.last = t
		m.bar.SetCurrent(int64(1000 * m.fraction()))
		if m.d.overall != nil {
			m.d.mu.Lock()
			done := float64(m.d.finished)
			for r := range m.d.running {
				done += r.fraction()
			}
			m.d.mu.Unlock()
			m.d.overall.SetCurrent(int64(1000 * done))
		}
	}
}

// End is runctl.Meter's: the line goes.
func (m *meter) End() {
	m.bar.Abort(true)
	d := m.d
	d.mu.Lock()
	delete(d.running, m)
	d.finished++
	n := d.finished
	d.mu.Unlock()
	if d.overall != nil {
		d.overall.SetCurrent(int64(1000 * n))
	}
}

// text is an experiment's line: simulated time, simulated time per wall
// second, ETA.
func (m *meter) text() string {
	wall := time.Since(m.start)
	now := sim.Tick(m.now.Load())
	rate := "—"
	if s := wall.Seconds(); s > 0 {
		rate = short(sim.Tick(float64(now)/s)) + "/s"
	}
	return fmt.Sprintf("sim %s  %s  %s", short(now), rate, eta(wall, m.fraction()))
}

// eta is "ETA 1m20s" from the wall time spent on the share f done.
func eta(spent time.Duration, f float64) string {
	if f <= 0 || spent < 500*time.Millisecond {
		return "ETA …"
	}
	left := time.Duration(float64(spent) * (1 - f) / f)
	return "ETA " + left.Round(time.Second).String()
}

// short is a simulated time with three significant digits.
func short(t sim.Tick) string {
	units := []struct {
		name string
		v    sim.Tick
	}{{"s", sim.S}, {"ms", sim.MS}, {"µs", sim.US}, {"ns", sim.NS}}
	for _, u := range units {
		if t >= u.v {
			v := float64(t) / float64(u.v)
			digits := 2
			if v >= 100 {
				digits = 0
			} else if v >= 10 {
				digits = 1
			}
			return strconv.FormatFloat(v, 'f', digits, 64) + u.name
		}
	}
	return strconv.FormatUint(uint64(t), 10) + "ps"
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
