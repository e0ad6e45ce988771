package verbs

import (
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// A tracker holds puts on two connections until their completions are
// taken: Reap takes a connection's in posting order and hands back each
// bounce buffer once; ReapAll drains every connection; nothing is taken
// twice and Pending ends at zero.
func TestTracker(t *testing.T) {
	s := machine.DefaultSpec()
	s.Nodes, s.Cores = 3, 2
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	rw := iommu.Perm{Bits: pte.R | pte.W}
	bufs := make([]uint64, 3)
	for i, n := range c.Nodes {
		bufs[i] = n.Alloc(4096)
		if err := n.Register(bufs[i], 4096, rw); err != nil {
			t.Fatal(err)
		}
	}
	var taken []uint64
	Spawn(c.Nodes[0], 0, "p", func(x *Ctx) {
		on := func(core int) *Ctx { y := *x; y.Core = core; return &y }
		var tr Tracker
		var posted []*Posted
		for i := 0; i < 6; i++ {
			k := Conn{Node: 1 + i%2, Core: i % 2}
			posted = append(posted, tr.Track(k, on(k.Core).Put(k.Node, bufs[0]+uint64(8*i), bufs[k.Node]+uint64(8*i), 8), uint64(100+i)))
		}
		if tr.Pending() != 6 {
			t.Errorf("%d pending after 6 posts", tr.Pending())
		}
		note := func(p *Posted) {
			if !p.Done {
				t.Error("taken before it is done")
			}
			taken = append(taken, p.Bounce)
		}
		for !tr.Reap(Conn{Node: 1, Core: 0}, on, note) {
			x.P.Sleep(100 * sim.NS)
		}
		for tr.Pending() > 0 {
			if !tr.ReapAll(on, note) {
				x.P.Sleep(100 * sim.NS)
			}
		}
		for i, p := range posted {
			if !p.Done || p.Err != nil {
				t.Errorf("put %d: done %v, %v", i, p.Done, p.Err)
			}
		}
		if tr.ReapAll(on, note) {
			t.Error("a drained tracker took something")
		}
	})
	c.Run(sim.MS, c.AppsDone)
	if !c.AppsDone() {
		t.Fatal("did not finish")
	}
	if len(taken) != 6 {
		t.Fatalf("bounce buffers handed back: %v, want each of 100..105 once", taken)
	}
	seen := map[uint64]bool{}
	for _, b := range taken {
		if seen[b] || b < 100 || b > 105 {
			t.Fatalf("bounce buffers handed back: %v, want each of 100..105 once", taken)
		}
		seen[b] = true
	}
	// Connection (1, 0)'s requests (0, 2, 4) come back in posting order.
	var order []uint64
	for _, b := range taken {
		if (b-100)%2 == 0 {
			order = append(order, b)
		}
	}
	if len(order) != 3 || order[0] != 100 || order[1] != 102 || order[2] != 104 {
		t.Errorf("connection (1, 0) handed back %v, want 100, 102, 104 in order", order)
	}
}
