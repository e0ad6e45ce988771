package nic

import (
	"bytes"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/nic/roce"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// scriptedFrames feeds its frames to the NIC as fast as it takes them.
type scriptedFrames struct {
	out    *sim.Chan[Frame]
	frames []Frame
}

func (s *scriptedFrames) Tick(sim.Tick) bool {
	for len(s.frames) > 0 && s.out.Ready() {
		s.out.Send(s.frames[0])
		s.frames = s.frames[1:]
	}
	return len(s.frames) > 0
}

// logConsumer moves the head of an access log to its tail every period
// once started: the handler that frees the log's space.
type logConsumer struct {
	mem    *memory.Store
	entry  uint64 // the log's descriptor: head at +16, tail at +24 (iommu.Driver's layout)
	u      *sim.Unit
	period sim.Tick
	on     bool
}

func (c *logConsumer) Tick(now sim.Tick) bool {
	if c.on {
		c.mem.Store64(c.entry+16, c.mem.Load64(c.entry+24))
		c.u.WakeAt(now + c.period)
	}
	return false
}

// A responder NIC behind a PCIe link to an IOMMU whose access log is full:
// RDMA READs of an active-get page become MRds that wait at the IOMMU for
// log space, and an RDMA WRITE after them to a plain page must still reach
// memory — at the root port (the link's receive buffer keeps the classes
// apart) and, once the waiting reads have used up the link's non-posted
// credits and queues, in the NIC itself: its DMA queue lets writes pass
// reads. The gets are answered once the handler frees the log.
func TestRDMAWritePassesGetsWaitingOnAFullLog(t *testing.T) {
	tests := []struct {
		name string
		gets int
		link func(*pcie.LinkSpec)
	}{
		{"one get waiting at the IOMMU", 1, func(*pcie.LinkSpec) {}},
		{"more gets than the link's non-posted credits and queues", 6, func(s *pcie.LinkSpec) {
			s.Credits.NPH, s.QueueTLPs = 1, 1
		}},
	}
	const (
		qpn         = 0x11
		iuid        = 5
		loggedIOVA  = 0x4000_0000
		getIOVA     = 0x4000_1000
		plainIOVA   = 0x4000_2000
		pa          = 0x5000_0000
		logBase     = 0x300_0000
		tablesBase  = 0x100_0000
		bar         = 0xf000_0000
		fillRecords = 8 // 8 metadata records of 32 bytes fill a 256-byte log
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := sim.NewEngine(1)
			clk := e.NewClock("fabric", 1000, 0)
			mem := memory.NewStore()
			m, err := iommu.New(clk, "iommu", iommu.DefaultSpec(), mem)
			if err != nil {
				t.Fatal(err)
			}
			mc, err := memory.NewController(clk, "mem", memory.DefaultSpec(), mem, m.Unit(), m.Unit())
			if err != nil {
				t.Fatal(err)
			}
			m.ConnectMemory(mc.In, mc.Cpl)
			id := tlp.NewID(1, 0, 0)
			n, err := NewNIC(clk, "nic", Spec{ID: id, BAR: bar})
			if err != nil {
				t.Fatal(err)
			}
			ls := pcie.DefaultLinkSpec()
			tc.link(&ls)
			up, err := pcie.NewDir(clk, "pcie.up", ls, n.Unit(), m.Unit())
			if err != nil {
				t.Fatal(err)
			}
			down := sim.NewChan[pcie.Packet](m.Unit(), n.Unit(), "pcie.down", 8)
			n.DMAOut, n.DMAIn = up.In, down
			m.SetBAR(m.AddPort(up.Out, down), bar, 0x10_0000)
			drv := iommu.NewDriver(m, tablesBase, tablesBase)
			if err := drv.Attach(id, 1); err != nil {
				t.Fatal(err)
			}
			if err := drv.RegisterLog(iuid, iommu.LogConfig{Base: logBase, Size: 32 * fillRecords}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				iova, bits uint64
			}{
				{loggedIOVA, pte.R | pte.W | pte.WL | pte.E},
				{getIOVA, pte.R | pte.RL | pte.RLD | pte.E},
				{plainIOVA, pte.R | pte.W},
			} {
				if err := drv.Map(1, p.iova, pa+p.iova-loggedIOVA, 4096, 4096, iommu.Perm{Bits: p.bits, IUID: iuid}); err != nil {
					t.Fatal(err)
				}
			}
			page := make([]byte, 4096)
			for i := range page {
				page[i] = byte(i * 13)
			}
			mem.Write(pa+getIOVA-loggedIOVA, page)
			if err := n.CreateQP(QPConfig{QPN: qpn, RemoteNode: 1, RemoteQPN: 0x22, SQBase: 0x20_0000, SQSize: 8, CQBase: 0x21_0000, CQSize: 8}); err != nil {
				t.Fatal(err)
			}

			// The requests, in PSN order: writes that fill the log, the gets,
			// the write to the plain page.
			src, sink := &scriptedFrames{}, &frameSink{}
			su, ku := clk.Add("net.src", src), clk.Add("net.sink", sink)
			n.NetIn = sim.NewChan[Frame](su, n.Unit(), "net.in", 2)
			n.NetOut = sim.NewChan[Frame](n.Unit(), ku, "net.out", 2)
			src.out, sink.in = n.NetIn, n.NetOut
			psn := uint32(0)
			req := func(op uint8, va uint64, length int, payload []byte) {
				var p roce.Packet
				p.Opcode, p.DestQP, p.PSN, p.Payload = op, qpn, psn, payload
				p.RETH.VA, p.RETH.DMALen = va, uint32(length)
				src.frames = append(src.frames, Frame{Txn: sim.Txn{ID: sim.TxnID(psn + 1)}, DstNode: 0, Frame: roce.Frame{Packet: p}})
				psn++
			}
			for i := 0; i < fillRecords; i++ {
				req(roce.WriteOnly, loggedIOVA+uint64(i)*8, 8, bytes.Repeat([]byte{byte(i)}, 8))
			}
			for i := 0; i < tc.gets; i++ {
				req(roce.ReadRequest, getIOVA+uint64(i)*64, 64, nil)
			}
			req(roce.WriteOnly, plainIOVA+16, 8, []byte("posted!!"))
			cons := &logConsumer{mem: mem, entry: drv.LogEntryAddr(iuid), period: sim.US}
			cons.u = clk.Add("cpu", cons)

			e.Run(50 * sim.US)
			got := make([]byte, 8)
			mem.Read(pa+plainIOVA-loggedIOVA+16, got)
			if string(got) != "posted!!" {
				t.Fatalf("the RDMA WRITE did not reach memory while the gets waited (memory %q)", got)
			}
			responses := func() [][]byte {
				var out [][]byte
				for _, f := range sink.got {
					if f.Packet.Opcode == roce.ReadRespOnly {
						out = append(out, f.Packet.Payload)
					}
				}
				return out
			}
			if r := responses(); len(r) != 0 {
				t.Fatalf("%d gets answered before the handler freed the log", len(r))
			}

			cons.on = true
			cons.u.WakeAt(e.Now() + 1)
			e.Run(e.Now() + 100*sim.US)
			r := responses()
			if len(r) != tc.gets {
				t.Fatalf("%d of %d gets answered after the handler freed the log", len(r), tc.gets)
			}
			for i, p := range r {
				if !bytes.Equal(p, page[i*64:i*64+64]) {
					t.Fatalf("get %d answered with the wrong data", i)
				}
			}
		})
	}
}
