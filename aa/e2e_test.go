package aa

import (
	"bytes"
	"testing"

	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

func newCluster(t testing.TB, mut func(*machine.Spec)) *System {
	t.Helper()
	s := machine.DefaultSpec()
	if mut != nil {
		mut(&s)
	}
	c, err := New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Plain RDMA WRITE and READ between two nodes.
func TestPutGetRMA(t *testing.T) {
	c := newCluster(t, nil)
	src, dst := c.Nodes[0], c.Nodes[1]
	buf := src.Alloc(8192)
	remote := dst.Alloc(8192)
	rw := iommu.Perm{Bits: pte.R | pte.W}
	if err := src.Register(buf, 8192, rw); err != nil {
		t.Fatal(err)
	}
	if err := dst.Register(remote, 8192, rw); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	src.Mem.Write(buf, data)
	var got []byte
	var errs []error
	src.Spawn(0, "app", func(x *Ctx) {
		x.P.Op("put")
		if _, err := x.Wait(x.Put(1, buf, remote+100, len(data))); err != nil {
			errs = append(errs, err)
		}
		x.P.Op("get")
		if _, err := x.Wait(x.Get(1, buf+4096, remote+100, len(data))); err != nil {
			errs = append(errs, err)
		}
		got = make([]byte, len(data))
		x.P.Read(buf+4096, got)
	})
	end := c.Run(10*sim.MS, c.AppsDone)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	remoteData := make([]byte, len(data))
	dst.Mem.Read(remote+100, remoteData)
	if !bytes.Equal(remoteData, data) {
		t.Fatal("the put's data did not land at the target")
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the get returned other data")
	}
	t.Logf("put + get of %d bytes over 1 GbE took %v", len(data), end.Human())
}

// Active puts land in the target's log, in every notification mode, and
// the handler sees exactly the data; the target memory is not written
// (W=0); an active flush returns only after the handler processed the puts.
func TestActivePutsAndFlush(t *testing.T) {
	for _, mode := range []iommu.Notify{iommu.Poll, iommu.Int, iommu.SP} {
		t.Run(mode.String(), func(t *testing.T) {
			c := newCluster(t, nil)
			src, dst := c.Nodes[0], c.Nodes[1]
			buf := src.Alloc(4096)
			src.Register(buf, 4096, iommu.Perm{Bits: pte.R | pte.W})
			page := dst.Alloc(4096)
			const iuid = 1
			var seen [][]byte
			var seenAt []sim.Tick
			_, err := dst.CreateLog(iuid, 8192, mode, func(x *Ctx, r Record) {
				x.P.Compute(200) // the handler's own work
				seen = append(seen, r.Data)
				seenAt = append(seenAt, x.Now())
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dst.CreateFlushPage(iuid); err != nil {
				t.Fatal(err)
			}
			if err := dst.Register(page, 4096, iommu.Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: iuid}); err != nil {
				t.Fatal(err)
			}
			const puts = 20
			var flushedAt sim.Tick
			src.Spawn(0, "app", func(x *Ctx) {
				for i := 0; i < puts; i++ {
					x.P.Op("aa.put")
					x.P.Store64(buf+uint64(i)*16, uint64(i)*1000+1)
					x.P.Store64(buf+uint64(i)*16+8, uint64(i))
					x.Put(1, buf+uint64(i)*16, page+uint64(i)*16, 16)
				}
				if err := x.Flush(1); err != nil {
					t.Error(err)
				}
				x.P.Op("aa.flush")
				if err := x.ActiveFlush(1, iuid); err != nil {
					t.Error(err)
				}
				flushedAt = x.Now()
			})
			c.Run(50*sim.MS, c.AppsDone)
			if len(seen) != puts {
				t.Fatalf("the handler saw %d of %d puts", len(seen), puts)
			}
			for i, d := range seen {
				want := make([]byte, 16)
				for k := 0; k < 8; k++ {
					want[k] = byte((uint64(i)*1000 + 1) >> (8 * k))
					want[8+k] = byte(uint64(i) >> (8 * k))
				}
				if !bytes.Equal(d, want) {
					t.Fatalf("record %d carries %x, want %x", i, d, want)
				}
			}
			if v := dst.Mem.Load64(page); v != 0 {
				t.Fatalf("an active put wrote the page (W=0): %#x", v)
			}
			if flushedAt == 0 || flushedAt < seenAt[len(seenAt)-1] {
				t.Fatalf("active flush returned at %v, before the handler processed the last put at %v", flushedAt, seenAt[len(seenAt)-1])
			}
		})
	}
}

// An active get returns the data and logs a copy of it.
func TestActiveGet(t *testing.T) {
	c := newCluster(t, nil)
	src, dst := c.Nodes[0], c.Nodes[1]
	buf := src.Alloc(4096)
	src.Register(buf, 4096, iommu.Perm{Bits: pte.R | pte.W})
	page := dst.Alloc(4096)
	dst.Mem.Write(page, []byte("the value logged on the way out."))
	var logged []byte
	dst.CreateLog(2, 4096, iommu.SP, func(x *Ctx, r Record) { logged = r.Data })
	dst.Register(page, 4096, iommu.Perm{Bits: pte.R | pte.RL | pte.RLD | pte.E, IUID: 2})
	var got []byte
	src.Spawn(0, "app", func(x *Ctx) {
		x.Wait(x.Get(1, buf, page, 32))
		got = make([]byte, 32)
		x.P.Read(buf, got)
		x.P.Sleep(20 * sim.US)
	})
	c.Run(10*sim.MS, c.AppsDone)
	if string(got) != "the value logged on the way out." || string(logged) != string(got) {
		t.Fatalf("get returned %q, log holds %q", got, logged)
	}
}

// Remote atomics stay atomic when several processes hammer one word.
func TestRemoteAtomicsUnderContention(t *testing.T) {
	c := newCluster(t, func(s *machine.Spec) { s.Cores = 3 })
	dst := c.Nodes[1]
	word := dst.Alloc(4096)
	dst.Register(word, 4096, iommu.Perm{Bits: pte.R | pte.W})
	const per = 30
	olds := map[uint64]int{}
	var casWins int
	for k := 0; k < 3; k++ {
		c.Nodes[0].Spawn(k, "adder", func(x *Ctx) {
			for i := 0; i < per; i++ {
				old, err := x.FetchAdd(1, word, 1)
				if err != nil {
					t.Error(err)
					return
				}
				olds[old]++
				// Everyone tries to claim the second word once: one wins.
				if i == per/2 {
					if o, _ := x.CAS(1, word+8, 0, uint64(k+1)); o == 0 {
						casWins++
					}
				}
			}
		})
	}
	c.Run(100*sim.MS, c.AppsDone)
	if v := dst.Mem.Load64(word); v != 3*per {
		t.Fatalf("counter is %d after %d fetch-and-adds", v, 3*per)
	}
	for old, n := range olds {
		if n != 1 || old >= 3*per {
			t.Fatalf("fetch-and-add returned %d %d times", old, n)
		}
	}
	if casWins != 1 {
		t.Fatalf("%d CAS winners", casWins)
	}
}

// With frames lost on the wire, every put still arrives exactly once.
func TestLossRecovery(t *testing.T) {
	c := newCluster(t, func(s *machine.Spec) {
		s.Wire.LossPPM = 50_000 // 5 % of frames, both ways
		s.NIC.RetransmitPS = 50 * sim.US
	})
	src, dst := c.Nodes[0], c.Nodes[1]
	buf := src.Alloc(4096)
	src.Register(buf, 4096, iommu.Perm{Bits: pte.R | pte.W})
	page := dst.Alloc(4096)
	counts := map[uint64]int{}
	dst.CreateLog(1, 1<<16, iommu.SP, func(x *Ctx, r Record) { counts[r.IOVA]++ })
	dst.Register(page, 4096, iommu.Perm{Bits: pte.WLD | pte.E, IUID: 1})
	const puts = 200
	src.Spawn(0, "app", func(x *Ctx) {
		for i := 0; i < puts; i++ {
			x.Put(1, buf, page+uint64(i%256)*16, 16)
		}
		if err := x.Flush(1); err != nil {
			t.Error(err)
		}
		x.P.Sleep(50 * sim.US)
	})
	c.Run(500*sim.MS, c.AppsDone)
	st, _ := c.Eng.Stats().Get("net.wire01.lost")
	if st.(*sim.Counter).Value() == 0 {
		t.Fatal("no frame was lost: the test injects no loss")
	}
	total := 0
	for a, n := range counts {
		if n != 1 {
			t.Fatalf("put to %#x arrived %d times", a, n)
		}
		total++
	}
	if total != puts {
		t.Fatalf("%d of %d puts arrived", total, puts)
	}
}

// More than two nodes go through a switch: every node puts to every other
// node and the data lands.
func TestFourNodesThroughASwitch(t *testing.T) {
	c := newCluster(t, func(s *machine.Spec) { s.Nodes = 4 })
	if c.Switch == nil {
		t.Fatal("no switch for four nodes")
	}
	bufs := make([]uint64, 4)
	for i, n := range c.Nodes {
		bufs[i] = n.Alloc(4096)
		n.Register(bufs[i], 4096, iommu.Perm{Bits: pte.R | pte.W})
	}
	for i, n := range c.Nodes {
		i := i
		n.Mem.Store64(bufs[i], uint64(100+i))
		n.Spawn(0, "app", func(x *Ctx) {
			for j := range c.Nodes {
				if j != i {
					x.Put(j, bufs[i], bufs[j]+uint64(64+8*i), 8)
				}
			}
			for j := range c.Nodes {
				if j != i {
					if err := x.Flush(j); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	c.Run(10*sim.MS, c.AppsDone)
	for j, n := range c.Nodes {
		for i := range c.Nodes {
			if i != j {
				if v := n.Mem.Load64(bufs[j] + uint64(64+8*i)); v != uint64(100+i) {
					t.Fatalf("node %d holds %d from node %d", j, v, i)
				}
			}
		}
	}
	if st, _ := c.Eng.Stats().Get("net.switch.forwarded"); st.(*sim.Counter).Value() == 0 {
		t.Fatal("nothing went through the switch")
	}
}

// SEND into posted receive buffers; a SEND that finds no buffer is NAKed
// (receiver not ready) and retried until one is posted.
func TestSendReceive(t *testing.T) {
	c := newCluster(t, nil)
	src, dst := c.Nodes[0], c.Nodes[1]
	buf := src.Alloc(8192)
	src.Register(buf, 8192, iommu.Perm{Bits: pte.R | pte.W})
	rbuf := dst.Alloc(8192)
	dst.Register(rbuf, 8192, iommu.Perm{Bits: pte.R | pte.W})
	msg := bytes.Repeat([]byte("message!"), 300) // 2400 bytes: three packets
	src.Mem.Write(buf, msg)
	var got [][]byte
	src.Spawn(0, "sender", func(x *Ctx) {
		for i := 0; i < 3; i++ {
			if _, err := x.Wait(x.Send(1, buf, len(msg)-i*100)); err != nil {
				t.Error(err)
			}
		}
	})
	dst.Spawn(0, "receiver", func(x *Ctx) {
		x.P.Sleep(30 * sim.US) // late: the first SEND finds no buffer
		for i := 0; i < 3; i++ {
			x.PostRecv(0, rbuf+uint64(i)*2560, 2560)
		}
		for i := 0; i < 3; i++ {
			cqe := x.Recv(0)
			b := make([]byte, cqe.Length)
			x.P.Read(rbuf+cqe.WRID*2560, b)
			got = append(got, b)
		}
	})
	c.Run(10*sim.MS, c.AppsDone)
	if len(got) != 3 {
		t.Fatalf("received %d messages", len(got))
	}
	for i, g := range got {
		if !bytes.Equal(g, msg[:len(msg)-i*100]) {
			t.Fatalf("message %d: %d bytes, wrong content", i, len(g))
		}
	}
	if st, _ := c.Eng.Stats().Get("node1.nic0.rnr_naks"); st.(*sim.Counter).Value() == 0 {
		t.Fatal("the early SEND was not NAKed as receiver not ready")
	}
}

// A process that computes longer than Run's slice, with nothing else going
// on, still finishes: Run skips ahead to the next event rather than taking
// a quiet slice for the end.
func TestRunLongWait(t *testing.T) {
	c := newCluster(t, nil)
	var end sim.Tick
	c.Nodes[0].Spawn(0, "compute", func(x *Ctx) {
		x.P.Compute(100_000) // 50 µs at 2 GHz
		end = x.Now()
	})
	c.Run(sim.S, c.AppsDone)
	if !c.AppsDone() || end < 50*sim.US {
		t.Fatalf("done %v at %v", c.AppsDone(), end.Human())
	}
}

// A switch shares a congested output fairly: three nodes streaming to a
// fourth through one switch each get a third of its link, and finish
// together, none starved behind the others.
func TestSwitchSharesAnOutputFairly(t *testing.T) {
	c := newCluster(t, func(s *machine.Spec) { s.Nodes = 4 })
	const puts, size = 300, 4096
	dst := c.Nodes[0]
	remote := dst.Alloc(size)
	if err := dst.Register(remote, size, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
		t.Fatal(err)
	}
	done := make([]sim.Tick, 4)
	for _, n := range c.Nodes[1:] {
		n := n
		buf := n.Alloc(size)
		if err := n.Register(buf, size, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
			t.Fatal(err)
		}
		n.Spawn(0, "stream", func(x *Ctx) {
			for k := 0; k < puts; k++ {
				x.Put(0, buf, remote, size)
			}
			if err := x.Flush(0); err != nil {
				t.Error(err)
			}
			done[n.ID] = x.Now()
		})
	}
	c.Run(sim.S, c.AppsDone)
	first, last := done[1], done[1]
	for _, d := range done[1:] {
		first, last = min(first, d), max(last, d)
	}
	t.Logf("the senders finished at %v", done[1:])
	if first == 0 || float64(last-first) > 0.1*float64(last) {
		t.Fatalf("the senders finished at %v: the output was not shared fairly", done[1:])
	}
}

// One flush of a node over several of its logs returns only once every
// log's handler has taken the puts to it, its gets out together: sooner
// than a flush of each log in turn. A log without a flushing page is
// refused before anything is posted.
func TestActiveFlushLogs(t *testing.T) {
	const logs, puts = 4, 6
	// run puts to each of node 1's logs, flushes them all (together, or
	// one after another), and returns how long the flushes took and the
	// records each log's handler took before they returned.
	run := func(together bool) (sim.Tick, []int) {
		c := newCluster(t, nil)
		src, dst := c.Nodes[0], c.Nodes[1]
		buf := src.Alloc(4096)
		src.Register(buf, 4096, iommu.Perm{Bits: pte.R | pte.W})
		handled := make([]int, logs)
		var iuids []uint16
		var pages []uint64
		for k := range logs {
			iuid := uint16(10 + k)
			if _, err := dst.CreateLog(iuid, 8192, iommu.Poll, func(x *Ctx, r Record) {
				x.P.Compute(400)
				handled[k]++
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := dst.CreateFlushPage(iuid); err != nil {
				t.Fatal(err)
			}
			page := dst.Alloc(4096)
			if err := dst.Register(page, 4096, iommu.Perm{Bits: pte.WL | pte.WLD | pte.E, IUID: iuid}); err != nil {
				t.Fatal(err)
			}
			iuids, pages = append(iuids, iuid), append(pages, page)
		}
		var took sim.Tick
		var atReturn []int
		src.Spawn(0, "app", func(x *Ctx) {
			if err := x.ActiveFlushLogs(1, []uint16{iuids[0], 999}); err == nil {
				t.Error("a flush of a log with no flushing page was taken")
			}
			for i := range puts {
				for k := range logs {
					x.Put(1, buf, pages[k]+uint64(i)*16, 16)
				}
			}
			if err := x.Flush(1); err != nil {
				t.Error(err)
			}
			start := x.Now()
			if together {
				if err := x.ActiveFlushLogs(1, iuids); err != nil {
					t.Error(err)
				}
			} else {
				for _, iuid := range iuids {
					if err := x.ActiveFlush(1, iuid); err != nil {
						t.Error(err)
					}
				}
			}
			took = x.Now() - start
			atReturn = append([]int(nil), handled...)
		})
		c.Run(50*sim.MS, c.AppsDone)
		return took, atReturn
	}
	together, handled := run(true)
	oneByOne, _ := run(false)
	for k, n := range handled {
		if n != puts {
			t.Errorf("log %d's handler had taken %d of %d puts when the flush returned", k, n, puts)
		}
	}
	if together*2 > oneByOne {
		t.Errorf("the flush of %d logs together took %v, one after another %v: not overlapped", logs, together, oneByOne)
	}
	t.Logf("%d logs flushed together in %v, one after another in %v", logs, together, oneByOne)
}
