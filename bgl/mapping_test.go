package bgl

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/torus"
)

// TestMappingTasks: XYZT and mapping files with two tasks a node (virtual
// node mode, L116), and the files refused.
func TestMappingTasks(t *testing.T) {
	dims := torus.Coord{2, 2, 1}
	x := XYZTTasks(dims, 2)
	// x fastest, t slowest: ranks 0–3 the first task of nodes 0–3.
	want := []int{0, 2, 4, 6, 1, 3, 5, 7}
	for r := range want {
		if x[r] != want[r] {
			t.Fatalf("XYZT with two tasks: %v, want %v", x, want)
		}
	}
	if one := XYZT(dims); len(one) != 4 || one[3] != 3 {
		t.Fatalf("XYZT: %v", one)
	}
	file := "# t first\n0 0 0 0\n0 0 0 1\n1 0 0 0\n1 0 0 1\n0 1 0 0\n0 1 0 1\n1 1 0 1\n1 1 0 0\n"
	m, err := ReadMappingTasks("vn.map", strings.NewReader(file), dims, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{0, 1, 2, 3, 4, 5, 7, 6}; len(m) != 8 || m[6] != got[6] || m[7] != got[7] || m[1] != 1 {
		t.Fatalf("mapped %v, want %v", m, got)
	}
	cases := []struct {
		file  string
		tasks int
		want  string
	}{
		{"0 0 0 2\n", 2, "vn.map:1: mapping.t: 2 outside the node (0 to 1: a task a core)"},
		{"0 0 0 -1\n", 2, "vn.map:1: mapping.t: -1 outside the node"},
		{"0 0 0 1\n", 1, "vn.map:1: mapping.t: 1 (one rank a node: 0)"},
		{"0 0 0 1\n0 0 0 1\n", 2, "vn.map:2: mapping: rank 1 at (0,0,0,1), where rank 0 already is"},
		{"0 0 0 0\n0 0 0 1\n1 0 0 0\n", 2, "vn.map:3: mapping: 3 ranks for 8 tasks: no rank at (1,0,0,1) (rank 3 is missing)"},
		{"0 0 0\n", 3, "vn.map: mapping: 3 tasks a node (1, or 2 in virtual node mode)"},
	}
	for _, c := range cases {
		if _, err := ReadMappingTasks("vn.map", strings.NewReader(c.file), dims, c.tasks); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q with %d tasks: %v, want %q", c.file, c.tasks, err, c.want)
		}
	}
}
