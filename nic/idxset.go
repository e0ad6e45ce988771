package nic

import "math/bits"

// idxSet is a set of QP creation indices kept as a bitset with summary
// levels (a bit per non-empty word of the level below), so that adding,
// removing and finding the next member at or after an index cost a few
// word operations however many QPs the NIC has: the NIC's scheduling sets
// are served in creation order without scanning their non-members.
type idxSet struct {
	lv [][]uint64 // lv[0]: the members; lv[k+1] bit i: lv[k][i] != 0
}

// grow makes room for indices below n.
func (s *idxSet) grow(n int) {
	words := (n + 63) >> 6
	if len(s.lv) > 0 && len(s.lv[0]) >= words {
		return
	}
	words = max(words, 1, 2*len(s.lvOrNil()))
	old := s.lvOrNil()
	s.lv = s.lv[:0]
	s.lv = append(s.lv, make([]uint64, words))
	copy(s.lv[0], old)
	for w := words; w > 1; {
		w = (w + 63) >> 6
		s.lv = append(s.lv, make([]uint64, w))
	}
	// Rebuild the summaries from the members.
	for k := 1; k < len(s.lv); k++ {
		for i, x := range s.lv[k-1] {
			if x != 0 {
				s.lv[k][i>>6] |= 1 << (i & 63)
			}
		}
	}
}

func (s *idxSet) lvOrNil() []uint64 {
	if len(s.lv) == 0 {
		return nil
	}
	return s.lv[0]
}

func (s *idxSet) has(i int) bool { return s.lv[0][i>>6]&(1<<(i&63)) != 0 }

func (s *idxSet) add(i int) {
	for k := range s.lv {
		w := &s.lv[k][i>>6]
		was := *w
		*w |= 1 << (i & 63)
		if was != 0 {
			return // the levels above already show this word
		}
		i >>= 6
	}
}

func (s *idxSet) del(i int) {
	for k := range s.lv {
		w := &s.lv[k][i>>6]
		if *w == 0 {
			return
		}
		*w &^= 1 << (i & 63)
		if *w != 0 {
			return
		}
		i >>= 6
	}
}

// set adds i when in is true and removes it otherwise.
func (s *idxSet) set(i int, in bool) {
	if in {
		s.add(i)
	} else {
		s.del(i)
	}
}

// next is the smallest member at or after i, or -1.
func (s *idxSet) next(i int) int {
	if len(s.lv) == 0 {
		return -1
	}
	return s.nextAt(0, i)
}

func (s *idxSet) nextAt(k, i int) int {
	lv := s.lv[k]
	wi := i >> 6
	if wi >= len(lv) {
		return -1
	}
	if m := lv[wi] >> (i & 63); m != 0 {
		return i + bits.TrailingZeros64(m)
	}
	var nw int
	if k+1 < len(s.lv) {
		if nw = s.nextAt(k+1, wi+1); nw < 0 {
			return -1
		}
	} else {
		// The top level is a single word: wi+1 is past it.
		return -1
	}
	return nw<<6 + bits.TrailingZeros64(lv[nw])
}

// min is the smallest member, or -1.
func (s *idxSet) min() int { return s.next(0) }

// empty reports whether the set has no members.
func (s *idxSet) empty() bool { return len(s.lv) == 0 || s.lv[len(s.lv)-1][0] == 0 }
