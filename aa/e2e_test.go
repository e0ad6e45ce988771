package aa

import (
	"bytes"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/sim"
)

func newCluster(t testing.TB, mut func(*Spec)) *Cluster {
	t.Helper()
	s := DefaultSpec()
	if mut != nil {
		mut(&s)
	}
	c, err := New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Plain RDMA WRITE and READ between two nodes.
func TestPutGetRMA(t *testing.T) {
	c := newCluster(t, nil)
	src, dst := c.Nodes[0], c.Nodes[1]
	buf := src.Alloc(8192)
	remote := dst.Alloc(8192)
	rw := iommu.Perm{Bits: pte.R | pte.W}
	if err := src.Register(buf, 8192, rw); err != nil {
		t.Fatal(err)
	}
	if err := dst.Register(remote, 8192, rw); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	src.Mem.Write(buf, data)
	var got []byte
	var errs []error
	src.Spawn(0, "app", func(x *Ctx) {
		x.P.Op("put")
		if _, err := x.Wait(x.Put(1, buf, remote+100, len(data))); err != nil {
			errs = append(errs, err)
		}
		x.P.Op("get")
		if _, err := x.Wait(x.Get(1, buf+4096, remote+100, len(data))); err != nil {
			errs = append(errs, err)
		}
		got = make([]byte, len(data))
		x.P.Read(buf+4096, got)
	})
	end := c.Run(10*sim.MS, c.AppsDone)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	remoteData := make([]byte, len(data))
	dst.Mem.Read(remote+100, remoteData)
	if !bytes.Equal(remoteData, data) {
		t.Fatal("the put's data did not land at the target")
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the get returned other data")
	}
	t.Logf("put + get of %d bytes over 1 GbE took %v", len(data), end.Human())
}
