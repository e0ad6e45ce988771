// Package iommu will hold the VT-d style IOMMU with the Active Access
// extensions: root and context tables and second-level page tables in
// simulated memory, the context cache and IOTLB (built on sim.Cache), fault
// recording, and the AA access-log table, tag buffer and flushing buffer
// (built on sim.CAM). See DESIGN.md §2. Nothing is implemented here yet.
package iommu
