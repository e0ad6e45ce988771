package mpi

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/sim"
)

// progressMachine is a 4×2×2 torus for MPI with progress how (coprocessor
// mode for the thread, heater otherwise).
func progressMachine(t *testing.T, how bglml.Progress) *bgl.Machine {
	t.Helper()
	spec := bgl.DefaultSpec(4, 2, 2)
	if how == bglml.Thread {
		spec = spec.WithMode(bgl.CoprocessorMode)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// progressTraffic is the test's MPI program: a ping-pong of every
// protocol's sizes between ranks 0 and 1 (into a misaligned buffer),
// a shifted Sendrecv around the ranks, MPICH2's broadcasts (binomial and
// scatter + ring), an alltoall, an allreduce and a barrier, every rank
// computing between calls; every byte is checked. It returns what every
// rank received, in order, for comparing the modes.
func progressTraffic(c *Comm, fail func(string), got *[]string) {
	n, me := c.Size(), c.Rank()
	log := func(f string, a ...any) {
		if me == 0 {
			*got = append(*got, fmt.Sprintf(f, a...))
		}
	}
	for k, size := range []int{1, 180, 1000, 3000, 20000} {
		b := c.Alloc(size + 3)
		mb := Buf{Addr: b.Addr + 3, Len: size}
		switch me {
		case 0:
			c.Write(mb, torusPattern(0, k, size))
			if err := c.Send(mb, 1, k); err != nil {
				fail(err.Error())
			}
			if _, err := c.Recv(mb, 1, k); err != nil {
				fail(err.Error())
			}
			if !bytes.Equal(c.Read(mb), torusPattern(1, k, size)) {
				fail(fmt.Sprintf("ping-pong of %d bytes: the reply differs", size))
			}
			log("pong %d %x", size, c.Read(mb)[:min(size, 8)])
		case 1:
			if _, err := c.Recv(mb, 0, k); err != nil {
				fail(err.Error())
			}
			if !bytes.Equal(c.Read(mb), torusPattern(0, k, size)) {
				fail(fmt.Sprintf("ping-pong of %d bytes: the ping differs", size))
			}
			c.Compute(3000)
			c.Write(mb, torusPattern(1, k, size))
			if err := c.Send(mb, 0, k); err != nil {
				fail(err.Error())
			}
		}
	}
	for k, size := range []int{1000, 5000} {
		c.Compute(1000 * (me + k))
		to, from := (me+k+1)%n, (me-k-1+n)%n
		s, r := c.Alloc(size), c.Alloc(size)
		c.Write(s, torusPattern(me, k, size))
		if _, err := c.Sendrecv(s, to, 10+k, r, from, 10+k); err != nil {
			fail(err.Error())
		}
		if !bytes.Equal(c.Read(r), torusPattern(from, k, size)) {
			fail(fmt.Sprintf("rank %d: sendrecv of %d bytes from rank %d differs", me, size, from))
		}
		log("sendrecv %d %x", size, c.Read(r)[:8])
	}
	for k, size := range []int{700, 40000} {
		b := c.Alloc(size)
		if me == k {
			c.Write(b, torusPattern(k, 9, size))
		}
		if err := c.Bcast(b, k); err != nil {
			fail(err.Error())
		}
		if !bytes.Equal(c.Read(b), torusPattern(k, 9, size)) {
			fail(fmt.Sprintf("rank %d: broadcast of %d bytes differs", me, size))
		}
		log("bcast %d %x", size, c.Read(b)[size-8:])
	}
	const blk = 100
	s, r := c.Alloc(blk*n), c.Alloc(blk*n)
	for j := 0; j < n; j++ {
		c.Write(Buf{Addr: s.Addr + uint64(j*blk), Len: blk}, torusPattern(me, j, blk))
	}
	if err := c.Alltoall(s, r); err != nil {
		fail(err.Error())
	}
	for j := 0; j < n; j++ {
		if !bytes.Equal(c.Read(Buf{Addr: r.Addr + uint64(j*blk), Len: blk}), torusPattern(j, me, blk)) {
			fail(fmt.Sprintf("rank %d: alltoall block from rank %d differs", me, j))
		}
	}
	log("alltoall %x", c.Read(r)[blk*n-8:])
	a, sum := c.Alloc(8), c.Alloc(8)
	c.WriteUint64s(a, []uint64{uint64(me + 1)})
	if err := c.Allreduce(a, sum, SumUint64); err != nil {
		fail(err.Error())
	}
	if v := c.Uint64s(sum)[0]; v != uint64(n*(n+1)/2) {
		fail(fmt.Sprintf("rank %d: allreduce %d", me, v))
	}
	log("allreduce %d", c.Uint64s(sum)[0])
	if err := c.Barrier(); err != nil {
		fail(err.Error())
	}
}

// TestTorusProgressDeliver runs the same MPI program over the message
// layer polling, with the communication thread and interrupt-driven:
// every byte arrives in each, rank 0 receives the same data, and the mode
// is the one asked for (the thread's posts and completions, the
// interrupts' handlers counted; none with polling).
func TestTorusProgressDeliver(t *testing.T) {
	var want []string
	for _, how := range bglml.Progresses {
		t.Run(how.String(), func(t *testing.T) {
			m := progressMachine(t, how)
			var failed, got []string
			var eps []*torusEP
			res, err := RunTorus(m, Config{Collectives: MPICH2{}}, TorusConfig{Progress: how}, nil, func(c *Comm) {
				if ep, ok := c.r.eps[0].(*torusEP); ok && c.Rank() < 2 {
					eps = append(eps, ep)
				}
				progressTraffic(c, func(s string) { failed = append(failed, s) }, &got)
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range failed {
				t.Error(f)
			}
			if want == nil {
				want = got
			} else if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("rank 0 received\n%s\nwith polling\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, ep := range eps {
				st := ep.ml.IrqStats
				switch how {
				case bglml.Polling:
					if ep.ct != nil || st.Raised != 0 {
						t.Errorf("polling: a thread or %d interrupts", st.Raised)
					}
				case bglml.Thread:
					if ep.ct == nil || ep.ct.Stats.Posted == 0 || ep.ct.Stats.Completions == 0 || ep.owed != 0 {
						t.Errorf("thread: %+v, %d owed", ep.ct, ep.owed)
					}
				case bglml.Interrupts:
					if st.Raised == 0 || st.Worked == 0 {
						t.Errorf("interrupts: %+v", st)
					}
				}
			}
			t.Logf("%v: end %v", how, res.End)
		})
	}
}
