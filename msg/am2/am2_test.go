package am2

import (
	"errors"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// E5000Spec is the E5000 preset's machine spec and seed. The preset is a
// scenario file, and package scenario runs AM-II (workload.splitc), so the
// external test package reads it (preset_test.go) and sets this.
var E5000Spec func() (machine.Spec, uint64, error)

// e5000 is a cluster of the E5000 preset (seed 000's SMP node) with cores
// processors per node.
func e5000(t *testing.T, cores int) *machine.Cluster {
	t.Helper()
	spec, seed, err := E5000Spec()
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes = 2
	spec.Cores = cores
	c, err := machine.New(sim.NewEngine(seed), spec)
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes[0].SMP == nil {
		t.Fatal("the E5000 node is not an SMP")
	}
	return c
}

// plain is a cluster without a coherence model.
func plain(t *testing.T, cores int) *machine.Cluster {
	t.Helper()
	s := machine.DefaultSpec()
	s.Cores = cores
	c, err := machine.New(sim.NewEngine(1), s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newSys(t *testing.T, c *machine.Cluster, spec Spec) *System {
	t.Helper()
	sys, err := New(c, spec)
	if err != nil {
		t.Fatal(err)
	}
	return sys
}

func newEP(t *testing.T, sys *System, node int, tag uint64) *Endpoint {
	t.Helper()
	e, err := sys.NewEndpoint(node, tag)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, c *machine.Cluster) {
	t.Helper()
	c.Run(50*sim.MS, c.AppsDone) // the longest test needs 2 ms
	if !c.AppsDone() {
		t.Fatalf("not done at %v: a deadlock", c.Now().Human())
	}
}

// Eight senders into one receiver's small queue, short and bulk messages:
// every message is delivered exactly once, each sender's in order, with its
// data; full queues make senders back off (counted), and every slot and
// block is free again at the end.
func TestManySendersOneReceiver(t *testing.T) {
	for _, tc := range []struct {
		name          string
		coherent      bool
		slots, blocks int
		per           int
	}{
		{"e5000-tiny", true, 2, 1, 30},
		{"e5000-small", true, 8, 2, 40},
		{"plain-small", false, 4, 1, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const senders = 8
			var c *machine.Cluster
			if tc.coherent {
				c = e5000(t, senders+1)
			} else {
				c = plain(t, senders+1)
			}
			n := c.Nodes[0]
			sys := newSys(t, c, Spec{Slots: tc.slots, Blocks: tc.blocks, BackoffMin: 8, BackoffMax: 512})
			recv := newEP(t, sys, 0, 0xabc)
			got := make([][]int, senders)
			total := 0
			must(t, recv.SetHandler(1, func(tok *Token, m *Message) {
				s, i := int(m.Args[0]), int(m.Args[1])
				if m.From.Index != s+1 || m.Reply || m.Returned {
					t.Errorf("message %d of sender %d from %v (reply %v, returned %v)", i, s, m.From, m.Reply, m.Returned)
				}
				if i%4 == 3 {
					want := 1 + (i*97+s)%MaxBulk
					if m.Len != want {
						t.Errorf("sender %d message %d: %d bulk bytes, want %d", s, i, m.Len, want)
					}
					b := make([]byte, m.Len)
					tok.Endpoint().Proc().Read(m.Data, b)
					for k := range b {
						if b[k] != byte(s*31+i+k) {
							t.Fatalf("sender %d message %d byte %d: %d", s, i, k, b[k])
						}
					}
				} else if m.Len != 0 {
					t.Errorf("sender %d message %d: %d bulk bytes", s, i, m.Len)
				}
				got[s] = append(got[s], i)
				total++
				tok.Endpoint().Proc().Compute(200) // a slow receiver: the queue fills
			}))
			eps := make([]*Endpoint, senders)
			for s := range eps {
				eps[s] = newEP(t, sys, 0, uint64(s))
				must(t, eps[s].Map(0, recv.Name(), 0xabc))
			}
			for s := 0; s < senders; s++ {
				s, e := s, eps[s]
				n.Cores[s].Spawn("sender", func(p *cpu.Proc) {
					must(t, e.Attach(p))
					src := n.Alloc(MaxBulk)
					for i := 0; i < tc.per; i++ {
						if i%4 == 3 {
							size := 1 + (i*97+s)%MaxBulk
							b := make([]byte, size)
							for k := range b {
								b[k] = byte(s*31 + i + k)
							}
							p.Write(src, b)
							must(t, e.RequestBulk(0, 1, src, size, uint32(s), uint32(i)))
						} else {
							must(t, e.Request(0, 1, uint32(s), uint32(i)))
						}
					}
				})
			}
			n.Cores[senders].Spawn("receiver", func(p *cpu.Proc) {
				must(t, recv.Attach(p))
				for total < senders*tc.per {
					recv.Poll()
				}
			})
			run(t, c)
			for s := range got {
				if len(got[s]) != tc.per {
					t.Errorf("sender %d: %d messages delivered, want %d", s, len(got[s]), tc.per)
				}
				for i, v := range got[s] {
					if v != i {
						t.Errorf("sender %d: delivery %d is message %d", s, i, v)
						break
					}
				}
			}
			var backoffs uint64
			for _, e := range eps {
				backoffs += e.Stats().Backoffs
			}
			if backoffs == 0 {
				t.Error("no sender backed off on a small queue")
			}
			if st := recv.Stats(); st.Received != senders*uint64(tc.per) {
				t.Errorf("receiver counted %d messages", st.Received)
			}
			for b := 0; b < tc.blocks; b++ {
				if recv.BulkValid(false, b) {
					t.Errorf("bulk block %d still valid", b)
				}
			}
			for i := 0; i < tc.slots; i++ {
				ticket := uint64(senders*tc.per + i)
				if ty := n.Mem.Load64(recv.slot(qRequest, ticket)); ty != ticket<<8|typeFree {
					t.Errorf("slot %d: type word %#x, want free for ticket %d", i, ty, ticket)
				}
			}
			t.Logf("%d back-offs, done at %v", backoffs, c.Now().Human())
		})
	}
}

// Two endpoints flood each other with requests whose handlers reply, with
// queues far smaller than the traffic: no deadlock, every request replied.
func TestFloodEachOther(t *testing.T) {
	for _, tc := range []struct {
		name          string
		slots, blocks int
	}{{"one-slot", 1, 1}, {"two-slots", 2, 1}, {"eight-slots", 8, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			const per = 100
			c := e5000(t, 2)
			n := c.Nodes[0]
			sys := newSys(t, c, Spec{Slots: tc.slots, Blocks: tc.blocks, BackoffMin: 4, BackoffMax: 256})
			eps := []*Endpoint{newEP(t, sys, 0, 1), newEP(t, sys, 0, 2)}
			replies := make([]int, 2)
			requests := make([]int, 2)
			for i, e := range eps {
				i, e := i, e
				must(t, e.Map(0, eps[1-i].Name(), eps[1-i].Tag()))
				must(t, e.SetHandler(1, func(tok *Token, m *Message) {
					requests[i]++
					tok.Endpoint().Proc().Compute(300) // slower than the sender: queues fill
					if err := tok.Reply(2, m.Args[0]+1); err != nil {
						t.Error(err)
					}
				}))
				must(t, e.SetHandler(2, func(tok *Token, m *Message) {
					if !m.Reply {
						t.Error("a reply handler ran for a request")
					}
					replies[i]++
				}))
				n.Cores[i].Spawn("flood", func(p *cpu.Proc) {
					must(t, e.Attach(p))
					for k := 0; k < per; k++ {
						must(t, e.Request(0, 1, uint32(k)))
					}
					for replies[i] < per || requests[i] < per {
						e.Poll()
					}
				})
			}
			run(t, c)
			for i, e := range eps {
				if replies[i] != per || requests[i] != per {
					t.Errorf("endpoint %d: %d replies, %d requests, want %d", i, replies[i], requests[i], per)
				}
				t.Logf("endpoint %d: %+v", i, e.Stats())
			}
			if eps[0].Stats().Backoffs+eps[1].Stats().Backoffs == 0 {
				t.Error("no back-off on queues smaller than the flood")
			}
		})
	}
}

// A message with a wrong tag comes back to the sender's handler 0, and
// the destination runs nothing.
func TestTagMismatchReturned(t *testing.T) {
	c := e5000(t, 2)
	n := c.Nodes[0]
	sys := newSys(t, c, DefaultSpec())
	a, b := newEP(t, sys, 0, 7), newEP(t, sys, 0, 9)
	must(t, a.Map(3, b.Name(), 8)) // the wrong tag
	ran := 0
	must(t, b.SetHandler(5, func(*Token, *Message) { ran++ }))
	var back []Message
	must(t, a.SetHandler(0, func(tok *Token, m *Message) {
		back = append(back, *m)
		if err := tok.Reply(5); err == nil {
			t.Error("a reply from handler 0 of a returned message")
		}
	}))
	n.Cores[0].Spawn("a", func(p *cpu.Proc) {
		must(t, a.Attach(p))
		must(t, a.Request(3, 5, 11, 12))
		a.Poll()
	})
	n.Cores[1].Spawn("b", func(p *cpu.Proc) {
		must(t, b.Attach(p))
		for i := 0; i < 100; i++ {
			b.Poll()
		}
	})
	run(t, c)
	if len(back) != 1 || !back[0].Returned || back[0].Handler != 5 || back[0].From != b.Name() ||
		len(back[0].Args) != 2 || back[0].Args[1] != 12 {
		t.Fatalf("returned: %+v", back)
	}
	if ran != 0 || b.Stats().Received != 0 || a.Stats().Returned != 1 || a.Stats().Sent != 0 {
		t.Fatalf("destination ran %d handlers; a %+v, b %+v", ran, a.Stats(), b.Stats())
	}
}

// A bulk request and a bulk reply: each block is valid while its handler
// runs and free (valid cleared) after it returns.
func TestBulkBlockFreed(t *testing.T) {
	c := e5000(t, 2)
	n := c.Nodes[0]
	sys := newSys(t, c, Spec{Slots: 4, Blocks: 2, BackoffMin: 4, BackoffMax: 64})
	a, b := newEP(t, sys, 0, 1), newEP(t, sys, 0, 2)
	must(t, a.Map(0, b.Name(), 2))
	validIn := map[string]bool{}
	done := false
	must(t, b.SetHandler(1, func(tok *Token, m *Message) {
		validIn["request"] = b.BulkValid(false, 0)
		buf := make([]byte, m.Len)
		tok.Endpoint().Proc().Read(m.Data, buf)
		if m.Len != MaxBulk || buf[0] != 1 || buf[MaxBulk-1] != 1 {
			t.Errorf("request data: %d bytes, first %d last %d", m.Len, buf[0], buf[len(buf)-1])
		}
		src := n.Alloc(100)
		tok.Endpoint().Proc().Write(src, []byte("reply data"))
		must(t, tok.ReplyBulk(2, src, 10))
	}))
	must(t, a.SetHandler(2, func(tok *Token, m *Message) {
		validIn["reply"] = a.BulkValid(true, 0)
		buf := make([]byte, m.Len)
		tok.Endpoint().Proc().Read(m.Data, buf)
		if string(buf) != "reply data" {
			t.Errorf("reply data %q", buf)
		}
		done = true
	}))
	n.Cores[0].Spawn("a", func(p *cpu.Proc) {
		must(t, a.Attach(p))
		src := n.Alloc(MaxBulk)
		b := make([]byte, MaxBulk)
		for i := range b {
			b[i] = 1
		}
		p.Write(src, b)
		must(t, a.RequestBulk(0, 1, src, MaxBulk))
		for !done {
			a.Poll()
		}
	})
	n.Cores[1].Spawn("b", func(p *cpu.Proc) {
		must(t, b.Attach(p))
		for b.Stats().Received == 0 {
			b.Poll()
		}
	})
	run(t, c)
	if !validIn["request"] || !validIn["reply"] {
		t.Errorf("blocks valid in the handlers: %v", validIn)
	}
	if b.BulkValid(false, 0) || a.BulkValid(true, 0) {
		t.Error("a bulk block still valid after its handler")
	}
}

// A request's handler replies through its token; the reply reaches the
// requester's reply handler with the token's values.
func TestRequestReplyRoundTrip(t *testing.T) {
	c := e5000(t, 2)
	n := c.Nodes[0]
	sys := newSys(t, c, DefaultSpec())
	a, b := newEP(t, sys, 0, 0x1111), newEP(t, sys, 0, 0x2222)
	must(t, a.Map(0, b.Name(), 0x2222))
	var got []uint32
	var from Name
	must(t, b.SetHandler(4, func(tok *Token, m *Message) {
		must(t, tok.Reply(6, m.Args[0]*2, m.Args[1]*2, 99))
		if err := tok.Reply(6); err == nil {
			t.Error("a second reply accepted")
		}
	}))
	must(t, a.SetHandler(6, func(tok *Token, m *Message) {
		got, from = m.Args, m.From
		if err := tok.Reply(6); err == nil {
			t.Error("a reply from a reply handler accepted")
		}
	}))
	n.Cores[0].Spawn("a", func(p *cpu.Proc) {
		must(t, a.Attach(p))
		must(t, a.Request(0, 4, 20, 21))
		for got == nil {
			a.Poll()
		}
	})
	n.Cores[1].Spawn("b", func(p *cpu.Proc) {
		must(t, b.Attach(p))
		for b.Stats().Received == 0 {
			b.Poll()
		}
	})
	run(t, c)
	if len(got) != 3 || got[0] != 40 || got[1] != 42 || got[2] != 99 || from != b.Name() {
		t.Fatalf("reply %v from %v", got, from)
	}
}

// Bad input is an error, and nothing is delivered, not even in part.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(e *Endpoint, src uint64) error
		want string
	}{
		{"nine-args", func(e *Endpoint, _ uint64) error { return e.Request(0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9) }, "9 arguments"},
		{"bulk-8k+1", func(e *Endpoint, src uint64) error { return e.RequestBulk(0, 1, src, MaxBulk+1) }, "8193 bytes"},
		{"bulk-0", func(e *Endpoint, src uint64) error { return e.RequestBulk(0, 1, src, 0) }, "0 bytes"},
		{"unknown-handler", func(e *Endpoint, _ uint64) error { return e.Request(0, 2, 1) }, "handler index 2"},
		{"handler-out-of-range", func(e *Endpoint, _ uint64) error { return e.Request(0, MaxHandlers, 1) }, "handler index 256"},
		{"handler-0", func(e *Endpoint, _ uint64) error { return e.Request(0, 0, 1) }, "handler index 0"},
		{"dest-not-mapped", func(e *Endpoint, _ uint64) error { return e.Request(1, 1, 1) }, "destination index 1"},
		{"dest-out-of-range", func(e *Endpoint, _ uint64) error { return e.Request(-1, 1, 1) }, "destination index -1"},
		{"remote", func(e *Endpoint, _ uint64) error { return e.Request(2, 1, 1) }, "another node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e5000(t, 2)
			n := c.Nodes[0]
			sys := newSys(t, c, Spec{Slots: 4, Blocks: 1, BackoffMin: 4, BackoffMax: 64})
			a, b := newEP(t, sys, 0, 1), newEP(t, sys, 0, 2)
			far := newEP(t, sys, 1, 3)
			must(t, a.Map(0, b.Name(), 2))
			must(t, a.Map(2, far.Name(), 3))
			ran := 0
			must(t, b.SetHandler(1, func(*Token, *Message) { ran++ }))
			must(t, far.SetHandler(1, func(*Token, *Message) { ran++ }))
			var err error
			n.Cores[0].Spawn("a", func(p *cpu.Proc) {
				must(t, a.Attach(p))
				err = tc.send(a, n.Alloc(2*MaxBulk))
			})
			n.Cores[1].Spawn("b", func(p *cpu.Proc) {
				must(t, b.Attach(p))
				for i := 0; i < 200; i++ {
					b.Poll()
				}
			})
			run(t, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if tc.name == "remote" && !errors.Is(err, ErrRemote) {
				t.Errorf("error %v is not ErrRemote", err)
			}
			if ran != 0 || a.Stats().Sent != 0 || b.Stats().Received != 0 {
				t.Fatalf("%d handlers ran, a sent %d", ran, a.Stats().Sent)
			}
			if ty := n.Mem.Load64(b.slot(qRequest, 0)); ty != 0<<8|typeFree {
				t.Errorf("slot 0 of the destination: type word %#x", ty)
			}
			if n.Mem.Load64(b.tail(qRequest)) != 0 || b.BulkValid(false, 0) {
				t.Error("the destination's tail moved or its bulk block was claimed")
			}
		})
	}
}

// The set-up errors: specs, tables, attaching.
func TestSetupErrors(t *testing.T) {
	c := plain(t, 1)
	for _, s := range []Spec{{Slots: 0, Blocks: 1, BackoffMin: 1, BackoffMax: 1}, {Slots: 1, Blocks: 0, BackoffMin: 1, BackoffMax: 1},
		{Slots: 1, Blocks: 1, BackoffMin: 0, BackoffMax: 1}, {Slots: 1, Blocks: 1, BackoffMin: 4, BackoffMax: 2}} {
		if _, err := New(c, s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	sys := newSys(t, c, DefaultSpec())
	e := newEP(t, sys, 0, 1)
	// An endpoint name that does not exist: a clear error.
	if err := e.Map(0, Name{0, 5}, 1); err == nil || !strings.Contains(err.Error(), "no endpoint (0,5)") {
		t.Errorf("mapping an endpoint that does not exist: %v", err)
	}
	if e.Map(MaxDests, e.Name(), 1) == nil || e.SetHandler(MaxHandlers, nil) == nil {
		t.Error("a bad table entry accepted")
	}
	if _, err := sys.NewEndpoint(2, 0); err == nil {
		t.Error("an endpoint on node 2 of 2")
	}
	if b := DefaultSpec().BlockBytes(); b != 64+2*(2*64+256*64+16*64+16*8192) {
		t.Errorf("default block of %d bytes", b)
	}
}
