package scenario

import (
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/internal/input"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// CPUSMP are the keys of machine.cpu that make a node a symmetric
// multiprocessor (docs/smp.md): the cores' clock, their coherence model and
// copy bandwidth, and the issue cost of an uncached store. All zero (no
// coherence block): the cores cost every access as before.
type CPUSMP struct {
	// MHz is the cores' clock (0: 2000); the period is rounded to the
	// nearest picosecond (167 MHz: 5988 ps).
	MHz uint64 `yaml:"mhz" json:"mhz,omitempty"`
	// MemcpyMBps is one core's copy bandwidth (needs coherence; 0: a copy
	// costs its loads and stores).
	MemcpyMBps uint64 `yaml:"memcpy_mbps" json:"memcpy_mbps,omitempty"`
	// NICWriteCycles is a core's cost of issuing an uncached store to
	// NIC memory, a posted write (cpu.Spec.UncachedWritePS; 0: MMIOPS). An
	// uncached read costs what the model computes: its round trip.
	NICWriteCycles int `yaml:"nic_write_cycles" json:"nic_write_cycles,omitempty"`
	// Coherence, when present, gives every node's cores a cache each and
	// costs their loads, stores and atomics by a coherence model.
	Coherence *CoherenceSpec `yaml:"coherence" json:"coherence,omitempty"`
}

// CoherenceSpec is machine.cpu.coherence (cpu.SMPSpec's figures, in cycles).
type CoherenceSpec struct {
	LineBytes     int `yaml:"line_bytes" json:"line_bytes"` // 0: 64
	L2KB          int `yaml:"l2_kb" json:"l2_kb"`
	L2Ways        int `yaml:"l2_ways" json:"l2_ways"` // 0: 8
	HitCycles     int `yaml:"hit_cycles" json:"hit_cycles"`
	MissCycles    int `yaml:"miss_cycles" json:"miss_cycles"`
	C2CCycles     int `yaml:"c2c_cycles" json:"c2c_cycles"`
	UpgradeCycles int `yaml:"upgrade_cycles" json:"upgrade_cycles"`
	InvalCycles   int `yaml:"inval_cycles" json:"inval_cycles"`
	CASCycles     int `yaml:"cas_cycles" json:"cas_cycles"`
}

// MemorySpec is machine.memory.
type MemorySpec struct {
	// BandwidthMBps is each node's aggregate memory bandwidth (needs
	// machine.cpu.coherence; 0: unlimited).
	BandwidthMBps uint64 `yaml:"bandwidth_mbps" json:"bandwidth_mbps,omitempty"`
}

const (
	maxCPUMHz   = 10_000
	maxCycles   = 100_000
	maxSMPMBps  = 1_000_000
	maxL2KB     = 1 << 20
	smpNeedsKey = "needs machine.cpu.coherence (the SMP model)"
)

// checkSMP validates the SMP keys.
func (s *Scenario) checkSMP() (string, error) {
	m := &s.Machine
	c := &m.CPU.CPUSMP
	cycles := func(key string, v, lo int) (string, error) {
		if v < lo || v > maxCycles {
			return key, fmt.Errorf("%d out of %d..%d cycles", v, lo, maxCycles)
		}
		return "", nil
	}
	mbps := func(key string, v uint64) (string, error) {
		switch {
		case v > maxSMPMBps:
			return key, fmt.Errorf("%d out of 0..%d MB/s", v, maxSMPMBps)
		case v != 0 && c.Coherence == nil:
			return key, fmt.Errorf("%d MB/s %s", v, smpNeedsKey)
		}
		return "", nil
	}
	checks := []func() (string, error){
		func() (string, error) {
			if c.MHz > maxCPUMHz {
				return "machine.cpu.mhz", fmt.Errorf("%d out of 1..%d (0: 2000)", c.MHz, maxCPUMHz)
			}
			return "", nil
		},
		func() (string, error) { return cycles("machine.cpu.nic_write_cycles", c.NICWriteCycles, 0) },
		func() (string, error) { return mbps("machine.cpu.memcpy_mbps", c.MemcpyMBps) },
		func() (string, error) { return mbps("machine.memory.bandwidth_mbps", m.Memory.BandwidthMBps) },
	}
	if k := c.Coherence; k != nil {
		const p = "machine.cpu.coherence."
		line, ways := max(k.LineBytes, 0), max(k.L2Ways, 0)
		if line == 0 {
			line = 64
		}
		if ways == 0 {
			ways = 8
		}
		checks = append(checks,
			func() (string, error) {
				if line < 8 || line > 4096 || line&(line-1) != 0 {
					return p + "line_bytes", input.Errorf("a power of two from 8 to 4096; 0: 64", "%d is not a power of two from 8", k.LineBytes)
				}
				return "", nil
			},
			func() (string, error) {
				if k.L2Ways < 0 || k.L2Ways > 64 {
					return p + "l2_ways", fmt.Errorf("%d out of 1..64 (0: 8)", k.L2Ways)
				}
				return "", nil
			},
			func() (string, error) {
				switch {
				case k.L2KB < 1 || k.L2KB > maxL2KB:
					return p + "l2_kb", fmt.Errorf("%d out of 1..%d", k.L2KB, maxL2KB)
				case k.L2KB<<10 < line*ways:
					return p + "l2_kb", input.Errorf(fmt.Sprintf("at least %d lines of %d B: one per way", ways, line), "%d KB holds fewer lines than its %d ways", k.L2KB, ways)
				}
				return "", nil
			},
			func() (string, error) { return cycles(p+"hit_cycles", k.HitCycles, 0) },
			func() (string, error) { return cycles(p+"miss_cycles", k.MissCycles, 1) },
			func() (string, error) { return cycles(p+"c2c_cycles", k.C2CCycles, 1) },
			func() (string, error) { return cycles(p+"upgrade_cycles", k.UpgradeCycles, 0) },
			func() (string, error) { return cycles(p+"inval_cycles", k.InvalCycles, 0) },
			func() (string, error) { return cycles(p+"cas_cycles", k.CASCycles, 1) },
		)
	}
	for _, f := range checks {
		if key, err := f(); err != nil {
			return key, err
		}
	}
	return "", nil
}

// smpSpec puts the SMP keys into the cluster spec.
func (s *Scenario) smpSpec(c *machine.Spec) {
	m := &s.Machine
	k := &m.CPU.CPUSMP
	if k.MHz != 0 {
		c.CPU.PeriodPS = sim.Tick((1_000_000 + k.MHz/2) / k.MHz)
	}
	c.CPU.UncachedWritePS = sim.Tick(k.NICWriteCycles) * c.CPU.PeriodPS
	if h := k.Coherence; h != nil {
		c.SMP = &cpu.SMPSpec{LineBytes: h.LineBytes, L2Bytes: h.L2KB << 10, L2Ways: h.L2Ways,
			HitCycles: h.HitCycles, MissCycles: h.MissCycles, C2CCycles: h.C2CCycles, UpgradeCycles: h.UpgradeCycles,
			InvalCycles: h.InvalCycles, CASCycles: h.CASCycles, MemoryMBps: m.Memory.BandwidthMBps, MemcpyMBps: k.MemcpyMBps}
	}
}
