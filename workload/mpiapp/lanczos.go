package mpiapp

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/aaemu/aaemu/msg/mpi"
)

// Lanczos stands in for seed 001's SVD (Table 5: PARPACK's first singular
// triplets of a 10K×10K sparse matrix of about a million nonzeros): Steps
// steps of the Lanczos recurrence on AᵀA, as ARPACK runs it for singular
// values. A (N×N, NNZ nonzeros a row at seeded random columns) is
// distributed by rows, and so are the Lanczos vectors. A step is
//
//	x  = the current vector, gathered whole (an allreduce of N doubles,
//	     each rank contributing its rows)
//	y  = A_loc·x, z = A_locᵀ·y, summed over the ranks (an allreduce of N
//	     doubles), each rank keeping its rows
//	α  = xᵀz, w = z − α·x − β·x_prev, β = ‖w‖ (two allreduces of one double)
//
// The sparse products read the rank's rows of A from its node's memory
// (values and column indices, 12 bytes a nonzero) through the core's
// caches at the node's memory bandwidth, which the ranks of an SMP share,
// and cost SpMVCycles a nonzero besides. The α and β of every step are
// checked against a serial run of the same recurrence.
type Lanczos struct {
	N, NNZ, Steps int
	Seed          uint64
	// SpMVCycles is a nonzero's multiply-add and index arithmetic, in
	// core cycles (0: DefaultSpMVCycles).
	SpMVCycles int
}

// DefaultSpMVCycles is two cycles a nonzero: a load of the x element it
// indexes and a multiply-add (an assumption; the matrix's own bytes are
// costed by the memory model).
const DefaultSpMVCycles = 2

// Check refuses a shape the program cannot run on p ranks.
func (l Lanczos) Check(p int) error {
	switch {
	case l.N < 2 || l.N > 1<<20:
		return fmt.Errorf("lanczos: order %d: want 2..%d", l.N, 1<<20)
	case l.NNZ < 1 || l.NNZ > l.N:
		return fmt.Errorf("lanczos: %d nonzeros a row: want 1..%d", l.NNZ, l.N)
	case l.Steps < 1 || l.Steps > 1000:
		return fmt.Errorf("lanczos: %d steps: want 1..1000", l.Steps)
	case p < 1 || l.N%p != 0:
		return fmt.Errorf("lanczos: order %d on %d ranks: the rows must divide evenly", l.N, p)
	case l.SpMVCycles < 0:
		return fmt.Errorf("lanczos: %d cycles a nonzero", l.SpMVCycles)
	}
	return nil
}

// Matrix is A in compressed rows: row i's columns and values are
// Col[Row[i]:Row[i+1]], Val[...].
type Matrix struct {
	Row []int
	Col []int32
	Val []float32
}

// Matrix makes A from the seed: NNZ distinct columns a row, values in
// (-1, 1).
func (l Lanczos) Matrix() Matrix {
	r := rand.New(rand.NewPCG(l.Seed, 0x5eed001))
	m := Matrix{Row: make([]int, l.N+1)}
	seen := make(map[int32]bool, l.NNZ)
	for i := 0; i < l.N; i++ {
		clear(seen)
		for len(seen) < l.NNZ {
			c := int32(r.IntN(l.N))
			if seen[c] {
				continue
			}
			seen[c] = true
			m.Col = append(m.Col, c)
			m.Val = append(m.Val, float32(2*r.Float64()-1))
		}
		m.Row[i+1] = len(m.Col)
	}
	return m
}

// start is the first Lanczos vector: all ones, normalised.
func start(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / math.Sqrt(float64(n))
	}
	return x
}

// Serial runs the recurrence in one process and returns α and β of every
// step.
func (l Lanczos) Serial(m Matrix) (alpha, beta []float64) {
	n := l.N
	x, prev := start(n), make([]float64, n)
	b := 0.0
	y, z := make([]float64, n), make([]float64, n)
	for s := 0; s < l.Steps; s++ {
		clear(z)
		for i := 0; i < n; i++ {
			acc := 0.0
			for k := m.Row[i]; k < m.Row[i+1]; k++ {
				acc += float64(m.Val[k]) * x[m.Col[k]]
			}
			y[i] = acc
			for k := m.Row[i]; k < m.Row[i+1]; k++ {
				z[m.Col[k]] += float64(m.Val[k]) * acc
			}
		}
		a := dot(x, z)
		for i := range z {
			z[i] -= a*x[i] + b*prev[i]
		}
		b = math.Sqrt(dot(z, z))
		alpha, beta = append(alpha, a), append(beta, b)
		copy(prev, x)
		for i := range x {
			x[i] = z[i] / b
		}
	}
	return alpha, beta
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// LanczosResult is what a rank found: α and β of every step.
type LanczosResult struct{ Alpha, Beta []float64 }

// Run is the program of one rank over the matrix m (every rank passes the
// same one); every rank of cm calls it.
func (l Lanczos) Run(cm *mpi.Comm, m Matrix) (LanczosResult, error) {
	var res LanczosResult
	p, me := cm.Size(), cm.Rank()
	if err := l.Check(p); err != nil {
		return res, err
	}
	cyc := l.SpMVCycles
	if cyc == 0 {
		cyc = DefaultSpMVCycles
	}
	n, nr := l.N, l.N/p
	r0, r1 := me*nr, (me+1)*nr
	nnz := m.Row[r1] - m.Row[r0]
	// The rank's rows of A in its node's memory: what the products read.
	rows := cm.Alloc(12 * nnz)
	cm.Node().Mem.Write(rows.Addr, rowBytes(m, r0, r1))
	// The vectors exchanged: N doubles, and one double.
	vin, vout := cm.Alloc(8*n), cm.Alloc(8*n)
	sin, sout := cm.Alloc(8), cm.Alloc(8)
	allreduce := func(v []float64) ([]float64, error) {
		in, out := vin, vout
		if len(v) == 1 {
			in, out = sin, sout
		}
		cm.WriteFloat64s(in, v)
		if err := cm.Allreduce(in, out, mpi.SumFloat64); err != nil {
			return nil, err
		}
		return cm.Float64s(out), nil
	}
	full := start(n)
	x, prev := append([]float64(nil), full[r0:r1]...), make([]float64, nr)
	b := 0.0
	part := make([]float64, n)
	y := make([]float64, nr)
	for s := 0; s < l.Steps; s++ {
		// x whole: each rank its rows, zeros elsewhere, summed.
		clear(part)
		copy(part[r0:r1], x)
		xf, err := allreduce(part)
		if err != nil {
			return res, err
		}
		// y = A_loc·x, then A_locᵀ·y: the rows read twice.
		cm.Read(rows)
		cm.Compute(cyc * nnz)
		for i := r0; i < r1; i++ {
			acc := 0.0
			for k := m.Row[i]; k < m.Row[i+1]; k++ {
				acc += float64(m.Val[k]) * xf[m.Col[k]]
			}
			y[i-r0] = acc
		}
		cm.Read(rows)
		cm.Compute(cyc * nnz)
		clear(part)
		for i := r0; i < r1; i++ {
			for k := m.Row[i]; k < m.Row[i+1]; k++ {
				part[m.Col[k]] += float64(m.Val[k]) * y[i-r0]
			}
		}
		zf, err := allreduce(part)
		if err != nil {
			return res, err
		}
		z := zf[r0:r1]
		ad, err := allreduce([]float64{dot(x, z)})
		if err != nil {
			return res, err
		}
		a := ad[0]
		for i := range z {
			z[i] -= a*x[i] + b*prev[i]
		}
		bd, err := allreduce([]float64{dot(z, z)})
		if err != nil {
			return res, err
		}
		b = math.Sqrt(bd[0])
		res.Alpha, res.Beta = append(res.Alpha, a), append(res.Beta, b)
		copy(prev, x)
		for i := range x {
			x[i] = z[i] / b
		}
	}
	return res, nil
}

// rowBytes lays out the rows [r0, r1) of m as a rank's memory holds them:
// each nonzero's value and column, 12 bytes.
func rowBytes(m Matrix, r0, r1 int) []byte {
	var b []byte
	for k := m.Row[r0]; k < m.Row[r1]; k++ {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(m.Val[k]))
		b = binary.LittleEndian.AppendUint64(b, uint64(m.Col[k]))
	}
	return b
}
