package bgl

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aaemu/aaemu/torus"
)

// XYZT is the default rank mapping (L106): rank r on node r, x fastest,
// then y, then z (one rank a node, so t is always 0).
func XYZT(dims torus.Coord) []int {
	n := dims[0] * dims[1] * dims[2]
	m := make([]int, n)
	for r := range m {
		m[r] = r
	}
	return m
}

// ReadMapping reads a mapping file (L107): one line per rank, in rank
// order, "x y z" (and optionally t, which must be 0: one rank a node);
// blank lines and lines starting with # are skipped. Every node of the
// dims torus must get exactly one rank. It returns the node of each rank;
// errors name the file and line.
func ReadMapping(name string, r io.Reader, dims torus.Coord) ([]int, error) {
	n := dims[0] * dims[1] * dims[2]
	owner := make([]int, n)
	for i := range owner {
		owner[i] = -1
	}
	var nodeOf []int
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 3 && len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: mapping: %q: want x y z (or x y z t)", name, line, text)
		}
		var c [4]int
		for k, s := range f {
			v, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: mapping.%c: %q is not a number", name, line, "xyzt"[k], s)
			}
			c[k] = v
		}
		for d := 0; d < 3; d++ {
			if c[d] < 0 || c[d] >= dims[d] {
				return nil, fmt.Errorf("%s:%d: mapping.%c: %d outside the torus (0 to %d)", name, line, "xyz"[d], c[d], dims[d]-1)
			}
		}
		if c[3] != 0 {
			return nil, fmt.Errorf("%s:%d: mapping.t: %d (one rank a node: 0)", name, line, c[3])
		}
		rank := len(nodeOf)
		i := c[0] + dims[0]*(c[1]+dims[1]*c[2])
		if owner[i] >= 0 {
			return nil, fmt.Errorf("%s:%d: mapping: rank %d at (%d,%d,%d), where rank %d already is", name, line, rank, c[0], c[1], c[2], owner[i])
		}
		owner[i] = rank
		nodeOf = append(nodeOf, i)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(nodeOf) != n {
		for i, o := range owner {
			if o < 0 {
				c := torus.Coord{i % dims[0], i / dims[0] % dims[1], i / (dims[0] * dims[1])}
				return nil, fmt.Errorf("%s:%d: mapping: %d ranks for %d nodes: no rank at %v (rank %d is missing)", name, line, len(nodeOf), n, c, len(nodeOf))
			}
		}
	}
	return nodeOf, nil
}
