package sim

import "math/bits"

// calSlots is the number of slots of a domain's calendar: with the
// shortest clock period as the slot width (500 ps at 2 GHz) it covers the
// next 256 ns, where nearly every wake-up of a node falls (a poll's next
// check, a memory access, a link's next beat).
const calSlots = 512

// calendar holds the timers of the near future in slots of one width
// (a bucketed timer wheel): pushing one is an append, the timers of a time
// step are the matching entries of one slot. Timers beyond its horizon,
// and a link's events (whose keys do not follow their push order), stay
// in the heap; the step merges both by (time, seq), so the order of the
// timers is exactly the heap's alone.
//
// Every entry lies in [base, base + calSlots·w), so a slot holds the
// entries of one interval of width w, and the slots from base's on are in
// time order. Entries are appended in push order, which is seq order
// (wakes and trace updates take increasing seqs).
type calendar struct {
	w     Tick // slot width: the domain's shortest clock period
	base  Tick // a multiple of w at or below every entry's time
	n     int  // entries held
	first Tick // the earliest entry's time, when !stale
	stale bool
	slots [calSlots][]timer
	used  [calSlots / 64]uint64 // slots holding entries
}

// push adds tm, pushed at now, and reports whether the calendar took it
// (false: beyond its horizon, for the heap).
func (c *calendar) push(now Tick, tm timer) bool {
	if tm.at-c.base >= calSlots*c.w {
		// Move the horizon up to now: every entry is later than now.
		if b := now - now%c.w; b > c.base {
			c.base = b
		}
		if tm.at-c.base >= calSlots*c.w {
			return false
		}
	}
	s := int(tm.at/c.w) & (calSlots - 1)
	c.slots[s] = append(c.slots[s], tm)
	c.used[s>>6] |= 1 << (s & 63)
	if c.n == 0 {
		c.first, c.stale = tm.at, false
	} else if !c.stale && tm.at < c.first {
		c.first = tm.at
	}
	c.n++
	return true
}

// next is the earliest entry's time (Never when empty).
func (c *calendar) next() Tick {
	if c.n == 0 {
		return Never
	}
	if c.stale {
		// The first slot in use from base's on, cyclically, holds it.
		s0 := int(c.base/c.w) & (calSlots - 1)
		s := c.nextUsed(s0)
		t := Never
		for _, tm := range c.slots[s] {
			t = min(t, tm.at)
		}
		c.first, c.stale = t, false
	}
	return c.first
}

// nextUsed is the first slot in use at or after s, cyclically (the
// calendar is not empty).
func (c *calendar) nextUsed(s int) int {
	w := s >> 6
	if m := c.used[w] >> (s & 63); m != 0 {
		return s + bits.TrailingZeros64(m)
	}
	for i := 1; i <= len(c.used); i++ {
		j := (w + i) % len(c.used)
		if m := c.used[j]; m != 0 {
			return j<<6 + bits.TrailingZeros64(m)
		}
	}
	panic("sim: calendar: no slot in use")
}

// take appends to due the entries at time t, in push order, and removes
// them.
func (c *calendar) take(t Tick, due []timer) []timer {
	s := int(t/c.w) & (calSlots - 1)
	sl := c.slots[s]
	k := 0
	for _, tm := range sl {
		if tm.at == t {
			due = append(due, tm)
		} else {
			sl[k] = tm
			k++
		}
	}
	clear(sl[k:])
	c.slots[s] = sl[:k]
	if k == 0 {
		c.used[s>>6] &^= 1 << (s & 63)
	}
	c.n -= len(sl) - k
	c.stale = true
	return due
}
