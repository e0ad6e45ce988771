package verbs

import (
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// A process that fills its srd send queue and then flushes gets its
// flush back: the full queue was once reaped without the bookkeeping
// Flush waits on.
func TestSRDFullQueueFlush(t *testing.T) {
	s := machine.DefaultSpec()
	s.Nodes, s.Cores, s.Transport = 3, 1, machine.TransportSRD
	s.SQSize = 4
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	bufs := make([]uint64, 3)
	for i, nd := range c.Nodes {
		bufs[i] = nd.Alloc(1 << 16)
		if err := nd.Register(bufs[i], 1<<16, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
			t.Fatal(err)
		}
	}
	done := false
	Spawn(c.Nodes[0], 0, "p", func(x *Ctx) {
		for j := 0; j < 10; j++ {
			x.Put(1, bufs[0], bufs[1]+uint64(j)*64, 64)
		}
		if err := x.Flush(1); err != nil {
			t.Error(err)
		}
		done = true
	})
	c.Run(10*sim.MS, c.AppsDone)
	if !done {
		h := c.Nodes[0].QP(1, 0)
		t.Fatalf("flush never returned: posted %d completed %d open %d", h.Posted, h.Completed, h.WRs.Open())
	}
}
