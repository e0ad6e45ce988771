// Package mpi runs one simulation over MPI ranks: it finds whether the
// process was started by an MPI launcher (mpirun, srun), and gives the
// kernel a communicator (sim.Comm) over MPI when aaemu is built with the
// mpi tag (cgo against Open MPI's C API; mpi_cgo.go). Loopback joins ranks
// inside one process for tests.
package mpi

import (
	"os"
	"strconv"
)

// Launched reports the rank and size an MPI launcher gave the process
// through its environment (Open MPI's mpirun, PMIx, Slurm's srun with PMI),
// and whether it found any. Slurm's are the step's (srun sets
// SLURM_STEP_NUM_TASKS), not the job's: a batch script holds
// SLURM_PROCID=0 and the allocation's SLURM_NTASKS, but it is one process,
// not a rank of N.
func Launched() (rank, size int, ok bool) {
	for _, k := range [][2]string{
		{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
		{"PMIX_RANK", "PMIX_SIZE"},
		{"PMI_RANK", "PMI_SIZE"},
		{"SLURM_PROCID", "SLURM_STEP_NUM_TASKS"},
	} {
		s, err := strconv.Atoi(os.Getenv(k[1]))
		if err != nil {
			continue
		}
		r, _ := strconv.Atoi(os.Getenv(k[0]))
		return r, s, true
	}
	return 0, 1, false
}
