// Package mpicmd is aaemu's verify mpi command: the MPI core's delivery on
// random traffic against an independent model of MPI delivery.
package mpicmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/msg/mpi/mpiverify"
)

// New returns the verify mpi command.
func New() *cobra.Command {
	var seeds int
	var from uint64
	var fabrics []string
	var mode string
	var failFast bool
	cmd := &cobra.Command{
		Use:   "mpi",
		Short: "Check the MPI core's delivery on random traffic against a golden model",
		Long: `Verify mpi runs seeded random traffic through the MPI core (every rank sends
messages of random sizes and tags to random ranks, in phases, with random
work between, some receives posted with wildcards, some before their
messages arrive and some after) and checks the log of sends, receives and
completions with an independent model of MPI delivery (msg/mpi/mpicheck,
which imports nothing of the core): every message delivered exactly once, to
a matching receive, with its data, status and truncation right, in order per
(source, communicator, tag). The exit status is non-zero on a violation.`,
		Example: `  aaemu verify mpi --seeds 20
  aaemu verify mpi --fabric rdma --mode get`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var m mpi.Mode
			if mode != "" {
				var err error
				if m, err = mpi.ParseMode(mode); err != nil {
					return fmt.Errorf("--mode: %w", err)
				}
			}
			return runVerifyMPI(cmd.OutOrStdout(), seeds, from, fabrics, m, failFast)
		},
	}
	cmd.Flags().IntVar(&seeds, "seeds", 10, "seeds per fabric")
	cmd.Flags().Uint64Var(&from, "from", 1, "first seed")
	cmd.Flags().StringSliceVar(&fabrics, "fabric", []string{"shm", "rdma", "mixed"}, "where the ranks are: shm (one node), rdma (a node each), mixed (two nodes, neighbours across the network)")
	cmd.Flags().BoolVar(&failFast, "fail-fast", false, "stop at the first run that breaks the rules (mutation testing: the first violation is the kill)")
	cmd.Flags().StringVar(&mode, "mode", "", "every transport's rendezvous mode: copy, put or get (default: each transport's own)")
	return cmd
}

func runVerifyMPI(w io.Writer, seeds int, from uint64, fabrics []string, mode mpi.Mode, failFast bool) error {
	if seeds < 1 || seeds > 100000 {
		return fmt.Errorf("--seeds %d: want 1..100000", seeds)
	}
	bad := 0
	for _, fab := range fabrics {
		switch fab {
		case "shm", "rdma", "mixed":
		default:
			return fmt.Errorf("--fabric %q: want shm, rdma or mixed", fab)
		}
		var msgs, delivered int
		for s := from; s < from+uint64(seeds); s++ {
			out, err := mpiverify.Run(mpiverify.Options{Fabric: fab, Mode: mode, Seed: s})
			if err != nil {
				return fmt.Errorf("fabric %s, seed %d: %w", fab, s, err)
			}
			msgs += out.Report.Sends
			delivered += out.Report.Delivered
			if !out.Report.OK() {
				bad++
				fmt.Fprintf(w, "fabric %s, seed %d: %s\n", fab, s, out.Report.String())
				if failFast {
					return fmt.Errorf("fabric %s, seed %d broke MPI's delivery rules", fab, s)
				}
			}
		}
		fmt.Fprintf(w, "fabric %-5s %d seeds, %d messages, %d delivered as MPI requires\n", fab, seeds, msgs, delivered)
	}
	if bad > 0 {
		return fmt.Errorf("%d runs broke MPI's delivery rules", bad)
	}
	return nil
}
