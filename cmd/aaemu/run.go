package main

import (
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
	"github.com/aaemu/aaemu/internal/version"
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
}

func newRunCmd(log *logrus.Logger) *cobra.Command {
	var o scenarioOpts
	cmd := &cobra.Command{
		Use:   "run [scenario.yaml]",
		Short: "Run a scenario (the built-in default without a file)",
		Long: `Run simulates a scenario: a cluster of nodes (CPU cores, memory, an IOMMU with
the Active Access extensions, an RDMA NIC on PCIe) joined by Ethernet, running
a workload under each scheme it names. It prints a table and writes into the
output directory, for the first experiment (the first scheme at the first
collision ratio):
  run.vcd       waveforms of the selected signals in the selected window
  run.gtkw      a GTKWave save file that opens run.vcd on the window, grouped
                by block, with run.*.txt naming enumerated values
  run.pcapng    every RoCEv2 frame on its wire's interface (named after the
                wire), with picosecond times and its transaction IDs as
                comments
  stats.json    statistics, configuration, seed, version, host speed, and
                the results of every experiment

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
			return runScenario(cmd.OutOrStdout(), log, file, o)
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
	f.BoolVar(&o.noHost, "no-host-stats", false, "leave the host's speed out of stats.json (byte-identical reruns)")
	f.BoolVar(&o.txnLog, "txn-log", false, "write txns.jsonl: every transaction of the first experiment and its cause")
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

func runScenario(stdout io.Writer, log *logrus.Logger, file string, o scenarioOpts) error {
	sc, err := loadScenario(file)
	if err != nil {
		return err
	}
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
		return fmt.Errorf("--until: %w", err)
	}
	if key, err := sc.Validate(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var results []workload.DHTResult
	var others []scenario.WorkloadResult // the other workloads'
	var first *sim.Engine
	var traced *tracedOutputs
	start := time.Now()
	for i, x := range sc.Experiments() {
		e := sim.NewEngine(sc.Seed)
		if i == 0 && o.txnLog {
			e.EnableTxnLog()
		}
		c, finish, err := sc.Prepare(e, x)
		if err != nil {
			return err
		}
		if i == 0 {
			if traced, err = attachOutputs(e, c, sc, o); err != nil {
				return err
			}
			first = e
		}
		log.WithFields(logrus.Fields{"scheme": x.Scheme, "collisions": x.Collisions}).Info("running")
		end := c.Run(until, c.AppsDone)
		out, err := finish(end)
		if err != nil {
			return err
		}
		if sc.Workload.Kind == scenario.KindDHT {
			results = append(results, out.DHT)
		} else {
			others = append(others, out.Workload)
		}
		if i == 0 {
			if err := traced.close(uint64(end)); err != nil {
				return err
			}
		}
	}
	wall := time.Since(start)
	statsPath := filepath.Join(o.out, "stats.json")
	if err := writeFile(statsPath, func(w io.Writer) error {
		info := sim.RunInfo{Version: version.Version, Config: sc, Wall: wall, Host: !o.noHost, Results: results}
		if sc.Workload.Kind != scenario.KindDHT {
			info.Results = others
		}
		return first.WriteStatsJSON(w, info)
	}); err != nil {
		return err
	}
	if o.txnLog {
		if err := writeTxnLog(filepath.Join(o.out, "txns.jsonl"), first); err != nil {
			return err
		}
	}
	if sc.Workload.Kind == scenario.KindDHT {
		printResults(stdout, sc, results, wall)
	} else {
		printWorkloadResults(stdout, sc, others, wall)
	}
	fmt.Fprintf(stdout, "\noutputs in %s/:", o.out)
	if traced.vcd != nil {
		fmt.Fprintf(stdout, " run.vcd (%d signals, %d changes), run.gtkw,", len(traced.vcd.Signals()), traced.vcd.Changes())
	}
	if traced.pcap != nil {
		fmt.Fprintf(stdout, " run.pcapng (%d frames),", traced.frames)
	}
	fmt.Fprintf(stdout, " stats.json\n")
	if traced.vcd != nil {
		fmt.Fprintf(stdout, "view: gtkwave %s %s; wireshark %s\n", filepath.Join(o.out, "run.vcd"), filepath.Join(o.out, "run.gtkw"), filepath.Join(o.out, "run.pcapng"))
	}
	return nil
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

// tracedOutputs are the files the first experiment writes.
type tracedOutputs struct {
	dir     string
	vcdFile *os.File
	vcd     *waveforms.Writer
	pcapF   *os.File
	pcap    *roce.Capture
	frames  int
	opcode  []int // per wire: the VCD id of its bth_opcode, -1 when not dumped
	err     error
}

func attachOutputs(e *sim.Engine, c *aa.System, sc scenario.Scenario, o scenarioOpts) (*tracedOutputs, error) {
	t := &tracedOutputs{dir: o.out}
	if sc.Outputs.Pcap {
		f, err := os.Create(filepath.Join(o.out, "run.pcapng"))
		if err != nil {
			return t, err
		}
		names := make([]string, len(c.Wires))
		for i, w := range c.Wires {
			names[i] = wireName(w)
		}
		cp, err := roce.NewCapture(f, names)
		if err != nil {
			return t, err
		}
		t.pcapF, t.pcap = f, cp
	}
	if sc.Outputs.VCD {
		filter, err := waveforms.NewFilter(sc.Outputs.Trace, o.traceExclude, false)
		if err != nil {
			return t, fmt.Errorf("outputs.trace: %w", err)
		}
		from, _ := sim.ParseTick(sc.Outputs.TraceFrom)
		var to sim.Tick
		if sc.Outputs.TraceTo != "" {
			to, _ = sim.ParseTick(sc.Outputs.TraceTo)
		}
		if to != 0 && to < from {
			return t, fmt.Errorf("outputs.trace_to %v lies before trace_from %v", to, from)
		}
		f, err := os.Create(filepath.Join(o.out, "run.vcd"))
		if err != nil {
			return t, err
		}
		x := sc.Experiments()[0]
		t.vcdFile = f
		t.vcd = waveforms.NewWriter(f, waveforms.Options{Filter: filter, From: uint64(from), To: uint64(to),
			Version: "aaemu " + version.Version, Comment: fmt.Sprintf("DHT %s at %.0f%% collisions, seed %d", x.Scheme, 100*x.Collisions, sc.Seed)})
		t.declareOpcodes(c.Wires)
		e.AttachTracer(t.vcd)
	}
	for i, w := range c.Wires {
		w.SetTap(t.tap(i))
	}
	return t, nil
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
			comment := fmt.Sprintf("txn=%d cause=%d", fr.ID, fr.Cause)
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

// close finishes the files; frames written after close (none: the run is
// over) would be lost.
func (t *tracedOutputs) close(end uint64) error {
	if t.pcap != nil {
		if err := t.pcap.Flush(); err != nil {
			return err
		}
		if err := t.pcapF.Close(); err != nil {
			return err
		}
		if t.err != nil {
			return fmt.Errorf("run.pcapng: %w", t.err)
		}
	}
	if t.vcd != nil {
		if err := t.vcd.Close(end); err != nil {
			return fmt.Errorf("run.vcd: %w", err)
		}
		if err := t.vcdFile.Close(); err != nil {
			return err
		}
		if err := writeGTKW(filepath.Join(t.dir, "run.gtkw"), "run.vcd", t.vcd); err != nil {
			return err
		}
	}
	return nil
}
