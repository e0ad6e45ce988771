// Package runctl runs a cluster's simulation under a command's control: it
// stops between the engine's time slices once the command's context is
// cancelled (an interrupt), and tells a display, if the context carries
// one, each experiment's simulated time and progress. Neither changes what
// is simulated: the checks read the context, never the model, and a run
// that is not interrupted ends exactly where it would have.
package runctl

import (
	"context"
	"errors"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// ErrInterrupted is what a runner returns when its context was cancelled
// before it finished.
var ErrInterrupted = errors.New("interrupted")

// Meter shows one experiment's progress. Its methods are called on the
// simulation's goroutine, so they must be quick.
type Meter interface {
	// Update is called after every time slice: now is the simulated time,
	// frac the experiment's progress (0..1).
	Update(now sim.Tick, frac float64)
	// End is called once when the experiment stops.
	End()
}

// Display makes a Meter for each experiment a runner starts; name says
// which experiment, limit is its simulated-time bound.
type Display interface {
	Start(name string, limit sim.Tick) Meter
}

type displayKey struct{}

// WithDisplay returns a context whose runs report to d.
func WithDisplay(ctx context.Context, d Display) context.Context {
	return context.WithValue(ctx, displayKey{}, d)
}

// DisplayOf is the display ctx carries, or nil.
func DisplayOf(ctx context.Context) Display {
	d, _ := ctx.Value(displayKey{}).(Display)
	return d
}

// Run runs cluster c as c.Run(limit, c.AppsDone) does, and also stops
// after the slice in which ctx is cancelled. progress is the workload's own
// progress, 0..1 (nil: the simulated time over limit). It returns the end
// time and whether the run stopped for ctx before the applications were
// done.
func Run(ctx context.Context, c *machine.Cluster, name string, limit sim.Tick, progress func() float64) (end sim.Tick, interrupted bool) {
	var m Meter
	if d := DisplayOf(ctx); d != nil {
		m = d.Start(name, limit)
		defer m.End()
	}
	stop := ctx.Done()
	done := func() bool {
		if c.AppsDone() {
			return true
		}
		if m != nil {
			now := c.Now()
			var f float64
			if progress != nil {
				f = progress()
			} else if limit > 0 {
				f = float64(now) / float64(limit)
			}
			m.Update(now, f)
		}
		select {
		case <-stop:
			interrupted = true
			return true
		default:
			return false
		}
	}
	end = c.Run(limit, done)
	return end, interrupted
}

// Canceled reports whether ctx has been cancelled.
func Canceled(ctx context.Context) bool { return ctx.Err() != nil }
