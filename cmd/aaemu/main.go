// Command aaemu is the Active Access hardware emulator: it runs scenarios on
// cycle-level models and writes statistics, VCD waveforms and packet captures.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/mpi"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/internal/version"
)

// exitInterrupted is the exit status of a command stopped by SIGINT or
// SIGTERM (128 + SIGINT, as a shell reports Ctrl-C).
const exitInterrupted = 130

func main() {
	// SIGINT and SIGTERM cancel the context: the running simulation stops
	// after its current time slice and the command writes what it has. A
	// second signal kills at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	// Started by mpirun or srun as one of several ranks: join the job (or,
	// built without MPI, say so on every rank and stop).
	job, err := mpi.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "aaemu: %v\n", err)
		os.Exit(2)
	}
	if job != nil && job.Size() > 1 {
		mpiJob = job
	}
	err = newRoot(os.Stdout, os.Stderr).ExecuteContext(ctx)
	code := 0
	if err != nil {
		fmt.Fprintf(os.Stderr, "aaemu: %v\n", err)
		code = 1
		if errors.Is(err, runctl.ErrInterrupted) {
			code = exitInterrupted
		}
	}
	if job != nil {
		if err != nil && mpiJob != nil && !errors.As(err, new(agreedError)) {
			// Only this rank knows: the others may wait for it in a
			// collective call. Take the job down rather than hang.
			job.Abort(code)
		}
		job.Finalize()
	}
	os.Exit(code)
}

// newRoot builds the command tree; tests run it with their own writers.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var level string
	log := logrus.New()
	log.SetOutput(stderr)
	log.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})

	root := &cobra.Command{
		Use:   "aaemu",
		Short: "Active Access hardware emulator",
		Long: `aaemu emulates Active Access: RDMA puts and gets that an extended IOMMU logs
into per-process access logs for CPU handlers. Its blocks are cycle-level models
that exchange PCIe TLPs and network packets; runs write statistics (JSON), VCD
waveforms with a GTKWave save file, and packet captures.

Start with:
  aaemu run                  the default scenario: two nodes, DHT inserts with AA and RMA, into ./out
  aaemu run scenario.yaml    a scenario of yours (see examples/)
  aaemu trace --op 5         the life of one operation, stage by stage
  aaemu tlp decode HEX       every field of a TLP
  aaemu vcd check FILE.vcd   check a VCD file strictly
  aaemu demo                 the simulation kernel's demonstration pipeline`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if mpiJob != nil && cmd.Name() != "run" {
				return agreedError{fmt.Errorf("rank %d of %d: only `aaemu run` runs over MPI ranks, not `aaemu %s` (start it as one process)", mpiJob.Rank(), mpiJob.Size(), cmd.Name())}
			}
			l, err := logrus.ParseLevel(level)
			if err != nil {
				return fmt.Errorf("--log-level %q: want panic, fatal, error, warn, info, debug or trace", level)
			}
			log.SetLevel(l)
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&level, "log-level", "warn", "log verbosity: error, warn, info, debug or trace")
	root.AddCommand(newRunCmd(log), newTraceCmd(log), newVerifyCmd(), newSweepCmd(), newPaperCmd(), newWorkloadCmd(), newBenchCmd(), newDemoCmd(log), newMicroCmd(), newVersionCmd(), newVCDCmd(), newTLPCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print aaemu's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "aaemu %s\n", version.Version)
			return nil
		},
	}
}
