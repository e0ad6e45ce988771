package scenario

import (
	"testing"

	"github.com/aaemu/aaemu/sim"
)

// machine.nic.descriptors: e1000 gives every packet a NIC sends or takes
// one descriptor read and one write-back (16 bytes each) on the node's
// rings, in ring order: after the run each node's counts equal its
// frames, the receive ring's slots the frames reached carry DD|EOP and
// the transmit ring's DD, and the DHT's table is still exact. Without the
// key the NIC declares no descriptor counters at all (its outputs stay
// what they were).
func TestE1000Descriptors(t *testing.T) {
	counter := func(e *sim.Engine, name string) (uint64, bool) {
		st, ok := e.Stats().Get(name)
		if !ok {
			return 0, false
		}
		return st.(*sim.Counter).Value(), true
	}
	for _, scheme := range []string{"AA-SP", "RMA"} {
		for _, desc := range []string{"", "e1000"} {
			src := "machine:\n  nic: {descriptors: \"" + desc + "\", descriptor_ring: 0}\nworkload:\n  dht: {inserts: 100, schemes: [" + scheme + "], collisions: [0.25]}\n"
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
				t.Fatalf("%s %q: the table is wrong: %v", scheme, desc, w.Verify())
			}
			for i, n := range c.Nodes {
				in, _ := counter(e, n.NICs[0].Unit().Name()+".frames_in")
				out, _ := counter(e, n.NICs[0].Unit().Name()+".frames_out")
				fetches, ok := counter(e, n.NICs[0].Unit().Name()+".desc_fetches")
				wbs, _ := counter(e, n.NICs[0].Unit().Name()+".desc_writebacks")
				if desc == "" {
					if ok {
						t.Errorf("%s node %d: descriptor counters without descriptors", scheme, i)
					}
					continue
				}
				if fetches != in+out || wbs != in+out || in == 0 || out == 0 {
					t.Errorf("%s node %d: %d fetches, %d write-backs for %d frames in and %d out", scheme, i, fetches, wbs, in, out)
				}
				d := n.NICs[0].Spec().Descriptors
				slot := func(ring uint64, k uint64) []byte {
					b := make([]byte, 16)
					n.Mem.Read(ring+(k%uint64(d.Entries))*16, b)
					return b
				}
				if d.Entries != 256 {
					t.Errorf("ring of %d descriptors, want the e1000 driver's 256", d.Entries)
				}
				if b := slot(d.RX, in-1); b[12] != 0x3 || b[8] == 0 {
					t.Errorf("%s node %d: last receive descriptor % x: want DD|EOP and a length", scheme, i, b)
				}
				if b := slot(d.TX, out-1); b[12] != 0x1 {
					t.Errorf("%s node %d: last transmit descriptor % x: want DD", scheme, i, b)
				}
			}
		}
	}
}
