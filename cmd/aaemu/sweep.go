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
	var out string
	var jobs, partitions int
	cmd := &cobra.Command{
		Use:   "sweep sweep.yaml",
		Short: "Run a scenario over a grid of parameter values; write tables and plots",
		Long: `Sweep runs a scenario at every point of a parameter grid. The sweep file names
a base scenario (the default one if omitted), the grid (any scenario key, as
its dotted YAML path, with a list of values; the first key varies slowest)
and what to plot:

  scenario: dht-modes.yaml          # relative to the sweep file
  grid:
    workload.dht.compute_cycles: [0, 1000, 2000, 4000]
    machine.iommu.iotlb_ways: [1, 4]
  plot:
    x: workload.dht.compute_cycles  # default: the first grid key
    y: [inserts_per_second, pcie_tlps_per_insert]
    log_x: false

Every point runs every experiment of the scenario (each scheme at each
collision ratio), and every experiment checks its own result. Points run in
parallel; the outputs are in grid order and byte-identical across runs:
  sweep.csv, sweep.json          one row per experiment, written as the
                                 points finish
  sweep-<metric>.png and .svg    one plot per y metric, a line per series

Ctrl-C stops the sweep: the finished points' rows stay (sweep.json says
"complete": false) and the exit status is 130.

Metrics: inserts_per_second, sim_time_us, remote_ops_per_insert,
pcie_tlps_per_insert, wire_bytes_per_insert, target_polls.`,
		Example: `  aaemu sweep examples/sweep-compute.yaml --out /tmp/sweep`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweep(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], out, jobs, partitions)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out", "output directory")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "points simulated in parallel")
	// Points already fill the cores: by default a point's nodes run on one
	// goroutine each, unless fewer points than cores run at once.
	partitionsFlag(cmd.Flags(), &partitions, 1)
	return cmd
}

func runSweep(ctx context.Context, stdout, stderr io.Writer, file, out string, jobs, partitions int) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	s, err := sweep.Parse(file, data, filepath.Dir(file))
	if err != nil {
		return err
	}
	if jobs < 1 {
		return fmt.Errorf("--jobs must be at least 1")
	}
	if err := checkPartitions(partitions); err != nil {
		return err
	}
	s.Partitions = partitions
	pts := s.Points()
	outs, err := prepareSweepDir(out, "sweep")
	if err != nil {
		return err
	}
	rows, plots, wall, err := runAndWrite(ctx, stderr, s, "sweep", out, "sweep", jobs, outs)
	if rows == nil && err != nil {
		return err
	}
	// The table on the terminal: the grid values, scheme, collisions and
	// the plotted metrics.
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	var head []string
	for _, a := range s.Grid {
		head = append(head, a.Key)
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
	fmt.Fprintf(stdout, "(%d points, %d experiments in %v wall time on %d workers)\n", len(pts), len(rows), wall.Round(time.Millisecond), jobs)
	fmt.Fprintf(stdout, "outputs in %s/: sweep.csv, sweep.json", out)
	for _, p := range plots {
		fmt.Fprintf(stdout, ", %s", filepath.Base(p))
	}
	fmt.Fprintln(stdout)
	return err
}

// sweepOutputs are the files a sweep may write into its directory: the
// tables, and a PNG and an SVG per metric named after base.
func sweepOutputs(base string) []string {
	names := []string{"sweep.csv", "sweep.json"}
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
	plots, err := s.SavePlots(rows, dir, base)
	return rows, plots, wall, errors.Join(writeErr, err)
}
