package mpiapp

import (
	"math"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

func cluster(t *testing.T, cores int) *machine.Cluster {
	t.Helper()
	s := machine.DefaultSpec()
	s.Cores = cores
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The distributed product equals the serial one element for element, over
// 1 to 4 ranks on one or two nodes, with either broadcast; every rank
// makes two broadcasts a block, the shape and the block.
func TestMatMul(t *testing.T) {
	for _, tc := range []struct {
		name        string
		n, cores    int
		nodes       int
		collectives mpi.Collectives
	}{
		{"one rank", 12, 1, 1, nil},
		{"1+1", 16, 1, 2, nil},
		{"2+2 binomial", 24, 2, 2, mpi.Algorithms{}},
		{"2+2 two-stage", 24, 2, 2, mpi.SMPAware{}},
		{"4 on one node", 32, 4, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, tc.cores)
			p := tc.cores * tc.nodes
			res := make([]MatMulResult, p)
			_, err := mpi.Run(c, mpi.Config{Nodes: tc.nodes, Collectives: tc.collectives}, func(cm *mpi.Comm) {
				r, err := MatMul{N: tc.n}.Run(cm)
				if err != nil {
					t.Error(err)
				}
				res[cm.Rank()] = r
			})
			if err != nil {
				t.Fatal(err)
			}
			for r, x := range res {
				if x.Wrong != 0 || len(x.BcastBytes) != 2*p {
					t.Fatalf("rank %d: %d elements wrong, %d broadcasts", r, x.Wrong, len(x.BcastBytes))
				}
				if x.BcastBytes[0] != 16 || x.BcastBytes[1] != 4*tc.n*tc.n/p {
					t.Fatalf("rank %d: broadcasts of %v bytes", r, x.BcastBytes[:2])
				}
			}
		})
	}
}

// A wrong element is found: the check can fail.
func TestSerialColumnDiffers(t *testing.T) {
	a, b := SerialColumn(8, 1), SerialColumn(8, 2)
	same := true
	for i := range a {
		same = same && a[i] == b[i]
	}
	if same {
		t.Fatal("two columns of the product alike: the check could not tell them apart")
	}
}

// The distributed recurrence gives the serial α and β to rounding, on
// one rank, two on one node and two on two nodes.
func TestLanczos(t *testing.T) {
	l := Lanczos{N: 96, NNZ: 7, Steps: 6, Seed: 3}
	m := l.Matrix()
	alpha, beta := l.Serial(m)
	for _, tc := range []struct {
		name         string
		cores, nodes int
	}{{"one rank", 1, 1}, {"2 on one node", 2, 1}, {"1+1", 1, 2}, {"2+2", 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, tc.cores)
			var got LanczosResult
			_, err := mpi.Run(c, mpi.Config{Nodes: tc.nodes}, func(cm *mpi.Comm) {
				r, err := l.Run(cm, m)
				if err != nil {
					t.Error(err)
				}
				if cm.Rank() == 0 {
					got = r
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			for s := range alpha {
				if math.Abs(got.Alpha[s]-alpha[s]) > 1e-9*math.Abs(alpha[s]) || math.Abs(got.Beta[s]-beta[s]) > 1e-9*beta[s] {
					t.Fatalf("step %d: α %v β %v, serial %v %v", s, got.Alpha[s], got.Beta[s], alpha[s], beta[s])
				}
			}
		})
	}
}

// Shapes a program cannot run are refused before anything is allocated.
func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"matmul order 0", MatMul{N: 0}.Check(1)},
		{"matmul uneven columns", MatMul{N: 10}.Check(4)},
		{"matmul bad rate", MatMul{N: 8, FlopsPerCycle: math.Inf(1)}.Check(2)},
		{"lanczos nnz above N", Lanczos{N: 8, NNZ: 9, Steps: 1}.Check(1)},
		{"lanczos no steps", Lanczos{N: 8, NNZ: 2}.Check(1)},
		{"lanczos uneven rows", Lanczos{N: 9, NNZ: 2, Steps: 1}.Check(2)},
	} {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := (MatMul{N: 8}).Check(4); err != nil {
		t.Error(err)
	}
}
