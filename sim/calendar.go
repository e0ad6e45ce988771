package sim

import "math/bits"

// calSlots is the number of slots of a domain's calendar: with the
// shortest clock period as the slot width (500 ps at 2 GHz) it covers the
// next 128 ns, where nearly every wake-up of a node falls (a poll's next
// check, a memory access, a link's next beat).
const calSlots = 256

// calendar holds the timers of the near future in slots of one width
// (a bucketed timer wheel): pushing one is a link at the end of its
// slot's list, the timers of a time step are the matching entries of one
// slot. Timers beyond its horizon, and a link's events (whose keys do not
// follow their push order), stay in the heap; the step merges both by
// (time, seq), so the order of the timers is exactly the heap's alone.
//
// Every entry lies in [base, base + calSlots·w), so a slot holds the
// entries of one interval of width w, and the slots from base's on are in
// time order. A slot's list is in push order, which is seq order (wakes
// and trace updates take increasing seqs). The entries live in one pool,
// a few dozen in a node, so that pushing touches little memory.
type calendar struct {
	w     Tick // slot width: the domain's shortest clock period
	base  Tick // a multiple of w at or below every entry's time
	n     int  // entries held
	first Tick // the earliest entry's time, when !stale
	stale bool
	head  [calSlots]int32 // a slot's first entry in pool, plus one (0: empty)
	tail  [calSlots]int32
	used  [calSlots / 64]uint64 // slots holding entries
	pool  []calEntry
	free  int32 // the first free entry of pool, plus one
}

type calEntry struct {
	tm   timer
	next int32 // the next entry of the slot (or of the free list), plus one
}

// push adds tm, pushed at now, and reports whether the calendar took it
// (false: beyond its horizon, for the heap).
func (c *calendar) push(now Tick, tm *timer) bool {
	if tm.at-c.base >= calSlots*c.w {
		// Move the horizon up to now: every entry is later than now.
		if b := now - now%c.w; b > c.base {
			c.base = b
		}
		if tm.at-c.base >= calSlots*c.w {
			return false
		}
	}
	i := c.free
	if i != 0 {
		c.free = c.pool[i-1].next
	} else {
		c.pool = append(c.pool, calEntry{})
		i = int32(len(c.pool))
	}
	en := &c.pool[i-1]
	en.tm, en.next = *tm, 0
	s := int(tm.at/c.w) & (calSlots - 1)
	if t := c.tail[s]; t != 0 {
		c.pool[t-1].next = i
	} else {
		c.head[s] = i
		c.used[s>>6] |= 1 << (s & 63)
	}
	c.tail[s] = i
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
		s := c.nextUsed(int(c.base/c.w) & (calSlots - 1))
		t := Never
		for i := c.head[s]; i != 0; i = c.pool[i-1].next {
			t = min(t, c.pool[i-1].tm.at)
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
	var head, tail int32 // the entries that stay, in order
	for i := c.head[s]; i != 0; {
		en := &c.pool[i-1]
		next := en.next
		if en.tm.at == t {
			due = append(due, en.tm)
			en.tm, en.next = timer{}, c.free
			c.free = i
			c.n--
		} else {
			if tail != 0 {
				c.pool[tail-1].next = i
			} else {
				head = i
			}
			en.next, tail = 0, i
		}
		i = next
	}
	c.head[s], c.tail[s] = head, tail
	if head == 0 {
		c.used[s>>6] &^= 1 << (s & 63)
	}
	c.stale = true
	return due
}

// each calls f for every entry, in no particular order.
func (c *calendar) each(f func(*timer)) {
	for s := range c.head {
		for i := c.head[s]; i != 0; i = c.pool[i-1].next {
			f(&c.pool[i-1].tm)
		}
	}
}
