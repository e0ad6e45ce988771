package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/scenario"
)

func newSweepCmd() *cobra.Command {
	var out, executor, shard string
	var jobs, partitions int
	var fresh, checkPolls bool
	var sl slurmOptions
	cmd := &cobra.Command{
		Use:   "sweep sweep.yaml",
		Short: "Run a scenario over a grid of parameter values; write tables and plots",
		Long: `Sweep runs a scenario at every point of a parameter grid. The sweep file names
a base scenario (the default one if omitted), the grid (any scenario key, as
its dotted YAML path, with a list of values; the first key varies slowest),
optionally several seeds per point, and what to plot:

  scenario: dht-modes.yaml          # relative to the sweep file
  grid:
    workload.dht.compute_cycles: [0, 1000, 2000, 4000]
    machine.iommu.iotlb_ways: [1, 4]
  seeds: [1, 2, 3, 4, 5]            # every point once per seed (optional)
  plot:
    x: workload.dht.compute_cycles  # default: the first grid key
    y: [inserts_per_second, pcie_tlps_per_insert]
    log_x: false

Every point runs every experiment of the scenario (each scheme at each
collision ratio), and every experiment checks its own result. A task — a
point at one seed — runs on one worker; the outputs are in grid order and
byte-identical across runs, executors and shards:
  sweep.csv, sweep.json          one row per experiment (and seed), written
                                 as the tasks finish
  sweep-summary.csv              with two or more seeds: every metric's mean
                                 over the seeds and the half width of its
                                 95 % confidence interval (Student t)
  sweep-<metric>.png and .svg    one plot per y metric, a line per series
                                 (with seeds: the means, with the intervals
                                 as error bars)
  parts/                         a file per task (its rows and a manifest:
                                 point, seed, inputs, version, host, wall
                                 time, status) and the sweep's input

Running a sweep again into the same --out reuses every task whose part says
done with the same inputs (scenario, point, seed, time limit, aaemu version)
and runs the missing, failed or changed ones (--fresh runs all). Ctrl-C
stops the sweep: the finished tasks stay in parts/ and in the tables
(sweep.json says "complete": false), and the exit status is 130.

Executors (--executor): local runs the tasks here on --jobs workers; slurm
submits them as one Slurm job array (sbatch --array), each array task
running its share with --shard, waits for it and merges the parts. The
shares run anywhere the same way: "aaemu sweep FILE --shard i/n --out DIR"
runs share i of n into DIR/parts (GNU parallel, HTCondor or Kubernetes
Indexed Jobs can start them), and "aaemu sweep merge DIR" writes the tables
and plots from the parts.

Metrics: inserts_per_second, sim_time_us, remote_ops_per_insert,
pcie_tlps_per_insert, wire_bytes_per_insert, target_polls.`,
		Example: `  aaemu sweep examples/sweep-compute.yaml --out /tmp/sweep
  aaemu sweep examples/sweep-compute.yaml --executor slurm --slurm-partition batch --slurm-time 30:00 --out /shared/sweep
  aaemu sweep examples/sweep-compute.yaml --shard 0/4 --out /shared/sweep   # …and 1/4, 2/4, 3/4
  aaemu sweep merge /shared/sweep`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := sweepRun{file: args[0], out: out, jobs: jobs, partitions: partitions, checkPolls: checkPolls, fresh: fresh, slurm: sl}
			switch {
			case shard != "" && cmd.Flags().Changed("executor"):
				return fmt.Errorf("--shard runs one share here: it takes no --executor")
			case shard != "" && fresh:
				return fmt.Errorf("--fresh with --shard would remove the other shares' parts: remove %s before starting the shares", filepath.Join(out, "parts"))
			case shard != "":
				sh, err := sweep.ParseShard(shard)
				if err != nil {
					return err
				}
				return o.shard(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), sh)
			}
			switch executor {
			case "local":
				return o.local(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			case "slurm":
				return o.slurmRun(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return fmt.Errorf("--executor %q: want local or slurm", executor)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out", "output directory")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "tasks simulated in parallel (with slurm: per array task, and the CPUs it asks for)")
	// Points already fill the cores: by default a point's nodes run on one
	// goroutine each, unless fewer points than cores run at once.
	partitionsFlag(cmd.Flags(), &partitions, 1)
	checkPollsFlag(cmd.Flags(), &checkPolls)
	cmd.Flags().StringVar(&executor, "executor", "local", "where the tasks run: local or slurm")
	cmd.Flags().StringVar(&shard, "shard", "", "run only share i/n of the tasks (those whose index is i modulo n) into OUT/parts")
	cmd.Flags().BoolVar(&fresh, "fresh", false, "run every task, even those OUT/parts holds done with the same inputs")
	sl.flags(cmd)
	cmd.AddCommand(newSweepMergeCmd())
	return cmd
}

func newSweepMergeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "merge DIR",
		Short: "Write a sweep's tables and plots into DIR from the parts its shards left in DIR/parts",
		Long: `Merge reads DIR/parts — the sweep's input and a file per task, written by
"aaemu sweep FILE --shard i/n --out DIR" or an array task of the slurm
executor — and writes DIR/sweep.csv, sweep.json, sweep-summary.csv (with
seeds) and the plots, byte for byte what the local executor writes. Tasks
that are missing, failed or ran with other inputs are listed and the tables
say "complete": false.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return mergeSweep(cmd.OutOrStdout(), args[0])
		},
	}
}

// sweepRun is one sweep command's options.
type sweepRun struct {
	file, out        string
	jobs, partitions int
	checkPolls       bool
	fresh            bool
	slurm            slurmOptions
}

// parse reads the sweep file and checks the options.
func (o *sweepRun) parse() (*sweep.Spec, error) {
	data, err := os.ReadFile(o.file)
	if err != nil {
		return nil, err
	}
	s, err := sweep.Parse(o.file, data, filepath.Dir(o.file))
	if err != nil {
		return nil, err
	}
	if o.jobs < 1 {
		return nil, fmt.Errorf("--jobs must be at least 1")
	}
	if err := checkPartitions(o.partitions); err != nil {
		return nil, err
	}
	s.Partitions = o.partitions
	s.CheckEveryPoll = o.checkPolls
	return s, nil
}

// partsDir is where the tasks leave their parts; with --fresh the earlier
// ones are removed first.
func (o *sweepRun) partsDir(s *sweep.Spec) (string, error) {
	dir := filepath.Join(o.out, "parts")
	if o.fresh {
		if err := removeParts(dir); err != nil {
			return "", err
		}
	}
	if err := s.SaveInput(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// removeParts removes the task files and input of a parts directory (and
// the directory, if that leaves it empty).
func removeParts(dir string) error {
	names, _ := filepath.Glob(filepath.Join(dir, "task-*.json"))
	names = append(names, sweep.InputFile(dir))
	for _, n := range names {
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	os.Remove(dir)
	return nil
}

// local runs the sweep's tasks here and writes its tables and plots.
func (o *sweepRun) local(ctx context.Context, stdout, stderr io.Writer) error {
	s, err := o.parse()
	if err != nil {
		return err
	}
	outs, err := prepareSweepDir(o.out, "sweep")
	if err != nil {
		return err
	}
	if s.Parts, err = o.partsDir(s); err != nil {
		outs.abandon()
		return err
	}
	rows, plots, wall, err := runAndWrite(ctx, stderr, s, "sweep", o.out, "sweep", o.jobs, outs)
	if rows == nil && err != nil {
		return err
	}
	printSweep(stdout, s, rows)
	fmt.Fprintf(stdout, "(%d points, %d experiments in %v wall time on %d workers)\n", len(s.Points()), len(rows), wall.Round(time.Millisecond), o.jobs)
	printOutputs(stdout, o.out, s, plots)
	return err
}

// shard runs one share of the sweep's tasks into OUT/parts.
func (o *sweepRun) shard(ctx context.Context, stdout, stderr io.Writer, sh sweep.Shard) error {
	s, err := o.parse()
	if err != nil {
		return err
	}
	if sh.N > len(s.Tasks()) {
		return fmt.Errorf("--shard %s: the sweep has %d tasks, fewer than %d shares", sh, len(s.Tasks()), sh.N)
	}
	if s.Parts, err = o.partsDir(s); err != nil {
		return err
	}
	s.Shard = sh
	disp := newProgress(stderr, "sweep share "+sh.String(), s.Experiments())
	start := time.Now()
	tasks := 0
	err = s.RunStream(disp.context(ctx), o.jobs, func([]sweep.Row) { tasks++ }, nil)
	disp.close()
	fmt.Fprintf(stdout, "share %s: %d tasks done in %v; their parts are in %s (merge with: aaemu sweep merge %s)\n",
		sh, tasks, time.Since(start).Round(time.Millisecond), s.Parts, o.out)
	return err
}

// mergeSweep writes the tables and plots of the sweep whose parts are in
// dir/parts.
func mergeSweep(stdout io.Writer, dir string) error {
	parts := filepath.Join(dir, "parts")
	s, err := sweep.LoadInput(parts)
	if err != nil {
		return err
	}
	rows, missing, err := s.Collect(parts)
	if err != nil {
		return err
	}
	plots, err := writeSweepTables(dir, s, rows, len(missing) == 0)
	if err != nil {
		return err
	}
	printSweep(stdout, s, rows)
	fmt.Fprintf(stdout, "(%d of %d tasks merged)\n", len(s.Tasks())-len(missing), len(s.Tasks()))
	printOutputs(stdout, dir, s, plots)
	if len(missing) > 0 {
		const show = 10
		more := ""
		if len(missing) > show {
			more = fmt.Sprintf("\n  … and %d more", len(missing)-show)
			missing = missing[:show]
		}
		return fmt.Errorf("%s: the sweep is not complete (sweep.json says \"complete\": false); rerun the sweep to run these:\n  %s%s", dir, strings.Join(missing, "\n  "), more)
	}
	return nil
}

// writeSweepTables writes the tables of rows into dir, and, if complete,
// the summary and plots, as the local executor does.
func writeSweepTables(dir string, s *sweep.Spec, rows []sweep.Row, complete bool) ([]string, error) {
	outs, err := prepareSweepDir(dir, "sweep")
	if err != nil {
		return nil, err
	}
	csvF, jsonF := outs.take("sweep.csv"), outs.take("sweep.json")
	t := s.NewTables(csvF, jsonF)
	t.Add(rows)
	if err := errors.Join(t.Close(complete), csvF.Close(), jsonF.Close()); err != nil {
		return nil, err
	}
	if !complete {
		return nil, nil
	}
	if err := writeSummary(dir, s, rows); err != nil {
		return nil, err
	}
	return s.SavePlots(rows, dir, "sweep")
}

// writeSummary writes sweep-summary.csv for a sweep with two or more seeds.
func writeSummary(dir string, s *sweep.Spec, rows []sweep.Row) error {
	if len(s.Seeds) < 2 {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, "sweep-summary.csv"))
	if err != nil {
		return err
	}
	return errors.Join(s.WriteSummary(f, rows), f.Close())
}

// printSweep prints the table on the terminal: the grid values, seed,
// scheme, collisions and the plotted metrics.
func printSweep(stdout io.Writer, s *sweep.Spec, rows []sweep.Row) {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, a := range s.Grid {
		head = append(head, a.Key)
	}
	seeds := len(s.Seeds) > 0
	if seeds {
		head = append(head, "seed")
	}
	dht := s.Kind() == scenario.KindDHT
	head = append(head, "scheme")
	if dht {
		head = append(head, "collisions")
	}
	head = append(head, s.Plot.Y...)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		cells := append([]string{}, r.Point...)
		if seeds && r.Seed != nil {
			cells = append(cells, fmt.Sprint(*r.Seed))
		}
		cells = append(cells, string(r.Scheme()))
		if dht {
			cells = append(cells, fmt.Sprintf("%.0f%%", 100*r.Result.Collisions))
		}
		for _, y := range s.Plot.Y {
			cells = append(cells, fmt.Sprintf("%.4g", s.Metric(r, y)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
}

func printOutputs(stdout io.Writer, dir string, s *sweep.Spec, plots []string) {
	fmt.Fprintf(stdout, "outputs in %s/: sweep.csv, sweep.json", dir)
	if len(s.Seeds) > 1 && plots != nil {
		fmt.Fprint(stdout, ", sweep-summary.csv")
	}
	for _, p := range plots {
		fmt.Fprintf(stdout, ", %s", filepath.Base(p))
	}
	fmt.Fprintln(stdout, ", parts/")
}

// sweepOutputs are the files a sweep may write into its directory: the
// tables, and a PNG and an SVG per metric named after base.
func sweepOutputs(base string) []string {
	names := []string{"sweep.csv", "sweep.json", "sweep-summary.csv"}
	for _, m := range sweep.MetricNames() {
		names = append(names, base+"-"+m+".png", base+"-"+m+".svg")
	}
	return names
}

// prepareSweepDir makes dir, removes an earlier sweep's files from it and
// creates the tables.
func prepareSweepDir(dir, base string) (*outputs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := clearOutputs(dir, sweepOutputs(base)); err != nil {
		return nil, err
	}
	return createOutputs(dir, "sweep.csv", "sweep.json")
}

// runAndWrite runs a sweep on jobs workers and writes dir/sweep.csv and
// dir/sweep.json (created by prepareSweepDir) as its points finish, then
// the plots named after base. A terminal gets a line per running
// experiment and one over the sweep. It returns the rows that finished, the
// plot files and the wall time; when it was interrupted or a point failed,
// the rows so far with the error (the JSON then says "complete": false,
// and there are no plots).
func runAndWrite(ctx context.Context, stderr io.Writer, s *sweep.Spec, label, dir, base string, jobs int, outs *outputs) ([]sweep.Row, []string, time.Duration, error) {
	csvF, jsonF := outs.take("sweep.csv"), outs.take("sweep.json")
	tables := s.NewTables(csvF, jsonF)
	disp := newProgress(stderr, label, s.Experiments())
	start := time.Now()
	rows := []sweep.Row{}
	var writeErr error
	err := s.RunStream(disp.context(ctx), jobs, func(r []sweep.Row) {
		rows = append(rows, r...)
		if err := tables.Add(r); err != nil && writeErr == nil {
			writeErr = err
		}
	}, nil)
	disp.close()
	wall := time.Since(start)
	writeErr = errors.Join(writeErr, tables.Close(err == nil), csvF.Close(), jsonF.Close())
	if writeErr != nil {
		writeErr = fmt.Errorf("%s: %w", dir, writeErr)
	}
	if err != nil {
		if errors.Is(err, runctl.ErrInterrupted) {
			err = fmt.Errorf("%w after %d experiments: %s holds their rows (sweep.json says \"complete\": false)", err, len(rows), dir)
		}
		return rows, nil, wall, errors.Join(err, writeErr)
	}
	if err := writeSummary(dir, s, rows); err != nil {
		return rows, nil, wall, errors.Join(writeErr, err)
	}
	plots, err := s.SavePlots(rows, dir, base)
	return rows, plots, wall, errors.Join(writeErr, err)
}
