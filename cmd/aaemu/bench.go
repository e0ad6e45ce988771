package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/anchor"
)

func newBenchCmd() *cobra.Command {
	bench := &cobra.Command{Use: "bench", Short: "Performance workloads"}
	var form string
	anc := &cobra.Command{
		Use:   "anchor [N] [D]",
		Short: "The anchor workload of the peer models, on aaemu's blocks",
		Long: `Anchor runs the workload of the peer models in ../shared/anchors (SystemC
TLM-2.0 LT and plain Go): a DMA engine writing N × 64 B (default 10,000,000)
through an IOMMU with a 64-entry 4-way LRU IOTLB and a 4-level page walk into
a 16 MiB memory; D consecutive writes per page (default 1: every write misses).

  --form tl     aaemu's IOMMU translation path called per TLP, no kernel
                scheduling, the peers' latencies added: must agree exactly with
                the peers' hits, misses, simulated time and checksum
  --form cycle  DMA engine → PCIe Gen3 x8 link → IOMMU → memory controller on
                the kernel: the same hits, misses and checksum; its simulated
                time is the pipeline's, not the sum of blocking latencies

It prints the peers' format.`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, d := uint64(10_000_000), uint64(1)
			var err error
			if len(args) > 0 {
				if n, err = strconv.ParseUint(args[0], 10, 64); err != nil || n == 0 {
					return fmt.Errorf("N %q: want a positive number", args[0])
				}
			}
			if len(args) > 1 {
				if d, err = strconv.ParseUint(args[1], 10, 64); err != nil || d == 0 {
					return fmt.Errorf("D %q: want a positive number", args[1])
				}
			}
			out := cmd.OutOrStdout()
			if form == "tl" || form == "both" {
				r, err := anchor.TransactionLevel(n, d)
				if err != nil {
					return err
				}
				r.Print(out)
			}
			if form == "cycle" || form == "both" {
				r, err := anchor.CycleLevel(n, d)
				if err != nil {
					return err
				}
				r.Print(out)
			}
			if form != "tl" && form != "cycle" && form != "both" {
				return fmt.Errorf("--form %q: want tl, cycle or both", form)
			}
			return nil
		},
	}
	anc.Flags().StringVar(&form, "form", "both", "tl, cycle or both")
	bench.AddCommand(anc)
	return bench
}
