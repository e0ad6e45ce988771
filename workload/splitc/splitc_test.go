package splitc

import (
	"errors"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/sim"
)

var small = Sizes{FFTN: 16, CommSide: 4, CompSide: 10, EM3DNodes: 60, EM3DSteps: 2}

// Every run on one E5000 of 8 checks its result, runs the same again,
// and the counting runtime sends exactly the stores the machine did, rank
// by rank.
func TestTallyCountsTheMachinesStores(t *testing.T) {
	for _, app := range Apps {
		t.Run(string(app), func(t *testing.T) {
			run, err := NewRun(app, SMP.Layout, small)
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunAM(e5000(t, 1, 8), SMP.Layout, AMConfig{}, run.Program)
			if err != nil {
				t.Fatal(err)
			}
			if err := run.Check(); err != nil {
				t.Fatal(err)
			}
			again, _ := NewRun(app, SMP.Layout, small)
			res2, err := RunAM(e5000(t, 1, 8), SMP.Layout, AMConfig{}, again.Program)
			if err != nil || res2.Elapsed != res.Elapsed || res2.Rounds != res.Rounds {
				t.Fatalf("the same run again: %v, %v in %d rounds (first %v in %d)", err, res2.Elapsed, res2.Rounds, res.Elapsed, res.Rounds)
			}
			run2, _ := NewRun(app, SMP.Layout, small)
			tal, err := Tally(run2.Procs, run2.Program)
			if err != nil {
				t.Fatal(err)
			}
			if err := run2.Check(); err != nil {
				t.Fatalf("tally: %v", err)
			}
			var n uint64
			for i := range res.Counts {
				a, b := res.Counts[i], tal.Counts[i]
				for d := range a.Short {
					if a.Short[d] != b.Short[d] || a.Bulk[d] != b.Bulk[d] || a.BulkBytes[d] != b.BulkBytes[d] || a.Reply[d] != b.Reply[d] {
						t.Fatalf("rank %d → %d: machine %d short %d bulk, tally %d short %d bulk", i, d, a.Short[d], a.Bulk[d], b.Short[d], b.Bulk[d])
					}
					n += a.Short[d] + a.Bulk[d]
				}
				if st := res.Stats[i]; st.Sent != a.Sync+sum(a.Short)+sum(a.Bulk)+sum(a.Reply) || st.Returned != 0 {
					t.Fatalf("rank %d: its endpoint sent %d (%d returned), the runtime counted %d", i, st.Sent, st.Returned, a.Sync+sum(a.Short)+sum(a.Bulk)+sum(a.Reply))
				}
			}
			if n == 0 {
				t.Fatal("no store sent")
			}
			if res.Syncs != tal.Syncs {
				t.Fatalf("%d syncs on the machine, %d in the tally", res.Syncs, tal.Syncs)
			}
			t.Logf("%v, %d stores, %d syncs in %d barrier rounds", res.Elapsed, n, res.Syncs, res.Rounds)
		})
	}
}

func sum(v []uint64) uint64 {
	s := uint64(0)
	for _, x := range v {
		s += x
	}
	return s
}

// On two SMPs with a Myrinet-class NIU each, every run goes through
// AM-II's network protocol between them and shared memory inside each:
// its result is checked, and it sends the stores the counting runtime
// counts. Without an NIU, a store to the other SMP is am2.ErrRemote.
func TestTwoSMPs(t *testing.T) {
	l := Layout{Nodes: 2, PerNode: 4}
	for _, app := range Apps {
		t.Run(string(app), func(t *testing.T) {
			run, err := NewRun(app, l, small)
			if err != nil {
				t.Fatal(err)
			}
			_, err = RunAM(e5000(t, 2, 4), l, AMConfig{}, run.Program)
			if !errors.Is(err, am2.ErrRemote) {
				t.Fatalf("without NIUs: %v, want am2.ErrRemote", err)
			}
			spec := am2.WithMyrinet(e5000(t, 2, 4).Spec)
			c, err := machine.New(sim.NewEngine(1), spec)
			if err != nil {
				t.Fatal(err)
			}
			run, _ = NewRun(app, l, small)
			res, err := RunAM(c, l, AMConfig{}, run.Program)
			if err != nil {
				t.Fatal(err)
			}
			if err := run.Check(); err != nil {
				t.Fatal(err)
			}
			again, _ := NewRun(app, l, small)
			tal, err := Tally(again.Procs, again.Program)
			if err != nil {
				t.Fatal(err)
			}
			var net uint64
			for i := range res.Counts {
				a, b := res.Counts[i], tal.Counts[i]
				for d := range a.Short {
					if a.Short[d] != b.Short[d] || a.Bulk[d] != b.Bulk[d] || a.Reply[d] != b.Reply[d] {
						t.Fatalf("rank %d → %d: machine %d short %d bulk, tally %d short %d bulk", i, d, a.Short[d], a.Bulk[d], b.Short[d], b.Bulk[d])
					}
				}
				net += a.Split(l, i).NetShort + a.Split(l, i).NetBulk
			}
			if net == 0 {
				t.Fatal("nothing crossed the network")
			}
			t.Logf("%v, %d network messages", res.Elapsed, net)
		})
	}
}

// Bad stores are errors before anything is sent; bad configurations are
// errors before anything runs.
func TestBadInput(t *testing.T) {
	stores := []struct {
		name string
		send func(r Rank) error
		want string
	}{
		{"9 arguments", func(r Rank) error { return r.Store(1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9) }, "9 arguments, want at most 8"},
		{"a bulk of 8 kB + 1", func(r Rank) error { return r.StoreBulk(1, 1, r.Alloc(8193), 8193) }, "8193 bytes, want 1..8192"},
		{"a bulk of 0", func(r Rank) error { return r.StoreBulk(1, 1, 64, 0) }, "0 bytes"},
		{"an unknown handler", func(r Rank) error { return r.Store(1, 5) }, "handler 5 not installed"},
		{"a handler out of range", func(r Rank) error { return r.Store(1, 99) }, "handler 99, want 1..15"},
		{"a rank that does not exist", func(r Rank) error { return r.Store(2, 1) }, "store to rank 2 of 2"},
	}
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			got := 0
			prog := func(r Rank) error {
				if err := r.Handle(1, func(*Msg) { got++ }); err != nil {
					return err
				}
				if _, err := r.Sync(Sum, zero); err != nil {
					return err
				}
				if r.ID() == 0 {
					if err := tc.send(r); err != nil {
						return err
					}
				}
				_, err := r.Sync(Sum, zero)
				return err
			}
			_, err := RunAM(e5000(t, 1, 2), Layout{Nodes: 1, PerNode: 2}, AMConfig{}, prog)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("machine: %v, want %q", err, tc.want)
			}
			_, err = Tally(2, prog)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("tally: %v, want %q", err, tc.want)
			}
			if got != 0 {
				t.Fatalf("%d stores delivered", got)
			}
		})
	}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"fft: n not a multiple of the ranks", func() error { _, err := NewFFT(FFTConfig{N: 4}, 8); return err }, "not a multiple of the 8 ranks"},
		{"fft: a chunk of 8 kB + 16", func() error { _, err := NewFFT(FFTConfig{N: 8, Chunk: 8208}, 8); return err }, "chunk 8208 bytes"},
		{"em3d: remote 1.5", func() error {
			_, err := NewEM3D(EM3DConfig{Nodes: 4, Degree: 2, Remote: 1.5, Steps: 1, Grid: [3]int{2, 2, 2}, Block: [3]int{2, 2, 2}})
			return err
		}, "remote fraction 1.5"},
		{"em3d: blocks that do not tile", func() error {
			_, err := NewEM3D(EM3DConfig{Nodes: 4, Degree: 2, Steps: 1, Grid: [3]int{4, 4, 2}, Block: [3]int{3, 2, 1}})
			return err
		}, "want whole blocks"},
		{"con: 4 dimensions", func() error { _, err := NewCON(CONConfig{Dims: 4, Side: 2}); return err }, "4 dimensions"},
		{"a layout of 300 ranks", func() error { return Layout{Nodes: 30, PerNode: 10}.Validate() }, "at most 256 ranks"},
		{"an application on 12 ranks", func() error { _, err := NewRun(EM3DGood, Layout{Nodes: 3, PerNode: 4}, small); return err }, "no processor grid for 12 ranks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}
