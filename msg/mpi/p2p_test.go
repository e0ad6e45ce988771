package mpi

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

// Non-overtaking: rank 0 sends the same sequence to every other rank, of
// three tags and of eager, inline, zero-byte and rendezvous sizes; the
// receivers first take the messages of tags 6 and 7 (so that the earlier
// ones of tag 5 wait as unexpected), then those of tag 5, which must come
// in the order they were sent, rendezvous ones included. A second round
// has the receives posted first, with AnyTag: they complete in send order.
func TestMatchingOrder(t *testing.T) {
	type msg struct {
		tag, size int
	}
	seq := []msg{{5, 8}, {5, 20000}, {6, 0}, {5, 40}, {7, 9000}, {5, 100}, {5, 8}}
	for _, f := range fabrics {
		t.Run(f.name, func(t *testing.T) {
			_, _, err := run(t, f, 4, nil, func(c *Comm) {
				if c.Rank() == 0 {
					for round := 0; round < 2; round++ {
						if round == 1 {
							c.Barrier() // the receivers have posted everything
						}
						var qs []*Request
						for dst := 1; dst < c.Size(); dst++ {
							for i, m := range seq {
								b := c.Alloc(m.size)
								c.Write(b, pattern(uint64(100*round+i), m.size))
								qs = append(qs, c.Isend(b, dst, m.tag))
							}
						}
						if _, err := c.Waitall(qs...); err != nil {
							t.Error(err)
						}
					}
					return
				}
				recv := func(src, tag, want int) {
					m := seq[want]
					b := c.Alloc(32 << 10)
					st, err := c.Recv(b, src, tag)
					if err != nil || st.Count != m.size || st.Tag != m.tag || st.Source != 0 {
						t.Errorf("rank %d, receive of tag %d: %+v, %v; want message %d %+v", c.Rank(), tag, st, err, want, m)
						return
					}
					if err := checkPattern(c.Read(b), uint64(want), m.size); err != nil {
						t.Errorf("rank %d: %v", c.Rank(), err)
					}
				}
				c.Compute(20000) // everything arrives unexpected
				recv(0, 6, 2)
				recv(AnySource, 7, 4)
				if n := len(c.r.unexp); n != 5 {
					t.Errorf("rank %d: %d unexpected messages queued, want 5", c.Rank(), n)
				}
				recv(0, 5, 0)
				recv(AnySource, 5, 1)
				recv(0, 5, 3)
				recv(0, AnyTag, 5)
				recv(AnySource, AnyTag, 6)
				// Round two: receives posted before anything arrives.
				var qs []*Request
				var bufs []Buf
				for range seq {
					b := c.Alloc(32 << 10)
					bufs = append(bufs, b)
					qs = append(qs, c.Irecv(b, 0, AnyTag))
				}
				c.Barrier()
				st, err := c.Waitall(qs...)
				if err != nil {
					t.Error(err)
				}
				for i, m := range seq {
					if st[i].Tag != m.tag || st[i].Count != m.size {
						t.Errorf("rank %d round 2 receive %d: %+v, want %+v", c.Rank(), i, st[i], m)
					}
					if err := checkPattern(c.Read(bufs[i]), uint64(100+i), m.size); err != nil {
						t.Errorf("rank %d round 2: %v", c.Rank(), err)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Wildcards: every rank sends rank 0 two messages tagged with its rank;
// rank 0 receives them with AnySource and AnyTag, then with AnySource and a
// given tag, then with a given source and AnyTag. Every message arrives
// once, each source's in order, and the status names its source and tag.
func TestWildcards(t *testing.T) {
	for _, f := range fabrics {
		t.Run(f.name, func(t *testing.T) {
			const n = 5
			_, _, err := run(t, f, n, nil, func(c *Comm) {
				me := c.Rank()
				if me != 0 {
					for round := 0; round < 3; round++ {
						c.Barrier() // rank 0 has received the last round
						for k := 0; k < 2; k++ {
							b := c.Alloc(16 + 5000*k)
							c.Write(b, pattern(uint64(1000*round+10*me+k), b.Len))
							if err := c.Send(b, 0, 100+me); err != nil {
								t.Error(err)
							}
						}
					}
					return
				}
				check := func(round int, st Status, err error, b Buf, next []int) {
					t.Helper()
					if err != nil {
						t.Error(err)
						return
					}
					if st.Tag != 100+st.Source {
						t.Errorf("status %+v: tag is not 100 + source", st)
						return
					}
					k := next[st.Source]
					next[st.Source]++
					if err := checkPattern(c.Read(b), uint64(1000*round+10*st.Source+k), 16+5000*k); err != nil {
						t.Errorf("round %d from %d: %v", round, st.Source, err)
					}
				}
				next := make([]int, n)
				c.Barrier()
				for i := 0; i < 2*(n-1); i++ {
					b := c.Alloc(8192)
					st, err := c.Recv(b, AnySource, AnyTag)
					check(0, st, err, b, next)
				}
				next = make([]int, n)
				c.Barrier()
				for src := n - 1; src >= 1; src-- {
					for k := 0; k < 2; k++ {
						b := c.Alloc(8192)
						st, err := c.Recv(b, AnySource, 100+src)
						if st.Source != src {
							t.Errorf("AnySource with tag %d got source %d", 100+src, st.Source)
						}
						check(1, st, err, b, next)
					}
				}
				next = make([]int, n)
				c.Barrier()
				for src := 1; src < n; src++ {
					for k := 0; k < 2; k++ {
						b := c.Alloc(8192)
						st, err := c.Recv(b, src, AnyTag)
						if st.Source != src {
							t.Errorf("source %d with AnyTag got source %d", src, st.Source)
						}
						check(2, st, err, b, next)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Sizes around every protocol boundary (zero, inline in the packet line,
// eager, the eager limit, rendezvous, chunked), in both directions, with
// each rendezvous mode.
func TestSizes(t *testing.T) {
	sizes := []int{0, 1, 31, 32, 33, 4095, 8192, 8193, 70000}
	for _, f := range fabrics {
		for _, mode := range []Mode{RendezvousCopy, RendezvousPut, RendezvousGet} {
			t.Run(f.name+"/"+mode.String(), func(t *testing.T) {
				res, _, err := run(t, f, 4, func(_ *machine.Spec, c *Config) {
					c.Shm.Params.Rendezvous, c.RDMA.Params.Rendezvous = mode, mode
				}, func(c *Comm) {
					me := c.Rank()
					for phase := 0; phase < 2; phase++ {
						peer := me ^ (1 << phase) // mixed: the network, then shared memory
						for i, n := range sizes {
							id := uint64(1000*phase + 10*i)
							b := c.Alloc(n)
							if me < peer {
								c.Write(b, pattern(id, n))
								if err := c.Send(b, peer, i); err != nil {
									t.Error(err)
								}
								r := c.Alloc(n)
								st, err := c.Recv(r, peer, i)
								if err != nil || st.Count != n {
									t.Errorf("rank %d: echo of %d bytes: %+v %v", me, n, st, err)
								}
								if err := checkPattern(c.Read(r), id, n); err != nil {
									t.Errorf("rank %d echo: %v", me, err)
								}
							} else {
								st, err := c.Recv(b, peer, i)
								if err != nil || st.Count != n {
									t.Errorf("rank %d: %d bytes: %+v %v", me, n, st, err)
								}
								if err := checkPattern(c.Read(b), id, n); err != nil {
									t.Errorf("rank %d: %v", me, err)
								}
								if err := c.Send(b, peer, i); err != nil {
									t.Error(err)
								}
							}
						}
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range res.Stats {
					if strings.HasPrefix(s.Protocol, "rendezvous") && s.Protocol != "rendezvous-"+mode.String() {
						t.Errorf("%+v with mode %v", s, mode)
					}
				}
			})
		}
	}
}

// A 16 MB message (a thousand bulk blocks, hundreds of RDMA chunks) and a
// zero-byte one arrive whole over every transport.
func TestHugeMessage(t *testing.T) {
	const size = 16 << 20
	for _, f := range fabrics {
		t.Run(f.name, func(t *testing.T) {
			src := pattern(7, size)
			_, _, err := run(t, f, 3, fast, func(c *Comm) {
				// mixed: rank 0 on node 0 sends to rank 1 (node 1) and rank 2 (node 0).
				switch c.Rank() {
				case 0:
					b := c.Alloc(size)
					c.Write(b, src)
					z := c.Alloc(0)
					qs := []*Request{c.Isend(b, 1, 1), c.Isend(z, 1, 2), c.Isend(b, 2, 1), c.Isend(z, 2, 2)}
					if _, err := c.Waitall(qs...); err != nil {
						t.Error(err)
					}
				default:
					b := c.Alloc(size)
					st, err := c.Recv(b, 0, 1)
					if err != nil || st.Count != size {
						t.Errorf("rank %d: %+v %v", c.Rank(), st, err)
					}
					if !slices.Equal(c.Read(b), src) {
						t.Errorf("rank %d: the 16 MB message differs", c.Rank())
					}
					st, err = c.Recv(c.Alloc(8), 0, 2)
					if err != nil || st.Count != 0 {
						t.Errorf("rank %d: zero-byte message: %+v %v", c.Rank(), st, err)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Both sides of a pair post a large Isend to each other and an Irecv at
// once, then Waitall: every rendezvous mode completes (no side waits for
// the other to go first). Every rank does it with every other rank.
func TestRendezvousBothWays(t *testing.T) {
	const size = 50000
	for _, f := range fabrics {
		for _, mode := range []Mode{RendezvousCopy, RendezvousPut, RendezvousGet} {
			t.Run(f.name+"/"+mode.String(), func(t *testing.T) {
				_, _, err := run(t, f, 4, func(s *machine.Spec, c *Config) {
					fast(s, c)
					c.Shm.Params.Rendezvous, c.RDMA.Params.Rendezvous = mode, mode
				}, func(c *Comm) {
					me, n := c.Rank(), c.Size()
					var qs []*Request
					bufs := make([]Buf, n)
					for p := 0; p < n; p++ {
						if p == me {
							continue
						}
						s := c.Alloc(size)
						c.Write(s, pattern(uint64(10*me+p), size))
						bufs[p] = c.Alloc(size)
						qs = append(qs, c.Isend(s, p, 3), c.Irecv(bufs[p], p, 3))
					}
					if _, err := c.Waitall(qs...); err != nil {
						t.Error(err)
					}
					for p := 0; p < n; p++ {
						if p != me {
							if err := checkPattern(c.Read(bufs[p]), uint64(10*p+me), size); err != nil {
								t.Errorf("rank %d from %d: %v", me, p, err)
							}
						}
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// A message longer than the receive buffer: MPI_ERR_TRUNCATE in the
// receive's error and status, its first bytes received, the sender
// unaffected, the pair's next message fine.
func TestTruncate(t *testing.T) {
	for _, f := range fabrics {
		for _, mode := range []Mode{RendezvousCopy, RendezvousPut, RendezvousGet} {
			t.Run(f.name+"/"+mode.String(), func(t *testing.T) {
				_, _, err := run(t, f, 2, func(_ *machine.Spec, c *Config) {
					c.Shm.Params.Rendezvous, c.RDMA.Params.Rendezvous = mode, mode
				}, func(c *Comm) {
					cases := []struct{ size, room int }{{100, 50}, {40, 0}, {20000, 10000}, {20000, 0}, {20000, 100}}
					for i, k := range cases {
						if c.Rank() == 0 {
							b := c.Alloc(k.size)
							c.Write(b, pattern(uint64(i), k.size))
							if err := c.Send(b, 1, i); err != nil {
								t.Errorf("sender: %v", err)
							}
							continue
						}
						b := c.Alloc(k.room)
						st, err := c.Recv(b, 0, i)
						if !errors.Is(err, ErrTruncate) || !errors.Is(st.Err, ErrTruncate) {
							t.Errorf("%d bytes into %d: error %v", k.size, k.room, err)
						}
						if st.Count != k.room || st.Source != 0 || st.Tag != i {
							t.Errorf("%d bytes into %d: status %+v", k.size, k.room, st)
						}
						if err := checkPattern(c.Read(b), uint64(i), k.room); k.room >= 8 && err != nil {
							t.Error(err)
						}
					}
					b := c.Alloc(64)
					if c.Rank() == 0 {
						c.Write(b, pattern(99, 64))
						c.Send(b, 1, 0)
					} else if _, err := c.Recv(b, 0, 0); err != nil {
						t.Errorf("after truncations: %v", err)
					} else if err := checkPattern(c.Read(b), 99, 64); err != nil {
						t.Error(err)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// Deadlocks are reported, not hung on: everyone receiving first; a pair
// both sending large messages with blocking sends (an unsafe program);
// a rank that skips a barrier; a message to a rank that has finished.
func TestDeadlock(t *testing.T) {
	cases := []struct {
		name  string
		body  func(c *Comm)
		waits []string
	}{
		{"recv-first", func(c *Comm) {
			c.Recv(c.Alloc(8), 1-c.Rank(), 7)
		}, []string{"rank 0 waits in Recv(source 1, tag 7)", "rank 1 waits in Recv(source 0, tag 7)"}},
		{"unsafe-sends", func(c *Comm) {
			b := c.Alloc(100000)
			c.Send(b, 1-c.Rank(), 3)
			c.Recv(b, 1-c.Rank(), 3)
		}, []string{"rank 0 waits in Send(dest 1, tag 3)", "rank 1 waits in Send(dest 0, tag 3)"}},
		{"skipped-barrier", func(c *Comm) {
			if c.Rank() == 1 {
				c.Barrier()
			}
		}, []string{"rank 1 waits in Barrier: Sendrecv(Irecv(source 0, tag 1))", "rank 0 has finished with 1 packet(s) sent to it not received"}},
		{"waitall", func(c *Comm) {
			if c.Rank() == 0 {
				q1 := c.Irecv(c.Alloc(8), AnySource, AnyTag)
				q2 := c.Irecv(c.Alloc(8), 1, 4)
				c.Waitall(q1, q2)
			}
		}, []string{"rank 0 waits in Waitall(Irecv(source ANY, tag ANY), Irecv(source 1, tag 4))"}},
	}
	for _, f := range fabrics {
		for _, k := range cases {
			t.Run(f.name+"/"+k.name, func(t *testing.T) {
				_, c, err := run(t, f, 2, nil, k.body)
				var d *DeadlockError
				if !errors.As(err, &d) || !errors.Is(err, ErrDeadlock) {
					t.Fatalf("err %v, want a deadlock", err)
				}
				for _, w := range k.waits {
					if !slices.Contains(d.Waits, w) {
						t.Errorf("report lacks %q:\n%v", w, err)
					}
				}
				if c.Now() > 10*sim.MS {
					t.Errorf("detected only at %v", c.Now().Human())
				}
			})
		}
	}
	// A message to a rank that finished without receiving it.
	_, _, err := run(t, fabrics[0], 3, nil, func(c *Comm) {
		switch c.Rank() {
		case 1:
			c.Send(c.Alloc(8), 2, 0)
			c.Send(c.Alloc(100000), 2, 0) // a rendezvous never answered
		case 0:
			c.Recv(c.Alloc(8), 1, 5)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "rank 2 has finished with 2 packet(s) sent to it not received") ||
		!strings.Contains(err.Error(), "rank 1 waits in Send(dest 2, tag 0)") {
		t.Errorf("finished receiver: %v", err)
	}
}

// Bad arguments are errors of the call, not crashes.
func TestBadArguments(t *testing.T) {
	_, _, err := run(t, fabrics[0], 2, nil, func(c *Comm) {
		b := c.Alloc(8)
		for _, e := range []error{c.Send(b, 2, 0), c.Send(b, 1, -1), c.Send(b, AnySource, 0)} {
			if e == nil {
				t.Error("a bad send was accepted")
			}
		}
		if _, e := c.Recv(b, 5, 0); e == nil {
			t.Error("a receive from rank 5 of 2 was accepted")
		}
		if e := c.Send(b, ProcNull, 0); e != nil {
			t.Error(e)
		}
		if st, e := c.Recv(b, ProcNull, 0); e != nil || st.Source != ProcNull || st.Count != 0 {
			t.Errorf("receive from PROC_NULL: %+v %v", st, e)
		}
		if e := c.Bcast(b, 3); e == nil {
			t.Error("a broadcast from root 3 of 2 was accepted")
		}
		if e := c.Allreduce(c.Alloc(12), c.Alloc(12), SumUint64); e == nil {
			t.Error("an allreduce of 1.5 words was accepted")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{{Nodes: 3}, {PerNode: 5}, {Ranks: 2, Place: func(int) Place { return Place{} }}} {
		c, _ := machine.New(sim.NewEngine(1), machine.DefaultSpec())
		if _, err := Run(c, cfg, func(*Comm) {}); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	c, _ := machine.New(sim.NewEngine(1), machine.DefaultSpec())
	cfg := Config{}
	cfg.Shm.Params.EagerLimit = 1 << 20
	if _, err := Run(c, cfg, func(*Comm) {}); err == nil {
		t.Error("an eager limit above the bulk block accepted")
	}
}

// The same program twice gives the same times, statistics and data.
func TestDeterministic(t *testing.T) {
	once := func() string {
		var out strings.Builder
		res, c, err := run(t, fabrics[2], 6, nil, func(c *Comm) {
			me, n := c.Rank(), c.Size()
			var qs []*Request
			for i := 0; i < 3; i++ {
				for p := 0; p < n; p++ {
					if p != me {
						b := c.Alloc(100 + 4000*i*(p%2))
						c.Write(b, pattern(uint64(me*100+p*10+i), b.Len))
						qs = append(qs, c.Isend(b, p, i), c.Irecv(c.Alloc(20000), AnySource, AnyTag))
					}
				}
			}
			st, err := c.Waitall(qs...)
			if err != nil {
				t.Error(err)
			}
			sum := c.Alloc(8)
			c.Allreduce(c.Alloc(8), sum, SumUint64)
			fmt.Fprintf(&out, "%d:%v@%v ", me, st[1], c.Now())
		})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%+v %v %d", res, c.Now(), c.Nodes[0].Mem.Checksum())
		return out.String()
	}
	a, b := once(), once()
	if a != b {
		t.Errorf("two runs differ:\n%s\n%s", a, b)
	}
}

// Thresholds are parameters: with no eager limit every non-empty message
// takes a rendezvous; with a high one a 20 kB message goes eagerly.
func TestThresholds(t *testing.T) {
	for _, k := range []struct {
		eager int
		proto string
	}{{-1, "rendezvous-put"}, {32 << 10, "eager"}} {
		res, _, err := run(t, fabrics[1], 2, func(_ *machine.Spec, c *Config) {
			c.RDMA.Params.EagerLimit = k.eager
		}, func(c *Comm) {
			for _, n := range []int{1, 20000} {
				b := c.Alloc(n)
				if c.Rank() == 0 {
					c.Write(b, pattern(uint64(n), n))
					c.Send(b, 1, 0)
				} else if _, err := c.Recv(b, 0, 0); err != nil {
					t.Error(err)
				} else if err := checkPattern(c.Read(b), uint64(n), n); err != nil {
					t.Error(err)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Stats) != 1 || res.Stats[0].Protocol != k.proto || res.Stats[0].Messages != 2 {
			t.Errorf("eager limit %d: %+v", k.eager, res.Stats)
		}
	}
	c, _ := machine.New(sim.NewEngine(1), machine.DefaultSpec())
	cfg := Config{}
	cfg.RDMA.Params = Params{EagerLimit: -1, Rendezvous: RendezvousCopy}
	if _, err := Run(c, cfg, func(*Comm) {}); err == nil {
		t.Error("a copy-mode rendezvous through empty packets accepted")
	}
}

// Probe and Iprobe see an arrived message (its source, tag and size)
// without taking it; the receive that follows gets it.
func TestProbe(t *testing.T) {
	for _, f := range fabrics {
		t.Run(f.name, func(t *testing.T) {
			_, _, err := run(t, f, 2, nil, func(c *Comm) {
				if c.Rank() == 0 {
					for _, n := range []int{24, 30000} {
						b := c.Alloc(n)
						c.Write(b, pattern(uint64(n), n))
						c.Send(b, 1, n%7)
					}
					return
				}
				if ok, _, _ := c.Iprobe(0, 5); ok {
					t.Error("Iprobe found a message of a tag never sent")
				}
				for _, n := range []int{24, 30000} {
					st, err := c.Probe(AnySource, AnyTag)
					if err != nil || st.Source != 0 || st.Tag != n%7 || st.Count != n {
						t.Errorf("probe: %+v %v", st, err)
					}
					ok, st2, _ := c.Iprobe(0, n%7)
					if !ok || st2 != st {
						t.Errorf("iprobe: %v %+v", ok, st2)
					}
					b := c.Alloc(st.Count)
					if _, err := c.Recv(b, st.Source, st.Tag); err != nil {
						t.Error(err)
					}
					if err := checkPattern(c.Read(b), uint64(n), n); err != nil {
						t.Error(err)
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// every polls transport 1 (the network) in one pass of k and counts what
// its polls deliver.
type every struct {
	k, pass int
	got     *int
}

func (e *every) Poll(t int) bool {
	if t == 0 {
		e.pass++
		return true
	}
	return e.pass%e.k == 0
}

func (e *every) Polled(t, n int) {
	if t == 1 {
		*e.got += n
	}
}

// The polling policy decides which transports a pass polls (seed 000's
// fractional network polling): polling the network one pass in eight
// still delivers everything, and the policy hears what each poll brought.
func TestPollPolicy(t *testing.T) {
	for _, k := range []int{1, 8} {
		got := 0
		_, _, err := run(t, fabrics[2], 4, func(_ *machine.Spec, c *Config) {
			c.PollPolicy = func(int) PollPolicy { return &every{k: k, got: &got} }
		}, func(c *Comm) {
			b := c.Alloc(8)
			for i := 0; i < 20; i++ {
				c.Allreduce(b, c.Alloc(8), SumUint64)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			t.Errorf("1 in %d: the policy heard of no network packet", k)
		}
	}
}
