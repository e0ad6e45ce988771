package am2

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/sim"
)

// e5000Net is two E5000 nodes of cores processors joined by Myrinet-class
// NIUs (WithMyrinet); tx and rx, when not 0, are the NIUs' FIFO depths.
func e5000Net(t *testing.T, cores, tx, rx int) *machine.Cluster {
	t.Helper()
	return e5000Nodes(t, 2, 1, cores, tx, rx)
}

// e5000Nodes is e5000Net with nodes nodes of nius NIUs each (more than two
// NIUs: through the NIUs' switch).
func e5000Nodes(t *testing.T, nodes, nius, cores, tx, rx int) *machine.Cluster {
	t.Helper()
	spec, seed, err := E5000Spec()
	if err != nil {
		t.Fatal(err)
	}
	spec.Nodes = nodes
	spec.Cores = cores
	spec = WithMyrinet(spec)
	spec.StartXNICs = nius
	if tx > 0 {
		spec.StartX.TXDepth, spec.StartX.RXDepth = tx, rx
	}
	c, err := machine.New(sim.NewEngine(seed), spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A request and its reply, short and bulk, across the network: the data
// arrives, the reply finds its requester, every bulk block's credit comes
// back.
func TestNetRequestReply(t *testing.T) {
	c := e5000Net(t, 1, 0, 0)
	sys := newSys(t, c, DefaultSpec())
	a, b := newEP(t, sys, 0, 0x1111), newEP(t, sys, 1, 0x2222)
	must(t, a.Map(3, b.Name(), 0x2222))
	const size = 5000
	var replies, bulkReplies int
	must(t, b.SetHandler(1, func(tok *Token, m *Message) {
		if m.From != a.Name() || m.Reply {
			t.Errorf("request from %v, reply %v", m.From, m.Reply)
		}
		must(t, tok.Reply(2, m.Args[0]+1))
	}))
	must(t, b.SetHandler(4, func(tok *Token, m *Message) {
		p := tok.Endpoint().Proc()
		buf := make([]byte, m.Len)
		p.Read(m.Data, buf)
		for i := range buf {
			if buf[i] != byte(i*7) {
				t.Fatalf("bulk byte %d: %d", i, buf[i])
			}
		}
		// Send it back, reversed, as a bulk reply.
		for i, j := 0, len(buf)-1; i < j; i, j = i+1, j-1 {
			buf[i], buf[j] = buf[j], buf[i]
		}
		out := b.node.Alloc(size)
		p.Write(out, buf)
		must(t, tok.ReplyBulk(5, out, m.Len))
	}))
	must(t, a.SetHandler(2, func(tok *Token, m *Message) {
		if !m.Reply || m.Args[0] != 42 || m.From != b.Name() {
			t.Errorf("reply %+v", m)
		}
		replies++
	}))
	must(t, a.SetHandler(5, func(tok *Token, m *Message) {
		buf := make([]byte, m.Len)
		tok.Endpoint().Proc().Read(m.Data, buf)
		for i := range buf {
			if buf[i] != byte((size-1-i)*7) {
				t.Fatalf("bulk reply byte %d: %d", i, buf[i])
			}
		}
		bulkReplies++
	}))
	c.Nodes[0].Cores[0].Spawn("a", func(p *cpu.Proc) {
		must(t, a.Attach(p))
		src := c.Nodes[0].Alloc(size)
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		p.Write(src, buf)
		must(t, a.Request(3, 1, 41))
		must(t, a.RequestBulk(3, 4, src, size))
		for replies < 1 || bulkReplies < 1 {
			a.Poll()
		}
	})
	c.Nodes[1].Cores[0].Spawn("b", func(p *cpu.Proc) {
		must(t, b.Attach(p))
		for b.Stats().Received < 2 {
			b.Poll()
		}
		// Until the bulk reply's credit is back.
		for len(sys.chans[[2]Name{a.Name(), b.Name()}].free[qReply]) < sys.spec.Net.Blocks {
			b.Poll()
		}
	})
	run(t, c)
	ch := sys.chans[[2]Name{a.Name(), b.Name()}]
	for q := range ch.free {
		if len(ch.free[q]) != sys.spec.Net.Blocks {
			t.Errorf("queue %d: %d of %d blocks free", q, len(ch.free[q]), sys.spec.Net.Blocks)
		}
	}
	if a.Stats().NetPolls == 0 || b.Stats().NetPolls == 0 {
		t.Error("no network polls counted")
	}
	t.Logf("done at %v; a: %+v", c.Now().Human(), a.Stats())
}

// Eight senders on one node into one receiver on the other, through small
// NIU FIFOs and few bulk blocks: every message delivered once, in order
// per sender, with its data; the senders back off; all credits return.
func TestNetManySendersOneReceiver(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tx, rx        int
		blocks, per   int
		pending       int
		policy        Policy
		slowReceiverC int
	}{
		{"tiny-fifos", 1, 2, 1, 12, 1, Policy{}, 200},
		{"small-fifos-1/1", 2, 4, 2, 16, 4, Policy{Every: 1}, 100},
		{"net-only", 2, 4, 2, 12, 2, Policy{Protocols: NetOnly}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const senders = 8
			c := e5000Net(t, senders, tc.tx, tc.rx)
			spec := Spec{Slots: 8, Blocks: 2, BackoffMin: 8, BackoffMax: 512, Net: NetSpec{Blocks: tc.blocks, Pending: tc.pending}, Poll: tc.policy}
			sys := newSys(t, c, spec)
			recv := newEP(t, sys, 1, 0xabc)
			got := make([][]int, senders)
			total := 0
			must(t, recv.SetHandler(1, func(tok *Token, m *Message) {
				s, i := int(m.Args[0]), int(m.Args[1])
				if m.From != (Name{0, s}) || m.Reply || m.Returned {
					t.Errorf("message %d of sender %d from %v (reply %v, returned %v)", i, s, m.From, m.Reply, m.Returned)
				}
				if i%3 == 2 {
					want := 1 + (i*997+s*13)%MaxBulk
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
				tok.Endpoint().Proc().Compute(tc.slowReceiverC)
			}))
			eps := make([]*Endpoint, senders)
			for s := range eps {
				eps[s] = newEP(t, sys, 0, uint64(s))
				must(t, eps[s].Map(0, recv.Name(), 0xabc))
			}
			n := c.Nodes[0]
			done := 0
			for s := 0; s < senders; s++ {
				s, e := s, eps[s]
				n.Cores[s].Spawn("sender", func(p *cpu.Proc) {
					must(t, e.Attach(p))
					src := n.Alloc(MaxBulk)
					for i := 0; i < tc.per; i++ {
						if i%3 == 2 {
							size := 1 + (i*997+s*13)%MaxBulk
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
					// Until the credits of its bulk blocks are back.
					for len(sys.chans[[2]Name{e.Name(), recv.Name()}].free[qRequest]) < tc.blocks {
						e.Poll()
					}
					done++
				})
			}
			c.Nodes[1].Cores[0].Spawn("receiver", func(p *cpu.Proc) {
				must(t, recv.Attach(p))
				for total < senders*tc.per || done < senders {
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
				t.Error("no sender backed off")
			}
			if r := c.Nodes[1].NIU.Refused() + c.Nodes[0].NIU.Refused(); r != 0 {
				t.Errorf("the NIUs refused %d accesses: %v %v", r, c.Nodes[0].NIU.Errors(), c.Nodes[1].NIU.Errors())
			}
			if st := recv.Stats(); st.Received != senders*uint64(tc.per) || st.Dropped != 0 {
				t.Errorf("receiver counted %d messages, dropped %d", st.Received, st.Dropped)
			}
			t.Logf("%d back-offs, done at %v", backoffs, c.Now().Human())
		})
	}
}

// Two endpoints on two nodes flood each other with requests whose
// handlers reply (some bulk), through FIFOs far smaller than the traffic:
// no deadlock, every request replied.
func TestNetFloodEachOther(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tx, rx int
		policy Policy
	}{
		{"fifo-1", 1, 1, Policy{}},
		{"fifo-2-1/32", 2, 2, Policy{Every: 32}},
		{"net-only", 1, 2, Policy{Protocols: NetOnly}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const per = 40
			c := e5000Net(t, 1, tc.tx, tc.rx)
			sys := newSys(t, c, Spec{Slots: 4, Blocks: 1, BackoffMin: 4, BackoffMax: 256, Net: NetSpec{Blocks: 1, Pending: 1}, Poll: tc.policy})
			eps := [2]*Endpoint{newEP(t, sys, 0, 7), newEP(t, sys, 1, 9)}
			var replies [2]int
			for i, e := range eps {
				i, e := i, e
				peer := eps[1-i]
				must(t, e.Map(0, peer.Name(), peer.Tag()))
				src := c.Nodes[i].Alloc(MaxBulk)
				must(t, e.SetHandler(1, func(tok *Token, m *Message) {
					if m.Args[0]%5 == 0 {
						must(t, tok.ReplyBulk(2, src, 100+int(m.Args[0]), m.Args[0]))
					} else {
						must(t, tok.Reply(2, m.Args[0]))
					}
				}))
				must(t, e.SetHandler(2, func(tok *Token, m *Message) {
					if m.Args[0]%5 == 0 && m.Len != 100+int(m.Args[0]) {
						t.Errorf("bulk reply of %d bytes to request %d", m.Len, m.Args[0])
					}
					replies[i]++
				}))
				c.Nodes[i].Cores[0].Spawn("flood", func(p *cpu.Proc) {
					must(t, e.Attach(p))
					for k := 0; k < per; k++ {
						must(t, e.Request(0, 1, uint32(k)))
					}
					for replies[i] < per || replies[1-i] < per {
						e.Poll()
					}
				})
			}
			run(t, c)
			if replies != [2]int{per, per} {
				t.Errorf("replies %v, want %d each", replies, per)
			}
			t.Logf("done at %v, back-offs %d + %d", c.Now().Human(), eps[0].Stats().Backoffs, eps[1].Stats().Backoffs)
		})
	}
}

// A message with a stale tag comes back to the sender's handler 0 with its
// handler and arguments, and a bulk one's block credit with it; the
// receiver runs nothing.
func TestNetTagMismatchReturned(t *testing.T) {
	c := e5000Net(t, 1, 0, 0)
	sys := newSys(t, c, Spec{Slots: 8, Blocks: 1, BackoffMin: 4, BackoffMax: 64, Net: NetSpec{Blocks: 1}})
	a, b := newEP(t, sys, 0, 1), newEP(t, sys, 1, 0xbeef)
	must(t, a.Map(0, b.Name(), 0xdead)) // the wrong tag
	ran := 0
	must(t, b.SetHandler(1, func(*Token, *Message) { ran++ }))
	var back []Message
	must(t, a.SetHandler(0, func(_ *Token, m *Message) { back = append(back, *m) }))
	must(t, a.SetHandler(1, func(*Token, *Message) {}))
	c.Nodes[0].Cores[0].Spawn("a", func(p *cpu.Proc) {
		must(t, a.Attach(p))
		src := c.Nodes[0].Alloc(64)
		must(t, a.Request(0, 1, 5, 6))
		must(t, a.RequestBulk(0, 1, src, 64, 7))
		must(t, a.RequestBulk(0, 1, src, 32, 8)) // needs the first bulk's block back
		for len(back) < 3 {
			a.Poll()
		}
	})
	c.Nodes[1].Cores[0].Spawn("b", func(p *cpu.Proc) {
		must(t, b.Attach(p))
		for p.Now() < 2*sim.MS {
			b.Poll()
		}
	})
	run(t, c)
	if ran != 0 {
		t.Errorf("the receiver ran %d handlers", ran)
	}
	if len(back) != 3 || !back[0].Returned || back[0].Handler != 1 || back[0].From != b.Name() ||
		len(back[0].Args) != 2 || back[0].Args[1] != 6 || back[1].Len != 64 || back[2].Args[0] != 8 {
		t.Errorf("returned %+v", back)
	}
	if st := a.Stats(); st.Returned != 3 {
		t.Errorf("sender counted %d returned", st.Returned)
	}
}

// Bad input over the network is an error before anything is sent: nothing
// reaches the NIU, nothing is delivered.
func TestNetBadInput(t *testing.T) {
	c := e5000Net(t, 1, 0, 0)
	sys := newSys(t, c, DefaultSpec())
	a, b := newEP(t, sys, 0, 1), newEP(t, sys, 1, 2)
	must(t, a.Map(0, b.Name(), 2))
	ran := 0
	must(t, b.SetHandler(1, func(*Token, *Message) { ran++ }))
	if err := a.Map(1, Name{1, 7}, 2); err == nil || !strings.Contains(err.Error(), "no endpoint (1,7)") {
		t.Errorf("mapping an endpoint that does not exist: %v", err)
	}
	if err := a.Map(1, Name{2, 0}, 2); err == nil {
		t.Error("mapping an endpoint on a node that does not exist: no error")
	}
	c.Nodes[0].Cores[0].Spawn("a", func(p *cpu.Proc) {
		must(t, a.Attach(p))
		src := c.Nodes[0].Alloc(2 * MaxBulk)
		for _, tc := range []struct {
			name string
			err  error
			want string
		}{
			{"9 arguments", a.Request(0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9), "9 arguments, want at most 8"},
			{"8 kB + 1", a.RequestBulk(0, 1, src, MaxBulk+1), "8193 bytes, want 1..8192"},
			{"unknown handler", a.Request(0, 9), "handler index 9 not in endpoint (1,0)'s table"},
			{"handler out of range", a.Request(0, 256), "handler index 256"},
			{"unmapped destination", a.Request(1, 1), "destination index 1 not in endpoint (0,0)'s table"},
		} {
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
			}
		}
	})
	c.Nodes[1].Cores[0].Spawn("b", func(p *cpu.Proc) {
		must(t, b.Attach(p))
		for p.Now() < 200*sim.US {
			b.Poll()
		}
	})
	run(t, c)
	if ran != 0 || a.Stats().Sent != 0 || b.Stats().Received != 0 {
		t.Errorf("delivered %d, sent %d", ran, a.Stats().Sent)
	}
	for i, n := range c.Nodes {
		if n.NIU.TXLen(startx.Low)+n.NIU.TXLen(startx.High) != 0 || n.NIU.Refused() != 0 {
			t.Errorf("node %d's NIU: %d refused", i, n.NIU.Refused())
		}
	}
}

// The protocols a system runs decide what it reaches.
func TestProtocolsReach(t *testing.T) {
	for _, tc := range []struct {
		policy      Policy
		local, peer error
	}{
		{Policy{}, nil, nil},
		{Policy{Protocols: ShmOnly}, nil, ErrRemote},
		{Policy{Protocols: NetOnly}, ErrLocal, nil},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			c := e5000Net(t, 2, 0, 0)
			sys := newSys(t, c, Spec{Slots: 8, Blocks: 1, BackoffMin: 4, BackoffMax: 64, Poll: tc.policy})
			a, l, r := newEP(t, sys, 0, 1), newEP(t, sys, 0, 2), newEP(t, sys, 1, 3)
			must(t, a.Map(0, l.Name(), 2))
			must(t, a.Map(1, r.Name(), 3))
			got := 0
			for _, e := range []*Endpoint{l, r} {
				must(t, e.SetHandler(1, func(*Token, *Message) { got++ }))
			}
			want := 0
			c.Nodes[0].Cores[0].Spawn("a", func(p *cpu.Proc) {
				must(t, a.Attach(p))
				for i, w := range []error{tc.local, tc.peer} {
					err := a.Request(i, 1)
					if !errors.Is(err, w) || (w == nil) != (err == nil) {
						t.Errorf("destination %d: %v, want %v", i, err, w)
					}
					if err == nil {
						want++
					}
				}
			})
			for i, e := range []*Endpoint{l, r} {
				e := e
				c.Nodes[i].Cores[1-i].Spawn("recv", func(p *cpu.Proc) {
					must(t, e.Attach(p))
					for p.Now() < 300*sim.US {
						e.Poll()
					}
				})
			}
			run(t, c)
			if got != want {
				t.Errorf("%d delivered, want %d", got, want)
			}
		})
	}
}

// The polling policy: fixed fractions poll the network every k-th poll;
// the adaptive one moves between 1/32 (quiet) and 1/8 (busy).
func TestPoller(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Policy
		msgs   func(i int) int // what the i-th network poll takes
		polls  int
		want   int // network polls
		every  int // the interval at the end
	}{
		{"1/1", Policy{Every: 1}, func(int) int { return 0 }, 100, 100, 1},
		{"1/8", Policy{Every: 8}, func(int) int { return 1 }, 100, 12, 8},
		{"1/32", Policy{Every: 32}, func(int) int { return 5 }, 100, 3, 32},
		{"adaptive-quiet", Policy{}, func(int) int { return 0 }, 320, 10, 32},
		// 32, 64 (2 messages: 16), 80 (3: 11), 91 (4: 8), then every 8th.
		{"adaptive-busy", Policy{}, func(int) int { return 1 }, 800, 4 + (800-91)/8, 8},
		// A message every 16th network poll: 2 in the history, ⌈32/2⌉.
		{"adaptive-sparse", Policy{}, func(i int) int { return b2i(i%16 == 0) }, 3200, -1, 16},
		{"shm-only", Policy{Protocols: ShmOnly}, func(int) int { return 1 }, 50, 0, 0},
		{"net-only", Policy{Protocols: NetOnly}, func(int) int { return 1 }, 50, 50, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q poller
			n := 0
			for i := 0; i < tc.polls; i++ {
				if q.due(tc.policy) {
					q.took(tc.policy, tc.msgs(n))
					n++
				}
			}
			if (tc.want >= 0 && n != tc.want) || q.every != tc.every {
				t.Errorf("%d network polls, interval %d; want %d, %d", n, q.every, tc.want, tc.every)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
		err  string
	}{
		{"adaptive", Policy{}, ""},
		{"1/8", Policy{Every: 8}, ""},
		{"1/1", Policy{Every: 1}, ""},
		{"shm-only", Policy{Protocols: ShmOnly}, ""},
		{"net-only", Policy{Protocols: NetOnly}, ""},
		{"1/0", Policy{}, "want adaptive, 1/k"},
		{"1/x", Policy{}, "want adaptive, 1/k"},
		{"often", Policy{}, "want adaptive, 1/k"},
	} {
		got, err := ParsePolicy(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want || got.String() != tc.in {
			t.Errorf("%q: %v %v (%s)", tc.in, got, err, got)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Clusters of SMPs joined through the NIUs' switch — four nodes of two
// processors with an NIU each, and two of eight with three NIUs each, the
// Clump's SMP (its endpoints on the NIUs as 3 + 3 + 2): every endpoint
// sends every other a short and a bulk request, inside its node by shared
// memory, to the others through the switch; every request is answered
// (the bulk one with its data back), nothing is dropped, every bulk credit
// returns, and every NIU carries its endpoints' share.
func TestNetAllToAllThroughSwitch(t *testing.T) {
	for _, tc := range []struct{ nodes, nius, cores int }{{4, 1, 2}, {2, 3, 8}} {
		t.Run(fmt.Sprintf("%dx%d-%dnius", tc.nodes, tc.cores, tc.nius), func(t *testing.T) { allToAll(t, tc.nodes, tc.nius, tc.cores) })
	}
}

func allToAll(t *testing.T, nodes, nius, cores int) {
	c := e5000Nodes(t, nodes, nius, cores, 2, 4)
	if c.StartXSwitch == nil || len(c.Nodes[0].NIUs) != nius {
		t.Fatalf("switch %v, %d NIUs a node", c.StartXSwitch, len(c.Nodes[0].NIUs))
	}
	sys := newSys(t, c, Spec{Slots: 8, Blocks: 2, BackoffMin: 8, BackoffMax: 512, Net: NetSpec{Blocks: 1}})
	var eps []*Endpoint
	for n := 0; n < nodes; n++ {
		for k := 0; k < cores; k++ {
			eps = append(eps, newEP(t, sys, n, uint64(100*n+k)))
		}
	}
	const size = 3000
	answers := make([]int, len(eps))
	for i, e := range eps {
		i, e := i, e
		for j, d := range eps {
			must(t, e.Map(j, d.Name(), d.Tag()))
		}
		src := e.node.Alloc(size)
		must(t, e.SetHandler(1, func(tok *Token, m *Message) {
			must(t, tok.Reply(3, m.Args[0], uint32(i)))
		}))
		must(t, e.SetHandler(2, func(tok *Token, m *Message) {
			p := tok.Endpoint().Proc()
			b := make([]byte, m.Len)
			p.Read(m.Data, b)
			for k := range b {
				if b[k] != byte(int(m.Args[0])+k) {
					t.Fatalf("endpoint %d: bulk from %v byte %d: %d", i, m.From, k, b[k])
				}
			}
			p.Write(src, b)
			must(t, tok.ReplyBulk(4, src, m.Len, m.Args[0]))
		}))
		must(t, e.SetHandler(3, func(_ *Token, m *Message) {
			if int(m.Args[1]) >= len(eps) || eps[m.Args[1]].Name() != m.From {
				t.Errorf("endpoint %d: reply from %v says %d", i, m.From, m.Args[1])
			}
			answers[i]++
		}))
		must(t, e.SetHandler(4, func(tok *Token, m *Message) {
			b := make([]byte, m.Len)
			tok.Endpoint().Proc().Read(m.Data, b)
			for k := range b {
				if b[k] != byte(int(m.Args[0])+k) {
					t.Fatalf("endpoint %d: bulk reply byte %d: %d", i, k, b[k])
				}
			}
			answers[i]++
		}))
		c.Nodes[e.Name().Node].Cores[e.Name().Index].Spawn("all", func(p *cpu.Proc) {
			must(t, e.Attach(p))
			out := e.node.Alloc(size)
			for j := range eps {
				if j == i {
					continue
				}
				b := make([]byte, size)
				for k := range b {
					b[k] = byte(i + j + k)
				}
				p.Write(out, b)
				must(t, e.Request(j, 1, uint32(j)))
				must(t, e.RequestBulk(j, 2, out, size, uint32(i+j)))
			}
			for {
				all := true
				for _, a := range answers {
					all = all && a == 2*(len(eps)-1)
				}
				if all {
					break
				}
				e.Poll()
			}
			// Until this endpoint's credits are back.
			for j, d := range eps {
				if d.Name().Node == e.Name().Node || j == i {
					continue
				}
				for len(sys.chans[[2]Name{e.Name(), d.Name()}].free[qRequest]) < 1 {
					e.Poll()
				}
			}
		})
	}
	run(t, c)
	for i, a := range answers {
		if a != 2*(len(eps)-1) {
			t.Errorf("endpoint %d: %d answers, want %d", i, a, 2*(len(eps)-1))
		}
	}
	if d := c.StartXSwitch.Dropped(); d != 0 {
		t.Errorf("the switch dropped %d packets", d)
	}
	for i, n := range c.Nodes {
		for r, niu := range n.NIUs {
			if x := niu.Refused(); x != 0 {
				t.Errorf("node %d's NIU %d refused %d: %v", i, r, x, niu.Errors())
			}
		}
	}
	// Each NIU's line out carried its endpoints' requests: with k of them
	// on it, k × the remote endpoints' bulk data at least.
	remote := (nodes - 1) * cores
	for a, l := range c.StartXLines {
		if a%2 != 0 {
			continue // the lines out of the switch
		}
		k := (cores + nius - 1 - a/2%nius) / nius
		if want := uint64(k * remote * size); l.Bytes() < want {
			t.Errorf("line from NIU address %d: %d bytes, want at least %d", a/2, l.Bytes(), want)
		}
	}
	t.Logf("done at %v", c.Now().Human())
}

// Eight processes of one E5000 stream 8 kB bulk requests to their
// partners on another: through one NIU they share its 38 MB/s bus; through
// the Clump's three (3 + 3 + 2 endpoints) the busiest carries 3 of the 8
// streams, so the transfer is up to 8/3 times as fast — the NIC:CPU
// balance behind the paper's Clump/NOW ratios (000:L168).
func TestNetNICSharing(t *testing.T) {
	const cores, chunks = 8, 4
	mbps := map[int]float64{}
	for _, nius := range []int{1, ClumpNICs} {
		c := e5000Nodes(t, 2, nius, cores, 0, 0)
		sys := newSys(t, c, DefaultSpec())
		var eps [2][]*Endpoint
		for n := 0; n < 2; n++ {
			for k := 0; k < cores; k++ {
				eps[n] = append(eps[n], newEP(t, sys, n, uint64(n*cores+k)))
			}
		}
		got := 0
		var last sim.Tick
		for k := 0; k < cores; k++ {
			s, r := eps[0][k], eps[1][k]
			must(t, s.Map(0, r.Name(), r.Tag()))
			must(t, r.SetHandler(1, func(tok *Token, m *Message) {
				got++
				last = tok.Endpoint().Proc().Now()
			}))
			c.Nodes[0].Cores[k].Spawn("sender", func(p *cpu.Proc) {
				must(t, s.Attach(p))
				src := c.Nodes[0].Alloc(MaxBulk)
				for i := 0; i < chunks; i++ {
					must(t, s.RequestBulk(0, 1, src, MaxBulk))
				}
				for len(sys.chans[[2]Name{s.Name(), r.Name()}].free[qRequest]) < sys.spec.Net.Blocks {
					s.Poll()
				}
			})
			c.Nodes[1].Cores[k].Spawn("receiver", func(p *cpu.Proc) {
				must(t, r.Attach(p))
				for got < cores*chunks {
					r.Poll()
				}
			})
		}
		run(t, c)
		mbps[nius] = float64(cores*chunks*MaxBulk) / (float64(last) / float64(sim.US))
		t.Logf("%d NIUs: %.1f MB/s", nius, mbps[nius])
	}
	if r := mbps[ClumpNICs] / mbps[1]; mbps[1] > 38 || r < 0.85*8/3 || r > 8.0/3 {
		t.Errorf("one NIU %.1f MB/s, three %.1f MB/s (%.2f×): want at most the bus, and up to 8/3 times that", mbps[1], mbps[ClumpNICs], r)
	}
}

// Set-up errors of the network side: more endpoints on an NIU than its
// RDMA command queue holds staging blocks for, refused before the
// endpoint takes memory; a spec out of range.
func TestNetSetupErrors(t *testing.T) {
	c := e5000Net(t, 1, 0, 0)
	sys := newSys(t, c, Spec{Slots: 4, Blocks: 1, BackoffMin: 4, BackoffMax: 64, Net: NetSpec{Staging: 16}})
	for i := 0; i < 4; i++ {
		newEP(t, sys, 0, uint64(i))
	}
	before := c.Nodes[0].Alloc(0)
	if _, err := sys.NewEndpoint(0, 9); err == nil || !strings.Contains(err.Error(), "5 endpoints × 16 staging blocks exceed the 64 RDMA commands") {
		t.Errorf("a fifth endpoint: %v", err)
	}
	if after := c.Nodes[0].Alloc(0); after != before {
		t.Errorf("the refused endpoint took %d bytes", after-before)
	}
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Slots: 4, Blocks: 1, BackoffMin: 4, BackoffMax: 64, Net: NetSpec{Blocks: 2000}}, "2000 bulk blocks per channel"},
		{Spec{Slots: 4, Blocks: 1, BackoffMin: 4, BackoffMax: 64, Net: NetSpec{Staging: 17}}, "17 staging blocks"},
		{Spec{Slots: 4, Blocks: 1, BackoffMin: 4, BackoffMax: 64, Poll: Policy{Every: 300}}, "every 300 polls"},
		{Spec{Slots: 4, Blocks: 1, BackoffMin: 4, BackoffMax: 64, Poll: Policy{Protocols: 7}}, "protocols 7"},
	} {
		if _, err := New(c, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
}
