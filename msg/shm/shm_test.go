package shm

import (
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

func node(t *testing.T, cores int) (*machine.Cluster, *machine.Node) {
	t.Helper()
	s := machine.DefaultSpec()
	s.Cores = cores
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	return c, c.Nodes[0]
}

// Several senders into one queue, small and bulk packets, a ring and a
// block pool smaller than the traffic: every packet arrives once, each
// sender's in its order, with its data; full queues refuse rather than
// overwrite.
func TestQueueManySenders(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		slots, blocks, senders int
		per                    int
	}{
		{"wide", 64, 8, 3, 40},
		{"tiny-ring", 2, 1, 3, 25},
		{"one-sender", 4, 2, 1, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, n := node(t, tc.senders+1)
			spec := Spec{Slots: tc.slots, Blocks: tc.blocks, BlockBytes: 256}
			g, err := New(n, tc.senders+1, spec)
			if err != nil {
				t.Fatal(err)
			}
			full := 0
			recvQ := tc.senders
			for s := 0; s < tc.senders; s++ {
				s := s
				n.Cores[s].Spawn("sender", func(p *cpu.Proc) {
					pt := g.Port(s, p)
					src := n.Alloc(256)
					for i := 0; i < tc.per; i++ {
						w := [Words]uint64{uint64(s), uint64(i)}
						size := 0
						if i%3 == 1 {
							size = 1 + i*5%256
							b := make([]byte, size)
							for k := range b {
								b[k] = byte(s*31 + i + k)
							}
							p.Write(src, b)
						}
						for !pt.Send(recvQ, &w, src, size) {
							full++
							p.Sleep(200 * sim.NS)
						}
					}
				})
			}
			next := make([]int, tc.senders)
			total := 0
			n.Cores[recvQ].Spawn("receiver", func(p *cpu.Proc) {
				pt := g.Port(recvQ, p)
				for total < tc.senders*tc.per {
					pk, ok := pt.Poll()
					if !ok {
						continue
					}
					s, i := int(pk.W[0]), int(pk.W[1])
					if i != next[s] {
						t.Errorf("sender %d: packet %d, want %d", s, i, next[s])
					}
					next[s] = i + 1
					if i%3 == 1 {
						want := 1 + i*5%256
						if pk.Len != want || pk.Block < 0 {
							t.Errorf("sender %d packet %d: %d bulk bytes in block %d, want %d", s, i, pk.Len, pk.Block, want)
						}
						b := make([]byte, pk.Len)
						p.Read(pk.Data, b)
						for k := range b {
							if b[k] != byte(s*31+i+k) {
								t.Fatalf("sender %d packet %d byte %d: %d", s, i, k, b[k])
							}
						}
					} else if pk.Block >= 0 {
						t.Errorf("sender %d packet %d: a bulk block for no data", s, i)
					}
					p.Compute(100) // a slow receiver: the ring fills
					pt.Release(&pk)
					total++
				}
			})
			c.Run(sim.S, c.AppsDone)
			if !c.AppsDone() || total != tc.senders*tc.per {
				t.Fatalf("received %d of %d", total, tc.senders*tc.per)
			}
			if tc.slots == 2 && full == 0 {
				t.Error("a two-slot ring never refused a packet")
			}
			t.Logf("%d refusals, receiver done at %v", full, c.Now().Human())
		})
	}
}

func TestSpecValidate(t *testing.T) {
	for _, s := range []Spec{{Slots: 1, Blocks: 1, BlockBytes: 64}, {Slots: 4, Blocks: 0, BlockBytes: 64},
		{Slots: 4, Blocks: 1, BlockBytes: 100}, {Slots: 4, Blocks: 1 << 16, BlockBytes: 64}} {
		if s.Validate() == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if err := DefaultSpec().Validate(); err != nil {
		t.Error(err)
	}
	if b := DefaultSpec().QueueBytes(); b != 64+256*64+16*64+16*8192 {
		t.Errorf("default queue of %d bytes", b)
	}
}
