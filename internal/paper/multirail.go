package paper

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/lcp"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
)

// Multirail is seed 003's paper (Moreau, Taboada, Pérache: multirail MPC
// over BXI): Figure 5a, IMB PingPong and PingPing bandwidth against the
// message size over 1 to 4 NICs, and Figure 5b, LCP's RPUT against the
// RGET rendezvous of the previous MPC.
//
// The paper's messages go to 4 GB in 64 MB fragments; its claims depend on
// the number of fragments a message makes and the NICs they go over, so
// the figures run fragments of MultirailFragment (1 MB: the paper's 64 MB
// scaled by 1/64) and messages up to 64 of them (the paper's 4 GB),
// which simulates in minutes. Sizes below a fragment are the paper's own.
var Multirail = &Paper{Name: "multirail", Title: "Multirail MPC over BXI: LCP striping one rendezvous over up to four NICs (seed 003)",
	Figures: func() []*Figure { return multirailFigures(MultirailFragment, 64, lcp.OnPoll, lcp.Cycle, IOMMUOn) }}

// MultirailIOMMU says where the multirail nodes' IOMMU is.
type MultirailIOMMU uint8

const (
	// IOMMUOn: every NIC's DMA through the node's one IOMMU, pipelined
	// (lcp.MultirailSpec), as the paper's nodes have it. The default.
	IOMMUOn MultirailIOMMU = iota
	// IOMMUBypass: the IOMMU off the DMA path (no-iommu).
	IOMMUBypass
)

func (io MultirailIOMMU) String() string {
	switch io {
	case IOMMUOn:
		return "on"
	case IOMMUBypass:
		return "bypass"
	}
	return fmt.Sprintf("iommu%d", uint8(io))
}

// MultirailFragment is the fragment size of the multirail figures.
const MultirailFragment = 1 << 20

// MultirailMaxFragments bounds the fragments of the figures' largest
// message: 64, the paper's 4 GB of 64 MB fragments.
const MultirailMaxFragments = 64

// MultirailMaxMessage bounds the largest message (frag × fragments): the
// paper's 4 GB; a run holds each node's receive buffer in host memory.
const MultirailMaxMessage = 4 << 30

// MultirailAt is the multirail paper with fragments of frag bytes,
// messages up to maxFrags of them, and the NICs' matching units matching
// at m, fragments crossing the host side as bulk says (aaemu paper
// multirail --fragment, --fragments, --matching, --bulk), the IOMMU on
// the DMA path or bypassed as io says (--iommu). frag
// must be a positive multiple of the path MTU, as every fragment but the
// last fills whole packets; maxFrags a power of two in
// 1..MultirailMaxFragments, so that the sizes double up to it.
func MultirailAt(frag, maxFrags int, m lcp.Matching, bulk lcp.Bulk, io MultirailIOMMU) (*Paper, error) {
	mtu := lcp.MultirailSpec(1, true).NIC.PMTU
	switch {
	case frag <= 0:
		return nil, fmt.Errorf("--fragment %d: want a positive multiple of the path MTU (%d bytes)", frag, mtu)
	case frag%mtu != 0:
		return nil, fmt.Errorf("--fragment %d: not a multiple of the path MTU (%d bytes): every fragment but the last must fill whole packets", frag, mtu)
	case maxFrags < 1 || maxFrags > MultirailMaxFragments || maxFrags&(maxFrags-1) != 0:
		return nil, fmt.Errorf("--fragments %d: want a power of two in 1..%d", maxFrags, MultirailMaxFragments)
	case m != lcp.OnPoll && m != lcp.OnArrival:
		return nil, fmt.Errorf("--matching %s: want %s or %s", m, lcp.OnPoll, lcp.OnArrival)
	case bulk != lcp.Cycle && bulk != lcp.Batched:
		return nil, fmt.Errorf("--bulk %s: want %s or %s", bulk, lcp.Cycle, lcp.Batched)
	case io != IOMMUOn && io != IOMMUBypass:
		return nil, fmt.Errorf("--iommu %s: want %s or %s", io, IOMMUOn, IOMMUBypass)
	case int64(frag)*int64(maxFrags) > MultirailMaxMessage:
		return nil, fmt.Errorf("--fragment %d × --fragments %d: messages of %d bytes, want at most %d (4 GB, the paper's largest)", frag, maxFrags, int64(frag)*int64(maxFrags), MultirailMaxMessage)
	}
	q := *Multirail
	q.Figures = func() []*Figure { return multirailFigures(frag, maxFrags, m, bulk, io) }
	return &q, nil
}

func init() { Register(Multirail) }

// paperFragment is the paper's fragment, 64 MB: sizes in the claims are
// said in the paper's terms, scaled by frag/paperFragment.
const paperFragment = 64 << 20

// mrSeries is one curve of the multirail figures: the benchmark, the
// NICs, the rendezvous and the registration.
type mrSeries struct {
	bench string // PingPong or PingPing
	nics  int
	proto lcp.Protocol
	reg   lcp.Registration
}

func (s mrSeries) name() workload.Scheme {
	n := fmt.Sprintf("%s %d NIC", s.bench, s.nics)
	if s.nics > 1 {
		n += "s"
	}
	if s.proto == lcp.RGET {
		n += ", RGET"
	}
	if s.reg == lcp.PerNIC {
		n += ", one registration per NIC"
	}
	return workload.Scheme(n)
}

func parseSeries(s workload.Scheme, all []mrSeries) mrSeries {
	for _, x := range all {
		if x.name() == s {
			return x
		}
	}
	panic("multirail: unknown series " + string(s))
}

// mrSizes is IMB's sizes: 4 B, then powers of four to 8 KB (the first
// rendezvous), 16 KB and powers of four up to a fragment, then powers of
// two up to maxFrags fragments.
func mrSizes(frag, maxFrags int) []int {
	out := []int{4, 64, 1024, 4096, 8192, 16384}
	for s := 65536; s < frag; s *= 4 {
		out = append(out, s)
	}
	for k := 1; k <= maxFrags; k *= 2 {
		out = append(out, k*frag)
	}
	// A fragment below 16 KB makes some of IMB's sizes a fragment count.
	slices.Sort(out)
	return slices.Compact(out)
}

// multirailFigures builds Figures 5a and 5b and the rails figure with
// fragments of frag bytes, messages up to maxFrags fragments, and the
// matching units matching at m, the bulk path as bulk says, the IOMMU as
// io says.
func multirailFigures(frag, maxFrags int, m lcp.Matching, bulk lcp.Bulk, io MultirailIOMMU) []*Figure {
	var a []mrSeries
	for _, b := range []string{"PingPong", "PingPing"} {
		for n := 1; n <= 4; n++ {
			a = append(a, mrSeries{bench: b, nics: n, proto: lcp.RPUT, reg: lcp.PerFragment})
		}
	}
	for n := 1; n <= 2; n++ {
		a = append(a, mrSeries{bench: "PingPong", nics: n, proto: lcp.RPUT, reg: lcp.PerNIC})
	}
	b := []mrSeries{{bench: "PingPong", nics: 1, proto: lcp.RPUT, reg: lcp.PerFragment}, {bench: "PingPong", nics: 1, proto: lcp.RGET, reg: lcp.PerFragment}}
	var scale string
	switch {
	case frag == paperFragment:
		scale = fmt.Sprintf("the paper's fragments of 64 MB, up to %d of them", maxFrags)
	case paperFragment%frag == 0:
		scale = fmt.Sprintf("fragments of %s (the paper's 64 MB scaled by 1/%d), up to %d of them", mrSize(frag), paperFragment/frag, maxFrags)
	default:
		scale = fmt.Sprintf("fragments of %s (the paper's are 64 MB), up to %d of them", mrSize(frag), maxFrags)
	}
	if m == lcp.OnArrival {
		scale += ", matching on arrival in the NIC"
	}
	if bulk == lcp.Batched {
		scale += ", fragments by the bulk DMA path"
	}
	if io == IOMMUBypass {
		scale += ", the IOMMU bypassed"
	}
	names := func(ss []mrSeries) []workload.Scheme {
		var out []workload.Scheme
		for _, s := range ss {
			out = append(out, s.name())
		}
		return out
	}
	sizes := mrSizes(frag, maxFrags)
	run := func(all []mrSeries) func(ctx context.Context, x int, _ string, s workload.Scheme) (float64, error) {
		return func(ctx context.Context, x int, _ string, s workload.Scheme) (float64, error) {
			return imbBandwidth(ctx, parseSeries(s, all), frag, m, bulk, io, x)
		}
	}
	fa := &Figure{
		Name:  "5a",
		Title: "IMB PingPong and PingPing bandwidth over 1 to 4 NICs (100 Gb/s, PCIe Gen4 x16), LCP RPUT, " + scale,
		Custom: &Custom{X: sizes, Schemes: names(a), XLabel: "message size", XUnit: "bytes", LogX: true,
			YLabel: "bandwidth", YUnit: "MB/s", run: run(a)},
		PointClaims: mrClaimsA(frag, maxFrags),
	}
	// 5b goes to four fragments TLP by TLP (its curves meet well before);
	// through the bulk path, to the largest message, as the paper's.
	bFrags := min(maxFrags, 4)
	if bulk == lcp.Batched {
		bFrags = maxFrags
	}
	fb := &Figure{
		Name:  "5b",
		Title: "LCP's RPUT against the previous MPC's RGET, IMB PingPong over one NIC, " + scale,
		Custom: &Custom{X: mrSizes(frag, bFrags), Schemes: names(b), XLabel: "message size", XUnit: "bytes", LogX: true,
			YLabel: "bandwidth", YUnit: "MB/s", run: run(b)},
		PointClaims: mrClaimsB(),
	}
	return []*Figure{fa, fb, railsFigure(frag, m, bulk, io)}
}

// The rails figure: one message of railsFragments fragments from node 0
// to node 1 over 4 NICs, each NIC's wire bytes sampled every window (an
// eighth of a fragment's time at the 100 Gb/s line rate), for
// railsWindows windows (six fragment times: the four rounds and the
// rendezvous fit with room to spare).
const (
	railsNICs       = 4
	railsFragments  = 16
	railsPerFrag    = 8
	railsWindows    = 6 * railsPerFrag
	railsLineGBps   = 12.5 // 100 Gb/s
	railsBusyShare  = 0.5  // a rail is busy in a window carrying half its line rate
	railsTogetherOK = 0.5  // of the windows with any rail busy, the share with all busy: most (rails used in turn would have none)
)

// railsWindow is the sampling window for fragments of frag bytes: an
// eighth of a fragment's time on a 100 Gb/s wire (80 ps a byte).
func railsWindow(frag int) sim.Tick { return sim.Tick(frag) * 80 * sim.PS / railsPerFrag }

func railName(r int) workload.Scheme { return workload.Scheme(fmt.Sprintf("NIC %d", r)) }

// railsFigure plots each NIC's bandwidth over time while one message is
// striped over four: the rails busy together. It is not one of the
// paper's figures but the mechanism behind Figure 5a's scaling. Every
// point is a window of one run, simulated once (the first point asks).
func railsFigure(frag int, m lcp.Matching, bulk lcp.Bulk, io MultirailIOMMU) *Figure {
	win := railsWindow(frag)
	var xsNS []int
	for k := 1; k <= railsWindows; k++ {
		xsNS = append(xsNS, int((sim.Tick(k)*win)/sim.NS))
	}
	var names []workload.Scheme
	for r := 0; r < railsNICs; r++ {
		names = append(names, railName(r))
	}
	var (
		mu      sync.Mutex
		samples [][]uint64 // per window boundary, per NIC: wire bytes so far
		runErr  error
	)
	run := func(ctx context.Context, x int, _ string, s workload.Scheme) (float64, error) {
		mu.Lock()
		defer mu.Unlock()
		if samples == nil && runErr == nil {
			samples, runErr = railsRun(ctx, frag, m, bulk, io, win)
		}
		if runErr != nil {
			return 0, runErr
		}
		k := slices.Index(xsNS, x)
		r := slices.Index(names, s)
		d := samples[k+1][r] - samples[k][r]
		return float64(d) / float64(win) * 1e3, nil // bytes/ps × 1e12 / 1e9: GB/s
	}
	return &Figure{
		Name: "rails",
		Title: fmt.Sprintf("Each NIC's wire bandwidth over time, one %s message (%d fragments of %s) over %d NICs, in windows of %s µs (not a figure of the paper: the striping of 5a)",
			mrSize(railsFragments*frag), railsFragments, mrSize(frag), railsNICs, strconv.FormatFloat(float64(win)/float64(sim.US), 'g', 4, 64)),
		Custom: &Custom{X: xsNS, Schemes: names, XLabel: "time", XUnit: "ns", YLabel: "wire bandwidth", YUnit: "GB/s", run: run},
		PointClaims: []PointClaim{{Text: "the rails carry one message together", Paper: "fragments round-robin over the NICs after one rendezvous",
			Tolerance: fmt.Sprintf("in more than %.0f %% of the windows where any NIC sends ≥ %.0f %% of its line rate, all %d do", 100*railsTogetherOK, 100*railsBusyShare, railsNICs),
			Measure: func(pts []Point) (string, bool) {
				anyBusy, allBusy := 0, 0
				var total [railsNICs]float64
				for _, x := range xs(pts) {
					n := 0
					for r := 0; r < railsNICs; r++ {
						v := at(pts, x, railName(r))
						total[r] += v
						if v >= railsBusyShare*railsLineGBps {
							n++
						}
					}
					if n > 0 {
						anyBusy++
					}
					if n == railsNICs {
						allBusy++
					}
				}
				ok := anyBusy > 0 && float64(allBusy) > railsTogetherOK*float64(anyBusy)
				return fmt.Sprintf("all %d NICs busy in %d of the %d windows with any busy", railsNICs, allBusy, anyBusy), ok
			}}},
	}
}

// railsRun sends one message of railsFragments fragments from rank 0 to
// rank 1 over railsNICs NICs and samples node 0's per-NIC wire byte
// counters (machine.Node.RailBytes) at every window boundary, from the
// run's start, by a sampler on node 0's polling thread.
func railsRun(ctx context.Context, frag int, m lcp.Matching, bulk lcp.Bulk, io MultirailIOMMU, win sim.Tick) ([][]uint64, error) {
	c, err := machine.New(sim.NewEngine(1), lcp.MultirailSpec(railsNICs, io == IOMMUBypass))
	if err != nil {
		return nil, err
	}
	Configure(c)
	cfg := lcp.DefaultConfig()
	cfg.FragmentBytes, cfg.Matching, cfg.Bulk = frag, m, bulk
	size := railsFragments * frag
	var samples [][]uint64
	n0 := c.Nodes[0]
	n0.Poller.Spawn("rail-sampler", func(cp *cpu.Proc) {
		for k := 0; k <= railsWindows; k++ {
			row := make([]uint64, railsNICs)
			for r := range row {
				row[r] = n0.RailBytes(r)
			}
			samples = append(samples, row)
			if k < railsWindows {
				cp.Sleep(win)
			}
		}
	})
	var sendErr error
	ses, err := lcp.Start(c, cfg, func(p *lcp.Proc) {
		b := p.Alloc(size)
		var err error
		if p.Rank() == 0 {
			err = p.Send(b, 1, 1)
		} else {
			_, err = p.Recv(b, 0, 1)
		}
		if err != nil && sendErr == nil {
			sendErr = err
		}
	})
	if err != nil {
		return nil, err
	}
	name, _ := ctx.Value(nameKey{}).(string)
	if _, stopped := runctl.Run(ctx, c, name, cfg.Limit, nil); stopped {
		return nil, runctl.ErrInterrupted
	}
	if res, err := ses.Result(); err != nil {
		return nil, err
	} else if res.BulkOff != "" {
		return nil, fmt.Errorf("--bulk batched: %s", res.BulkOff)
	}
	if sendErr != nil {
		return nil, sendErr
	}
	// The run ends with the ranks, maybe before the last window: nothing
	// is sent after it, so the remaining boundaries hold the final counts.
	for len(samples) < railsWindows+1 {
		row := make([]uint64, railsNICs)
		for r := range row {
			row[r] = n0.RailBytes(r)
		}
		samples = append(samples, row)
	}
	return samples, nil
}

func mrSize(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// imbBandwidth runs one IMB point between two nodes: PingPong (rank 0
// sends, rank 1 sends it back; bandwidth = size / half the round trip) or
// PingPing (both send and receive at once; size / the iteration's time),
// in MB/s (10^6 bytes). Small messages are the mean of 8 iterations after
// a warm-up one; from 64 KB on, one iteration (the transfer dominates).
func imbBandwidth(ctx context.Context, s mrSeries, frag int, m lcp.Matching, bulk lcp.Bulk, io MultirailIOMMU, size int) (float64, error) {
	c, err := machine.New(sim.NewEngine(1), lcp.MultirailSpec(s.nics, io == IOMMUBypass))
	if err != nil {
		return 0, err
	}
	Configure(c)
	cfg := lcp.DefaultConfig()
	cfg.FragmentBytes, cfg.Protocol, cfg.Registration, cfg.Matching, cfg.Bulk = frag, s.proto, s.reg, m, bulk
	warm, iters := 1, 8
	if size >= 64<<10 {
		warm, iters = 0, 1
	}
	var elapsed sim.Tick
	var runErr error
	ses, err := lcp.Start(c, cfg, func(p *lcp.Proc) {
		me, peer := p.Rank(), 1-p.Rank()
		sb, rb := p.Alloc(size), p.Alloc(size)
		var t0 sim.Tick
		for i := 0; i < warm+iters; i++ {
			if i == warm {
				t0 = p.Now()
			}
			var err error
			switch {
			case s.bench == "PingPing":
				qs, e1 := p.Isend(sb, peer, 1)
				qr, e2 := p.Irecv(rb, peer, 1)
				if err = firstErr(e1, e2); err == nil {
					err = p.Waitall(qs, qr)
				}
			case me == 0:
				if err = p.Send(sb, peer, 1); err == nil {
					_, err = p.Recv(rb, peer, 1)
				}
			default:
				if _, err = p.Recv(rb, peer, 1); err == nil {
					err = p.Send(sb, peer, 1)
				}
			}
			if err != nil && runErr == nil {
				runErr = err
			}
		}
		if me == 0 {
			elapsed = p.Now() - t0
		}
	})
	if err != nil {
		return 0, err
	}
	name, _ := ctx.Value(nameKey{}).(string)
	if _, stopped := runctl.Run(ctx, c, name, cfg.Limit, nil); stopped {
		return 0, runctl.ErrInterrupted
	}
	if res, err := ses.Result(); err != nil {
		return 0, err
	} else if res.BulkOff != "" {
		return 0, fmt.Errorf("--bulk batched: %s", res.BulkOff)
	}
	if runErr != nil {
		return 0, runErr
	}
	per := float64(elapsed) / float64(iters) // ps per iteration
	if s.bench == "PingPong" {
		per /= 2
	}
	return float64(size) / per * 1e6, nil // bytes/ps × 1e12 / 1e6
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// mrAt is the series' value at size x.
func mrAt(pts []Point, x int, bench string, nics int, reg lcp.Registration) float64 {
	return at(pts, x, mrSeries{bench: bench, nics: nics, proto: lcp.RPUT, reg: reg}.name())
}

func pp(pts []Point, x, nics int) float64 { return mrAt(pts, x, "PingPong", nics, lcp.PerFragment) }

func mbs(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " MB/s" }

// near reports whether a and b are within tol of each other (relative
// to the larger).
func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(a, b) }

// mrClaimsA are the paper's claims on Figure 5a (M1–M4, M7–M9).
func mrClaimsA(frag, maxFrags int) []PointClaim {
	big := maxFrags * frag
	eq := func(frags int) string {
		return fmt.Sprintf("%s (%d fragments, the paper's %s)", mrSize(frags*frag), frags, mrSize(frags*paperFragment))
	}
	return []PointClaim{
		{Text: "M1 peak PingPong bandwidth with 4 NICs", Paper: "> 30,000 MB/s",
			Tolerance: "≥ 30,000 MB/s if one NIC reaches 8,800 MB/s, else ≥ 3.4 × one NIC",
			Measure: func(pts []Point) (string, bool) {
				p4, p1 := peak(pts, 4), peak(pts, 1)
				ok := p4 >= 30000
				if p1 < 8800 {
					ok = p4 >= 3.4*p1
				}
				return fmt.Sprintf("4 NICs %s, 1 NIC %s (%.2f×)", mbs(p4), mbs(p1), p4/p1), ok
			}},
		{Text: "M2 efficiency BW(n)/(n·BW(1)) at the largest size", Paper: "> 85 %", Tolerance: "≥ 85 % for n = 2, 3, 4 at " + eq(maxFrags),
			Measure: func(pts []Point) (string, bool) {
				ok := true
				var parts []string
				for n := 2; n <= 4; n++ {
					e := pp(pts, big, n) / (float64(n) * pp(pts, big, 1))
					// The rounds bound it: k fragments over n NICs take
					// ⌈k/n⌉ rounds, so at most k/(n⌈k/n⌉).
					bound := float64(maxFrags) / (float64(n) * math.Ceil(float64(maxFrags)/float64(n)))
					parts = append(parts, fmt.Sprintf("%d NICs %.0f %% (rounds allow %.0f %%)", n, 100*e, 100*bound))
					ok = ok && e >= 0.85
				}
				return strings.Join(parts, ", "), ok
			}},
		{Text: "M3 3 NICs as fast as 2 at 4 fragments (2 rounds each)", Paper: "equal at 256 MB", Tolerance: "within 5 % at " + eq(4),
			Measure: func(pts []Point) (string, bool) {
				if maxFrags < 4 {
					return "not in the sweep", false
				}
				a, b := pp(pts, 4*frag, 3), pp(pts, 4*frag, 2)
				return fmt.Sprintf("3 NICs %s, 2 NICs %s (%s)", mbs(a), mbs(b), pct(a/b)), near(a, b, 0.05)
			}},
		{Text: "M4 up to one fragment every NIC count alike", Paper: "limited overhead up to 64 MB", Tolerance: "2–4 NICs within 5 % of 1 NIC at every size ≤ " + mrSize(frag),
			Measure: func(pts []Point) (string, bool) {
				ok, worst, where := true, 0.0, 0
				for _, x := range xs(pts) {
					if x > frag {
						continue
					}
					for n := 2; n <= 4; n++ {
						d := math.Abs(pp(pts, x, n)/pp(pts, x, 1) - 1)
						if d > worst {
							worst, where = d, x
						}
						ok = ok && near(pp(pts, x, n), pp(pts, x, 1), 0.05)
					}
				}
				return fmt.Sprintf("largest difference %.1f %% (at %s)", 100*worst, mrSize(where)), ok
			}},
		{Text: "M7 steps of ⌈fragments/NICs⌉", Paper: "128 MB: 2, 3, 4 NICs equal; plateaus", Tolerance: "2, 3, 4 NICs within 5 % at " + eq(2) + "; BW(n)/BW(1) within 10 % of k/⌈k/n⌉ at every k ≥ 1",
			Measure: func(pts []Point) (string, bool) {
				ok := near(pp(pts, 2*frag, 2), pp(pts, 2*frag, 3), 0.05) && near(pp(pts, 2*frag, 2), pp(pts, 2*frag, 4), 0.05)
				worst, wk, wn := 0.0, 0, 0
				for k := 1; k <= maxFrags; k *= 2 {
					for n := 2; n <= 4; n++ {
						ideal := float64(k) / math.Ceil(float64(k)/float64(n))
						d := math.Abs(pp(pts, k*frag, n)/pp(pts, k*frag, 1)/ideal - 1)
						if d > worst {
							worst, wk, wn = d, k, n
						}
					}
				}
				ok = ok && worst <= 0.10
				return fmt.Sprintf("at 2 fragments 2/3/4 NICs %s/%s/%s; speed-up vs k/⌈k/n⌉ off by at most %.1f %% (%d fragments, %d NICs)",
					mbs(pp(pts, 2*frag, 2)), mbs(pp(pts, 2*frag, 3)), mbs(pp(pts, 2*frag, 4)), 100*worst, wk, wn), ok
			}},
		{Text: "M8 a dip near 2 GB for 1–2 NICs with a registration per fragment, none with one per NIC", Paper: "dip / no dip",
			Tolerance: "per fragment: BW at " + eq(32) + " ≥ 2 % below BW at 16 fragments for 1 and 2 NICs; per NIC: no such drop",
			Measure: func(pts []Point) (string, bool) {
				if maxFrags < 32 {
					return "not in the sweep (fewer than 32 fragments)", false
				}
				ok := true
				var parts []string
				for n := 1; n <= 2; n++ {
					for _, reg := range []lcp.Registration{lcp.PerFragment, lcp.PerNIC} {
						d := mrAt(pts, 32*frag, "PingPong", n, reg)/mrAt(pts, 16*frag, "PingPong", n, reg) - 1
						dip := d <= -0.02
						ok = ok && dip == (reg == lcp.PerFragment)
						parts = append(parts, fmt.Sprintf("%d NIC %s %+.2f %%", n, reg, 100*d))
					}
				}
				return "16 → 32 fragments: " + strings.Join(parts, ", "), ok
			}},
		{Text: "M9 PingPing ≤ PingPong per direction", Paper: "≤ (Figure 5)", Tolerance: "at every size and NIC count, PingPing ≤ PingPong + 0.5 %",
			Measure: func(pts []Point) (string, bool) {
				ok, worst, wx, wn := true, math.Inf(-1), 0, 0
				for _, x := range xs(pts) {
					for n := 1; n <= 4; n++ {
						r := mrAt(pts, x, "PingPing", n, lcp.PerFragment) / pp(pts, x, n)
						if r > worst {
							worst, wx, wn = r, x, n
						}
						ok = ok && r <= 1.005
					}
				}
				return fmt.Sprintf("PingPing/PingPong at most %.3f (%s, %d NICs)", worst, mrSize(wx), wn), ok
			}},
	}
}

// peak is the PingPong series' highest bandwidth.
func peak(pts []Point, nics int) float64 {
	best := 0.0
	for _, x := range xs(pts) {
		best = max(best, pp(pts, x, nics))
	}
	return best
}

// mrClaimsB are the paper's claims on Figure 5b (M5, M6).
func mrClaimsB() []PointClaim {
	rput := mrSeries{bench: "PingPong", nics: 1, proto: lcp.RPUT, reg: lcp.PerFragment}.name()
	rget := mrSeries{bench: "PingPong", nics: 1, proto: lcp.RGET, reg: lcp.PerFragment}.name()
	return []PointClaim{
		{Text: "M5 below 8 KB (eager) LCP as the previous MPC", Paper: "no overhead", Tolerance: "within 5 % at every size < 8 KB",
			Measure: func(pts []Point) (string, bool) {
				ok, worst := true, 0.0
				for _, x := range xs(pts) {
					if x < 8192 {
						a, b := at(pts, x, rput), at(pts, x, rget)
						worst = max(worst, math.Abs(a/b-1))
						ok = ok && near(a, b, 0.05)
					}
				}
				return fmt.Sprintf("largest difference %.2f %%", 100*worst), ok
			}},
		{Text: "M6 from 8 KB RPUT slower than RGET", Paper: "degradation above 8 KB", Tolerance: "RGET ≥ RPUT at every size ≥ 8 KB",
			Measure: func(pts []Point) (string, bool) {
				ok := true
				var parts []string
				for _, x := range xs(pts) {
					if x >= 8192 {
						a, b := at(pts, x, rput), at(pts, x, rget)
						ok = ok && b >= a
						parts = append(parts, fmt.Sprintf("%s %s", mrSize(x), pct(a/b)))
					}
				}
				return "RPUT vs RGET: " + strings.Join(parts, ", "), ok
			}},
	}
}
