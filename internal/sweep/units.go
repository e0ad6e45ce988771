package sweep

import (
	"math"
	"strconv"
	"strings"
)

// A prefix scales a unit: µ in µJ, Ki in KiB.
type prefix struct {
	sym    string
	factor float64
}

// siPrefixes, smallest first. "u" is read as µ but never written.
var siPrefixes = []prefix{
	{"p", 1e-12}, {"n", 1e-9}, {"µ", 1e-6}, {"m", 1e-3}, {"", 1},
	{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
}

// binPrefixes scale bytes (sizes, not rates): 1 KiB is 1024 B.
var binPrefixes = []prefix{{"", 1}, {"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}}

// prefixable are the units that take a prefix: 35 mJ, not 35k µJ.
var prefixable = map[string]bool{
	"s": true, "J": true, "W": true, "Hz": true, "B": true, "b": true,
	"B/s": true, "b/s": true, "J/B": true, "V": true, "A": true,
}

// A unit is what a quantity is written in: a prefix on a base unit that
// takes prefixes (µJ is 1e-6 J), or a unit that takes none (cycles,
// entries, inserts/s), or none at all.
type unit struct {
	name   string  // as written: "µJ", "cycles", ""
	base   string  // the prefixable unit ("J"); "" when the unit takes no prefix
	factor float64 // one of name in base units
}

func parseUnit(s string) unit {
	if prefixable[s] {
		return unit{name: s, base: s, factor: 1}
	}
	ps := append(append([]prefix{{"u", 1e-6}}, siPrefixes...), binPrefixes...)
	for _, p := range ps {
		if p.sym != "" && strings.HasPrefix(s, p.sym) && prefixable[s[len(p.sym):]] {
			if strings.HasPrefix(p.sym, "K") || strings.Contains(p.sym, "i") {
				if s[len(p.sym):] != "B" {
					continue // binary prefixes are for sizes only
				}
			}
			return unit{name: s, base: s[len(p.sym):], factor: p.factor}
		}
	}
	return unit{name: s, factor: 1}
}

// A scale writes values of a unit with one prefix: v/div, then unit.
type scale struct {
	div  float64
	unit string
}

// scaleFor is the prefix that writes the largest magnitude of vs (in unit
// u) between 1 and 1000: 35000 µJ is 35 mJ. Bytes take binary prefixes
// when every value is a short multiple of one (64 KiB, not 65.54 kB). A
// unit that takes no prefix keeps its values.
func scaleFor(u unit, vs []float64) scale {
	if u.base == "" {
		return scale{1, u.name}
	}
	m := 0.0
	for _, v := range vs {
		m = max(m, math.Abs(round6(v))*u.factor)
	}
	if m == 0 || math.IsInf(m, 0) || math.IsNaN(m) {
		return scale{1, u.name}
	}
	if u.base == "B" {
		p := binPrefixes[0]
		for _, q := range binPrefixes {
			if m >= q.factor {
				p = q
			}
		}
		if p.factor > 1 && allShort(vs, p.factor/u.factor) {
			return scale{p.factor / u.factor, p.sym + u.base}
		}
	}
	p := siPrefixes[0]
	for _, q := range siPrefixes {
		if m >= q.factor*(1-1e-9) {
			p = q
		}
	}
	return scale{p.factor / u.factor, p.sym + u.base}
}

// allShort: every v/div is written exactly with at most two decimals.
func allShort(vs []float64, div float64) bool {
	for _, v := range vs {
		x := v / div * 100
		if x != math.Trunc(x) {
			return false
		}
	}
	return true
}

// formatQuantity writes v (in unit u) with the prefix that suits it:
// (35000, "µJ") is "35 mJ", (10000, "Mb/s") "10 Gb/s", (65536, "B")
// "64 KiB", (2000, "cycles") "2000 cycles".
func formatQuantity(v float64, u string) string {
	pu := parseUnit(u)
	if pu.base == "" {
		s := number(v)
		if u == "" {
			return s
		}
		return s + " " + u
	}
	sc := scaleFor(pu, []float64{v})
	return number(v/sc.div) + " " + sc.unit
}

// number writes x to 6 significant digits (a tick at 0.1 + 0.2 is 0.3),
// without an exponent or trailing zeros: 35, 2.5, 0.05, 16384.
func number(x float64) string {
	if math.Abs(x) < 1e-9 {
		return "0"
	}
	return strconv.FormatFloat(round6(x), 'f', -1, 64)
}

// round6 rounds x to 6 significant digits.
func round6(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return r
}

// count writes a number of things with k, M, G for thousands, millions,
// billions: 2.5M, 16.384k, 0.05.
func count(x float64) string {
	a := math.Abs(round6(x))
	for _, p := range []prefix{{"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if a >= p.factor {
			return number(x/p.factor) + p.sym
		}
	}
	return number(x)
}
