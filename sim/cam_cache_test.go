package sim_test

import (
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/sim"
)

func TestCAM(t *testing.T) {
	c := sim.NewCAM[uint32, string](3)
	for i, k := range []uint32{10, 20, 30} {
		slot, err := c.Insert(k, fmt.Sprint("v", k))
		if err != nil || slot != i {
			t.Fatalf("insert %d: slot %d, %v", k, slot, err)
		}
	}
	if !c.Full() || c.Occupancy() != 3 {
		t.Fatal("CAM of 3 entries not full after 3 inserts")
	}
	if _, err := c.Insert(40, "x"); err == nil {
		t.Fatal("insert into a full CAM accepted")
	}
	if v, slot := c.Lookup(20); v == nil || *v != "v20" || slot != 1 {
		t.Fatalf("lookup 20: %v slot %d", v, slot)
	}
	if v, _ := c.Lookup(99); v != nil {
		t.Fatal("hit on an absent key")
	}
	if _, ok := c.Remove(10); !ok {
		t.Fatal("remove failed")
	}
	if _, ok := c.Remove(10); ok {
		t.Fatal("removed twice")
	}
	if _, err := c.Insert(20, "dup"); err == nil {
		t.Fatal("duplicate key accepted")
	}
	// The freed lowest slot is reused first.
	if slot, _ := c.Insert(50, "v50"); slot != 0 {
		t.Fatalf("reinsert took slot %d, want 0", slot)
	}
	var order []uint32
	c.Each(func(_ int, k uint32, _ *string) { order = append(order, k) })
	if fmt.Sprint(order) != "[50 20 30]" {
		t.Fatalf("slot order %v", order)
	}
}

func TestCacheEviction(t *testing.T) {
	cases := []struct {
		policy sim.Eviction
		// 2 ways, one set: insert 1, 2, touch 1, insert 3; which key is gone?
		evicted uint64
	}{
		{sim.LRU, 2},  // 1 was used after 2
		{sim.FIFO, 1}, // 1 came first; use does not count
	}
	for _, tc := range cases {
		t.Run(tc.policy.String(), func(t *testing.T) {
			c, err := sim.NewCache[uint64, int](1, 2, tc.policy, func(k uint64) uint64 { return k }, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Insert(1, 1)
			c.Insert(2, 2)
			if _, ok := c.Lookup(1); !ok {
				t.Fatal("miss on 1")
			}
			k, _, ev := c.Insert(3, 3)
			if !ev || k != tc.evicted {
				t.Fatalf("evicted %d (%v), want %d", k, ev, tc.evicted)
			}
		})
	}
}

// Fill chooses the same victims as Insert.
func TestCacheFillMatchesInsert(t *testing.T) {
	for _, pol := range []sim.Eviction{sim.LRU, sim.FIFO, sim.Random} {
		a, _ := sim.NewCache[uint64, int](4, 4, pol, func(k uint64) uint64 { return k }, sim.NewRand(1, "c"))
		b, _ := sim.NewCache[uint64, int](4, 4, pol, func(k uint64) uint64 { return k }, sim.NewRand(1, "c"))
		r := sim.NewRand(2, "keys")
		for i := 0; i < 5000; i++ {
			k := uint64(r.IntN(64))
			_, okA := a.Lookup(k)
			_, okB := b.Lookup(k)
			if okA != okB {
				t.Fatalf("%v: caches diverged at access %d", pol, i)
			}
			if !okA {
				a.Insert(k, i)
				b.Fill(k, i)
			}
		}
	}
}

func TestCacheSetsAndInvalidation(t *testing.T) {
	// 4 sets × 2 ways, set = key mod 4.
	c, _ := sim.NewCache[uint64, string](4, 2, sim.LRU, func(k uint64) uint64 { return k }, nil)
	for k := uint64(0); k < 8; k++ {
		if _, _, ev := c.Insert(k, fmt.Sprint(k)); ev {
			t.Fatalf("eviction while filling at %d", k)
		}
	}
	if c.Len() != 8 {
		t.Fatalf("len %d", c.Len())
	}
	// Set 1 holds 1 and 5; 9 evicts the LRU of the two.
	if k, _, ev := c.Insert(9, "9"); !ev || k != 1 {
		t.Fatalf("evicted %d", k)
	}
	if !c.Contains(0) || c.Contains(1) {
		t.Fatal("wrong set touched")
	}
	if !c.Invalidate(5) || c.Invalidate(5) {
		t.Fatal("page invalidation")
	}
	if n := c.InvalidateIf(func(k uint64, _ string) bool { return k%2 == 0 }); n != 4 {
		t.Fatalf("domain invalidation dropped %d, want 4", n)
	}
	c.InvalidateAll()
	if c.Len() != 0 {
		t.Fatal("global invalidation left entries")
	}
}

// Random eviction is seeded: the same seed evicts the same ways.
func TestCacheRandomEvictionIsSeeded(t *testing.T) {
	run := func(seed uint64) string {
		c, err := sim.NewCache[uint64, int](1, 4, sim.Random, func(uint64) uint64 { return 0 }, sim.NewRand(seed, "iotlb"))
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for k := uint64(0); k < 40; k++ {
			if ek, _, ev := c.Insert(k, 0); ev {
				out = append(out, ek)
			}
		}
		return fmt.Sprint(out)
	}
	if run(1) != run(1) {
		t.Fatal("same seed, different evictions")
	}
	if run(1) == run(2) {
		t.Fatal("different seeds, same evictions")
	}
	if _, err := sim.NewCache[uint64, int](1, 4, sim.Random, func(uint64) uint64 { return 0 }, nil); err == nil {
		t.Fatal("random eviction without a generator accepted")
	}
	if _, err := sim.ParseEviction("rnd"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.ParseEviction("plru"); err == nil {
		t.Fatal("unknown policy accepted")
	}
}

func TestStatsAndTime(t *testing.T) {
	e := sim.NewEngine(1)
	h := e.Stats().Histogram("lat", "ns", "latency", []uint64{10, 100})
	for _, v := range []uint64{5, 10, 11, 1000} {
		h.Observe(v)
	}
	if h.Count() != 4 || h.Sum() != 1026 {
		t.Fatalf("count %d sum %d", h.Count(), h.Sum())
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a statistic declared twice did not panic")
		}
	}()
	for _, tc := range []struct {
		in   string
		want sim.Tick
	}{{"250ns", 250 * sim.NS}, {"3us", 3 * sim.US}, {"12", 12}, {"1 ms", sim.MS}} {
		if got, err := sim.ParseTick(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseTick(%q) = %v, %v", tc.in, got, err)
		}
	}
	if p, err := sim.PeriodOfMHz(250); err != nil || p != 4000 {
		t.Errorf("250 MHz: %v %v", p, err)
	}
	if _, err := sim.PeriodOfMHz(300); err == nil {
		t.Error("300 MHz has no whole-picosecond period but was accepted")
	}
	// The nearest whole picosecond, halves up.
	for mhz, want := range map[uint64]sim.Tick{300: 3333, 600: 1667, 250: 4000, 1: 1_000_000, 1_000_000: 1, 1600: 625, 2400: 417, 3: 333333, 400_000: 3} {
		if p, err := sim.NearestPeriodOfMHz(mhz); err != nil || p != want {
			t.Errorf("NearestPeriodOfMHz(%d) = %v, %v; want %v", mhz, p, err, want)
		}
	}
	for _, mhz := range []uint64{0, 1_000_001} {
		if _, err := sim.NearestPeriodOfMHz(mhz); err == nil {
			t.Errorf("NearestPeriodOfMHz(%d) accepted", mhz)
		}
	}
	e.Stats().Counter("lat", "x", "y")
}

// Peek returns the entry without counting a use: under LRU the peeked
// entry is still the one evicted next.
func TestCachePeek(t *testing.T) {
	c, err := sim.NewCache[uint64, int](1, 2, sim.LRU, func(k uint64) uint64 { return k }, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Insert(1, 10)
	c.Insert(2, 20)
	if v, ok := c.Peek(1); !ok || v != 10 {
		t.Fatalf("Peek(1) = %d, %v", v, ok)
	}
	if _, ok := c.Peek(3); ok {
		t.Fatal("Peek(3) hit")
	}
	if k, _, ev := c.Insert(3, 30); !ev || k != 1 {
		t.Errorf("evicted %d (%v), want 1: the peek counted as a use", k, ev)
	}
}
