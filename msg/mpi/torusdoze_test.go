package mpi

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/sim"
)

// torusDozeRun runs ranks that compute for random times between MPI
// calls — point-to-point messages of every protocol of the layer and
// MPI's rendezvous, MPICH2's broadcast (binomial and scatter + ring),
// an allreduce, a barrier — on a torus of 16 nodes (in coprocessor mode
// with co), polling every pass of the wait loop (off) or dozing, and
// returns every rank's finish, every statistic of the run and the
// kernel's unit evaluations.
func torusDozeRun(t *testing.T, off, co bool, seed int64, coll Collectives) (string, uint64) {
	t.Helper()
	dozeOff = off
	defer func() { dozeOff = false }()
	spec := bgl.DefaultSpec(4, 2, 2)
	tc := TorusConfig{}
	if co {
		spec = spec.WithMode(bgl.CoprocessorMode)
		tc.ML = bglml.DefaultParams()
		tc.ML.Coprocessor = true
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	res, err := RunTorus(m, Config{Collectives: coll}, tc, nil, func(c *Comm) {
		n, me := c.Size(), c.Rank()
		rng := rand.New(rand.NewSource(seed + int64(me)))
		for k, size := range []int{1, 180, 1000, 3000, 20000} {
			c.Compute(rng.Intn(20000))
			to, from := (me+k+1)%n, (me-k-1+n)%n
			s, r := c.Alloc(size), c.Alloc(size)
			c.Write(s, torusPattern(me, k, size))
			if _, err := c.Sendrecv(s, to, k, r, from, k); err != nil {
				failed = append(failed, err.Error())
			}
			if !bytes.Equal(c.Read(r), torusPattern(from, k, size)) {
				failed = append(failed, fmt.Sprintf("rank %d: %d bytes from rank %d differ", me, size, from))
			}
		}
		for k, size := range []int{700, 40000} {
			c.Compute(rng.Intn(30000))
			b := c.Alloc(size)
			if me == k {
				c.Write(b, torusPattern(k, 9, size))
			}
			if err := c.Bcast(b, k); err != nil {
				failed = append(failed, err.Error())
			}
			if !bytes.Equal(c.Read(b), torusPattern(k, 9, size)) {
				failed = append(failed, fmt.Sprintf("rank %d: broadcast of %d bytes differs", me, size))
			}
		}
		if _, ok := coll.(BGL); ok {
			// BGL's deposit broadcast (a duplicate of the world is a box)
			// and mesh-aware one (a checkerboard is not)
			d, _ := c.Dup()
			q, _ := c.Split(me%2^me/4%2, me)
			for k, cc := range []*Comm{d, q} {
				c.Compute(rng.Intn(20000))
				b := c.Alloc(5000)
				if cc.Rank() == 1 {
					c.Write(b, torusPattern(k, 8, 5000))
				}
				if err := cc.Bcast(b, 1); err != nil {
					failed = append(failed, err.Error())
				}
				if !bytes.Equal(c.Read(b), torusPattern(k, 8, 5000)) {
					failed = append(failed, fmt.Sprintf("rank %d: broadcast %d of BGL differs", me, k))
				}
			}
		}
		s, r := c.Alloc(8), c.Alloc(8)
		c.WriteUint64s(s, []uint64{uint64(me)})
		if err := c.Allreduce(s, r, SumUint64); err != nil {
			failed = append(failed, err.Error())
		}
		c.Compute(rng.Intn(5000))
		if err := c.Barrier(); err != nil {
			failed = append(failed, err.Error())
		}
	})
	if err != nil {
		t.Fatalf("co %v, seed %d, polling %v: %v", co, seed, off, err)
	}
	for _, f := range failed {
		t.Error(f)
	}
	var log strings.Builder
	log.WriteString(statsLog(res.Finish, m.World))
	fmt.Fprintf(&log, "end %d\n", m.World.Now())
	return log.String(), m.World.UnitTicks()
}

// TestTorusDozeMatchesPolling: a rank waiting in MPI over the torus
// dozes through the passes of its wait loop that would find nothing
// (bglml.Layer.SleepAdvance), and the run is the polling loop's to the
// picosecond — every rank's finish and every statistic, the cores'
// operations and busy time among them — in heater and coprocessor mode;
// and dozing saves kernel evaluations (else it tested nothing).
func TestTorusDozeMatchesPolling(t *testing.T) {
	for _, c := range []struct {
		co   bool
		seed int64
		coll Collectives
	}{{false, 1, MPICH2{}}, {false, 2, MPICH2{}}, {true, 1, MPICH2{}}, {true, 2, MPICH2{}}, {false, 3, BGL{}}, {true, 3, BGL{}}} {
		co, seed := c.co, c.seed
		{
			poll, pollTicks := torusDozeRun(t, true, co, seed, c.coll)
			doze, dozeTicks := torusDozeRun(t, false, co, seed, c.coll)
			if poll != doze {
				a, b := strings.Split(poll, "\n"), strings.Split(doze, "\n")
				for i := range a {
					if i < len(b) && a[i] != b[i] {
						t.Errorf("co %v, seed %d: polling %q, dozing %q", co, seed, a[i], b[i])
						break
					}
				}
				continue
			}
			if dozeTicks >= pollTicks {
				t.Errorf("co %v, seed %d: %d unit evaluations dozing, %d polling", co, seed, dozeTicks, pollTicks)
			}
			t.Logf("co %v, seed %d: unit evaluations %d polling, %d dozing", co, seed, pollTicks, dozeTicks)
		}
	}
}

// statsLog writes each rank's finish and every statistic of the world, so
// that two runs can be compared line by line.
func statsLog(finish []sim.Tick, w *sim.World) string {
	var log strings.Builder
	fmt.Fprintf(&log, "finish %v\n", finish)
	for _, st := range w.Stats().All() {
		switch v := st.(type) {
		case *sim.Counter:
			fmt.Fprintf(&log, "%s %d\n", st.Name(), v.Value())
		case *sim.Histogram:
			fmt.Fprintf(&log, "%s %d %d\n", st.Name(), v.Count(), v.Sum())
		}
	}
	return log.String()
}
