package torus

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/aaemu/aaemu/internal/mpi"
	"github.com/aaemu/aaemu/sim"
)

// A torus over ranks (each rank builds it and runs its share of the nodes;
// packets and tokens cross between ranks encoded) delivers what one
// process delivers, at the same times, with the same statistics.
func TestTorusOverRanks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    Spec
		dynamic bool
	}{
		{"4x4x2 adaptive small buffers", smallBuffers(DefaultSpec(4, 4, 2)), true},
		{"4x2x2 mesh deterministic", func() Spec { s := DefaultSpec(4, 2, 2); s.Mesh = true; return s }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(n int) ([]*rig, uint64) {
				rs := make([]*rig, n)
				comms := mpi.Loopback(n)
				for r := range rs {
					rs[r] = newRig(t, tc.spec, 5, 1)
					rs[r].allToAll(40, tc.dynamic)
					if n > 1 {
						if err := rs[r].w.SetComm(comms[r]); err != nil {
							t.Fatal(err)
						}
					}
				}
				var wg sync.WaitGroup
				for _, r := range rs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						r.run(sim.S)
						if err := r.w.Sync(); err != nil {
							t.Error(err)
						}
					}()
				}
				wg.Wait()
				var msgs uint64
				for _, r := range rs {
					m, _ := r.w.RankTraffic()
					msgs += m
				}
				return rs, msgs
			}
			outcome := func(rs []*rig) string {
				r0 := rs[0]
				var s string
				for i, nd := range r0.net.Nodes {
					got := rs[r0.w.RankOf(nd.Eng.Index())].gen[i].got
					for _, a := range got {
						s += fmt.Sprintf("%d %d %d/%d f%d %+v\n", i, a.at, a.src, a.seq, a.fifo, *a.p)
					}
				}
				b, _ := json.Marshal(r0.w.Snapshot())
				return s + string(b)
			}
			one, _ := run(1)
			want := outcome(one)
			for _, n := range []int{2, 5} {
				rs, msgs := run(n)
				if msgs == 0 {
					t.Fatalf("%d ranks exchanged nothing", n)
				}
				if got := outcome(rs); got != want {
					t.Fatalf("%d ranks: the outcome differs from one process's", n)
				}
			}
		})
	}
}

// Packets and tokens come back from their encoding equal.
func TestTorusCodec(t *testing.T) {
	ps := []Packet{{}, {Payload: []byte{}}, *tagged(3, 9, Coord{1, 2, 3}, 240)}
	ps[2].Hint, ps[2].dir, ps[2].vc, ps[2].inPort, ps[2].chunks, ps[2].Hops, ps[2].InjectedAt = [3]int8{-1, 0, 1}, [3]int8{1, -1, 0}, 3, 5, 8, 700, 123456
	ps[2].Dynamic, ps[2].Deposit, ps[2].ID, ps[2].Cause = true, true, 1<<50|3, 17
	for i := range ps {
		b := appendPacket(nil, &ps[i])
		p, rest, err := decodePacket(b)
		if err != nil || len(rest) != 0 || !reflect.DeepEqual(p, ps[i]) {
			t.Fatalf("packet %d came back as %+v (%v, %d left), sent %+v", i, p, err, len(rest), ps[i])
		}
		for cut := 0; cut < len(b); cut++ {
			if _, _, err := decodePacket(b[:cut]); err == nil {
				t.Fatalf("packet %d cut to %d of %d bytes decoded", i, cut, len(b))
			}
		}
	}
	tk := Tokens{Chunks: [NumVCs]uint16{1, 300, 0, 65535}}
	got, rest, err := decodeTokens(appendTokens(nil, &tk))
	if err != nil || len(rest) != 0 || got != tk {
		t.Fatalf("tokens came back as %+v (%v)", got, err)
	}
}
