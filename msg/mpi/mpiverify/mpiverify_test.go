package mpiverify

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/msg/mpi/mpicheck"
)

// Random traffic on every fabric and rendezvous mode obeys MPI's delivery
// rules by the golden model.
func TestRandomTraffic(t *testing.T) {
	for _, fab := range []string{"shm", "rdma", "mixed"} {
		for _, mode := range []mpi.Mode{0, mpi.RendezvousCopy, mpi.RendezvousGet} {
			seeds := uint64(1)
			if fab == "mixed" && mode == 0 {
				seeds = 4
			}
			for seed := uint64(1); seed <= seeds; seed++ {
				t.Run(fmt.Sprintf("%s/%v/%d", fab, mode, seed), func(t *testing.T) {
					o := Options{Fabric: fab, Mode: mode, Seed: seed}
					if fab == "rdma" {
						o.Ranks = 4
					}
					out, err := Run(o)
					if err != nil {
						t.Fatal(err)
					}
					if !out.Report.OK() {
						t.Fatal(out.Report.String())
					}
					if out.Report.Delivered == 0 || out.Report.Delivered != out.Report.Sends {
						t.Fatalf("%v", &out.Report)
					}
				})
			}
		}
	}
}

// The checker catches a reordering injected into a real log: two messages
// of one source, tag and communicator, delivered to two receives that
// accept either (so that only their order is wrong once swapped).
func TestInjectedReordering(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		out, err := Run(Options{Seed: seed})
		if err != nil || !out.Report.OK() {
			t.Fatalf("seed %d: %v %v", seed, err, &out.Report)
		}
		log := out.Log
		recvs := map[[2]int]mpicheck.Event{}
		for _, e := range log {
			if e.Kind == mpicheck.Recv {
				recvs[[2]int{e.Rank, e.Op}] = e
			}
		}
		a, b := -1, -1
	search:
		for i, e := range log {
			if e.Kind != mpicheck.Done || e.Count < 8 || e.Truncated {
				continue
			}
			ri := recvs[[2]int{e.Rank, e.Op}]
			for j := i + 1; j < len(log); j++ {
				f := log[j]
				if f.Kind != mpicheck.Done || f.Rank != e.Rank || f.Source != e.Source || f.StatusTag != e.StatusTag || f.Count < 8 || f.Truncated {
					continue
				}
				rj := recvs[[2]int{f.Rank, f.Op}]
				if ri.Comm == rj.Comm && ri.Peer == rj.Peer && ri.Tag == rj.Tag && ri.Size >= f.Count && rj.Size >= e.Count {
					a, b = i, j
					break search
				}
			}
		}
		if a < 0 {
			continue
		}
		bad := append([]mpicheck.Event(nil), log...)
		bad[a].Data, bad[b].Data = log[b].Data, log[a].Data
		bad[a].Count, bad[b].Count = log[b].Count, log[a].Count
		rep := mpicheck.Check(bad)
		if rep.OK() || !strings.Contains(rep.String(), "non-overtaking") {
			t.Fatalf("seed %d: a swap of events %d and %d went unnoticed: %v", seed, a, b, &rep)
		}
		t.Logf("seed %d: %v", seed, &rep)
		// A lost delivery and a duplicated one.
		lost := append(append([]mpicheck.Event(nil), log[:b]...), log[b+1:]...)
		if rep := mpicheck.Check(lost); rep.OK() {
			t.Error("a lost delivery went unnoticed")
		}
		dup := append([]mpicheck.Event(nil), log...)
		dup[b].Data, dup[b].Count = log[a].Data, log[a].Count
		if rep := mpicheck.Check(dup); rep.OK() || !strings.Contains(rep.String(), "delivered already") {
			t.Errorf("a duplicated delivery went unnoticed: %v", &rep)
		}
		return
	}
	t.Fatal("no seed had two deliveries to swap")
}

// The same seed gives the same log, time and statistics.
func TestSameSeedSameRun(t *testing.T) {
	x, err := Run(Options{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	y, err := Run(Options{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x.Log, y.Log) || !reflect.DeepEqual(x.Result, y.Result) {
		t.Error("two runs of seed 11 differ")
	}
	z, _ := Run(Options{Seed: 12})
	if reflect.DeepEqual(x.Log, z.Log) {
		t.Error("seeds 11 and 12 made the same run")
	}
}
