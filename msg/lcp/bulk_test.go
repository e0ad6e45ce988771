package lcp

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// exchange runs one PingPong (rank 0 sends size bytes, rank 1 sends them
// back) or PingPing (both at once) under cfg over nics NICs, checks that
// every byte arrived in place and nothing after it changed, and returns
// rank 0's time for it and the NICs' TLP counters.
func exchange(t *testing.T, nics, size int, pingping bool, cfg Config) (sim.Tick, *Result, []uint64) {
	t.Helper()
	return exchangeOn(t, MultirailSpec(nics, true), size, pingping, cfg, nil)
}

// exchangeOn is exchange on a machine of spec; the counters are those of
// exchange followed by the extra ones named (of each node, without the
// node's prefix).
func exchangeOn(t *testing.T, spec machine.Spec, size int, pingping bool, cfg Config, extra []string) (sim.Tick, *Result, []uint64) {
	t.Helper()
	nics := spec.NICs
	c, err := machine.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	var elapsed sim.Tick
	res, err := Run(c, cfg, func(p *Proc) {
		me, peer := p.Rank(), 1-p.Rank()
		sb, rb := p.Alloc(size), p.Alloc(size+guard)
		p.Node().Mem.Write(sb.Addr, pattern(size, me))
		p.Node().Mem.Write(rb.Addr, bytes.Repeat([]byte{0xa5}, size+guard))
		r := rb.Slice(0, size)
		t0 := p.Now()
		var err error
		switch {
		case pingping:
			qs, e1 := p.Isend(sb, peer, 1)
			qr, e2 := p.Irecv(r, peer, 1)
			if err = e1; err == nil {
				if err = e2; err == nil {
					err = p.Waitall(qs, qr)
				}
			}
		case me == 0:
			if err = p.Send(sb, peer, 1); err == nil {
				_, err = p.Recv(r, peer, 1)
			}
		default:
			if _, err = p.Recv(r, peer, 1); err == nil {
				err = p.Send(sb, peer, 1)
			}
		}
		if err != nil {
			t.Error(err)
			return
		}
		if me == 0 {
			elapsed = p.Now() - t0
		}
		got := make([]byte, size+guard)
		p.Node().Mem.Read(rb.Addr, got)
		if i := firstDiff(got[:size], pattern(size, peer)); i >= 0 {
			t.Errorf("rank %d: byte %d of %d differs", me, i, size)
		}
		if !bytes.Equal(got[size:], bytes.Repeat([]byte{0xa5}, guard)) {
			t.Errorf("rank %d: the message spilled over the bytes after the receive buffer", me)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var counts []uint64
	for n, node := range c.Nodes {
		for r := 0; r < nics; r++ {
			for _, s := range []string{"nic%d.tlps", "pcie%d.up.tlps", "pcie%d.up.payload_bytes", "pcie%d.up.wire_bytes"} {
				st, ok := node.Eng.Stats().Get(fmt.Sprintf("node%d.", n) + fmt.Sprintf(s, r))
				if !ok {
					t.Fatalf("no statistic node%d.%s", n, fmt.Sprintf(s, r))
				}
				counts = append(counts, st.(*sim.Counter).Value())
			}
		}
		for _, s := range append([]string{"iommu.tlps", "iommu.reads", "iommu.writes", "mem.reads", "mem.writes", "mem.bytes_read", "mem.bytes_written"}, extra...) {
			st, ok := node.Eng.Stats().Get(fmt.Sprintf("node%d.", n) + s)
			if !ok {
				t.Fatalf("no statistic node%d.%s", n, s)
			}
			counts = append(counts, st.(*sim.Counter).Value())
		}
	}
	return elapsed, res, counts
}

// bulkBound is how far the batched path's time may be from the per-TLP
// path's, as a fraction of it, where it is not exact (docs/multirail.md):
// PingPing RGET, where each NIC serves reads while it receives, ends 3.4
// µs sooner (up to 1.8 %); RPUT over 3–4 NICs, whose rails' TLPs take
// turns at the root complex, up to 0.53 % sooner.
const bulkBound = 0.02

// iotlbBound is how far the batched path's IOTLB hits, misses and walk
// reads may be from the per-TLP path's, as a fraction of them.
const iotlbBound = 0.02

// The bulk path against the per-TLP one on 1–4 NICs, three sizes,
// PingPong and PingPing, RPUT and RGET: every byte in place; the NICs',
// links', root complex's and memory controller's TLP and byte counters
// the same; the simulated time the same to the picosecond for PingPong
// over one NIC, RPUT and RGET, within bulkBound otherwise.
func TestBulkMatchesCycle(t *testing.T) {
	const frag = 1 << 20
	for _, nics := range []int{1, 2, 3, 4} {
		for _, size := range []int{frag, 3*frag + 4096 + 1, 5 * frag} {
			for _, pp := range []bool{false, true} {
				for _, proto := range []Protocol{RPUT, RGET} {
					name := fmt.Sprintf("%dnic/%d/pingping=%v/%s", nics, size, pp, proto)
					t.Run(name, func(t *testing.T) {
						cfg := DefaultConfig()
						cfg.FragmentBytes, cfg.Protocol = frag, proto
						cyc, _, ctl := exchange(t, nics, size, pp, cfg)
						cfg.Bulk = Batched
						bat, res, btl := exchange(t, nics, size, pp, cfg)
						if res.BulkOff != "" {
							t.Fatalf("bulk path off: %s", res.BulkOff)
						}
						diff := int64(bat) - int64(cyc)
						d := float64(diff) / float64(cyc)
						t.Logf("cycle %v batched %v: %+d ps (%+.3f %%)", cyc, bat, diff, 100*d)
						if exact := !pp && nics == 1; exact && diff != 0 || d > bulkBound || d < -bulkBound {
							t.Errorf("batched %v, cycle %v (%+d ps; exact %v, bound ±%.0f %%)", bat, cyc, diff, exact, 100*bulkBound)
						}
						// The run stops when the ranks are done: a completion
						// entry or a credit (one TLP of at most 32 bytes) may
						// still be in flight in one run and not in the other.
						for i := range ctl {
							d := int64(btl[i]) - int64(ctl[i])
							if d < -64 || d > 64 {
								t.Errorf("counter %d: batched %d, cycle %d", i, btl[i], ctl[i])
							}
						}
					})
				}
			}
		}
	}
}

// Batched on a machine whose IOMMU takes one TLP at a time: the run goes
// TLP by TLP, says why, and takes the per-TLP time.
func TestBulkFallsBack(t *testing.T) {
	run := func(b Bulk) (sim.Tick, *Result) {
		spec := MultirailSpec(1, false)
		spec.IOMMU.Slots, spec.IOMMU.Walkers = 0, 0
		c, err := machine.New(sim.NewEngine(1), spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.FragmentBytes, cfg.Bulk = 1<<20, b
		res, err := Run(c, cfg, func(p *Proc) {
			b := p.Alloc(1 << 20)
			if p.Rank() == 0 {
				if err := p.Send(b, 1, 1); err != nil {
					t.Error(err)
				}
			} else if _, err := p.Recv(b, 0, 1); err != nil {
				t.Error(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return res.Finish[1], res
	}
	cyc, _ := run(Cycle)
	bat, res := run(Batched)
	if !strings.Contains(res.BulkOff, "the IOMMU, one TLP at a time") {
		t.Errorf("BulkOff %q", res.BulkOff)
	}
	if bat != cyc {
		t.Errorf("batched %v, cycle %v", bat, cyc)
	}
}

// A receive buffer with a page whose writes are logged (WL, to the fault
// log): the work request that writes it goes TLP by TLP, so that the
// IOMMU logs each of its writes as it does per TLP, and the run says why;
// the others go by the bulk path. Every byte arrives; the faults logged
// are the per-TLP run's.
func TestBulkRefusesLoggedPage(t *testing.T) {
	const size = 1 << 20
	logged := uint64(size / 2)
	run := func(b Bulk) (*Result, *machine.Cluster) {
		c, err := machine.New(sim.NewEngine(1), MultirailSpec(1, false))
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.FragmentBytes, cfg.Bulk = size, b
		res, err := Run(c, cfg, func(p *Proc) {
			buf := p.Alloc(size)
			if p.Rank() == 0 {
				p.Node().Mem.Write(buf.Addr, pattern(size, 0))
				if err := p.Send(buf, 1, 1); err != nil {
					t.Error(err)
				}
				return
			}
			if err := p.Node().SetBits(buf.Addr+logged, iommu.Perm{Bits: pte.R | pte.W | pte.WL}); err != nil {
				t.Error(err)
			}
			if _, err := p.Recv(buf, 0, 1); err != nil {
				t.Error(err)
			}
			got := make([]byte, size)
			p.Node().Mem.Read(buf.Addr, got)
			if i := firstDiff(got, pattern(size, 0)); i >= 0 {
				t.Errorf("byte %d differs", i)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, c
	}
	faults := func(c *machine.Cluster) uint64 {
		st, ok := c.Nodes[1].Eng.Stats().Get("node1.iommu.faults")
		if !ok {
			t.Fatal("no node1.iommu.faults")
		}
		return st.(*sim.Counter).Value()
	}
	_, cc := run(Cycle)
	res, bc := run(Batched)
	if !strings.Contains(res.BulkRefused, "logs its accesses") {
		t.Errorf("BulkRefused %q", res.BulkRefused)
	}
	if f, want := faults(bc), faults(cc); f != want || want == 0 {
		t.Errorf("%d faults logged batched, %d per TLP (want the same, not 0)", f, want)
	}
	if st, ok := bc.Nodes[1].Eng.Stats().Get("node1.nic0.bulk_bytes"); !ok || st.(*sim.Counter).Value() == 0 {
		t.Error("the bulk path moved nothing")
	}
}

// A bulk mode that does not exist is refused.
func TestBulkBadMode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bulk = 9
	if _, err := Run(newCluster(t, 1), cfg, func(*Proc) {}); err == nil || !strings.Contains(err.Error(), "bulk mode 9, want cycle or batched") {
		t.Errorf("got %v", err)
	}
}

// The bulk path through the IOMMU against the per-TLP one, as
// TestBulkMatchesCycle, on the multirail machine with its pipelined IOMMU
// on the DMA path: every byte in place; the TLP and byte counters and
// the context-cache hits as the per-TLP path's; the IOTLB's hits, misses
// and walk reads within iotlbBound (a work request's 64 pages translated
// at once evict entries the per-TLP run keeps warm between the NIC's
// turns); the time within bulkBound. Four NICs need 2 MB pages
// (machine.BulkMinPage): the 1 MB messages' buffers, on 4 KB pages, go
// TLP by TLP, and the run says why.
func TestBulkMatchesCycleIOMMU(t *testing.T) {
	const frag = 1 << 20
	extra := []string{"iommu.context_cache.hits", "iommu.iotlb.hits", "iommu.iotlb.misses", "iommu.walk_reads"}
	sizes := []int{frag, 3*frag + 4096 + 1, 5 * frag}
	nicsList := []int{1, 2, 3, 4}
	if testing.Short() {
		sizes, nicsList = []int{frag, 3*frag + 4096 + 1}, []int{1, 4}
	}
	for _, nics := range nicsList {
		for _, size := range sizes {
			for _, pp := range []bool{false, true} {
				for _, proto := range []Protocol{RPUT, RGET} {
					name := fmt.Sprintf("%dnic/%d/pingping=%v/%s", nics, size, pp, proto)
					t.Run(name, func(t *testing.T) {
						spec := MultirailSpec(nics, false)
						cfg := DefaultConfig()
						cfg.FragmentBytes, cfg.Protocol = frag, proto
						cyc, _, ctl := exchangeOn(t, spec, size, pp, cfg, extra)
						cfg.Bulk = Batched
						bat, res, btl := exchangeOn(t, spec, size, pp, cfg, extra)
						if res.BulkOff != "" {
							t.Fatalf("bulk path off: %s", res.BulkOff)
						}
						smallPages := nics == 4 && size < 2<<20
						if smallPages != (res.BulkRefused != "") || smallPages && !strings.Contains(res.BulkRefused, "is a 4 KB page") {
							t.Errorf("refused: %q", res.BulkRefused)
						}
						diff := int64(bat) - int64(cyc)
						d := float64(diff) / float64(cyc)
						t.Logf("cycle %v batched %v: %+d ps (%+.3f %%)", cyc, bat, diff, 100*d)
						if d > bulkBound || d < -bulkBound {
							t.Errorf("batched %v, cycle %v (%+d ps; bound ±%.0f %%)", bat, cyc, diff, 100*bulkBound)
						}
						perNode := len(ctl) / 2
						for i := range ctl {
							d := int64(btl[i]) - int64(ctl[i])
							tlb := i%perNode >= perNode-3 // IOTLB hits, misses, walk reads
							if !tlb && (d < -64 || d > 64) || tlb && math.Abs(float64(d)) > iotlbBound*float64(ctl[i]) {
								t.Errorf("counter %d: batched %d, cycle %d", i, btl[i], ctl[i])
							}
							if tlb && d != 0 {
								t.Logf("counter %d: batched %d, cycle %d (%+.2f %%)", i, btl[i], ctl[i], 100*float64(d)/float64(ctl[i]))
							}
						}
					})
				}
			}
		}
	}
}
