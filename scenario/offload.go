package scenario

import (
	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
)

// machine.nic.offload's values.
const (
	OffloadRDMA = "rdma"
	OffloadNone = "none"
)

// Defaults of a NIC without offload (docs/paper.md, "6c with the e1000's
// software path"):
//   - defaultInterruptRate: the Linux e1000 driver's InterruptThrottleRate
//     default, 3 (dynamic conservative), holds small-packet traffic at
//     20000 interrupts a second (the ITR register, 8254x Software
//     Developer's Manual 13.4.18, in 256 ns units);
//   - defaultDriverCycles: a packet's path through a kernel stack and its
//     driver, 950 ns on a 2.93 GHz core (netmap, USENIX ATC 2012, Table
//     1: FreeBSD's sendto of a UDP packet down to the driver), in cycles;
//     the receive path is taken to cost the same;
//   - the receive ring: the driver's RxDescriptors default, 256.
const (
	defaultInterruptRate = 20000
	defaultDriverCycles  = 2780
	defaultSoftRing      = 256
)

// checkOffload validates machine.nic.offload and the keys that go with it.
func (s *Scenario) checkOffload() (string, error) {
	n := &s.Machine.NIC
	switch n.Offload {
	case "", OffloadRDMA, OffloadNone:
	default:
		return "machine.nic.offload", notOneOf(n.Offload, "an offload", []string{OffloadRDMA, OffloadNone},
			OffloadRDMA+": puts, gets and atomics in the NIC; "+OffloadNone+": an e1000 without RDMA, its driver on core 0 takes every packet")
	}
	none := n.Offload == OffloadNone
	for _, k := range []struct {
		key string
		set bool
	}{{"machine.nic.interrupt_rate", n.InterruptRate != nil}, {"machine.nic.driver_rx_cycles", n.DriverRxCycles != 0}, {"machine.nic.driver_tx_cycles", n.DriverTxCycles != 0}} {
		if k.set && !none {
			return k.key, input.Errorf("with machine.nic.offload: "+OffloadNone, "set, but the NIC offloads RDMA")
		}
	}
	if none {
		switch {
		case s.Machine.Transport == machine.TransportSRD:
			return "machine.nic.offload", input.Errorf(OffloadRDMA+" with machine.transport "+machine.TransportSRD, "%s: the software path runs the rc transport only", OffloadNone)
		case s.Machine.NICs > 1:
			return "machine.nic.offload", input.Errorf(OffloadRDMA+" with more than one NIC a node", "%s: one NIC a node only", OffloadNone)
		}
	}
	return "", nil
}

// offloadSpec puts a NIC without offload into the cluster spec.
func (s *Scenario) offloadSpec(c *machine.Spec) {
	n := &s.Machine.NIC
	if n.Offload != OffloadNone {
		return
	}
	rate := defaultInterruptRate
	if n.InterruptRate != nil {
		rate = *n.InterruptRate
	}
	sw := &nic.Software{MSIAddr: 0xfee0_0000, Ring: defaultSoftRing, RxCycles: defaultDriverCycles, TxCycles: defaultDriverCycles}
	if n.DescriptorRing != 0 {
		sw.Ring = n.DescriptorRing
	}
	if rate > 0 {
		sw.ThrottlePS = sim.Tick(1e12 / float64(rate))
	}
	if n.DriverRxCycles != 0 {
		sw.RxCycles = n.DriverRxCycles
	}
	if n.DriverTxCycles != 0 {
		sw.TxCycles = n.DriverTxCycles
	}
	c.NIC.Software = sw
}
