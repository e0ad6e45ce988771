package workload

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// scaleNodes are the cluster sizes of BenchmarkDHTScale.
var scaleNodes = []int{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// scalePartitions is the goroutines the nodes run on (-scale.partitions;
// default: the host's cores).
var scalePartitions = flag.Int("scale.partitions", runtime.NumCPU(), "BenchmarkDHTScale: goroutines the nodes run on")

// scaleHeapProfile, if set, is where each size writes a heap profile of
// its live cluster after the run (-scale.heapprofile; the size is added
// to the name): what a node holds, by allocation site.
var scaleHeapProfile = flag.String("scale.heapprofile", "", "BenchmarkDHTScale: write the live cluster's heap profile to this file (.N added)")

// scaleRow is one size's measurement.
type scaleRow struct {
	nodes      int
	wall       time.Duration // per simulated millisecond
	events     uint64        // block evaluations
	heapMB     float64
	stackMB    float64 // the goroutines' stacks (the processes' coroutines): not in the heap
	sysMB      float64 // all the runtime holds from the system
	puts       uint64  // puts completed (their completion entries written)
	built      time.Duration
	partitions int
}

// BenchmarkDHTScale: 32 inserting processes per node on N nodes, every node
// owning a shard, AA-SP, for 1 ms of simulated time under full load: every
// process has more keys than it can insert in the millisecond (the run
// fails otherwise), so the work per node is the same at every size and the
// cost must grow linearly with N. It reports the wall time per simulated
// millisecond (ns/op), block evaluations per second, the live heap after
// the run and the puts completed, then a table of all sizes with the
// growth exponent of the wall time in N (a least-squares fit of log wall
// time against log N: 1 is linear):
//
//	go test -run '^$' -bench DHTScale -benchtime 1x ./workload/
func BenchmarkDHTScale(b *testing.B) {
	var rows []scaleRow
	for _, nodes := range scaleNodes {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			var r scaleRow
			for i := 0; i < b.N; i++ {
				r = runDHTScale(b, nodes)
			}
			b.ReportMetric(float64(r.wall.Nanoseconds()), "ns/sim-ms")
			b.ReportMetric(float64(r.events)/r.wall.Seconds(), "events/s")
			b.ReportMetric(r.heapMB, "heap-MB")
			b.ReportMetric(r.stackMB, "stack-MB")
			b.ReportMetric(r.sysMB, "sys-MB")
			b.ReportMetric(float64(r.puts), "puts/sim-ms")
			b.ReportMetric(float64(r.events), "evals")
			rows = append(rows, r)
		})
	}
	if len(rows) > 0 {
		// On stdout, not b.Log: a benchmark's log shows only under -v.
		fmt.Print(scaleTable(rows))
	}
}

// runDHTScale builds and runs one size; the wall time is the run's.
func runDHTScale(b *testing.B, nodes int) scaleRow {
	t0 := time.Now()
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores = nodes, 32
	// A send queue per process for every destination and a reliable
	// context per peer node: state that does not grow with nodes × cores.
	spec.Transport = machine.TransportSRD
	e := sim.NewEngine(1)
	c, err := aa.New(e, spec)
	if err != nil {
		b.Fatal(err)
	}
	// 400 keys a process: a process has at most a send queue of 256
	// puts outstanding and its node's 1 GbE link completes about 35 of
	// its puts in a millisecond, so none runs out.
	if _, err := SetupDHT(c, DHTConfig{Scheme: AASP, Inserts: 400, Cells: 1 << 12, Collisions: 0.05, Procs: 32, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	c.SetPartitions(*scalePartitions)
	built := time.Since(t0)
	t1 := time.Now()
	c.Run(sim.MS, func() bool { return false })
	wall := time.Since(t1)
	for _, n := range c.Nodes {
		for k, core := range n.Cores {
			if core.AppsDone() {
				b.Fatalf("%d nodes: node %d core %d ran out of work before 1 ms: the benchmark would measure an idle cluster", nodes, n.ID, k)
			}
		}
	}
	var puts uint64
	st := e.Stats()
	for _, n := range c.Nodes {
		if s, ok := st.Get(fmt.Sprintf("node%d.nic0.cqes", n.ID)); ok {
			puts += s.(*sim.Counter).Value()
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if *scaleHeapProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", *scaleHeapProfile, nodes))
		if err == nil {
			err = pprof.WriteHeapProfile(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	c.Close() // the processes are still running: free them for the next size
	return scaleRow{nodes: nodes, wall: wall, events: e.World().UnitTicks(), heapMB: float64(ms.HeapAlloc) / (1 << 20), stackMB: float64(ms.StackInuse) / (1 << 20), sysMB: float64(ms.Sys) / (1 << 20), puts: puts, built: built, partitions: *scalePartitions}
}

// scaleTable formats the rows with the growth exponent of wall time in N.
func scaleTable(rows []scaleRow) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%6s %10s %12s %12s %10s %12s %10s\n", "nodes", "partitions", "wall/sim-ms", "events/s", "heap MB", "puts/sim-ms", "build")
	var sx, sy, sxx, sxy float64
	for _, r := range rows {
		fmt.Fprintf(&sb, "%6d %10d %12s %12.3g %10.1f %12d %10s\n", r.nodes, r.partitions, r.wall.Round(time.Millisecond), float64(r.events)/r.wall.Seconds(), r.heapMB, r.puts, r.built.Round(time.Millisecond))
		x, y := math.Log(float64(r.nodes)), math.Log(r.wall.Seconds())
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n := float64(len(rows)); len(rows) > 1 {
		fmt.Fprintf(&sb, "growth exponent of wall time in nodes: %.2f (1 = linear)\n", (n*sxy-sx*sy)/(n*sxx-sx*sx))
	}
	return sb.String()
}
