package machine_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

func newCluster(t *testing.T, s machine.Spec) *machine.Cluster {
	t.Helper()
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// edge is the first edge of a clock of period p at or after t.
func edge(t, p sim.Tick) sim.Tick { return (t + p - 1) / p * p }

// statValue is a counter's value, 0 if it was never declared.
func statValue(c *machine.Cluster, name string) uint64 {
	st, ok := c.Eng.Stats().Get(name)
	if !ok {
		return 0
	}
	return st.(*sim.Counter).Value()
}

// A core's uncached read of the NIC's device memory costs exactly the sum
// of its parts on a link whose wire times are whole nanoseconds: the
// root complex taking the MRd, the way down (a fabric cycle, or the down
// link: the MRd's 20 bytes on the wire and its latency), the NIC's access,
// the CplD's 24 bytes and the latency up, the root complex's processing,
// the pass behind the NIC's earlier writes through the memory controller,
// and the completion's way to the core.
func TestUncachedReadRoundTrip(t *testing.T) {
	tests := []struct {
		gen, width int
		psPerByte  sim.Tick // the link's wire time per byte
		latency    sim.Tick
		access     sim.Tick
		cpuPS      sim.Tick
		down       bool
	}{
		{1, 1, 4000, 100 * sim.NS, 50 * sim.NS, 500, false},
		{1, 1, 4000, 100 * sim.NS, 50 * sim.NS, 500, true},
		{2, 4, 500, 250 * sim.NS, 0, 500, true},
		{2, 4, 500, 333 * sim.NS, 27 * sim.NS, 5988, true}, // a 167 MHz core
		{1, 1, 4000, 75 * sim.NS, 1 * sim.US, 5988, false},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("gen%d x%d %v access %v cpu %d ps down link %v", tc.gen, tc.width, tc.latency, tc.access, tc.cpuPS, tc.down)
		t.Run(name, func(t *testing.T) {
			s := machine.DefaultSpec()
			s.PCIe.Gen, s.PCIe.Width, s.PCIe.LatencyPS = tc.gen, tc.width, tc.latency
			s.PCIeDown = tc.down
			s.NIC.SRAMAccessPS = tc.access
			s.CPU.PeriodPS = tc.cpuPS
			c := newCluster(t, s)
			n := c.Nodes[0]
			const off = 0x7c
			n.NIC.SRAM().Store32(off, 0xcafef00d)
			var issued, back sim.Tick
			var v uint32
			n.Cores[0].Spawn("reader", func(p *cpu.Proc) {
				p.Compute(1)
				issued = p.Now()
				v = p.MMIORead32(n.NIC.SRAMAddr() + off)
				back = p.Now()
			})
			c.Eng.Run(sim.MS)
			if v != 0xcafef00d {
				t.Fatalf("read %#x", v)
			}
			const fabric = 1000
			wire := func(bytes int) sim.Tick { return sim.Tick(bytes) * tc.psPerByte }
			// The MRd is visible to the root complex a picosecond after it
			// is sent; it goes down at the edge the root complex takes it.
			rc := edge(issued+1, fabric)
			atNIC := rc + fabric // a cycle down the channel
			if tc.down {
				// The down link takes it at its next edge, puts its 20
				// bytes (3 DW header, framing) on the wire, delivers it
				// latency later, at an edge; the NIC sees it an edge after.
				start := rc + fabric
				atNIC = edge(start+wire(20)+tc.latency, fabric) + fabric
			}
			answered := edge(atNIC+tc.access, fabric)
			// The up link takes the CplD (3 DW header, 4 bytes, framing:
			// 24 bytes) at its next edge and delivers it at an edge; the
			// root complex takes it an edge later, processes it, and hands
			// it to the memory controller, which lets it go at once (no
			// earlier writes) back to the root complex, which sends it to
			// the core.
			delivered := edge(answered+fabric+wire(24)+tc.latency, fabric)
			taken := delivered + fabric
			processed := edge(taken+s.IOMMU.ProcessPS, fabric)
			atMem := processed + fabric
			toCore := atMem + fabric
			want := edge(toCore+1, tc.cpuPS)
			if back != want {
				t.Fatalf("read issued at %v came back at %v (%v), want %v (%v)", issued, back, back-issued, want, want-issued)
			}
			if got := statValue(c, "node0.cpu0.uncached_reads"); got != 1 {
				t.Fatalf("%d uncached reads counted", got)
			}
		})
	}
}

// Loads see the stores before them to the same device memory, through
// either kind of down path; what the host stored, the NIC's engines see.
func TestUncachedReadAfterWrite(t *testing.T) {
	tests := []struct {
		name   string
		down   bool
		writes int
		access sim.Tick
	}{
		{"one store, channel down", false, 1, 50 * sim.NS},
		{"one store, down link", true, 1, 50 * sim.NS},
		{"stores in a row, down link, slow device", true, 5, 400 * sim.NS},
		{"stores in a row, no access time", false, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := machine.DefaultSpec()
			s.PCIeDown, s.NIC.SRAMAccessPS = tc.down, tc.access
			c := newCluster(t, s)
			n := c.Nodes[0]
			addr := n.NIC.SRAMAddr() + 0x1000
			var got uint64
			n.Cores[0].Spawn("p", func(p *cpu.Proc) {
				for i := 1; i <= tc.writes; i++ {
					p.MMIOWrite(addr, binary.LittleEndian.AppendUint64(nil, uint64(i)*0x0101010101010101), 0)
				}
				got = p.MMIORead64(addr)
			})
			c.Eng.Run(sim.MS)
			want := uint64(tc.writes) * 0x0101010101010101
			if got != want {
				t.Fatalf("read %#x after the stores, want the last one's %#x", got, want)
			}
			if dev := n.NIC.SRAM().Load64(0x1000); dev != want {
				t.Fatalf("the NIC sees %#x, want %#x", dev, want)
			}
		})
	}
}

// Cores reading at once each get their own data: the root complex sends
// each completion back to the core whose requester ID it carries. The
// device serves them one at a time, so they come back an access apart.
func TestConcurrentUncachedReads(t *testing.T) {
	for _, cores := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("%d cores", cores), func(t *testing.T) {
			s := machine.DefaultSpec()
			s.Cores = cores
			s.NIC.SRAMAccessPS = 200 * sim.NS
			c := newCluster(t, s)
			n := c.Nodes[0]
			got := make([]uint64, cores)
			back := make([]sim.Tick, cores)
			for k := 0; k < cores; k++ {
				n.NIC.SRAM().Store64(uint64(k)*64, uint64(0x100+k))
				n.Cores[k].Spawn("reader", func(p *cpu.Proc) {
					got[k] = p.MMIORead64(n.NIC.SRAMAddr() + uint64(k)*64)
					back[k] = p.Now()
				})
			}
			c.Eng.Run(sim.MS)
			first, last := back[0], back[0]
			for k := range got {
				if got[k] != uint64(0x100+k) {
					t.Fatalf("core %d read %#x, want its own %#x", k, got[k], 0x100+k)
				}
				first, last = min(first, back[k]), max(last, back[k])
			}
			if spread := last - first; spread < sim.Tick(cores-1)*s.NIC.SRAMAccessPS {
				t.Fatalf("the reads came back within %v, want at least %d accesses apart", spread, cores-1)
			}
			if got := statValue(c, "node0.nic0.sram_reads"); got != uint64(cores) {
				t.Fatalf("the NIC answered %d reads, want %d", got, cores)
			}
		})
	}
}

// A load from an address no BAR decodes returns all ones, and the root
// complex and the core count it; the NIC's BAR past its device memory
// still decodes (zeros).
func TestUncachedReadOfNoBAR(t *testing.T) {
	s := machine.DefaultSpec()
	bar := s.NIC.BARSize()
	tests := []struct {
		name string
		addr uint64
		want uint32
		ur   uint64
	}{
		{"below the BAR", machine.BARBase - 4, 0xffffffff, 1},
		{"past the BAR", machine.BARBase + bar, 0xffffffff, 1},
		{"in the BAR past the device memory", machine.BARBase + nic.SRAMOffset + uint64(s.NIC.SRAMBytes), 0, 0},
		{"a doorbell", machine.BARBase + 8, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, s)
			n := c.Nodes[0]
			var got uint32
			n.Cores[0].Spawn("p", func(p *cpu.Proc) { got = p.MMIORead32(tc.addr) })
			c.Eng.Run(sim.MS)
			if got != tc.want {
				t.Fatalf("read %#x, want %#x", got, tc.want)
			}
			if ur := statValue(c, "node0.iommu.host_reads_ur"); ur != tc.ur {
				t.Fatalf("the root complex counted %d unsupported reads, want %d", ur, tc.ur)
			}
			if e := statValue(c, "node0.cpu0.uncached_read_errors"); e != tc.ur {
				t.Fatalf("the core counted %d failed reads, want %d", e, tc.ur)
			}
		})
	}
}

// On an SMP node DMA is coherent: a line the NIC writes into memory (an
// RDMA WRITE from the other node) leaves the caches of the node's cores,
// so the core polling it pays a miss for the load that sees the new data;
// a line the NIC did not write stays a hit.
func TestDMAWriteInvalidatesTheLine(t *testing.T) {
	const period = 5988
	smp := &cpu.SMPSpec{L2Bytes: 64 << 10, HitCycles: 2, MissCycles: 50, C2CCycles: 80, UpgradeCycles: 50, CASCycles: 15}
	tests := []struct {
		name     string
		offset   uint64 // of the line polled from the line written
		wantCost sim.Tick
		wantNew  bool
	}{
		{"the line written", 0, 50 * period, true},
		{"the next line", 64, 2 * period, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := machine.DefaultSpec()
			s.CPU.PeriodPS, s.SMP = period, smp
			c := newCluster(t, s)
			n0, n1 := c.Nodes[0], c.Nodes[1]
			dst, src := n0.Alloc(4096), n1.Alloc(4096)
			rw := iommu.Perm{Bits: pte.R | pte.W}
			if err := n0.Register(dst, 4096, rw); err != nil {
				t.Fatal(err)
			}
			if err := n1.Register(src, 4096, rw); err != nil {
				t.Fatal(err)
			}
			n1.Mem.Store64(src, 0xfeed)
			var cost sim.Tick
			var seen uint64
			polled := dst + tc.offset
			n0.Cores[0].Spawn("poller", func(p *cpu.Proc) {
				p.Load64(polled) // a miss: into the cache
				for p.Now() < 200*sim.US {
					t0 := p.Now()
					v := p.Load64(polled)
					if v != 0 || p.Now() >= 150*sim.US {
						cost, seen = p.Now()-t0, v
						return
					}
				}
			})
			verbs.Spawn(n1, 0, "writer", func(x *verbs.Ctx) {
				x.P.Sleep(10 * sim.US)
				if _, err := x.Wait(x.Put(0, src, dst, 8)); err != nil {
					t.Error(err)
				}
			})
			c.Eng.Run(sim.MS)
			if got := seen == 0xfeed; got != tc.wantNew {
				t.Fatalf("the poll saw %#x", seen)
			}
			if cost != tc.wantCost {
				t.Fatalf("the load after the DMA cost %v, want %v", cost, tc.wantCost)
			}
		})
	}
}
