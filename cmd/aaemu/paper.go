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

	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/scenario"
)

func newPaperCmd() *cobra.Command {
	var out, scenarioFile string
	var jobs int
	cmd := &cobra.Command{
		Use:   "paper [FIGURE...]",
		Short: "Run the sweeps of the Active Access paper's figures and check its claims",
		Long: `Paper runs the built-in sweeps that correspond to figures of the Active
Access paper (all of them without arguments) and writes, per figure, into
OUT/fig<name>/ the sweep's table (CSV, JSON) and plots (PNG, SVG). It prints
each of the paper's qualitative claims next to what aaemu measured, and
whether they agree; OUT/claims.md collects them.

Modelled: 6a and 6b (streaming RDMA WRITEs with no IOMMU and with the
extended IOMMU against the message size, over 1 GbE and over 10 GbE),
6c (two-node DHT, AA vs RMA over collisions), 6d (AM-Onload's best
C), 7a and 7b (every scheme as the machine grows, 5 % and 25 % collisions),
7c (IOTLB associativity and eviction), 7d (the access counter), 8a and 8b
(the NICs' and the routers' energy of the fault-tolerant sort), 9a (logging
of gets) and 9b (the sort's communication time). 6d, 7a and 7b use the
paper's 32 processes per node on up to 8 nodes; 7c uses 8 and 7d, 8a, 8b, 9a
and 9b 4, so that a figure takes seconds. The power figures of 8a and 8b are
the machine's in the scenario (machine.nic.active_w, idle_w,
machine.network.router_nj_per_byte; --scenario FILE to change them): by
default assumptions, not the paper's NIC's measured ones.`,
		Example: `  aaemu paper 6c
  aaemu paper 7a 7c --out /tmp/paper -j 2
  aaemu paper 9b 8a 8b --scenario power.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			sc := scenario.DefaultScenario()
			if scenarioFile != "" {
				data, err := os.ReadFile(scenarioFile)
				if err != nil {
					return err
				}
				if sc, err = scenario.ParseScenario(scenarioFile, data); err != nil {
					return err
				}
			}
			paper.Energy = sc.Power()
			return runPaper(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, out, jobs)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out/paper", "output directory")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "points simulated in parallel")
	cmd.Flags().StringVar(&scenarioFile, "scenario", "", "a scenario file whose machine's power figures 8a and 8b use (default: the built-in scenario's)")
	return cmd
}

func runPaper(stdout, stderr io.Writer, names []string, out string, jobs int) error {
	figs, err := paper.Lookup(names)
	if err != nil {
		return err
	}
	if jobs < 1 {
		return fmt.Errorf("--jobs must be at least 1")
	}
	var md strings.Builder
	md.WriteString("| figure | claim | paper | tolerance | aaemu | agrees |\n|---|---|---|---|---|---|\n")
	for _, f := range figs {
		if f.Custom != nil {
			if err := runCustomFigure(stdout, stderr, f, out, jobs, &md); err != nil {
				return err
			}
			continue
		}
		s, err := sweep.Parse("figure "+f.Name, []byte(f.Sweep), ".")
		if err != nil {
			return err
		}
		dir := filepath.Join(out, "fig"+f.Name)
		rows, plots, wall, err := runAndWrite(stderr, s, "figure "+f.Name, dir, "fig"+f.Name, jobs)
		if err != nil {
			return fmt.Errorf("figure %s: %w", f.Name, err)
		}
		fmt.Fprintf(stdout, "Figure %s: %s\n", f.Name, f.Title)
		fmt.Fprintf(stdout, "(%d experiments in %v; %s/: sweep.csv, sweep.json", len(rows), wall.Round(time.Millisecond), dir)
		for _, pl := range plots {
			fmt.Fprintf(stdout, ", %s", filepath.Base(pl))
		}
		fmt.Fprintln(stdout, ")")
		printClaims(stdout, f.Name, f.Check(rows), &md)
	}
	return writeFile(filepath.Join(out, "claims.md"), func(w io.Writer) error {
		_, err := io.WriteString(w, md.String())
		return err
	})
}

// runCustomFigure runs a figure of a workload other than the DHT: its own
// experiments, a CSV, a plot against the node count (or its X), and its
// claims.
func runCustomFigure(stdout, stderr io.Writer, f *paper.Figure, out string, jobs int, md *strings.Builder) error {
	dir := filepath.Join(out, "fig"+f.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	c := f.Custom
	var p *mpb.Progress
	var done func()
	if fi, ok := stderr.(*os.File); ok && isTerminal(fi) {
		p = mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(40))
		bar := p.AddBar(int64(c.Experiments()), mpb.PrependDecorators(decor.Name("figure "+f.Name+" "), decor.CountersNoUnit("%d/%d")))
		done = func() { bar.Increment() }
	}
	start := time.Now()
	pts, err := c.Run(jobs, done)
	if p != nil {
		p.Wait()
	}
	if err != nil {
		return fmt.Errorf("figure %s: %w", f.Name, err)
	}
	wall := time.Since(start)
	if err := writeFile(filepath.Join(dir, "points.csv"), func(w io.Writer) error { return c.WriteCSV(w, pts) }); err != nil {
		return err
	}
	pl, leg, err := sweep.Draw(c.Series(pts), c.Axes(f.Title))
	if err != nil {
		return err
	}
	pl.Title.Text = "Figure " + f.Name
	plots, err := sweep.SaveFigure(pl, leg, filepath.Join(dir, "fig"+f.Name))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Figure %s: %s\n", f.Name, f.Title)
	fmt.Fprintf(stdout, "(%d experiments in %v; %s/: points.csv", len(pts), wall.Round(time.Millisecond), dir)
	for _, x := range plots {
		fmt.Fprintf(stdout, ", %s", filepath.Base(x))
	}
	fmt.Fprintln(stdout, ")")
	printClaims(stdout, f.Name, f.CheckPoints(pts), md)
	return nil
}

// printClaims prints a figure's claims as a table and adds them to md.
func printClaims(stdout io.Writer, name string, rs []paper.Result, md *strings.Builder) {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  claim\tpaper\ttolerance\taaemu\tagrees\t")
	for _, r := range rs {
		verdict := "yes"
		if !r.Holds {
			verdict = "NO"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", r.Claim.Text, r.Claim.Paper, r.Claim.Tolerance, r.Measured, verdict)
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s |\n", name, r.Claim.Text, r.Claim.Paper, r.Claim.Tolerance, r.Measured, verdict)
	}
	tw.Flush()
	fmt.Fprintln(stdout)
}
