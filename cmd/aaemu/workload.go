package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

type workloadOpts struct {
	nodes, procs, size, ops int
	outstanding             int
	op                      string
	rateMbps                uint64
	schemes                 string
	seed                    uint64
	jsonOut                 string
	partitions              int
	checkPolls              bool
}

func newWorkloadCmd() *cobra.Command {
	var o workloadOpts
	cmd := &cobra.Command{
		Use:   "workload counter|getlog|checkpoint|xor|stream|sort",
		Short: "Run one of the non-DHT workloads under each of its schemes",
		Long: `Workload runs one of the workloads besides the DHT on a cluster of --nodes
nodes (10 Gb/s links by default) under each scheme and prints a table; every
run checks its own result and fails if it is wrong.

  counter     the access counter: processes on nodes 1.. write random elements
              of node 0's array (--size elements, --ops writes per process);
              schemes No-Cnt, AA-Poll, RMA, A-KV, Allreduce
  getlog      logging of gets: every node's processes get values from random
              other nodes (--size words per node, --ops gets per process);
              schemes No-FT, AA-Poll, RMA
  checkpoint  incremental checkpointing: node 0 puts to random pages of node
              1's region (--size pages) in epochs of --ops puts; node 1 copies
              the pages its access log names (AA only)
  xor         XOR checksum checkpoint: nodes 1.. fold --size words into node
              0's checksum; schemes AA-SP, RMA
  stream      streaming bandwidth: node 0 streams --ops messages of --size
              bytes to node 1 (--op write or send), --outstanding in flight;
              the schemes are the IOMMU modes no-iommu and e-iommu
  sort        the fault-tolerant parallel sort: every process sorts --size
              random keys, then gets its bucket from every other process,
              the owners logging what was read; the rate is the bytes got
              from other nodes over the exchange's time (the sim time
              column); schemes No-FT, AA-Poll, AM, RMA`,
		Example: `  aaemu workload counter --nodes 4 --procs 2
  aaemu workload stream --nodes 2 --rate-mbps 1000 --size 4096 --ops 128 --outstanding 1
  aaemu workload xor --nodes 8 --size 1024 --json /tmp/xor.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorkload(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 3, "nodes (2..4096)")
	f.IntVar(&o.procs, "procs", 2, "processes per node (also the cores per node)")
	f.IntVar(&o.size, "size", 0, "elements, words or pages (0: the workload's default)")
	f.IntVar(&o.ops, "ops", 0, "accesses, gets or puts per process or epoch (0: the default)")
	f.Uint64Var(&o.rateMbps, "rate-mbps", 10000, "link rate")
	f.StringVar(&o.schemes, "schemes", "", "comma-separated schemes (default: all the workload has)")
	f.Uint64Var(&o.seed, "seed", 1, "root seed")
	partitionsFlag(f, &o.partitions, auto)
	checkPollsFlag(f, &o.checkPolls)
	f.StringVar(&o.jsonOut, "json", "", "also write the rows as JSON to this file")
	f.IntVar(&o.outstanding, "outstanding", 1, "stream: work requests in flight (1 .. 256)")
	f.StringVar(&o.op, "op", "write", "stream: write (RDMA WRITE) or send (SEND/receive)")
	return cmd
}

func runWorkload(ctx context.Context, stdout, stderr io.Writer, kind string, o workloadOpts) error {
	if kind == scenario.KindDHT || kind == scenario.KindSplitC || !slices.Contains(scenario.Kinds, kind) {
		return fmt.Errorf("workload %q: want counter, getlog, checkpoint, xor, stream or sort (the DHT and splitc run with aaemu run)", kind)
	}
	// The flags are a scenario: the same set-up and checks as `aaemu run`
	// with workload.kind set.
	sc := scenario.DefaultScenario()
	sc.Seed = o.seed
	if err := checkPartitions(o.partitions); err != nil {
		return err
	}
	sc.Partitions = o.partitions
	sc.CheckEveryPoll = o.checkPolls
	sc.Machine.Nodes, sc.Machine.Cores, sc.Machine.Wire.RateMbps = o.nodes, max(o.procs, 1), o.rateMbps
	w := &sc.Workload
	w.Kind = kind
	size := func(p *int) {
		if o.size > 0 {
			*p = o.size
		}
	}
	ops := func(p *int) {
		if o.ops > 0 {
			*p = o.ops
		}
	}
	var schemes []string
	if o.schemes != "" {
		for _, name := range strings.Split(o.schemes, ",") {
			schemes = append(schemes, strings.TrimSpace(name))
		}
	}
	switch kind {
	case scenario.KindCounter:
		size(&w.Counter.Elements)
		ops(&w.Counter.Accesses)
		w.Counter.Procs, w.Counter.Schemes = o.procs, schemes
	case scenario.KindGetLog:
		size(&w.GetLog.Words)
		ops(&w.GetLog.Gets)
		w.GetLog.Procs, w.GetLog.Schemes = o.procs, schemes
	case scenario.KindCheckpoint:
		size(&w.Checkpoint.Pages)
		ops(&w.Checkpoint.Puts)
		if schemes != nil && !slices.Equal(schemes, []string{string(workload.AAPoll)}) {
			return fmt.Errorf("workload checkpoint: schemes %v (it has AA-Poll only)", schemes)
		}
	case scenario.KindXOR:
		size(&w.XOR.Words)
		w.XOR.Schemes = schemes
	case scenario.KindStream:
		size(&w.Stream.MsgBytes)
		ops(&w.Stream.Messages)
		w.Stream.Op, w.Stream.Outstanding, w.Stream.Schemes = o.op, o.outstanding, schemes
	case scenario.KindSort:
		size(&w.Sort.Keys)
		w.Sort.Procs, w.Sort.Schemes = o.procs, schemes
	}
	if key, err := sc.Validate(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	// The JSON file is created before anything is simulated.
	var jsonF *os.File
	if o.jsonOut != "" {
		var err error
		if jsonF, err = os.Create(o.jsonOut); err != nil {
			return err
		}
		defer jsonF.Close()
	}
	xs := sc.Experiments()
	disp := newProgress(stderr, "workload "+kind, len(xs))
	rctx := disp.context(ctx)
	rows := []scenario.WorkloadResult{}
	var runErr error
	for _, x := range xs {
		pr, err := sc.PrepareRun(sim.NewEngine(sc.Seed), x)
		if err != nil {
			runErr = err
			break
		}
		end, stopped := runctl.Run(rctx, pr.Sys.Cluster, x.Label(false), 10*sim.S, pr.Progress)
		if stopped {
			runErr = fmt.Errorf("%w after %d of %d schemes", runctl.ErrInterrupted, len(rows), len(xs))
			break
		}
		out, err := pr.Finish(end)
		if err != nil {
			runErr = err
			break
		}
		rows = append(rows, out.Workload)
	}
	disp.close()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scheme\trate\tsim time\tdetail\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.4g %s\t%s\t%s\t\n", r.Scheme, r.Rate, r.Unit, sim.Tick(r.SimTimePS).Human(), r.Detail)
	}
	tw.Flush()
	if jsonF != nil {
		// The rows that finished, even when a scheme failed or the run was
		// interrupted.
		enc := json.NewEncoder(jsonF)
		enc.SetIndent("", "  ")
		err := enc.Encode(rows)
		if cerr := jsonF.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return errors.Join(runErr, fmt.Errorf("%s: %w", o.jsonOut, err))
		}
	}
	return runErr
}
