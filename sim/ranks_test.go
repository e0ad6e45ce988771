package sim_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aaemu/aaemu/internal/mpi"
	"github.com/aaemu/aaemu/sim"
)

func init() {
	sim.RegisterCodec(sim.Codec[pkt]{
		Append: func(b []byte, p *pkt) []byte {
			for _, v := range []uint64{uint64(p.ID), uint64(p.Cause), uint64(p.src), uint64(p.seq), uint64(p.ttl), uint64(p.born)} {
				b = binary.AppendUvarint(b, v)
			}
			return b
		},
		Decode: func(b []byte) (pkt, []byte, error) {
			var v [6]uint64
			for i := range v {
				x, n := binary.Uvarint(b)
				if n <= 0 {
					return pkt{}, nil, errors.New("truncated packet")
				}
				v[i], b = x, b[n:]
			}
			return pkt{Txn: sim.Txn{ID: sim.TxnID(v[0]), Cause: sim.TxnID(v[1])}, src: int(v[2]), seq: int(v[3]), ttl: int(v[4]), born: sim.Tick(v[5])}, b, nil
		},
	})
}

// runRanks builds the topology once per rank, runs the ranks together over
// loopback communicators (each in one call of run, or split), and returns
// the outcome as one process would report it: rank 0's world after Sync,
// each block's log from the rank that ran it.
func runRanks(t *testing.T, tp topo, n, parts int, limit sim.Tick, split bool) (string, uint64) {
	t.Helper()
	comms := mpi.Loopback(n)
	ms := make([]*model, n)
	for r := range ms {
		ms[r] = tp.build(parts, nil, false)
		if err := ms[r].w.SetComm(comms[r]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if split {
				m.w.Run(limit / 3)
				errs[r] = m.w.Sync()
				m.w.Run(limit / 2)
			}
			m.w.Run(limit)
			errs[r] = errors.Join(errs[r], m.w.Sync())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var msgs uint64
	for _, m := range ms {
		k, _ := m.w.RankTraffic()
		msgs += k
	}
	m := ms[0]
	for i, nd := range m.nodes {
		nd.log = ms[m.w.RankOf(nd.u.Engine().Index())].nodes[i].log
	}
	return m.outcome(t), msgs
}

// Over ranks, random topologies give the outcome of one process to the
// byte: what every block received and when, the statistics, the trace
// stream (gathered to rank 0) and the transaction log.
func TestWorldRanksAgree(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 15
	}
	var crossed uint64
	for s := 0; s < seeds; s++ {
		tp := topo{seed: uint64(s)}
		limit := sim.Never - 1
		if s%3 == 2 {
			limit = sim.Tick(5000 + 997*s)
		}
		base := tp.build(1, nil, false)
		base.w.Run(limit)
		want := base.outcome(t)
		for _, c := range []struct {
			ranks, parts int
			split        bool
		}{{2, 1, false}, {3, 2, false}, {len(base.w.Domains()), 1, true}} {
			if c.ranks > len(base.w.Domains()) {
				continue
			}
			got, msgs := runRanks(t, tp, c.ranks, c.parts, limit, c.split)
			crossed += msgs
			if got != want {
				t.Fatalf("seed %d, %d ranks × %d partitions (split %v): outcome differs from one process: %s",
					s, c.ranks, c.parts, c.split, firstDiff(want, got))
			}
		}
	}
	if crossed < uint64(20*seeds) {
		t.Fatalf("only %d messages between ranks over %d seeds: the models cross ranks too little", crossed, seeds)
	}
}

func TestWorldRanksRefuse(t *testing.T) {
	tp := topo{seed: 3}
	m := tp.build(1, nil, false)
	nd := len(m.w.Domains())
	err := m.w.SetComm(mpi.Loopback(nd + 1)[0])
	if !errors.Is(err, sim.ErrTooManyRanks) || !strings.Contains(err.Error(), fmt.Sprintf("%d ranks for %d domains", nd+1, nd)) {
		t.Fatalf("more ranks than domains: %v", err)
	}
	// A link whose items have no codec cannot join two ranks.
	w := sim.NewWorld(1)
	a, b := w.Domain("a"), w.Domain("b")
	ua := a.NewClock("clk", 1000, 0).Add("a.u", sim.BlockFunc(func(sim.Tick) bool { return false }))
	ub := b.NewClock("clk", 1000, 0).Add("b.u", sim.BlockFunc(func(sim.Tick) bool { return false }))
	sim.NewLink[struct{ x int }](ua, ub, "ab", 2, 1000)
	err = w.SetComm(mpi.Loopback(2)[0])
	if err == nil || !strings.Contains(err.Error(), "link ab joins two ranks but its items (struct { x int }) have no codec") {
		t.Fatalf("a link without codec: %v", err)
	}
}

func init() {
	sim.RegisterCodec(sim.Codec[int]{
		Append: func(b []byte, v *int) []byte { return binary.AppendVarint(b, int64(*v)) },
		Decode: func(b []byte) (int, []byte, error) {
			v, n := binary.Varint(b)
			if n <= 0 {
				return 0, nil, errors.New("truncated int")
			}
			return int(v), b[n:], nil
		},
	})
}

// Statistics declared on use: a link used across two ranks is declared
// (its transfers counted on the consumer's rank, its stalls on the
// producer's) and one never used stays undeclared, on rank 0 as in one
// process; an output written through a sink on rank 1 reaches rank 0's
// sink in order.
func TestWorldRanksStatsOnUseAndSinks(t *testing.T) {
	build := func() (*sim.World, *drain, *[]string) {
		w := sim.NewWorld(1)
		a, b := w.Domain("a"), w.Domain("b")
		p, d := &pump{n: 30}, &drain{}
		pu := a.NewClock("clk", 1000, 0).Add("a.pump", p)
		du := b.NewClock("clk", 700, 0).Add("b.drain", d)
		ch := sim.NewLink[int](pu, du, "ab", 2, 2500, sim.StatsOnUse())
		p.out, d.in = ch, ch
		sim.NewLink[int](du, pu, "ba", 2, 2500, sim.StatsOnUse())
		var lines []string
		sk := w.NewSink(func(t sim.Tick, b []byte) { lines = append(lines, fmt.Sprintf("%v %s", t, b)) })
		eb := b
		du2 := eb.NewClock("clk2", 3000, 0).Add("b.logger", sim.BlockFunc(func(now sim.Tick) bool {
			eb.OutputTo(sk, []byte(fmt.Sprint(len(d.got))))
			return len(d.got) < 30
		}))
		_ = du2
		return w, d, &lines
	}
	stats := func(w *sim.World) string {
		var b strings.Builder
		if err := w.WriteStatsJSON(&b, sim.RunInfo{Version: "test"}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	w1, d1, lines1 := build()
	w1.Run(sim.Never - 1)
	want := stats(w1)
	if !strings.Contains(want, `"ab.transfers"`) || strings.Contains(want, `"ba.transfers"`) {
		t.Fatalf("one process: the used link's statistics must be declared, the unused one's not:\n%s", want)
	}
	comms := mpi.Loopback(2)
	ws := make([]*sim.World, 2)
	ds := make([]*drain, 2)
	ls := make([]*[]string, 2)
	for r := range ws {
		ws[r], ds[r], ls[r] = build()
		if err := ws[r].SetComm(comms[r]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Run(sim.Never - 1)
			if err := w.Sync(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := stats(ws[0]); got != want {
		t.Fatalf("rank 0's statistics differ from one process's: %s", firstDiff(want, got))
	}
	if !reflect.DeepEqual(ds[1].got, d1.got) || !reflect.DeepEqual(ds[1].at, d1.at) {
		t.Fatalf("rank 1 received %v at %v, one process %v at %v", ds[1].got, ds[1].at, d1.got, d1.at)
	}
	if len(*lines1) == 0 || !reflect.DeepEqual(*ls[0], *lines1) || len(*ls[1]) != 0 {
		t.Fatalf("sink: rank 0 wrote %d lines, rank 1 %d, one process %d", len(*ls[0]), len(*ls[1]), len(*lines1))
	}
}
