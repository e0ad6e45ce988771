package startx

import (
	"encoding/binary"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/sim"
)

// Port is a process's user-level access to an NIU's PIO mode: every
// operation is the process's uncached stores and loads of the NIU's BAR.
// With Block set they are 64-byte block stores and loads (stda/ldda), a
// whole message of up to 64 bytes in one TLP; otherwise 8-byte ones.
type Port struct {
	NIU   *NIU
	Block bool
	// credits is the free transmit entries the port last read from the
	// status register, less what it has sent since: a send reads the
	// register only when they run out, so a FIFO is never written full.
	credits [2]int
	// RetryPS is the pause between two reads of a full FIFO's status
	// (default: the core's poll interval).
	RetryPS sim.Tick
}

// Msg is a received PIO message.
type Msg struct {
	Src     int
	Pri     Priority
	H1      uint32
	Payload []uint32
}

func (pt *Port) chunk() int {
	if pt.Block {
		return 64
	}
	return 8
}

// Send writes a message of payload (2 to 22 words; the NIU refuses other
// lengths) to node dst into the transmit FIFO of priority pri, after
// making sure it has room.
func (pt *Port) Send(p *cpu.Proc, pri Priority, dst int, h1 uint32, payload []uint32) {
	for pt.credits[pri] == 0 {
		st := p.MMIORead(pt.NIU.spec.BAR+StatusOffset, 8)
		pt.credits[pri] = int(binary.LittleEndian.Uint32(st[4*pri:]))
		if pt.credits[pri] == 0 {
			p.Sleep(pt.retry(p))
		}
	}
	pt.credits[pri]--
	pt.SendRaw(p, pri, EncodeMessage(dst, h1, payload))
}

// TrySend sends like Send when the transmit FIFO has room, and otherwise
// returns false having read the status register once.
func (pt *Port) TrySend(p *cpu.Proc, pri Priority, dst int, h1 uint32, payload []uint32) bool {
	if pt.credits[pri] == 0 {
		st := p.MMIORead(pt.NIU.spec.BAR+StatusOffset, 8)
		pt.credits[pri] = int(binary.LittleEndian.Uint32(st[4*pri:]))
		if pt.credits[pri] == 0 {
			return false
		}
	}
	pt.credits[pri]--
	pt.SendRaw(p, pri, EncodeMessage(dst, h1, payload))
	return true
}

// SendRaw stores b into the transmit window of priority pri as they
// are, in chunks, without checking for room: what a program that gets
// the format or the flow control wrong does.
func (pt *Port) SendRaw(p *cpu.Proc, pri Priority, b []byte) {
	base := pt.NIU.TXAddr(pri)
	for off := 0; off < len(b); off += pt.chunk() {
		end := min(off+pt.chunk(), len(b))
		p.MMIOWrite(base+uint64(off), b[off:end], p.Txn.ID)
	}
}

func (pt *Port) retry(p *cpu.Proc) sim.Tick {
	if pt.RetryPS > 0 {
		return pt.RetryPS
	}
	return p.Core().Spec().PollIntervalPS
}

// Poll reads the head of the receive FIFO of priority pri: a message, or
// false when it is empty (one load).
func (pt *Port) Poll(p *cpu.Proc, pri Priority) (Msg, bool) {
	base := pt.NIU.RXAddr(pri)
	first := p.MMIORead(base, pt.chunk())
	h0 := binary.LittleEndian.Uint32(first)
	if !Valid(h0) {
		return Msg{}, false
	}
	words := HeaderWords + PayloadWords(h0)
	b := first
	for len(b) < 4*words {
		b = append(b, p.MMIORead(base+uint64(len(b)), min(pt.chunk(), 4*words-len(b)))...)
	}
	m := Msg{Src: Node(h0), Pri: pri, H1: binary.LittleEndian.Uint32(b[4:]), Payload: make([]uint32, words-HeaderWords)}
	for i := range m.Payload {
		m.Payload[i] = binary.LittleEndian.Uint32(b[4*(HeaderWords+i):])
	}
	return m, true
}

// Recv polls the receive FIFO of priority pri until a message is there.
func (pt *Port) Recv(p *cpu.Proc, pri Priority) Msg {
	for {
		if m, ok := pt.Poll(p, pri); ok {
			return m
		}
		p.Sleep(pt.retry(p))
	}
}

// regs stores 64-bit words at a register block: one block store, or
// 8-byte stores.
func (pt *Port) regs(p *cpu.Proc, addr uint64, words ...uint64) {
	b := make([]byte, 0, 8*len(words))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	for off := 0; off < len(b); off += pt.chunk() {
		p.MMIOWrite(addr+uint64(off), b[off:min(off+pt.chunk(), len(b))], p.Txn.ID)
	}
}

// SetSendStatus tells the NIU where in host memory to keep the running
// count of bytes its RDMA send commands have read.
func (pt *Port) SetSendStatus(p *cpu.Proc, addr uint64) {
	pt.regs(p, pt.NIU.spec.BAR+RDMASendStatusOffset, addr)
}

// RDMASend queues an RDMA send of n bytes at src (pinned memory) to raddr
// of node dst's pinned memory; dst must have armed its NIU for it.
func (pt *Port) RDMASend(p *cpu.Proc, dst int, src, raddr uint64, n int) {
	pt.regs(p, pt.NIU.spec.BAR+RDMASendOffset, uint64(dst), src, raddr, uint64(n))
}

// Arm commits the NIU to receiving size bytes from node src into
// [base, base+size) of pinned memory, counting the bytes received at
// status.
func (pt *Port) Arm(p *cpu.Proc, src int, base, size, status uint64) {
	pt.regs(p, pt.NIU.spec.BAR+RDMAArmOffset, uint64(src), base, size, status)
}
