package bgl

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/torus"
)

// FuzzReadMapping feeds arbitrary text as a mapping file for a 2×3×2 torus:
// it is refused with an error naming the file, or it maps every rank to a
// distinct node of the torus. Never a panic.
func FuzzReadMapping(f *testing.F) {
	f.Add("0 0 0\n1 0 0\n")
	f.Add("# comment\n\n0 0 0 0\n")
	f.Add("0 0 0\n0 0 0\n")
	f.Add("1 2 1 1\n")
	f.Add("-1 0 0\n")
	f.Add("x y z\n")
	var all strings.Builder
	for r := range 12 {
		all.WriteString(strings.Join([]string{itoa(r % 2), itoa(r / 2 % 3), itoa(r / 6)}, " ") + "\n")
	}
	f.Add(all.String())
	dims := torus.Coord{2, 3, 2}
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ReadMapping("map.txt", strings.NewReader(text), dims)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "map.txt") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(m) != 12 {
			t.Fatalf("%d ranks mapped on 12 nodes", len(m))
		}
		seen := make([]bool, 12)
		for r, n := range m {
			if n < 0 || n >= 12 || seen[n] {
				t.Fatalf("rank %d on node %d (taken or off the torus)", r, n)
			}
			seen[n] = true
		}
	})
}

func itoa(v int) string { return string(rune('0' + v)) }
