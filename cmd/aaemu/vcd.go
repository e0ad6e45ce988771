package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/waveforms"
)

func newVCDCmd() *cobra.Command {
	vcd := &cobra.Command{Use: "vcd", Short: "Work with VCD waveform files"}
	vcd.AddCommand(&cobra.Command{
		Use:   "check FILE.vcd",
		Short: "Check a VCD file strictly against IEEE 1364-2005 clause 18",
		Long: `Check reads a VCD file strictly: undeclared identifiers, unbalanced scopes,
value characters other than 0 1 x z, vectors wider than declared, times that do
not increase and changes before $enddefinitions are errors with a line number.
GTKWave and most viewers accept such files silently.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			v, err := waveforms.Parse(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			n := 0
			for _, c := range v.Changes {
				n += len(c)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: timescale %s, %d variables, %d value changes, last time %d\n",
				args[0], v.Timescale, len(v.Vars), n, v.End)
			return nil
		},
	})
	return vcd
}
