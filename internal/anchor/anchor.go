// Package anchor runs the performance anchor workload of the peer models
// (a DMA engine writing N × 64 B through an IOMMU with a 64-entry 4-way LRU
// IOTLB and a 4-level page walk into a 16 MiB memory) on aaemu's own
// blocks, at the transaction level and at the cycle level, and prints the
// results in the peers' format.
package anchor

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// The workload, as the peers define it.
const (
	pageSize   = 4096
	numPages   = 4096
	memBytes   = numPages * pageSize
	xferBytes  = 64
	hitNS      = 5
	walkNS     = 4 * 70
	memNS      = 70
	ppnMul     = 2654435761
	pageStride = 7919
)

var dev = tlp.NewID(1, 0, 0)

// Result is what a run prints.
type Result struct {
	Model        string
	N, D         uint64
	Hits, Misses uint64
	SimNS        uint64
	Checksum     uint64
	Wall         time.Duration
	Evaluations  uint64 // cycle level: block evaluations (Tick calls)
}

// Print writes the result in the peers' format.
func (r Result) Print(w io.Writer) {
	fmt.Fprintf(w, "model=%s N=%d D=%d\n", r.Model, r.N, r.D)
	fmt.Fprintf(w, "iotlb_hits=%d iotlb_misses=%d\n", r.Hits, r.Misses)
	fmt.Fprintf(w, "sim_time_ns=%d mem_checksum=%016x\n", r.SimNS, r.Checksum)
	fmt.Fprintf(w, "wall_s=%.3f txn_per_s=%.0f\n", r.Wall.Seconds(), float64(r.N)/r.Wall.Seconds())
	if r.Evaluations > 0 {
		fmt.Fprintf(w, "block_evaluations_per_txn=%.2f\n", float64(r.Evaluations)/float64(r.N))
	}
}

// setup builds the IOMMU with the anchor's IOTLB over a 16 MiB memory whose
// page table maps vpn → (vpn · 2654435761) mod 4096, in real VT-d tables
// placed above the 16 MiB.
func setup(clk *sim.Clock) (*iommu.IOMMU, *memory.Store, error) {
	// 16 MiB of data, then the root table, the log table and the page
	// tables, all in one flat array.
	mem := memory.NewFlatStore(0x180_0000)
	spec := iommu.DefaultSpec()
	spec.IOTLBSets, spec.IOTLBWays, spec.IOTLBEviction = 16, 4, sim.LRU
	spec.RootTable, spec.LogTable = 0x100_0000, 0x110_0000
	spec.ProcessPS, spec.MemAccessPS = hitNS*sim.NS, 70*sim.NS
	m, err := iommu.New(clk, "iommu", spec, mem)
	if err != nil {
		return nil, nil, err
	}
	drv := iommu.NewDriver(m, 0x130_0000, 0x50_0000)
	if err := drv.Attach(dev, 1); err != nil {
		return nil, nil, err
	}
	for vpn := uint64(0); vpn < numPages; vpn++ {
		ppn := vpn * ppnMul % numPages
		if err := drv.Map(1, vpn*pageSize, ppn*pageSize, pageSize, pageSize, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
			return nil, nil, err
		}
	}
	mem.Write(0, make([]byte, memBytes)) // the whole store exists, as in the peers
	// Warm the context cache: the peers have no context lookup.
	m.TranslateTL(dev, 0, true)
	m.InvalidateIOTLB()
	return m, mem, nil
}

func iova(i, d uint64) uint64 {
	return (i/d*pageStride%numPages)*pageSize + i*xferBytes%pageSize
}

func counters(e *sim.Engine) (hits, misses uint64) {
	h, _ := e.Stats().Get("iommu.iotlb.hits")
	m, _ := e.Stats().Get("iommu.iotlb.misses")
	return h.(*sim.Counter).Value(), m.(*sim.Counter).Value()
}

// TransactionLevel runs the workload through the IOMMU's translation path
// called per TLP with no kernel scheduling, adding the peers' latencies.
func TransactionLevel(n, d uint64) (Result, error) {
	e := sim.NewEngine(1)
	m, mem, err := setup(e.NewClock("clk", 1000, 0))
	if err != nil {
		return Result{}, err
	}
	h0, m0 := counters(e)
	start := time.Now()
	simNS, err := writes(m, mem, n, d)
	wall := time.Since(start)
	if err != nil {
		return Result{}, err
	}
	h, ms := counters(e)
	return Result{Model: "aaemu-tl", N: n, D: d, Hits: h - h0, Misses: ms - m0, SimNS: simNS,
		Checksum: mem.FNV1a64(0, memBytes), Wall: wall}, nil
}

// writes is the workload's loop: n writes of 64 B, each translated and then
// copied into memory, with the peers' latencies summed into simulated time.
func writes(m *iommu.IOMMU, mem *memory.Store, n, d uint64) (simNS uint64, err error) {
	var buf [xferBytes]byte
	for i := uint64(0); i < n; i++ {
		fill(buf[:], byte(i))
		pa, hit, _, fault := m.TranslateTL(dev, iova(i, d), true)
		if fault != 0 {
			return 0, fmt.Errorf("write %d at %#x faulted (%#x)", i, iova(i, d), fault)
		}
		if hit {
			simNS += hitNS
		} else {
			simNS += walkNS
		}
		mem.Write(pa, buf[:])
		simNS += memNS
	}
	return simNS, nil
}

// fill sets every byte of b (a multiple of 8 bytes) to v, 8 bytes a store,
// as the peers do.
func fill(b []byte, v byte) {
	w := uint64(v) * 0x0101010101010101
	for k := 0; k+8 <= len(b); k += 8 {
		binary.LittleEndian.PutUint64(b[k:], w)
	}
}

// dma is the cycle-level DMA engine: it streams the workload's MWr TLPs
// into its PCIe link as fast as the link takes them. Its source buffer holds
// the 256 possible payloads (64 copies of one byte), which the TLPs carry
// in place: the engine allocates nothing per write.
type dma struct {
	out  *sim.Chan[pcie.Packet]
	n, d uint64
	i    uint64
	src  [256][xferBytes]byte
}

func (g *dma) Tick(sim.Tick) bool {
	if g.i >= g.n || !g.out.Ready() {
		return false // the link wakes the engine when it takes the next TLP
	}
	t, err := tlp.NewMemWriteInPlace(dev, 0, iova(g.i, g.d), g.src[byte(g.i)][:])
	if err != nil {
		panic(err) // the workload's addresses are 64-byte aligned
	}
	g.out.Send(pcie.Packet{TLP: t})
	g.i++
	return g.i < g.n
}

// CycleLevel runs the workload on the kernel: a DMA engine block, a PCIe
// Gen3 x8 link block, the IOMMU block and the memory controller block, with
// handshakes, credits and idle skipping.
func CycleLevel(n, d uint64) (Result, error) {
	e := sim.NewEngine(1)
	clk := e.NewClock("clk", 1000, 0)
	m, mem, err := setup(clk)
	if err != nil {
		return Result{}, err
	}
	mspec := memory.DefaultSpec()
	mspec.LatencyPS, mspec.BytesPerNS = memNS*sim.NS, 0
	mspec.QueueEntries = 256
	mc, err := memory.NewController(clk, "mem", mspec, mem, m.Unit(), m.Unit())
	if err != nil {
		return Result{}, err
	}
	m.ConnectMemory(mc.In, mc.Cpl)
	g := &dma{n: n, d: d}
	for v := range g.src {
		fill(g.src[v][:], byte(v))
	}
	gu := clk.Add("dma", g)
	link, err := pcie.NewDir(clk, "link", pcie.DefaultLinkSpec(), gu, m.Unit())
	if err != nil {
		return Result{}, err
	}
	g.out = link.In
	back := sim.NewChan[pcie.Packet](m.Unit(), gu, "link.down", 4)
	m.AddPort(link.Out, back)
	h0, m0 := counters(e)
	start := time.Now()
	end := e.Run(sim.Never - 1)
	wall := time.Since(start)
	h, ms := counters(e)
	return Result{Model: "aaemu-cycle", N: n, D: d, Hits: h - h0, Misses: ms - m0, SimNS: uint64(end) / 1000,
		Checksum: mem.FNV1a64(0, memBytes), Wall: wall, Evaluations: e.UnitTicks()}, nil
}
