package iommu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

func pipelineSpec(slots, walkers int) Spec {
	s := DefaultSpec()
	s.Slots, s.Walkers = slots, walkers
	return s
}

// A stream of reads of one page from one device: one at a time, each
// takes ProcessPS after the first (the walk); pipelined, one is taken per
// edge, so the completions of IOTLB hits come one per edge too.
func TestPipelineHitRate(t *testing.T) {
	const n = 32
	for _, tc := range []struct {
		name        string
		spec        Spec
		minGap      sim.Tick // between the completions of consecutive hits, at least
		maxSpanHits sim.Tick // from the second completion to the last, at most
	}{
		{"one at a time", DefaultSpec(), 5 * sim.NS, sim.Never},
		{"pipelined", pipelineSpec(64, 16), 1 * sim.NS, (n - 2) * sim.NS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSystem(t, tc.spec, 1)
			if err := s.drv.Map(1, testIOVA, testPA, 4096, 4096, Perm{Bits: pte.R | pte.W}); err != nil {
				t.Fatal(err)
			}
			id := s.devs[0].id
			for i := 0; i < n; i++ {
				s.send(0, tlp.NewMemRead(id, uint16(i), testIOVA+uint64(i)*64, 4))
			}
			s.run()
			d := s.devs[0]
			if len(d.got) != n {
				t.Fatalf("%d completions, want %d", len(d.got), n)
			}
			for i := 2; i < n; i++ {
				if g := d.gotAt[i] - d.gotAt[i-1]; g < tc.minGap {
					t.Errorf("completions %d and %d %v apart, want at least %v", i-1, i, g, tc.minGap)
				}
			}
			span := d.gotAt[n-1] - d.gotAt[1]
			t.Logf("%v from the second completion to the last", span)
			if tc.maxSpanHits != sim.Never && span > tc.maxSpanHits {
				t.Errorf("hits took %v, want at most %v", span, tc.maxSpanHits)
			}
			if h, m := s.m.stTLBHits.Value(), s.m.stTLBMisses.Value(); h != n-1 || m != 1 {
				t.Errorf("%d hits, %d misses, want %d and 1", h, m, n-1)
			}
		})
	}
}

// Two devices each start a walk at once: one walker does them in turn,
// two overlap them.
func TestPipelineWalkers(t *testing.T) {
	first := map[int]sim.Tick{}
	for _, walkers := range []int{1, 2} {
		s := newSystem(t, pipelineSpec(64, walkers), 2)
		if err := s.drv.Map(1, testIOVA, testPA, 2*4096, 4096, Perm{Bits: pte.R | pte.W}); err != nil {
			t.Fatal(err)
		}
		for dev := 0; dev < 2; dev++ {
			s.send(dev, tlp.NewMemRead(s.devs[dev].id, 0, testIOVA+uint64(dev)*4096, 64))
		}
		s.run()
		a, b := s.devs[0].gotAt[0], s.devs[1].gotAt[0]
		first[walkers] = max(a, b) - min(a, b)
	}
	walk := 4 * DefaultSpec().MemAccessPS
	if first[1] < walk || first[2] >= walk {
		t.Errorf("the two walks' completions %v apart with one walker, %v with two; want ≥ %v and < %v", first[1], first[2], walk, walk)
	}
}

// The same mixed stimulus — writes and reads of mapped pages from two
// devices, an unmapped write, a logged write (WLD) and read (RL), each
// device reading back what it wrote to a page it has not touched — one at
// a time and pipelined: the same memory, the same completions to each
// device in the same order, the same records, faults and counters; a
// read never passes its device's earlier write.
func TestPipelineSameDecisions(t *testing.T) {
	type outcome struct {
		mem     []byte
		cpls    [2][]string
		records []string
		stats   string
	}
	run := func(spec Spec) outcome {
		s := newSystem(t, spec, 2)
		if err := s.drv.Map(1, testIOVA, testPA, 16*4096, 4096, Perm{Bits: pte.R | pte.W}); err != nil {
			t.Fatal(err)
		}
		if err := s.drv.Map(1, testIOVA+0x10_0000, testPA+0x10_0000, 4096, 4096, Perm{Bits: pte.R | pte.W | pte.WLD | pte.RL | pte.E, IUID: 3}); err != nil {
			t.Fatal(err)
		}
		if err := s.drv.RegisterLog(3, LogConfig{Base: testLog, Size: 0x10000}); err != nil {
			t.Fatal(err)
		}
		for dev := 0; dev < 2; dev++ {
			id := s.devs[dev].id
			base := testIOVA + uint64(dev)*8*4096
			var ts []tlp.TLP
			for i := 0; i < 8; i++ {
				a := base + uint64(i)*4096 + uint64(dev)*256
				ts = append(ts, tlp.NewMemWrite(id, 0, a, fill(256, byte(16*dev+i))), tlp.NewMemRead(id, uint16(i), a, 256))
			}
			ts = append(ts, tlp.NewMemWrite(id, 0, 0x7000_0000, fill(8, 1)),
				tlp.NewMemWrite(id, 0, testIOVA+0x10_0000+uint64(dev)*64, fill(64, byte(0x40+dev))),
				tlp.NewMemRead(id, 20, testIOVA+0x10_0000+uint64(dev)*64, 64))
			s.send(dev, ts...)
		}
		s.run()
		var o outcome
		o.mem = make([]byte, 17*4096)
		s.mem.Read(testPA, o.mem[:16*4096])
		s.mem.Read(testPA+0x10_0000, o.mem[16*4096:])
		for dev := 0; dev < 2; dev++ {
			for _, p := range s.devs[dev].got {
				o.cpls[dev] = append(o.cpls[dev], fmt.Sprintf("%d %v %x", p.TLP.Tag, p.TLP.Status, p.TLP.Data))
			}
		}
		for _, r := range s.records(3, true) {
			o.records = append(o.records, fmt.Sprintf("%d %x %d %x", r.Kind, r.IOVA, r.Requester, r.Data))
		}
		m := s.m
		o.stats = fmt.Sprint(m.stTLPs.Value(), m.stWrites.Value(), m.stReads.Value(), m.stTLBHits.Value(), m.stTLBMisses.Value(),
			m.stWalkReads.Value(), m.stFaults.Value(), m.stRecords.Value(), m.stDataLogged.Value())
		return o
	}
	one, pipe := run(DefaultSpec()), run(pipelineSpec(64, 16))
	if !bytes.Equal(one.mem, pipe.mem) {
		t.Error("memory differs")
	}
	for dev := 0; dev < 2; dev++ {
		if fmt.Sprint(one.cpls[dev]) != fmt.Sprint(pipe.cpls[dev]) {
			t.Errorf("device %d's completions differ:\n%v\n%v", dev, one.cpls[dev], pipe.cpls[dev])
		}
		for i, c := range pipe.cpls[dev][:8] {
			if want := fmt.Sprintf("%d SC %x", i, fill(256, byte(16*dev+i))); c != want {
				t.Errorf("device %d's read %d: %.40s…, want what it wrote before", dev, i, c)
			}
		}
	}
	// The two devices' logged accesses may be recorded in another order
	// (a port's TLPs keep their order, not the ports'), not other records.
	if len(one.records) != 4 || fmt.Sprint(sorted(one.records)) != fmt.Sprint(sorted(pipe.records)) {
		t.Errorf("records:\n%v\n%v", one.records, pipe.records)
	}
	if one.stats != pipe.stats {
		t.Errorf("counters: %s, pipelined %s", one.stats, pipe.stats)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Slots and walkers out of range are refused, naming the field.
func TestPipelineSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		slots, walkers int
		want           string
	}{
		{-1, 0, "slots: -1 out of 0..1024"},
		{2000, 1, "slots: 2000 out of 0..1024"},
		{8, 0, "walkers: 0 out of 1..slots (8)"},
		{8, 9, "walkers: 9 out of 1..slots (8)"},
		{0, 0, ""},
		{64, 16, ""},
	} {
		err := pipelineSpec(tc.slots, tc.walkers).Validate()
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("slots %d walkers %d: %v, want %q", tc.slots, tc.walkers, err, tc.want)
		}
	}
}

// In the pipeline a flush get makes its page active when it is taken: a
// second flush of the page, taken while the first is in flight, waits
// (one flush per page at a time), and both complete once the log is
// consumed.
func TestPipelineFlushOnePerPage(t *testing.T) {
	s := newSystem(t, pipelineSpec(64, 16), 1)
	if err := s.drv.Map(1, testIOVA, testPA, 2*4096, 4096, Perm{Bits: pte.R | pte.W}); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.RegisterLog(3, LogConfig{Base: testLog, Size: 0x1000}); err != nil {
		t.Fatal(err)
	}
	if err := s.drv.RegisterFlushPage(3, testIOVA+0x1000); err != nil {
		t.Fatal(err)
	}
	id := s.devs[0].id
	s.send(0, tlp.NewMemRead(id, 1, testIOVA+0x1000, 4), tlp.NewMemRead(id, 2, testIOVA+0x1000, 4))
	s.run()
	if got := len(s.devs[0].got); got != 2 || s.m.stFlushes.Value() != 2 {
		t.Errorf("%d completions, %d flushes; want 2 and 2", got, s.m.stFlushes.Value())
	}
	if s.m.stStallCycles.Value() == 0 {
		t.Error("the second flush never waited for the first")
	}
}

// A bypassed IOMMU forwards a TLP a cycle whatever Slots says: the same
// completions at the same times with and without a pipeline configured.
func TestPipelineIgnoredWhenBypassed(t *testing.T) {
	var at [2][]sim.Tick
	for k, slots := range []int{0, 64} {
		spec := pipelineSpec(slots, min(slots, 16))
		spec.Bypass = true
		s := newSystem(t, spec, 1)
		id := s.devs[0].id
		for i := 0; i < 8; i++ {
			s.send(0, tlp.NewMemWrite(id, 0, testPA+uint64(i)*256, fill(256, byte(i))), tlp.NewMemRead(id, uint16(i), testPA+uint64(i)*256, 256))
		}
		s.run()
		at[k] = s.devs[0].gotAt
	}
	if fmt.Sprint(at[0]) != fmt.Sprint(at[1]) || len(at[0]) != 8 {
		t.Errorf("completions at %v without slots, %v with", at[0], at[1])
	}
}
