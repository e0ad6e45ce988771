package scenario

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// machine.nic.offload: none hands every frame to the driver: each node's
// driver takes every frame its NIC received and transmits every frame its
// responder made; RMA's atomics run on the target's CPU; the interrupts are at most one a throttle interval (plus the
// first) and, unthrottled, more; the table stays exact; and without the
// key the NIC declares no driver counters.
func TestOffloadNone(t *testing.T) {
	counter := func(e *sim.Engine, name string) (uint64, bool) {
		st, ok := e.Stats().Get(name)
		if !ok {
			return 0, false
		}
		return st.(*sim.Counter).Value(), true
	}
	irqs := map[string]uint64{}
	for _, tc := range []struct {
		scheme, nic string
		rate        int // interrupts a second at most (0: none)
	}{
		{"AA-SP", "{}", 0},
		{"RMA", "{}", 0},
		{"AA-SP", "{offload: none}", defaultInterruptRate},
		{"RMA", "{offload: none}", defaultInterruptRate},
		{"RMA", "{offload: none, interrupt_rate: 0}", 0},
		{"RMA", "{offload: none, interrupt_rate: 100000, driver_rx_cycles: 100, driver_tx_cycles: 100}", 100000},
	} {
		src := "machine:\n  nodes: 2\n  nic: " + tc.nic + "\nworkload:\n  dht: {inserts: 60, schemes: [" + tc.scheme + "], collisions: [0.25]}\n"
		s, err := ParseScenario("s.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		e := sim.NewEngine(s.Seed)
		c, w, err := s.Build(e, s.Experiments()[0])
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.S, c.AppsDone)
		if r := w.Result(); !r.Verified {
			t.Fatalf("%s %s: the table is wrong: %v", tc.scheme, tc.nic, w.Verify())
		}
		soft := strings.Contains(tc.nic, "none")
		var total uint64
		for i, n := range c.Nodes {
			name := n.NICs[0].Unit().Name()
			in, _ := counter(e, name+".frames_in")
			out, _ := counter(e, name+".frames_out")
			rx, ok := counter(e, name+".driver_rx")
			tx, _ := counter(e, name+".driver_tx")
			ops, _ := counter(e, name+".driver_ops")
			irq, _ := counter(e, name+".driver_interrupts")
			if !soft {
				if ok {
					t.Errorf("%s %s node %d: driver counters on an RDMA NIC", tc.scheme, tc.nic, i)
				}
				continue
			}
			if rx != in || in == 0 || irq == 0 || irq > in {
				t.Errorf("%s %s node %d: the driver took %d of %d frames in %d interrupts", tc.scheme, tc.nic, i, rx, in, irq)
			}
			if i == 1 && (tx != out || tx == 0) {
				t.Errorf("%s %s target: the driver transmitted %d of the %d frames sent", tc.scheme, tc.nic, tx, out)
			}
			if i == 1 && tc.scheme == "RMA" && ops == 0 {
				t.Errorf("%s %s target: no atomic ran on the CPU", tc.scheme, tc.nic)
			}
			if tc.rate > 0 {
				if most := uint64(float64(n.Eng.Now())/1e12*float64(tc.rate)) + 1; irq > most {
					t.Errorf("%s %s node %d: %d interrupts in %v, more than %d a second allow", tc.scheme, tc.nic, i, irq, n.Eng.Now(), tc.rate)
				}
			}
			total += irq
		}
		if soft && tc.scheme == "RMA" {
			irqs[tc.nic] = total
		}
	}
	if a, b := irqs["{offload: none, interrupt_rate: 0}"], irqs["{offload: none}"]; a < b {
		t.Errorf("RMA: %d interrupts unthrottled, %d throttled: the throttle should not add any", a, b)
	}
}

// The offload keys: bad values and keys without offload none are errors
// naming the key.
func TestOffloadErrors(t *testing.T) {
	for _, tc := range []struct{ nic, key string }{
		{"{offload: tcp}", "machine.nic.offload"},
		{"{interrupt_rate: 100}", "machine.nic.interrupt_rate"},
		{"{driver_rx_cycles: 5}", "machine.nic.driver_rx_cycles"},
		{"{offload: none, interrupt_rate: 200000}", "machine.nic.interrupt_rate"},
		{"{offload: none, driver_tx_cycles: -1}", "machine.nic.driver_tx_cycles"},
	} {
		src := "machine:\n  nic: " + tc.nic + "\nworkload:\n  dht: {inserts: 10}\n"
		_, err := ParseScenario("s.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: %v, want an error naming %s", tc.nic, err, tc.key)
		}
	}
}

// machine.iommu.iotlb_only names a kind of page the machine or a workload
// labels; anything else is an error naming the key and the kinds.
func TestIOTLBOnlyKey(t *testing.T) {
	for _, tc := range []struct {
		only string
		ok   bool
	}{{"table", true}, {"payload", true}, {"tables", false}, {"hash", false}} {
		src := "machine:\n  iommu: {iotlb_only: " + tc.only + "}\nworkload:\n  dht: {inserts: 10}\n"
		_, err := ParseScenario("s.yaml", []byte(src))
		if tc.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), "machine.iommu.iotlb_only") {
			t.Errorf("%s: %v", tc.only, err)
		}
	}
}
