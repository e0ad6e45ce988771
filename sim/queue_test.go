package sim_test

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// The queue is first in, first out across growth and wrap-around, for every
// pattern of pushes and pops, compared with a plain slice model.
func TestQueueFIFO(t *testing.T) {
	for _, pattern := range []struct {
		name       string
		push, pops int // per round
	}{
		{"grow only", 5, 0},
		{"steady", 3, 3},
		{"wrap while growing", 7, 4},
		{"drain often", 2, 2},
	} {
		var q sim.Queue[int]
		var model []int
		next := 0
		for round := 0; round < 200; round++ {
			for k := 0; k < pattern.push; k++ {
				q.Push(next)
				model = append(model, next)
				next++
			}
			for k := 0; k < pattern.pops && q.Len() > 0; k++ {
				if q.Len() > 1 && *q.At(1) != model[1] {
					t.Fatalf("%s: At(1) = %d, want %d", pattern.name, *q.At(1), model[1])
				}
				if got := q.Pop(); got != model[0] {
					t.Fatalf("%s round %d: popped %d, want %d", pattern.name, round, got, model[0])
				}
				model = model[1:]
			}
			if q.Len() != len(model) {
				t.Fatalf("%s: length %d, want %d", pattern.name, q.Len(), len(model))
			}
		}
	}
}

// A queue at its high-water mark pushes and pops without allocating.
func TestQueueSteadyStateDoesNotAllocate(t *testing.T) {
	var q sim.Queue[[4]uint64]
	for i := 0; i < 100; i++ {
		q.Push([4]uint64{uint64(i)})
	}
	allocs := testing.AllocsPerRun(1000, func() {
		q.Push([4]uint64{1})
		q.Pop()
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per push and pop", allocs)
	}
}

func TestQueueEmptyPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Pop of an empty queue did not panic")
		}
	}()
	var q sim.Queue[int]
	q.Pop()
}
