package bglml

import (
	"os"
	"strconv"
	"testing"

	"github.com/aaemu/aaemu/bgl"
)

func TestProfA2A(t *testing.T) {
	x, _ := strconv.Atoi(os.Getenv("A2AX"))
	if x == 0 {
		t.Skip()
	}
	y, _ := strconv.Atoi(os.Getenv("A2AY"))
	z, _ := strconv.Atoi(os.Getenv("A2AZ"))
	o, _ := strconv.Atoi(os.Getenv("A2AO"))
	spec := bgl.DefaultSpec(x, y, z)
	spec.Torus.Mesh = true
	r, err := Alltoall(spec, DefaultParams(), DefaultCosts(), 952, AlltoallOrder(o), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("time %v", r.Time)
}
