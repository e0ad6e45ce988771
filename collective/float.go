package collective

import (
	"math"
	"math/bits"
)

// The ALU adds only integers, so a floating-point sum takes two passes, as
// on Blue Gene/L: first every node contributes its values' exponents and
// the tree takes their maximum; then every node turns its values into
// fixed-point integers aligned to that exponent and the tree adds them;
// each node turns the sums back into floating point.
//
// The fixed point is 64 bits: a sign, headroom bits for the carries of
// the nodes' sum, and the rest below the largest exponent. Bits of a value
// more than that far below the largest are dropped (truncated towards
// zero); values of one scale sum exactly.

// ExponentPacket is a node's first-pass contribution for up to Words
// values: their binary exponents, to be combined with OpMax.
func ExponentPacket(vals []float64) Packet {
	p := Packet{Op: OpMax}
	for i, v := range vals[:min(len(vals), Words)] {
		p.W[i] = uint64(exponent(v))
	}
	return p
}

// exponent is the biased exponent of v (0 for zero and subnormals).
func exponent(v float64) int { return int(math.Float64bits(v) >> 52 & 0x7ff) }

// headroom is the bits a sum over nodes values can carry into.
func headroom(nodes int) int { return bits.Len(uint(max(nodes-1, 1))) }

// MantissaPacket is a node's second-pass contribution: its values as
// two's-complement fixed-point integers aligned to the maximum exponents
// of the first pass, to be combined with OpAdd.
func MantissaPacket(vals []float64, maxExp Packet, nodes int) Packet {
	p := Packet{Op: OpAdd}
	top := 62 - headroom(nodes) // bit position of the largest exponent's leading one
	for i, v := range vals[:min(len(vals), Words)] {
		e := exponent(v)
		if e == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			continue
		}
		m := math.Float64bits(v)&(1<<52-1) | 1<<52 // 53-bit significand
		shift := e - int(maxExp.W[i]) + top - 52   // left shift placing m
		var x uint64
		switch {
		case shift >= 0:
			x = m << uint(shift)
		case shift > -64:
			x = m >> uint(-shift)
		}
		if v < 0 {
			x = -x
		}
		p.W[i] = x
	}
	return p
}

// FloatSums turns the second pass's sums back into n floating-point
// values.
func FloatSums(sums, maxExp Packet, nodes, n int) []float64 {
	top := 62 - headroom(nodes)
	out := make([]float64, min(n, Words))
	for i := range out {
		if maxExp.W[i] == 0 {
			continue
		}
		x := int64(sums.W[i])
		// x · 2^(maxExp - 1023 - top), exactly while |x| < 2^53, rounded
		// once otherwise.
		out[i] = math.Ldexp(float64(x), int(maxExp.W[i])-1023-top)
	}
	return out
}
