// Package startx models the StarT-X network interface unit (NIU) of seed
// 001 (MPI-StarT, Husbands and Hoe) as a PCIe endpoint beside the RDMA NIC,
// and the Arctic network between them: a line, and routers.
//
// PIO mode is a CM-5-like FIFO interface: the CPU writes a message — two
// 32-bit header words and 2 to 22 payload words — with uncached stores into
// a transmit FIFO in the NIU's BAR, and reads arrived messages with
// uncached loads from a receive FIFO. There are two pairs of queues, high
// and low priority; the Arctic link gives high-priority packets the line
// first and keeps a credit count per priority, so high traffic may hold low
// back but a full low queue never holds high. Messages may be written and
// read eight bytes at a time or as 64-byte block stores and loads (the
// UltraSPARC's stda/ldda), each one TLP.
//
// RDMA mode moves blocks between pinned host buffers without the CPU: the
// sender's NIU reads its buffer by DMA, one 64-byte packet at a time, and
// the receiver's NIU, armed for that sender and window, writes the packets
// into its host's memory and reports the bytes that arrived.
//
// The files: packet.go (the message format), spec.go (parameters and the
// BAR layout), niu.go (the NIU's PIO datapath and host interface), rdma.go
// (its RDMA engine), line.go (the Arctic link), router.go (the Arctic
// router and the lines into and out of it).
package startx
