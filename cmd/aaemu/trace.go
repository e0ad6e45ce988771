package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

func newTraceCmd(log *logrus.Logger) *cobra.Command {
	var op int
	var proc string
	var o scenarioOpts
	cmd := &cobra.Command{
		Use:   "trace [scenario.yaml] --op N",
		Short: "Follow one operation end to end, stage by stage",
		Long: `Trace runs the scenario's first experiment, of any workload, with every
transaction recorded and prints the life of the N-th operation of its first
process (or of --process; 1 = its first operation: a DHT insert, a counter
access, a get, a put, a sort phase): the CPU call, the doorbell TLP, the work-request and payload DMA, each
frame, each TLP at the target, the IOMMU's decision, the log record, the
handler run, the ACK and the completion — each with its simulated time, the
time since the operation began and since the step that caused it.`,
		Example: `  aaemu trace --op 1
  aaemu trace examples/dht-modes.yaml --op 100
  aaemu trace examples/counter.yaml --op 3 --process counter_src1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			return traceOp(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), file, op, proc, o)
		},
	}
	cmd.Flags().IntVar(&op, "op", 1, "which operation of the process (1-based)")
	cmd.Flags().StringVar(&proc, "process", "", "the process whose operation to follow (default: the first to start one)")
	cmd.Flags().StringVar(&o.until, "until", "10s", "stop the simulation at this simulated time")
	partitionsFlag(cmd.Flags(), &o.partitions, auto)
	return cmd
}

func traceOp(ctx context.Context, w, stderr io.Writer, file string, op int, proc string, o scenarioOpts) error {
	sc, err := loadScenario(file)
	if err != nil {
		return err
	}
	if sc.Workload.Kind == scenario.KindSplitC {
		return fmt.Errorf("%s: workload %s: its ranks start no traced operation (AM-II messages are the processes' loads and stores); trace a workload of the NIC's verbs", file, sc.Workload.Kind)
	}
	until, err := sim.ParseTick(o.until)
	if err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	if op < 1 {
		return fmt.Errorf("--op %d: operations count from 1", op)
	}
	if err := checkPartitions(o.partitions); err != nil {
		return err
	}
	sc.Partitions = o.partitions
	x := sc.Experiments()[0]
	e := sim.NewEngine(sc.Seed)
	e.EnableTxnLog()
	prep, err := sc.PrepareRun(e, x)
	if err != nil {
		return err
	}
	disp := newProgress(stderr, "trace", 1)
	_, stopped := runctl.Run(disp.context(ctx), prep.Sys.Cluster, x.Label(true), until, prep.Progress)
	disp.close()
	if stopped {
		return runctl.ErrInterrupted
	}
	log := e.TxnLog()
	// The N-th operation the process started.
	var root *sim.TxnRecord
	n := 0
	var procs []string // the processes that started operations, in order
	for i := range log {
		if !log[i].Op {
			continue
		}
		if !slices.Contains(procs, log[i].By) {
			procs = append(procs, log[i].By)
		}
		if proc == "" {
			proc = log[i].By
		}
		if log[i].By == proc {
			n++
			if n == op {
				root = &log[i]
				break
			}
		}
	}
	if root == nil {
		if n == 0 {
			return fmt.Errorf("--process %q started no operation (these did: %s)", proc, strings.Join(procs, ", "))
		}
		return fmt.Errorf("--op %d: %s started %d operations", op, proc, n)
	}
	children := map[sim.TxnID][]int{}
	for i := range log {
		if log[i].Cause != 0 {
			children[log[i].Cause] = append(children[log[i].Cause], i)
		}
	}
	what := fmt.Sprintf("%s at %.0f%% collisions", x.Scheme, 100*x.Collisions)
	if sc.Workload.Kind != scenario.KindDHT {
		what = fmt.Sprintf("workload %s, %s", sc.Workload.Kind, x.Scheme)
	}
	fmt.Fprintf(w, "operation %d of %s: %s (%s), txn %v\n", op, root.By, root.Kind, what, root.ID)
	fmt.Fprintf(w, "%12s %10s %10s  %-6s %s\n", "time", "+op", "+cause", "txn", "step")
	type line struct {
		r     sim.TxnRecord
		depth int
		since sim.Tick
	}
	var lines []line
	var walk func(id sim.TxnID, at sim.Tick, depth int)
	walk = func(id sim.TxnID, at sim.Tick, depth int) {
		for _, i := range children[id] {
			r := log[i]
			lines = append(lines, line{r: r, depth: depth, since: r.At - at})
			walk(r.ID, r.At, depth+1)
		}
	}
	lines = append(lines, line{r: *root})
	walk(root.ID, root.At, 1)
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].r.At < lines[j].r.At })
	for _, l := range lines {
		fmt.Fprintf(w, "%12s %10s %10s  %-6v %s%s  [%s]\n", l.r.At.Human(), (l.r.At - root.At).Human(), l.since.Human(), l.r.ID,
			strings.Repeat("  ", l.depth), l.r.Kind, l.r.By)
	}
	last := lines[len(lines)-1].r.At
	fmt.Fprintf(w, "%d steps over %s\n", len(lines), (last - root.At).Human())
	return nil
}
