package mpi

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// The launchers' environments give the rank and size; none gives a plain
// process.
func TestLaunched(t *testing.T) {
	vars := []string{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMIX_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS"}
	for _, c := range []struct {
		name       string
		env        map[string]string
		rank, size int
		ok         bool
	}{
		{"none", nil, 0, 1, false},
		{"mpirun", map[string]string{"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4"}, 3, 4, true},
		{"pmix", map[string]string{"PMIX_RANK": "1", "PMIX_SIZE": "2"}, 1, 2, true},
		{"srun", map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_STEP_NUM_TASKS": "8"}, 5, 8, true},
		{"srun step of a larger job", map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "8", "SLURM_STEP_NUM_TASKS": "2"}, 1, 2, true},
		{"sbatch script", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, 0, 1, false},
		{"a size that is no number", map[string]string{"PMI_SIZE": "many"}, 0, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, "")
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			r, s, ok := Launched()
			if r != c.rank || s != c.size || ok != c.ok {
				t.Fatalf("got rank %d of %d (%v), want %d of %d (%v)", r, s, ok, c.rank, c.size, c.ok)
			}
		})
	}
}

// Loopback ranks exchange what each sends to each, reduce to the minimum
// and gather in rank order, round after round.
func TestLoopback(t *testing.T) {
	const n = 3
	comms := Loopback(n)
	got := make([][][]byte, n)
	red := make([][]uint64, n)
	gath := make([][][]byte, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 50; round++ {
				send := make([][]byte, n)
				for d := range send {
					send[d] = []byte(fmt.Sprintf("%d>%d#%d", r, d, round))
				}
				v := []uint64{uint64(10*r + round), uint64(100 - r)}
				got[r] = c.Exchange(send, v)
				red[r] = v
				gath[r] = c.Allgather([]byte{byte(r), byte(round)})
				m := []uint64{uint64(r + 7)}
				c.AllreduceMin(m)
				if m[0] != 7 {
					t.Errorf("rank %d: allreduce %d", r, m[0])
				}
			}
		}()
	}
	wg.Wait()
	for r := 0; r < n; r++ {
		for s := 0; s < n; s++ {
			if w := fmt.Sprintf("%d>%d#49", s, r); string(got[r][s]) != w {
				t.Fatalf("rank %d got %q from rank %d, want %q", r, got[r][s], s, w)
			}
			if !reflect.DeepEqual(gath[r][s], []byte{byte(s), 49}) {
				t.Fatalf("rank %d gathered %v from rank %d", r, gath[r][s], s)
			}
		}
		if !reflect.DeepEqual(red[r], []uint64{49, 100 - (n - 1)}) {
			t.Fatalf("rank %d reduced to %v", r, red[r])
		}
	}
}
