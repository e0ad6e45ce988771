package sim

import (
	"fmt"
	"strings"
)

// Eviction picks the way a set-associative cache replaces.
type Eviction uint8

// Eviction policies.
const (
	LRU    Eviction = iota // least recently used (true LRU)
	FIFO                   // oldest insertion
	Random                 // uniformly random way, from a seeded generator
)

func (p Eviction) String() string {
	switch p {
	case LRU:
		return "lru"
	case FIFO:
		return "fifo"
	case Random:
		return "random"
	}
	return fmt.Sprintf("Eviction(%d)", uint8(p))
}

// ParseEviction reads "lru", "fifo" or "random" (also "rnd").
func ParseEviction(s string) (Eviction, error) {
	switch strings.ToLower(s) {
	case "lru":
		return LRU, nil
	case "fifo":
		return FIFO, nil
	case "random", "rnd":
		return Random, nil
	}
	return 0, fmt.Errorf("eviction %q: want lru, fifo or random", s)
}

// Cache is a set-associative cache of sets × ways entries: the IOTLB and the
// context cache are built from it. The caller supplies the set index of a key
// (set = index mod sets), as hardware takes low bits of the address.
type Cache[K comparable, V any] struct {
	sets, ways int
	policy     Eviction
	setOf      func(K) uint64
	setMask    uint64 // sets-1 when sets is a power of two (no division on lookup)
	rng        *Rand

	keys  []K
	vals  []V
	valid []bool
	stamp []uint64 // LRU: last use; FIFO: insertion
	clock uint64
	n     int
}

// NewCache makes a cache. setOf maps a key to its set (taken mod sets); rng is
// needed for Random eviction only.
func NewCache[K comparable, V any](sets, ways int, policy Eviction, setOf func(K) uint64, rng *Rand) (*Cache[K, V], error) {
	if sets < 1 || ways < 1 {
		return nil, fmt.Errorf("cache of %d sets × %d ways: both must be at least 1", sets, ways)
	}
	if policy == Random && rng == nil {
		return nil, fmt.Errorf("random eviction needs a seeded generator")
	}
	if policy > Random {
		return nil, fmt.Errorf("unknown eviction policy %v", policy)
	}
	n := sets * ways
	c := &Cache[K, V]{sets: sets, ways: ways, policy: policy, setOf: setOf, rng: rng,
		keys: make([]K, n), vals: make([]V, n), valid: make([]bool, n), stamp: make([]uint64, n)}
	if sets&(sets-1) == 0 {
		c.setMask = uint64(sets - 1)
	}
	return c, nil
}

// Sets is the number of sets.
func (c *Cache[K, V]) Sets() int { return c.sets }

// Ways is the associativity.
func (c *Cache[K, V]) Ways() int { return c.ways }

// Len is the number of valid entries.
func (c *Cache[K, V]) Len() int { return c.n }

func (c *Cache[K, V]) base(k K) int {
	if c.setMask != 0 || c.sets == 1 {
		return int(c.setOf(k)&c.setMask) * c.ways
	}
	return int(c.setOf(k)%uint64(c.sets)) * c.ways
}

// Lookup returns the value cached under k. A hit counts as a use for LRU.
func (c *Cache[K, V]) Lookup(k K) (V, bool) {
	b := c.base(k)
	for i := b; i < b+c.ways; i++ {
		if c.valid[i] && c.keys[i] == k {
			if c.policy == LRU {
				c.clock++
				c.stamp[i] = c.clock
			}
			return c.vals[i], true
		}
	}
	var zero V
	return zero, false
}

// Contains reports whether k is cached, without counting a use.
func (c *Cache[K, V]) Contains(k K) bool {
	b := c.base(k)
	for i := b; i < b+c.ways; i++ {
		if c.valid[i] && c.keys[i] == k {
			return true
		}
	}
	return false
}

// Insert caches v under k (replacing a present entry in place) and returns the
// entry it evicted, if any.
func (c *Cache[K, V]) Insert(k K, v V) (evictedKey K, evictedVal V, evicted bool) {
	b := c.base(k)
	c.clock++
	victim := -1
	for i := b; i < b+c.ways; i++ {
		if c.valid[i] && c.keys[i] == k {
			c.vals[i] = v
			if c.policy == LRU {
				c.stamp[i] = c.clock
			}
			return
		}
		if !c.valid[i] && victim < 0 {
			victim = i
		}
	}
	if victim < 0 {
		switch c.policy {
		case Random:
			victim = b + c.rng.IntN(c.ways)
		default: // LRU and FIFO both evict the smallest stamp
			victim = b
			for i := b + 1; i < b+c.ways; i++ {
				if c.stamp[i] < c.stamp[victim] {
					victim = i
				}
			}
		}
		evictedKey, evictedVal, evicted = c.keys[victim], c.vals[victim], true
	} else {
		c.n++
	}
	c.keys[victim], c.vals[victim], c.valid[victim], c.stamp[victim] = k, v, true, c.clock
	return
}

// Fill caches v under k, which the caller knows is not cached (it just
// missed): one pass over the set finds a free way or the victim.
func (c *Cache[K, V]) Fill(k K, v V) {
	b := c.base(k)
	c.clock++
	victim := -1
	if c.policy == Random {
		for i := b; i < b+c.ways; i++ {
			if !c.valid[i] {
				victim = i
				break
			}
		}
		if victim < 0 {
			victim = b + c.rng.IntN(c.ways)
		}
	} else {
		victim = b
		for i := b; i < b+c.ways; i++ {
			if !c.valid[i] {
				victim = i
				break
			}
			if c.stamp[i] < c.stamp[victim] {
				victim = i
			}
		}
	}
	if !c.valid[victim] {
		c.n++
	}
	c.keys[victim], c.vals[victim], c.valid[victim], c.stamp[victim] = k, v, true, c.clock
}

// Invalidate drops k; it reports whether k was cached.
func (c *Cache[K, V]) Invalidate(k K) bool {
	b := c.base(k)
	for i := b; i < b+c.ways; i++ {
		if c.valid[i] && c.keys[i] == k {
			c.drop(i)
			return true
		}
	}
	return false
}

// InvalidateIf drops every entry for which match returns true (a domain- or
// range-selective invalidation) and returns how many it dropped.
func (c *Cache[K, V]) InvalidateIf(match func(K, V) bool) int {
	n := 0
	for i := range c.keys {
		if c.valid[i] && match(c.keys[i], c.vals[i]) {
			c.drop(i)
			n++
		}
	}
	return n
}

// InvalidateAll empties the cache (a global invalidation).
func (c *Cache[K, V]) InvalidateAll() {
	for i := range c.keys {
		if c.valid[i] {
			c.drop(i)
		}
	}
}

func (c *Cache[K, V]) drop(i int) {
	var zk K
	var zv V
	c.keys[i], c.vals[i], c.valid[i], c.stamp[i] = zk, zv, false, 0
	c.n--
}
