package am2paper

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
	"github.com/aaemu/aaemu/workload/micro"
)

func us(t sim.Tick) float64 { return float64(t) / float64(sim.US) }

func within(x, lo, hi float64) bool { return x >= lo && x <= hi }

// y is the value of series s in category cat at x (NaN if absent).
func y(pts []paper.Point, x int, cat string, s workload.Scheme) float64 {
	for _, p := range pts {
		if p.X == x && p.Category == cat && p.Scheme == s {
			return p.Y
		}
	}
	return math.NaN()
}

// Table 2's rows (the series of the table2 figure).
const (
	rowL   workload.Scheme = "L"
	rowOs  workload.Scheme = "o_s"
	rowOr  workload.Scheme = "o_r"
	rowG   workload.Scheme = "g"
	rowGB  workload.Scheme = "G (ns/byte)"
	rowRTT workload.Scheme = "RTT"
)

var table2Rows = []workload.Scheme{rowL, rowOs, rowOr, rowG, rowGB, rowRTT}

func columnNames() []string {
	var out []string
	for _, c := range columns {
		out = append(out, c.name)
	}
	return out
}

// cell is a Table 2 cell as aaemu measures it.
func cell(l micro.LogGP, r workload.Scheme) float64 {
	switch r {
	case rowL:
		return float64(l.L) / float64(sim.US)
	case rowOs:
		return us(l.Os)
	case rowOr:
		return us(l.Or)
	case rowG:
		return us(l.Gap)
	case rowGB:
		return l.G / 1000
	}
	return us(l.RTT)
}

// The columns by name, for the claims.
var (
	shmSingle = columns[0]
	shmMulti  = columns[1]
	netMulti  = columns[2]
	netSingle = columns[3]
)

// table2Figure is Table 2 (000:L135–L145): the LogGP parameters and the
// round trip of AM-II's four systems, each measured by aaemu micro loggp
// --layer am2 (a short message of 8 bytes, two arguments; G from bulk
// transfers of 64 and 256 kB in 8 kB chunks).
func table2Figure(z Sizes) *paper.Figure {
	return &paper.Figure{
		Name:  "table2",
		Title: fmt.Sprintf("LogGP and round trip of AM-II, shared memory and Myrinet, single- and multi-protocol (two E5000s, %d iterations)", z.Iters),
		Custom: paper.NewCustom(paper.Custom{
			X: []int{8}, XLabel: "message size", XUnit: "bytes",
			Categories: columnNames(), CategoryLabel: "system", Schemes: table2Rows,
			YLabel: "time", YUnit: "µs; G in ns/byte",
		}, func(_ context.Context, _ int, col string, r workload.Scheme) (float64, error) {
			c, err := columnNamed(col)
			if err != nil {
				return 0, err
			}
			l, err := logGP(c, z.Iters)
			if err != nil {
				return 0, err
			}
			return cell(l, r), nil
		}),
		PointClaims: []paper.PointClaim{
			{Text: "A1 shm single-protocol round trip, one way", Paper: "5.6 µs, 2.8 µs", Tolerance: "±20 % (4.48–6.72 µs)", Measure: func(pts []paper.Point) (string, bool) {
				r := y(pts, 8, shmSingle.name, rowRTT)
				return fmt.Sprintf("%.2f µs, %.2f µs", r, r/2), within(r, 4.48, 6.72)
			}},
			{Text: "A2 shm multi-protocol round trip, one way", Paper: "7.2 µs, 3.6 µs", Tolerance: "±20 % (5.76–8.64 µs)", Measure: func(pts []paper.Point) (string, bool) {
				r := y(pts, 8, shmMulti.name, rowRTT)
				return fmt.Sprintf("%.2f µs, %.2f µs", r, r/2), within(r, 5.76, 8.64)
			}},
			{Text: "A3 adaptive polling raises the shm round trip by", Paper: "+29 % (7.2/5.6)", Tolerance: "+15 % to +45 %", Measure: func(pts []paper.Point) (string, bool) {
				r := y(pts, 8, shmMulti.name, rowRTT) / y(pts, 8, shmSingle.name, rowRTT)
				return fmt.Sprintf("%+.0f %%", 100*(r-1)), within(r, 1.15, 1.45)
			}},
			{Text: "A4 adaptive polling raises shm o_s, o_r by", Paper: "+0.3 µs, +0.1 µs", Tolerance: "each 0 to +0.5 µs", Measure: func(pts []paper.Point) (string, bool) {
				ds := y(pts, 8, shmMulti.name, rowOs) - y(pts, 8, shmSingle.name, rowOs)
				dr := y(pts, 8, shmMulti.name, rowOr) - y(pts, 8, shmSingle.name, rowOr)
				return fmt.Sprintf("%+.2f µs, %+.2f µs", ds, dr), within(ds, 0, 0.5) && within(dr, 0, 0.5)
			}},
			{Text: "A5 network round trip / shm round trip, multi-protocol", Paper: "7.6× (55/7.2)", Tolerance: "5× to 12×", Measure: func(pts []paper.Point) (string, bool) {
				r := y(pts, 8, netMulti.name, rowRTT) / y(pts, 8, shmMulti.name, rowRTT)
				return fmt.Sprintf("%.1f× (%.1f / %.2f µs)", r, y(pts, 8, netMulti.name, rowRTT), y(pts, 8, shmMulti.name, rowRTT)), within(r, 5, 12)
			}},
			{Text: "Table 2 network round trip, multi- and single-protocol", Paper: "55 µs, 55 µs", Tolerance: "±20 % (44–66 µs) each", Measure: func(pts []paper.Point) (string, bool) {
				a, b := y(pts, 8, netMulti.name, rowRTT), y(pts, 8, netSingle.name, rowRTT)
				return fmt.Sprintf("%.1f µs, %.1f µs", a, b), within(a, 44, 66) && within(b, 44, 66)
			}},
			{Text: "A8 network g and round trip unchanged by multi-protocol; o_s lower, o_r higher", Paper: "g 17.6/17.6 µs, RTT 55/55 µs; o_s −2.3 µs, o_r +0.5 µs", Tolerance: "g, RTT within 5 %; the signs of the o changes", Measure: func(pts []paper.Point) (string, bool) {
				gm, gs := y(pts, 8, netMulti.name, rowG), y(pts, 8, netSingle.name, rowG)
				rm, rs := y(pts, 8, netMulti.name, rowRTT), y(pts, 8, netSingle.name, rowRTT)
				ds := y(pts, 8, netMulti.name, rowOs) - y(pts, 8, netSingle.name, rowOs)
				dr := y(pts, 8, netMulti.name, rowOr) - y(pts, 8, netSingle.name, rowOr)
				return fmt.Sprintf("g %.2f/%.2f µs, RTT %.2f/%.2f µs; o_s %+.2f µs, o_r %+.2f µs", gm, gs, rm, rs, ds, dr),
					math.Abs(gm/gs-1) <= 0.05 && math.Abs(rm/rs-1) <= 0.05 && ds < 0 && dr > 0
			}},
			{Text: "A6 shm bulk bandwidth / network bulk bandwidth (1/G, shm multi / Myrinet single)", Paper: "5.0× (160/31.7 MB/s)", Tolerance: "4× to 6.5×", Measure: func(pts []paper.Point) (string, bool) {
				s, n := 1000/y(pts, 8, shmMulti.name, rowGB), 1000/y(pts, 8, netSingle.name, rowGB)
				return fmt.Sprintf("%.1f× (%.0f / %.1f MB/s)", s/n, s, n), within(s/n, 4, 6.5)
			}},
			{Text: "A7 shm peak bandwidth (1/G), single / multi", Paper: "166 / 160 MB/s (−4 %)", Tolerance: "each ±15 %; multi ≤ single", Measure: func(pts []paper.Point) (string, bool) {
				s, m := 1000/y(pts, 8, shmSingle.name, rowGB), 1000/y(pts, 8, shmMulti.name, rowGB)
				return fmt.Sprintf("%.0f / %.0f MB/s (%+.1f %%)", s, m, 100*(m/s-1)), within(s, 141, 191) && within(m, 136, 184) && m <= s
			}},
			{Text: "Table 2 network bandwidth (1/G), multi / single", Paper: "32.8 / 31.7 MB/s", Tolerance: "each ±15 %", Measure: func(pts []paper.Point) (string, bool) {
				m, s := 1000/y(pts, 8, netMulti.name, rowGB), 1000/y(pts, 8, netSingle.name, rowGB)
				return fmt.Sprintf("%.1f / %.1f MB/s", m, s), within(m, 27.9, 37.7) && within(s, 26.9, 36.5)
			}},
		},
	}
}

// Figure 4's components (the series of the fig4 figure).
const (
	compPoll    workload.Scheme = "shm poll"
	compPollNet workload.Scheme = "network poll"
	compCheck   workload.Scheme = "tag check"
	compTail    workload.Scheme = "tail (load, CAS)"
	compClaim   workload.Scheme = "slot claim (CAS, the packet line's miss)"
	compFill    workload.Scheme = "packet fill and mark ready"
	compTotal   workload.Scheme = "total"
)

var fig4Comps = []workload.Scheme{compPoll, compPollNet, compCheck, compTail, compClaim, compFill, compTotal}

func sendCaseNames() []string {
	var out []string
	for _, c := range sendCases {
		out = append(out, c.name)
	}
	return out
}

// fig4Figure is Figure 4 (000:L149–L155): where the time of a short send
// goes, in cycles of the 167 MHz core, for a packet line the receiver does
// not hold, and on the shm single- and multi-protocol systems.
func fig4Figure(z Sizes) *paper.Figure {
	return &paper.Figure{
		Name:  "4",
		Title: fmt.Sprintf("The send overhead of a short request (8 arguments) inside an E5000 by component, in 167 MHz cycles (mean of %d sends)", z.Sends),
		Custom: paper.NewCustom(paper.Custom{
			X: []int{32}, XLabel: "argument bytes", XUnit: "bytes",
			Categories: sendCaseNames(), CategoryLabel: "case", Schemes: fig4Comps,
			YLabel: "send overhead", YUnit: "cycles",
		}, func(_ context.Context, _ int, name string, comp workload.Scheme) (float64, error) {
			var sc sendCase
			for _, c := range sendCases {
				if c.name == name {
					sc = c
				}
			}
			cost, err := sendCost(sc, z.Sends)
			if err != nil {
				return 0, err
			}
			spec, _, err := e5000()
			if err != nil {
				return 0, err
			}
			cyc := func(t sim.Tick) float64 {
				return float64(t) / float64(spec.CPU.PeriodPS) / float64(max(cost.Sends, 1))
			}
			switch comp {
			case compPoll:
				return cyc(cost.Poll - cost.PollNet), nil
			case compPollNet:
				return cyc(cost.PollNet), nil
			case compCheck:
				return cyc(cost.Check), nil
			case compTail:
				return cyc(cost.Tail), nil
			case compClaim:
				return cyc(cost.Claim), nil
			case compFill:
				return cyc(cost.Fill), nil
			}
			return cyc(cost.Total()), nil
		}),
		PointClaims: []paper.PointClaim{
			{Text: "A9 base send: the tail, the packet line's miss (in aaemu the slot claim's CAS takes it) and the fill; the seed's also has 20 cycles of argument set-up and call, instructions aaemu does not charge", Paper: "108 cycles", Tolerance: "±10 % (97–119)", Measure: func(pts []paper.Point) (string, bool) {
				b := sendCases[0].name
				v := y(pts, 32, b, compTail) + y(pts, 32, b, compClaim) + y(pts, 32, b, compFill)
				return fmt.Sprintf("%.0f cycles (the whole send %.0f)", v, y(pts, 32, b, compTotal)), within(v, 97, 119)
			}},
			{Text: "A9 shm single-protocol send overhead", Paper: "299 cycles", Tolerance: "±10 % (269–329)", Measure: func(pts []paper.Point) (string, bool) {
				v := y(pts, 32, sendCases[1].name, compTotal)
				return fmt.Sprintf("%.0f cycles", v), within(v, 269, 329)
			}},
			{Text: "A9 multi-protocol send overhead", Paper: "345 cycles", Tolerance: "±10 % (311–380)", Measure: func(pts []paper.Point) (string, bool) {
				v := y(pts, 32, sendCases[2].name, compTotal)
				return fmt.Sprintf("%.0f cycles", v), within(v, 311, 380)
			}},
			{Text: "A9 shares of the multi-protocol send: concurrency (the two CAS, tail and slot claim), polls", Paper: "13 %, 26 %", Tolerance: "each ±5 points", Measure: func(pts []paper.Point) (string, bool) {
				m := sendCases[2].name
				t := y(pts, 32, m, compTotal)
				cas := (y(pts, 32, m, compTail) + y(pts, 32, m, compClaim)) / t
				polls := (y(pts, 32, m, compPoll) + y(pts, 32, m, compPollNet)) / t
				return fmt.Sprintf("%.0f %%, %.0f %%", 100*cas, 100*polls), within(cas, 0.08, 0.18) && within(polls, 0.21, 0.31)
			}},
		},
	}
}

// The bandwidth figure's series: the four systems.
func columnSchemes() []workload.Scheme {
	var out []workload.Scheme
	for _, c := range columns {
		out = append(out, workload.Scheme(c.name))
	}
	return out
}

// bandwidthFigure is the bandwidth of a one-way transfer against its size
// (ping-pong, 8 kB bulk chunks pipelined) and the half-power points of
// Table 2 (000:L135–L145).
func bandwidthFigure(z Sizes) *paper.Figure {
	half := func(pts []paper.Point, c column) (float64, float64) {
		var pp []micro.PingPongPoint
		for _, p := range pts {
			if p.Scheme == workload.Scheme(c.name) {
				pp = append(pp, micro.PingPongPoint{Bytes: p.X, MBps: p.Y})
			}
		}
		return micro.HalfPower(pp)
	}
	claim := func(id string, a, b column) paper.PointClaim {
		return paper.PointClaim{
			Text: fmt.Sprintf("%s half-power point, %s and %s", id, a.name, b.name), Paper: fmt.Sprintf("%.1f kB, %.1f kB", a.half/1e3, b.half/1e3),
			Tolerance: "±30 % each",
			Measure: func(pts []paper.Point) (string, bool) {
				ha, pa := half(pts, a)
				hb, pb := half(pts, b)
				return fmt.Sprintf("%.2f kB (peak %.0f MB/s), %.2f kB (peak %.1f MB/s)", ha/1e3, pa, hb/1e3, pb),
					within(ha, 0.7*a.half, 1.3*a.half) && within(hb, 0.7*b.half, 1.3*b.half)
			},
		}
	}
	return &paper.Figure{
		Name:  "bandwidth",
		Title: fmt.Sprintf("Bandwidth of a one-way transfer against its size, %d B to %d kB (ping-pong; bulk in 8 kB chunks), and the half-power points", z.Bandwidth[0], z.Bandwidth[len(z.Bandwidth)-1]>>10),
		Custom: paper.NewCustom(paper.Custom{
			X: z.Bandwidth, Schemes: columnSchemes(), XLabel: "message size", XUnit: "bytes", LogX: true,
			YLabel: "bandwidth", YUnit: "MB/s",
		}, func(_ context.Context, n int, _ string, s workload.Scheme) (float64, error) {
			c, err := columnNamed(string(s))
			if err != nil {
				return 0, err
			}
			pp, err := pingPong(c, z.Bandwidth)
			if err != nil {
				return 0, err
			}
			for _, p := range pp {
				if p.Bytes == n {
					return p.MBps, nil
				}
			}
			return 0, fmt.Errorf("am2: no ping-pong point of %d bytes", n)
		}),
		PointClaims: []paper.PointClaim{claim("A11 shm", shmSingle, shmMulti), claim("A11 network", netMulti, netSingle)},
	}
}

// The polling figure's categories: the policies on the multi-protocol
// system, and the single-protocol systems.
var pollPolicies = []am2.Policy{{Protocols: am2.ShmOnly}, {Every: 1}, {Every: 8}, {Every: 32}, {}, {Protocols: am2.NetOnly}}

func policyNames() []string {
	var out []string
	for _, p := range pollPolicies {
		out = append(out, p.String())
	}
	return out
}

const (
	pollShmRTT workload.Scheme = "shm round trip"
	pollNetRTT workload.Scheme = "network round trip"
	pollIdle   workload.Scheme = "idle poll"
)

// pollingFigure is the polling policies (000:L110–L114, L121): the round
// trip of a short message inside an E5000 and between two under each,
// and the time of a poll that finds nothing, shared memory and network.
func pollingFigure(z Sizes) *paper.Figure {
	return &paper.Figure{
		Name:  "polling",
		Title: fmt.Sprintf("Polling: the round trip of an 8-byte message inside an E5000 and between two, by polling policy (0: the system does not reach that path), and the mean time of an idle poll (%d iterations)", z.Iters),
		Custom: paper.NewCustom(paper.Custom{
			X: []int{8}, XLabel: "message size", XUnit: "bytes",
			Categories: policyNames(), CategoryLabel: "policy", Schemes: []workload.Scheme{pollShmRTT, pollNetRTT, pollIdle},
			YLabel: "time", YUnit: "µs",
		}, func(_ context.Context, _ int, name string, s workload.Scheme) (float64, error) {
			pol, err := am2.ParsePolicy(name)
			if err != nil {
				return 0, err
			}
			if s == pollIdle {
				d, err := idlePoll(pol, z.Polls)
				return us(d), err
			}
			path := micro.IntraNode
			if s == pollNetRTT {
				path = micro.InterNode
			}
			if (path == micro.IntraNode && pol.Protocols == am2.NetOnly) || (path == micro.InterNode && pol.Protocols == am2.ShmOnly) {
				return 0, nil // the system does not reach the path
			}
			c := column{name: "polling " + name + " " + string(path), path: path, policy: pol}
			cfg, err := c.config(z.Iters)
			if err != nil {
				return 0, err
			}
			pp, err := pingPongCfg(c.name, cfg)
			if err != nil {
				return 0, err
			}
			return us(pp.RoundTrip), nil
		}),
		PointClaims: []paper.PointClaim{
			{Text: "A10 an idle network poll / an idle shm poll", Paper: "≈10× (152 cycles vs a handful)", Tolerance: "5× to 30×", Measure: func(pts []paper.Point) (string, bool) {
				s, n := y(pts, 8, am2.ShmOnly.String(), pollIdle), y(pts, 8, am2.NetOnly.String(), pollIdle)
				return fmt.Sprintf("%.1f× (%.3f / %.3f µs)", n/s, n, s), within(n/s, 5, 30)
			}},
			{Text: "A12 adaptive polling: shm round trip over shm-only, and the best of the multi-protocol policies", Paper: "≤ 12 % over shm-only; adaptive best for shm-bound runs", Tolerance: "≤ +12 %; no fixed 1/k faster by more than 5 %", Measure: func(pts []paper.Point) (string, bool) {
				base, ad := y(pts, 8, am2.ShmOnly.String(), pollShmRTT), y(pts, 8, "adaptive", pollShmRTT)
				var parts []string
				best := true
				for _, p := range pollPolicies {
					if p.Protocols != am2.Multi || p.Every == 0 {
						continue
					}
					v := y(pts, 8, p.String(), pollShmRTT)
					parts = append(parts, fmt.Sprintf("%s %.2f", p, v))
					if v < 0.95*ad {
						best = false
					}
				}
				return fmt.Sprintf("adaptive %+.0f %% (%.2f vs %.2f µs; %s)", 100*(ad/base-1), ad, base, strings.Join(parts, ", ")), ad <= 1.12*base && best
			}},
		},
	}
}

var pingPongCfgs memo[micro.PingPongPoint]

// pingPongCfg is the 8-byte round trip on cfg, once per key.
func pingPongCfg(key string, cfg micro.Config) (micro.PingPongPoint, error) {
	return pingPongCfgs.get(key, func() (micro.PingPongPoint, error) {
		pp, err := micro.PingPong(cfg, []int{8})
		if err != nil {
			return micro.PingPongPoint{}, err
		}
		return pp[0], nil
	})
}
