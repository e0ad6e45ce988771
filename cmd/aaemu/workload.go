package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/sim"
)

type workloadOpts struct {
	nodes, procs, size, ops int
	outstanding             int
	op                      string
	rateMbps                uint64
	schemes                 string
	seed                    uint64
	jsonOut                 string
}

// workloadRow is one scheme's run of a workload, whatever the workload.
type workloadRow struct {
	Scheme    string  `json:"scheme"`
	Rate      float64 `json:"rate"`
	Unit      string  `json:"unit"`
	SimTimePS uint64  `json:"sim_time_ps"`
	Detail    string  `json:"detail"`
	Verified  bool    `json:"verified"`
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
			return runWorkload(cmd.OutOrStdout(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 3, "nodes (2..256)")
	f.IntVar(&o.procs, "procs", 2, "processes per node (also the cores per node)")
	f.IntVar(&o.size, "size", 0, "elements, words or pages (0: the workload's default)")
	f.IntVar(&o.ops, "ops", 0, "accesses, gets or puts per process or epoch (0: the default)")
	f.Uint64Var(&o.rateMbps, "rate-mbps", 10000, "link rate")
	f.StringVar(&o.schemes, "schemes", "", "comma-separated schemes (default: all the workload has)")
	f.Uint64Var(&o.seed, "seed", 1, "root seed")
	f.StringVar(&o.jsonOut, "json", "", "also write the rows as JSON to this file")
	f.IntVar(&o.outstanding, "outstanding", 1, "stream: work requests in flight (1 .. 256)")
	f.StringVar(&o.op, "op", "write", "stream: write (RDMA WRITE) or send (SEND/receive)")
	return cmd
}

func runWorkload(stdout io.Writer, kind string, o workloadOpts) error {
	defaults := map[string]struct {
		schemes   []aa.Scheme
		size, ops int
	}{
		"counter":    {[]aa.Scheme{aa.NoCnt, aa.AAPoll, aa.RMA, aa.AKV, aa.Allreduce}, 4096, 100},
		"getlog":     {[]aa.Scheme{aa.NoFT, aa.AAPoll, aa.RMA}, 64, 50},
		"checkpoint": {[]aa.Scheme{aa.AAPoll}, 64, 20},
		"xor":        {[]aa.Scheme{aa.AASP, aa.RMA}, 512, 0},
		"stream":     {[]aa.Scheme{aa.IOMMUNone, aa.IOMMUExtended}, 4096, 128},
		"sort":       {[]aa.Scheme{aa.NoFT, aa.AAPoll, aa.AM, aa.RMA}, 4096, 0},
	}
	d, ok := defaults[kind]
	if !ok {
		return fmt.Errorf("workload %q: want counter, getlog, checkpoint, xor, stream or sort", kind)
	}
	if o.size == 0 {
		o.size = d.size
	}
	if o.ops == 0 {
		o.ops = d.ops
	}
	schemes := d.schemes
	if o.schemes != "" {
		schemes = nil
		for _, name := range strings.Split(o.schemes, ",") {
			s := aa.Scheme(strings.TrimSpace(name))
			if !slices.Contains(d.schemes, s) {
				return fmt.Errorf("workload %s: scheme %q (want one of %v)", kind, s, d.schemes)
			}
			schemes = append(schemes, s)
		}
	}
	var rows []workloadRow
	for _, s := range schemes {
		spec := aa.DefaultSpec()
		spec.Nodes, spec.Cores, spec.Wire.RateMbps = o.nodes, max(o.procs, 1), o.rateMbps
		spec.IOMMU.Bypass = s == aa.IOMMUNone
		c, err := aa.New(sim.NewEngine(o.seed), spec)
		if err != nil {
			return err
		}
		var result func() workloadRow
		switch kind {
		case "counter":
			k, err := aa.SetupCounter(c, aa.CounterConfig{Scheme: s, Elements: o.size, Accesses: o.ops, Procs: o.procs, Seed: o.seed})
			if err != nil {
				return err
			}
			result = func() workloadRow {
				r := k.Result()
				return workloadRow{string(s), r.AccessesPerSec, "accesses/s", r.SimTimePS, fmt.Sprintf("%d accesses %s", r.Accesses, r.Problem), r.Verified}
			}
		case "getlog":
			g, err := aa.SetupGetLog(c, aa.GetLogConfig{Scheme: s, Gets: o.ops, Procs: o.procs, Words: o.size, Seed: o.seed})
			if err != nil {
				return err
			}
			result = func() workloadRow {
				r := g.Result()
				return workloadRow{string(s), r.GetsPerSec, "gets/s", r.SimTimePS, fmt.Sprintf("%d gets, %.0f wire bytes per get %s", r.Gets, r.WireBytes, r.Problem), r.Verified}
			}
		case "checkpoint":
			k, err := aa.SetupCheckpoint(c, aa.CheckpointConfig{Pages: o.size, Epochs: 3, Puts: o.ops, Seed: o.seed})
			if err != nil {
				return err
			}
			result = func() workloadRow {
				r := k.Result()
				return workloadRow{"AA (W=1 WL=1 WLD=0)", float64(r.Records) / (float64(max(r.SimTimePS, 1)) / 1e12), "puts/s", r.SimTimePS,
					fmt.Sprintf("pages copied per checkpoint %v of %d %s", r.PagesCopied, o.size, strings.Join(r.Problems, "; ")), r.Verified}
			}
		case "sort":
			st, err := aa.SetupSort(c, aa.SortConfig{Scheme: s, Keys: o.size, Procs: o.procs, Seed: o.seed})
			if err != nil {
				return err
			}
			result = func() workloadRow {
				r := st.Result()
				return workloadRow{string(s), float64(r.RemoteBytes) / (float64(max(r.CommTimePS, 1)) / 1e12), "B/s", r.CommTimePS,
					fmt.Sprintf("%d keys, %d bytes got from other nodes, %d on the wire (per NIC %v), %d logged %s",
						r.Keys, r.RemoteBytes, r.WireBytes, r.SentBytes, r.LogBytes, r.Problem), r.Verified}
			}
		case "xor":
			x, err := aa.SetupXORCheckpoint(c, aa.XORConfig{Scheme: s, Words: o.size, Seed: o.seed})
			if err != nil {
				return err
			}
			result = func() workloadRow {
				r := x.Result()
				return workloadRow{string(s), float64(r.Processes*r.Words) / (float64(max(r.SimTimePS, 1)) / 1e12), "words/s", r.SimTimePS,
					fmt.Sprintf("%d TLPs at the checksum's node, %d remote ops %s", r.TargetTLPs, r.RemoteOps, r.Problem), r.Verified}
			}
		case "stream":
			op, err := aa.ParseStreamOp(o.op)
			if err != nil {
				return err
			}
			st, err := aa.SetupStream(c, aa.StreamConfig{Op: op, MsgBytes: o.size, Messages: o.ops, Outstanding: o.outstanding, Seed: o.seed})
			if err != nil {
				return err
			}
			result = func() workloadRow {
				r := st.Result()
				return workloadRow{string(s), r.BytesPerSec, "B/s", r.SimTimePS,
					fmt.Sprintf("%d %ss of %d B, %d in flight, first to last arrival %s, target FNV-1a %#x %s", r.Messages, r.Op, r.MsgBytes,
						r.Outstanding, sim.Tick(r.LastPS-r.FirstPS).Human(), r.Checksum, r.Problem), r.Verified}
			}
		}
		c.Run(10*sim.S, c.AppsDone)
		if !c.AppsDone() {
			return fmt.Errorf("workload %s, %s: did not finish in 10 s simulated", kind, s)
		}
		row := result()
		if !row.Verified {
			return fmt.Errorf("workload %s, %s: the result is wrong: %s", kind, s, row.Detail)
		}
		rows = append(rows, row)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scheme\trate\tsim time\tdetail\t\n")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.4g %s\t%s\t%s\t\n", r.Scheme, r.Rate, r.Unit, sim.Tick(r.SimTimePS).Human(), strings.TrimSpace(r.Detail))
	}
	tw.Flush()
	if o.jsonOut != "" {
		return writeFile(o.jsonOut, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		})
	}
	return nil
}
