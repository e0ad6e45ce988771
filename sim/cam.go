package sim

import "fmt"

// CAM is a content-addressable memory of a fixed number of entries: lookup by
// key in one access, insert into a free entry, remove. The access-log table,
// tag buffer and flushing buffer are CAMs. Entries keep their slot, so a
// block can refer to an entry by its index as hardware does.
type CAM[K comparable, V any] struct {
	keys  []K
	vals  []V
	used  []bool
	index map[K]int // stands in for the parallel compare of all entries
	free  []int     // free slots, lowest first
	n     int
}

// NewCAM makes a CAM of entries slots.
func NewCAM[K comparable, V any](entries int) *CAM[K, V] {
	if entries < 1 {
		panic(fmt.Sprintf("sim: CAM of %d entries", entries))
	}
	c := &CAM[K, V]{keys: make([]K, entries), vals: make([]V, entries), used: make([]bool, entries),
		index: make(map[K]int, entries), free: make([]int, entries)}
	for i := range c.free {
		c.free[i] = entries - 1 - i // pop from the end gives the lowest slot
	}
	return c
}

// Entries is the capacity.
func (c *CAM[K, V]) Entries() int { return len(c.keys) }

// Occupancy is the number of valid entries.
func (c *CAM[K, V]) Occupancy() int { return c.n }

// Full reports whether no slot is free.
func (c *CAM[K, V]) Full() bool { return c.n == len(c.keys) }

// Lookup returns a pointer to the value stored under k (nil on a miss) and
// its slot.
func (c *CAM[K, V]) Lookup(k K) (*V, int) {
	i, ok := c.index[k]
	if !ok {
		return nil, -1
	}
	return &c.vals[i], i
}

// Insert stores v under k and returns its slot. It fails when k is present
// or the CAM is full.
func (c *CAM[K, V]) Insert(k K, v V) (int, error) {
	if _, dup := c.index[k]; dup {
		return -1, fmt.Errorf("CAM: key %v already present", k)
	}
	if c.n == len(c.keys) {
		return -1, fmt.Errorf("CAM: all %d entries in use", len(c.keys))
	}
	i := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	c.keys[i], c.vals[i], c.used[i] = k, v, true
	c.index[k] = i
	c.n++
	return i, nil
}

// Remove frees the entry under k and returns its value.
func (c *CAM[K, V]) Remove(k K) (V, bool) {
	var zero V
	i, ok := c.index[k]
	if !ok {
		return zero, false
	}
	v := c.vals[i]
	delete(c.index, k)
	c.keys[i], c.vals[i], c.used[i] = *new(K), zero, false
	c.n--
	// Keep the free list sorted so the next insert takes the lowest slot,
	// which keeps slot numbers independent of removal order.
	j := len(c.free)
	c.free = append(c.free, i)
	for j > 0 && c.free[j-1] < i {
		c.free[j] = c.free[j-1]
		j--
	}
	c.free[j] = i
	return v, true
}

// Slot returns the entry in slot i and whether it is valid.
func (c *CAM[K, V]) Slot(i int) (K, *V, bool) { return c.keys[i], &c.vals[i], c.used[i] }

// Each calls f for each valid entry in slot order (deterministic).
func (c *CAM[K, V]) Each(f func(slot int, k K, v *V)) {
	for i := range c.keys {
		if c.used[i] {
			f(i, c.keys[i], &c.vals[i])
		}
	}
}
