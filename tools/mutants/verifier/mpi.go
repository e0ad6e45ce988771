//go:build mpiverify

package main

import "github.com/aaemu/aaemu/internal/verifycmd/mpicmd"

func init() { subcommands = append(subcommands, mpicmd.New) }
