package paper

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/workload"
)

// IOTLB figure 7c's key streams: the paper's random keys (no locality in a
// shard's table; its logs' and queues' pages are still walked in order),
// and keys whose pages follow a Zipf law of exponent 0.99 (YCSB's default
// Zipf constant: an assumption, the paper states no locality).
const (
	keysUniform = "0"
	keysZipf    = "0.99"
)

// iotlbAssoc are 7c's associativities as the paper names them (a1, a2,
// a4, af) and their iotlb_ways (0: fully associative).
var iotlbAssoc = []struct{ name, ways string }{{"a1", "1"}, {"a2", "2"}, {"a4", "4"}, {"af", "0"}}

// The axes of 7c's grid, in its order.
const (
	axKeys = iota
	axEviction
	axWays
	axEntries
)

// iotlbFigure is Figure 7c: the IOTLB's hit rate (and the insert rate it
// gives) against its size in entries, for lru and random at every
// associativity, under both key streams; AA-Poll on 4 nodes × 8 processes.
func iotlbFigure(entries []int, inserts int, only string) *Figure {
	title := fmt.Sprintf("DHT, IOTLB analysis: hit rate and insert rate against the IOTLB's entries (%d to %d), lru and random at a1, a2, a4 and af, random keys and keys with Zipf(%s) pages; AA-Poll, 4 nodes × 8 processes, 10 Gb/s",
		entries[0], entries[len(entries)-1], keysZipf)
	onlyAxis := ""
	if only != "" {
		// The variant: only the pages of one kind use the IOTLB, as the
		// paper's simulated IOTLB may have seen only the table's.
		title += "; only the " + only + "'s pages use the IOTLB"
		onlyAxis = "\n  machine.iommu.iotlb_only: [" + only + "]"
	}
	return &Figure{
		Name:  "7c",
		Title: title,
		Notes: iotlbByKind,
		Sweep: fmt.Sprintf(`
grid:
  # The key stream: 0, the paper's random keys (004:L344); 0.99, keys
  # whose pages in a shard follow a Zipf law (an assumption: locality).
  workload.dht.page_zipf: [%s, %s]
  machine.iommu.iotlb_eviction: [lru, random]
  machine.iommu.iotlb_ways: [1, 2, 4, 0]  # a1, a2, a4, af (0: fully associative)
  machine.iommu.iotlb_entries: %s
  machine.nodes: [4]
  machine.cores: [8]
  machine.wire.rate_mbps: [10000]
  workload.dht.procs_per_node: [8]
  workload.dht.schemes: [[AA-Poll]]
  workload.dht.collisions: [[0.05]]
  workload.dht.cells: [16384]
  workload.dht.inserts: [%d]
  # The IOTLB's lookups by kind of page (sweep.json: iotlb_by_kind).
  machine.iommu.iotlb_by_kind: [true]%s
# The hit rate is what the claims are about; the rate, what it costs.
plot:
  x: machine.iommu.iotlb_entries
  y: [iotlb_hit_rate, inserts_per_second]
  log_x: true
`, keysUniform, keysZipf, yamlInts(entries), inserts, onlyAxis),
		Claims: []Claim{
			lruClaim(keysUniform, "random keys"),
			lruClaim(keysZipf, "Zipf "+keysZipf+" pages"),
			{Text: "a larger IOTLB helps: hit rate up with the size", Paper: "yes", Tolerance: "in every series of both key streams, never lower at a larger size by more than 0.5 points", Measure: func(rows []sweep.Row) (string, bool) {
				t := iotlbIndex(rows)
				worst, where := 0.0, ""
				for _, k := range []string{keysUniform, keysZipf} {
					for _, ev := range []string{"lru", "random"} {
						for _, a := range iotlbAssoc {
							prev, ok := 0.0, false
							for _, e := range t.entries {
								h, have := t.hit(k, ev, a.ways, e)
								if !have {
									continue
								}
								if ok && prev-h > worst {
									worst, where = prev-h, fmt.Sprintf(" (%s_%s at %s entries, %s)", ev, a.name, e, keyName(k))
								}
								prev, ok = h, true
							}
						}
					}
				}
				return fmt.Sprintf("largest drop %.1f points%s", 100*worst, where), worst <= 0.005
			}},
			{Text: "higher associativity helps (lru): a1 ≤ a2 ≤ a4 ≤ af", Paper: "yes", Tolerance: "at every size of both key streams, each hit rate at most 0.5 points below the less associative one's", Measure: func(rows []sweep.Row) (string, bool) {
				t := iotlbIndex(rows)
				bad, total, worst := 0, 0, 0.0
				for _, k := range []string{keysUniform, keysZipf} {
					for _, e := range t.entries {
						for i := 1; i < len(iotlbAssoc); i++ {
							lo, ok1 := t.hit(k, "lru", iotlbAssoc[i-1].ways, e)
							hi, ok2 := t.hit(k, "lru", iotlbAssoc[i].ways, e)
							if !ok1 || !ok2 {
								continue
							}
							total++
							if lo-hi > 0.005 {
								bad++
								worst = max(worst, lo-hi)
							}
						}
					}
				}
				return fmt.Sprintf("less associative ahead in %d of %d steps (by up to %.1f points)", bad, total, 100*worst), total > 0 && bad == 0
			}},
			{Text: "lru_af vs lru_a4, insert rate", Paper: "up to +16 %", Tolerance: "the largest gain over the sizes +3 % to +30 %, in each key stream", Measure: func(rows []sweep.Row) (string, bool) {
				t := iotlbIndex(rows)
				ok := true
				var parts []string
				for _, k := range []string{keysUniform, keysZipf} {
					best, at := 0.0, ""
					for _, e := range t.entries {
						a4, ok1 := t.rate(k, "lru", "4", e)
						af, ok2 := t.rate(k, "lru", "0", e)
						if ok1 && ok2 && (at == "" || af/a4 > best) {
							best, at = af/a4, e
						}
					}
					parts = append(parts, fmt.Sprintf("%s up to %s (%s entries)", keyName(k), pct(best), at))
					ok = ok && within(best, 1.03, 1.3)
				}
				return strings.Join(parts, "; "), ok
			}},
		},
	}
}

// lruClaim is the paper's "for a given associativity, lru is always better
// than rnd as it entails fewer IOTLB misses", checked on the hit rate
// under one key stream at the associative IOTLBs (a direct-mapped one has
// no choice of victim: its lru and random are one policy).
func lruClaim(keys, name string) Claim {
	return Claim{Text: "lru's hit rate above random's, every associativity and size (" + name + ")", Paper: "always", Tolerance: "lru strictly higher at every a2, a4 and af point", Measure: func(rows []sweep.Row) (string, bool) {
		t := iotlbIndex(rows)
		wins, total := 0, 0
		var lost []string
		for _, a := range iotlbAssoc[1:] {
			for _, e := range t.entries {
				l, ok1 := t.hit(keys, "lru", a.ways, e)
				r, ok2 := t.hit(keys, "random", a.ways, e)
				if !ok1 || !ok2 {
					continue
				}
				total++
				if l > r {
					wins++
				} else if len(lost) < 3 {
					lost = append(lost, fmt.Sprintf("%s %s: %.1f %% vs %.1f %%", a.name, e, 100*l, 100*r))
				}
			}
		}
		m := fmt.Sprintf("higher in %d of %d", wins, total)
		if len(lost) > 0 {
			m += "; not at " + strings.Join(lost, ", ")
		}
		return m, total > 0 && wins == total
	}}
}

func keyName(k string) string {
	if k == keysUniform {
		return "random keys"
	}
	return "Zipf " + k
}

// iotlbRows indexes 7c's rows by (keys, eviction, ways, entries).
type iotlbRows struct {
	rows    map[string]sweep.Row
	entries []string // in grid order
}

func iotlbIndex(rows []sweep.Row) iotlbRows {
	t := iotlbRows{rows: map[string]sweep.Row{}}
	for _, r := range rows {
		p := r.Point
		t.rows[p[axKeys]+"/"+p[axEviction]+"/"+p[axWays]+"/"+p[axEntries]] = r
	}
	for _, e := range values(rows, axEntries) {
		if _, err := strconv.Atoi(e); err == nil {
			t.entries = append(t.entries, e)
		}
	}
	return t
}

func (t iotlbRows) hit(keys, ev, ways, entries string) (float64, bool) {
	r, ok := t.rows[keys+"/"+ev+"/"+ways+"/"+entries]
	return r.Result.IOTLBHitRate, ok
}

func (t iotlbRows) rate(keys, ev, ways, entries string) (float64, bool) {
	r, ok := t.rows[keys+"/"+ev+"/"+ways+"/"+entries]
	return r.Result.InsertsPerSec, ok
}

// iotlbEntries are 7c's sizes, iotlbInserts its inserts a process; the
// reduced figure (the test suite's) runs two sizes with fewer inserts.
var (
	iotlbEntries        = []int{8, 16, 32, 64, 128, 256}
	iotlbInserts        = 100
	iotlbReducedEntries = []int{16, 64}
	iotlbReducedInserts = 40
)

// IOTLBOnly replaces 7c among figs by its variant in which only the pages
// of kind use the IOTLB (aaemu paper 7c --iotlb-only table), at the sizes
// of the full figure or, reduced, of the test suite's.
func IOTLBOnly(figs []*Figure, kind string, reduced bool) ([]*Figure, error) {
	if !slices.Contains(machine.PageKinds, kind) {
		return nil, fmt.Errorf("--iotlb-only %q: want a kind of page: %s", kind, strings.Join(machine.PageKinds, ", "))
	}
	out := slices.Clone(figs)
	found := false
	for i, f := range out {
		if f.Name != "7c" {
			continue
		}
		found = true
		if reduced {
			out[i] = iotlbFigure(iotlbReducedEntries, iotlbReducedInserts, kind)
		} else {
			out[i] = iotlbFigure(iotlbEntries, iotlbInserts, kind)
		}
	}
	if !found {
		return nil, fmt.Errorf("--iotlb-only applies to figure 7c (aaemu paper 7c --iotlb-only %s)", kind)
	}
	return out, nil
}

// iotlbByKind is 7c's breakdown: at each size, the fully associative
// IOTLB's hit rate on each kind of page under lru and random, and each
// kind's share of the lookups, for each key stream.
func iotlbByKind(rows []sweep.Row) string {
	t := iotlbIndex(rows)
	var b strings.Builder
	for _, k := range []string{keysUniform, keysZipf} {
		var kinds []string
		for _, e := range t.entries {
			for _, ev := range []string{"lru", "random"} {
				if r, ok := t.rows[k+"/"+ev+"/0/"+e]; ok {
					for _, x := range r.Result.IOTLBByKind {
						if !slices.Contains(kinds, x.Kind) {
							kinds = append(kinds, x.Kind)
						}
					}
				}
			}
		}
		if len(kinds) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  IOTLB lookups by kind of page, fully associative, %s: hit rate lru / random (share of the lookups)\n", keyName(k))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  entries\t%s\t\n", strings.Join(kinds, "\t"))
		for _, e := range t.entries {
			lru, ok1 := t.rows[k+"/lru/0/"+e]
			rnd, ok2 := t.rows[k+"/random/0/"+e]
			if !ok1 || !ok2 {
				continue
			}
			cells := []string{e}
			for _, kind := range kinds {
				l, lt := kindOf(lru.Result, kind)
				r, _ := kindOf(rnd.Result, kind)
				cells = append(cells, fmt.Sprintf("%.1f / %.1f %% (%.0f %%)", 100*l.HitRate(), 100*r.HitRate(), 100*lt))
			}
			fmt.Fprintf(tw, "  %s\t\n", strings.Join(cells, "\t"))
		}
		tw.Flush()
	}
	return b.String()
}

// kindOf is a result's lookups of one kind, and their share of all.
func kindOf(r workload.DHTResult, kind string) (workload.KindLookups, float64) {
	var all uint64
	var got workload.KindLookups
	for _, x := range r.IOTLBByKind {
		all += x.Hits + x.Misses
		if x.Kind == kind {
			got = x
		}
	}
	if all == 0 {
		return got, 0
	}
	return got, float64(got.Hits+got.Misses) / float64(all)
}
