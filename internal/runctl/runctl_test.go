package runctl_test

import (
	"context"
	"testing"

	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

type recorder struct {
	updates []float64
	times   []sim.Tick
	ended   int
	onUpd   func(n int)
}

func (r *recorder) Start(string, sim.Tick) runctl.Meter { return r }
func (r *recorder) Update(now sim.Tick, f float64) {
	r.updates, r.times = append(r.updates, f), append(r.times, now)
	if r.onUpd != nil {
		r.onUpd(len(r.updates))
	}
}
func (r *recorder) End() { r.ended++ }

func prepare(t *testing.T) scenario.Prepared {
	t.Helper()
	sc := scenario.DefaultScenario()
	p, err := sc.PrepareRun(sim.NewEngine(sc.Seed), sc.Experiments()[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Watched, a run ends where an unwatched one does, and the display sees
// the simulated time and the workload's progress grow to the end.
func TestRunUnchangedByDisplay(t *testing.T) {
	plain := prepare(t)
	want := plain.Sys.Run(10*sim.S, plain.Sys.AppsDone)
	p := prepare(t)
	r := &recorder{}
	end, stopped := runctl.Run(runctl.WithDisplay(context.Background(), r), p.Sys.Cluster, "x", 10*sim.S, p.Progress)
	if stopped || end != want {
		t.Fatalf("watched run ended at %v (stopped %v), unwatched at %v", end, stopped, want)
	}
	if _, err := p.Finish(end); err != nil {
		t.Fatal(err)
	}
	if len(r.updates) < 3 || r.ended != 1 {
		t.Fatalf("%d updates, %d ends", len(r.updates), r.ended)
	}
	for i := 1; i < len(r.updates); i++ {
		if r.updates[i] < r.updates[i-1] || r.times[i] <= r.times[i-1] {
			t.Fatalf("progress went back at update %d: %v at %v after %v at %v", i, r.updates[i], r.times[i], r.updates[i-1], r.times[i-1])
		}
	}
	if last := r.updates[len(r.updates)-1]; last < 0.9 || last > 1 {
		t.Fatalf("last progress %v", last)
	}
}

// Cancelled, a run stops after the slice it was cancelled in.
func TestRunStopsWhenCancelled(t *testing.T) {
	p := prepare(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{onUpd: func(n int) {
		if n == 3 {
			cancel()
		}
	}}
	end, stopped := runctl.Run(runctl.WithDisplay(ctx, r), p.Sys.Cluster, "x", 10*sim.S, p.Progress)
	if !stopped || len(r.updates) != 3 || end != r.times[2] || p.Sys.AppsDone() {
		t.Fatalf("stopped %v after %d updates at %v", stopped, len(r.updates), end)
	}
	if _, err := p.Finish(end); err == nil {
		t.Fatal("an interrupted run finished")
	}
}
