package verbs

import (
	"slices"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Test polls without waiting: not done until the NIC completes the put,
// then done with the data in place; SQFree counts the slot until it is
// reaped. Two processes posting on one connection each get their own
// completion, whoever reaps it.
func TestTestAndSQFree(t *testing.T) {
	s := machine.DefaultSpec()
	s.Cores = 2
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Nodes[0], c.Nodes[1]
	src, dst := a.Alloc(4096), b.Alloc(4096)
	rw := iommu.Perm{Bits: pte.R | pte.W}
	if err := a.Register(src, 4096, rw); err != nil {
		t.Fatal(err)
	}
	if err := b.Register(dst, 4096, rw); err != nil {
		t.Fatal(err)
	}
	msg := []byte("hello, node one!")
	a.Mem.Write(src, msg)
	size := s.SQSize
	for k := 0; k < 2; k++ {
		k := k
		Spawn(a, k, "p", func(x *Ctx) {
			x.Core = 0 // both on core 0's connection
			off := uint64(8 * k)
			w := x.Put(1, src+off, dst+off, 8)
			if free := x.SQFree(1); free > size-1 {
				t.Errorf("process %d: %d free slots after posting", k, free)
			}
			polls := 0
			for {
				_, done, err := x.Test(w)
				if err != nil {
					t.Error(err)
				}
				if done {
					break
				}
				polls++
			}
			if polls == 0 {
				t.Errorf("process %d: done at the first test", k)
			}
			got := make([]byte, 8)
			b.Mem.Read(dst+off, got)
			if string(got) != string(msg[off:off+8]) {
				t.Errorf("process %d: %q arrived", k, got)
			}
		})
	}
	c.Run(sim.MS, c.AppsDone)
	if !c.AppsDone() {
		t.Fatal("did not finish")
	}
	if h := a.QP(1, 0); h.Completed != 2 || h.WRs.Open() != 0 {
		t.Errorf("%d completions reaped, %d left unclaimed", h.Completed, h.WRs.Open())
	}
}

// PostRecvs posts several receive buffers with one doorbell, across the
// ring's wrap: SENDs land in them in order.
func TestPostRecvs(t *testing.T) {
	s := machine.DefaultSpec()
	s.SQSize = 4
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Nodes[0], c.Nodes[1]
	src, dst := a.Alloc(4096), b.Alloc(4096)
	rw := iommu.Perm{Bits: pte.R | pte.W}
	a.Register(src, 4096, rw)
	b.Register(dst, 4096, rw)
	var got []string
	Spawn(b, 0, "receiver", func(x *Ctx) {
		x.PostRecv(0, dst+3000, 16) // the ring's first slot: the batch wraps
		x.Recv(0)
		x.PostRecvs(0, []uint64{dst, dst + 100, dst + 200, dst + 300}, 16)
		for i := 0; i < 4; i++ {
			cqe := x.Recv(0)
			m := make([]byte, cqe.Length)
			x.P.Read(dst+100*(cqe.WRID-1), m)
			got = append(got, string(m))
		}
	})
	Spawn(a, 0, "sender", func(x *Ctx) {
		for i, m := range []string{"zero", "one", "two", "three", "four"} {
			x.P.Write(src+uint64(16*i), []byte(m))
			x.Wait(x.Send(1, src+uint64(16*i), len(m)))
		}
	})
	c.Run(sim.MS, c.AppsDone)
	if want := []string{"one", "two", "three", "four"}; !slices.Equal(got, want) {
		t.Errorf("received %q, want %q", got, want)
	}
}
