package mpi_test

import (
	"fmt"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

// A token goes round a ring of 8 ranks (2 nodes × 4 cores): every rank
// adds its rank and passes it on; then an allreduce sums the ranks.
func ExampleRun() {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores = 2, 4
	cluster, err := machine.New(sim.NewEngine(1), spec)
	if err != nil {
		panic(err)
	}
	var token, sum uint64
	_, err = mpi.Run(cluster, mpi.Config{}, func(c *mpi.Comm) {
		r, n := c.Rank(), c.Size()
		buf := c.Alloc(8)
		if r == 0 {
			c.WriteUint64s(buf, []uint64{0})
			c.Send(buf, 1, 0)
			c.Recv(buf, n-1, 0)
			token = c.Uint64s(buf)[0]
		} else {
			c.Recv(buf, r-1, 0)
			c.WriteUint64s(buf, []uint64{c.Uint64s(buf)[0] + uint64(r)})
			c.Send(buf, (r+1)%n, 0)
		}
		in, out := c.Alloc(8), c.Alloc(8)
		c.WriteUint64s(in, []uint64{uint64(r)})
		c.Allreduce(in, out, mpi.SumUint64)
		if r == 0 {
			sum = c.Uint64s(out)[0]
		}
	})
	fmt.Println(token, sum, err)
	// Output: 28 28 <nil>
}

// Ping-pong between two nodes: the round-trip time of 8 bytes.
func Example_pingPong() {
	cluster, _ := machine.New(sim.NewEngine(1), machine.DefaultSpec())
	var rtt sim.Tick
	mpi.Run(cluster, mpi.Config{}, func(c *mpi.Comm) {
		buf := c.Alloc(8)
		for i := 0; i < 10; i++ {
			t0 := c.Now()
			if c.Rank() == 0 {
				c.Send(buf, 1, 0)
				c.Recv(buf, 1, 0)
				rtt = c.Now() - t0
			} else {
				c.Recv(buf, 0, 0)
				c.Send(buf, 0, 0)
			}
		}
	})
	fmt.Println(rtt > 5*sim.US && rtt < 50*sim.US)
	// Output: true
}
