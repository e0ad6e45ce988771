// Package pcie will hold PCIe Transaction Layer Packets with exact encoding,
// segmentation at Max Payload Size and Max Read Request Size, links with
// credit-based flow control, ordering rules and MSI. Nothing is implemented
// here yet.
package pcie
