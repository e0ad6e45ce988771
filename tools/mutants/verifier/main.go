// Command verifier is aaemu's verify command linked alone, for the
// mutation test: a mutant's build compiles only the packages the verifier
// runs, not the rest of aaemu. It runs the same code as `aaemu verify`;
// built with the tag mpiverify it has `verify mpi` too (the message
// layers' verifier, which the blocks' mutants need not compile).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/verifycmd"
)

// subcommands of verify the build adds (mpi.go).
var subcommands []func() *cobra.Command

func main() {
	v := verifycmd.New()
	for _, c := range subcommands {
		v.AddCommand(c())
	}
	root := &cobra.Command{Use: "aaemu", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(v)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "aaemu:", err)
		os.Exit(1)
	}
}
