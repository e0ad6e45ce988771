package workload

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/internal/mpi"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// rankedDHT is one rank's copy of a DHT run.
type rankedDHT struct {
	c    *aa.System
	d    *DHT
	res  DHTResult
	snap string
	done bool
}

// runDHTRanks builds the DHT on n ranks joined in this process (one
// process when n is 1), runs it, and returns every rank's view after the
// run; after, if set, runs on every rank once the run is over, before the
// results are read.
func runDHTRanks(t *testing.T, n int, s Scheme, after func(r *rankedDHT)) []*rankedDHT {
	t.Helper()
	build := func() *rankedDHT {
		spec := machine.DefaultSpec()
		spec.Nodes, spec.Cores = 3, 3
		c, err := aa.New(sim.NewEngine(3), spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := SetupDHT(c, DHTConfig{Scheme: s, Inserts: 30, Cells: 32, Collisions: 0.4, Procs: 3, OnloadCores: 1,
			Lookups: 0.5, Deletes: 0.3, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		return &rankedDHT{c: c, d: d}
	}
	rs := make([]*rankedDHT, n)
	for r := range rs {
		rs[r] = build()
	}
	var comms []sim.Comm
	if n > 1 {
		comms = mpi.Loopback(n)
		for r, x := range rs {
			if err := x.c.Eng.World().SetComm(comms[r]); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	for _, x := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.c.Run(sim.S, x.c.AppsDone)
			x.done = x.c.AppsDone()
			if after != nil {
				after(x)
			}
			x.res = x.d.Result()
			b, _ := json.Marshal(x.c.Eng.Snapshot())
			x.snap = string(b)
		}()
	}
	wg.Wait()
	return rs
}

// Over ranks, every rank reads the result of one process (rates, TLPs per
// insert from the IOMMUs' counters, wire bytes, energy, polls, lookups,
// the verified table) and the same statistics snapshot.
func TestDHTOverRanks(t *testing.T) {
	for _, s := range []Scheme{AASP, RMA, AM, AMInt} {
		want := runDHTRanks(t, 1, s, nil)[0]
		if !want.done || !want.res.Verified {
			t.Fatalf("%s: one process: done %v, %+v", s, want.done, want.res)
		}
		for _, n := range []int{2, 4} {
			for r, got := range runDHTRanks(t, n, s, nil) {
				if !got.done {
					t.Fatalf("%s, %d ranks: rank %d sees the processes unfinished", s, n, r)
				}
				if !reflect.DeepEqual(got.res, want.res) {
					t.Fatalf("%s, %d ranks: rank %d reads %+v, one process %+v", s, n, r, got.res, want.res)
				}
				if got.snap != want.snap {
					t.Fatalf("%s, %d ranks: rank %d's statistics differ from one process's", s, n, r)
				}
			}
		}
	}
}

// A shard corrupted on the rank that holds it fails verification on every
// rank: the verdict crosses.
func TestDHTOverRanksVerdict(t *testing.T) {
	rs := runDHTRanks(t, 2, RMA, func(x *rankedDHT) {
		if n := x.c.Nodes[1]; n.Eng.Local() {
			sh := x.d.shards[1]
			for _, k := range sh.keys {
				if a := x.d.cell(sh, k); !sh.deleted[k] && n.Mem.Load64(a) == k {
					n.Mem.Store64(a, tombstone)
					break
				}
			}
		}
		if err := x.c.Eng.World().Sync(); err != nil {
			t.Error(err)
		}
	})
	for r, x := range rs {
		err := x.d.Verify()
		if err == nil || !strings.Contains(err.Error(), "node 1's shard: key") {
			t.Fatalf("rank %d: %v", r, err)
		}
		if x.res.Verified {
			t.Fatalf("rank %d: the result says verified", r)
		}
	}
}
