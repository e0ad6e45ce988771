package mpistart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/examples/machines"
	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

// The experiments of the figures, each on a fresh machine: two Sun E5000
// SMPs of the preset (examples/machines/e5000.yaml) joined by StarT-X, the
// NIU's defaults (nic/startx) and MPI-StarT's channel device with block
// stores and loads.

// Machine is the scenario whose machine the figures run on instead (aaemu
// paper mpi-start --scenario FILE); it must have machine.startx. Nil: the
// E5000 preset with machine.startx's defaults.
var Machine *scenario.Scenario

var e5000 struct {
	once sync.Once
	sc   scenario.Scenario
	err  error
}

// machineScenario is the scenario of the figures' machine.
func machineScenario() (*scenario.Scenario, error) {
	if Machine != nil {
		if Machine.Machine.StartX == nil {
			return nil, fmt.Errorf("the scenario's machine has no StarT-X NIUs: add machine.startx: {}")
		}
		return Machine, nil
	}
	e5000.once.Do(func() {
		e5000.sc, e5000.err = scenario.ParseScenario("e5000.yaml", machines.E5000)
		e5000.sc.Machine.StartX = &scenario.StartXSpec{}
	})
	return &e5000.sc, e5000.err
}

// cluster is two nodes of the scenario (two E5000s) of cores CPUs each
// with a StarT-X NIU.
func cluster(cores int) (*machine.Cluster, error) {
	sc, err := machineScenario()
	if err != nil {
		return nil, err
	}
	ms := sc.ClusterSpec()
	ms.Nodes, ms.Cores = 2, cores
	c, err := machine.New(sim.NewEngine(1), ms)
	if err == nil {
		paper.Configure(c)
	}
	return c, err
}

// config is MPI-StarT: shared memory inside an SMP, StarT-X between, and
// the run stopped when ctx is cancelled.
func config(ctx context.Context, sx mpi.StartXConfig) mpi.Config {
	if sc, err := machineScenario(); err == nil {
		sx.Block = sc.StartXBlock()
	}
	return mpi.Config{
		Transports: []mpi.TransportMaker{mpi.Shm(mpi.ShmConfig{}), mpi.StartX(sx)},
		Stop:       func() bool { return ctx.Err() != nil },
	}
}

// runErr turns a stopped run into runctl.ErrInterrupted.
func runErr(err error) error {
	if errors.Is(err, mpi.ErrStopped) {
		return runctl.ErrInterrupted
	}
	return err
}

func fill(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + seed + i>>8)
	}
	return b
}

// pingPong is the one-way time of n-byte messages between rank 0 and a
// rank of its own SMP (intra) or of the other, half a round trip averaged
// over reps after one to warm up (none for reps 1: a message of
// megabytes has nothing to warm).
func pingPong(ctx context.Context, n int, intra bool, reps int, sx mpi.StartXConfig) (sim.Tick, error) {
	c, err := cluster(2)
	if err != nil {
		return 0, err
	}
	peer := 2
	if intra {
		peer = 1
	}
	var d sim.Tick
	bad := false
	cfg := config(ctx, sx)
	cfg.Limit = 10*sim.MS + sim.Tick(n)*sim.Tick(4*(reps+1))*100*sim.NS // 10 MB/s
	_, err = mpi.Run(c, cfg, func(cm *mpi.Comm) {
		b := cm.Alloc(n+1).Slice(0, n)
		warm := 1
		if reps == 1 {
			warm = 0
		}
		switch cm.Rank() {
		case 0:
			cm.Write(b, fill(n, 1))
			for i := 0; i < warm; i++ {
				cm.Send(b, peer, 0)
				cm.Recv(b, peer, 0)
			}
			t0 := cm.Now()
			for i := 0; i < reps; i++ {
				cm.Send(b, peer, 0)
				cm.Recv(b, peer, 0)
			}
			d = (cm.Now() - t0) / sim.Tick(2*reps)
			bad = !bytes.Equal(cm.Read(b), fill(n, 1))
		case peer:
			for i := 0; i < warm+reps; i++ {
				cm.Recv(b, 0, 0)
				cm.Send(b, 0, 0)
			}
		}
	})
	if err != nil {
		return 0, runErr(err)
	}
	if bad {
		return 0, fmt.Errorf("ping-pong of %d bytes: the message came back changed", n)
	}
	return d, nil
}

// pinned allocates and registers size bytes of a node's memory for its NIU.
func pinned(n *machine.Node, size uint64) (uint64, error) {
	a := n.Alloc(size)
	return a, n.Register(a, size, iommu.Perm{Bits: pte.R | pte.W})
}

// rawRDMA moves n bytes between pinned buffers with one RDMA command and
// returns the time from the command to the receiver seeing the last byte.
func rawRDMA(ctx context.Context, n int) (sim.Tick, error) {
	c, err := cluster(1)
	if err != nil {
		return 0, err
	}
	a, b := c.Nodes[0], c.Nodes[1]
	var addrs [4]uint64
	for i, x := range []struct {
		nd   *machine.Node
		size int
	}{{a, n}, {b, n}, {a, 64}, {b, 64}} {
		if addrs[i], err = pinned(x.nd, uint64(x.size)); err != nil {
			return 0, err
		}
	}
	src, dst, sst, rst := addrs[0], addrs[1], addrs[2], addrs[3]
	want := fill(n, 3)
	a.Mem.Write(src, want)
	pa, pb := &startx.Port{NIU: a.NIU, Block: true}, &startx.Port{NIU: b.NIU, Block: true} // registers: any width
	var t0, t1 sim.Tick
	armed := false
	b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		pb.Arm(p, 0, dst, uint64(n), rst)
		armed = true
		p.PollLoad64(rst, func(v uint64) bool { return v == uint64(n) })
		t1 = p.Now()
	})
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		pa.SetSendStatus(p, sst)
		p.Poll(func() bool { return armed }) // the PIO handshake, elsewhere
		p.Sleep(10 * sim.US)
		t0 = p.Now()
		pa.RDMASend(p, 1, src, dst, n)
		p.PollLoad64(sst, func(v uint64) bool { return v == uint64(n) })
	})
	if _, stopped := runctl.Run(ctx, c, paper.Name(ctx), sim.Tick(n)*100*sim.NS+sim.MS, nil); stopped {
		return 0, runctl.ErrInterrupted
	}
	got := make([]byte, n)
	b.Mem.Read(dst, got)
	switch {
	case t1 == 0:
		return 0, fmt.Errorf("raw RDMA of %d bytes: the receiver never saw them all", n)
	case !bytes.Equal(got, want):
		return 0, fmt.Errorf("raw RDMA of %d bytes: the receiver's buffer differs", n)
	case a.NIU.Refused()+b.NIU.Refused() > 0:
		return 0, fmt.Errorf("raw RDMA of %d bytes: refused: %v", n, append(a.NIU.Errors(), b.NIU.Errors()...))
	}
	return t1 - t0, nil
}

// pioCosts measures a PIO message of words payload words (8-byte or
// block accesses): the sender's time to store it, the receiver's time to
// load it once it is there, and the one-way time from the first store to
// the receiver holding it (the receiver polling as it arrives).
func pioCosts(ctx context.Context, words int, block bool) (send, recv, oneWay sim.Tick, err error) {
	c, err := cluster(1)
	if err != nil {
		return 0, 0, 0, err
	}
	a, b := c.Nodes[0], c.Nodes[1]
	pa, pb := &startx.Port{NIU: a.NIU, Block: block}, &startx.Port{NIU: b.NIU, Block: block}
	want := make([]uint32, words)
	for i := range want {
		want[i] = 7000 + uint32(i)
	}
	var t0, t1, arrived, got sim.Tick
	var m startx.Msg
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		pa.Send(p, startx.Low, 1, 0xabcd, []uint32{1, 2}) // reads the status register once
		p.Sleep(50 * sim.US)
		t0 = p.Now()
		pa.Send(p, startx.Low, 1, 0xabcd, want)
		t1 = p.Now()
	})
	b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		pb.Recv(p, startx.Low)
		for b.NIU.NetIn[startx.Low].Len() == 0 { // wait, without loads, until it is there
			p.Sleep(10 * sim.NS)
		}
		arrived = p.Now()
		m = pb.Recv(p, startx.Low)
		got = p.Now()
	})
	if _, stopped := runctl.Run(ctx, c, paper.Name(ctx), sim.MS, nil); stopped {
		return 0, 0, 0, runctl.ErrInterrupted
	}
	if got == 0 || fmt.Sprint(m.Payload) != fmt.Sprint(want) || m.H1 != 0xabcd {
		return 0, 0, 0, fmt.Errorf("PIO message of %d words: received %+v", words, m)
	}
	return t1 - t0, got - arrived, got - t0, nil
}

// bcastRound is a round of broadcasts on two SMPs of per ranks each —
// every rank broadcasts n bytes in turn — and its time; every rank must
// get every root's bytes.
func bcastRound(ctx context.Context, per, n int, coll mpi.Collectives, roundRobin bool) (sim.Tick, error) {
	c, err := cluster(per)
	if err != nil {
		return 0, err
	}
	cfg := config(ctx, mpi.StartXConfig{})
	cfg.Collectives = coll
	if roundRobin {
		cfg.Place, cfg.Ranks = mpi.RoundRobin(2), 2*per
	}
	// Far beyond a round at 10 MB/s: 2·per broadcasts to 2·per-1 ranks.
	cfg.Limit = 10*sim.MS + sim.Tick(4*per*per*n)*100*sim.NS
	var t0, t1 sim.Tick
	bad := 0
	var bcastErr error
	_, err = mpi.Run(c, cfg, func(cm *mpi.Comm) {
		b := cm.Alloc(n)
		mem := cm.Node().Mem
		got := make([]byte, n)
		cm.Barrier()
		if cm.Rank() == 0 {
			t0 = cm.Now()
		}
		for root := 0; root < cm.Size(); root++ {
			// The root's data is put in and every rank's checked outside
			// the round's time: a costed read of n bytes by every rank
			// after every broadcast would add the node's memory bandwidth
			// to each broadcast alike (2·per·n bytes at 400 MB/s), the
			// original's and the two-stage one's.
			if cm.Rank() == root {
				mem.Write(b.Addr, fill(n, root))
			}
			if err := cm.Bcast(b, root); err != nil && bcastErr == nil {
				bcastErr = err
			}
			if mem.Read(b.Addr, got); !bytes.Equal(got, fill(n, root)) {
				bad++
			}
		}
		cm.Barrier()
		if cm.Rank() == 0 {
			t1 = cm.Now()
		}
	})
	switch {
	case err != nil:
		return 0, runErr(err)
	case bcastErr != nil:
		return 0, bcastErr
	case bad > 0:
		return 0, fmt.Errorf("%d broadcasts of %d bytes delivered other bytes", bad, n)
	}
	return t1 - t0, nil
}

// exchange has one rank on each SMP send the other n bytes at once and
// returns the time until both have them, or stuck when the run cannot
// finish (a deadlock, or spinning until the limit).
func exchange(ctx context.Context, n int, tieBreak bool) (d sim.Tick, stuck bool, err error) {
	c, err := cluster(1)
	if err != nil {
		return 0, false, err
	}
	cfg := config(ctx, mpi.StartXConfig{NoTieBreak: !tieBreak})
	// The exchange moves 2n bytes at about 60 MB/s; ten times that.
	cfg.Limit = sim.MS + sim.Tick(20*n)*17*sim.NS
	var got [2][]byte
	var start, end sim.Tick
	_, err = mpi.Run(c, cfg, func(cm *mpi.Comm) {
		r := cm.Rank()
		sb, rb := cm.Alloc(n), cm.Alloc(n)
		cm.Write(sb, fill(n, r))
		cm.Barrier()
		start = max(start, cm.Now())
		if _, err := cm.Waitall(cm.Isend(sb, 1-r, 0), cm.Irecv(rb, 1-r, 0)); err != nil {
			return
		}
		got[r] = cm.Read(rb)
		end = max(end, cm.Now())
	})
	var dl *mpi.DeadlockError
	switch {
	case errors.As(err, &dl):
		return 0, true, nil
	case err != nil:
		return 0, false, runErr(err)
	}
	for r := 0; r < 2; r++ {
		if !bytes.Equal(got[r], fill(n, 1-r)) {
			return 0, false, fmt.Errorf("exchange of %d bytes: rank %d received other bytes", n, r)
		}
	}
	return end - start, false, nil
}
