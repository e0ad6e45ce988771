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

	// The ways of set s are way[s*ways : (s+1)*ways]: a lookup reads one
	// contiguous run of entries.
	way   []cacheWay[K, V]
	clock uint64
	n     int
}

// cacheWay is one entry. stamp is the LRU last use or the FIFO insertion
// time; it is never 0 for a valid entry (the clock starts at 1), so 0 marks
// an empty way.
type cacheWay[K comparable, V any] struct {
	key   K
	stamp uint64
	val   V
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
	c := &Cache[K, V]{sets: sets, ways: ways, policy: policy, setOf: setOf, rng: rng,
		way: make([]cacheWay[K, V], sets*ways)}
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

// set returns the ways of the set that index selects.
func (c *Cache[K, V]) set(index uint64) []cacheWay[K, V] {
	var b int
	if c.setMask != 0 || c.sets == 1 {
		b = int(index&c.setMask) * c.ways
	} else {
		b = int(index%uint64(c.sets)) * c.ways
	}
	return c.way[b : b+c.ways]
}

// Lookup returns the value cached under k. A hit counts as a use for LRU.
func (c *Cache[K, V]) Lookup(k K) (V, bool) {
	if v := c.LookupIn(c.setOf(k), k); v != nil {
		return *v, true
	}
	var zero V
	return zero, false
}

// LookupIn is Lookup for a caller that already has k's set index (the
// IOMMU takes it from the address bits it holds): no call through setOf, and
// the entry comes back in place (nil on a miss) instead of as a copy, which
// costs a store-forwarding stall on every hit. The pointer is good until the
// cache next changes.
func (c *Cache[K, V]) LookupIn(index uint64, k K) *V {
	ways := c.set(index)
	for i := range ways {
		if w := &ways[i]; w.stamp != 0 && w.key == k {
			if c.policy == LRU {
				c.clock++
				w.stamp = c.clock
			}
			return &w.val
		}
	}
	return nil
}

// Peek returns the value cached under k without counting a use: a look
// that must leave the cache as it was.
func (c *Cache[K, V]) Peek(k K) (V, bool) {
	ways := c.set(c.setOf(k))
	for i := range ways {
		if ways[i].stamp != 0 && ways[i].key == k {
			return ways[i].val, true
		}
	}
	var zero V
	return zero, false
}

// Contains reports whether k is cached, without counting a use.
func (c *Cache[K, V]) Contains(k K) bool {
	ways := c.set(c.setOf(k))
	for i := range ways {
		if ways[i].stamp != 0 && ways[i].key == k {
			return true
		}
	}
	return false
}

// Insert caches v under k (replacing a present entry in place) and returns the
// entry it evicted, if any.
func (c *Cache[K, V]) Insert(k K, v V) (evictedKey K, evictedVal V, evicted bool) {
	ways := c.set(c.setOf(k))
	c.clock++
	victim := -1
	for i := range ways {
		w := &ways[i]
		if w.stamp != 0 && w.key == k {
			w.val = v
			if c.policy == LRU {
				w.stamp = c.clock
			}
			return
		}
		if w.stamp == 0 && victim < 0 {
			victim = i
		}
	}
	if victim < 0 {
		victim = c.victim(ways)
		evictedKey, evictedVal, evicted = ways[victim].key, ways[victim].val, true
	} else {
		c.n++
	}
	w := &ways[victim]
	w.key, w.stamp, w.val = k, c.clock, v
	return
}

// victim picks the way of a full set to replace: LRU and FIFO both evict the
// smallest stamp.
func (c *Cache[K, V]) victim(ways []cacheWay[K, V]) int {
	if c.policy == Random {
		return c.rng.IntN(len(ways))
	}
	v := 0
	for i := 1; i < len(ways); i++ {
		if ways[i].stamp < ways[v].stamp {
			v = i
		}
	}
	return v
}

// Fill caches v under k, which the caller knows is not cached (it just
// missed): one pass over the set finds a free way or the victim.
func (c *Cache[K, V]) Fill(k K, v V) { c.FillIn(c.setOf(k), k, v) }

// FillIn is Fill when the caller already has k's set index.
func (c *Cache[K, V]) FillIn(index uint64, k K, v V) {
	ways := c.set(index)
	c.clock++
	victim := -1
	for i := range ways {
		if ways[i].stamp == 0 {
			victim = i
			break
		}
	}
	if victim < 0 {
		victim = c.victim(ways)
	} else {
		c.n++
	}
	// Field by field: a composite literal is built on the stack and copied
	// with wide moves that stall on store forwarding.
	w := &ways[victim]
	w.key, w.stamp, w.val = k, c.clock, v
}

// Invalidate drops k; it reports whether k was cached.
func (c *Cache[K, V]) Invalidate(k K) bool {
	ways := c.set(c.setOf(k))
	for i := range ways {
		if ways[i].stamp != 0 && ways[i].key == k {
			c.drop(&ways[i])
			return true
		}
	}
	return false
}

// InvalidateIf drops every entry for which match returns true (a domain- or
// range-selective invalidation) and returns how many it dropped.
func (c *Cache[K, V]) InvalidateIf(match func(K, V) bool) int {
	n := 0
	for i := range c.way {
		if w := &c.way[i]; w.stamp != 0 && match(w.key, w.val) {
			c.drop(w)
			n++
		}
	}
	return n
}

// InvalidateAll empties the cache (a global invalidation).
func (c *Cache[K, V]) InvalidateAll() {
	for i := range c.way {
		if c.way[i].stamp != 0 {
			c.drop(&c.way[i])
		}
	}
}

func (c *Cache[K, V]) drop(w *cacheWay[K, V]) {
	*w = cacheWay[K, V]{}
	c.n--
}
