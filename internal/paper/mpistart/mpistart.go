// Package mpistart is the MPI-StarT paper (seed 001, Husbands and Hoe) as
// aaemu paper mpi-start: its figures and tables as experiments on two Sun
// E5000 SMPs joined by StarT-X, with the paper's claims (S1–S14 of the
// reference) checked against what they measure; Figure 3 and Table 5 run
// the application stand-ins of workload/mpiapp (apps.go).
//
// Where the paper's absolute times include MPICH's software layers, which
// aaemu's MPI core does not have, the claims compare ratios (Table 3's
// original/two-stage, its growth per doubling, Figure 1's latency ratio)
// and the absolute ones say so. The figures run on reduced sizes with
// aaemu paper --reduced, as the test suite runs them.
package mpistart

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/workload"
	"github.com/aaemu/aaemu/workload/mpiapp"
)

func init() {
	paper.Register(&paper.Paper{
		Name:    "mpi-start",
		Title:   "MPI-StarT (Husbands and Hoe): MPICH over Sun E5000 SMPs joined by the StarT-X NIU",
		Figures: func() []*paper.Figure { return figures(full) },
		Reduced: func() []*paper.Figure { return figures(reduced) },
	})
}

// sizes are what the figures run on: the paper's, or reduced ones that
// keep every mechanism (above the crossover, across a chunk) and take
// seconds.
type sizes struct {
	fig1, crossover []int // message sizes
	pers            []int // Table 3's ranks per SMP
	bcast           int   // Table 3's message
	chunk           int   // the pinned buffer a long message moves through, in turns
	chunkX          []int // message sizes around it
	exchange        int
	mmN, mmPer      int            // Figure 3's matrix order and ranks per SMP
	svdP            []int          // Table 5's ranks
	lanczos         mpiapp.Lanczos // Table 5's stand-in
}

var full = sizes{
	fig1:      []int{8, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20},
	crossover: []int{256, 512, 1 << 10, 1536, 2 << 10, 3 << 10, 4 << 10, 6 << 10, 8 << 10},
	pers:      []int{1, 2, 4, 8},
	bcast:     1 << 20,
	chunk:     16 << 20,
	chunkX:    []int{4 << 20, 16 << 20, 32 << 20},
	exchange:  1 << 20,
	mmN:       1024,
	mmPer:     4,
	svdP:      []int{2, 4, 8},
	lanczos:   mpiapp.Lanczos{N: 10000, NNZ: 100, Steps: 4, Seed: 1},
}

var reduced = sizes{
	fig1:      []int{8, 1 << 10, 64 << 10},
	crossover: []int{1 << 10, 2 << 10, 4 << 10},
	pers:      []int{1, 2, 4},
	bcast:     8 << 10,
	chunk:     64 << 10,
	chunkX:    []int{32 << 10, 64 << 10, 128 << 10},
	exchange:  100_000,
	mmN:       128,
	mmPer:     2,
	svdP:      []int{2, 4},
	lanczos:   mpiapp.Lanczos{N: 2000, NNZ: 20, Steps: 2, Seed: 1},
}

// The series (Custom figures name them as schemes).
const (
	shm     workload.Scheme = "intra-SMP (shared memory)"
	network workload.Scheme = "inter-SMP (MPI-StarT)"
	raw     workload.Scheme = "raw RDMA (NIU)"
	pio     workload.Scheme = "PIO (eager to 64 KB)"
	rdma    workload.Scheme = "RDMA (rendezvous from 1 byte)"

	origBlock = workload.Scheme("original, block")
	twoBlock  = workload.Scheme("two-stage, block")
	origRR    = workload.Scheme("original, round-robin")
	twoRR     = workload.Scheme("two-stage, round-robin")

	send   workload.Scheme = "send"
	recv   workload.Scheme = "receive"
	oneWay workload.Scheme = "one way"

	tie   workload.Scheme = "tie-break"
	noTie workload.Scheme = "no tie-break"
)

// Table 1's rows (001:L89).
var table1Rows = []string{"a: 16 B, 8-byte accesses", "b: 64 B, 8-byte accesses", "c: 64 B, stda/ldda"}

func figures(z sizes) []*paper.Figure {
	return []*paper.Figure{figure1(z), crossoverFigure(z), table1Figure(), table3Figure(z), chunksFigure(z), exchangeFigure(z), figure3(z), table5Figure(z)}
}

// reps is the round trips a ping-pong of n bytes averages over.
func reps(n int) int {
	switch {
	case n <= 4<<10:
		return 4
	case n <= 256<<10:
		return 2
	}
	return 1
}

func us(t sim.Tick) float64 { return float64(t) / float64(sim.US) }

// mbps is n bytes in t, in MB/s (10⁶ bytes).
func mbps(n int, t sim.Tick) float64 { return float64(n) / us(t) }

// y is the value of series s at x (NaN if absent).
func y(pts []paper.Point, x int, cat string, s workload.Scheme) float64 {
	for _, p := range pts {
		if p.X == x && p.Category == cat && p.Scheme == s {
			return p.Y
		}
	}
	return math.NaN()
}

// peak is the largest value of series s, and where.
func peak(pts []paper.Point, s workload.Scheme) (float64, int) {
	best, at := math.Inf(-1), 0
	for _, p := range pts {
		if p.Scheme == s && p.Y > best {
			best, at = p.Y, p.X
		}
	}
	return best, at
}

func within(x, lo, hi float64) bool { return x >= lo && x <= hi }

func bytesName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// figure1 is Figure 1 (001:L121–L123): MPI ping-pong bandwidth against
// the message size inside an SMP and between two, with the NIU's raw RDMA
// for reference.
func figure1(z sizes) *paper.Figure {
	small := z.fig1[0]
	return &paper.Figure{
		Name:  "1",
		Title: fmt.Sprintf("MPI ping-pong bandwidth, %s to %s: inside an E5000 (shared memory) and between two (MPI-StarT), and the NIU's raw RDMA", bytesName(z.fig1[0]), bytesName(z.fig1[len(z.fig1)-1])),
		Custom: paper.NewCustom(paper.Custom{
			X: z.fig1, Schemes: []workload.Scheme{shm, network, raw},
			XLabel: "message size", XUnit: "bytes", LogX: true, YLabel: "bandwidth", YUnit: "MB/s",
		}, func(ctx context.Context, n int, _ string, s workload.Scheme) (float64, error) {
			var t sim.Tick
			var err error
			if s == raw {
				t, err = rawRDMA(ctx, n)
			} else {
				t, err = pingPong(ctx, n, s == shm, reps(n), mpi.StartXConfig{})
			}
			return mbps(n, t), err
		}),
		PointClaims: []paper.PointClaim{
			{Text: "S3 raw RDMA bandwidth, blocks over 16 KB", Paper: "≈60 MB/s", Tolerance: "54–66 MB/s at every block over 16 KB", Measure: func(pts []paper.Point) (string, bool) {
				lo, hi := math.Inf(1), math.Inf(-1)
				for _, p := range pts {
					if p.Scheme == raw && p.X > 16<<10 {
						lo, hi = min(lo, p.Y), max(hi, p.Y)
					}
				}
				if math.IsInf(lo, 1) {
					return "no block over 16 KB", false
				}
				return fmt.Sprintf("%.1f–%.1f MB/s", lo, hi), within(lo, 54, 66) && within(hi, 54, 66)
			}},
			{Text: "S4 MPI bandwidth between SMPs, peak", Paper: "56 MB/s (≤ raw RDMA)", Tolerance: "±15 % (47.6–64.4 MB/s), not above raw RDMA's peak", Measure: func(pts []paper.Point) (string, bool) {
				p, at := peak(pts, network)
				r, _ := peak(pts, raw)
				return fmt.Sprintf("%.1f MB/s at %s (raw RDMA %.1f)", p, bytesName(at), r), within(p, 47.6, 64.4) && p <= r
			}},
			{Text: "S5 MPI bandwidth inside an SMP, peak", Paper: "> 150 MB/s", Tolerance: "≥ 130 MB/s", Measure: func(pts []paper.Point) (string, bool) {
				p, at := peak(pts, shm)
				return fmt.Sprintf("%.1f MB/s at %s", p, bytesName(at)), p >= 130
			}},
			{Text: "S6 intra/inter peak bandwidth", Paper: "> 2× (≈2.7)", Tolerance: "2×–3.5×", Measure: func(pts []paper.Point) (string, bool) {
				a, _ := peak(pts, shm)
				b, _ := peak(pts, network)
				return fmt.Sprintf("%.2f×", a/b), within(a/b, 2, 3.5)
			}},
			{Text: fmt.Sprintf("S7 small-message latency (%s one way), shared memory vs network; the paper's include MPICH's layers", bytesName(small)), Paper: "18 µs vs 32 µs", Tolerance: "each ±25 %, the network slower", Measure: func(pts []paper.Point) (string, bool) {
				s, n := float64(small)/y(pts, small, "", shm), float64(small)/y(pts, small, "", network)
				return fmt.Sprintf("%.1f µs vs %.1f µs", s, n), within(s, 13.5, 22.5) && within(n, 24, 40) && n > s
			}},
			{Text: "S7 as a ratio: network / shared-memory small-message latency", Paper: "1.78× (32/18)", Tolerance: "±25 % (1.33×–2.22×)", Measure: func(pts []paper.Point) (string, bool) {
				r := y(pts, small, "", shm) / y(pts, small, "", network)
				return fmt.Sprintf("%.2f×", r), within(r, 1.33, 2.22)
			}},
		},
	}
}

// crossoverFigure sweeps the message size over the PIO→RDMA crossover
// between SMPs: the one-way time with every message by PIO (eager) and
// with every message by RDMA (rendezvous); the best switch point is where
// the curves cross (001:L103, L117).
func crossoverFigure(z sizes) *paper.Figure {
	return &paper.Figure{
		Name:  "crossover",
		Title: fmt.Sprintf("The PIO→RDMA crossover between SMPs: one-way time, %s to %s, all by PIO or all by RDMA", bytesName(z.crossover[0]), bytesName(z.crossover[len(z.crossover)-1])),
		Custom: paper.NewCustom(paper.Custom{
			X: z.crossover, Schemes: []workload.Scheme{pio, rdma},
			XLabel: "message size", XUnit: "bytes", LogX: true, YLabel: "one-way time", YUnit: "µs",
		}, func(ctx context.Context, n int, _ string, s workload.Scheme) (float64, error) {
			limit := mpi.MaxStartXPayload
			if s == rdma {
				limit = -1
			}
			t, err := pingPong(ctx, n, false, reps(n), mpi.StartXConfig{Params: mpi.Params{EagerLimit: limit}})
			return us(t), err
		}),
		PointClaims: []paper.PointClaim{
			{Text: "S8 the best PIO→RDMA switch point over the network (where the curves cross)", Paper: "1 KB", Tolerance: "0.5–2 KB", Measure: func(pts []paper.Point) (string, bool) {
				var xs []int
				for _, p := range pts {
					if p.Scheme == pio {
						xs = append(xs, p.X)
					}
				}
				for i, x := range xs {
					d1 := y(pts, x, "", rdma) - y(pts, x, "", pio)
					if d1 > 0 {
						continue
					}
					if i == 0 {
						return fmt.Sprintf("RDMA already faster at %s", bytesName(x)), x >= 512 && x <= 2048
					}
					x0 := xs[i-1]
					d0 := y(pts, x0, "", rdma) - y(pts, x0, "", pio)
					c := float64(x0) + float64(x-x0)*d0/(d0-d1)
					return fmt.Sprintf("≈%.0f bytes (between %s and %s)", c, bytesName(x0), bytesName(x)), within(c, 512, 2048)
				}
				return fmt.Sprintf("PIO faster up to %s", bytesName(xs[len(xs)-1])), false
			}},
		},
	}
}

// table1Figure is Table 1 (001:L89) and the abstract's PIO costs (001:L20):
// the sender's and receiver's time and the one-way time of a message by
// PIO, in the three ways the paper lists.
func table1Figure() *paper.Figure {
	return &paper.Figure{
		Name:  "table1",
		Title: "StarT-X PIO costs (Table 1): a 16 B and a 64 B message with 8-byte stores and loads, and a 64 B one with 64-byte block stores and loads",
		Custom: paper.NewCustom(paper.Custom{
			X: []int{2}, Categories: table1Rows, CategoryLabel: "Table 1 row", Schemes: []workload.Scheme{send, recv, oneWay},
			YLabel: "time", YUnit: "µs",
		}, func(ctx context.Context, _ int, row string, s workload.Scheme) (float64, error) {
			words, block := 16, row == table1Rows[2]
			if row == table1Rows[0] {
				words = 4
			}
			snd, rcv, ow, err := pioCosts(ctx, words-2, block) // two header words
			switch s {
			case send:
				return us(snd), err
			case recv:
				return us(rcv), err
			}
			return us(ow), err
		}),
		PointClaims: []paper.PointClaim{
			{Text: "S1 a 64 B message (row c): send, receive, one way", Paper: "< 0.4, < 3.5, < 5.6 µs", Tolerance: "each under its bound", Measure: func(pts []paper.Point) (string, bool) {
				c := table1Rows[2]
				s, r, o := y(pts, 2, c, send), y(pts, 2, c, recv), y(pts, 2, c, oneWay)
				return fmt.Sprintf("%.3f, %.3f, %.3f µs", s, r, o), s < 0.4 && r < 3.5 && o < 5.6
			}},
			{Text: "S2 row c costs about row a, both less than row b (one way)", Paper: "(c) ≈ (a) < (b)", Tolerance: "c within ±20 % of a; a and c below b", Measure: func(pts []paper.Point) (string, bool) {
				a, b, c := y(pts, 2, table1Rows[0], oneWay), y(pts, 2, table1Rows[1], oneWay), y(pts, 2, table1Rows[2], oneWay)
				return fmt.Sprintf("a %.2f, b %.2f, c %.2f µs (c/a %.2f)", a, b, c, c/a), within(c/a, 0.8, 1.2) && a < b && c < b
			}},
		},
	}
}

// The paper's Table 3 (001:L125–L132): seconds for a round of 1 MB
// broadcasts, two-stage and original, by ranks per SMP.
func paperTable3(per int) (two, orig float64) {
	switch per {
	case 1:
		return 0.148, 0.147
	case 2:
		return 0.466, 0.781
	case 4:
		return 1.158, 2.420
	case 8:
		return 3.591, 6.934
	}
	return math.NaN(), math.NaN()
}

// table3Figure is Table 3: a round of broadcasts (every rank the root in
// turn) on 1+1 to 8+8 ranks, MPICH's flat binomial tree against the
// two-stage SMP-aware one, with block and round-robin placement (the
// paper does not say which it used).
func table3Figure(z sizes) *paper.Figure {
	return &paper.Figure{
		Name:  "table3",
		Title: fmt.Sprintf("Table 3: a round of %s broadcasts on two E5000s, %d+%d to %d+%d ranks, original (binomial) against two-stage, block and round-robin placement", bytesName(z.bcast), z.pers[0], z.pers[0], z.pers[len(z.pers)-1], z.pers[len(z.pers)-1]),
		Custom: paper.NewCustom(paper.Custom{
			X: z.pers, Schemes: []workload.Scheme{origBlock, twoBlock, origRR, twoRR},
			XLabel: "ranks per SMP", LogX: true, YLabel: "round time", YUnit: "s",
		}, func(ctx context.Context, per int, _ string, s workload.Scheme) (float64, error) {
			var coll mpi.Collectives = mpi.Algorithms{}
			if s == twoBlock || s == twoRR {
				coll = mpi.SMPAware{}
			}
			t, err := bcastRound(ctx, per, z.bcast, coll, s == origRR || s == twoRR)
			return float64(t) / float64(sim.S), err
		}),
		PointClaims: []paper.PointClaim{
			ratioClaim("block", origBlock, twoBlock),
			ratioClaim("round-robin", origRR, twoRR),
			growthClaim("block", twoBlock),
			growthClaim("round-robin", twoRR),
		},
	}
}

// ratioClaim is S11 for one placement: original / two-stage at each P.
func ratioClaim(place string, orig, two workload.Scheme) paper.PointClaim {
	return paper.PointClaim{
		Text: "S11 original / two-stage round time, " + place + " placement", Paper: "1.0, 1.68, 2.09, 1.93 at 1+1 … 8+8",
		Tolerance: "1+1 within ±10 % of 1.0; the others ≥ 1.4× and within ±30 % of the paper's",
		Measure: func(pts []paper.Point) (string, bool) {
			ok := true
			var parts []string
			for _, per := range pers(pts) {
				r := y(pts, per, "", orig) / y(pts, per, "", two)
				pt, po := paperTable3(per)
				want := po / pt
				parts = append(parts, fmt.Sprintf("%d+%d %.2f", per, per, r))
				if per == 1 {
					ok = ok && within(r, 0.9, 1.1)
				} else {
					ok = ok && r >= 1.4 && within(r, 0.7*want, 1.3*want)
				}
			}
			return strings.Join(parts, ", "), ok
		},
	}
}

// growthClaim is S12 for one placement: the two-stage round's time per
// doubling of the ranks, which the paper's absolute times (MPICH's
// software included) give as ratios.
func growthClaim(place string, two workload.Scheme) paper.PointClaim {
	return paper.PointClaim{
		Text: "S12 two-stage round time per doubling of P, " + place + " placement (ratios: the paper's seconds include MPICH's software)", Paper: "3.15, 2.48, 3.10",
		Tolerance: "each ±30 %",
		Measure: func(pts []paper.Point) (string, bool) {
			ok := true
			var parts []string
			ps := pers(pts)
			for i := 1; i < len(ps); i++ {
				a, b := ps[i-1], ps[i]
				r := y(pts, b, "", two) / y(pts, a, "", two)
				pa, _ := paperTable3(a)
				pb, _ := paperTable3(b)
				want := pb / pa
				parts = append(parts, fmt.Sprintf("%d→%d %.2f", a, b, r))
				ok = ok && within(r, 0.7*want, 1.3*want)
			}
			return strings.Join(parts, ", "), ok
		},
	}
}

// pers lists the points' X values in order.
func pers(pts []paper.Point) []int {
	var out []int
	for _, p := range pts {
		if len(out) == 0 || out[len(out)-1] != p.X {
			out = append(out, p.X)
		}
	}
	return out
}

// chunksFigure is the bandwidth between SMPs around the pinned buffer's
// size: a longer message moves as a series of transfers of that size
// (001:L113).
func chunksFigure(z sizes) *paper.Figure {
	return &paper.Figure{
		Name:  "chunks",
		Title: fmt.Sprintf("Messages past the %s pinned RDMA buffer: ping-pong bandwidth between SMPs, %s to %s", bytesName(z.chunk), bytesName(z.chunkX[0]), bytesName(z.chunkX[len(z.chunkX)-1])),
		Custom: paper.NewCustom(paper.Custom{
			X: z.chunkX, Schemes: []workload.Scheme{network},
			XLabel: "message size", XUnit: "bytes", LogX: true, YLabel: "bandwidth", YUnit: "MB/s",
		}, func(ctx context.Context, n int, _ string, s workload.Scheme) (float64, error) {
			t, err := pingPong(ctx, n, false, 1, mpi.StartXConfig{Params: mpi.Params{ChunkBytes: z.chunk}})
			return mbps(n, t), err
		}),
		PointClaims: []paper.PointClaim{
			{Text: fmt.Sprintf("S9 past the %s buffer the bandwidth stays flat", bytesName(z.chunk)), Paper: "split into buffer-sized transfers", Tolerance: "no drop over 10 % from the buffer's size on", Measure: func(pts []paper.Point) (string, bool) {
				at := y(pts, z.chunk, "", network)
				worst := math.Inf(1)
				for _, p := range pts {
					if p.X > z.chunk {
						worst = min(worst, p.Y/at)
					}
				}
				return fmt.Sprintf("%.1f MB/s at %s, then %+.1f %% at worst", at, bytesName(z.chunk), 100*(worst-1)), worst >= 0.9
			}},
		},
	}
}

// exchangeFigure has two ranks on two SMPs send each other a long message
// at once, with MPI-StarT's tie-break and without (001:L111).
func exchangeFigure(z sizes) *paper.Figure {
	return &paper.Figure{
		Name:  "exchange",
		Title: fmt.Sprintf("Two ranks on two SMPs send each other %s at once: the time until both have it, with the rendezvous tie-break and without (0: it never finishes)", bytesName(z.exchange)),
		Custom: paper.NewCustom(paper.Custom{
			X: []int{z.exchange}, Schemes: []workload.Scheme{tie, noTie},
			XLabel: "message size", XUnit: "bytes", YLabel: "exchange time", YUnit: "ms",
		}, func(ctx context.Context, n int, _ string, s workload.Scheme) (float64, error) {
			t, stuck, err := exchange(ctx, n, s == tie)
			if stuck {
				return 0, err
			}
			return float64(t) / float64(sim.MS), err
		}),
		PointClaims: []paper.PointClaim{
			{Text: "S10 a simultaneous exchange of two long messages completes (the tie-break)", Paper: "no deadlock", Tolerance: "finishes with the tie-break; without it, stuck", Measure: func(pts []paper.Point) (string, bool) {
				a, b := y(pts, z.exchange, "", tie), y(pts, z.exchange, "", noTie)
				without := "stuck without it"
				if b > 0 {
					without = fmt.Sprintf("%.2f ms without it", b)
				}
				return fmt.Sprintf("%.2f ms with the tie-break, %s", a, without), a > 0 && b == 0
			}},
		},
	}
}
