package scenario

import (
	"fmt"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// maxSRAMAccessNS bounds machine.nic.sram_access_ns: a millisecond.
const maxSRAMAccessNS = 1_000_000

// checkMMIO validates the keys of the cores' uncached accesses to the NIC
// (docs/pcie.md): machine.pcie.down_link and machine.nic.sram_access_ns.
func (s *Scenario) checkMMIO() (string, error) {
	if v := s.Machine.NIC.SRAMAccessNS; v > maxSRAMAccessNS {
		return "machine.nic.sram_access_ns", fmt.Errorf("%d out of 0..%d ns (0: the NIC's default)", v, maxSRAMAccessNS)
	}
	return "", nil
}

// mmioSpec puts them into the cluster spec.
func (s *Scenario) mmioSpec(c *machine.Spec) {
	m := &s.Machine
	c.PCIeDown = m.PCIe.DownLink
	if m.NIC.SRAMAccessNS != 0 {
		c.NIC.SRAMAccessPS = sim.Tick(m.NIC.SRAMAccessNS) * sim.NS
	}
}
