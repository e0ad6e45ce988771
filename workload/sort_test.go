package workload

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

func runSort(t *testing.T, nodes, procs int, cfg SortConfig) (*sortRun, SortResult) {
	t.Helper()
	c := newCluster(t, func(sp *machine.Spec) { sp.Nodes, sp.Cores = nodes, procs; sp.Wire.RateMbps = 10000 })
	s, err := SetupSort(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Run(sim.S, c.AppsDone)
	if !c.AppsDone() {
		t.Fatalf("%s: did not finish", cfg.Scheme)
	}
	return s, s.Result()
}

// The sort under every scheme: the output is sorted and a permutation of
// the input, and each scheme's log replays exactly what every process got
// from the owner's node. AA logs in the IOMMU and sends what No-FT sends;
// AM and RMA send more and take longer.
func TestSortSchemes(t *testing.T) {
	res := map[Scheme]SortResult{}
	for _, sc := range []Scheme{NoFT, AAPoll, AM, RMA} {
		_, r := runSort(t, 3, 2, SortConfig{Scheme: sc, Keys: 600, Procs: 2, Seed: 3})
		if !r.Verified {
			t.Fatalf("%s: %s", sc, r.Problem)
		}
		// Nothing is lost on these links, so no read is made (and logged) twice.
		if sc != NoFT && r.LogBytes != r.RemoteBytes {
			t.Errorf("%s: the logs hold %d bytes, %d were got from other nodes", sc, r.LogBytes, r.RemoteBytes)
		}
		if sc == NoFT && r.LogBytes != 0 {
			t.Errorf("No-FT logged %d bytes", r.LogBytes)
		}
		if r.RemoteBytes == 0 || len(r.SentBytes) != 3 {
			t.Fatalf("%s: %d remote bytes, %d NICs", sc, r.RemoteBytes, len(r.SentBytes))
		}
		res[sc] = r
		t.Logf("%-7s comm %v, %d wire bytes %v, %d remote bytes", sc, sim.Tick(r.CommTimePS).Human(), r.WireBytes, r.SentBytes, r.RemoteBytes)
	}
	if res[AAPoll].WireBytes != res[NoFT].WireBytes {
		t.Errorf("AA sends %d bytes, No-FT %d: the IOMMU logs without sending", res[AAPoll].WireBytes, res[NoFT].WireBytes)
	}
	// AM's request and reply messages cost about the bytes of a get's
	// request and response (a SEND has no RETH, a reply a header more), but
	// the owner's process copies every bucket; RMA sends the data back.
	if am, aa := res[AM], res[AAPoll]; am.WireBytes < aa.WireBytes*95/100 || am.CommTimePS <= aa.CommTimePS {
		t.Errorf("AM: %d bytes in %d ps, AA %d bytes in %d ps", am.WireBytes, am.CommTimePS, aa.WireBytes, aa.CommTimePS)
	}
	if rma, aa := res[RMA], res[AAPoll]; rma.WireBytes < aa.WireBytes+rma.RemoteBytes || rma.CommTimePS <= aa.CommTimePS {
		t.Errorf("RMA: %d bytes in %d ps, AA %d bytes in %d ps", rma.WireBytes, rma.CommTimePS, aa.WireBytes, aa.CommTimePS)
	}
}

// The same configuration gives the same run.
func TestSortDeterministic(t *testing.T) {
	_, a := runSort(t, 2, 2, SortConfig{Scheme: AM, Keys: 300, Procs: 2, Seed: 9, ChunkBytes: 256})
	_, b := runSort(t, 2, 2, SortConfig{Scheme: AM, Keys: 300, Procs: 2, Seed: 9, ChunkBytes: 256})
	if !a.Verified || a.CommTimePS != b.CommTimePS || a.WireBytes != b.WireBytes || a.SimTimePS != b.SimTimePS {
		t.Fatalf("two runs differ: %+v and %+v", a, b)
	}
}

// The check can fail: a corrupted log, a lost log entry, an unsorted output
// and a key that is not the input's are each found.
func TestSortCheckFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scheme Scheme
		spoil  func(s *sortRun)
		want   string
	}{
		{"AA log byte", AAPoll, func(s *sortRun) {
			rs, _ := s.aaLogs[1].Records()
			s.c.Nodes[1].Mem.Store64(rs[0].At, s.c.Nodes[1].Mem.Load64(rs[0].At)^1<<20)
		}, "other bytes"},
		{"AA log record's address", AAPoll, func(s *sortRun) {
			rs, _ := s.aaLogs[0].Records()
			// The record's IOVA field (header bytes 8..15) names another address.
			s.c.Nodes[0].Mem.Store64(rs[0].At-record.HeaderSize+8, rs[0].IOVA+1<<24)
		}, "does not replay"},
		{"AA log record overlapping", AAPoll, func(s *sortRun) {
			rs, _ := s.aaLogs[0].Records()
			s.c.Nodes[0].Mem.Store64(rs[0].At-record.HeaderSize+8, rs[0].IOVA+8)
		}, "twice with other bytes"},
		{"RMA log byte", RMA, func(s *sortRun) {
			q := s.procs[0]
			s.c.Nodes[q.node].Mem.Store64(q.rlog+rmaHdr, s.c.Nodes[q.node].Mem.Load64(q.rlog+rmaHdr)+1)
		}, "other bytes"},
		{"AM log entry lost", AM, func(s *sortRun) { s.c.Nodes[1].Mem.Store64(s.amNext[1], 0) }, "does not replay"},
		{"unsorted output", NoFT, func(s *sortRun) {
			q := s.procs[2]
			m := s.c.Nodes[q.node].Mem
			a, b := m.Load64(q.merged), m.Load64(q.merged+8)
			m.Store64(q.merged, b)
			m.Store64(q.merged+8, a)
		}, "not sorted"},
		{"a key changed", NoFT, func(s *sortRun) {
			q := s.procs[3]
			m := s.c.Nodes[q.node].Mem
			m.Store64(q.merged+uint64(q.count-1)*8, m.Load64(q.merged+uint64(q.count-1)*8)+1)
		}, "permutation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := runSort(t, 2, 2, SortConfig{Scheme: tc.scheme, Keys: 200, Procs: 2, Seed: 5})
			if !r.Verified {
				t.Fatalf("before spoiling: %s", r.Problem)
			}
			tc.spoil(s)
			r = s.Result()
			if r.Verified || !strings.Contains(r.Problem, tc.want) {
				t.Fatalf("verified %v, problem %q, want %q", r.Verified, r.Problem, tc.want)
			}
		})
	}
}

func TestSortConfigErrors(t *testing.T) {
	for _, cfg := range []SortConfig{
		{Scheme: AASP, Keys: 100, Procs: 1},
		{Scheme: NoFT, Keys: 100, Procs: 3},
		{Scheme: NoFT, Keys: 1, Procs: 2},
		{Scheme: AM, Keys: 100, Procs: 1, ChunkBytes: 12},
	} {
		c := newCluster(t, func(sp *machine.Spec) { sp.Nodes, sp.Cores = 2, 2 })
		if _, err := SetupSort(c, cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
