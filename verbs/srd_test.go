package verbs

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// With transport srd every process of every node puts, gets, adds, swaps
// and sends to every other node on its one queue, waiting for its work
// requests out of order, some by Test and some by Flush; with loss on the
// wire too. Everything happens once, and each node holds a context per
// peer it talked to, not per core per peer.
func TestSRDVerbs(t *testing.T) {
	for _, tc := range []struct {
		nodes, cores int
		lossPPM      uint32
	}{
		{3, 2, 0},
		{4, 6, 0},
		{5, 4, 10_000},
	} {
		t.Run(fmt.Sprintf("nodes=%d,cores=%d,loss=%dppm", tc.nodes, tc.cores, tc.lossPPM), func(t *testing.T) {
			s := machine.DefaultSpec()
			s.Nodes, s.Cores, s.Transport = tc.nodes, tc.cores, machine.TransportSRD
			s.Wire.LossPPM = tc.lossPPM
			c, err := machine.New(sim.NewEngine(1), s)
			if err != nil {
				t.Fatal(err)
			}
			const slot = 4096
			n, k := tc.nodes, tc.cores
			// Per node: sources, then a slot per (source node, core) for
			// WRITEs, READs, receive buffers, and the words for atomics.
			area := uint64(n * k * slot)
			base := make([]uint64, n)
			for i, nd := range c.Nodes {
				base[i] = nd.Alloc(5 * area)
				if err := nd.Register(base[i], 5*area, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
					t.Fatal(err)
				}
				for x := uint64(0); x < area; x += 8 {
					nd.Mem.Store64(base[i]+x, uint64(i)<<32|x)
				}
			}
			at := func(node, which, src, core int) uint64 {
				return base[node] + uint64(which)*area + uint64((src*k+core)*slot)
			}
			const (
				srcArea = iota
				writeArea
				readArea
				recvArea
				wordArea
			)
			size := 3000
			for i, nd := range c.Nodes {
				for core := 0; core < k; core++ {
					i, core := i, core
					Spawn(nd, core, "p", func(x *Ctx) {
						for j := 0; j < n; j++ {
							if j != i {
								x.PostRecv(j, at(i, recvArea, j, core), slot)
							}
						}
						var puts, gets []WR
						for j := 0; j < n; j++ {
							if j == i {
								continue
							}
							puts = append(puts, x.Put(j, at(i, srcArea, i, core), at(j, writeArea, i, core), size))
							gets = append(gets, x.Get(j, at(i, readArea, j, core), at(j, srcArea, j, core), size+8))
							x.Send(j, at(i, srcArea, i, core)+8, 100+i)
						}
						slices.Reverse(gets) // waited for in another order than posted
						for _, g := range gets {
							if _, err := x.Wait(g); err != nil {
								t.Error(err)
							}
						}
						for q, p := range puts {
							if q%2 == 0 {
								if _, done, err := x.Test(p); err != nil || !done && x.Flush(p.dst) != nil {
									t.Error("put failed", err)
								}
							}
						}
						for j := 0; j < n; j++ {
							if j == i {
								continue
							}
							if old, err := x.FetchAdd(j, at(j, wordArea, i, core), uint64(core+1)); err != nil || old != 0 {
								t.Errorf("fetch-and-add: %d %v", old, err)
							}
							if old, err := x.CAS(j, at(j, wordArea, i, core)+8, 0, uint64(i)); err != nil || old != 0 {
								t.Errorf("CAS: %d %v", old, err)
							}
							if err := x.Flush(j); err != nil {
								t.Error(err)
							}
						}
						var from []int
						for r := 0; r < n-1; r++ {
							cqe := x.Recv((i + 1) % n) // from any source: src only picks the queue
							src := int(cqe.Value)
							from = append(from, src)
							if cqe.Length != uint32(100+src) {
								t.Errorf("node %d core %d: %d bytes from node %d", i, core, cqe.Length, src)
							}
						}
						slices.Sort(from)
						var want []int
						for j := 0; j < n; j++ {
							if j != i {
								want = append(want, j)
							}
						}
						if !slices.Equal(from, want) {
							t.Errorf("node %d core %d received from %v, want %v", i, core, from, want)
						}
						h := x.N.QP((i+1)%n, core)
						if h.WRs.Open() != 0 {
							t.Errorf("node %d core %d: %d work requests left", i, core, h.WRs.Open())
						}
					})
				}
			}
			c.Run(sim.S, c.AppsDone)
			if !c.AppsDone() {
				t.Fatal("did not finish")
			}
			for i, nd := range c.Nodes {
				if nd.NIC.Peers() != n-1 {
					t.Errorf("node %d: %d contexts, want %d", i, nd.NIC.Peers(), n-1)
				}
				for j := 0; j < n; j++ {
					for core := 0; core < k && j != i; core++ {
						for b := 0; b < size; b += 8 {
							if got, want := nd.Mem.Load64(at(i, writeArea, j, core)+uint64(b)), uint64(j)<<32|uint64((j*k+core)*slot+b); got != want {
								t.Fatalf("node %d: WRITE from node %d core %d: %#x at %d, want %#x", i, j, core, got, b, want)
							}
							if got, want := nd.Mem.Load64(at(i, readArea, j, core)+uint64(b)), uint64(j)<<32|uint64((j*k+core)*slot+b); got != want {
								t.Fatalf("node %d: READ from node %d core %d: %#x, want %#x", i, j, core, got, want)
							}
						}
						if v := nd.Mem.Load64(at(i, wordArea, j, core)); v != uint64(core+1) {
							t.Errorf("node %d: counter of node %d core %d is %d, want %d (added once)", i, j, core, v, core+1)
						}
						if v := nd.Mem.Load64(at(i, wordArea, j, core) + 8); v != uint64(j) {
							t.Errorf("node %d: CAS word of node %d core %d is %d", i, j, core, v)
						}
					}
				}
			}
			if tc.lossPPM > 0 && c.Nodes[0].NIC.Health().Retransmitted == 0 {
				t.Error("no retransmission at loss")
			}
		})
	}
}

// A transport the machine does not know fails to build.
func TestUnknownTransport(t *testing.T) {
	s := machine.DefaultSpec()
	s.Transport = "ud"
	if _, err := machine.New(sim.NewEngine(1), s); err == nil {
		t.Fatal("transport ud was accepted")
	}
}
