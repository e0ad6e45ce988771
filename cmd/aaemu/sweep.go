package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/scenario"
)

func newSweepCmd() *cobra.Command {
	var out string
	var jobs int
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
  sweep.csv, sweep.json          one row per experiment
  sweep-<metric>.png and .svg    one plot per y metric, a line per series

Metrics: inserts_per_second, sim_time_us, remote_ops_per_insert,
pcie_tlps_per_insert, wire_bytes_per_insert, target_polls.`,
		Example: `  aaemu sweep examples/sweep-compute.yaml --out /tmp/sweep`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweep(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], out, jobs)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out", "output directory")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "points simulated in parallel")
	return cmd
}

func runSweep(stdout, stderr io.Writer, file, out string, jobs int) error {
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
	pts := s.Points()
	rows, plots, wall, err := runAndWrite(stderr, s, "sweep", out, "sweep", jobs)
	if err != nil {
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
	return nil
}

// runAndWrite runs a sweep on jobs workers behind a progress bar (on a
// terminal) and writes dir/sweep.csv, dir/sweep.json and the plots named
// after base. It returns the rows, the plot files and the wall time.
func runAndWrite(stderr io.Writer, s *sweep.Spec, label, dir, base string, jobs int) ([]sweep.Row, []string, time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, 0, err
	}
	var p *mpb.Progress
	var done func()
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		p = mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(40))
		bar := p.AddBar(int64(len(s.Points())), mpb.PrependDecorators(decor.Name(label+" "), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.AverageETA(decor.ET_STYLE_GO)))
		done = func() { bar.Increment() }
	}
	start := time.Now()
	rows, err := s.Run(jobs, done)
	if p != nil {
		p.Wait()
	}
	if err != nil {
		return nil, nil, 0, err
	}
	wall := time.Since(start)
	if err := writeFile(filepath.Join(dir, "sweep.csv"), func(w io.Writer) error { return s.WriteCSV(w, rows) }); err != nil {
		return nil, nil, 0, err
	}
	if err := writeFile(filepath.Join(dir, "sweep.json"), func(w io.Writer) error { return s.WriteJSON(w, rows) }); err != nil {
		return nil, nil, 0, err
	}
	plots, err := s.SavePlots(rows, dir, base)
	return rows, plots, wall, err
}
