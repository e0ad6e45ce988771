package main

import (
	"bytes"
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
	"go.yaml.in/yaml/v3"

	"github.com/aaemu/aaemu/internal/demo"
	"github.com/aaemu/aaemu/internal/version"
	"github.com/aaemu/aaemu/internal/waveview"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/waveforms"
)

type runOpts struct {
	config       string
	seed         uint64
	out          string
	noVCD        bool
	trace        string
	traceExclude string
	traceFrom    string
	traceTo      string
	showHidden   bool
	until        string
	noHost       bool
	txnLog       bool
}

func newDemoCmd(log *logrus.Logger) *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the kernel's demonstration pipeline (no AA machine)",
		Long: `Demo runs a small pipeline of kernel blocks — a source, registered stages and a
sink with a random ready in a second clock domain — and writes into the output
directory:
  run.vcd      waveforms of every traced signal (IEEE 1364 VCD, 1 ps timescale)
  run.gtkw     a GTKWave save file that opens run.vcd on the window, grouped
               by block
  stats.json   statistics with units and descriptions, the configuration,
               the seed, the version and the host's speed
  txns.jsonl   with --txn-log: every transaction with the one that caused it

It shows the kernel's handshakes, registers and clock domains in a waveform
viewer. --config reads its parameters from a YAML file.`,
		Example: `  aaemu demo
  aaemu demo --seed 7 --trace 'demo.stage*' --trace-from 20ns --trace-to 400ns
  aaemu demo --config pipeline.yaml --out /tmp/run1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.OutOrStdout(), log, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "YAML file with the scenario's parameters")
	f.Uint64Var(&o.seed, "seed", 1, "root seed of every random choice in the run")
	f.StringVar(&o.out, "out", "out", "output directory")
	f.BoolVar(&o.noVCD, "no-vcd", false, "do not write waveforms")
	f.StringVar(&o.trace, "trace", "", "comma-separated signal patterns to dump (* within a level, ** across levels); empty: all")
	f.StringVar(&o.traceExclude, "trace-exclude", "", "comma-separated signal patterns to leave out")
	f.StringVar(&o.traceFrom, "trace-from", "0", "first simulated time written to the VCD (e.g. 200ns)")
	f.StringVar(&o.traceTo, "trace-to", "", "last simulated time written to the VCD (default: the end)")
	f.BoolVar(&o.showHidden, "trace-hidden", false, "also dump signals whose name starts with an underscore")
	f.StringVar(&o.until, "until", "1s", "stop the simulation at this simulated time")
	f.BoolVar(&o.noHost, "no-host-stats", false, "leave the host's speed out of stats.json (byte-identical reruns)")
	f.BoolVar(&o.txnLog, "txn-log", false, "write txns.jsonl: every transaction and its cause")
	return cmd
}

// loadConfig reads a scenario file strictly: unknown fields are errors with
// their line number.
func loadConfig(path string) (demo.Config, error) {
	cfg := demo.DefaultConfig()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	return parseConfig(path, data)
}

// parseConfig decodes a scenario's YAML over the defaults.
func parseConfig(name string, data []byte) (demo.Config, error) {
	cfg := demo.DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// One line per problem from the decoder; keep the error on one line.
			return cfg, fmt.Errorf("%s: %s", name, strings.Join(te.Errors, "; "))
		}
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

func runDemo(stdout io.Writer, log *logrus.Logger, o runOpts) error {
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	until, err := sim.ParseTick(o.until)
	if err != nil {
		return fmt.Errorf("--until: %w", err)
	}
	from, err := sim.ParseTick(o.traceFrom)
	if err != nil {
		return fmt.Errorf("--trace-from: %w", err)
	}
	var to sim.Tick
	if o.traceTo != "" {
		if to, err = sim.ParseTick(o.traceTo); err != nil {
			return fmt.Errorf("--trace-to: %w", err)
		}
		if to < from {
			return fmt.Errorf("--trace-to %v lies before --trace-from %v", to, from)
		}
	}
	filter, err := waveforms.NewFilter(o.trace, o.traceExclude, o.showHidden)
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	// Every output is created before the simulation; an earlier run's
	// files that this run does not write go.
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if err := clearOutputs(o.out, []string{"run.vcd", "run.gtkw", "stats.json", "txns.jsonl"}); err != nil {
		return err
	}
	names := []string{"stats.json"}
	if !o.noVCD {
		names = append(names, "run.vcd", "run.gtkw")
	}
	if o.txnLog {
		names = append(names, "txns.jsonl")
	}
	outs, err := createOutputs(o.out, names...)
	if err != nil {
		return err
	}
	defer outs.abandon()

	e := sim.NewEngine(o.seed)
	if o.txnLog {
		e.EnableTxnLog()
	}
	p, err := demo.Build(e, "demo", cfg)
	if err != nil {
		return err
	}
	log.WithFields(logrus.Fields{"seed": o.seed, "stages": cfg.Stages, "items": cfg.Items}).Info("elaborated the demonstration pipeline")

	var vw *waveforms.Writer
	var vcdFile *os.File
	vcdPath := filepath.Join(o.out, "run.vcd")
	if !o.noVCD {
		vcdFile = outs.take("run.vcd")
		defer vcdFile.Close()
		vw = waveforms.NewWriter(vcdFile, waveforms.Options{Filter: filter, From: uint64(from), To: uint64(to),
			Version: "aaemu " + version.Version, Comment: fmt.Sprintf("scenario demo-pipeline, seed %d", o.seed)})
		e.AttachTracer(vw)
		if len(vw.Signals()) == 0 {
			log.Warnf("--trace %q selects no signal", o.trace)
		}
	}

	start := time.Now()
	end := e.Run(until)
	wall := time.Since(start)
	checkErr := p.Check()

	if vw != nil {
		if err := vw.Close(uint64(end)); err != nil {
			return fmt.Errorf("%s: %w", vcdPath, err)
		}
		if err := vcdFile.Close(); err != nil {
			return err
		}
		if err := outs.write("run.gtkw", func(w io.Writer) error {
			return writeGTKWTo(w, outs.dir, "run.gtkw", "run.vcd", vw)
		}); err != nil {
			return err
		}
	}
	statsPath := filepath.Join(o.out, "stats.json")
	if err := outs.write("stats.json", func(w io.Writer) error {
		return e.WriteStatsJSON(w, sim.RunInfo{Version: version.Version, Config: struct {
			Scenario string      `json:"scenario"`
			Pipeline demo.Config `json:"pipeline"`
			Until    uint64      `json:"until_ps"`
		}{"demo-pipeline", cfg, uint64(until)}, Wall: wall, Host: !o.noHost})
	}); err != nil {
		return err
	}
	if o.txnLog {
		if err := outs.write("txns.jsonl", func(w io.Writer) error { return encodeTxnLog(w, e) }); err != nil {
			return err
		}
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "aaemu %s\tdemo pipeline, %d stages, seed %d\n", version.Version, cfg.Stages, o.seed)
	fmt.Fprintf(tw, "  items delivered\t%d of %d\n", len(p.Sink.Got()), cfg.Items)
	fmt.Fprintf(tw, "  simulated time\t%s\n", end.Human())
	fmt.Fprintf(tw, "  clock cycles\t%d (%d edges evaluated, idle edges skipped)\n", e.TotalCycles(), edges(e))
	fmt.Fprintf(tw, "  wall time\t%v (%.0f cycles/s)\n", wall.Round(time.Microsecond), float64(e.TotalCycles())/wall.Seconds())
	if vw != nil {
		fmt.Fprintf(tw, "  waveforms\t%s: %d signals, %d value changes\n", vcdPath, len(vw.Signals()), vw.Changes())
		fmt.Fprintf(tw, "  view with\tgtkwave %s %s\n", vcdPath, filepath.Join(o.out, "run.gtkw"))
	}
	fmt.Fprintf(tw, "  statistics\t%s\n", statsPath)
	tw.Flush()
	if checkErr != nil {
		return fmt.Errorf("the pipeline's result is wrong: %w", checkErr)
	}
	return nil
}

func edges(e *sim.Engine) uint64 {
	var n uint64
	for _, c := range e.Clocks() {
		n += c.EdgesEvaluated()
	}
	return n
}

// encodeTxnLog writes every recorded transaction as a JSON line.
func encodeTxnLog(w io.Writer, e *sim.Engine) error {
	enc := json.NewEncoder(w)
	for _, r := range e.TxnLog() {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// writeGTKWTo writes to w the save file saveName (in dir) of a closed VCD,
// which opens it on its window, and into dir the translate files of its
// enumerated signals.
func writeGTKWTo(w io.Writer, dir, saveName, vcd string, vw *waveforms.Writer) error {
	from, to := vw.Window()
	s := waveforms.SaveFile{DumpFile: vcd, SaveName: saveName, Signals: vw.Signals(), From: from, To: to, Enums: waveview.Enums()}
	if err := s.WriteTranslateFiles(dir); err != nil {
		return err
	}
	_, err := s.WriteTo(w)
	return err
}

// writeGTKW writes the save file of a closed VCD at path, which opens it on
// its window, and next to it the translate files of its enumerated signals.
func writeGTKW(path, vcd string, vw *waveforms.Writer) error {
	from, to := vw.Window()
	return waveforms.SaveFile{DumpFile: vcd, Signals: vw.Signals(), From: from, To: to, Enums: waveview.Enums()}.Write(path)
}
