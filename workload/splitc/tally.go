package splitc

import (
	"fmt"
	"sort"
	"sync"

	"github.com/aaemu/aaemu/sim"
)

// TallyResult is what a tally run counted.
type TallyResult struct {
	Counts []Counts // by rank
	Syncs  int      // Sync calls of rank 0
}

// Tally runs prog on p ranks without a machine: each rank a goroutine
// with its own memory, nothing costed, every store counted and queued at
// its destination, whose handlers run at the next Sync (in the order of
// sending rank, then of sending), each counting its reply. A program whose stores do not depend on
// when others' stores arrive sends here what it sends on the machine;
// Sync's barrier messages are not counted (their number on the machine
// depends on timing: a round repeats while stores are in flight).
func Tally(p int, prog Program) (*TallyResult, error) {
	if p < 1 || p > 256 {
		return nil, fmt.Errorf("splitc: %d ranks, want 1..256", p)
	}
	t := &tally{ranks: make([]*tallyRank, p)}
	t.cond = sync.NewCond(&t.mu)
	for i := range t.ranks {
		t.ranks[i] = &tallyRank{id: i, t: t, counts: newCounts(p), mem: make([]byte, 64)}
	}
	var wg sync.WaitGroup
	for _, r := range t.ranks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := prog(r)
			t.mu.Lock()
			if err != nil && t.err == nil {
				t.err = fmt.Errorf("splitc: rank %d: %w", r.id, err)
			}
			t.exited++
			t.cond.Broadcast()
			t.mu.Unlock()
		}()
	}
	wg.Wait()
	if t.err != nil {
		return nil, t.err
	}
	res := &TallyResult{Syncs: t.ranks[0].syncs}
	for _, r := range t.ranks {
		res.Counts = append(res.Counts, r.counts)
	}
	return res, nil
}

type tally struct {
	ranks  []*tallyRank
	mu     sync.Mutex
	cond   *sync.Cond
	err    error
	exited int // ranks whose program returned
	// the barrier: arrivals of the current generation and its number
	arrived int
	gen     uint64
	acc     uint64
	contrib int
	result  uint64
}

type tallyMsg struct {
	from, seq int
	h         int
	args      []uint32
	data      []byte
}

type tallyRank struct {
	id       int
	t        *tally
	handlers [Handlers]Handler
	counts   Counts
	mem      []byte
	inbox    []tallyMsg // guarded by t.mu
	seq      int
	syncs    int
	scratch  uint64
}

func (r *tallyRank) ID() int    { return r.id }
func (r *tallyRank) Procs() int { return len(r.t.ranks) }

func (r *tallyRank) Handle(i int, h Handler) error {
	if i < 1 || i >= Handlers {
		return fmt.Errorf("splitc: handler %d, want 1..%d", i, Handlers-1)
	}
	r.handlers[i] = h
	return nil
}

func (r *tallyRank) Store(dst, h int, args ...uint32) error {
	return r.store(dst, h, 0, 0, args)
}

func (r *tallyRank) StoreBulk(dst, h int, src uint64, n int, args ...uint32) error {
	if n < 1 {
		return fmt.Errorf("splitc: a bulk store of %d bytes, want 1..%d", n, MaxBulk)
	}
	return r.store(dst, h, src, n, args)
}

func (r *tallyRank) store(dst, h int, src uint64, n int, args []uint32) error {
	if err := checkStore(len(r.t.ranks), dst, h, n, args, r.handlers[:]); err != nil {
		return err
	}
	m := tallyMsg{from: r.id, seq: r.seq, h: h, args: append([]uint32(nil), args...)}
	r.seq++
	if n > 0 {
		m.data = make([]byte, n)
		r.Read(src, m.data)
		r.counts.Bulk[dst]++
		r.counts.BulkBytes[dst] += uint64(n)
	} else {
		r.counts.Short[dst]++
	}
	d := r.t.ranks[dst]
	r.t.mu.Lock()
	d.inbox = append(d.inbox, m)
	r.t.mu.Unlock()
	return nil
}

// barrier waits for every rank (or a failure); the last to arrive runs
// last(), under the lock.
func (r *tallyRank) barrier(last func()) error {
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return errStopped
	}
	g := t.gen
	t.arrived++
	if t.arrived == len(t.ranks) {
		t.arrived = 0
		t.gen++
		if last != nil {
			last()
		}
		t.cond.Broadcast()
		return nil
	}
	for t.gen == g && t.err == nil && t.exited == 0 {
		t.cond.Wait()
	}
	if t.gen == g {
		if t.err == nil {
			t.err = fmt.Errorf("splitc: rank %d waits at a Sync some rank returned without", r.id)
		}
		return errStopped
	}
	return nil
}

func (r *tallyRank) Sync(op Op, v func() uint64) (uint64, error) {
	r.syncs++
	if err := r.barrier(nil); err != nil { // every store of the phase is queued
		return 0, err
	}
	r.t.mu.Lock()
	in := r.inbox
	r.inbox = nil
	r.t.mu.Unlock()
	sort.SliceStable(in, func(i, j int) bool {
		if in[i].from != in[j].from {
			return in[i].from < in[j].from
		}
		return in[i].seq < in[j].seq
	})
	for _, m := range in {
		msg := Msg{From: m.from, Args: m.args}
		if m.data != nil {
			if r.scratch == 0 {
				r.scratch = r.Alloc(MaxBulk)
			}
			r.Write(r.scratch, m.data)
			msg.Data, msg.Len = r.scratch, len(m.data)
		}
		r.handlers[m.h](&msg)
		r.counts.Reply[m.from]++
	}
	val := v()
	t := r.t
	t.mu.Lock()
	if t.contrib == 0 {
		t.acc = val
	} else {
		t.acc = op.apply(t.acc, val)
	}
	t.contrib++
	t.mu.Unlock()
	// The last to arrive publishes; nobody contributes to the next Sync's
	// before every rank has passed its first barrier, after reading this.
	if err := r.barrier(func() { t.result, t.contrib = t.acc, 0 }); err != nil {
		return 0, err
	}
	t.mu.Lock()
	res := t.result
	t.mu.Unlock()
	return res, nil
}

func (r *tallyRank) Alloc(n uint64) uint64 {
	a := uint64(len(r.mem)+63) &^ 63
	mem := make([]byte, a+n) // exactly: a program allocates a few large arrays
	copy(mem, r.mem)
	r.mem = mem
	return a
}

func (r *tallyRank) Read(addr uint64, b []byte)  { copy(b, r.mem[addr:addr+uint64(len(b))]) }
func (r *tallyRank) Write(addr uint64, b []byte) { copy(r.mem[addr:addr+uint64(len(b))], b) }
func (r *tallyRank) Copy(dst, src, n uint64)     { copy(r.mem[dst:dst+n], r.mem[src:src+n]) }
func (r *tallyRank) Compute(int)                 {}
func (r *tallyRank) Now() sim.Tick               { return 0 }
func (r *tallyRank) Poke(addr uint64, b []byte)  { r.Write(addr, b) }
func (r *tallyRank) Peek(addr uint64, b []byte)  { r.Read(addr, b) }
