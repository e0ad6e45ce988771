package workload

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// SortConfig is the fault-tolerant parallel sort (the paper's §5.2.4): a
// sample sort in the style of the Coral benchmark that moves the data with
// gets instead of messages. Every process sorts its keys, the processes
// agree on bucket boundaries from regular samples, each publishes where its
// bucket for every other process lies, and in the exchange every process
// gets its bucket from every other process; then it merges what it got.
// The exchange is the communication the paper times. For fault tolerance
// the owner of the data keeps a log of what each remote get read, so that a
// restarted process can replay exactly what it got:
//
//   - No-FT logs nothing (the baseline);
//   - AA-Poll maps the keys R=1, RL=1, RLD=1: the owner's IOMMU logs every
//     get with its data. The data logged rather than only the address,
//     because the owner may reuse its input buffer once the sort is done;
//   - AM turns each get of a chunk into a request message to the owner,
//     whose process copies the chunk into its log and replies with it as a
//     message (the log entry is the reply's send buffer);
//   - RMA has the source put what it read back into a log at the owner (a
//     slot claimed with fetch-and-add, then the header and the data).
//
// Gets between processes of one node are local copies in every scheme: a
// node's processes fail together, and they recompute their own input.
type SortConfig struct {
	Scheme Scheme // No-FT, AA-Poll, AM or RMA
	Keys   int    // 64-bit keys per process
	Procs  int    // processes per node
	Seed   uint64
	// CompareCycles is what one comparison of the local sort or merge costs
	// (default 4 cycles).
	CompareCycles int
	// ChunkBytes is the largest piece a bucket moves in (default 4096
	// bytes): a get, or an AM request's reply.
	ChunkBytes int
	// Window is how many pieces a process has in flight at once, gets or
	// AM requests (default 4). A NIC bounds a connection's outstanding
	// reads anyway, and an all-to-all that asks for everything at once
	// queues responses past the retransmission timeout.
	Window int
}

// SortResult is what a run measured.
type SortResult struct {
	Scheme     Scheme `json:"scheme"`
	Nodes      int    `json:"nodes"`
	Procs      int    `json:"procs_per_node"`
	Keys       int    `json:"keys"` // in total
	CommTimePS uint64 `json:"comm_time_ps"`
	SimTimePS  uint64 `json:"sim_time_ps"`
	// SentBytes are the bytes each node's NIC put on its wire during the
	// exchange (frames as sent, with Ethernet framing); WireBytes is their
	// sum.
	SentBytes []uint64 `json:"nic_sent_bytes"`
	WireBytes uint64   `json:"wire_bytes"`
	// RemoteBytes is the key data got from other nodes; LogBytes the data
	// the logs hold: the same unless No-FT, or more when the network made a
	// read again (a retransmitted request is logged again).
	RemoteBytes uint64 `json:"remote_bytes"`
	LogBytes    uint64 `json:"log_bytes"`
	Verified    bool   `json:"verified"`
	Problem     string `json:"problem,omitempty"`
}

const (
	sortIUID = 6
	sortHdr  = 40 // AM: a message's and a log entry's header
	// sortBarrierBytes: the scratch words barrier puts go from, 64 per epoch.
	sortBarrierBytes = 3 * 64 * 8
	rmaHdr           = 16  // RMA: a log entry's header (address, length)
	sortReqSlots     = 256 // AM: request messages a process cycles through
	sortAMRequest    = 1
	sortAMReply      = 2
)

// sortProc is one process of the sort, with its memory on its node.
type sortProc struct {
	rank, node, core int
	in               uint64   // its keys, sorted in place
	meta             uint64   // bucket (offset, count) per rank, samples, barrier flags
	gather           uint64   // the samples got from every process
	out              uint64   // the buckets got, one run per rank
	merged           uint64   // the result
	scratch          uint64   // a 16-byte slot per rank, barrier words, AM requests
	recv             uint64   // AM: receive buffers
	rlog, rnext      uint64   // RMA: the log sources put into, and its next free byte
	recvOff          []uint64 // where the bucket from each rank landed in out (bytes)
	recvLen          []uint64
	count            int // keys after the exchange
	t0, t1           sim.Tick
}

// sortLogEntry is one logged read: the owner's address and the data.
type sortLogEntry struct {
	addr uint64
	data []byte
}

type sortRun struct {
	cfg   SortConfig
	c     *aa.System
	procs []*sortProc
	// Every NIC's bytes sent when the exchange began and ended: the
	// exchange's bytes, which its energy is computed over.
	sent0, sent1 []uint64
	outCap       int       // keys
	aaLogs       []*aa.Log // AA: by node
	amLog        []uint64  // AM: by node, the log area and its next-free counter
	amNext       []uint64
	amCap        uint64
	end          sim.Tick
	problem      string
	opProgress   // the local sort, the exchange and the merge of every process
}

// check bounds processes and keys for a machine of nodes × cores; it names
// the scenario key (workload.sort.*) at fault.
func (cfg SortConfig) Check(nodes, cores int) (key string, err error) {
	if cfg.Procs < 1 || cfg.Procs > cores {
		return "procs_per_node", fmt.Errorf("sort: %d processes per node, the nodes have %d cores", cfg.Procs, cores)
	}
	if p := nodes * cfg.Procs; cfg.Keys < p || cfg.Keys > 1<<20 {
		return "keys", fmt.Errorf("sort: %d keys per process, want %d (one per process) to %d", cfg.Keys, p, 1<<20)
	}
	return "", nil
}

// SetupSort builds the sort on the cluster (2+ nodes) and spawns its
// processes; run the cluster, then call Result.
func SetupSort(c *aa.System, cfg SortConfig) (*sortRun, error) {
	switch cfg.Scheme {
	case NoFT, AAPoll, AM, RMA:
	default:
		return nil, fmt.Errorf("sort: scheme %s, want No-FT, AA-Poll, AM or RMA", cfg.Scheme)
	}
	// The exchange's rate reads every node's wire counters when the first
	// process starts it and the last ends it: Go state of all nodes at
	// once, so the nodes run on one goroutine.
	c.Cluster.Serial("the sort reads every node's wire counters at once")
	if cfg.Scheme == AM {
		if err := c.RequirePerPeerReceive("sort scheme " + string(cfg.Scheme)); err != nil {
			return nil, err
		}
	}
	if _, err := cfg.Check(len(c.Nodes), c.Spec.Cores); err != nil {
		return nil, err
	}
	p := len(c.Nodes) * cfg.Procs
	if cfg.CompareCycles == 0 {
		cfg.CompareCycles = 4
	}
	if cfg.ChunkBytes == 0 {
		cfg.ChunkBytes = 4096
	}
	if cfg.Window == 0 {
		cfg.Window = 4
	}
	if cfg.Window < 1 || cfg.Window > 64 {
		return nil, fmt.Errorf("sort: a window of %d chunks, want 1 to 64", cfg.Window)
	}
	if cfg.ChunkBytes < 64 || cfg.ChunkBytes%8 != 0 || cfg.ChunkBytes > 1<<20 {
		return nil, fmt.Errorf("sort: chunks of %d bytes, want a multiple of 8 from 64 to 1 MB", cfg.ChunkBytes)
	}
	// Regular sampling bounds a process's share below twice the average
	// for distinct keys; 3× leaves room for the rare duplicate.
	s := &sortRun{cfg: cfg, c: c, outCap: 3*cfg.Keys + p}
	r := sim.NewRand(cfg.Seed, "sort.keys")
	rw := iommu.Perm{Bits: pte.R | pte.W}
	reg := func(n *aa.Node, size uint64, perm iommu.Perm) (uint64, error) {
		a := n.Alloc(size)
		return a, n.Register(a, size, perm)
	}
	keysPerm := rw
	if cfg.Scheme == AAPoll {
		keysPerm = iommu.Perm{Bits: pte.R | pte.W | pte.RL | pte.RLD | pte.E, IUID: sortIUID}
	}
	var err error
	for rank := 0; rank < p; rank++ {
		sp := &sortProc{rank: rank, node: rank / cfg.Procs, core: rank % cfg.Procs,
			recvOff: make([]uint64, p), recvLen: make([]uint64, p)}
		n := c.Nodes[sp.node]
		if sp.in, err = reg(n, uint64(cfg.Keys*8), keysPerm); err != nil {
			return nil, err
		}
		for k := 0; k < cfg.Keys; k++ {
			n.Mem.Store64(sp.in+uint64(k)*8, r.Uint64())
		}
		if sp.meta, err = reg(n, uint64(p*16+p*8+64*8), rw); err != nil {
			return nil, err
		}
		if sp.gather, err = reg(n, uint64(p*p*8), rw); err != nil {
			return nil, err
		}
		if sp.out, err = reg(n, uint64(s.outCap*8), rw); err != nil {
			return nil, err
		}
		sp.merged = n.Alloc(uint64(s.outCap * 8))
		if sp.scratch, err = reg(n, uint64(p*16+sortBarrierBytes+sortReqSlots*16), rw); err != nil {
			return nil, err
		}
		switch cfg.Scheme {
		case AM:
			if sp.recv, err = reg(n, uint64(len(c.Nodes)*s.recvBufs()*(cfg.ChunkBytes+sortHdr)), rw); err != nil {
				return nil, err
			}
		case RMA:
			if sp.rlog, err = reg(n, s.rlogCap(), rw); err != nil {
				return nil, err
			}
			if sp.rnext, err = reg(n, 8, rw); err != nil {
				return nil, err
			}
		}
		s.procs = append(s.procs, sp)
		s.total += 3
	}
	for _, n := range c.Nodes {
		switch cfg.Scheme {
		case AAPoll:
			// The log is the store a restarted process replays from: the
			// consumer only notes each record (its header), and the ring
			// holds every record of the exchange without wrapping: the
			// node's keys with a header per MRRS-sized read and the reads
			// split at bucket edges and page boundaries, four times over
			// for reads made again (a response queued past the
			// retransmission timeout makes the requester ask again).
			size := uint64(4*(cfg.Procs*cfg.Keys*8*5/4+cfg.Procs*p*4*record.Size(8)) + 4096)
			l, err := n.CreateLog(sortIUID, size&^7, iommu.Poll, s.logged)
			if err != nil {
				return nil, err
			}
			l.KeepData()
			s.aaLogs = append(s.aaLogs, l)
		case AM:
			// Every chunk of every bucket a node's processes own, with its
			// header: at most a chunk more per bucket than the data.
			chunks := cfg.Keys*8/cfg.ChunkBytes + p + 1 // per owner
			s.amCap = uint64(cfg.Procs * (cfg.Keys*8 + chunks*sortHdr))
			a, err := reg(n, s.amCap, rw)
			if err != nil {
				return nil, err
			}
			next, err := reg(n, 8, rw)
			if err != nil {
				return nil, err
			}
			s.amLog, s.amNext = append(s.amLog, a), append(s.amNext, next)
		}
	}
	for _, sp := range s.procs {
		sp := sp
		c.Nodes[sp.node].Spawn(sp.core, fmt.Sprintf("sort%d", sp.core), func(x *aa.Ctx) { s.run(x, sp) })
	}
	return s, nil
}

// logged is a node's AA handler. The log is the store a restarted process
// replays from: the consumer reads each record's header and the handler
// has nothing to do (a real one might copy records to stable storage).
func (s *sortRun) logged(*aa.Ctx, aa.Record) {}

func (s *sortRun) fail(format string, a ...any) {
	if s.problem == "" {
		s.problem = fmt.Sprintf(format, a...)
	}
}

// Meta layout of a process: (offset, count) of its bucket for every rank,
// then its P−1 samples, then its barrier flags.
func (s *sortRun) bucketAddr(sp *sortProc, rank int) uint64 { return sp.meta + uint64(rank)*16 }
func (s *sortRun) sampleAddr(sp *sortProc) uint64           { return sp.meta + uint64(len(s.procs))*16 }
func (s *sortRun) flagAddr(sp *sortProc, round int) uint64 {
	return sp.meta + uint64(len(s.procs))*24 + uint64(round)*8
}

// compareCost is the cycles of n·⌈log2 m⌉ comparisons.
func (s *sortRun) compareCost(n, m int) int {
	return s.cfg.CompareCycles * n * max(bits.Len(uint(m-1)), 1)
}

// run is one process of the sort.
func (s *sortRun) run(x *aa.Ctx, sp *sortProc) {
	p := len(s.procs)
	k := s.cfg.Keys
	// Local sort.
	x.P.Op("sort.local")
	s.start()
	keys := readKeys(x, sp.in, k)
	slices.Sort(keys)
	x.P.Compute(s.compareCost(k, k))
	x.P.Write(sp.in, putKeys(keys))
	// Regular samples, published for every process.
	samples := make([]uint64, p-1)
	for i := range samples {
		samples[i] = keys[(i+1)*k/p]
	}
	x.P.Write(s.sampleAddr(sp), putKeys(samples))
	s.barrier(x, sp, 1)
	// Bucket boundaries: every process gets every sample and picks the
	// same splitters.
	x.P.Op("sort.samples")
	var wrs []verbs.WR
	for _, q := range s.procs {
		dst := sp.gather + uint64(q.rank*(p-1))*8
		switch {
		case q == sp:
			x.P.Write(dst, putKeys(samples))
		case q.node == sp.node:
			b := make([]byte, (p-1)*8)
			x.P.Read(s.sampleAddr(q), b)
			x.P.Write(dst, b)
		default:
			wrs = append(wrs, x.Get(q.node, dst, s.sampleAddr(q), (p-1)*8))
		}
	}
	s.wait(x, wrs)
	all := make([]byte, p*(p-1)*8)
	x.P.Read(sp.gather, all)
	pool := make([]uint64, p*(p-1))
	for i := range pool {
		pool[i] = le64(all[i*8:])
	}
	slices.Sort(pool)
	x.P.Compute(s.compareCost(len(pool), len(pool)))
	splitters := make([]uint64, p-1)
	for i := range splitters {
		splitters[i] = pool[(i+1)*(p-1)+p/2-1]
	}
	// Bucket j: the keys from splitter j−1 (included) to splitter j.
	meta := make([]uint64, 0, 2*p)
	lo := 0
	for j := 0; j < p; j++ {
		hi := k
		if j < p-1 {
			hi, _ = slices.BinarySearch(keys, splitters[j])
		}
		hi = max(hi, lo)
		meta = append(meta, uint64(lo*8), uint64(hi-lo))
		lo = hi
	}
	x.P.Compute(s.compareCost(p, k))
	x.P.Write(sp.meta, putKeys(meta))
	if s.cfg.Scheme == AM {
		s.postRecvs(x, sp)
	}
	s.barrier(x, sp, 2)
	// The exchange.
	x.P.Op("sort.exchange")
	s.start()
	sp.t0 = x.Now()
	if s.sent0 == nil {
		s.sent0 = s.sentBytes() // the first process to start the exchange
	}
	if s.cfg.Scheme == AM {
		s.exchangeAM(x, sp)
	} else {
		s.exchange(x, sp)
	}
	sp.t1 = x.Now()
	s.sent1 = s.sentBytes() // the last process to finish it overwrites
	// Merge the runs.
	x.P.Op("sort.merge")
	s.start()
	total := 0
	for _, l := range sp.recvLen {
		total += int(l / 8)
	}
	if total > s.outCap {
		s.fail("rank %d received %d keys, more than the %d it has room for", sp.rank, total, s.outCap)
		return
	}
	res := readKeys(x, sp.out, total)
	slices.Sort(res)
	x.P.Compute(s.compareCost(total, p))
	x.P.Write(sp.merged, putKeys(res))
	sp.count = total
	s.end = max(s.end, x.Now())
}

// readKeys reads n 64-bit keys at addr through the process's core.
func readKeys(x *aa.Ctx, addr uint64, n int) []uint64 {
	b := make([]byte, n*8)
	x.P.Read(addr, b)
	ks := make([]uint64, n)
	for i := range ks {
		ks[i] = le64(b[i*8:])
	}
	return ks
}

func putKeys(ks []uint64) []byte {
	b := make([]byte, len(ks)*8)
	for i, v := range ks {
		putLE64(b[i*8:], v)
	}
	return b
}

func putLE64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// wait waits for the work requests; a failed one is a problem of the run.
func (s *sortRun) wait(x *aa.Ctx, wrs []verbs.WR) {
	for _, w := range wrs {
		if _, err := x.Wait(w); err != nil {
			s.fail("node %d: %v", x.N.ID, err)
		}
	}
}

// barrier is a dissemination barrier: in round r each process raises the
// flag of the process 2^r ranks on (a put, or a store on its own node) and
// waits for its own flag of round r.
func (s *sortRun) barrier(x *aa.Ctx, sp *sortProc, epoch uint64) {
	x.P.Op("sort.barrier")
	p := len(s.procs)
	var wrs []verbs.WR
	for r, d := 0, 1; d < p; r, d = r+1, d*2 {
		q := s.procs[(sp.rank+d)%p]
		if q.node == sp.node {
			x.P.Store64(s.flagAddr(q, r), epoch)
		} else {
			src := sp.scratch + uint64(p*16) + uint64(int(epoch)*64+r)*8
			x.P.Store64(src, epoch)
			wrs = append(wrs, x.Put(q.node, src, s.flagAddr(q, r), 8))
		}
		flag := s.flagAddr(sp, r)
		x.P.Poll(func() bool { return x.N.Mem.Load64(flag) >= epoch })
	}
	s.wait(x, wrs)
}

// localBucket reads rank q's published (offset, count) of its bucket for sp.
func (s *sortRun) localBucket(x *aa.Ctx, q, sp *sortProc) (off, n uint64) {
	a := s.bucketAddr(q, sp.rank)
	return x.P.Load64(a), x.P.Load64(a + 8)
}

// place lays the buckets out in out in rank order once their sizes are
// known.
func (s *sortRun) place(sp *sortProc) {
	off := uint64(0)
	for q := range s.procs {
		sp.recvOff[q] = off
		off += sp.recvLen[q]
	}
}

// exchange is the get-based exchange of No-FT, AA-Poll and RMA: get every
// remote bucket's size, then every bucket, pipelined; RMA puts each bucket
// back into its owner's log and flushes. AA waits for nothing more: the
// owner's IOMMU writes each record as the read's data passes, before the
// data reaches the requester, and the log is the store (the handler does
// not need to have seen a record for it to be replayed).
func (s *sortRun) exchange(x *aa.Ctx, sp *sortProc) {
	p := len(s.procs)
	var wrs []verbs.WR
	offs := make([]uint64, p)
	sizes := sp.scratch // a 16-byte slot per rank
	for _, q := range s.procs {
		if q.node == sp.node {
			off, n := s.localBucket(x, q, sp)
			offs[q.rank], sp.recvLen[q.rank] = off, n*8
			continue
		}
		wrs = append(wrs, x.Get(q.node, sizes+uint64(q.rank)*16, s.bucketAddr(q, sp.rank), 16))
	}
	s.wait(x, wrs)
	for _, q := range s.procs {
		if q.node != sp.node {
			offs[q.rank] = x.P.Load64(sizes + uint64(q.rank)*16)
			sp.recvLen[q.rank] = x.P.Load64(sizes+uint64(q.rank)*16+8) * 8
		}
	}
	s.place(sp)
	if s.overflow(sp) {
		return
	}
	// The remote buckets in chunks, from the next rank on (owners share
	// the load), at most Window chunks in flight.
	type chunk struct {
		q      *sortProc
		off, n uint64
		wr     verbs.WR
	}
	var order []chunk
	left := make([]int, p) // chunks of each bucket still to come
	for i := 1; i <= p; i++ {
		q := s.procs[(sp.rank+i)%p]
		if q.node == sp.node {
			continue
		}
		for off := uint64(0); off < sp.recvLen[q.rank]; off += uint64(s.cfg.ChunkBytes) {
			order = append(order, chunk{q: q, off: off, n: min(uint64(s.cfg.ChunkBytes), sp.recvLen[q.rank]-off)})
			left[q.rank]++
		}
	}
	var inflight []chunk
	next := 0
	issue := func() {
		for ; next < len(order) && len(inflight) < s.cfg.Window; next++ {
			c := order[next]
			c.wr = x.Get(c.q.node, sp.out+sp.recvOff[c.q.rank]+c.off, c.q.in+offs[c.q.rank]+c.off, int(c.n))
			inflight = append(inflight, c)
		}
	}
	issue()
	// The buckets of this node's processes are copies, while the first
	// gets are under way.
	for i := 1; i <= p; i++ {
		if q := s.procs[(sp.rank+i)%p]; q.node == sp.node {
			b := make([]byte, sp.recvLen[q.rank])
			x.P.Read(q.in+offs[q.rank], b)
			x.P.Write(sp.out+sp.recvOff[q.rank], b)
		}
	}
	nodes := map[int]bool{}
	for len(inflight) > 0 {
		c := inflight[0]
		inflight = inflight[1:]
		s.wait(x, []verbs.WR{c.wr})
		nodes[c.q.node] = true
		if left[c.q.rank]--; left[c.q.rank] == 0 && s.cfg.Scheme == RMA {
			if !s.putBack(x, sp, c.q, offs[c.q.rank]) {
				return
			}
		}
		issue()
	}
	if s.cfg.Scheme != RMA {
		return
	}
	for node := range s.c.Nodes {
		if nodes[node] {
			if err := x.Flush(node); err != nil {
				s.fail("rank %d: %v", sp.rank, err)
			}
		}
	}
}

// putBack is RMA's logging of a bucket got from q, which knows nothing of
// the get: a slot of q's log claimed with fetch-and-add, then the header
// (the address read and the length) and the data put into it.
func (s *sortRun) putBack(x *aa.Ctx, sp, q *sortProc, off uint64) bool {
	n := sp.recvLen[q.rank]
	slot, err := x.FetchAdd(q.node, q.rnext, rmaHdr+n)
	if err != nil {
		s.fail("rank %d: %v", sp.rank, err)
		return false
	}
	if slot+rmaHdr+n > s.rlogCap() {
		s.fail("rank %d's RMA log is full", q.rank)
		return false
	}
	h := sp.scratch + uint64(q.rank)*16 // the size slot, free again
	x.P.Store64(h, q.in+off)
	x.P.Store64(h+8, n)
	x.Put(q.node, h, q.rlog+slot, rmaHdr)
	for c := uint64(0); c < n; c += uint64(s.cfg.ChunkBytes) {
		x.Put(q.node, sp.out+sp.recvOff[q.rank]+c, q.rlog+slot+rmaHdr+c, int(min(uint64(s.cfg.ChunkBytes), n-c)))
	}
	return true
}

// rlogCap is the size of a process's RMA log: its keys, and a header for
// every rank.
func (s *sortRun) rlogCap() uint64 { return uint64(s.cfg.Keys*8 + len(s.c.Nodes)*s.cfg.Procs*rmaHdr) }

func (s *sortRun) overflow(sp *sortProc) bool {
	total := uint64(0)
	for _, l := range sp.recvLen {
		total += l
	}
	if total > uint64(s.outCap*8) {
		s.fail("rank %d receives %d keys, more than the %d it has room for", sp.rank, total/8, s.outCap)
		return true
	}
	return false
}

// An AM request is two words: kind | owner<<8 | requester<<32, and the
// offset of the chunk it asks for in the requester's bucket. A reply starts
// with a header of five words: the first word (kind reply), the bucket's
// length, the chunk's offset in the bucket, its length and the owner's
// address it was read from; a reply is a log entry of the owner, sent as it
// lies in the log.

// amSlot is the i-th receive buffer for messages from node src.
func (s *sortRun) amSlot(sp *sortProc, src, i int) uint64 {
	b := s.recvBufs()
	return sp.recv + uint64((src*b+i%b)*(s.cfg.ChunkBytes+sortHdr))
}

// recvBufs is how many receive buffers a process keeps posted per peer
// node: the peer's process of its core has at most Window requests in
// flight to it, and it at most Window to the peer, whose replies come back.
func (s *sortRun) recvBufs() int { return 2 * s.cfg.Window }

func (s *sortRun) postRecvs(x *aa.Ctx, sp *sortProc) {
	for src := range s.c.Nodes {
		if src == sp.node {
			continue
		}
		for i := 0; i < s.recvBufs(); i++ {
			x.PostRecv(src, s.amSlot(sp, src, i), s.cfg.ChunkBytes+sortHdr)
		}
	}
}

// chunks is how many replies a bucket of n bytes takes (an empty one, one).
func (s *sortRun) chunks(n uint64) int {
	return max(1, int((n+uint64(s.cfg.ChunkBytes)-1)/uint64(s.cfg.ChunkBytes)))
}

// exchangeAM asks every remote owner for the first chunk of its bucket (the
// reply says how long the bucket is, and the rest is asked for), at most
// Window requests in flight, and polls its receive queues meanwhile: it
// serves the requests for its node's data that arrive on its connections
// (from the processes of its core on the other nodes) and takes in the
// replies, until it has every bucket and has served every request it will
// get. A bucket goes into out where the previous one ended.
func (s *sortRun) exchangeAM(x *aa.Ctx, sp *sortProc) {
	nodes, p := len(s.c.Nodes), len(s.procs)
	const unknown = ^uint64(0)
	type request struct {
		q   *sortProc
		off uint64
	}
	var wrs []verbs.WR
	var queue []request
	for i := 1; i <= p; i++ {
		if q := s.procs[(sp.rank+i)%p]; q.node != sp.node {
			queue = append(queue, request{q, 0})
			sp.recvLen[q.rank] = unknown
		}
	}
	waiting := len(queue) // buckets not complete
	asked, open := 0, 0
	reqs := sp.scratch + uint64(p*16+sortBarrierBytes)
	ask := func() {
		for ; asked < len(queue) && open < s.cfg.Window; asked++ {
			r := queue[asked]
			a := reqs + uint64(asked%sortReqSlots)*16
			x.P.Store64(a, sortAMRequest|uint64(r.q.rank)<<8|uint64(sp.rank)<<32)
			x.P.Store64(a+8, r.off)
			wrs = append(wrs, x.Send(r.q.node, a, 16))
			open++
		}
	}
	ask()
	next := uint64(0)
	for i := 1; i <= p; i++ {
		q := s.procs[(sp.rank+i)%p]
		if q.node != sp.node {
			continue
		}
		off, n := s.localBucket(x, q, sp)
		sp.recvOff[q.rank], sp.recvLen[q.rank] = next, n*8
		if next += n * 8; next > uint64(s.outCap*8) {
			s.fail("rank %d receives more than the %d keys it has room for", sp.rank, s.outCap)
			return
		}
		b := make([]byte, n*8)
		x.P.Read(q.in+off, b)
		x.P.Write(sp.out+sp.recvOff[q.rank], b)
	}
	// The requests to serve: every chunk of this node's buckets for the
	// process of this core on each other node.
	serve, served := 0, 0
	for _, o := range s.procs {
		if o.node != sp.node {
			continue
		}
		for _, r := range s.procs {
			if r.node != sp.node && r.core == sp.core {
				_, n := s.localBucket(x, o, r)
				serve += s.chunks(n * 8)
			}
		}
	}
	got := make([]uint64, p)
	hdr := make([]byte, sortHdr)
	for waiting > 0 || served < serve {
		for src := 0; src < nodes; src++ {
			if src == sp.node {
				continue
			}
			cqe, ok := x.TryRecv(src)
			if !ok {
				continue
			}
			slot := s.amSlot(sp, src, int(cqe.WRID))
			x.P.Read(slot, hdr[:16])
			w0 := le64(hdr)
			a, b := int(w0>>8&0xffffff), int(w0>>32)
			if a >= p || b >= p {
				s.fail("rank %d: a message names rank %d or %d", sp.rank, a, b)
				return
			}
			switch w0 & 0xff {
			case sortAMRequest:
				wrs = append(wrs, s.serveAM(x, s.procs[a], s.procs[b], le64(hdr[8:])))
				served++
			case sortAMReply:
				x.P.Read(slot+16, hdr[16:])
				owner := a
				total, off, n := le64(hdr[8:]), le64(hdr[16:]), le64(hdr[24:])
				if sp.recvLen[owner] == unknown {
					sp.recvOff[owner], sp.recvLen[owner] = next, total
					if next += total; next > uint64(s.outCap*8) {
						s.fail("rank %d receives more than the %d keys it has room for", sp.rank, s.outCap)
						return
					}
					for c := uint64(s.cfg.ChunkBytes); c < total; c += uint64(s.cfg.ChunkBytes) {
						queue = append(queue, request{s.procs[owner], c})
					}
				}
				if off+n > total || n > uint64(s.cfg.ChunkBytes) {
					s.fail("rank %d: a reply of %d bytes at %d of a %d-byte bucket", sp.rank, n, off, total)
					return
				}
				data := make([]byte, n)
				x.P.Read(slot+sortHdr, data)
				x.P.Write(sp.out+sp.recvOff[owner]+off, data)
				open--
				if got[owner] += n; got[owner] == total {
					waiting--
				}
			default:
				s.fail("rank %d: a message of unknown kind %d", sp.rank, w0&0xff)
				return
			}
			x.PostRecv(src, slot, s.cfg.ChunkBytes+sortHdr)
			ask()
		}
	}
	s.wait(x, wrs)
}

// serveAM is the owner's handler of a request: the chunk of the bucket is
// copied with its header into the node's log (a slot claimed with a local
// fetch-and-add) and sent from there as the reply.
func (s *sortRun) serveAM(x *aa.Ctx, owner, req *sortProc, c uint64) verbs.WR {
	off, n := s.localBucket(x, owner, req)
	total := n * 8
	l := min(uint64(s.cfg.ChunkBytes), total-min(c, total))
	e := x.P.FetchAdd(s.amNext[owner.node], sortHdr+l)
	if e+sortHdr+l > s.amCap {
		s.fail("node %d's AM log is full", owner.node)
		l = 0
	}
	entry := make([]byte, sortHdr+l)
	x.P.Read(owner.in+off+c, entry[sortHdr:])
	putLE64(entry, sortAMReply|uint64(owner.rank)<<8|uint64(req.rank)<<32)
	putLE64(entry[8:], total)
	putLE64(entry[16:], c)
	putLE64(entry[24:], l)
	putLE64(entry[32:], owner.in+off+c)
	a := s.amLog[owner.node] + e
	if e+sortHdr+l <= s.amCap {
		x.P.Write(a, entry)
	}
	return x.Send(req.node, a, int(sortHdr+l))
}

// logEntries reads a node's log back: what the AA handler got, what the
// AM servers wrote, or what the sources put into the RMA logs of the
// node's processes.
func (s *sortRun) logEntries(node int) ([]sortLogEntry, error) {
	m := s.c.Nodes[node].Mem
	var out []sortLogEntry
	switch s.cfg.Scheme {
	case AAPoll:
		rs, err := s.aaLogs[node].Records()
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Kind == record.Get {
				out = append(out, sortLogEntry{r.IOVA, r.Data})
			}
		}
	case AM:
		used := m.Load64(s.amNext[node])
		for e := uint64(0); e+sortHdr <= used && e < s.amCap; {
			l := m.Load64(s.amLog[node] + e + 24)
			if e+sortHdr+l > used {
				break
			}
			d := make([]byte, l)
			m.Read(s.amLog[node]+e+sortHdr, d)
			out = append(out, sortLogEntry{m.Load64(s.amLog[node] + e + 32), d})
			e += sortHdr + l
		}
	case RMA:
		for _, q := range s.procs {
			if q.node != node {
				continue
			}
			used, room := m.Load64(q.rnext), s.rlogCap()
			for e := uint64(0); e+rmaHdr <= used && e < room; {
				l := m.Load64(q.rlog + e + 8)
				if e+rmaHdr+l > used {
					break
				}
				d := make([]byte, l)
				m.Read(q.rlog+e+rmaHdr, d)
				out = append(out, sortLogEntry{m.Load64(q.rlog + e), d})
				e += rmaHdr + l
			}
		}
	}
	return out, nil
}

// sentBytes is what every node's NIC has sent so far.
func (s *sortRun) sentBytes() []uint64 {
	b := make([]uint64, len(s.c.Nodes))
	for i, n := range s.c.Nodes {
		b[i] = n.SentBytes()
	}
	return b
}

// Result checks the run: every process's output sorted, the outputs in rank
// order sorted as a whole and a permutation of the input; and, but for
// No-FT, that replaying each owner's log gives every process exactly what
// it got from that owner: the log's entries tile the buckets read from the
// owner's node, with the bytes the requesters received, and nothing else.
func (s *sortRun) Result() SortResult {
	res := SortResult{Scheme: s.cfg.Scheme, Nodes: len(s.c.Nodes), Procs: s.cfg.Procs, Keys: len(s.procs) * s.cfg.Keys,
		SimTimePS: uint64(s.end)}
	t0, t1 := ^sim.Tick(0), sim.Tick(0)
	for _, sp := range s.procs {
		t0, t1 = min(t0, sp.t0), max(t1, sp.t1)
	}
	if t1 > t0 {
		res.CommTimePS = uint64(t1 - t0)
	}
	for i := range s.sent1 {
		b := s.sent1[i] - s.sent0[i]
		res.SentBytes = append(res.SentBytes, b)
		res.WireBytes += b
	}
	for _, r := range s.procs {
		for _, q := range s.procs {
			if q.node != r.node {
				res.RemoteBytes += r.recvLen[q.rank]
			}
		}
	}
	problem := s.problem
	if problem == "" {
		problem = s.checkOutput()
	}
	for node := range s.c.Nodes {
		es, err := s.logEntries(node)
		if err != nil && problem == "" {
			problem = err.Error()
		}
		for _, e := range es {
			res.LogBytes += uint64(len(e.data))
		}
		if problem == "" && s.cfg.Scheme != NoFT {
			problem = s.checkLog(node, es)
		}
	}
	res.Problem, res.Verified = problem, problem == ""
	return res
}

func (s *sortRun) keysAt(node int, addr uint64, n int) []uint64 {
	b := make([]byte, n*8)
	s.c.Nodes[node].Mem.Read(addr, b)
	out := make([]uint64, n)
	for i := range out {
		out[i] = le64(b[i*8:])
	}
	return out
}

func (s *sortRun) checkOutput() string {
	var all []uint64
	for _, sp := range s.procs {
		if sp.t1 == 0 {
			return fmt.Sprintf("rank %d did not finish", sp.rank)
		}
		got := s.keysAt(sp.node, sp.merged, sp.count)
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				return fmt.Sprintf("rank %d's output is not sorted at %d: %#x after %#x", sp.rank, i, got[i], got[i-1])
			}
		}
		if len(all) > 0 && len(got) > 0 && got[0] < all[len(all)-1] {
			return fmt.Sprintf("rank %d's first key %#x is below rank %d's last %#x", sp.rank, got[0], sp.rank-1, all[len(all)-1])
		}
		all = append(all, got...)
	}
	in := s.inputKeys()
	slices.Sort(in)
	if !slices.Equal(in, all) {
		return fmt.Sprintf("the output (%d keys) is not a permutation of the input (%d keys)", len(all), len(in))
	}
	return ""
}

// inputKeys draws every process's keys again, as SetupSort drew them (the
// processes sort theirs in place; the run keeps no copy).
func (s *sortRun) inputKeys() []uint64 {
	r := sim.NewRand(s.cfg.Seed, "sort.keys")
	in := make([]uint64, len(s.procs)*s.cfg.Keys)
	for i := range in {
		in[i] = r.Uint64()
	}
	return in
}

// checkLog replays node's log against the gets made to the node's
// processes from other nodes.
func (s *sortRun) checkLog(node int, es []sortLogEntry) string {
	m := s.c.Nodes[node].Mem
	type read struct {
		addr uint64
		want []byte // what the requester received
		who  int
	}
	var reads []read
	for _, q := range s.procs {
		if q.node != node {
			continue
		}
		for _, r := range s.procs {
			n := r.recvLen[q.rank]
			if r.node == node || n == 0 {
				continue
			}
			w := make([]byte, n)
			s.c.Nodes[r.node].Mem.Read(r.out+r.recvOff[q.rank], w)
			reads = append(reads, read{q.in + m.Load64(s.bucketAddr(q, r.rank)), w, r.rank})
		}
	}
	slices.SortFunc(reads, func(a, b read) int { return cmpU(a.addr, b.addr) })
	// The entries as runs of contiguous bytes. A read the network made
	// again (a retransmitted request) is logged again: an overlap must
	// repeat the same bytes.
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b sortLogEntry) int { return cmpU(a.addr, b.addr) })
	type run struct {
		addr uint64
		data []byte
	}
	var runs []run
	for _, e := range es {
		if k := len(runs) - 1; k >= 0 && e.addr <= runs[k].addr+uint64(len(runs[k].data)) {
			r := &runs[k]
			from := e.addr - r.addr
			over := min(uint64(len(e.data)), uint64(len(r.data))-from)
			if !slices.Equal(r.data[from:from+over], e.data[:over]) {
				return fmt.Sprintf("node %d's log holds the read at %#x twice with other bytes", node, e.addr)
			}
			r.data = append(r.data, e.data[over:]...)
			continue
		}
		runs = append(runs, run{e.addr, slices.Clone(e.data)})
	}
	logged, nread := 0, 0
	for _, r := range runs {
		logged += len(r.data)
	}
	k := 0
	for _, rd := range reads {
		nread += len(rd.want)
		for k < len(runs) && runs[k].addr+uint64(len(runs[k].data)) <= rd.addr {
			k++
		}
		if k == len(runs) || runs[k].addr > rd.addr || runs[k].addr+uint64(len(runs[k].data)) < rd.addr+uint64(len(rd.want)) {
			return fmt.Sprintf("node %d's log does not replay rank %d's get of %d bytes at %#x: not all of it is logged", node, rd.who, len(rd.want), rd.addr)
		}
		from := rd.addr - runs[k].addr
		if !slices.Equal(runs[k].data[from:from+uint64(len(rd.want))], rd.want) {
			return fmt.Sprintf("node %d's log replays rank %d's get at %#x with other bytes than it received", node, rd.who, rd.addr)
		}
	}
	if logged != nread {
		return fmt.Sprintf("node %d's log holds %d bytes no get read (%d logged, %d read)", node, logged-nread, logged, nread)
	}
	return ""
}
