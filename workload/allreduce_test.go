package workload

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// The Allreduce's schedule, run on plain slices: for every count of ranks
// and elements, every rank ends with the sums, and no rank sends or
// receives more than twice the vector, three times for a folded pair's odd
// rank (a reduction into one rank took ranks × the vector: the incast that
// stopped 7d on the star at 16 nodes).
func TestAllreduceSchedule(t *testing.T) {
	for _, ranks := range []int{1, 2, 3, 5, 8, 33, 97, 481, 514} {
		for _, n := range []int{1, 7, 64, 4096} {
			t.Run(fmt.Sprintf("ranks%d/n%d", ranks, n), func(t *testing.T) {
				pl := newARPlan(n, ranks)
				vec := make([][]uint64, ranks)
				want := make([]uint64, n)
				for r := range vec {
					vec[r] = make([]uint64, n)
					for e := range vec[r] {
						vec[r][e] = uint64(r*n+e) % 13
						want[e] += vec[r][e]
					}
				}
				sent, got := make([]int, ranks), make([]int, ranks)
				move := func(from, to, cnt int) { sent[from] += cnt; got[to] += cnt }
				// The fold: even ranks below 2·rem into their odd neighbour.
				newrank := make([]int, ranks)
				for r := 0; r < ranks; r++ {
					switch {
					case r < 2*pl.rem && r%2 == 0:
						newrank[r] = -1
						move(r, r+1, n)
						for e := range want {
							vec[r+1][e] += vec[r][e]
						}
					case r < 2*pl.rem:
						newrank[r] = r / 2
					default:
						newrank[r] = r - pl.rem
					}
				}
				byNew := make([]int, pl.pof2)
				for r, nr := range newrank {
					if nr >= 0 {
						if pl.rankOf(nr) != r {
							t.Fatalf("rankOf(%d) = %d, want %d", nr, pl.rankOf(nr), r)
						}
						byNew[nr] = r
					}
				}
				rs, ag := make([][]arStep, pl.pof2), make([][]arStep, pl.pof2)
				for nr := range byNew {
					rs[nr], ag[nr] = pl.schedule(nr)
				}
				// Step by step, every rank's send lands as its peer's receive.
				for i := 0; i < pl.steps; i++ {
					next := make([][]uint64, ranks)
					for r := range vec {
						next[r] = append([]uint64(nil), vec[r]...)
					}
					for nr, r := range byNew {
						s := rs[nr][i]
						ps := rs[newrank[s.peer]][i]
						if ps.peer != r || ps.recvOff != s.sendOff || ps.recvCnt != s.sendCnt {
							t.Fatalf("reduce-scatter step %d: rank %d sends [%d,+%d) to %d, which takes [%d,+%d) from %d", i, r, s.sendOff, s.sendCnt, s.peer, ps.recvOff, ps.recvCnt, ps.peer)
						}
						move(r, s.peer, s.sendCnt)
						for e := s.sendOff; e < s.sendOff+s.sendCnt; e++ {
							next[s.peer][e] += vec[r][e]
						}
					}
					vec = next
				}
				for i := 0; i < pl.steps; i++ {
					for nr, r := range byNew {
						s := ag[nr][i]
						ps := ag[newrank[s.peer]][i]
						if ps.peer != r || ps.recvOff != s.sendOff || ps.recvCnt != s.sendCnt {
							t.Fatalf("allgather step %d: rank %d sends [%d,+%d) to %d, which takes [%d,+%d)", i, r, s.sendOff, s.sendCnt, s.peer, ps.recvOff, ps.recvCnt)
						}
						move(r, s.peer, s.sendCnt)
						copy(vec[s.peer][s.sendOff:s.sendOff+s.sendCnt], vec[r][s.sendOff:s.sendOff+s.sendCnt])
					}
				}
				for r := 1; r < 2*pl.rem; r += 2 {
					move(r, r-1, n)
					copy(vec[r-1], vec[r])
				}
				for r := range vec {
					for e := range want {
						if vec[r][e] != want[e] {
							t.Fatalf("rank %d element %d = %d, want %d", r, e, vec[r][e], want[e])
						}
					}
					// A folded pair's odd rank also takes its neighbour's
					// vector and gives back the result, whole.
					limit := 2*n + pl.pof2
					if r < 2*pl.rem && r%2 == 1 {
						limit += n
					}
					if sent[r] > limit || got[r] > limit {
						t.Errorf("rank %d sent %d and received %d elements of a %d-element vector", r, sent[r], got[r], n)
					}
				}
			})
		}
	}
}

// The counter's Allreduce on the machine with 514 ranks (4 nodes × 171
// processes and the owner: a group of 512 and two folded pairs), pieces
// between ranks of a node and between nodes: every rank's vector ends as
// the sums (Result checks them all), and no DMA is refused.
func TestCounterAllreduceEveryRank(t *testing.T) {
	c := newCluster(t, func(sp *machine.Spec) { sp.Nodes, sp.Cores = 4, 171 })
	k, err := SetupCounter(c, CounterConfig{Scheme: Allreduce, Elements: 600, Accesses: 2, Procs: 171, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(k.ar.ranks); got != 514 {
		t.Fatalf("%d ranks, want 514", got)
	}
	c.Run(100*sim.MS, c.AppsDone)
	if !c.AppsDone() {
		t.Fatalf("did not finish by %v: %s", c.Now(), c.FaultReport(4))
	}
	if r := k.Result(); !r.Verified {
		t.Fatal(r.Problem)
	}
	if r := c.FaultReport(4); r != "" {
		t.Fatal(r)
	}
}
