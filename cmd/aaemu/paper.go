package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/examples/machines"

	"github.com/aaemu/aaemu/internal/bglpaper" // registers aaemu paper bgl
	"github.com/aaemu/aaemu/internal/paper"
	_ "github.com/aaemu/aaemu/internal/paper/am2"    // registers aaemu paper am2
	"github.com/aaemu/aaemu/internal/paper/mpistart" // registers the mpi-start paper
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/msg/lcp"
	"github.com/aaemu/aaemu/scenario"
)

func newPaperCmd() *cobra.Command {
	var out, scenarioFile, machineName, fragment, matching, bulk, iommuMode, runs, costs, progress string
	var jobs, partitions, maxNodes, fragments int
	var list, reduced, resume, checkPolls bool
	var iotlbOnly string
	cmd := &cobra.Command{
		Use:   "paper [PAPER] [FIGURE...]",
		Short: "Run the sweeps of a paper's figures and check its claims (the Active Access paper by default)",
		Long: `Paper runs the built-in sweeps that correspond to figures of a source
paper: the Active Access paper unless the first argument names another
(--list shows them with their figures; the figures of paper NAME go into
OUT/NAME/). Without figure names it runs them all and writes, per figure, into
OUT/fig<name>/ the sweep's table (CSV, JSON) and plots (PNG, SVG). It prints
each of the paper's qualitative claims next to what aaemu measured, and
whether they agree; OUT/claims.md collects them.

Modelled: 6a and 6b (streaming RDMA WRITEs with no IOMMU and with the
extended IOMMU against the message size, over 1 GbE and over 10 GbE),
6c (two-node DHT, AA vs RMA over collisions), 6d (AM-Onload's best
C), 7a and 7b (every scheme as the machine grows, 5 % and 25 % collisions),
7c (the IOTLB's hit rate against its entries, a1 to af, lru and random,
under random keys and keys with locality), 7d (the access counter), 8a and 8b
(the NICs' and the routers' energy of the fault-tolerant sort), 9a (logging
of gets) and 9b (the sort's communication time). 6d, 7a and 7b use the
paper's 32 processes per node on up to 8 nodes; 7c uses 8 and 7d, 8a, 8b, 9a
and 9b 4, so that a figure takes seconds. The power figures of 8a and 8b are
the machine's in the scenario (machine.nic.active_w, idle_w,
machine.network.router_nj_per_byte; --scenario FILE to change them): by
default assumptions, not the paper's NIC's measured ones.

--max-nodes N runs the figures whose axis is the machine's size (7a, 7b, 7d
and 9a; all four without figure names) at the paper's scale instead: on 2,
4, 8, … up to N nodes, 32 processes per node (P up to 32 N, the paper's
8,192 at N = 256), over the srd transport, whose connection state does not
grow with nodes × cores (rc's would: a queue pair per core per peer).

--fragment and --fragments set the multirail paper's rendezvous fragment
and its largest message in fragments (by default 1MB and 64: the paper's
64 MB fragments and 4 GB messages scaled by 1/64; --fragment 64MB runs the
paper's own sizes). --matching on-arrival has the NICs' matching units
match messages as they arrive (BXI's way) instead of when the rank takes
them. --iommu bypass takes the nodes' IOMMU off the NICs' DMA path (by
default every NIC's DMA goes through it, pipelined).

--progress thread (or interrupts) runs the bgl paper's MPI series with
the message layer's communication thread on the coprocessor (the machine
in coprocessor mode) or interrupt-driven, instead of polling (the
paper's); series on Blue Gene/L's own collectives stay polling.

--resume keeps the points of an earlier run of a figure (its points.csv in
OUT) and runs only the experiments it lacks, so a long figure stopped part
way goes on where it stopped; --runs REGEXP runs only the experiments
whose label (as the progress line shows it: "processors 32 EM3D/naive
Clump, multi-protocol") matches. A figure with experiments left out writes
its points but does not check its claims; --resume then adds the rest
(several --runs into separate --out directories: their points.csv lines
joined under one header, then --resume, which runs nothing). Both apply to
the figures that write points.csv (not the DHT sweeps).

--machine gemini runs them on the machine of the paper's large-scale runs
instead: 32 processes a node on a Gemini-class 3D torus (the nodes' block
nearest a cube), fast host links, one access log a process, as the
paper's threads each own a log, and for AA-SP a polling hyperthread a core
(examples/machines/gemini.yaml); --machine
FILE on the machine of a scenario file. --machine gem5 runs 6a, 6b and 6c
(all three without figure names) on the paper's two-node gem5 set-up
instead (examples/machines/gem5.yaml): 1 GbE, the NIC on a PCIe Gen1 x1
link, one in-order core a node at 2 GHz; a scenario file of two nodes and
fewer than 32 cores is taken the same way. --machine gem5-e1000 is the
same set-up with the e1000's software path (machine.nic.offload: none):
an interrupt and the driver's work on the CPU for every packet, RMA's
gets and atomics done by the target's CPU.`,
		Example: `  aaemu paper 6c
  aaemu paper 7a 7c --out /tmp/paper -j 2
  aaemu paper 9b 8a 8b --scenario power.yaml
  aaemu paper 7a 9a --max-nodes 256 --partitions 2 -j 1
  aaemu paper multirail 5a --fragment 64MB --fragments 16 -j 1
  aaemu paper 7a --machine gemini --max-nodes 32
  aaemu paper 6c --machine gem5
  aaemu paper am2 table6 -j 1 --runs 'EM3D/good'
  aaemu paper am2 table6 -j 1 --resume
  aaemu paper bgl table1 4b --progress interrupts -j 1`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				return listPapers(cmd.OutOrStdout())
			}
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
			profile := sc.BGLML.Costs
			if cmd.Flags().Changed("costs") {
				profile = costs
			}
			bglpaper.Costs = bglml.Estimated
			if profile != "" {
				cp, err := bglml.ParseCostProfile(profile)
				if err != nil {
					return fmt.Errorf("--costs %q: want estimated or table1", profile)
				}
				bglpaper.Costs = cp // before the figures are built: their claims depend on it
			}
			bglpaper.MPIProgress = bglml.Polling
			if cmd.Flags().Changed("progress") {
				g, err := bglml.ParseProgress(progress)
				if err != nil {
					return fmt.Errorf("--progress %s: not a progress mode (polling, thread, interrupts)", progress)
				}
				bglpaper.MPIProgress = g // before the figures are built: under table1, which claims are inputs depends on it
			}
			paper.Machine = nil
			if machineName != "" {
				m, err := machinePreset(machineName)
				if err != nil {
					return err
				}
				paper.Machine = m
				if maxNodes == 0 && !m.TwoNode() {
					maxNodes = 8
				}
				if maxNodes != 0 && m.TwoNode() {
					return fmt.Errorf("--max-nodes: %s is a two-node machine (the figures 6a–6c run on it)", m.Name)
				}
			}
			pp, figs, err := paperFigures(args, maxNodes)
			if err != nil {
				return err
			}
			if bglpaper.Costs != bglml.Estimated && pp.Name != bglpaper.Paper.Name {
				return fmt.Errorf("--costs (or the scenario's bglml.costs) applies to the Blue Gene/L paper (aaemu paper bgl --costs table1)")
			}
			if m := paper.Machine; m != nil && m.TwoNode() {
				if pp != paper.AA {
					return fmt.Errorf("--machine %s: a two-node machine runs the Active Access paper's 6a–6c", m.Name)
				}
				if figs, err = paper.OnTwoNode(m, figs, len(args) > 0); err != nil {
					return err
				}
			}
			if reduced {
				if pp, figs, err = reducedFigures(pp, args); err != nil {
					return err
				}
			}
			if iotlbOnly != "" {
				if pp.Name != paper.AA.Name {
					return fmt.Errorf("--iotlb-only applies to the Active Access paper's figure 7c")
				}
				if figs, err = paper.IOTLBOnly(figs, iotlbOnly, reduced); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("fragment") || cmd.Flags().Changed("fragments") || cmd.Flags().Changed("matching") || cmd.Flags().Changed("bulk") || cmd.Flags().Changed("iommu") {
				if pp != paper.Multirail || reduced {
					return fmt.Errorf("--fragment, --fragments, --matching, --bulk and --iommu apply to the multirail paper's own figures (aaemu paper multirail --fragment 64MB)")
				}
				if pp, figs, err = multirailAt(args, fragment, fragments, matching, bulk, iommuMode); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("progress") && pp.Name != bglpaper.Paper.Name {
				return fmt.Errorf("--progress applies to the bgl paper's MPI series (aaemu paper bgl --progress thread)")
			}
			mpistart.Machine = nil
			if pp.Name == "mpi-start" && scenarioFile != "" {
				if sc.Machine.StartX == nil {
					return fmt.Errorf("%s: the mpi-start figures run on a machine with machine.startx", scenarioFile)
				}
				mpistart.Machine = &sc
			}
			if pp.Name != paper.AA.Name {
				out = filepath.Join(out, pp.Name) // the Active Access paper's figures keep their place
			}
			sel := pointSelection{resume: resume}
			if cmd.Flags().Changed("runs") {
				re, err := regexp.Compile(runs)
				if err != nil {
					return fmt.Errorf("--runs %q: %w", runs, err)
				}
				sel.runs = re
			}
			paper.CheckEveryPoll = checkPolls
			return runPaper(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), pp, figs, out, jobs, partitions, sel)
		},
	}
	cmd.Flags().StringVar(&out, "out", "out/paper", "output directory")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", runtime.NumCPU(), "points simulated in parallel")
	partitionsFlag(cmd.Flags(), &partitions, 1) // the points already fill the cores
	checkPollsFlag(cmd.Flags(), &checkPolls)
	cmd.Flags().BoolVar(&list, "list", false, "list the papers and their figures")
	cmd.Flags().StringVar(&iotlbOnly, "iotlb-only", "", "run 7c with only the pages of this kind in the IOTLB (table: the paper's simulated IOTLB may have seen only the table's pages; the others are translated outside it at no cost)")
	cmd.Flags().BoolVar(&resume, "resume", false, "keep the points of each figure's points.csv in the output directory and run only the experiments it lacks (figures with points.csv)")
	cmd.Flags().StringVar(&runs, "runs", "", "run only the experiments whose label matches this regular expression (figures with points.csv; their claims are checked when every point is there)")
	cmd.Flags().BoolVar(&reduced, "reduced", false, "run the figures on the reduced sizes of the test suite (papers that have them: aa (7c on two IOTLB sizes), mpi-start, am2, bgl)")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 0, "run 7a, 7b, 7d and 9a on 2, 4, … up to this many nodes × 32 processes over srd (0: the figures' own 2 to 8 nodes)")
	cmd.Flags().StringVar(&fragment, "fragment", "1MB", "multirail: the rendezvous's fragment size, in bytes or with KB, MB, GB (powers of 1024); a multiple of the path MTU (the paper's: 64MB)")
	cmd.Flags().StringVar(&matching, "matching", "on-poll", "multirail: when the NICs' matching units match a message: on-poll (when the rank takes it) or on-arrival (in the NIC as it arrives, eager data delivered in place, as BXI does)")
	cmd.Flags().StringVar(&bulk, "bulk", "cycle", "multirail: how fragments cross the NICs' host side: cycle (TLP by TLP) or batched (a fragment's work requests but its first and last by the bulk DMA path: one copy, the TLPs counted; frames still per packet)")
	cmd.Flags().StringVar(&iommuMode, "iommu", "on", "multirail: the nodes' IOMMU: on (every NIC's DMA through it, pipelined) or bypass (off the DMA path)")
	cmd.Flags().StringVar(&progress, "progress", "polling", "bgl: how the message layer makes progress under the figures' MPI series (Table 1's, 4a, 4b, 5b's MPICH2, the mapping, 6's MPICH2): polling (the paper's), thread (the communication thread; the machine in coprocessor mode) or interrupts (mpi.BGL's collectives stay polling)")
	cmd.Flags().IntVar(&fragments, "fragments", 64, "multirail: the largest message in fragments, a power of two up to 64 (the paper's 4 GB is 64 of 64 MB)")
	cmd.Flags().StringVar(&machineName, "machine", "", "run 7a, 7b, 7d and 9a at scale (--max-nodes, 8 by default) on a machine preset: gemini (a Cray XE6-like machine on a Gemini-class 3D torus, one access log a process) or a scenario file; gem5 (or gem5-e1000, its e1000 without RDMA, or a file of two nodes): 6a, 6b and 6c on the paper's two-node gem5 set-up")
	cmd.Flags().StringVar(&costs, "costs", "estimated", "bgl: the message layer's and MPI's software costs: estimated (per-step estimates) or table1 (those and the per-message remainder of Table 1, derived from the model; Table 1 and 4a's intercept are then inputs, printed \"calibrated\"); default: the scenario's bglml.costs, else estimated")
	cmd.Flags().StringVar(&scenarioFile, "scenario", "", "a scenario file whose machine's power figures 8a and 8b use (default: the built-in scenario's); for mpi-start, the machine with machine.startx the figures run on (default: two E5000s)")
	return cmd
}

// machinePreset is --machine's preset: gemini, or a scenario file.
func machinePreset(name string) (*paper.Preset, error) {
	switch name {
	case "gemini":
		return paper.NewPreset("gemini.yaml", machines.Gemini)
	case "gem5":
		return paper.NewPreset("gem5.yaml", machines.Gem5)
	case "gem5-e1000":
		return paper.NewPreset("gem5-e1000.yaml", machines.Gem5E1000)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--machine: %w (a preset: gemini, gem5, gem5-e1000; or a scenario file)", err)
	}
	return paper.NewPreset(name, data)
}

// listPapers prints every paper with its figures.
func listPapers(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "paper\tfigures\ttitle")
	for _, p := range paper.Papers() {
		var names []string
		for _, f := range p.Figures() {
			names = append(names, f.Name)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, strings.Join(names, " "), p.Title)
	}
	return tw.Flush()
}

// figureOutputs are the files a figure writes into its directory.
func figureOutputs(f *paper.Figure) []string {
	base := "fig" + f.Name
	if f.Custom != nil {
		return append([]string{"points.csv", base + ".png", base + ".svg"}, f.ExtraFiles...)
	}
	return sweepOutputs(base)
}

// reducedFigures looks the named figures of pp up among its reduced ones.
func reducedFigures(pp *paper.Paper, args []string) (*paper.Paper, []*paper.Figure, error) {
	rp, err := pp.AtReduced()
	if err != nil {
		return nil, nil, err
	}
	if len(args) > 0 && paper.Find(args[0]) != nil {
		args = args[1:]
	}
	figs, err := rp.Lookup(args)
	return rp, figs, err
}

// paperFigures looks the named figures up (a paper's name first picks
// that paper; all its figures without names), at scale when maxNodes is
// not 0.
func paperFigures(args []string, maxNodes int) (*paper.Paper, []*paper.Figure, error) {
	pp, figs, err := paper.Select(args)
	if err != nil || maxNodes == 0 {
		return pp, figs, err
	}
	if len(args) > 0 && paper.Find(args[0]) != nil {
		args = args[1:]
	}
	names := args
	if maxNodes < 2 || maxNodes > machine.MaxNodes {
		return nil, nil, fmt.Errorf("--max-nodes %d: want 2..%d nodes", maxNodes, machine.MaxNodes)
	}
	nodes := paper.ScaleNodes(maxNodes)
	var out, sizeless []*paper.Figure
	for _, f := range figs {
		switch {
		case f.AtScale != nil:
			out = append(out, f.AtScale(nodes))
		case len(names) > 0: // asked for by name
			sizeless = append(sizeless, f)
		}
	}
	if len(sizeless) > 0 {
		var have []string
		for _, f := range pp.Figures() {
			if f.AtScale != nil {
				have = append(have, f.Name)
			}
		}
		return nil, nil, fmt.Errorf("--max-nodes: figure %s has no machine-size axis (it applies to %s)", sizeless[0].Name, strings.Join(have, ", "))
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("--max-nodes: the %s paper has no figure with a machine-size axis", pp.Name)
	}
	return pp, out, nil
}

// pointSelection is which experiments of the figures with points.csv run:
// with resume, those the earlier points.csv lacks; with runs, those whose
// label matches.
type pointSelection struct {
	resume bool
	runs   *regexp.Regexp
	have   [][]paper.Point // per figure, read from the earlier points.csv
}

func (sel pointSelection) only(c *paper.Custom) func(paper.Point) bool {
	if sel.runs == nil {
		return nil
	}
	return func(p paper.Point) bool { return sel.runs.MatchString(c.Label(p)) }
}

// load checks that sel applies to figs and reads the earlier points,
// before anything is cleared or simulated.
func (sel *pointSelection) load(figs []*paper.Figure, out string) error {
	if !sel.resume && sel.runs == nil {
		return nil
	}
	matched := false
	var labels []string
	for _, f := range figs {
		if f.Custom == nil {
			return fmt.Errorf("--resume and --runs apply to the figures that write points.csv; figure %s is a sweep", f.Name)
		}
		var have []paper.Point
		if sel.resume {
			name := filepath.Join(out, "fig"+f.Name, "points.csv")
			file, err := os.Open(name)
			switch {
			case errors.Is(err, os.ErrNotExist):
			case err != nil:
				return fmt.Errorf("--resume: %w", err)
			default:
				have, err = f.Custom.ReadCSV(name, file)
				file.Close()
				if err != nil {
					return fmt.Errorf("--resume: %w", err)
				}
			}
		}
		sel.have = append(sel.have, have)
		if sel.runs != nil {
			for _, l := range f.Custom.Labels() {
				labels = append(labels, l)
				matched = matched || sel.runs.MatchString(l)
			}
		}
	}
	if sel.runs != nil && !matched {
		return fmt.Errorf("--runs %q matches no experiment of the figures (they are: %s)", sel.runs, strings.Join(labels, "; "))
	}
	return nil
}

func runPaper(ctx context.Context, stdout, stderr io.Writer, pp *paper.Paper, figs []*paper.Figure, out string, jobs, partitions int, sel pointSelection) error {
	if err := checkPartitions(partitions); err != nil {
		return err
	}
	paper.Partitions = partitions
	if jobs < 1 {
		return fmt.Errorf("--jobs must be at least 1")
	}
	if err := sel.load(figs, out); err != nil {
		return err
	}
	// Before simulating: no earlier run's figure or claims stays, and every
	// table and claims.md of this run is created.
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range pp.Figures() {
		dir := filepath.Join(out, "fig"+f.Name)
		if err := clearOutputs(dir, figureOutputs(f)); err != nil {
			return err
		}
		os.Remove(dir) // only if empty
	}
	if err := clearOutputs(out, []string{"claims.md"}); err != nil {
		return err
	}
	claims, err := createOutputs(out, "claims.md")
	if err != nil {
		return err
	}
	claims.take("claims.md").Close()
	figOuts := make([]*outputs, len(figs))
	defer func() {
		for _, o := range figOuts {
			if o != nil {
				o.abandon()
				os.Remove(o.dir) // a figure that never ran leaves no directory
			}
		}
	}()
	for i, f := range figs {
		dir := filepath.Join(out, "fig"+f.Name)
		if f.Custom != nil {
			figOuts[i], err = createOutputs(dir, "points.csv")
		} else {
			figOuts[i], err = prepareSweepDir(dir, "fig"+f.Name)
		}
		if err != nil {
			return err
		}
	}
	var md strings.Builder
	md.WriteString("| figure | claim | paper | tolerance | aaemu | agrees |\n|---|---|---|---|---|---|\n")
	// claims.md is rewritten after each figure, so an interrupted run keeps
	// the claims of the figures it finished.
	writeClaims := func(note string) error {
		return os.WriteFile(filepath.Join(out, "claims.md"), []byte(md.String()+note), 0o644)
	}
	for i, f := range figs {
		if f.Custom != nil {
			var have []paper.Point
			if sel.have != nil {
				have = sel.have[i]
			}
			err = runCustomFigure(ctx, stdout, stderr, f, out, jobs, &md, figOuts[i], have, sel.only(f.Custom))
		} else {
			err = runSweepFigure(ctx, stdout, stderr, f, out, jobs, &md, figOuts[i])
		}
		figOuts[i] = nil
		if err != nil {
			var rest []string
			for _, g := range figs[i+1:] {
				rest = append(rest, g.Name)
			}
			note := fmt.Sprintf("\nIncomplete: figure %s did not finish (%v)", f.Name, err)
			if errors.Is(err, runctl.ErrInterrupted) {
				note = fmt.Sprintf("\nIncomplete: interrupted during figure %s", f.Name)
			}
			if len(rest) > 0 {
				note += "; not run: " + strings.Join(rest, ", ")
			}
			return errors.Join(err, writeClaims(note+".\n"))
		}
		if err := writeClaims(""); err != nil {
			return err
		}
	}
	return nil
}

// runSweepFigure runs a figure that is a sweep of the DHT scenario.
func runSweepFigure(ctx context.Context, stdout, stderr io.Writer, f *paper.Figure, out string, jobs int, md *strings.Builder, outs *outputs) error {
	var s *sweep.Spec
	var err error
	if f.Scenario != nil {
		s, err = sweep.ParseWith("figure "+f.Name, []byte(f.Sweep), f.Scenario.Load)
	} else {
		s, err = sweep.Parse("figure "+f.Name, []byte(f.Sweep), ".")
	}
	if err != nil {
		outs.abandon()
		return err
	}
	s.Partitions, s.CheckEveryPoll = paper.Partitions, paper.CheckEveryPoll
	dir := filepath.Join(out, "fig"+f.Name)
	rows, plots, wall, err := runAndWrite(ctx, stderr, s, "figure "+f.Name, dir, "fig"+f.Name, jobs, outs)
	if err != nil {
		return fmt.Errorf("figure %s: %w", f.Name, err)
	}
	fmt.Fprintf(stdout, "Figure %s: %s\n", f.Name, f.Title)
	fmt.Fprintf(stdout, "(%d experiments in %v; %s/: sweep.csv, sweep.json", len(rows), wall.Round(time.Millisecond), dir)
	for _, pl := range plots {
		fmt.Fprintf(stdout, ", %s", filepath.Base(pl))
	}
	fmt.Fprintln(stdout, ")")
	printClaims(stdout, f.Name, f.Check(rows), md)
	if f.Notes != nil {
		if n := f.Notes(rows); n != "" {
			fmt.Fprintln(stdout, n)
		}
	}
	return nil
}

// runCustomFigure runs a figure of a workload other than the DHT: its own
// experiments, a CSV written as they finish, a plot against the node count
// (or its X), and its claims.
//
// Points in have (an earlier run's, --resume) are written and not run; of
// the others only those only accepts run (nil: all). A figure whose points
// are not all there writes them but does not check its claims.
func runCustomFigure(ctx context.Context, stdout, stderr io.Writer, f *paper.Figure, out string, jobs int, md *strings.Builder, outs *outputs, have []paper.Point, only func(paper.Point) bool) error {
	dir := filepath.Join(out, "fig"+f.Name)
	c := f.Custom
	file := outs.take("points.csv")
	cw := csv.NewWriter(file)
	var writeErr error
	write := func(rec []string) {
		if writeErr == nil {
			writeErr = cw.Write(rec)
		}
		cw.Flush()
		if writeErr == nil {
			writeErr = cw.Error()
		}
	}
	write(c.CSVHeader())
	toRun, kept := c.Plan(have, only)
	disp := newProgress(stderr, "figure "+f.Name, toRun)
	start := time.Now()
	var pts []paper.Point
	err := c.RunSome(disp.context(ctx), jobs, have, only, func(p paper.Point) {
		pts = append(pts, p)
		write(c.CSVRecord(p))
	}, nil)
	disp.close()
	wall := time.Since(start)
	writeErr = errors.Join(writeErr, file.Close())
	if writeErr != nil {
		writeErr = fmt.Errorf("%s: %w", file.Name(), writeErr)
	}
	if err != nil {
		if errors.Is(err, runctl.ErrInterrupted) {
			err = fmt.Errorf("%w after %d experiments: %s holds their points", err, len(pts), file.Name())
		}
		return fmt.Errorf("figure %s: %w", f.Name, errors.Join(err, writeErr))
	}
	if writeErr != nil {
		return writeErr
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
	// An extra picture whose runs --runs left out is not drawn, and said so.
	var notDrawn *paper.NotDrawn
	if f.Extra != nil {
		if err := f.Extra(dir); err != nil && !errors.As(err, &notDrawn) {
			return fmt.Errorf("figure %s: %w", f.Name, err)
		}
		for _, x := range f.ExtraFiles {
			if notDrawn == nil || !slices.Contains(notDrawn.Files, x) {
				plots = append(plots, filepath.Join(dir, x))
			}
		}
	}
	fmt.Fprintf(stdout, "Figure %s: %s\n", f.Name, f.Title)
	fmt.Fprintf(stdout, "(%d experiments in %v", toRun, wall.Round(time.Millisecond))
	if kept > 0 {
		fmt.Fprintf(stdout, ", %d from the earlier points.csv", kept)
	}
	fmt.Fprintf(stdout, "; %s/: points.csv", dir)
	for _, x := range plots {
		fmt.Fprintf(stdout, ", %s", filepath.Base(x))
	}
	fmt.Fprintln(stdout, ")")
	if notDrawn != nil {
		fmt.Fprintf(stdout, "  %s\n", notDrawn)
	}
	if n := c.Experiments(); len(pts) < n {
		note := fmt.Sprintf("claims not checked: %d of its %d experiments' points (--resume with the others' points adds them)", len(pts), n)
		fmt.Fprintf(stdout, "  %s\n\n", note)
		fmt.Fprintf(md, "| %s | %s | | | | |\n", f.Name, note)
		return nil
	}
	printClaims(stdout, f.Name, f.CheckPoints(pts), md)
	return nil
}

// printClaims prints a figure's claims as a table and adds them to md.
func printClaims(stdout io.Writer, name string, rs []paper.Result, md *strings.Builder) {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  claim\tpaper\ttolerance\taaemu\tagrees\t")
	for _, r := range rs {
		verdict := r.Verdict()
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", r.Claim.Text, r.Claim.Paper, r.Claim.Tolerance, r.Measured, verdict)
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s | %s |\n", name, r.Claim.Text, r.Claim.Paper, r.Claim.Tolerance, r.Measured, verdict)
	}
	tw.Flush()
	fmt.Fprintln(stdout)
}

// multirailAt is the multirail paper with fragments of the flag's size and
// messages up to fragments of them, and the named figures of it.
func multirailAt(args []string, fragment string, fragments int, matching, bulk, iommuMode string) (*paper.Paper, []*paper.Figure, error) {
	frag, err := parseBytes(fragment)
	if err != nil {
		return nil, nil, fmt.Errorf("--fragment %q: %w", fragment, err)
	}
	var m lcp.Matching
	switch matching {
	case lcp.OnPoll.String():
		m = lcp.OnPoll
	case lcp.OnArrival.String():
		m = lcp.OnArrival
	default:
		return nil, nil, fmt.Errorf("--matching %q: want %s or %s", matching, lcp.OnPoll, lcp.OnArrival)
	}
	var b lcp.Bulk
	switch bulk {
	case lcp.Cycle.String():
		b = lcp.Cycle
	case lcp.Batched.String():
		b = lcp.Batched
	default:
		return nil, nil, fmt.Errorf("--bulk %q: want %s or %s", bulk, lcp.Cycle, lcp.Batched)
	}
	var io paper.MultirailIOMMU
	switch iommuMode {
	case paper.IOMMUOn.String():
		io = paper.IOMMUOn
	case paper.IOMMUBypass.String():
		io = paper.IOMMUBypass
	default:
		return nil, nil, fmt.Errorf("--iommu %q: want %s or %s", iommuMode, paper.IOMMUOn, paper.IOMMUBypass)
	}
	pp, err := paper.MultirailAt(frag, fragments, m, b, io)
	if err != nil {
		return nil, nil, err
	}
	if len(args) > 0 && paper.Find(args[0]) != nil {
		args = args[1:]
	}
	figs, err := pp.Lookup(args)
	return pp, figs, err
}

// parseBytes reads a byte count: digits, optionally followed by KB, MB or
// GB (powers of 1024, as the paper's "64 MB" fragment is 2^26 bytes).
func parseBytes(s string) (int, error) {
	mult := int64(1)
	num := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(strings.ToUpper(num), u.suffix) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.m
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a byte count: digits, optionally followed by KB, MB or GB")
	}
	if v > (1<<40)/mult {
		return 0, fmt.Errorf("more than a terabyte")
	}
	return int(v * mult), nil
}
