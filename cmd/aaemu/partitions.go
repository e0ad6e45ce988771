package main

import (
	"fmt"

	"github.com/spf13/pflag"
)

// partitionsFlag adds --partitions: the goroutines that run a cluster's
// nodes (each node is a domain of the simulation; see docs/kernel.md).
// It never changes an output, only the wall time. def is the default; 0
// chooses by the cluster's size (machine.AutoPartitions).
func partitionsFlag(f *pflag.FlagSet, p *int, def int) {
	f.IntVar(p, "partitions", def, "goroutines that run each cluster's nodes in parallel; 0: one per 32 of the cluster's cores, at most the host's (never changes a result)")
}

// checkPollsFlag adds --check-every-poll: the cores run every check of
// their polling loops instead of sleeping through those that cannot see a
// change (machine.Cluster.SetPollSleep). Like --partitions it never
// changes an output, only the kernel's counts of its own work and the
// wall time.
func checkPollsFlag(f *pflag.FlagSet, p *bool) {
	f.BoolVar(p, "check-every-poll", false, "run every check of the cores' polling loops instead of sleeping through those that cannot see a change (slower; never changes a result)")
}

// auto is the default partition count of a command that runs one
// simulation at a time: chosen by the cluster's size.
const auto = 0

// checkPartitions refuses a negative partition count.
func checkPartitions(n int) error {
	if n < 0 {
		return fmt.Errorf("--partitions %d: want 1 or more goroutines, or 0 to choose by the cluster's size", n)
	}
	return nil
}
