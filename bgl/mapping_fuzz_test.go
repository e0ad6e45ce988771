package bgl

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/torus"
)

// FuzzReadMapping feeds arbitrary text as a mapping file for a 2×3×2 torus,
// with one task a node and with two (virtual node mode): it is refused
// with an error naming the file, or it maps every rank to a distinct task
// of the torus and every task gets a rank. Never a panic.
func FuzzReadMapping(f *testing.F) {
	f.Add("0 0 0\n1 0 0\n")
	f.Add("# comment\n\n0 0 0 0\n")
	f.Add("0 0 0\n0 0 0\n")
	f.Add("1 2 1 1\n")
	f.Add("1 2 1 2\n")
	f.Add("0 0 0 -1\n")
	f.Add("-1 0 0\n")
	f.Add("x y z\n")
	var all, vn strings.Builder
	for r := range 12 {
		all.WriteString(strings.Join([]string{itoa(r % 2), itoa(r / 2 % 3), itoa(r / 6)}, " ") + "\n")
	}
	for r := range 24 {
		vn.WriteString(strings.Join([]string{itoa(r % 2), itoa(r / 2 % 3), itoa(r / 6 % 2), itoa(r / 12)}, " ") + "\n")
	}
	f.Add(all.String())
	f.Add(vn.String())
	dims := torus.Coord{2, 3, 2}
	f.Fuzz(func(t *testing.T, text string) {
		for tasks := 1; tasks <= 2; tasks++ {
			m, err := ReadMappingTasks("map.txt", strings.NewReader(text), dims, tasks)
			if err != nil {
				if !strings.HasPrefix(err.Error(), "map.txt") {
					t.Fatalf("error does not name the file: %v", err)
				}
				continue
			}
			n := 12 * tasks
			if len(m) != n {
				t.Fatalf("%d ranks mapped on %d tasks", len(m), n)
			}
			seen := make([]bool, n)
			for r, k := range m {
				if k < 0 || k >= n || seen[k] {
					t.Fatalf("rank %d on task %d (taken or off the torus)", r, k)
				}
				seen[k] = true
			}
		}
	})
}

func itoa(v int) string { return string(rune('0' + v)) }
