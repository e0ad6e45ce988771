package lcp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// pattern is n bytes that differ from one message (seed) to another and
// along the message, so a misplaced fragment shows.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>12 + i>>20 + seed*31)
	}
	return b
}

func newCluster(t *testing.T, nics int) *machine.Cluster {
	t.Helper()
	c, err := machine.New(sim.NewEngine(1), MultirailSpec(nics, true))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// guard is what the bytes after a received message hold: the message must
// not spill over them.
const guard = 4096

// transfer sends size bytes from rank 0 to rank 1 under cfg and checks
// that every byte arrived in place and nothing after it changed; it
// returns the run's result.
func transfer(t *testing.T, nics, size int, cfg Config) *Result {
	t.Helper()
	c := newCluster(t, nics)
	want := pattern(size, 1)
	var got, after []byte
	res, err := Run(c, cfg, func(p *Proc) {
		if p.Rank() == 0 {
			b := p.Alloc(size)
			p.Node().Mem.Write(b.Addr, want)
			if err := p.Send(b, 1, 5); err != nil {
				t.Error(err)
			}
			return
		}
		b := p.Alloc(size + guard)
		p.Node().Mem.Write(b.Addr, bytes.Repeat([]byte{0xa5}, size+guard))
		st, err := p.Recv(b.Slice(0, size), 0, 5)
		if err != nil || st.Count != size || st.Source != 0 || st.Tag != 5 {
			t.Errorf("status %+v, %v", st, err)
		}
		got, after = make([]byte, size), make([]byte, guard)
		p.Node().Mem.Read(b.Addr, got)
		p.Node().Mem.Read(b.Addr+uint64(size), after)
	})
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("byte %d of %d differs: got %#x, want %#x", i, size, got[i], want[i])
	}
	if !bytes.Equal(after, bytes.Repeat([]byte{0xa5}, guard)) {
		t.Fatal("the message spilled over the bytes after the receive buffer")
	}
	return res
}

func firstDiff(a, b []byte) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// checkRoundRobin checks that the sender posted fragment i on rail i mod
// rails: rail r carries ⌈(k − r)/rails⌉ of the k fragments.
func checkRoundRobin(t *testing.T, st Stats, k, rails int) {
	t.Helper()
	for r := 0; r < rails; r++ {
		want := uint64(max(k-r+rails-1, 0) / rails)
		if st.Fragments[r] != want {
			t.Errorf("rail %d carried %d fragments, want %d of %d round-robin (%v)", r, st.Fragments[r], want, k, st.Fragments)
		}
	}
}

// Striping at the paper's sizes scaled to 64 kB fragments (the paper's
// 64 MB ones, 1/1024): 0 B, 8 KB − 1 (the last eager size), 8 KB (the
// first rendezvous), a fragment − 1 and + 1, and 300 "MB" (4.7
// fragments), over 1 to 4 NICs, with RPUT and RGET.
func TestStriping(t *testing.T) {
	const frag = 64 << 10
	for _, proto := range []Protocol{RPUT, RGET} {
		for nics := 1; nics <= 4; nics++ {
			for _, size := range []int{0, 8191, 8192, frag - 1, frag + 1, 300 << 10} {
				t.Run(fmt.Sprintf("%s,nics=%d,size=%d", proto, nics, size), func(t *testing.T) {
					cfg := DefaultConfig()
					cfg.FragmentBytes, cfg.Protocol = frag, proto
					res := transfer(t, nics, size, cfg)
					k := 0
					if size >= cfg.EagerLimit {
						k = (size + frag - 1) / frag
					}
					poster := 0 // the RPUT sender writes the fragments, the RGET receiver reads them
					if proto == RGET {
						poster = 1
					}
					checkRoundRobin(t, res.Stats[poster], k, nics)
					if eager := size < cfg.EagerLimit; eager != (res.Stats[0].Eager == 1) {
						t.Errorf("eager %v, but stats %+v", eager, res.Stats[0])
					}
				})
			}
		}
	}
}

// The paper's sizes themselves, with its 64 MB fragments: 64 MB − 1 (one
// fragment) and + 1 (two) over two NICs, 300 MB (five) over four. They
// move 430 MB through the cycle-level blocks, about 15 s on two busy
// cores; -short leaves them out.
func TestStripingPaperSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 430 MB through the cycle-level blocks")
	}
	for _, tc := range []struct{ nics, size, k int }{{2, 64<<20 - 1, 1}, {2, 64<<20 + 1, 2}, {4, 300 << 20, 5}} {
		t.Run(fmt.Sprintf("nics=%d,size=%d", tc.nics, tc.size), func(t *testing.T) {
			res := transfer(t, tc.nics, tc.size, DefaultConfig())
			checkRoundRobin(t, res.Stats[0], tc.k, tc.nics)
		})
	}
}

// A receive posted after its message arrived (unexpected) still matches:
// an eager message, an RPUT and an RGET rendezvous request wait in the
// matching unit's unexpected list; a wildcard receive takes the first that
// matches in arrival order, exact ones skip non-matching entries.
func TestUnexpected(t *testing.T) {
	for _, tc := range []struct {
		proto Protocol
		match Matching
	}{{RPUT, OnPoll}, {RGET, OnPoll}, {RPUT, OnArrival}, {RGET, OnArrival}} {
		proto := tc.proto
		t.Run(proto.String()+","+tc.match.String(), func(t *testing.T) {
			c := newCluster(t, 2)
			cfg := DefaultConfig()
			cfg.FragmentBytes, cfg.Protocol, cfg.Matching = 16<<10, proto, tc.match
			sizes := []int{100, 50000, 8191, 20000} // tags 0..3
			res, err := Run(c, cfg, func(p *Proc) {
				if p.Rank() == 0 {
					var qs []*Request
					for i, n := range sizes {
						b := p.Alloc(n)
						p.Node().Mem.Write(b.Addr, pattern(n, i))
						q, err := p.Isend(b, 1, i)
						if err != nil {
							t.Fatal(err)
						}
						qs = append(qs, q)
					}
					if err := p.Waitall(qs...); err != nil {
						t.Error(err)
					}
					return
				}
				p.Proc().Sleep(200 * sim.US) // every request has arrived by now
				// Tag 3 first (skipping three), then any tag in arrival order.
				order := []int{3, AnyTag, AnyTag, AnyTag}
				wantTag := []int{3, 0, 1, 2}
				for i, tag := range order {
					b := p.Alloc(sizes[wantTag[i]])
					st, err := p.Recv(b, AnySource, tag)
					if err != nil || st.Tag != wantTag[i] || st.Source != 0 || st.Count != sizes[wantTag[i]] {
						t.Errorf("receive %d: status %+v, %v; want tag %d", i, st, err, wantTag[i])
						continue
					}
					got := make([]byte, st.Count)
					p.Node().Mem.Read(b.Addr, got)
					if !bytes.Equal(got, pattern(st.Count, st.Tag)) {
						t.Errorf("receive %d (tag %d): the bytes differ", i, st.Tag)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if u := res.Stats[1].Unexpected; u != 4 {
				t.Errorf("%d unexpected messages, want 4", u)
			}
			if s := res.Stats[1].Searched; s < 4+3 {
				t.Errorf("the matching units examined %d entries, want at least 7 (tag 3 behind three others)", s)
			}
			if z := res.Stats[1].ZeroCopy; z != 0 {
				t.Errorf("%d unexpected messages delivered in place, want 0 (they had no receive yet)", z)
			}
		})
	}
}

// Two ranks exchanging large messages at once (PingPing) both complete,
// every rail of both nodes busy together: sampled every 20 µs, some
// interval sees every NIC's byte counter grow.
func TestExchange(t *testing.T) {
	const nics, size = 4, 1 << 20
	c := newCluster(t, nics)
	cfg := DefaultConfig()
	cfg.FragmentBytes = 64 << 10
	var samples [][]uint64
	c.Nodes[0].Poller.Spawn("sampler", func(cp *cpu.Proc) {
		for k := 0; k < 200; k++ {
			var row []uint64
			for _, n := range c.Nodes {
				for r := 0; r < nics; r++ {
					row = append(row, n.RailBytes(r))
				}
			}
			samples = append(samples, row)
			cp.Sleep(20 * sim.US)
		}
	})
	got := make([][]byte, 2)
	_, err := Run(c, cfg, func(p *Proc) {
		me, peer := p.Rank(), 1-p.Rank()
		s, r := p.Alloc(size), p.Alloc(size)
		p.Node().Mem.Write(s.Addr, pattern(size, me))
		qs, err := p.Isend(s, peer, 9)
		if err != nil {
			t.Fatal(err)
		}
		qr, err := p.Irecv(r, peer, 9)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Waitall(qs, qr); err != nil {
			t.Error(err)
		}
		got[me] = make([]byte, size)
		p.Node().Mem.Read(r.Addr, got[me])
	})
	if err != nil {
		t.Fatal(err)
	}
	for me := range got {
		if !bytes.Equal(got[me], pattern(size, 1-me)) {
			t.Errorf("rank %d received other bytes", me)
		}
	}
	together := 0
	for k := 1; k < len(samples); k++ {
		all := true
		for i := range samples[k] {
			if samples[k][i]-samples[k-1][i] < 64<<10 { // a fragment's worth in 20 µs: ~3 GB/s
				all = false
			}
		}
		if all {
			together++
		}
	}
	if together == 0 {
		t.Errorf("no 20 µs interval with all %d NICs of both nodes sending; samples %v", nics, samples[:min(len(samples), 12)])
	}
}

// Registration: a descriptor per fragment on each side, or (PerNIC) one per
// rail that carries fragments.
func TestRegistrations(t *testing.T) {
	const frag = 16 << 10
	for _, tc := range []struct {
		proto     Protocol
		reg       Registration
		nics      int
		send, rcv uint64
	}{
		{RPUT, PerFragment, 2, 10, 10},
		{RPUT, PerNIC, 2, 2, 2},
		{RPUT, PerNIC, 4, 4, 4},
		{RGET, PerFragment, 3, 10, 10},
		{RGET, PerNIC, 3, 3, 3},
	} {
		t.Run(fmt.Sprintf("%s,%s,nics=%d", tc.proto, tc.reg, tc.nics), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.FragmentBytes, cfg.Protocol, cfg.Registration = frag, tc.proto, tc.reg
			res := transfer(t, tc.nics, 10*frag, cfg)
			if s, r := res.Stats[0].Registrations, res.Stats[1].Registrations; s != tc.send || r != tc.rcv {
				t.Errorf("registrations: sender %d, receiver %d; want %d and %d", s, r, tc.send, tc.rcv)
			}
		})
	}
}

// A message longer than its receive buffer: its first bytes arrive and the
// receive reports ErrTruncate, eager and rendezvous.
func TestTruncate(t *testing.T) {
	for _, size := range []int{1000, 100000} {
		c := newCluster(t, 2)
		cfg := DefaultConfig()
		cfg.FragmentBytes = 16 << 10
		_, err := Run(c, cfg, func(p *Proc) {
			b := p.Alloc(size)
			if p.Rank() == 0 {
				p.Node().Mem.Write(b.Addr, pattern(size, 3))
				if err := p.Send(b, 1, 0); err != nil {
					t.Error(err)
				}
				return
			}
			st, err := p.Recv(b.Slice(0, size/2), 0, 0)
			if err == nil || !strings.Contains(err.Error(), "truncated") || st.Count != size/2 {
				t.Errorf("size %d: status %+v, error %v", size, st, err)
			}
			got := make([]byte, size/2)
			p.Node().Mem.Read(b.Addr, got)
			if !bytes.Equal(got, pattern(size, 3)[:size/2]) {
				t.Errorf("size %d: the first bytes differ", size)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Bad configurations and calls are errors, not panics.
func TestBadInput(t *testing.T) {
	mtu := MultirailSpec(1, true).NIC.PMTU
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"fragment 0", func(c *Config) { c.FragmentBytes = 0 }, "fragment size 0"},
		{"fragment negative", func(c *Config) { c.FragmentBytes = -4096 }, "fragment size -4096"},
		{"fragment not a multiple of the MTU", func(c *Config) { c.FragmentBytes = mtu + 512 }, "not a multiple of the path MTU"},
		{"fragment below the MTU", func(c *Config) { c.FragmentBytes = mtu / 2 }, "not a multiple of the path MTU"},
		{"5 rails on 4 NICs", func(c *Config) { c.Rails = 5 }, "5 rails, want 1..4"},
		{"eager limit", func(c *Config) { c.EagerLimit = MaxEager + 1 }, "eager limit"},
		{"one rank", func(c *Config) { c.Places = []Place{{0, 0}} }, "1 ranks"},
		{"two ranks a core", func(c *Config) { c.Places = []Place{{0, 0}, {0, 0}} }, "both on node 0 core 0"},
		{"no such core", func(c *Config) { c.Places = []Place{{0, 0}, {1, 3}} }, "no such core"},
		{"slots", func(c *Config) { c.Slots = 1 }, "receive slots"},
		{"matching", func(c *Config) { c.Matching = 3 }, "matching 3, want on-poll or on-arrival"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.set(&cfg)
			_, err := Run(newCluster(t, 4), cfg, func(p *Proc) { t.Error("ran") })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	for _, nics := range []int{-1, 5} {
		if _, err := machine.New(sim.NewEngine(1), MultirailSpec(nics, true)); err == nil {
			t.Errorf("a machine with %d NICs a node was built", nics)
		}
	}
	// Calls with a bad rank or tag return errors.
	_, err := Run(newCluster(t, 1), DefaultConfig(), func(p *Proc) {
		b := p.Alloc(8)
		for _, call := range []func() error{
			func() error { _, err := p.Isend(b, 7, 0); return err },
			func() error { _, err := p.Isend(b, p.Rank(), 0); return err },
			func() error { _, err := p.Isend(b, 1-p.Rank(), -3); return err },
			func() error { _, err := p.Irecv(b, 9, 0); return err },
			func() error { _, err := p.Irecv(b, AnySource, -2); return err },
		} {
			if call() == nil {
				t.Errorf("rank %d: a bad call was accepted", p.Rank())
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The srd transport has one receive queue for every node: refused.
	s := MultirailSpec(2, true)
	s.Transport = machine.TransportSRD
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(c, DefaultConfig(), func(*Proc) {}); err == nil || !strings.Contains(err.Error(), "rc") {
		t.Errorf("srd: error %v", err)
	}
}

// Matching on arrival (BXI's, in the NIC): a receive posted before its
// message, behind a posted-receive list of many others, is matched while
// the message comes in, and eager data lands in its buffer without a copy
// by the core; on poll the rank searches and copies after taking the
// message. Both deliver the same bytes; on arrival the receive completes
// earlier, by no more than the search and the copy it saves.
func TestMatchOnArrival(t *testing.T) {
	const others, size = 300, 8000 // the message's receive behind 300 others; one eager message
	type out struct {
		res  *Result
		got  []byte
		done sim.Tick // when the receive of the eager message completed
	}
	run := func(m Matching) out {
		c := newCluster(t, 1)
		cfg := DefaultConfig()
		cfg.Matching = m
		var o out
		var err error
		o.res, err = Run(c, cfg, func(p *Proc) {
			if p.Rank() == 0 {
				b := p.Alloc(size)
				p.Node().Mem.Write(b.Addr, pattern(size, 3))
				p.Proc().Sleep(100 * sim.US) // the receives are posted first
				if err := p.Send(b, 1, others); err != nil {
					t.Error(err)
				}
				for tag := 0; tag < others; tag++ { // then the ones the others wait for
					if err := p.Send(p.Alloc(8), 1, tag); err != nil {
						t.Error(err)
					}
				}
				return
			}
			var qs []*Request
			for tag := 0; tag < others; tag++ {
				q, err := p.Irecv(p.Alloc(8), 0, tag)
				if err != nil {
					t.Fatal(err)
				}
				qs = append(qs, q)
			}
			b := p.Alloc(size)
			q, err := p.Irecv(b, 0, others)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Wait(q); err != nil {
				t.Error(err)
			}
			o.done = p.Now()
			o.got = make([]byte, size)
			p.Node().Mem.Read(b.Addr, o.got)
			if err := p.Waitall(qs...); err != nil {
				t.Error(err)
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		return o
	}
	poll, arr := run(OnPoll), run(OnArrival)
	for _, o := range []out{poll, arr} {
		if !bytes.Equal(o.got, pattern(size, 3)) {
			t.Fatal("the eager message's bytes differ")
		}
	}
	if z := poll.res.Stats[1].ZeroCopy; z != 0 {
		t.Errorf("on poll: %d messages delivered in place, want 0", z)
	}
	if z := arr.res.Stats[1].ZeroCopy; z != 1+others {
		t.Errorf("on arrival: %d messages delivered in place, want all %d (every receive was posted first)", z, 1+others)
	}
	if a, b := poll.res.Stats[1].Searched, arr.res.Stats[1].Searched; a != b || a < others+1 {
		t.Errorf("entries searched: on poll %d, on arrival %d; want the same, at least %d", a, b, others+1)
	}
	// What on arrival saves: the search of others+1 entries at MatchPS and
	// the core's copy of size bytes (a load and a store of each 64-byte
	// line, MemAccessPS each).
	spec := MultirailSpec(1, true)
	cfg := DefaultConfig()
	saved := sim.Tick(others+1)*cfg.MatchPS + 2*sim.Tick((size+63)/64)*spec.CPU.MemAccessPS
	if d := poll.done - arr.done; d <= 0 || d > saved {
		t.Errorf("the receive completed at %v on poll, %v on arrival: %v earlier, want (0, %v]", poll.done, arr.done, d, saved)
	}
}
