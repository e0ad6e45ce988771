package verbs

// Conn names a connection a process posts on: the peer node and the core
// whose queue pairs carry it.
type Conn struct{ Node, Core int }

// Posted is a work request a Tracker holds until its completion is taken.
type Posted struct {
	WR     WR
	Conn   Conn
	Bounce uint64 // a buffer the request reads from, free again when it is done (0: none)
	Done   bool
	Err    error
}

// Tracker keeps a process's posted work requests per connection until
// their completions are taken, which a connection's come in posting
// order: what a message layer needs to reuse its bounce buffers and to know
// when its puts have landed without blocking on any one of them.
type Tracker struct {
	fifo    map[Conn]*[]*Posted
	conns   []Conn // in order of first use, so reaping is deterministic
	pending int
}

// Track records wr, posted on connection k.
func (t *Tracker) Track(k Conn, wr WR, bounce uint64) *Posted {
	if t.fifo == nil {
		t.fifo = map[Conn]*[]*Posted{}
	}
	p := &Posted{WR: wr, Conn: k, Bounce: bounce}
	f := t.fifo[k]
	if f == nil {
		f = new([]*Posted)
		t.fifo[k] = f
		t.conns = append(t.conns, k)
	}
	*f = append(*f, p)
	t.pending++
	return p
}

// Pending is the work requests whose completion has not been taken.
func (t *Tracker) Pending() int { return t.pending }

// Reap takes the completions that have arrived of connection k's oldest
// work requests, testing each on on(core)'s queue pairs; it calls taken for
// each (after marking it done) and reports whether any was taken.
func (t *Tracker) Reap(k Conn, on func(core int) *Ctx, taken func(*Posted)) bool {
	f := t.fifo[k]
	if f == nil {
		return false
	}
	worked := false
	for len(*f) > 0 {
		p := (*f)[0]
		_, done, err := on(k.Core).Test(p.WR)
		if !done {
			break
		}
		p.Done, p.Err = true, err
		*f = (*f)[1:]
		t.pending--
		worked = true
		if taken != nil {
			taken(p)
		}
	}
	return worked
}

// ReapAll is Reap on every connection with work requests, in order of
// first use.
func (t *Tracker) ReapAll(on func(core int) *Ctx, taken func(*Posted)) bool {
	worked := false
	for _, k := range t.conns {
		if len(*t.fifo[k]) > 0 && t.Reap(k, on, taken) {
			worked = true
		}
	}
	return worked
}
