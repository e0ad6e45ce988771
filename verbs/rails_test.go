package verbs

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Nodes with several NICs: on every rail, over rc and srd, on a direct
// link and through a switch, each process puts a block to every other node
// and sends it a message; the data arrives through the rail it was posted
// on, each NIC's own wire carries about its share of the bytes (the rails
// are separate planes), and every NIC of a node translates through the one
// IOMMU domain the memory was registered in once.
func TestRails(t *testing.T) {
	for _, tc := range []struct {
		nodes, nics int
		transport   string
	}{
		{2, 2, machine.TransportRC},
		{2, 4, machine.TransportSRD},
		{3, 3, machine.TransportRC},
		{4, 2, machine.TransportSRD},
	} {
		t.Run(fmt.Sprintf("nodes=%d,nics=%d,%s", tc.nodes, tc.nics, tc.transport), func(t *testing.T) {
			s := machine.DefaultSpec()
			s.Nodes, s.NICs, s.Transport, s.Cores = tc.nodes, tc.nics, tc.transport, 2
			c, err := machine.New(sim.NewEngine(1), s)
			if err != nil {
				t.Fatal(err)
			}
			const block = 4096
			rw := iommu.Perm{Bits: pte.R | pte.W}
			bufs := make([]uint64, tc.nodes)
			for i, n := range c.Nodes {
				if got := len(n.NICs); got != tc.nics {
					t.Fatalf("node %d has %d NICs", i, got)
				}
				// Per source node and rail: a block put there and a message.
				bufs[i] = n.Alloc(uint64(2 * tc.nodes * tc.nics * block))
				if err := n.Register(bufs[i], uint64(2*tc.nodes*tc.nics*block), rw); err != nil {
					t.Fatal(err)
				}
			}
			slot := func(src, rail, k int) uint64 { return uint64(((src*tc.nics+rail)*2 + k) * block) }
			for i, n := range c.Nodes {
				for r := 0; r < tc.nics; r++ {
					for k := 0; k < block; k++ {
						n.Mem.Write(bufs[i]+slot(i, r, 0)+uint64(k), []byte{byte(i*16 + r + k)})
					}
				}
			}
			for i, n := range c.Nodes {
				for r := 0; r < tc.nics; r++ {
					i, r := i, r
					Spawn(n, r%s.Cores, fmt.Sprintf("rail%d", r), func(x *Ctx) {
						x = x.OnRail(r)
						for d := range c.Nodes {
							if d == i {
								continue
							}
							x.PostRecv(d, bufs[i]+slot(d, r, 1), 64)
						}
						for d := range c.Nodes {
							if d == i {
								continue
							}
							x.Put(d, bufs[i]+slot(i, r, 0), bufs[d]+slot(i, r, 0), block)
							x.Send(d, bufs[i]+slot(i, r, 0), 64)
							x.Flush(d)
						}
						for d := range c.Nodes {
							if d != i {
								if e := x.Recv(d); e.Length != 64 {
									t.Errorf("node %d rail %d: a message of %d bytes", i, r, e.Length)
								}
							}
						}
					})
				}
			}
			c.Run(10*sim.MS, c.AppsDone)
			if !c.AppsDone() {
				t.Fatal("did not finish")
			}
			got, want := make([]byte, block), make([]byte, block)
			for i := range c.Nodes {
				for d, n := range c.Nodes {
					if d == i {
						continue
					}
					for r := 0; r < tc.nics; r++ {
						c.Nodes[i].Mem.Read(bufs[i]+slot(i, r, 0), want)
						n.Mem.Read(bufs[d]+slot(i, r, 0), got)
						if string(got) != string(want) {
							t.Fatalf("node %d's block for rail %d did not arrive on node %d", i, r, d)
						}
					}
				}
			}
			for i, n := range c.Nodes {
				for r := 0; r < tc.nics; r++ {
					b := n.RailBytes(r)
					if min := uint64((tc.nodes - 1) * block); b < min || b > 2*min {
						t.Errorf("node %d NIC %d sent %d bytes, want its own share (%d to %d)", i, r, b, min, 2*min)
					}
				}
			}
		})
	}
}
