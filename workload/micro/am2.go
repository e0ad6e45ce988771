package micro

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/msg/am2"
	"github.com/aaemu/aaemu/sim"
)

// am2Layer runs the sides as two AM-II endpoints (msg/am2, default depths)
// on two cores of node 0 (path shm: the shared-memory protocol) or on
// node 0 and node 1 (path rdma: the network protocol). The machine is
// given a Myrinet-class NIU per node (am2.WithMyrinet) and two nodes, so
// that a multi-protocol system polls the network on the shm path too;
// Config.AM2Poll picks the protocols and the polling policy. A
// message of up to 32 bytes is one short request carrying its bytes as
// arguments (the sender loads them from its buffer, the handler stores
// them into the receive buffer); a longer one is bulk requests of up to
// 8 kB, the paper's G benchmark: the sender copies each chunk of its
// buffer into a bulk block of the receiver's queue (RequestBulk), the
// chunks pipelined through the queue's blocks (a full queue makes the
// sender back off and poll), and the receiver's handler copies each out
// into the receive buffer. Messages between the two endpoints are
// delivered in order, so the tag is not sent.
type am2Layer struct{}

func (am2Layer) Name() string { return "am2" }

// Handler indices of the sides' endpoints.
const (
	am2Short   = 1
	am2Bulk    = 2
	am2Barrier = 3
)

// am2Limit bounds a run's simulated time: a side that never gets its
// message is reported instead of polled for ever.
const am2Limit = 10 * sim.S

func (am2Layer) Run(c Config, body func(s Side)) error {
	// Where the sides are: node and core.
	var at [2][2]int
	switch c.Path {
	case IntraNode:
		at = [2][2]int{{0, 0}, {0, 1}}
		if c.AM2Poll.Protocols == am2.NetOnly {
			return fmt.Errorf("micro: layer am2 on path shm with a network-only system: it does not reach a node's own endpoints")
		}
	case InterNode:
		at = [2][2]int{{0, 0}, {1, 0}}
		if c.AM2Poll.Protocols == am2.ShmOnly {
			return fmt.Errorf("micro: layer am2 on path rdma with a shm-only system: it does not reach another node")
		}
	default:
		return fmt.Errorf("micro: path %q", c.Path)
	}
	spec := am2.WithMyrinet(c.Machine)
	spec.Nodes = 2
	spec.Cores = max(spec.Cores, 2)
	cl, err := machine.New(sim.NewEngine(c.Seed), spec)
	if err != nil {
		return err
	}
	as := am2.DefaultSpec()
	as.Poll = c.AM2Poll
	sys, err := am2.New(cl, as)
	if err != nil {
		return err
	}
	var sides [2]*am2Side
	for r := range sides {
		node := cl.Nodes[at[r][0]]
		ep, err := sys.NewEndpoint(node.ID, uint64(r+1))
		if err != nil {
			return err
		}
		s := &am2Side{rank: r, node: node, ep: ep}
		for h, f := range []am2.Handler{am2Short: s.short, am2Bulk: s.bulk, am2Barrier: s.barrier} {
			if f == nil {
				continue
			}
			if err := ep.SetHandler(h, f); err != nil {
				return err
			}
		}
		sides[r] = s
	}
	for r, s := range sides {
		peer := sides[1-r].ep
		if err := s.ep.Map(0, peer.Name(), peer.Tag()); err != nil {
			return err
		}
	}
	var failed error
	done := 0
	for r, s := range sides {
		s.node.Cores[at[r][1]].Spawn(fmt.Sprintf("am2.side%d", r), func(p *cpu.Proc) {
			defer func() {
				if v := recover(); v != nil && failed == nil {
					failed = fmt.Errorf("micro: am2 side %d at %v: %v", r, p.Now().Human(), v)
				}
			}()
			s.p = p
			must(s.ep.Attach(p))
			body(s)
			done++
		})
	}
	cl.Run(am2Limit, func() bool { return failed != nil || done == len(sides) })
	if failed != nil {
		return failed
	}
	if done < len(sides) {
		return fmt.Errorf("micro: am2 sides not done at %v: a message never arrived", cl.Now().Human())
	}
	return nil
}

// am2Side is an endpoint and its process.
type am2Side struct {
	rank     int
	node     *machine.Node
	ep       *am2.Endpoint
	p        *cpu.Proc
	posted   []am2Recv // receives not yet complete, in order
	barriers int       // barrier requests received from the peer
	arrived  int       // barriers this side has entered
}

// am2Recv is a posted receive and the bytes it has got.
type am2Recv struct {
	b   Buf
	got int
}

func (s *am2Side) Rank() int        { return s.rank }
func (s *am2Side) Now() sim.Tick    { return s.p.Now() }
func (s *am2Side) Sleep(d sim.Tick) { s.p.Sleep(d) }

func (s *am2Side) Alloc(n int) Buf {
	if n < 0 {
		panic(fmt.Sprintf("micro: Alloc(%d)", n))
	}
	return Buf{Addr: s.node.Alloc(uint64(n)), Len: n}
}

func (s *am2Side) Send(b Buf, tag int) {
	if b.Len <= 4*am2.MaxArgs {
		var data [4 * am2.MaxArgs]byte
		if b.Len > 0 {
			s.p.Read(b.Addr, data[:b.Len])
		}
		args := make([]uint32, (b.Len+3)/4)
		for i := range args {
			args[i] = binary.LittleEndian.Uint32(data[4*i:])
		}
		must(s.ep.Request(0, am2Short, args...))
		return
	}
	for off := 0; off < b.Len; off += am2.MaxBulk {
		must(s.ep.RequestBulk(0, am2Bulk, b.Addr+uint64(off), min(am2.MaxBulk, b.Len-off), uint32(off)))
	}
}

// SendAll sends the buffers one after another: a send returns once its
// data is in the receiver's queue block, so they are back to back.
func (s *am2Side) SendAll(bs []Buf, tag int) {
	for _, b := range bs {
		s.Send(b, tag)
	}
}

func (s *am2Side) Recv(b Buf, tag int) { s.RecvAll([]Buf{b}, tag) }

// RecvAll posts the buffers and polls until the handlers have filled them
// all.
func (s *am2Side) RecvAll(bs []Buf, tag int) {
	for _, b := range bs {
		s.posted = append(s.posted, am2Recv{b: b})
	}
	for len(s.posted) > 0 {
		s.ep.Poll()
	}
}

func (s *am2Side) Barrier() {
	s.arrived++
	must(s.ep.Request(0, am2Barrier))
	for s.barriers < s.arrived {
		s.ep.Poll()
	}
}

// head is the posted receive a message of n bytes (short) or a chunk at
// off (bulk) belongs to.
func (s *am2Side) head(what string) *am2Recv {
	if len(s.posted) == 0 {
		panic(fmt.Sprintf("micro: an am2 %s message with no receive posted", what))
	}
	return &s.posted[0]
}

// short stores a short message's argument bytes into the receive buffer.
func (s *am2Side) short(_ *am2.Token, m *am2.Message) {
	r := s.head("short")
	if n := (r.b.Len + 3) / 4; r.b.Len > 4*am2.MaxArgs || len(m.Args) != n {
		panic(fmt.Sprintf("micro: a short am2 message of %d arguments for a %d-byte receive", len(m.Args), r.b.Len))
	}
	if r.b.Len > 0 {
		var data [4 * am2.MaxArgs]byte
		for i, a := range m.Args {
			binary.LittleEndian.PutUint32(data[4*i:], a)
		}
		s.p.Write(r.b.Addr, data[:r.b.Len])
	}
	s.posted = s.posted[1:]
}

// bulk copies a chunk out of the queue's bulk block into the receive
// buffer at the chunk's offset.
func (s *am2Side) bulk(_ *am2.Token, m *am2.Message) {
	r := s.head("bulk")
	off := int(m.Args[0])
	if off != r.got || off+m.Len > r.b.Len {
		panic(fmt.Sprintf("micro: an am2 chunk of %d bytes at %d for a %d-byte receive that has %d", m.Len, off, r.b.Len, r.got))
	}
	s.p.Memcpy(r.b.Addr+uint64(off), m.Data, uint64(m.Len))
	r.got += m.Len
	if r.got == r.b.Len {
		s.posted = s.posted[1:]
	}
}

func (s *am2Side) barrier(*am2.Token, *am2.Message) { s.barriers++ }
