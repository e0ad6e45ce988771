package bglpaper

import (
	"fmt"

	"github.com/aaemu/aaemu/bgl"
	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/msg/mpi"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/torus"
)

// MPIProgress is how the message layer makes progress under the figures'
// MPI series (aaemu paper bgl --progress): Polling, the paper's, by
// default; Thread runs them in coprocessor mode. Series with Blue
// Gene/L's own collectives (mpi.BGL), which run the layer on the main
// core, stay polling.
var MPIProgress = bglml.Polling

// mpiOn is the machine's spec and the transport of an MPI run under
// MPIProgress (with collectives coll).
func mpiOn(spec bgl.Spec, tc mpi.TorusConfig, coll mpi.Collectives) (bgl.Spec, mpi.TorusConfig) {
	if _, ok := coll.(mpi.BGL); ok || MPIProgress == bglml.Polling {
		return spec, tc
	}
	tc.Progress = MPIProgress
	if MPIProgress == bglml.Thread && spec.Mode == bgl.HeaterMode {
		spec = spec.WithMode(bgl.CoprocessorMode)
	}
	return spec, tc
}

// mpiConfig is the torus transport sending MPI's eager messages by proto
// (Auto: by size), and, for the rendezvous, every message by MPI's
// rendezvous (a scout, the get, the data).
func mpiConfig(proto bglml.Protocol) mpi.TorusConfig {
	switch proto {
	case bglml.Rendezvous:
		return mpi.TorusConfig{Params: mpi.Params{EagerLimit: -1}}.WithProfile(Costs)
	case bglml.OnePacket:
		// MPI's eager limit at what one packet holds beside the headers.
		return mpi.TorusConfig{Force: proto, Params: mpi.Params{EagerLimit: torus.MaxPayload - bglml.FirstHeaderBytes - 8*mpi.EagerWords}}.WithProfile(Costs)
	}
	return mpi.TorusConfig{Force: proto}.WithProfile(Costs)
}

// MPIPingPong is MPI's half round trip of size-byte messages between the
// nodes at a and b (one rank on each; Send, then Recv of the reply), over
// the message layer with tc; one round trip to warm up, then iters.
func MPIPingPong(spec bgl.Spec, tc mpi.TorusConfig, a, b torus.Coord, size, iters int) (sim.Tick, error) {
	spec, tc = mpiOn(spec, tc, nil)
	return mpiPingPong(spec, tc, a, b, size, iters)
}

// mpiPingPong is MPIPingPong with tc's progress as it is (Calibrate
// measures MPI polling whatever MPIProgress is).
func mpiPingPong(spec bgl.Spec, tc mpi.TorusConfig, a, b torus.Coord, size, iters int) (sim.Tick, error) {
	if iters < 1 || size < 0 {
		return 0, fmt.Errorf("bglpaper: MPI ping-pong of %d round trips of %d bytes", iters, size)
	}
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	ia, ib := m.Torus.IndexOf(a), m.Torus.IndexOf(b)
	if ia == ib {
		return 0, fmt.Errorf("bglpaper: both ends are node %v", a)
	}
	var start, end sim.Tick
	var failed error
	_, err = mpi.RunTorus(m, mpi.Config{}, tc, []int{ia, ib}, func(c *mpi.Comm) {
		buf := c.Alloc(max(size, 1))
		b := mpi.Buf{Addr: buf.Addr, Len: size}
		peer := 1 - c.Rank()
		for k := 0; k <= iters; k++ {
			if c.Rank() == 0 {
				if k == 1 {
					start = c.Now()
				}
				if err := c.Send(b, peer, 0); err != nil {
					failed = err
				}
				if _, err := c.Recv(b, peer, 0); err != nil {
					failed = err
				}
			} else {
				if _, err := c.Recv(b, peer, 0); err != nil {
					failed = err
				}
				if err := c.Send(b, peer, 0); err != nil {
					failed = err
				}
			}
		}
		if c.Rank() == 0 {
			end = c.Now()
		}
	})
	if err != nil {
		return 0, err
	}
	if failed != nil {
		return 0, failed
	}
	return (end - start) / sim.Tick(2*iters), nil
}

// MPIExchange is the bandwidth of the link between neighbours a and b used
// both ways by MPI: each rank posts msgs receives and msgs sends of size
// bytes to the other at once and waits for all; the payload both received
// per second, from the start to the later rank's end.
func MPIExchange(spec bgl.Spec, tc mpi.TorusConfig, a, b torus.Coord, size, msgs int) (float64, error) {
	if size < 1 || msgs < 1 {
		return 0, fmt.Errorf("bglpaper: MPI exchange of %d messages of %d bytes", msgs, size)
	}
	spec, tc = mpiOn(spec, tc, nil)
	m, err := bgl.New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	if m.Torus.Hops(a, b) != 1 {
		return 0, fmt.Errorf("bglpaper: %v and %v are not neighbours", a, b)
	}
	var start, end sim.Tick
	var failed error
	_, err = mpi.RunTorus(m, mpi.Config{}, tc, []int{m.Torus.IndexOf(a), m.Torus.IndexOf(b)}, func(c *mpi.Comm) {
		sb, rb := c.Alloc(size*msgs), c.Alloc(size*msgs)
		peer := 1 - c.Rank()
		// Both start together: a barrier's last message is the start.
		if err := c.Barrier(); err != nil {
			failed = err
			return
		}
		start = max(start, c.Now())
		var qs []*mpi.Request
		for k := 0; k < msgs; k++ {
			qs = append(qs, c.Irecv(mpi.Buf{Addr: rb.Addr + uint64(k*size), Len: size}, peer, k))
		}
		for k := 0; k < msgs; k++ {
			qs = append(qs, c.Isend(mpi.Buf{Addr: sb.Addr + uint64(k*size), Len: size}, peer, k))
		}
		if _, err := c.Waitall(qs...); err != nil {
			failed = err
		}
		end = max(end, c.Now())
	})
	if err != nil {
		return 0, err
	}
	if failed != nil {
		return 0, failed
	}
	return float64(2*msgs*size) / (float64(end-start) / float64(sim.S)), nil
}
