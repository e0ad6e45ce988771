package machine

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/aaemu/aaemu/nic"
)

// wrMaps is the record WorkRequests replaced: maps by work-request id.
type wrMaps struct {
	results map[uint64]nic.CQE
	dst     map[uint64]int
	pending map[int]int
}

// TestWorkRequestsMatchMaps drives the window and the maps it replaced
// with the same random postings, reaps (in posting order per destination,
// in any order across them), takes, and flushes, and compares every answer.
func TestWorkRequestsMatchMaps(t *testing.T) {
	for _, tc := range []struct {
		name           string
		sq, dsts       int
		takeP, forgetP float64 // chance a reaped completion is taken at once / never
		flushP         float64
	}{
		{"in order", 4, 1, 1, 0, 0},
		{"many destinations", 8, 5, 0.6, 0, 0.01},
		{"stragglers", 4, 3, 0.5, 0.1, 0},
		{"stragglers and flushes", 2, 4, 0.3, 0.2, 0.05},
		{"nothing taken", 4, 2, 0, 1, 0},
	} {
		// A connected QP's record starts empty, an srd queue's at its send
		// queue's length: the same records either way.
		for _, mk := range []struct {
			name string
			new  func(int) WorkRequests
		}{{"grown", newWorkRequests}, {"presized", newQueueWorkRequests}} {
			t.Run(tc.name+"/"+mk.name, func(t *testing.T) {
				rng := rand.New(rand.NewSource(1))
				r := mk.new(tc.sq)
				m := wrMaps{map[uint64]nic.CQE{}, map[uint64]int{}, map[int]int{}}
				var posted, reaped uint64
				queue := make([][]uint64, tc.dsts) // posted, not reaped, per destination
				var forgotten = map[uint64]bool{}
				for step := 0; step < 20000; step++ {
					switch {
					case posted-reaped < uint64(tc.sq) && rng.Intn(2) == 0:
						d := rng.Intn(tc.dsts)
						r.Post(posted, d)
						m.dst[posted] = d
						m.pending[d]++
						queue[d] = append(queue[d], posted)
						posted++
					case posted > reaped:
						d := rng.Intn(tc.dsts)
						for len(queue[d]) == 0 {
							d = (d + 1) % tc.dsts
						}
						id := queue[d][0]
						queue[d] = queue[d][1:]
						reaped++
						cqe := nic.CQE{WRID: id, Status: uint32(rng.Intn(2)), Value: rng.Uint64()}
						if got := r.Reaped(cqe); got != d {
							t.Fatalf("step %d: reaped %d's destination %d, want %d", step, id, got, d)
						}
						m.results[id] = cqe
						m.pending[m.dst[id]]--
						if rng.Float64() < tc.forgetP {
							forgotten[id] = true
						} else if rng.Float64() < tc.takeP {
							take(t, &r, &m, id)
						}
					}
					// Take an older completion now and then, as a late Wait does.
					if len(m.results) > 0 && rng.Intn(8) == 0 {
						ids := sortedKeys(m.results)
						id := ids[rng.Intn(len(ids))]
						if !forgotten[id] {
							take(t, &r, &m, id)
						}
					}
					if rng.Float64() < tc.flushP {
						d := rng.Intn(tc.dsts)
						// What flushSRD asks: is any to d unreaped, and which are reaped.
						_, got := r.Outstanding(d, 0)
						if want := m.pending[d] > 0; got != want {
							t.Fatalf("step %d: outstanding to %d %v, want %v", step, d, got, want)
						}
						var want []uint64
						for _, id := range sortedKeys(m.results) {
							if m.dst[id] == d {
								want = append(want, id)
							}
						}
						if got := r.ReapedTo(d); !slices.Equal(got, want) {
							t.Fatalf("step %d: reaped to %d %v, want %v", step, d, got, want)
						}
						if rng.Intn(2) == 0 {
							r.TakeReaped() // the rc Flush
							for id := range m.results {
								delete(m.dst, id)
							}
							clear(m.results)
						}
					}
					if r.Open() != len(m.dst) {
						t.Fatalf("step %d: %d open, want %d", step, r.Open(), len(m.dst))
					}
					for _, id := range []uint64{posted - 1, posted / 2, reaped, 0} {
						_, done := m.results[id]
						if r.Done(id) != done {
							t.Fatalf("step %d: done(%d) %v, want %v", step, id, r.Done(id), done)
						}
						_, recorded := m.dst[id]
						if want := recorded && !done; r.Unreaped(id) != want {
							t.Fatalf("step %d: unreaped(%d) %v, want %v", step, id, r.Unreaped(id), want)
						}
					}
				}
				if tc.forgetP > 0 && len(r.late) == 0 {
					t.Error("no straggler left the window: the test does not test it")
				}
				if r.len() > 2*r.keep+tc.sq {
					t.Errorf("window of %d entries for a send queue of %d", r.len(), tc.sq)
				}
			})
		}
	}
}

func take(t *testing.T, r *WorkRequests, m *wrMaps, id uint64) {
	t.Helper()
	want := m.results[id]
	delete(m.results, id)
	delete(m.dst, id)
	if got := r.Take(id); got != want {
		t.Fatalf("take %d: %+v, want %+v", id, got, want)
	}
	if got := r.Take(id); got != (nic.CQE{}) {
		t.Fatalf("take %d again: %+v", id, got)
	}
}

func sortedKeys(m map[uint64]nic.CQE) []uint64 {
	var ids []uint64
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
