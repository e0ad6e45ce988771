// Command verifier is aaemu's verify command (with verify mpi) linked
// alone, for the mutation test: a mutant's build compiles only the
// packages the verifier runs, not the rest of aaemu. It runs the same code
// as `aaemu verify`.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/verifycmd"
	"github.com/aaemu/aaemu/internal/verifycmd/mpicmd"
)

func main() {
	v := verifycmd.New()
	v.AddCommand(mpicmd.New())
	root := &cobra.Command{Use: "aaemu", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(v)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "aaemu:", err)
		os.Exit(1)
	}
}
