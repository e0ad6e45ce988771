package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/pflag"
)

// partitionsFlag adds --partitions: the goroutines that run a cluster's
// nodes (each node is a domain of the simulation; see docs/kernel.md).
// It never changes an output, only the wall time. def is the default.
func partitionsFlag(f *pflag.FlagSet, p *int, def int) {
	f.IntVar(p, "partitions", def, "goroutines that run each cluster's nodes in parallel (never changes a result)")
}

// cores is the default partition count of a command that runs one
// simulation at a time.
func cores() int { return runtime.NumCPU() }

// checkPartitions refuses a partition count below one.
func checkPartitions(n int) error {
	if n < 1 {
		return fmt.Errorf("--partitions %d: want at least 1", n)
	}
	return nil
}
