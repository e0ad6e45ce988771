package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/internal/version"
	"github.com/aaemu/aaemu/internal/waveview"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/waveforms"
	"github.com/aaemu/aaemu/workload"
)

type scenarioOpts struct {
	seed         uint64
	seedSet      bool
	out          string
	noVCD        bool
	noPcap       bool
	trace        string
	traceExclude string
	traceFrom    string
	traceTo      string
	until        string
	noHost       bool
	txnLog       bool
	partitions   int
	checkPolls   bool
}

func newRunCmd(log *logrus.Logger) *cobra.Command {
	var o scenarioOpts
	cmd := &cobra.Command{
		Use:   "run [scenario.yaml]",
		Short: "Run a scenario (the built-in default without a file)",
		Long: `Run simulates a scenario: a cluster of nodes (CPU cores, memory, an IOMMU with
the Active Access extensions, an RDMA NIC on PCIe) joined by Ethernet, running
a workload under each scheme it names. It prints a table and writes into the
output directory (the first three of the first experiment: the first scheme
at the first collision ratio):
  run.vcd       waveforms of the selected signals in the selected window
  run.gtkw      a GTKWave save file that opens run.vcd on the window, grouped
                by block, with run.*.txt naming enumerated values
  run.pcapng    every RoCEv2 frame on its wire's interface (named after the
                wire), with picosecond times and its transaction IDs as
                comments
  stats.json    configuration, seed, version, every experiment's statistics
                (labelled) and results: byte-identical for a scenario and seed
  host.json     the host's speed per experiment

Outputs are created before anything is simulated, and an earlier run's files
that this run does not write are removed. On a terminal, stderr shows each
experiment's simulated time, rate and ETA. Ctrl-C stops the simulation, closes
the VCD and capture marked incomplete, writes stats.json with "complete":
false and exits with status 130.

The default scenario: two nodes on 1 GbE, one process inserting into a
hashtable on the other node, with AA (scratchpad notification) and plain RMA,
at 5% and 25% collisions. See examples/ for scenario files.`,
		Example: `  aaemu run
  aaemu run examples/dht-modes.yaml --out /tmp/modes
  aaemu run --trace 'node1.iommu' --trace-from 10us --trace-to 20us`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			return runScenario(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), log, file, o)
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&o.seed, "seed", 1, "root seed (overrides the scenario's)")
	f.StringVar(&o.out, "out", "out", "output directory")
	f.BoolVar(&o.noVCD, "no-vcd", false, "do not write waveforms")
	f.BoolVar(&o.noPcap, "no-pcap", false, "do not write the packet capture")
	f.StringVar(&o.trace, "trace", "", "signal patterns to dump (overrides the scenario's outputs.trace)")
	f.StringVar(&o.traceExclude, "trace-exclude", "", "signal patterns to leave out")
	f.StringVar(&o.traceFrom, "trace-from", "", "first time in the VCD (overrides outputs.trace_from)")
	f.StringVar(&o.traceTo, "trace-to", "", "last time in the VCD (overrides outputs.trace_to)")
	f.StringVar(&o.until, "until", "10s", "stop every experiment at this simulated time")
	f.BoolVar(&o.noHost, "no-host-stats", false, "do not write host.json (the host's speed, which differs from run to run)")
	f.BoolVar(&o.txnLog, "txn-log", false, "write txns.jsonl: every transaction of the first experiment and its cause")
	partitionsFlag(f, &o.partitions, auto)
	checkPollsFlag(f, &o.checkPolls)
	return cmd
}

func loadScenario(file string) (scenario.Scenario, error) {
	if file == "" {
		return scenario.DefaultScenario(), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return scenario.Scenario{}, err
	}
	return scenario.ParseScenario(file, data)
}

// runOutputs are the files `aaemu run` may write into its directory.
var runOutputs = append([]string{"run.vcd", "run.gtkw", "run.pcapng", "stats.json", "host.json", "txns.jsonl"}, translateFiles()...)

// translateFiles are the GTKWave translate files a run's save file may use.
func translateFiles() []string {
	var out []string
	for _, e := range waveview.Enums() {
		out = append(out, waveforms.SaveFile{SaveName: "run.gtkw"}.TranslateFile(e))
	}
	return out
}

// runStats is stats.json: every experiment's statistics, labelled, and the
// results, all deterministic for a scenario and seed (the host's speed is
// in host.json).
type runStats struct {
	Format        string `json:"format"`
	FormatVersion int    `json:"format_version"`
	AaemuVersion  string `json:"aaemu_version"`
	Seed          uint64 `json:"seed"`
	// Complete is false when the run was interrupted or an experiment
	// failed: the file holds what was simulated until then.
	Complete    bool   `json:"complete"`
	Interrupted bool   `json:"interrupted,omitempty"`
	Error       string `json:"error,omitempty"`
	Config      any    `json:"config"`
	// Planned is how many experiments the scenario has; Experiments those
	// that ran, in order, each with its own engine's statistics.
	Planned     int               `json:"planned_experiments"`
	Experiments []experimentStats `json:"experiments"`
	// Results are the finished experiments' table rows.
	Results any `json:"results"`
}

// runStatsVersion is stats.json's layout of aaemu run: 2 has a section per
// experiment instead of the first experiment's statistics at the top.
const runStatsVersion = 2

type experimentStats struct {
	Label      string          `json:"label"`
	Workload   string          `json:"workload"`
	Scheme     workload.Scheme `json:"scheme"`
	Collisions *float64        `json:"collisions,omitempty"` // the DHT's
	// Traced: the experiment run.vcd and run.pcapng show.
	Traced   bool   `json:"traced,omitempty"`
	Complete bool   `json:"complete"`
	Error    string `json:"error,omitempty"`
	sim.Snapshot
}

// hostStats is host.json: how fast this host ran each experiment. It
// differs from run to run, so it is kept out of stats.json.
type hostStats struct {
	Format      string           `json:"format"`
	WallSeconds float64          `json:"wall_seconds"`
	Experiments []hostExperiment `json:"experiments"`
}

type hostExperiment struct {
	Label string `json:"label"`
	*sim.HostSpeed
	// Windows: the synchronisation rounds of the kernel (docs/kernel.md).
	Windows uint64 `json:"windows"`
	// BuildSeconds: building the machine and the workload, before the run.
	BuildSeconds float64 `json:"build_seconds"`
	// Ranks: a run over MPI ranks, what they exchanged.
	Ranks *rankHost `json:"ranks,omitempty"`
}

func runScenario(ctx context.Context, stdout, stderr io.Writer, log *logrus.Logger, file string, o scenarioOpts) error {
	var comm sim.Comm
	if mpiJob != nil {
		comm = mpiJob
	}
	return runScenarioRanks(ctx, stdout, stderr, log, file, o, newRanked(comm))
}

// runScenarioRanks runs the scenario, over MPI ranks when rk is not nil:
// every rank builds each experiment's machine and runs its share of the
// nodes; rank 0 writes the outputs and prints the table.
func runScenarioRanks(ctx context.Context, stdout, stderr io.Writer, log *logrus.Logger, file string, o scenarioOpts, rk *ranked) error {
	sc, until, tr, err := resolveRun(file, o)
	if rk != nil {
		defer rk.close()
		if err == nil {
			err = supportsRanks(sc)
		}
		if err := rk.agree(err); err != nil {
			return err
		}
		if err := rk.agreeOn(sc, o, until); err != nil {
			return err
		}
		stdout = rk.stdout(stdout)
		if o.out, err = rk.outDir(o.out); err != nil {
			return rk.agree(err)
		}
	} else if err != nil {
		return err
	}
	err = runResolved(ctx, stdout, stderr, log, sc, until, tr, o, rk)
	if rk != nil && rk.rank != 0 && err != nil && !errors.As(err, new(agreedError)) {
		// Rank 0 reports the run's outcome; another rank says only
		// what went wrong on it.
		return fmt.Errorf("rank %d of %d: %w", rk.rank, rk.size, err)
	}
	return err
}

// resolveRun reads the scenario and applies the flags.
func resolveRun(file string, o scenarioOpts) (scenario.Scenario, sim.Tick, traceOpts, error) {
	var tr traceOpts
	sc, err := loadScenario(file)
	if err != nil {
		return sc, 0, tr, err
	}
	if err := checkPartitions(o.partitions); err != nil {
		return sc, 0, tr, err
	}
	sc.Partitions = o.partitions
	sc.CheckEveryPoll = o.checkPolls
	if o.seedSet {
		sc.Seed = o.seed
	}
	if o.trace != "" {
		sc.Outputs.Trace = o.trace
	}
	if o.traceFrom != "" {
		sc.Outputs.TraceFrom = o.traceFrom
	}
	if o.traceTo != "" {
		sc.Outputs.TraceTo = o.traceTo
	}
	sc.Outputs.VCD = sc.Outputs.VCD && !o.noVCD
	sc.Outputs.Pcap = sc.Outputs.Pcap && !o.noPcap
	until, err := sim.ParseTick(o.until)
	if err != nil {
		return sc, 0, tr, fmt.Errorf("--until: %w", err)
	}
	if key, err := sc.Validate(); err != nil {
		return sc, 0, tr, fmt.Errorf("%s: %w", key, err)
	}
	tr, err = traceOptions(sc, o)
	return sc, until, tr, err
}

func runResolved(ctx context.Context, stdout, stderr io.Writer, log *logrus.Logger, sc scenario.Scenario, until sim.Tick, tr traceOpts, o scenarioOpts, rk *ranked) error {
	// Every output is created before the simulation; an earlier run's
	// files that this run does not write go.
	err := os.MkdirAll(o.out, 0o755)
	if err == nil {
		err = clearOutputs(o.out, runOutputs)
	}
	names := []string{"stats.json"}
	if !o.noHost {
		names = append(names, "host.json")
	}
	if o.txnLog {
		names = append(names, "txns.jsonl")
	}
	if sc.Outputs.VCD {
		names = append(names, "run.vcd", "run.gtkw")
	}
	if sc.Outputs.Pcap {
		names = append(names, "run.pcapng")
	}
	var outs *outputs
	if err == nil {
		outs, err = createOutputs(o.out, names...)
	}
	if rk != nil {
		err = rk.agree(err)
	}
	if err != nil {
		if outs != nil {
			outs.abandon()
		}
		return err
	}
	defer outs.abandon()

	dht := sc.Workload.Kind == scenario.KindDHT
	xs := sc.Experiments()
	disp := newProgress(stderr, "run", len(xs))
	ctx = disp.context(ctx)
	var results []workload.DHTResult
	var others []scenario.WorkloadResult // the other workloads'
	var exps []experimentStats
	host := hostStats{Format: "aaemu-host"}
	var traced *tracedOutputs
	var runErr, writeErr error
	interrupted := false
	start := time.Now()
	for i, x := range xs {
		if runctl.Canceled(ctx) {
			interrupted = true
			break
		}
		tb := time.Now()
		e := sim.NewEngine(sc.Seed)
		if i == 0 && o.txnLog {
			e.EnableTxnLog()
		}
		pr, err := sc.PrepareRun(e, x)
		if rk != nil {
			if err == nil {
				err = rk.join(e.World())
			}
			err = rk.agree(err)
			if i == 0 {
				rk.testExit(stderr)
			}
		}
		if err != nil {
			runErr = err
			break
		}
		if i == 0 {
			traced = attachOutputs(e, pr.Sys, sc, x, tr, outs)
		}
		log.WithFields(logrus.Fields{"scheme": x.Scheme, "collisions": x.Collisions}).Info("running")
		t0 := time.Now()
		end, stopped := runctl.Run(ctx, pr.Sys.Cluster, x.Label(dht), until, pr.Progress)
		es := experimentStats{Label: x.Label(dht), Workload: sc.Workload.Kind, Scheme: x.Scheme, Traced: i == 0, Complete: !stopped, Snapshot: e.Snapshot()}
		if dht {
			es.Collisions = &x.Collisions
		}
		he := hostExperiment{Label: es.Label, HostSpeed: e.HostSpeed(time.Since(t0)), Windows: e.World().Windows(), BuildSeconds: t0.Sub(tb).Seconds()}
		if rk != nil {
			he.Ranks = rk.traffic(e.World(), t0.Sub(tb), time.Since(t0))
		}
		host.Experiments = append(host.Experiments, he)
		if !stopped {
			out, err := pr.Finish(end)
			switch {
			case err != nil:
				es.Complete, es.Error, runErr = false, err.Error(), err
			case dht:
				results = append(results, out.DHT)
			default:
				others = append(others, out.Workload)
			}
		}
		exps = append(exps, es)
		if i == 0 {
			note := ""
			if stopped {
				note = fmt.Sprintf("incomplete: aaemu was interrupted at %s of simulated time; the run did not finish", end.Human())
			}
			writeErr = errors.Join(writeErr, traced.close(uint64(end), note))
			if o.txnLog {
				writeErr = errors.Join(writeErr, outs.write("txns.jsonl", func(w io.Writer) error { return encodeTxnLog(w, e) }))
			}
		}
		if stopped {
			interrupted = true
			break
		}
		if runErr != nil {
			break
		}
	}
	disp.close()
	wall := time.Since(start)
	st := runStats{Format: "aaemu-stats", FormatVersion: runStatsVersion, AaemuVersion: version.Version, Seed: sc.Seed,
		Complete: !interrupted && runErr == nil && len(exps) == len(xs), Interrupted: interrupted, Config: sc,
		Planned: len(xs), Experiments: exps, Results: results}
	if !dht {
		st.Results = others
	}
	if runErr != nil {
		st.Error = runErr.Error()
	}
	writeErr = errors.Join(writeErr, outs.write("stats.json", func(w io.Writer) error { return encodeJSON(w, st) }))
	if !o.noHost {
		host.WallSeconds = wall.Seconds()
		writeErr = errors.Join(writeErr, outs.write("host.json", func(w io.Writer) error { return encodeJSON(w, host) }))
	}
	// The table of what finished, whatever happened to the files.
	if dht {
		printResults(stdout, sc, results, wall)
	} else {
		printWorkloadResults(stdout, sc, others, wall)
	}
	fmt.Fprintf(stdout, "\noutputs in %s/:", o.out)
	if traced != nil && traced.vcd != nil {
		fmt.Fprintf(stdout, " run.vcd (%d signals, %d changes), run.gtkw,", len(traced.vcd.Signals()), traced.vcd.Changes())
	}
	if traced != nil && traced.pcap != nil {
		fmt.Fprintf(stdout, " run.pcapng (%d frames),", traced.frames)
	}
	fmt.Fprintf(stdout, " stats.json")
	if !o.noHost {
		fmt.Fprintf(stdout, ", host.json")
	}
	if o.txnLog {
		fmt.Fprintf(stdout, ", txns.jsonl")
	}
	fmt.Fprintln(stdout)
	if traced != nil && traced.vcd != nil {
		fmt.Fprintf(stdout, "view: gtkwave %s %s; wireshark %s\n", filepath.Join(o.out, "run.vcd"), filepath.Join(o.out, "run.gtkw"), filepath.Join(o.out, "run.pcapng"))
	}
	if interrupted {
		return errors.Join(fmt.Errorf("%w after %d of %d experiments: %s/ holds what was simulated (stats.json says \"complete\": false)",
			runctl.ErrInterrupted, len(results)+len(others), len(xs), o.out), writeErr)
	}
	return errors.Join(runErr, writeErr)
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printResults(w io.Writer, sc scenario.Scenario, rs []workload.DHTResult, wall time.Duration) {
	d := sc.Workload.DHT
	who := "1 process on node 0 → table on node 1"
	if d.ProcsPerNode > 0 {
		who = fmt.Sprintf("%d nodes × %d processes, a shard on every node", sc.Machine.Nodes, d.ProcsPerNode)
	}
	what := "DHT inserts"
	mixed := d.Lookups > 0 || d.Deletes > 0
	if mixed {
		what = fmt.Sprintf("DHT inserts, then lookups of %.0f%% and deletes of %.0f%% of them", 100*d.Lookups, 100*d.Deletes)
	}
	fmt.Fprintf(w, "aaemu %s · %s: %d keys, %d cells, %s · %d Mb/s links · seed %d\n\n",
		version.Version, what, d.Inserts, d.Cells, who, sc.Machine.Wire.RateMbps, sc.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "scheme\tcollisions\tinserts/s\tremote ops/insert\tPCIe TLPs/insert\twire bytes/insert\ttarget polls\tsim time\t"
	if mixed {
		head += "lookups\tdeletes\tops/s\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.0f%%\t%.0f\t%.2f\t%.1f\t%.0f\t%d\t%s\t", r.Scheme, 100*r.Collisions, r.InsertsPerSec, r.RemoteOps,
			r.TLPs, r.WireBytes, r.TargetPolls, sim.Tick(r.SimTimePS).Human())
		if mixed {
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t", r.Lookups, r.Deletes, r.OpsPerSec)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	// Speed-ups of each AA scheme over RMA at the same collision ratio.
	for _, r := range rs {
		if r.Scheme == workload.RMA {
			continue
		}
		for _, b := range rs {
			if b.Scheme == workload.RMA && b.Collisions == r.Collisions {
				fmt.Fprintf(w, "%s is %.1f× as fast as RMA at %.0f%% collisions\n", r.Scheme, r.InsertsPerSec/b.InsertsPerSec, 100*r.Collisions)
			}
		}
	}
	fmt.Fprintf(w, "(%d experiments in %v wall time)\n", len(rs), wall.Round(time.Millisecond))
}

// printWorkloadResults is the table of a workload other than the DHT: a
// line per scheme.
func printWorkloadResults(w io.Writer, sc scenario.Scenario, rs []scenario.WorkloadResult, wall time.Duration) {
	fmt.Fprintf(w, "aaemu %s · workload %s · %d nodes × %d cores · %d Mb/s links · seed %d\n\n",
		version.Version, sc.Workload.Kind, sc.Machine.Nodes, sc.Machine.Cores, sc.Machine.Wire.RateMbps, sc.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scheme\trate\tsim time\tNIC energy\tdetail\t\n")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.4g %s\t%s\t%.4g µJ\t%s\t\n", r.Scheme, r.Rate, r.Unit, sim.Tick(r.SimTimePS).Human(), r.NICEnergyJ*1e6, r.Detail)
	}
	tw.Flush()
	fmt.Fprintf(w, "(%d experiments in %v wall time)\n", len(rs), wall.Round(time.Millisecond))
}

// traceOpts are the VCD's signal filter and window.
type traceOpts struct {
	filter   *waveforms.Filter
	from, to sim.Tick
}

func traceOptions(sc scenario.Scenario, o scenarioOpts) (traceOpts, error) {
	var t traceOpts
	if !sc.Outputs.VCD {
		return t, nil
	}
	filter, err := waveforms.NewFilter(sc.Outputs.Trace, o.traceExclude, false)
	if err != nil {
		return t, fmt.Errorf("outputs.trace: %w", err)
	}
	t.filter = filter
	t.from, _ = sim.ParseTick(sc.Outputs.TraceFrom)
	if sc.Outputs.TraceTo != "" {
		t.to, _ = sim.ParseTick(sc.Outputs.TraceTo)
	}
	if t.to != 0 && t.to < t.from {
		return t, fmt.Errorf("outputs.trace_to %v lies before trace_from %v", t.to, t.from)
	}
	return t, nil
}

// tracedOutputs are the files the first experiment writes.
type tracedOutputs struct {
	outs    *outputs
	vcdFile *os.File
	vcd     *waveforms.Writer
	pcapF   *os.File
	pcap    *roce.Capture
	frames  int
	opcode  []int // per wire: the VCD id of its bth_opcode, -1 when not dumped
	err     error
}

// attachOutputs taps the first experiment's wires and engine into the
// capture and the VCD, which outs has created.
func attachOutputs(e *sim.Engine, c *aa.System, sc scenario.Scenario, x scenario.Experiment, tr traceOpts, outs *outputs) *tracedOutputs {
	t := &tracedOutputs{outs: outs}
	if outs.has("run.pcapng") {
		f := outs.take("run.pcapng")
		t.pcapF = f
		names := make([]string, len(c.Wires))
		for i, w := range c.Wires {
			names[i] = wireName(w)
		}
		cp, err := roce.NewCapture(f, names)
		if err != nil {
			t.err = err
			return t
		}
		t.pcap = cp
	}
	if outs.has("run.vcd") {
		f := outs.take("run.vcd")
		t.vcdFile = f
		t.vcd = waveforms.NewWriter(f, waveforms.Options{Filter: tr.filter, From: uint64(tr.from), To: uint64(tr.to),
			Version: "aaemu " + version.Version, Comment: vcdComment(sc, x)})
		t.declareOpcodes(c.Wires)
		e.AttachTracer(t.vcd)
	}
	for i, w := range c.Wires {
		w.SetTap(t.tap(i))
	}
	return t
}

// wireName is a wire's block name ("net.wire01"): its input channel's
// without ".tx".
func wireName(w *nic.Wire) string { return strings.TrimSuffix(w.In.Name(), ".tx") }

// declareOpcodes adds to the VCD, ahead of the blocks' signals, a
// bth_opcode signal per wire: the BTH opcode of the latest frame the wire
// sent (x before the first).
func (t *tracedOutputs) declareOpcodes(wires []*nic.Wire) {
	for _, w := range wires {
		id, ok := t.vcd.Declare(wireName(w)+".bth_opcode", 8)
		if !ok {
			id = -1
		}
		t.opcode = append(t.opcode, id)
	}
}

// tap records the frames wire i sends: on the wire's interface in the
// capture, and on its bth_opcode signal.
func (t *tracedOutputs) tap(i int) nic.Tap {
	return func(now sim.Tick, fr *nic.Frame, lost bool) {
		if t.opcode != nil && t.opcode[i] >= 0 {
			t.vcd.Set(uint64(now), t.opcode[i], uint64(fr.Packet.Opcode))
		}
		if t.pcap == nil {
			return
		}
		b, err := fr.Serialize()
		if err == nil {
			comment := fmt.Sprintf("txn=%v cause=%v", fr.ID, fr.Cause)
			if lost {
				comment += " lost"
			}
			err = t.pcap.Write(i, uint64(now), b, comment)
		}
		if err != nil && t.err == nil {
			t.err = err
		}
		t.frames++
	}
}

// close finishes the files at simulated time end; a note (an interrupted
// run) ends each with a mark that says so: a $comment in the VCD's
// value-change section, a second pcapng section whose comment is the note.
// It returns every error met.
func (t *tracedOutputs) close(end uint64, note string) error {
	var errs []error
	if t.pcapF != nil {
		if t.pcap != nil {
			if err := t.pcap.Flush(); err != nil && t.err == nil {
				t.err = err
			}
		}
		if note != "" && t.err == nil {
			_, t.err = t.pcapF.Write(roce.SectionHeader(note))
		}
		if err := t.pcapF.Close(); err != nil && t.err == nil {
			t.err = err
		}
		if t.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.pcapF.Name(), t.err))
		}
	}
	if t.vcd != nil {
		err := t.vcd.Close(end)
		if err == nil && note != "" {
			_, err = fmt.Fprintf(t.vcdFile, "$comment\n\t%s\n$end\n", strings.ReplaceAll(note, "$end", "$ end"))
		}
		if cerr := t.vcdFile.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.vcdFile.Name(), err))
		}
		errs = append(errs, t.outs.write("run.gtkw", func(w io.Writer) error {
			return writeGTKWTo(w, t.outs.dir, "run.gtkw", "run.vcd", t.vcd)
		}))
	}
	return errors.Join(errs...)
}

// vcdComment names the experiment a VCD holds.
func vcdComment(sc scenario.Scenario, x scenario.Experiment) string {
	if sc.Workload.Kind == scenario.KindDHT {
		return fmt.Sprintf("DHT %s at %.0f%% collisions, seed %d", x.Scheme, 100*x.Collisions, sc.Seed)
	}
	return fmt.Sprintf("workload %s, %s, seed %d", sc.Workload.Kind, x.Scheme, sc.Seed)
}
