// Package scratchpad will hold the per-CPU scratchpad wired to the IOMMU,
// which mirrors access-log tails for the polling hyperthread. Nothing is
// implemented here yet.
package scratchpad
