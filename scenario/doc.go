// Package scenario is the one place scenarios are parsed and validated:
// the YAML file of `aaemu run` (machine, workload, outputs), its keys'
// ranges with file:line errors, and the experiments it expands into, each
// built as a machine, a system and a workload.
package scenario
