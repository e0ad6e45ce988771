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

// coreStat is the counter name (ending with suffix) of node's main core.
func coreStat(m *bgl.Machine, node int, suffix string) uint64 {
	name := m.Nodes[node].Cores[0].Unit().Name() + "." + suffix
	st, ok := m.World.Stats().Get(name)
	if !ok {
		return 0
	}
	return st.(*sim.Counter).Value()
}

// progressCosts runs, on two neighbours, rank 1 waiting in a Recv while
// rank 0 computes wait cycles and then sends a byte, then (after a
// barrier) rank 0 sending msgs eager messages of size bytes while rank 1
// computes work cycles before receiving them. It returns rank 1's core's
// busy cycles during the wait, how much longer than work its computation
// took, and the cycles from its end until every message was received.
func progressCosts(t *testing.T, how bglml.Progress, wait, work, msgs, size int) (busy, stretch, after int64, st bglml.IrqStats) {
	t.Helper()
	m := progressMachine(t, how)
	period := int64(m.Nodes[0].Cores[0].Spec().PeriodPS)
	var failed []string
	var ep *torusEP
	_, err := RunTorus(m, Config{}, TorusConfig{Progress: how}, []int{0, 1}, func(c *Comm) {
		b := c.Alloc(max(size, 1) * msgs)
		if c.Rank() == 0 {
			c.Compute(wait)
			if err := c.Send(Buf{Addr: b.Addr, Len: 1}, 1, 0); err != nil {
				failed = append(failed, err.Error())
			}
		} else {
			ep = c.r.eps[0].(*torusEP)
			b0 := coreStat(m, 1, "busy_ps")
			if _, err := c.Recv(Buf{Addr: b.Addr, Len: 1}, 0, 0); err != nil {
				failed = append(failed, err.Error())
			}
			busy = int64(coreStat(m, 1, "busy_ps")-b0) / period
		}
		if err := c.Barrier(); err != nil {
			failed = append(failed, err.Error())
		}
		if c.Rank() == 0 {
			for k := 0; k < msgs; k++ {
				mb := Buf{Addr: b.Addr + uint64(k*size), Len: size}
				c.Write(mb, torusPattern(0, k, size))
				if err := c.Send(mb, 1, 1+k); err != nil {
					failed = append(failed, err.Error())
				}
			}
			return
		}
		t0 := c.Now()
		c.Compute(work)
		t1 := c.Now()
		for k := 0; k < msgs; k++ {
			mb := Buf{Addr: b.Addr + uint64(k*size), Len: size}
			if _, err := c.Recv(mb, 0, 1+k); err != nil {
				failed = append(failed, err.Error())
			}
			if !bytes.Equal(c.Read(mb), torusPattern(0, k, size)) {
				failed = append(failed, fmt.Sprintf("message %d differs", k))
			}
		}
		stretch = int64(t1-t0)/period - int64(work)
		after = int64(c.Now()-t1) / period
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failed {
		t.Error(f)
	}
	return busy, stretch, after, ep.ml.IrqStats
}

// TestTorusProgressCosts: what each mode costs shows where it must, and
// a mode that is not followed fails it. A rank waiting 200,000 cycles
// in MPI is busy polling the layer (passes) or the scratchpad (the
// thread), and halted under interrupts (a few handlers' cycles); eight
// 1,000-byte messages that arrive while the receiver computes are read
// by the thread (the computation as long as it was, the receives after
// it short), by the handlers (the computation longer by at least their
// context switches, the receives after it short), or by the rank's
// passes after the computation (polling: the longest).
func TestTorusProgressCosts(t *testing.T) {
	const wait, work, msgs, size = 200000, 100000, 8, 1000
	type res struct {
		busy, stretch, after int64
		st                   bglml.IrqStats
	}
	r := map[bglml.Progress]res{}
	for _, how := range bglml.Progresses {
		b, s, a, st := progressCosts(t, how, wait, work, msgs, size)
		r[how] = res{b, s, a, st}
		t.Logf("%-10v wait: %6d busy cycles; computation +%d cycles, receives after it %d cycles; %d interrupts (%d dismissed)", how, b, s, a, st.Raised, st.Dismissed)
	}
	p, th, in := r[bglml.Polling], r[bglml.Thread], r[bglml.Interrupts]
	if p.busy < wait/2 || th.busy < wait/4 {
		t.Errorf("the polling and the thread's waits busy %d and %d cycles of %d", p.busy, th.busy, wait)
	}
	if in.busy > 2000 {
		t.Errorf("interrupts: a halted wait busy %d cycles of %d", in.busy, wait)
	}
	if p.stretch != 0 || th.stretch != 0 {
		t.Errorf("the computation stretched by %d (polling) and %d (thread) cycles", p.stretch, th.stretch)
	}
	if min := int64(in.st.Raised-in.st.Dismissed) * 103; in.st.Raised == 0 || in.stretch < int64(msgs)*103 {
		t.Errorf("interrupts: the computation stretched by %d cycles with %d interrupts (at least %d)", in.stretch, in.st.Raised, min)
	}
	if th.after*2 > p.after || in.after*2 > p.after {
		t.Errorf("receives after the computation: thread %d, interrupts %d cycles, not under half polling's %d", th.after, in.after, p.after)
	}
}

// TestTorusProgressBadInput: the modes' refusals.
func TestTorusProgressBadInput(t *testing.T) {
	heater := bgl.DefaultSpec(2, 2, 1)
	co := heater.WithMode(bgl.CoprocessorMode)
	vn := heater.WithMode(bgl.VirtualNodeMode)
	withHelper := TorusConfig{Progress: bglml.Thread, ML: bglml.DefaultParams()}
	withHelper.ML.Coprocessor = true
	for _, c := range []struct {
		name string
		spec bgl.Spec
		tc   TorusConfig
		coll Collectives
		want string
	}{
		{"thread in heater mode", heater, TorusConfig{Progress: bglml.Thread}, nil, "needs coprocessor mode"},
		{"interrupts in virtual node mode", vn, TorusConfig{Progress: bglml.Interrupts}, nil, "virtual node mode"},
		{"no such mode", heater, TorusConfig{Progress: 7}, nil, "polling, thread, interrupts"},
		{"the thread and the helper", co, withHelper, nil, "rendezvous helper"},
		{"BGL's collectives with the thread", co, TorusConfig{Progress: bglml.Thread}, BGL{}, "polling only"},
		{"BGL's collectives with interrupts", heater, TorusConfig{Progress: bglml.Interrupts}, BGL{}, "polling only"},
	} {
		m, err := bgl.New(sim.NewWorld(1), "bgl", c.spec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = RunTorus(m, Config{Collectives: c.coll}, c.tc, nil, func(c *Comm) {})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestTorusThreadDozeMatchesPolling: with the communication thread, a
// rank waiting in MPI dozes through the looks at the scratchpad that
// would find no completion (bglml.CommThread.SleepReap), and the run is
// the looking loop's to the picosecond: every rank's finish and every
// statistic, the cores' operations and busy time among them.
func TestTorusThreadDozeMatchesPolling(t *testing.T) {
	run := func(off bool) (string, uint64) {
		dozeOff = off
		defer func() { dozeOff = false }()
		m := progressMachine(t, bglml.Thread)
		var failed, got []string
		res, err := RunTorus(m, Config{Collectives: MPICH2{}}, TorusConfig{Progress: bglml.Thread}, nil, func(c *Comm) {
			progressTraffic(c, func(s string) { failed = append(failed, s) }, &got)
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range failed {
			t.Error(f)
		}
		var log strings.Builder
		log.WriteString(statsLog(res.Finish, m.World))
		return log.String(), m.World.UnitTicks()
	}
	look, lookTicks := run(true)
	doze, dozeTicks := run(false)
	if look != doze {
		a, b := strings.Split(look, "\n"), strings.Split(doze, "\n")
		for i := range a {
			if i < len(b) && a[i] != b[i] {
				t.Fatalf("looking %q, dozing %q", a[i], b[i])
			}
		}
	}
	t.Logf("unit evaluations: %d looking, %d dozing", lookTicks, dozeTicks)
	if dozeTicks >= lookTicks {
		t.Errorf("dozing took %d unit evaluations, looking %d", dozeTicks, lookTicks)
	}
}

// TestTorusProgressMPICosts: MPI's per-message software (TorusConfig.MPI,
// the table1 profile's) is paid in every progress mode, at the send and
// at the delivery: a one-packet ping-pong's half round trip grows by
// about the send and receive costs added (a wait loop's look either way)
// under polling, the thread and interrupts alike.
func TestTorusProgressMPICosts(t *testing.T) {
	const send, recv, iters = 600, 900, 4
	half := func(how bglml.Progress, mc bglml.MessageCosts) int64 {
		m := progressMachine(t, how)
		period := int64(m.Nodes[0].Cores[0].Spec().PeriodPS)
		var start, end sim.Tick
		var failed []string
		_, err := RunTorus(m, Config{}, TorusConfig{Progress: how, MPI: mc}, []int{0, 1}, func(c *Comm) {
			b := c.Alloc(1)
			mb := Buf{Addr: b.Addr, Len: 1}
			peer := 1 - c.Rank()
			for k := 0; k <= iters; k++ {
				if k == 1 {
					start = c.Now()
				}
				for i := 0; i < 2; i++ {
					var err error
					if i == c.Rank() {
						err = c.Send(mb, peer, k)
					} else {
						_, err = c.Recv(mb, peer, k)
					}
					if err != nil {
						failed = append(failed, err.Error())
					}
				}
			}
			if c.Rank() == 0 {
				end = c.Now()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range failed {
			t.Error(f)
		}
		return int64(end-start) / period / (2 * iters)
	}
	var mc bglml.MessageCosts // a byte goes by the one-packet protocol
	mc.Send[bglml.OnePacket-1], mc.Recv[bglml.OnePacket-1] = send, recv
	for _, how := range bglml.Progresses {
		base, with := half(how, bglml.MessageCosts{}), half(how, mc)
		t.Logf("%v: %d cycles, %d with MPI's costs", how, base, with)
		if d := with - base; d < send+recv-50 || d > send+recv+50 {
			t.Errorf("%v: half round trip %d cycles, %d with MPI's costs of %d + %d: +%d", how, base, with, send, recv, d)
		}
	}
}
