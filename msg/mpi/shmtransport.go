package mpi

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/msg/shm"
)

// ShmConfig configures the shared-memory transport.
type ShmConfig struct {
	Queue  shm.Spec // each rank's receive queue (zero: shm.DefaultSpec)
	Params Params   // zero fields: DefaultShmParams
	// Batch is the most packets one poll takes (default 8).
	Batch int
}

// DefaultShmParams: eager up to one bulk block (8 kB), then a rendezvous
// that copies through the receiver's bulk blocks, 8 kB at a time, up to 8
// blocks in flight.
func DefaultShmParams() Params {
	return Params{EagerLimit: 8192, Rendezvous: RendezvousCopy, ChunkBytes: 8192, Pipeline: 8}
}

func (c ShmConfig) withDefaults() ShmConfig {
	if c.Queue == (shm.Spec{}) {
		c.Queue = shm.DefaultSpec()
	}
	c.Params = fillParams(c.Params, DefaultShmParams())
	if c.Batch == 0 {
		c.Batch = 8
	}
	return c
}

func fillParams(p, d Params) Params {
	switch {
	case p.EagerLimit == 0:
		p.EagerLimit = d.EagerLimit
	case p.EagerLimit < 0:
		p.EagerLimit = 0 // every message by rendezvous but empty ones
	}
	if p.Rendezvous == 0 {
		p.Rendezvous = d.Rendezvous
	}
	if p.ChunkBytes == 0 {
		p.ChunkBytes = d.ChunkBytes
	}
	if p.Pipeline == 0 {
		p.Pipeline = d.Pipeline
	}
	return p
}

// Shm is the shared-memory transport between the ranks of a node: one
// msg/shm segment per node with a receive queue per rank. A rendezvous in
// put or get mode is a single copy by the sender or receiver straight
// between the two buffers (as CMA or KNEM); in copy mode the data goes
// through the receiver's bulk blocks.
func Shm(cfg ShmConfig) TransportMaker {
	return func(s *Setup) (Transport, error) {
		cfg := cfg.withDefaults()
		if err := cfg.Queue.Validate(); err != nil {
			return nil, err
		}
		if cfg.Batch < 1 {
			return nil, fmt.Errorf("shm: poll batch %d", cfg.Batch)
		}
		if err := cfg.Params.validate("shm", cfg.Queue.BlockBytes); err != nil {
			return nil, err
		}
		t := &shmTransport{cfg: cfg, places: s.Places, local: make([]int, len(s.Places)),
			segs: make([]*shm.Segment, len(s.Cluster.Nodes))}
		count := make([]int, len(s.Cluster.Nodes))
		for r, p := range s.Places {
			t.local[r] = count[p.Node]
			count[p.Node]++
		}
		for n, k := range count {
			if k == 0 {
				continue
			}
			g, err := shm.New(s.Cluster.Nodes[n], k, cfg.Queue)
			if err != nil {
				return nil, err
			}
			t.segs[n] = g
		}
		return t, nil
	}
}

type shmTransport struct {
	cfg    ShmConfig
	places []Place
	local  []int // world rank → its queue in its node's segment
	segs   []*shm.Segment
}

func (t *shmTransport) Name() string                { return "shm" }
func (t *shmTransport) Params() Params              { return t.cfg.Params }
func (t *shmTransport) Reaches(from, to Place) bool { return from.Node == to.Node }

func (t *shmTransport) Open(e Env) (Endpoint, error) {
	g := t.segs[e.Place.Node]
	return &shmEP{t: t, env: e, port: g.Port(t.local[e.Rank], e.Proc)}, nil
}

// Segment is the shared segment of node n (nil when no rank runs there).
func (t *shmTransport) Segment(n int) *shm.Segment { return t.segs[n] }

type shmEP struct {
	t      *shmTransport
	env    Env
	port   *shm.Port
	inline [(HeaderWords - EagerWords) * 8]byte
}

// inlineMax is how much data an Eager packet carries in its own line.
const inlineMax = (HeaderWords - EagerWords) * 8

func (e *shmEP) MaxPayload() int { return e.t.cfg.Queue.BlockBytes }

func (e *shmEP) Send(dst int, h *Header, src uint64, n int) bool {
	w := h.Pack()
	q := e.t.local[dst]
	if h.Kind == Eager && n <= inlineMax {
		if n > 0 {
			var b [inlineMax]byte
			e.env.Proc.Read(src, b[:n])
			for i := EagerWords; i < HeaderWords; i++ {
				w[i] = binary.LittleEndian.Uint64(b[(i-EagerWords)*8:])
			}
		}
		return e.port.Send(q, &w, 0, 0)
	}
	return e.port.Send(q, &w, src, n)
}

func (e *shmEP) Poll(deliver func(h *Header, p Payload)) (int, bool) {
	n := 0
	for n < e.t.cfg.Batch {
		pk, ok := e.port.Poll()
		if !ok {
			break
		}
		n++
		h := Unpack(&pk.W)
		pl := Payload{Len: h.Len}
		switch {
		case pk.Block >= 0:
			pl.Addr = pk.Data
		case h.Len > 0:
			for i := EagerWords; i < HeaderWords; i++ {
				binary.LittleEndian.PutUint64(e.inline[(i-EagerWords)*8:], pk.W[i])
			}
			pl.Inline = e.inline[:h.Len]
		}
		deliver(&h, pl)
		e.port.Release(&pk)
	}
	return n, false
}

// Put and Get copy straight between the two buffers, which are in the
// same node's memory: a single copy by the calling rank's core.
func (e *shmEP) Put(dst int, local, remote uint64, n int) (int, bool) {
	shm.Copy(e.env.Proc, remote, local, n)
	return 0, true
}

func (e *shmEP) Get(src int, local, remote uint64, n int) (int, bool) {
	shm.Copy(e.env.Proc, local, remote, n)
	return 0, true
}

func (e *shmEP) Done(int) (bool, error) { return true, nil }
func (e *shmEP) Busy() bool             { return false }
