package mpi

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

func bglMachine(t testing.TB, x, y, z int) *bgl.Machine {
	t.Helper()
	m, err := bgl.New(sim.NewWorld(1), "bgl", bgl.DefaultSpec(x, y, z))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// pattern is message k's bytes from rank src.
func torusPattern(src, k, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(src*41 + k*13 + i + i>>8)
	}
	return b
}

// TestTorusDeliver sends messages of a range of sizes between every pair
// of ranks of a 2×2×2 torus, by each protocol of the message layer (and
// by MPI's rendezvous above the eager limit), and checks every byte and
// MPI's order (a pair's messages of one tag match in the order sent).
func TestTorusDeliver(t *testing.T) {
	sizes := []int{0, 1, 100, 239, 1000, 5000}
	for _, force := range []bglml.Protocol{bglml.Auto, bglml.OnePacket, bglml.Eager, bglml.AdaptiveEager} {
		t.Run(force.String(), func(t *testing.T) {
			m := bglMachine(t, 2, 2, 2)
			tc := TorusConfig{Force: force, Params: Params{EagerLimit: 1200}}
			if force == bglml.OnePacket {
				tc.Params.EagerLimit = 150 // what fits one packet with the header
			}
			var failed []string
			_, err := RunTorus(m, Config{}, tc, nil, func(c *Comm) {
				failed = append(failed, exchangeAll(c, sizes)...)
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range failed {
				t.Error(f)
			}
		})
	}
}

// TestTorusCollectives runs the MPI core's collectives over the torus
// transport: a broadcast of 10 kB from rank 3 and an allreduce (sum) on
// every rank of a 4×4×2 torus.
func TestTorusCollectives(t *testing.T) {
	m := bglMachine(t, 4, 4, 2)
	var failed []string
	_, err := RunTorus(m, Config{}, TorusConfig{}, nil, func(c *Comm) {
		b := c.Alloc(10000)
		if c.Rank() == 3 {
			c.Write(b, torusPattern(3, 0, 10000))
		}
		if err := c.Bcast(b, 3); err != nil {
			failed = append(failed, err.Error())
		}
		if !bytes.Equal(c.Read(b), torusPattern(3, 0, 10000)) {
			failed = append(failed, fmt.Sprintf("rank %d: broadcast differs", c.Rank()))
		}
		s, r := c.Alloc(16), c.Alloc(16)
		c.WriteUint64s(s, []uint64{uint64(c.Rank()), 1})
		if err := c.Allreduce(s, r, SumUint64); err != nil {
			failed = append(failed, err.Error())
		}
		if got := c.Uint64s(r); got[0] != 31*32/2 || got[1] != 32 {
			failed = append(failed, fmt.Sprintf("rank %d: allreduce %v", c.Rank(), got))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failed {
		t.Error(f)
	}
}

// TestTorusMapping runs a ring exchange with ranks placed by a mapping
// file (reversed XYZT) and checks each rank ran on its node.
func TestTorusMapping(t *testing.T) {
	dims := torus.Coord{2, 2, 2}
	var file strings.Builder
	for i := 7; i >= 0; i-- {
		fmt.Fprintf(&file, "%d %d %d\n", i%2, i/2%2, i/4)
	}
	nodeOf, err := bgl.ReadMapping("map.txt", strings.NewReader(file.String()), dims)
	if err != nil {
		t.Fatal(err)
	}
	m := bglMachine(t, 2, 2, 2)
	res, err := RunTorus(m, Config{}, TorusConfig{}, nodeOf, func(c *Comm) {
		b := c.Alloc(8)
		n := c.Size()
		if _, err := c.Sendrecv(b, (c.Rank()+1)%n, 0, b, (c.Rank()+n-1)%n, 0); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for r, p := range res.Places {
		if p.Node != 7-r {
			t.Errorf("rank %d on node %d, want %d", r, p.Node, 7-r)
		}
	}
}

// TestTorusBadInput: mapping files that place two ranks on one node, miss
// one, or leave the torus, and transport settings the layer cannot do.
func TestTorusBadInput(t *testing.T) {
	dims := torus.Coord{2, 2, 1}
	cases := []struct{ file, want string }{
		{"0 0 0\n1 0 0\n0 0 0\n1 1 0\n", "map.txt:3: mapping: rank 2 at (0,0,0), where rank 0 already is"},
		{"0 0 0\n1 0 0\n# three\n0 1 0\n", "map.txt:4: mapping: 3 ranks for 4 nodes: no rank at (1,1,0) (rank 3 is missing)"},
		{"0 0 0\n2 0 0\n", "map.txt:2: mapping.x: 2 outside the torus (0 to 1)"},
		{"0 0\n", "map.txt:1: mapping: \"0 0\": want x y z"},
		{"0 0 0 1\n", "map.txt:1: mapping.t: 1"},
		{"0 a 0\n", "map.txt:1: mapping.y: \"a\" is not a number"},
	}
	for _, c := range cases {
		if _, err := bgl.ReadMapping("map.txt", strings.NewReader(c.file), dims); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.file, err, c.want)
		}
	}
	m := bglMachine(t, 2, 2, 1)
	if _, err := RunTorus(m, Config{}, TorusConfig{Params: Params{Rendezvous: RendezvousPut}}, nil, func(*Comm) {}); err == nil || !strings.Contains(err.Error(), "the message layer's rendezvous is the receiver's get") {
		t.Errorf("put mode: %v", err)
	}
	if _, err := RunTorus(m, Config{}, TorusConfig{Force: bglml.OnePacket, Params: Params{EagerLimit: 300}}, nil, func(*Comm) {}); err == nil || !strings.Contains(err.Error(), "eager limit 300 with every message in one packet (at most 216)") {
		t.Errorf("one-packet limit: %v", err)
	}
	bad := TorusConfig{}
	bad.MPI.Recv[2] = -5
	if _, err := RunTorus(m, Config{}, bad, nil, func(*Comm) {}); err == nil || !strings.Contains(err.Error(), "mpi.costs.message.recv.adaptive-eager: -5 out of range (0 to 2^20 cycles)") {
		t.Errorf("a negative MPI cost: %v", err)
	}
	if c := (TorusConfig{Force: bglml.Eager}).WithProfile(bglml.Table1); c.MPI != Table1MPI || c.Costs != bglml.Table1.Costs() || c.Force != bglml.Eager {
		t.Errorf("WithProfile(table1): %+v", c)
	}
	if c := (TorusConfig{MPI: Table1MPI}).WithProfile(bglml.Estimated); c.MPI != (bglml.MessageCosts{}) || c.Costs != bglml.DefaultCosts() {
		t.Errorf("WithProfile(estimated): %+v", c)
	}
	if _, err := RunTorus(m, Config{}, TorusConfig{}, []int{0, 0}, func(*Comm) {}); err == nil || !strings.Contains(err.Error(), "both on node 0") {
		t.Errorf("two ranks on a node: %v", err)
	}
	if _, err := RunOn(bgl.Host{M: m}, Config{}, func(*Comm) {}); err == nil || !strings.Contains(err.Error(), "no transports") {
		t.Errorf("no transports: %v", err)
	}
}

// TestMPICH2Bcast broadcasts messages below and above the short-message
// limit (a binomial tree, then scatter and ring allgather) from several
// roots, on 5 and 8 ranks of the torus, and checks every byte.
func TestMPICH2Bcast(t *testing.T) {
	for _, dims := range [][3]int{{5, 1, 1}, {2, 2, 2}} {
		m := bglMachine(t, dims[0], dims[1], dims[2])
		var failed []string
		_, err := RunTorus(m, Config{Collectives: MPICH2{ShortBytes: 1000}}, TorusConfig{}, nil, func(c *Comm) {
			for k, size := range []int{600, 1003, 4096, 9999} {
				root := k % c.Size()
				b := c.Alloc(size)
				if c.Rank() == root {
					c.Write(b, torusPattern(root, k, size))
				}
				if err := c.Bcast(b, root); err != nil {
					failed = append(failed, err.Error())
				}
				if !bytes.Equal(c.Read(b), torusPattern(root, k, size)) {
					failed = append(failed, fmt.Sprintf("%v: rank %d: %d bytes from root %d differ", dims, c.Rank(), size, root))
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range failed {
			t.Error(f)
		}
	}
}

// exchangeAll has every rank send a message of each size to every other
// (all posted at once, tag 7) and receive theirs; it returns what
// differs from the senders' patterns.
func exchangeAll(c *Comm, sizes []int) (failed []string) {
	n, me := c.Size(), c.Rank()
	var reqs []*Request
	var bufs []Buf
	var want [][]byte
	for k, sz := range sizes {
		for peer := 0; peer < n; peer++ {
			if peer == me {
				continue
			}
			sb := c.Alloc(max(sz, 1))
			c.Write(Buf{Addr: sb.Addr, Len: sz}, torusPattern(me, k, sz))
			reqs = append(reqs, c.Isend(Buf{Addr: sb.Addr, Len: sz}, peer, 7))
			rb := c.Alloc(max(sz, 1))
			reqs = append(reqs, c.Irecv(Buf{Addr: rb.Addr, Len: sz}, peer, 7))
			bufs = append(bufs, Buf{Addr: rb.Addr, Len: sz})
			want = append(want, torusPattern(peer, k, sz))
		}
	}
	if _, err := c.Waitall(reqs...); err != nil {
		failed = append(failed, err.Error())
	}
	for i, b := range bufs {
		if !bytes.Equal(c.Read(b), want[i]) {
			failed = append(failed, fmt.Sprintf("rank %d: receive %d (%d bytes) differs", me, i, b.Len))
		}
	}
	return failed
}
