package mpi

import (
	"errors"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// A rank that cannot go on aborts the run with a reason, as
// MPI_ERRORS_ARE_FATAL aborts a job: its connection dying (the wire loses
// everything, the QP runs out of retries and flushes its receives), or its
// program panicking. Run returns an *AbortError; nothing crashes.
func TestAbort(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*machine.Spec, *Config)
		body func(c *Comm)
		want []string
	}{
		{"dead wire", func(s *machine.Spec, _ *Config) { s.Wire.LossPPM = 1_000_000 }, func(c *Comm) {
			b := c.Alloc(64)
			if c.Rank() == 0 {
				c.Send(b, 1, 1)
			} else {
				c.Recv(b, 0, 1)
			}
		}, []string{"aborted the run", "connection from node", "ran out of retries", "lost"}},
		{"panicking program", nil, func(c *Comm) {
			if c.Rank() == 1 {
				panic("the program's own bug")
			}
			c.Barrier()
		}, []string{"rank 1 aborted the run", "the program's own bug"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := run(t, fabrics[1], 2, tc.mut, tc.body)
			var ae *AbortError
			if !errors.As(err, &ae) {
				t.Fatalf("error %v, want an AbortError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			if ae.At > sim.S {
				t.Errorf("aborted only at %v", ae.At.Human())
			}
		})
	}
}

// Config.Stop ends a run between slices of simulated time with
// ErrStopped, well before the work would end.
func TestStop(t *testing.T) {
	var now func() sim.Tick
	_, c, err := run(t, fabrics[1], 2, func(_ *machine.Spec, cfg *Config) {
		cfg.Stop = func() bool { return now != nil && now() > 100*sim.US }
	}, func(c *Comm) {
		if c.Rank() == 0 {
			now = c.Now
		}
		c.Compute(1 << 30) // seconds of work
	})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("error %v, want ErrStopped", err)
	}
	if c.Now() > sim.MS {
		t.Errorf("stopped only at %v", c.Now().Human())
	}
}
