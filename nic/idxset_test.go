package nic

import (
	"math/rand/v2"
	"testing"
)

// TestIdxSet checks the summary bitset against a plain one: members, next
// and min, over sets growing past several summary levels.
func TestIdxSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 63, 64, 65, 200, 4097, 70000} {
		var s idxSet
		ref := make([]bool, size)
		s.grow(size / 3)
		s.grow(size)
		for op := 0; op < 20000; op++ {
			i := r.IntN(size)
			switch r.IntN(3) {
			case 0:
				s.add(i)
				ref[i] = true
			case 1:
				s.del(i)
				ref[i] = false
			}
			if s.has(i) != ref[i] {
				t.Fatalf("size %d: has(%d) = %v", size, i, s.has(i))
			}
			want := -1
			for j := i; j < size; j++ {
				if ref[j] {
					want = j
					break
				}
			}
			if got := s.next(i); got != want {
				t.Fatalf("size %d: next(%d) = %d, want %d", size, i, got, want)
			}
		}
		// Growing keeps the members and their summaries.
		s.grow(3*size + 100)
		for j := range ref {
			if s.has(j) != ref[j] {
				t.Fatalf("size %d: after growing, has(%d) = %v", size, j, s.has(j))
			}
		}
		for j := 0; j < size; j++ {
			k := j
			for k < size && !ref[k] {
				k++
			}
			if k == size {
				k = -1
			}
			if got := s.next(j); got != k {
				t.Fatalf("size %d: after growing, next(%d) = %d, want %d", size, j, got, k)
			}
		}
		want := -1
		for j := range ref {
			if ref[j] {
				want = j
				break
			}
		}
		if s.min() != want || s.empty() != (want < 0) {
			t.Fatalf("size %d: min %d empty %v, want %d", size, s.min(), s.empty(), want)
		}
	}
}
