package bgl

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// TestCosts checks a packet's costs: the paper's for a full packet, a
// share per 16-byte access for a shorter one, and the realigning copy.
func TestCosts(t *testing.T) {
	s := DefaultSpec(2, 1, 1)
	cases := []struct {
		name      string
		got, want int
	}{
		{"read 256 B", s.ReadCost(8), 204},
		{"read 32 B (2 of 16 loads)", s.ReadCost(1), 26},
		{"read 128 B", s.ReadCost(4), 102},
		{"write 256 B from cache", s.WriteCost(8, FromCache), 50},
		{"write 256 B from memory", s.WriteCost(8, FromMemory), 100},
		{"write 32 B from cache", s.WriteCost(1, FromCache), 7},
		{"write 32 B from memory", s.WriteCost(1, FromMemory), 13},
		{"copy 240 B at 4.3 B/cycle", s.CopyCost(240), 56},
		{"copy 43 B", s.CopyCost(43), 10},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %d cycles, want %d", c.name, c.got, c.want)
		}
	}
}

// TestPacketLayer runs the packet layer's operations from processes and
// checks what each returns and what it costs, to the cycle: a write
// (a status look and the stores), a poll, a peek that leaves the packet,
// aligned and misaligned reads, and reads and peeks of an empty FIFO.
func TestPacketLayer(t *testing.T) {
	spec := DefaultSpec(4, 2, 2)
	m, err := New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		t.Fatal(err)
	}
	period := spec.Torus.Period()
	cyc := func(d sim.Tick) int { return int(d / period) }
	a, b := m.Nodes[0], m.Nodes[1]
	var writeCost int
	var got []string
	a.Cores[0].Spawn("sender", func(p *cpu.Proc) {
		for k := 0; k < 2; k++ {
			t0 := p.Now()
			pk := &torus.Packet{Dst: b.Torus.At, Payload: []byte(strings.Repeat("x", 100))}
			if err := a.PL.Write(p, 0, pk, FromMemory); err != nil {
				t.Error(err)
			}
			writeCost = cyc(p.Now() - t0)
		}
	})
	b.Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		f := b.PL.Poll(p)
		t0 := p.Now()
		pk, err := b.PL.Peek(p, f)
		if err != nil || pk == nil || len(pk.Payload) != 100 {
			t.Errorf("peek: %v, %v", pk, err)
		}
		if c := cyc(p.Now() - t0); c != 13 {
			t.Errorf("peek cost %d cycles, want 13 (one 16-byte load)", c)
		}
		for _, aligned := range []bool{true, false} {
			f = b.PL.Poll(p)
			t0 = p.Now()
			pk, err = b.PL.Read(p, f, aligned)
			if err != nil || pk == nil {
				t.Fatalf("read: %v, %v", pk, err)
			}
			want := spec.ReadCost(4)
			if !aligned {
				want += spec.CopyCost(100)
			}
			if c := cyc(p.Now() - t0); c != want {
				t.Errorf("read (aligned %v) cost %d cycles, want %d", aligned, c, want)
			}
			got = append(got, string(pk.Payload[:3]))
		}
		if pk, err := b.PL.Read(p, f, true); pk != nil || err != nil {
			t.Errorf("read of an empty FIFO: %v, %v", pk, err)
		}
		if pk, err := b.PL.Peek(p, f); pk != nil || err != nil {
			t.Errorf("peek of an empty FIFO: %v, %v", pk, err)
		}
	})
	m.World.Run(sim.S)
	if len(got) != 2 {
		t.Fatalf("received %d packets, want 2", len(got))
	}
	if want := spec.StatusCycles + spec.WriteCost(4, FromMemory); writeCost != want {
		t.Fatalf("write cost %d cycles, want %d (a status look and the stores)", writeCost, want)
	}
}

// TestPingPong checks the packet layer's half round trip: each hop adds
// the torus's 63 cycles, and the packet layer's read and write costs are
// in it (raising one raises the half round trip by as much), give or
// take one poll (13 cycles).
func TestPingPong(t *testing.T) {
	base := DefaultSpec(8, 2, 2)
	half := func(s Spec, d int) int {
		h, err := PingPong(s, torus.Coord{}, torus.Coord{d, 0, 0}, 1, 8)
		if err != nil {
			t.Fatal(err)
		}
		return int(h / s.Torus.Period())
	}
	h1 := half(base, 1)
	if d := half(base, 4) - h1; d < 3*63-13 || d > 3*63+13 {
		t.Errorf("3 more hops add %d cycles, want %d ± 13", d, 3*63)
	}
	cases := []struct {
		name string
		edit func(*Spec)
		add  int // cycles more per half round trip
	}{
		{"slower reads", func(s *Spec) { s.ReadCycles = 2040 }, 255 - 26},
		{"slower writes", func(s *Spec) { s.WriteCacheCycles = 800 }, 100 - 7},
	}
	for _, c := range cases {
		s := base
		c.edit(&s)
		if d := half(s, 1) - h1; d < c.add-13 || d > c.add+13 {
			t.Errorf("%s: %d cycles more, want %d ± 13", c.name, d, c.add)
		}
	}
	t.Logf("half round trip at one hop: %d cycles", h1)
}

// TestExchange checks that large messages both ways on one link reach the
// link's payload rate both ways, 2 × η × 175 MB/s, and no more.
func TestExchange(t *testing.T) {
	s := DefaultSpec(4, 2, 2)
	bw, err := Exchange(s, torus.Coord{}, torus.Coord{1, 0, 0}, 7200, 6)
	if err != nil {
		t.Fatal(err)
	}
	bound := 2 * 700e6 / 4 * 240 / 270
	if bw > bound || bw < 0.97*bound {
		t.Fatalf("%.1f MB/s, want just below %.1f MB/s", bw/1e6, bound/1e6)
	}
}

// TestBadInput checks that what the packet layer cannot do is an error
// that says why.
func TestBadInput(t *testing.T) {
	s := DefaultSpec(4, 2, 2)
	bad := s
	bad.ReadCycles = 0
	if _, err := New(sim.NewWorld(1), "bgl", bad); err == nil || !strings.Contains(err.Error(), "bgl.read_cycles: 0 out of range") {
		t.Errorf("spec: %v", err)
	}
	zero := s
	zero.Torus.Dims[2] = 0
	if _, err := New(sim.NewWorld(1), "bgl", zero); err == nil || !strings.Contains(err.Error(), "torus.dims.z: 0") {
		t.Errorf("torus dimension 0: %v", err)
	}
	if _, err := PingPong(s, torus.Coord{}, torus.Coord{}, 1, 1); err == nil || !strings.Contains(err.Error(), "both ends") {
		t.Errorf("ping-pong to itself: %v", err)
	}
	if _, err := PingPong(s, torus.Coord{}, torus.Coord{1, 0, 0}, 300, 1); err == nil || !strings.Contains(err.Error(), "payload of 300") {
		t.Errorf("ping-pong over a packet: %v", err)
	}
	if _, err := Exchange(s, torus.Coord{}, torus.Coord{2, 1, 0}, 100, 1); err == nil || !strings.Contains(err.Error(), "not neighbours") {
		t.Errorf("exchange between non-neighbours: %v", err)
	}
	if _, err := PingPong(s, torus.Coord{}, torus.Coord{9, 0, 0}, 1, 1); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("node outside: %v", err)
	}
	m, _ := New(sim.NewWorld(1), "bgl", s)
	nd := m.Nodes[0]
	nd.Cores[0].Spawn("bad", func(p *cpu.Proc) {
		t0 := p.Now()
		err := nd.PL.Write(p, 0, &torus.Packet{Dst: torus.Coord{1, 0, 0}, Payload: make([]byte, 241)}, FromCache)
		if err == nil || !strings.Contains(err.Error(), "packet of 257 bytes") || p.Now() != t0 {
			t.Errorf("write of 257 bytes: %v, after %v", err, p.Now()-t0)
		}
		if _, err := nd.PL.Read(p, 7, true); err == nil || !strings.Contains(err.Error(), "reception FIFO 7 of 7") {
			t.Errorf("read FIFO 7: %v", err)
		}
		if _, err := nd.PL.Peek(p, -1); err == nil {
			t.Error("peek FIFO -1: no error")
		}
		if _, err := nd.PL.Room(p, 8); err == nil || !strings.Contains(err.Error(), "injection FIFO 8 of 8") {
			t.Errorf("room of FIFO 8: %v", err)
		}
	})
	m.World.Run(sim.S)
}
