package mpi

import (
	"sync"

	"github.com/aaemu/aaemu/sim"
)

// Loopback returns n communicators joined in this process, one per rank,
// each for its own goroutine: the ranks of one run without MPI, for tests
// of what crosses them.
func Loopback(n int) []sim.Comm {
	h := &hub{n: n, in: make([]any, n)}
	h.cond = sync.NewCond(&h.mu)
	out := make([]sim.Comm, n)
	for r := range out {
		out[r] = &loopComm{h: h, rank: r}
	}
	return out
}

// hub runs one collective at a time: each rank deposits its part, the last
// to arrive publishes all of them, and everyone reads them before the next.
type hub struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	in      []any
	arrived int
	gen     uint64
	out     []any
}

func (h *hub) round(rank int, v any) []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	gen := h.gen
	h.in[rank] = v
	h.arrived++
	if h.arrived == h.n {
		h.out, h.in = h.in, make([]any, h.n)
		h.arrived = 0
		h.gen++
		h.cond.Broadcast()
		return h.out
	}
	for h.gen == gen {
		h.cond.Wait()
	}
	return h.out
}

type loopComm struct {
	h    *hub
	rank int
}

func (c *loopComm) Rank() int { return c.rank }
func (c *loopComm) Size() int { return c.h.n }

type exchangePart struct {
	send [][]byte
	red  []uint64
}

func (c *loopComm) Exchange(send [][]byte, red []uint64) [][]byte {
	p := exchangePart{send: make([][]byte, len(send)), red: append([]uint64(nil), red...)}
	for i, b := range send {
		p.send[i] = append([]byte(nil), b...)
	}
	all := c.h.round(c.rank, p)
	out := make([][]byte, c.h.n)
	for r, v := range all {
		q := v.(exchangePart)
		out[r] = q.send[c.rank]
		for i, x := range q.red {
			red[i] = min(red[i], x)
		}
	}
	return out
}

func (c *loopComm) AllreduceMin(v []uint64) {
	all := c.h.round(c.rank, append([]uint64(nil), v...))
	for _, o := range all {
		for i, x := range o.([]uint64) {
			v[i] = min(v[i], x)
		}
	}
}

func (c *loopComm) Allgather(b []byte) [][]byte {
	all := c.h.round(c.rank, append([]byte(nil), b...))
	out := make([][]byte, c.h.n)
	for r, v := range all {
		out[r] = v.([]byte)
	}
	return out
}
