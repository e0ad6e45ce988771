package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/aaemu/aaemu/msg/am2"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload/micro"
)

// microOpts are the flags every microbenchmark takes.
type microOpts struct {
	paths    []string
	layer    string
	scenario string
	out      string
	iters    int
	vary     string      // KEY=V1,V2,…: the benchmark at each value of a scenario key
	poll     string      // am2: the protocols and polling policy
	pathSet  func() bool // whether --path was given
}

// microRun is one measurement: a path on a machine, and what the --vary
// key is set to ("" without --vary).
type microRun struct {
	cfg   micro.Config
	value string
}

func (o *microOpts) flags(cmd *cobra.Command, name string) {
	cmd.Flags().StringSliceVar(&o.paths, "path", []string{"shm", "rdma"}, "where the two ranks are: shm (two cores of a node, the shared-memory transport), rdma (two nodes: the RDMA NICs; with --layer am2 AM-II's network protocol on Myrinet-class NIUs)")
	o.pathSet = func() bool { return cmd.Flags().Changed("path") }
	cmd.Flags().StringVar(&o.layer, "layer", "mpi", "the message layer measured: mpi (the MPI core, msg/mpi) or am2 (Active Messages II, msg/am2)")
	cmd.Flags().StringVar(&o.poll, "poll", "adaptive", "--layer am2: the protocols and when a poll polls the network: adaptive (both protocols, 1/8..1/32 from the last 32 network polls), 1/k (both, every k-th poll), shm-only or net-only (one protocol)")
	cmd.Flags().StringVar(&o.scenario, "machine", "", "a scenario file whose machine to run on (e.g. examples/machines/e5000.yaml; default: the built-in scenario's)")
	what := name + ".csv"
	if name == "pingpong" {
		what += " and its plots"
	}
	cmd.Flags().StringVar(&o.out, "out", "out/micro", "directory for "+what)
	cmd.Flags().IntVar(&o.iters, "iters", 4, "round trips (bursts) a measurement averages after one to warm up")
	cmd.Flags().StringVar(&o.vary, "vary", "", "KEY=V1,V2,…: run at each value of a scenario key, set as a sweep sets it (e.g. machine.wire.rate_mbps=1000,10000)")
}

// runs are the microbenchmark's measurements: every value of the --vary
// key (one run without it), every path.
func (o *microOpts) runs() ([]microRun, string, error) {
	sc, err := loadScenario(o.scenario)
	if err != nil {
		return nil, "", err
	}
	if key, err := sc.Validate(); err != nil {
		return nil, "", fmt.Errorf("%s: %w", key, err)
	}
	if o.iters < 1 || o.iters > 1000 {
		return nil, "", fmt.Errorf("--iters %d: want 1..1000", o.iters)
	}
	layer, err := micro.ParseLayer(o.layer)
	if err != nil {
		return nil, "", fmt.Errorf("--layer: %w", err)
	}
	poll, err := am2.ParsePolicy(o.poll)
	if err != nil {
		return nil, "", fmt.Errorf("--poll: %w", err)
	}
	if o.poll != "adaptive" && layer != micro.AM2 {
		return nil, "", fmt.Errorf("--poll %s: a polling policy of --layer am2 only", o.poll)
	}
	names := o.paths
	if layer == micro.AM2 && (o.pathSet == nil || !o.pathSet()) {
		switch poll.Protocols {
		case am2.ShmOnly:
			names = []string{string(micro.IntraNode)}
		case am2.NetOnly:
			names = []string{string(micro.InterNode)}
		}
	}
	var paths []micro.Path
	for _, p := range names {
		path, err := micro.ParsePath(p)
		if err != nil {
			return nil, "", fmt.Errorf("--path: %w", err)
		}
		if layer == micro.AM2 && path == micro.InterNode && poll.Protocols == am2.ShmOnly {
			return nil, "", fmt.Errorf("--layer am2 --path rdma --poll shm-only: a shared-memory-only system does not reach another node")
		}
		if layer == micro.AM2 && path == micro.IntraNode && poll.Protocols == am2.NetOnly {
			return nil, "", fmt.Errorf("--layer am2 --path shm --poll net-only: a network-only system does not reach a node's own endpoints")
		}
		paths = append(paths, path)
	}
	scs, values := []scenario.Scenario{sc}, []string{""}
	if o.vary != "" {
		key, list, ok := strings.Cut(o.vary, "=")
		if !ok || key == "" || list == "" {
			return nil, "", fmt.Errorf("--vary %q: want KEY=V1,V2,… (a scenario key and its values)", o.vary)
		}
		if e := scenario.KeyProblem(key); e != nil {
			return nil, "", fmt.Errorf("--vary: %w", e)
		}
		scs, values = nil, nil
		for i, v := range strings.Split(list, ",") {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(v), &n); err != nil || len(n.Content) != 1 {
				return nil, "", fmt.Errorf("--vary %s: value %q is not a YAML value", key, v)
			}
			x := sc.Clone()
			if err := x.Set("--vary", fmt.Sprintf("%s[%d]", key, i), key, n.Content[0]); err != nil {
				return nil, "", err
			}
			if k, err := x.Validate(); err != nil {
				return nil, "", fmt.Errorf("--vary %s=%s: %s: %w", key, v, k, err)
			}
			scs, values = append(scs, x), append(values, key+"="+strings.TrimSpace(v))
		}
	}
	var out []microRun
	for i, x := range scs {
		for _, p := range paths {
			out = append(out, microRun{cfg: micro.Config{Machine: x.ClusterSpec(), Layer: layer, Path: p, Seed: x.Seed, Iters: o.iters, AM2Poll: poll}, value: values[i]})
		}
	}
	head := machineName(o.scenario, sc.ClusterSpec()) + "; layer " + layerName(layer)
	if layer == micro.AM2 {
		head += ", polling " + poll.String()
		if slices.Contains(paths, micro.InterNode) {
			ns, ls := am2.Myrinet(), am2.MyrinetLine()
			head += fmt.Sprintf("; between nodes a Myrinet-class NIU each (%d MB/s line, %d MB/s I/O bus)", ls.RateMbps/8, ns.DMAMBps)
		}
	}
	return out, head, nil
}

// name is the run's series name: the path, and the varied key's value.
func (r microRun) name() string {
	if r.value == "" {
		return string(r.cfg.Path)
	}
	return string(r.cfg.Path) + ", " + r.value
}

// layerName is a layer's name with what it is.
func layerName(l micro.Layer) string {
	if l == micro.AM2 {
		return "am2 (Active Messages II)"
	}
	return l.Name() + " (the MPI core)"
}

func machineName(file string, s machine.Spec) string {
	name := "the built-in machine"
	if file != "" {
		name = filepath.Base(file)
	}
	return fmt.Sprintf("%s: %d MHz cores, %d Mb/s wire, PCIe Gen%d x%d", name, 1_000_000/max(uint64(s.CPU.PeriodPS), 1), s.Wire.RateMbps, s.PCIe.Gen, s.PCIe.Width)
}

func newMicroCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "micro",
		Short: "Message-layer microbenchmarks: ping-pong and LogGP",
		Long: `Micro runs the microbenchmarks the message-layer papers measured their
layers with, over the MPI core (msg/mpi; --layer mpi, the default) or
Active Messages II (msg/am2; --layer am2), between two parties on two cores
of one node (--path shm: the shared-memory transport, or AM-II's queue
block) or on two nodes (--path rdma: the RDMA NICs, or AM-II's network
protocol on a Myrinet-class NIU per node; --poll picks AM-II's protocols
and polling policy), on
the built-in machine or a scenario's (--machine).
Every figure is a simulated time the ranks measured, not a formula.`,
	}
	cmd.AddCommand(newPingPongCmd(), newLogGPCmd())
	return cmd
}

func newPingPongCmd() *cobra.Command {
	var o microOpts
	var minB, maxB int
	cmd := &cobra.Command{
		Use:   "pingpong",
		Short: "Latency and bandwidth over message size, with the half-power point",
		Long: `Pingpong sends a message of each size (powers of two from --min to --max)
from rank 0 to rank 1 and back, and reports the round trip, the one-way time
(half of it) and the bandwidth of a one-way transfer; then the peak bandwidth
and the half-power point n½, the size at which the bandwidth first reaches
half the peak. It writes OUT/pingpong.csv and the latency and bandwidth
plots.`,
		Example: `  aaemu micro pingpong --max 1048576
  aaemu micro pingpong --path shm --machine examples/machines/e5000.yaml
  aaemu micro pingpong --layer am2 --path shm --machine examples/machines/e5000.yaml --max 65536`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPingPong(cmd.OutOrStdout(), o, minB, maxB)
		},
	}
	o.flags(cmd, "pingpong")
	cmd.Flags().IntVar(&minB, "min", 1, "smallest message, bytes (0 adds a zero-byte message)")
	cmd.Flags().IntVar(&maxB, "max", 16<<20, "largest message, bytes")
	return cmd
}

// sizes are 0 (when min is 0), then the powers of two from min to max.
func sizes(minB, maxB int) ([]int, error) {
	if minB < 0 || maxB < max(minB, 1) || maxB > 64<<20 {
		return nil, fmt.Errorf("--min %d --max %d: want 0 ≤ min ≤ max, 1 ≤ max ≤ 64 MiB", minB, maxB)
	}
	var out []int
	if minB == 0 {
		out = append(out, 0)
		minB = 1
	}
	for s := 1; s <= maxB; s *= 2 {
		if s >= minB {
			out = append(out, s)
		}
	}
	return out, nil
}

func runPingPong(stdout io.Writer, o microOpts, minB, maxB int) error {
	runs, what, err := o.runs()
	if err != nil {
		return err
	}
	sz, err := sizes(minB, maxB)
	if err != nil {
		return err
	}
	plots := []string{"pingpong-latency.png", "pingpong-latency.svg", "pingpong-bandwidth.png", "pingpong-bandwidth.svg"}
	if err := clearOutputs(o.out, append([]string{"pingpong.csv"}, plots...)); err != nil {
		return err
	}
	outs, err := createOutputs(o.out, "pingpong.csv")
	if err != nil {
		return err
	}
	defer outs.abandon()
	fmt.Fprintf(stdout, "ping-pong on %s\n\n", what)
	var lat, bw []sweep.Series
	var rows [][]string
	for _, r := range runs {
		c := r.cfg
		pts, err := micro.PingPong(c, sz)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name(), err)
		}
		if r.value != "" {
			fmt.Fprintf(stdout, "%s\n", r.value)
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "path\tbytes\tround trip\tone way\tMB/s\t\n")
		l, b := sweep.Series{Name: r.name()}, sweep.Series{Name: r.name()}
		for _, p := range pts {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2f\t\n", c.Path, p.Bytes, p.RoundTrip.Human(), p.OneWay.Human(), p.MBps)
			rows = append(rows, []string{string(c.Path), r.value, strconv.Itoa(p.Bytes), strconv.FormatUint(uint64(p.RoundTrip), 10), strconv.FormatUint(uint64(p.OneWay), 10), strconv.FormatFloat(p.MBps, 'g', 8, 64), c.Layer.Name()})
			if p.Bytes > 0 {
				l.X, l.Y = append(l.X, float64(p.Bytes)), append(l.Y, float64(p.OneWay)/1e6)
				b.X, b.Y = append(b.X, float64(p.Bytes)), append(b.Y, p.MBps)
			}
		}
		tw.Flush()
		n, peak := micro.HalfPower(pts)
		if math.IsNaN(n) {
			fmt.Fprintf(stdout, "%s: peak %.2f MB/s; no size reached half of it\n\n", c.Path, peak)
		} else {
			fmt.Fprintf(stdout, "%s: peak %.2f MB/s, half-power point n½ = %.0f bytes\n\n", c.Path, peak, n)
		}
		lat, bw = append(lat, l), append(bw, b)
	}
	if err := outs.write("pingpong.csv", func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write([]string{"path", "vary", "bytes", "round_trip_ps", "one_way_ps", "mb_per_s", "layer"})
		cw.WriteAll(rows)
		return cw.Error()
	}); err != nil {
		return err
	}
	var written []string
	for _, f := range []struct {
		name   string
		series []sweep.Series
		ax     sweep.Axes
	}{
		{"pingpong-latency", lat, sweep.Axes{Title: "Ping-pong: one-way time", XLabel: "message size", XUnit: "B", YLabel: "one-way time", YUnit: "µs", LogX: true, LogY: true}},
		{"pingpong-bandwidth", bw, sweep.Axes{Title: "Ping-pong: bandwidth", XLabel: "message size", XUnit: "B", YLabel: "bandwidth", YUnit: "MB/s", LogX: true}},
	} {
		p, leg, err := sweep.Draw(f.series, f.ax)
		if err != nil {
			return err
		}
		fs, err := sweep.SaveFigure(p, leg, filepath.Join(o.out, f.name))
		if err != nil {
			return err
		}
		written = append(written, fs...)
	}
	fmt.Fprintf(stdout, "outputs in %s/: pingpong.csv, %s\n", o.out, strings.Join(baseNames(written), ", "))
	return nil
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

func newLogGPCmd() *cobra.Command {
	var o microOpts
	cmd := &cobra.Command{
		Use:   "loggp",
		Short: "The LogGP parameters, measured as Culler et al. measure LogP",
		Long: `LogGP measures, per path: the round trip RTT of a small message; the send
overhead o_s (rank 0's time in a send, messages spaced far apart) and the
receive overhead o_r (rank 1's time in a receive of a message already
there); the gap g between small messages sent back to back (the
difference of two bursts, acknowledged by one reply, over the difference
of their lengths); G, the same per byte for two long sizes; and the
latency L = RTT/2 − o_s − o_r. It writes OUT/loggp.csv.`,
		Example: `  aaemu micro loggp
  aaemu micro loggp --machine examples/machines/e5000.yaml
  aaemu micro loggp --layer am2 --path shm --machine examples/machines/e5000.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogGP(cmd.OutOrStdout(), o)
		},
	}
	o.flags(cmd, "loggp")
	return cmd
}

func runLogGP(stdout io.Writer, o microOpts) error {
	runs, what, err := o.runs()
	if err != nil {
		return err
	}
	if err := clearOutputs(o.out, []string{"loggp.csv"}); err != nil {
		return err
	}
	outs, err := createOutputs(o.out, "loggp.csv")
	if err != nil {
		return err
	}
	defer outs.abandon()
	fmt.Fprintf(stdout, "LogGP on %s\n\n", what)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "path\tRTT\tL\to_s\to_r\tg\tG (ps/B)\t1/G (MB/s)\t\n")
	rows := [][]string{{"path", "vary", "rtt_ps", "l_ps", "os_ps", "or_ps", "g_ps", "G_ps_per_byte", "small_bytes", "long_bytes", "layer"}}
	for _, r := range runs {
		c := r.cfg
		l, err := micro.MeasureLogGP(c)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name(), err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.2f\t\n", r.name(), l.RTT.Human(), signed(l.L), l.Os.Human(), l.Or.Human(), l.Gap.Human(), l.G, l.GMBps())
		rows = append(rows, []string{string(c.Path), r.value, u(l.RTT), strconv.FormatInt(l.L, 10), u(l.Os), u(l.Or), u(l.Gap), strconv.FormatFloat(l.G, 'g', 8, 64),
			strconv.Itoa(l.Small), fmt.Sprintf("%d-%d", l.Long1, l.Long2), c.Layer.Name()})
	}
	tw.Flush()
	if err := outs.write("loggp.csv", func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.WriteAll(rows)
		return cw.Error()
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\noutputs in %s/: loggp.csv\n", o.out)
	return nil
}

func u(t sim.Tick) string { return strconv.FormatUint(uint64(t), 10) }

// signed is a signed time in ps, in the units Tick.Human uses.
func signed(ps int64) string {
	if ps < 0 {
		return "-" + sim.Tick(-ps).Human()
	}
	return sim.Tick(ps).Human()
}
