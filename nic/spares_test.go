package nic

import (
	"slices"
	"testing"
)

// spares: a list pushed to keeps its elements in order whatever arrays it
// moves through; an outgrown array is cleared (it would keep what its
// elements point to alive) and kept in its class; a list that outgrows
// its array takes a kept larger one before making a new one; get hands
// out the smallest kept.
func TestSparesPush(t *testing.T) {
	type elem struct{ p *int }
	mk := func(v int) elem { return elem{p: &v} }
	vals := func(l []elem) []int {
		var out []int
		for _, e := range l {
			out = append(out, *e.p)
		}
		return out
	}
	tests := []struct {
		name      string
		keep      []int // capacities of arrays kept before
		pushes    int
		wantCap   int  // the list's capacity after
		wantTaken bool // a kept array was taken for the growth
	}{
		{"from nothing: a new array of 4", nil, 1, 4, false},
		{"within the array", nil, 4, 4, false},
		{"outgrows 4: a new array of 8", nil, 5, 8, false},
		{"from nothing, a 16 kept: takes it", []int{16}, 5, 16, true},
		{"takes a kept 4, outgrows it: a new 8", []int{4}, 5, 8, false},
		{"takes a kept 16, outgrows it: takes the kept 64", []int{64, 16}, 17, 64, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s spares[elem]
			kept := map[*elem]bool{}
			for _, c := range tc.keep {
				a := make([]elem, 0, c)
				kept[&a[:1][0]] = true
				s.put(a)
			}
			var l []elem
			var old [][]elem // every array the list outgrew
			var want []int
			for i := range tc.pushes {
				before := l
				l = s.push(l, mk(i))
				want = append(want, i)
				if cap(before) > 0 && &before[:1][0] != &l[:1][0] {
					old = append(old, before[:cap(before)])
				}
			}
			if got := vals(l); !slices.Equal(got, want) {
				t.Fatalf("list %v, want %v", got, want)
			}
			if cap(l) != tc.wantCap {
				t.Fatalf("capacity %d, want %d", cap(l), tc.wantCap)
			}
			if taken := kept[&l[:1][0]]; taken != tc.wantTaken {
				t.Fatalf("a kept array taken: %v, want %v", taken, tc.wantTaken)
			}
			for _, a := range old {
				for i, e := range a {
					if e.p != nil {
						t.Fatalf("an outgrown array of %d keeps element %d", cap(a), i)
					}
				}
				k := class(cap(a))
				if !slices.ContainsFunc(s.free[k], func(f []elem) bool { return &f[:1][0] == &a[0] }) {
					t.Fatalf("the outgrown array of %d is not kept in class %d", cap(a), k)
				}
			}
		})
	}
	var s spares[elem]
	for _, c := range []int{32, 4, 8} {
		s.put(make([]elem, 0, c))
	}
	for _, want := range []int{4, 8, 32} {
		if got := cap(s.get()); got != want {
			t.Fatalf("get gave %d, want the smallest kept, %d", got, want)
		}
	}
	if s.get() != nil {
		t.Fatal("get with nothing kept gave a list")
	}
}
