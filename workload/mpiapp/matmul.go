// Package mpiapp holds application stand-ins over the MPI core (msg/mpi):
// programs with the communication pattern of an application a paper ran,
// doing the arithmetic for real so that their results are checked against
// a serial computation, and costing it on the cores by a flop rate.
//
// MatMul is seed 001's column-distributed dense matrix multiply (Figure 3,
// Table 4: a round of broadcasts and local SGEMMs); Lanczos is its SVD
// stand-in (Table 5: repeated sparse matrix-vector products and
// allreduces).
package mpiapp

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/aaemu/aaemu/msg/mpi"
)

// MatMul is C = A·B of N×N single-precision matrices distributed by
// columns: rank r holds columns [r·N/P, (r+1)·N/P) of A, B and C. In turn,
// every rank broadcasts the shape of its block of A (two 64-bit words: its
// first column and its width) and then the block itself; every rank then
// adds the block's product with its rows of B to its columns of C, a
// local SGEMM costed at FlopsPerCycle.
type MatMul struct {
	N int
	// FlopsPerCycle is the local SGEMM's rate in the core's cycles (0:
	// DefaultSGEMMFlopsPerCycle).
	FlopsPerCycle float64
}

// DefaultSGEMMFlopsPerCycle is an UltraSPARC's single-precision
// multiply-add a cycle at a tuned SGEMM's efficiency, about one flop a
// cycle (an assumption: the seed gives no flop rate).
const DefaultSGEMMFlopsPerCycle = 1.0

// MaxMatMulN bounds the matrix order (4 N² bytes a matrix).
const MaxMatMulN = 8192

// Check refuses a shape the program cannot run on p ranks.
func (m MatMul) Check(p int) error {
	switch {
	case m.N < 1 || m.N > MaxMatMulN:
		return fmt.Errorf("matmul: order %d: want 1..%d", m.N, MaxMatMulN)
	case p < 1 || m.N%p != 0:
		return fmt.Errorf("matmul: order %d on %d ranks: the columns must divide evenly", m.N, p)
	case m.FlopsPerCycle < 0 || math.IsNaN(m.FlopsPerCycle) || math.IsInf(m.FlopsPerCycle, 0):
		return fmt.Errorf("matmul: %v flops a cycle: want a positive rate (0: the default)", m.FlopsPerCycle)
	}
	return nil
}

// MatA and MatB are the matrices' elements: small integers, so that every
// sum of products is exact in single precision and the distributed result
// must equal the serial one bit for bit.
func MatA(i, j int) float32 { return float32((i*7+j*3)%5 - 2) }

// MatB is B's element (i, j).
func MatB(i, j int) float32 { return float32((i*5+j*11)%7 - 3) }

// MatMulResult is what a rank measured and found.
type MatMulResult struct {
	// BcastBytes are the sizes of the rank's MPI_Bcast calls, in order.
	BcastBytes []int
	// Wrong counts the elements of the rank's columns of C that differ
	// from the serial product.
	Wrong int
}

// Run is the program of one rank; every rank of cm calls it. It returns
// the rank's result; the time is the caller's to take around it.
func (m MatMul) Run(cm *mpi.Comm) (MatMulResult, error) {
	var res MatMulResult
	p, me := cm.Size(), cm.Rank()
	if err := m.Check(p); err != nil {
		return res, err
	}
	fpc := m.FlopsPerCycle
	if fpc == 0 {
		fpc = DefaultSGEMMFlopsPerCycle
	}
	n, nb := m.N, m.N/p
	mem := cm.Node().Mem
	// The rank's block of A (its broadcast buffer), the block received,
	// the shape words; B and C stay in Go, column-major: the SGEMM's
	// memory traffic is in its flop rate.
	own := cm.Alloc(4 * n * nb)
	blk := cm.Alloc(4 * n * nb)
	shape := cm.Alloc(16)
	a := make([]byte, 4*n*nb)
	for j := 0; j < nb; j++ {
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(a[4*(j*n+i):], math.Float32bits(MatA(i, me*nb+j)))
		}
	}
	mem.Write(own.Addr, a)
	c := make([]float32, n*nb)
	cyc := int(math.Ceil(2 * float64(n) * float64(nb) * float64(nb) / fpc))
	col := make([]float32, n*nb)
	for root := 0; root < p; root++ {
		buf := blk
		if root == me {
			buf = own
			cm.WriteUint64s(shape, []uint64{uint64(root * nb), uint64(nb)})
		}
		if err := cm.Bcast(shape, root); err != nil {
			return res, err
		}
		res.BcastBytes = append(res.BcastBytes, shape.Len)
		sh := cm.Uint64s(shape)
		if sh[1] != uint64(nb) || sh[0] != uint64(root*nb) {
			return res, fmt.Errorf("matmul: rank %d: block %d's shape came as %v", me, root, sh)
		}
		if err := cm.Bcast(buf, root); err != nil {
			return res, err
		}
		res.BcastBytes = append(res.BcastBytes, buf.Len)
		// C[:, j] += A[:, k0+kk] · B[k0+kk, j] for the block's columns.
		got := make([]byte, buf.Len)
		mem.Read(buf.Addr, got)
		for x := range col {
			col[x] = math.Float32frombits(binary.LittleEndian.Uint32(got[4*x:]))
		}
		k0 := int(sh[0])
		for j := 0; j < nb; j++ {
			cj := c[j*n : (j+1)*n]
			for kk := 0; kk < nb; kk++ {
				b := MatB(k0+kk, me*nb+j)
				if b == 0 {
					continue
				}
				ak := col[kk*n : (kk+1)*n]
				for i := range cj {
					cj[i] += ak[i] * b
				}
			}
		}
		cm.Compute(cyc)
	}
	for j := 0; j < nb; j++ {
		want := SerialColumn(n, me*nb+j)
		for i := 0; i < n; i++ {
			if c[j*n+i] != want[i] {
				res.Wrong++
			}
		}
	}
	return res, nil
}

// SerialColumn is column j of A·B computed by one process.
func SerialColumn(n, j int) []float32 {
	out := make([]float32, n)
	for k := 0; k < n; k++ {
		b := MatB(k, j)
		if b == 0 {
			continue
		}
		for i := range out {
			out[i] += MatA(i, k) * b
		}
	}
	return out
}
