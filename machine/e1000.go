package machine

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/nic"
)

// The driver of a NIC without RDMA offload (nic.Software), as Linux's
// e1000 driver runs on its core: the NIC's interrupt starts a poll (NAPI)
// that takes every received frame (its receive work: descriptor, buffer,
// protocol demultiplexing, RxCycles), does the atomics among them on the
// CPU (a locked read-modify-write: the software RMA; a put's and a get's
// data the e1000 moves by DMA, through the IOMMU), transmits what the protocol
// answers (TxCycles a frame) and ends with the interrupt on again. It runs
// on core 0, where the interrupts go; the packets the node's own
// processes send cost them TxCycles each when they post (package verbs).

// softVector is the MSI data of NIC r's driver interrupt.
func softVector(r int) uint32 { return 0x20 + uint32(r) }

// attachDriver registers NIC r's driver on core 0.
func (n *Node) attachDriver(r int) {
	x := n.NICs[r]
	s := x.Spec().Software
	if s == nil {
		return
	}
	n.Cores[0].OnInterrupt(s.MSIAddr, s.MSIData, fmt.Sprintf("nic%d_driver", r), func(p *cpu.Proc) { driverPoll(p, x, s) })
}

// driverPoll is one poll: the atomics first (their responses
// then wait for transmit), then the frames to transmit, then the next
// received frame, until nothing is left.
func driverPoll(p *cpu.Proc, x *nic.NIC, s *nic.Software) {
	for {
		if op, ok := x.DriverOp(); ok {
			if op.CAS {
				op.Done(p.CAS(op.Addr, op.Compare, op.Swap))
			} else {
				op.Done(p.FetchAdd(op.Addr, op.Swap))
			}
			continue
		}
		if x.DriverHasTx() {
			p.Compute(s.TxCycles)
			x.DriverTx()
			continue
		}
		if x.DriverHasRx() {
			p.Compute(s.RxCycles)
			x.DriverRx()
			continue
		}
		break
	}
	x.DriverDone()
}
