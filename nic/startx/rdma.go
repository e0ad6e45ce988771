package startx

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/sim"
)

// rdmaEngine is the NIU's RDMA mode. Send side: commands queue in the
// NIU (RDMACommands of them); the engine reads each command's source by
// DMA, RDMAPacketBytes at a time with RDMAReads reads in flight, and puts
// every packet on the line's high-priority lane when no high-priority PIO
// message waits (RDMA shares that lane, so it and high-priority PIO hold
// each other up: 001:L91). When a command's last byte is read, the engine
// adds its length to a running count and writes the count into host memory
// at the send status address: the source buffer may then be reused.
//
// Receive side: the connection. The host arms the NIU for one sender and
// one window of its pinned memory; the NIU writes that sender's packets
// into the window and, after each, the bytes received so far at the arm's
// status address, until the window is full, when it disarms. A packet from
// another sender, or outside the window, is refused and dropped: the
// sender must first get the receiver's consent by PIO (001:L91).
type rdmaEngine struct {
	spec Spec

	cmd        [4]uint64 // the send command being written
	cmds       sim.Queue[rdmaCmd]
	statusAddr uint64 // where the running count of bytes read goes (0: nowhere)
	doneBytes  uint64
	reads      sim.Queue[rdmaRead] // reads in flight, in issue order
	out        sim.Queue[Packet]   // packets read, waiting for the line

	arm     [4]uint64 // the arm being written
	armed   bool
	src     int
	base    uint64
	size    uint64
	rstatus uint64
	got     uint64

	busFree sim.Tick // when the I/O bus is free for the next DMA (Spec.DMAMBps)

	frame   *Packet  // the packet being gathered (Spec.RDMAFrameBytes)
	landing *Packet  // an arrived packet crossing the I/O bus into host memory
	landAt  sim.Tick // when it has crossed
}

type rdmaCmd struct {
	dst        int
	src, raddr uint64
	n, issued  int
}

type rdmaRead struct {
	tag  uint16
	dst  int
	addr uint64 // the receiver's address of the data
	n    int
	last uint64 // the command's length when this read ends it, else 0
	data []byte
	done bool
}

func (r *rdmaEngine) init(s Spec) { r.spec = s }

// busReady reports whether the I/O bus is free for a DMA at now; when it
// is, the DMA of k bytes takes it for k/DMAMBps.
func (r *rdmaEngine) busReady(n *NIU, now sim.Tick, k int) bool {
	if r.spec.DMAMBps == 0 {
		return true
	}
	if now < r.busFree {
		n.u.WakeAt(r.busFree)
		return false
	}
	r.busFree = now + sim.Tick(uint64(k)*1_000_000/r.spec.DMAMBps)
	return true
}

// BootArm arms the receiver as Port.Arm does, without a process: what a
// driver sets up when it loads (a message layer's permanent window). Src
// -1 takes every sender's packets.
func (n *NIU) BootArm(src int, base, size, status uint64) {
	r := &n.rdma
	r.armed, r.src, r.base, r.size, r.rstatus, r.got = true, src, base, size, status, 0
}

// BootSendStatus sets the send status address as Port.SetSendStatus does,
// without a process.
func (n *NIU) BootSendStatus(addr uint64) { n.rdma.statusAddr = addr }

// store takes a store into the RDMA registers at BAR offset a.
func (r *rdmaEngine) store(n *NIU, a uint64, data []byte, now sim.Tick) {
	put := func(regs *[4]uint64, base uint64) (last bool) {
		for i, v := range data {
			o := a + uint64(i) - base
			if o < 32 {
				w := &regs[o/8]
				sh := 8 * (o % 8)
				*w = *w&^(0xff<<sh) | uint64(v)<<sh
				last = last || o >= 24
			}
		}
		return last
	}
	switch {
	case a >= RDMASendOffset && a+uint64(len(data)) <= RDMASendOffset+32:
		if !put(&r.cmd, RDMASendOffset) {
			return
		}
		c := rdmaCmd{dst: int(r.cmd[0]), src: r.cmd[1], raddr: r.cmd[2], n: int(r.cmd[3])}
		switch {
		case r.cmd[3] == 0 || r.cmd[3] > 1<<32:
			n.refuse(fmt.Errorf("rdma send of %d bytes: want 1 to 4 GB", r.cmd[3]))
		case c.dst == n.spec.Node || c.dst < 0 || c.dst > nodeMask:
			n.refuse(fmt.Errorf("rdma send to node %d: not a peer", r.cmd[0]))
		case r.cmds.Len() >= r.spec.RDMACommands:
			n.refuse(fmt.Errorf("rdma send: %d commands already queued; wait for the send status", r.cmds.Len()))
		default:
			r.cmds.Push(c)
		}
	case a >= RDMASendStatusOffset && a+uint64(len(data)) <= RDMASendStatusOffset+8:
		var w [4]uint64
		w[0] = r.statusAddr
		put(&w, RDMASendStatusOffset)
		r.statusAddr = w[0]
	case a >= RDMAArmOffset && a+uint64(len(data)) <= RDMAArmOffset+32:
		if !put(&r.arm, RDMAArmOffset) {
			return
		}
		if r.arm[2] == 0 {
			n.refuse(fmt.Errorf("rdma arm of an empty window"))
			return
		}
		r.armed, r.src, r.base, r.size, r.rstatus, r.got = true, int(r.arm[0]), r.arm[1], r.arm[2], r.arm[3], 0
	default:
		n.refuse(fmt.Errorf("store of %d bytes at BAR offset %#x: not a register", len(data), a))
	}
}

// completion takes the completion of one of the engine's reads.
func (r *rdmaEngine) completion(n *NIU, p *pcie.Packet, now sim.Tick) {
	done, data, err := n.req.Complete(&p.TLP)
	if err != nil {
		n.refuse(fmt.Errorf("rdma read: %w", err))
	}
	if !done {
		return
	}
	for i := 0; i < r.reads.Len(); i++ {
		if rd := r.reads.At(i); !rd.done && rd.tag == p.TLP.Tag {
			rd.done = true
			rd.data = data
			if rd.data == nil {
				rd.data = make([]byte, rd.n)
			}
			break
		}
	}
}

// tick issues reads, moves the reads that came back (in order) to the
// line, and takes arrived RDMA packets into host memory; it reports
// whether it did anything.
func (r *rdmaEngine) tick(n *NIU, now sim.Tick) bool {
	progress := false
	e := n.u.Engine()
	// Reads in order onto the line's queue: each a packet, or gathered
	// into one until it is full or its command ends.
	for r.reads.Len() > 0 && r.reads.Front().done {
		rd := r.reads.Pop()
		if r.spec.RDMAFrameBytes == 0 {
			r.out.Push(Packet{Txn: e.NewTxn(0, "startx.rdma", n.name), Src: n.spec.Node, Dst: rd.dst, Pri: High, RDMA: true, Addr: rd.addr, Data: rd.data})
		} else {
			if r.frame == nil {
				r.frame = &Packet{Txn: e.NewTxn(0, "startx.rdma", n.name), Src: n.spec.Node, Dst: rd.dst, Pri: High, RDMA: true, Addr: rd.addr}
			}
			r.frame.Data = append(r.frame.Data, rd.data...)
			if len(r.frame.Data) >= r.spec.RDMAFrameBytes || rd.last != 0 {
				r.out.Push(*r.frame)
				r.frame = nil
			}
		}
		if rd.last != 0 {
			r.doneBytes += rd.last
			if r.statusAddr != 0 {
				n.tlpQ.Push(pcie.Packet{Txn: e.NewTxn(0, "tlp.MWr", n.name),
					TLP: r.spec.Sizes.SegmentWrite(n.spec.ID, r.statusAddr, binary.LittleEndian.AppendUint64(nil, r.doneBytes))[0]})
			}
		}
		progress = true
	}
	// New reads while there is room.
	for r.cmds.Len() > 0 && r.reads.Len() < r.spec.RDMAReads && r.out.Len() < 2*r.spec.RDMAReads && n.tlpQ.Len() < r.spec.QueueTLPs {
		c := r.cmds.Front()
		k := min(r.spec.RDMAPacketBytes, c.n-c.issued)
		if a := c.src + uint64(c.issued); a>>12 != (a+uint64(k)-1)>>12 {
			k = int(4096 - a&0xfff) // a read stays within its 4 KB page
		}
		if r.spec.DMAMBps != 0 && now < r.busFree {
			n.u.WakeAt(r.busFree)
			break
		}
		t, ok := n.req.Issue(c.src+uint64(c.issued), k)
		if !ok {
			break
		}
		r.busReady(n, now, k)
		rd := rdmaRead{tag: t.Tag, dst: c.dst, addr: c.raddr + uint64(c.issued), n: k}
		c.issued += k
		if c.issued == c.n {
			rd.last = uint64(c.n)
			r.cmds.Pop()
		}
		r.reads.Push(rd)
		n.tlpQ.Push(pcie.Packet{Txn: e.NewTxn(0, "tlp.MRd", n.name), TLP: t})
		progress = true
	}
	// To the line, after high-priority PIO.
	if r.out.Len() > 0 && n.tx[High].Len() == 0 && n.NetOut[High].Ready() {
		p := r.out.Pop()
		n.stRDMABytesOut.Add(uint64(len(p.Data)))
		n.NetOut[High].Send(p)
		progress = true
	}
	// Arrived packets into host memory while the link up keeps up. With a
	// bus cap a packet crosses the bus first: its data is in memory when
	// the bus time of its bytes has passed.
	for n.tlpQ.Len() < r.spec.QueueTLPs {
		var pk Packet
		if r.landing != nil {
			if now < r.landAt {
				n.u.WakeAt(r.landAt)
				break
			}
			pk, r.landing = *r.landing, nil
		} else {
			p := n.NetIn[High].Peek()
			if p == nil || !p.RDMA || !r.busReady(n, now, len(p.Data)) {
				break
			}
			pk = n.NetIn[High].Recv()
			progress = true
			if r.spec.DMAMBps != 0 {
				r.landing, r.landAt = &pk, r.busFree
				continue
			}
		}
		progress = true
		end := pk.Addr + uint64(len(pk.Data))
		if !r.armed || (r.src >= 0 && pk.Src != r.src) || pk.Addr < r.base || end > r.base+r.size || end < pk.Addr {
			n.refuse(fmt.Errorf("rdma packet of %d bytes at %#x from node %d: the NIU is not armed for it", len(pk.Data), pk.Addr, pk.Src))
			continue
		}
		for _, w := range r.spec.Sizes.SegmentWrite(n.spec.ID, pk.Addr, pk.Data) {
			n.tlpQ.Push(pcie.Packet{Txn: e.NewTxn(pk.ID, "tlp.MWr", n.name), TLP: w})
		}
		r.got += uint64(len(pk.Data))
		n.stRDMABytesIn.Add(uint64(len(pk.Data)))
		if r.rstatus != 0 {
			n.tlpQ.Push(pcie.Packet{Txn: e.NewTxn(pk.ID, "tlp.MWr", n.name),
				TLP: r.spec.Sizes.SegmentWrite(n.spec.ID, r.rstatus, binary.LittleEndian.AppendUint64(nil, r.got))[0]})
		}
		if r.got >= r.size {
			r.armed = false
		}
	}
	return progress
}
