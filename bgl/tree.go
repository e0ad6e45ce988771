package bgl

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/collective"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// Collective builds the collective and barrier networks over the
// machine's nodes (once, before the run; the same tree afterwards), each
// node's FIFOs written and read by its main core, and returns them. Until
// it is called the machine has the torus only, so runs that do not use
// the tree are what they were.
func (m *Machine) Collective() (*collective.Tree, error) {
	if m.Tree != nil {
		return m.Tree, nil
	}
	clients := make([]*sim.Unit, len(m.Nodes))
	for i, nd := range m.Nodes {
		clients[i] = nd.Cores[0].Unit()
	}
	t, err := collective.New(m.Torus.Name+"_tree", clients, m.Spec.Collective)
	if err != nil {
		return nil, err
	}
	m.Tree = t
	for i, nd := range m.Nodes {
		nd.Tree = t.Nodes[i]
	}
	return t, nil
}

// TreeWrite writes a packet into the node's collective injection FIFO
// from its main core: status looks while the FIFO has no room, then the
// sixteen 16-byte stores of a 256-byte packet (what a full torus packet's
// write costs, L67: the two networks' FIFOs are accessed alike).
func (n *Node) TreeWrite(p *cpu.Proc, pkt collective.Packet, from Source) error {
	if n.Tree == nil {
		return fmt.Errorf("bgl: node %d: no collective network (Machine.Collective)", n.Index)
	}
	s := n.PL.spec
	p.Compute(s.StatusCycles)
	p.Poll(n.Tree.Inj.Ready)
	c := s.WriteCacheCycles
	if from == FromMemory {
		c = s.WriteMemoryCycles
	}
	p.Compute(c)
	n.Tree.Inj.Send(pkt)
	return nil
}

// TreeRead reads the next result from the node's collective reception
// FIFO on its main core: status looks until one is there, then the
// sixteen 16-byte loads into aligned memory (a full packet's read, L67).
func (n *Node) TreeRead(p *cpu.Proc) (collective.Packet, error) {
	if n.Tree == nil {
		return collective.Packet{}, fmt.Errorf("bgl: node %d: no collective network (Machine.Collective)", n.Index)
	}
	s := n.PL.spec
	p.Compute(s.StatusCycles)
	p.Poll(n.Tree.Rec.Valid)
	p.Compute(s.ReadCycles)
	return n.Tree.Rec.Recv(), nil
}

// TreeBcast broadcasts size bytes at addr of node root's memory to addr of
// every node's over the collective network (L60): every node writes a
// packet per 256 bytes — the root its data, the others zeros — and the
// routers' OR hands every node the root's; each node keeps up to its
// injection FIFO's depth of packets ahead of the results it has read.
// It returns when the last node had the whole message.
func TreeBcast(spec Spec, root, size int, check func(node int, got, want []byte)) (sim.Tick, error) {
	m, err := New(sim.NewWorld(1), "bgl", spec)
	if err != nil {
		return 0, err
	}
	if root < 0 || root >= len(m.Nodes) || size < 1 {
		return 0, fmt.Errorf("bgl: collective broadcast of %d bytes from node %d of %d", size, root, len(m.Nodes))
	}
	if _, err := m.Collective(); err != nil {
		return 0, err
	}
	n := (size + collective.PacketBytes - 1) / collective.PacketBytes
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*7 + i>>8 + 1)
	}
	var end sim.Tick
	var failed error
	for i, nd := range m.Nodes {
		i, nd := i, nd
		addr := nd.Alloc(n * collective.PacketBytes)
		if i == root {
			nd.Mem.Write(addr, want)
		}
		nd.Cores[0].Spawn("treebcast", func(p *cpu.Proc) {
			window := nd.Tree.Inj.Depth()
			wrote, read := 0, 0
			for read < n {
				if wrote < n && wrote-read < window {
					pkt := collective.Packet{Op: collective.OpOr}
					from := FromCache // zeros: no data to load
					if i == root {
						b := make([]byte, collective.PacketBytes)
						nd.Mem.Read(addr+uint64(wrote*collective.PacketBytes), b)
						for w := range pkt.W {
							pkt.W[w] = binary.LittleEndian.Uint64(b[8*w:])
						}
						from = FromMemory
					}
					if err := nd.TreeWrite(p, pkt, from); err != nil {
						failed = err
						return
					}
					wrote++
					if nd.Tree.Rec.Len() == 0 {
						continue // keep the tree fed while no result waits
					}
				}
				pkt, err := nd.TreeRead(p)
				if err != nil {
					failed = err
					return
				}
				b := make([]byte, collective.PacketBytes)
				for w, v := range pkt.W {
					binary.LittleEndian.PutUint64(b[8*w:], v)
				}
				nd.Mem.Write(addr+uint64(read*collective.PacketBytes), b)
				read++
			}
			end = max(end, p.Now())
			if check != nil {
				got := make([]byte, size)
				nd.Mem.Read(addr, got)
				check(i, got, want)
			}
		})
	}
	m.World.Run(sim.S)
	if failed != nil {
		return 0, failed
	}
	if end == 0 {
		return 0, fmt.Errorf("bgl: collective broadcast of %d bytes did not finish within a simulated second", size)
	}
	return end, nil
}

// TryTreeWrite is TreeWrite without the wait: one status look, and the
// packet's stores if the injection FIFO has room (false if it has none),
// so that a message layer's advance loop can go on with other work.
func (n *Node) TryTreeWrite(p *cpu.Proc, pkt collective.Packet, from Source) (bool, error) {
	if n.Tree == nil {
		return false, fmt.Errorf("bgl: node %d: no collective network (Machine.Collective)", n.Index)
	}
	s := n.PL.spec
	p.Compute(s.StatusCycles)
	if !n.Tree.Inj.Ready() {
		return false, nil
	}
	c := s.WriteCacheCycles
	if from == FromMemory {
		c = s.WriteMemoryCycles
	}
	p.Compute(c)
	n.Tree.Inj.Send(pkt)
	return true, nil
}

// TryTreeRead is TreeRead without the wait: one status look, and the
// result's loads if one is there (false if none is).
func (n *Node) TryTreeRead(p *cpu.Proc) (collective.Packet, bool, error) {
	if n.Tree == nil {
		return collective.Packet{}, false, fmt.Errorf("bgl: node %d: no collective network (Machine.Collective)", n.Index)
	}
	s := n.PL.spec
	p.Compute(s.StatusCycles)
	if !n.Tree.Rec.Valid() {
		return collective.Packet{}, false, nil
	}
	p.Compute(s.ReadCycles)
	return n.Tree.Rec.Recv(), true, nil
}

// TryBarrierArm arms the node's global barrier from its main core (a
// store to the barrier's register: a status access's cycles, an
// estimate); false if the previous arming has not been taken yet.
func (n *Node) TryBarrierArm(p *cpu.Proc) (bool, error) {
	if n.Tree == nil {
		return false, fmt.Errorf("bgl: node %d: no barrier network (Machine.Collective)", n.Index)
	}
	p.Compute(n.PL.spec.StatusCycles)
	if !n.Tree.Arm.Ready() {
		return false, nil
	}
	n.Tree.Arm.Send(struct{}{})
	return true, nil
}

// TryBarrierRelease looks once at the node's global barrier (a status
// look) and takes its release if it has come.
func (n *Node) TryBarrierRelease(p *cpu.Proc) (bool, error) {
	if n.Tree == nil {
		return false, fmt.Errorf("bgl: node %d: no barrier network (Machine.Collective)", n.Index)
	}
	p.Compute(n.PL.spec.StatusCycles)
	if !n.Tree.Release.Valid() {
		return false, nil
	}
	n.Tree.Release.Recv()
	return true, nil
}
