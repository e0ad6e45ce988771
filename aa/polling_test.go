package aa

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// With a polling hyperthread a core, an SP log's handler runs on the
// sibling of the core that owns the log (LogOptions.Core), using that
// core's connections; with the node's one thread, on it, with core 0's.
func TestSPLogOnItsCoresSibling(t *testing.T) {
	for _, place := range []string{machine.PollingPerNode, machine.PollingPerCore} {
		t.Run(place, func(t *testing.T) {
			c := newCluster(t, func(s *machine.Spec) { s.Cores, s.PollingHyperthreads = 3, place })
			src, dst := c.Nodes[0], c.Nodes[1]
			buf := src.Alloc(4096)
			if err := src.Register(buf, 4096, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
				t.Fatal(err)
			}
			page := dst.Alloc(4096)
			const iuid, owner = 7, 2
			var ranOn []string
			var ctxCores []int
			if _, err := dst.CreateLogWith(iuid, 8192, iommu.SP, LogOptions{Core: owner}, func(x *Ctx, r Record) {
				ranOn = append(ranOn, x.P.Core().Unit().Name())
				ctxCores = append(ctxCores, x.Core)
			}); err != nil {
				t.Fatal(err)
			}
			if err := dst.Register(page, 4096, iommu.Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: iuid}); err != nil {
				t.Fatal(err)
			}
			src.Spawn(0, "app", func(x *Ctx) {
				for i := 0; i < 3; i++ {
					x.P.Op("aa.put")
					x.Wait(x.Put(1, buf, page+uint64(i)*16, 16))
				}
			})
			c.Run(10*sim.MS, func() bool { return len(ranOn) == 3 })
			wantOn, wantCore := "node1.cpu_poll", 0
			if place == machine.PollingPerCore {
				wantOn, wantCore = "node1.cpu2_poll", owner
			}
			if len(ranOn) != 3 {
				t.Fatalf("the handler ran %d times of 3", len(ranOn))
			}
			for i := range ranOn {
				if ranOn[i] != wantOn || ctxCores[i] != wantCore {
					t.Errorf("record %d handled on %s with core %d's connections, want %s and core %d", i, ranOn[i], ctxCores[i], wantOn, wantCore)
				}
			}
		})
	}
}

// A node's scratchpad has a slot a log: an SP log beyond its slots is
// refused rather than never notified, before it takes the node's memory.
func TestSPLogsBeyondTheScratchpad(t *testing.T) {
	c := newCluster(t, nil)
	n := c.Nodes[1]
	for i := 0; i <= machine.ScratchpadSlots; i++ {
		heap := n.Alloc(0)
		_, err := n.CreateLog(uint16(100+i), 4096, iommu.SP, func(*Ctx, Record) {})
		if i == machine.ScratchpadSlots && n.Alloc(0) != heap {
			t.Errorf("the refused log took memory: the heap moved from %#x to %#x", heap, n.Alloc(0))
		}
		switch {
		case i < machine.ScratchpadSlots && err != nil:
			t.Fatalf("log %d: %v", i, err)
		case i == machine.ScratchpadSlots && (err == nil || !strings.Contains(err.Error(), "the scratchpad's 64 slots are taken")):
			t.Fatalf("log %d of a 64-slot scratchpad: error %v", i, err)
		}
	}
}
