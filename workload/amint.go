package workload

import (
	"encoding/binary"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic"
)

// AM-Int's completion queue on every owner: one CQ takes the receive
// completions of all the node's QPs, and its completion vector interrupts
// core 0 (the access logs' vectors are 0x40 + IUID).
const (
	amIntCQN    = 1
	amIntVector = 0x80
)

// amIntServer is an owner's AM-Int state: the shared receive CQ, what each
// QP's completions belong to, and the messages still expected.
type amIntServer struct {
	sh        *shard
	lanes     []*amLane
	byQPN     map[uint32]amIntSource
	cqBase    uint64
	cqSize    int
	ci        uint64 // completions consumed
	remaining int
	one       uint64 // a word holding 1: the done flags' source
	doorbell  uint64 // the CQ's arm doorbell
}

// amIntSource is the lane and source node a QP's messages come from (src
// −1: an srd queue's, whose completions name the sending node).
type amIntSource struct {
	lane *amLane
	src  int
}

// setupAMInt gives every owner a receive CQ shared by all its QPs, with an
// interrupt handler on core 0, and a short setup process that posts the
// receive buffers and arms the CQ.
func (d *DHT) setupAMInt() error {
	if err := d.setupExpectAndFlags(); err != nil {
		return err
	}
	n := len(d.c.Nodes)
	rw := iommu.Perm{Bits: pte.R | pte.W}
	for _, sh := range d.shards {
		if sh == nil {
			continue
		}
		owner := d.c.Nodes[sh.node]
		s := &amIntServer{sh: sh, byQPN: map[uint32]amIntSource{}}
		for k := range d.expect[sh.node] {
			for _, c := range d.expect[sh.node][k] {
				s.remaining += c
			}
		}
		if s.remaining == 0 {
			continue
		}
		for k := range d.expect[sh.node] {
			l, err := d.newLane(sh, k)
			if err != nil {
				return err
			}
			if l == nil {
				continue
			}
			s.lanes = append(s.lanes, l)
			if l.srd {
				s.byQPN[owner.QP(l.peer, k).QPN] = amIntSource{lane: l, src: -1}
				s.cqSize += l.pool
				continue
			}
			for src := 0; src < n; src++ {
				if src != sh.node {
					s.byQPN[owner.QP(src, k).QPN] = amIntSource{lane: l, src: src}
				}
			}
			s.cqSize += n * amBuffers
		}
		// Every receive buffer posted can hold one unconsumed completion.
		s.cqBase = owner.Alloc(uint64(s.cqSize * nic.CQESize))
		if err := owner.Register(s.cqBase, uint64(s.cqSize*nic.CQESize), rw); err != nil {
			return err
		}
		s.one = owner.Alloc(4096)
		if err := owner.Register(s.one, 4096, rw); err != nil {
			return err
		}
		msiAddr := 0xfee0_0000 | uint64(owner.ID)<<12
		if err := owner.NIC.CreateCQ(nic.CQConfig{CQN: amIntCQN, Base: s.cqBase, Size: s.cqSize, MSIAddr: msiAddr, MSIData: amIntVector,
			Moderation: nic.Moderation{Count: d.cfg.AMIntCount, PeriodPS: d.cfg.AMIntPeriodPS}}); err != nil {
			return err
		}
		for _, qpn := range sortedQPNs(s.byQPN) {
			if err := owner.NIC.SetRecvCQ(qpn, amIntCQN); err != nil {
				return err
			}
		}
		s.doorbell = machine.BARBase + nic.CQDoorbells + 8*amIntCQN
		owner.Cores[0].OnInterrupt(msiAddr, amIntVector, "am_cq", func(p *cpu.Proc) {
			d.onAMInterrupt(owner.Ctx(p, 0), s)
		})
		owner.Spawn(0, "dht_am_int_setup", func(x *aa.Ctx) {
			for _, l := range s.lanes {
				l.postAll(x)
			}
			x.P.Store64(s.one, 1)   // a peer's inserts are done
			x.P.Store64(s.one+8, 2) // and its deletes
			s.arm(x)
		})
	}
	return nil
}

func sortedQPNs(m map[uint32]amIntSource) []uint32 {
	out := make([]uint32, 0, len(m))
	for q := range m {
		out = append(out, q)
	}
	for i := 1; i < len(out); i++ { // insertion sort: deterministic order
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// arm asks the NIC for one interrupt on the completions not yet consumed
// and those to come.
func (s *amIntServer) arm(x *aa.Ctx) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], nic.ArmNextCompletion|s.ci)
	x.P.MMIOWrite(s.doorbell, b[:], x.P.Txn.ID)
}

// onAMInterrupt is AM-Int's handler, run on core 0 after the interrupt
// latency: it drains the CQ — each message's insert done locally, its
// receive buffer posted again, a source whose messages are all handled
// given its done flag — and re-arms it with the consumer index. The NIC
// counts every entry beyond that index, so an entry still on its way to
// memory when the drain looked, or one arriving later, raises the next
// interrupt. (Arming first with the index of the start would count the
// entries this run is about to drain, and interrupt again for them.)
func (d *DHT) onAMInterrupt(x *aa.Ctx, s *amIntServer) {
	d.tally(x).irqs++
	if s.remaining == 0 {
		return // a late interrupt: everything is handled
	}
	node := x.N.ID
	msg := make([]byte, 16)
	for s.remaining > 0 {
		addr := s.cqBase + (s.ci%uint64(s.cqSize))*nic.CQESize
		if x.P.Load64(addr+24) != s.ci+1 {
			break // empty: the armed CQ interrupts again
		}
		s.ci++ // claimed before the read yields the core
		b := make([]byte, nic.CQESize)
		x.P.Read(addr, b)
		cqe := nic.ParseCQE(b)
		from, ok := s.byQPN[uint32(cqe.Value)]
		if !ok || cqe.Status != nic.StatusOK {
			panic("aa: AM-Int completion of an unknown QP or a failed receive")
		}
		l, src := from.lane, from.src
		if src < 0 {
			src = int(cqe.Value >> 32) // srd: the sending node
		}
		slot := l.slot(src, cqe.WRID)
		x.P.Read(slot, msg)
		d.amMessage(x, s.sh, msg)
		s.remaining--
		l.taken(x, src, slot)
		if w, ok := l.flag(src, s.one); ok {
			x.Put(src, w, d.flagAddr(src, l.core, node), 8)
		}
	}
	if s.remaining > 0 {
		s.arm(x)
	}
}
