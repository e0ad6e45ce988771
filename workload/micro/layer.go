package micro

import (
	"fmt"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
)

// Layer is a message layer the microbenchmarks measure: it places two
// parties on the configuration's path on a fresh machine and runs the
// benchmark's program on both. The measurements (PingPong, MeasureLogGP)
// are written once against Side; a layer only supplies the primitives.
type Layer interface {
	// Name is the layer's name on the command line and in tables.
	Name() string
	// Run builds the machine of c, places the two sides on c.Path and
	// runs body as each side's program until both return. A side's
	// failure (a layer error: the benchmark's programs send what the
	// other receives) is Run's error.
	Run(c Config, body func(s Side)) error
}

// Side is one of the two parties of a microbenchmark, as its program sees
// the layer. Every call is made by the side's own process and costs what
// the layer's mechanism costs; a layer error panics, and the layer's Run
// reports it.
type Side interface {
	Rank() int                 // 0 or 1
	Now() sim.Tick             // the simulated time
	Sleep(d sim.Tick)          // wait d without using the core
	Alloc(n int) Buf           // an n-byte buffer in the side's node memory
	Send(b Buf, tag int)       // send b's bytes to the peer, returning when b may be reused
	Recv(b Buf, tag int)       // receive the peer's next message of b.Len bytes into b
	SendAll(bs []Buf, tag int) // send the buffers back to back, returning when all may be reused
	RecvAll(bs []Buf, tag int) // receive that many messages, in order, into the buffers
	Barrier()                  // both sides have arrived
}

// Buf is a buffer in a side's node memory.
type Buf struct {
	Addr uint64
	Len  int
}

// Slice is n bytes of b from off.
func (b Buf) Slice(off, n int) Buf {
	if off < 0 || n < 0 || off+n > b.Len {
		panic(fmt.Sprintf("micro: slice [%d, %d) of a %d-byte buffer", off, off+n, b.Len))
	}
	return Buf{Addr: b.Addr + uint64(off), Len: n}
}

// The layers.
var (
	MPI Layer = mpiLayer{} // the MPI core (msg/mpi): its transports and protocols
	AM2 Layer = am2Layer{} // Active Messages II (msg/am2): its shared-memory queue block, its network protocol
)

// Layers lists the layers in the order tables give them.
var Layers = []Layer{MPI, AM2}

// ParseLayer reads a layer's name.
func ParseLayer(s string) (Layer, error) {
	for _, l := range Layers {
		if l.Name() == s {
			return l, nil
		}
	}
	return nil, fmt.Errorf("layer %q: want mpi (the MPI core) or am2 (Active Messages II)", s)
}

// mpiLayer runs the sides as the two ranks of the MPI core.
type mpiLayer struct{}

func (mpiLayer) Name() string { return "mpi" }

func (mpiLayer) Run(c Config, body func(s Side)) error {
	spec := c.Machine
	switch c.Path {
	case IntraNode:
		spec.Cores = max(spec.Cores, 2)
	case InterNode:
		spec.Nodes = max(spec.Nodes, 2)
	default:
		return fmt.Errorf("micro: path %q", c.Path)
	}
	cl, err := machine.New(sim.NewEngine(c.Seed), spec)
	if err != nil {
		return err
	}
	cfg := c.MPI
	cfg.Ranks = 2
	cfg.Place = func(r int) mpi.Place {
		if c.Path == IntraNode {
			return mpi.Place{Node: 0, Core: r}
		}
		return mpi.Place{Node: r, Core: 0}
	}
	_, err = mpi.Run(cl, cfg, func(comm *mpi.Comm) { body(mpiSide{comm}) })
	return err
}

// mpiSide is a rank: blocking Send and Recv, and Isend/Irecv of every
// buffer then Waitall for the bursts.
type mpiSide struct{ comm *mpi.Comm }

func (s mpiSide) Rank() int        { return s.comm.Rank() }
func (s mpiSide) Now() sim.Tick    { return s.comm.Now() }
func (s mpiSide) Sleep(d sim.Tick) { s.comm.Proc().Sleep(d) }
func (s mpiSide) Alloc(n int) Buf  { return Buf(s.comm.Alloc(n)) }
func (s mpiSide) Barrier()         { must(s.comm.Barrier()) }
func (s mpiSide) peer() int        { return 1 - s.comm.Rank() }

func (s mpiSide) Send(b Buf, tag int) { must(s.comm.Send(mpi.Buf(b), s.peer(), tag)) }

func (s mpiSide) Recv(b Buf, tag int) {
	_, err := s.comm.Recv(mpi.Buf(b), s.peer(), tag)
	must(err)
}

func (s mpiSide) SendAll(bs []Buf, tag int) {
	reqs := make([]*mpi.Request, len(bs))
	for i, b := range bs {
		reqs[i] = s.comm.Isend(mpi.Buf(b), s.peer(), tag)
	}
	_, err := s.comm.Waitall(reqs...)
	must(err)
}

func (s mpiSide) RecvAll(bs []Buf, tag int) {
	reqs := make([]*mpi.Request, len(bs))
	for i, b := range bs {
		reqs[i] = s.comm.Irecv(mpi.Buf(b), s.peer(), tag)
	}
	_, err := s.comm.Waitall(reqs...)
	must(err)
}
