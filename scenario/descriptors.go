package scenario

import (
	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
)

// DescriptorsE1000 is machine.nic.descriptors' one value: the Intel
// 8254x's legacy descriptors.
const DescriptorsE1000 = "e1000"

// defaultDescriptorRing is the Linux e1000 driver's default ring size
// (TxDescriptors, RxDescriptors: 256).
const defaultDescriptorRing = 256

// checkDescriptors validates machine.nic.descriptors and descriptor_ring.
func (s *Scenario) checkDescriptors() (string, error) {
	n := &s.Machine.NIC
	switch {
	case n.Descriptors != "" && n.Descriptors != DescriptorsE1000:
		return "machine.nic.descriptors", notOneOf(n.Descriptors, "a descriptor format", []string{DescriptorsE1000}, DescriptorsE1000+": an Intel 8254x's 16-byte legacy descriptors, read and written back per packet; none: the RDMA NIC's queues only")
	case n.DescriptorRing != 0 && n.Descriptors == "":
		return "machine.nic.descriptor_ring", input.Errorf("with machine.nic.descriptors: "+DescriptorsE1000, "a ring of %d, but no descriptors", n.DescriptorRing)
	case n.DescriptorRing%8 != 0:
		return "machine.nic.descriptor_ring", input.Errorf(rangeOf["machine.nic.descriptor_ring"].text(), "%d is not a multiple of 8", n.DescriptorRing)
	}
	return "", nil
}

// descriptorSpec puts the rings into the cluster spec: their size; the
// machine places them in each node's memory.
func (s *Scenario) descriptorSpec(c *machine.Spec) {
	n := &s.Machine.NIC
	if n.Descriptors == "" {
		return
	}
	entries := n.DescriptorRing
	if entries == 0 {
		entries = defaultDescriptorRing
	}
	c.NIC.Descriptors = &nic.Descriptors{Entries: entries}
}
