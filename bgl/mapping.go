package bgl

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aaemu/aaemu/torus"
)

// XYZT is the default rank mapping (L106) with one task a node: rank r on
// node r, x fastest, then y, then z.
func XYZT(dims torus.Coord) []int { return XYZTTasks(dims, 1) }

// XYZTTasks is the default rank mapping (L106, L116) with tasks tasks a
// node (two in virtual node mode): ranks in the lexical order of (x, y,
// z, t), x fastest and t slowest, so that ranks 0 to N−1 are the first
// task of each node and N to 2N−1 the second. It returns each rank's task
// as node × tasks + t.
func XYZTTasks(dims torus.Coord, tasks int) []int {
	n := dims[0] * dims[1] * dims[2]
	m := make([]int, n*tasks)
	for r := range m {
		m[r] = r%n*tasks + r/n
	}
	return m
}

// ReadMapping reads a mapping file (L107) for one task a node: one line
// per rank, in rank order, "x y z" (or "x y z t" with t 0); blank lines
// and lines starting with # are skipped. Every node of the dims torus
// must get exactly one rank. It returns the node of each rank; errors
// name the file and line.
func ReadMapping(name string, r io.Reader, dims torus.Coord) ([]int, error) {
	return ReadMappingTasks(name, r, dims, 1)
}

// ReadMappingTasks reads a mapping file with tasks tasks a node (L116: in
// virtual node mode tasks are addressed by (x, y, z, t), t the core, 0 or
// 1): one line per rank, "x y z t" (or "x y z" for t 0). Every task of
// every node must get exactly one rank. It returns each rank's task as
// node × tasks + t.
func ReadMappingTasks(name string, r io.Reader, dims torus.Coord, tasks int) ([]int, error) {
	if tasks < 1 || tasks > 2 {
		return nil, fmt.Errorf("%s: mapping: %d tasks a node (1, or 2 in virtual node mode)", name, tasks)
	}
	for d := 0; d < 3; d++ {
		if dims[d] < 1 || dims[d] > 256 {
			return nil, fmt.Errorf("%s: mapping: torus dimension %c of %d (1 to 256)", name, "xyz"[d], dims[d])
		}
	}
	n := dims[0] * dims[1] * dims[2] * tasks
	owner := make([]int, n)
	for i := range owner {
		owner[i] = -1
	}
	var taskOf []int
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
		if c[3] < 0 || c[3] >= tasks {
			if tasks == 1 {
				return nil, fmt.Errorf("%s:%d: mapping.t: %d (one rank a node: 0)", name, line, c[3])
			}
			return nil, fmt.Errorf("%s:%d: mapping.t: %d outside the node (0 to %d: a task a core)", name, line, c[3], tasks-1)
		}
		rank := len(taskOf)
		i := (c[0]+dims[0]*(c[1]+dims[1]*c[2]))*tasks + c[3]
		if owner[i] >= 0 {
			return nil, fmt.Errorf("%s:%d: mapping: rank %d at %s, where rank %d already is", name, line, rank, place(c, tasks), owner[i])
		}
		owner[i] = rank
		taskOf = append(taskOf, i)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(taskOf) != n {
		for i, o := range owner {
			if o < 0 {
				nd := i / tasks
				c := [4]int{nd % dims[0], nd / dims[0] % dims[1], nd / (dims[0] * dims[1]), i % tasks}
				what := "nodes"
				if tasks > 1 {
					what = "tasks"
				}
				return nil, fmt.Errorf("%s:%d: mapping: %d ranks for %d %s: no rank at %s (rank %d is missing)", name, line, len(taskOf), n, what, place(c, tasks), len(taskOf))
			}
		}
	}
	return taskOf, nil
}

// place prints a task's coordinates: (x,y,z), or (x,y,z,t) with two tasks
// a node.
func place(c [4]int, tasks int) string {
	if tasks == 1 {
		return fmt.Sprintf("(%d,%d,%d)", c[0], c[1], c[2])
	}
	return fmt.Sprintf("(%d,%d,%d,%d)", c[0], c[1], c[2], c[3])
}
