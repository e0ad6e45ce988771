package am2paper

import (
	"math"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// run runs a reduced figure and returns its points and claims.
func run(t *testing.T, name string) ([]paper.Point, []paper.Result) {
	t.Helper()
	for _, f := range Figures(Reduced) {
		if f.Name != name {
			continue
		}
		pts, err := f.Custom.Run(2, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
				t.Fatalf("%s: point %+v", name, p)
			}
		}
		return pts, f.CheckPoints(pts)
	}
	t.Fatalf("no figure %s", name)
	return nil, nil
}

// The paper is registered with its seven figures, full and reduced: the
// microbenchmarks, then the applications' tables.
func TestRegistered(t *testing.T) {
	p := paper.Find("am2")
	if p == nil || p.Reduced == nil {
		t.Fatal("am2 not registered, or without reduced figures")
	}
	var names []string
	for _, f := range p.Figures() {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "table2 4 bandwidth polling table4 table5 table6" {
		t.Errorf("figures %s", got)
	}
	if _, err := p.Lookup([]string{"fig4", "table2"}); err != nil {
		t.Error(err)
	}
}

// Table 2 on reduced iterations: the network slower than shared memory in
// every parameter the wire and the NIU's uncached accesses enter, its
// bandwidth the I/O bus's, and every claim measured.
func TestTable2(t *testing.T) {
	pts, res := run(t, "table2")
	for _, r := range res {
		t.Logf("%s: paper %s, aaemu %s, holds %v", r.Claim.Text, r.Claim.Paper, r.Measured, r.Holds)
		if r.Measured == "" {
			t.Errorf("%s: nothing measured", r.Claim.Text)
		}
	}
	for _, row := range []workload.Scheme{rowOs, rowOr, rowG, rowGB, rowRTT} {
		s, n := y(pts, 8, shmMulti.name, row), y(pts, 8, netMulti.name, row)
		if n <= s {
			t.Errorf("%s: network %.3f not above shm %.3f", row, n, s)
		}
	}
	if bw := 1000 / y(pts, 8, netSingle.name, rowGB); bw > 38 || bw < 30 {
		t.Errorf("network bandwidth %.1f MB/s: want just under the 38 MB/s bus", bw)
	}
}

// Figure 4: the components add up to the total; only the multi-protocol
// system's sends poll the network; the polling receiver makes the fill
// dearer than the base case's (the line goes back and forth).
func TestFig4(t *testing.T) {
	pts, res := run(t, "4")
	for _, r := range res {
		t.Logf("%s: paper %s, aaemu %s, holds %v", r.Claim.Text, r.Claim.Paper, r.Measured, r.Holds)
	}
	for _, c := range sendCases {
		sum := 0.0
		for _, comp := range fig4Comps[:len(fig4Comps)-1] {
			sum += y(pts, 32, c.name, comp)
		}
		if tot := y(pts, 32, c.name, compTotal); math.Abs(sum-tot) > 1e-6*tot || tot <= 0 {
			t.Errorf("%s: components %.1f, total %.1f", c.name, sum, tot)
		}
	}
	if v := y(pts, 32, sendCases[1].name, compPollNet); v != 0 {
		t.Errorf("shm single-protocol sends polled the network: %.1f cycles", v)
	}
	if v := y(pts, 32, sendCases[2].name, compPollNet); v <= 0 {
		t.Errorf("multi-protocol sends never polled the network")
	}
	if b, s := y(pts, 32, sendCases[0].name, compFill), y(pts, 32, sendCases[1].name, compFill); s <= b {
		t.Errorf("fill with a polling receiver %.0f cycles, without %.0f", s, b)
	}
}

// Polling: polling the network on every poll costs the shared-memory
// round trip most; an idle network poll costs several idle shm polls.
func TestPolling(t *testing.T) {
	pts, res := run(t, "polling")
	for _, r := range res {
		t.Logf("%s: paper %s, aaemu %s, holds %v", r.Claim.Text, r.Claim.Paper, r.Measured, r.Holds)
	}
	every, ad := y(pts, 8, "1/1", pollShmRTT), y(pts, 8, "adaptive", pollShmRTT)
	if every <= 1.5*ad {
		t.Errorf("shm round trip polling the network every time %.2f µs, adaptive %.2f", every, ad)
	}
	if s, n := y(pts, 8, "shm-only", pollIdle), y(pts, 8, "net-only", pollIdle); n < 5*s {
		t.Errorf("idle network poll %.3f µs, shm %.3f", n, s)
	}
	if v := y(pts, 8, "shm-only", pollNetRTT); v != 0 {
		t.Errorf("a shm-only system's network round trip: %.2f", v)
	}
}

// The bandwidth rises with the size on every system, and the network's
// stays under the I/O bus's.
func TestBandwidth(t *testing.T) {
	pts, _ := run(t, "bandwidth")
	for _, c := range columns {
		last := 0.0
		for _, x := range Reduced.Bandwidth {
			v := y(pts, x, "", workload.Scheme(c.name))
			if v <= last {
				t.Errorf("%s: %.1f MB/s at %d B after %.1f", c.name, v, x, last)
			}
			last = v
		}
		if c.path == netMulti.path && last > 38 {
			t.Errorf("%s: %.1f MB/s over the 38 MB/s bus", c.name, last)
		}
	}
}

// Machine builds the Clump: four E5000s of eight processors with three
// NIUs each, joined through the switch.
func TestMachine(t *testing.T) {
	spec, seed, err := Machine(4, 8, am2.ClumpNICs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := machine.New(sim.NewEngine(seed), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 4 || len(c.Nodes[0].Cores) != 8 || len(c.Nodes[3].NIUs) != 3 || c.Nodes[0].SMP == nil || c.StartXSwitch == nil {
		t.Errorf("%d nodes, %d cores, %d NIUs, SMP %v, switch %v", len(c.Nodes), len(c.Nodes[0].Cores), len(c.Nodes[3].NIUs), c.Nodes[0].SMP != nil, c.StartXSwitch != nil)
	}
	if two, _, _ := e5000(); two.Nodes != 2 || two.StartXNICs != 1 || two.StartX == nil {
		t.Errorf("the figures' machine: %d nodes, %d NIUs", two.Nodes, two.StartXNICs)
	}
}
