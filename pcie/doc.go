// Package pcie models the PCIe transaction and link layers on the kernel:
// segmentation of DMA writes and reads into TLPs (Max Payload Size, Max Read
// Request Size, 4 KB boundaries), completions split at the Read Completion
// Boundary and their reassembly by tag, links of generation 1 to 5 and width
// x1 to x16 with their line encoding and per-TLP overhead, credit-based flow
// control per class (posted, non-posted, completion × header, data), the
// ordering rules between the classes (order.go: channels with a lane per
// class, the order a receiver takes them in, an outbox that sends them),
// and MSI. The TLP format itself is the leaf package
// pcie/tlp.
package pcie
