package main

import (
	"github.com/spf13/cobra"

	"github.com/aaemu/aaemu/internal/verifycmd"
	"github.com/aaemu/aaemu/internal/verifycmd/mpicmd"
)

// newVerifyCmd is the verify command with its mpi subcommand.
func newVerifyCmd() *cobra.Command {
	cmd := verifycmd.New()
	cmd.AddCommand(mpicmd.New())
	return cmd
}
