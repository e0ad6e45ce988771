package torus

import "github.com/aaemu/aaemu/sim"

// refRouter is the router's datapath as it was before it became
// proportional to the events it handles: every edge it is woken it
// routes the head of every input channel and injection FIFO again, blocked
// or not. TestRouterMatchesReference holds Router to it: the same
// deliveries, statistics and waveforms to the byte. It shares Router's
// state and ports (New builds both); only the datapath differs.
type refRouter Router

// Tick is the router's datapath for one edge.
func (r *refRouter) Tick(now sim.Tick) bool {
	r.takeArrivals(now)
	for o := range r.out {
		if op := r.out[o]; op != nil {
			r.drain(now, &op.s)
		}
	}
	for i := range r.rec {
		r.drain(now, &r.rec[i])
	}
	r.sendTokens()
	r.allocate(now)
	return r.schedule(now)
}

// takeArrivals moves arrived packets into their channels' buffers (their
// space was reserved upstream) and counts the tokens that came back.
func (r *refRouter) takeArrivals(now sim.Tick) {
	for _, ip := range r.in {
		if ip == nil {
			continue
		}
		for ip.link.Valid() {
			p := ip.link.Recv()
			ip.vc[p.vc].Push(held{p: p, at: now})
			ip.used[p.vc] += int(p.chunks)
		}
	}
	for _, op := range r.out {
		if op == nil {
			continue
		}
		for op.tokens.Valid() {
			t := op.tokens.Recv()
			for vc, n := range t.Chunks {
				op.avail[vc] += int(n)
				op.returned(vc, int(n))
			}
		}
	}
}

// drain frees the tokens of the chunks a stream has sent by now.
func (r *refRouter) drain(now sim.Tick, s *stream) {
	if !s.active {
		return
	}
	k := s.freedBy(now)
	if d := k - s.freed; d > 0 && s.from != Local {
		ip := r.in[s.from]
		ip.used[s.vc] -= d
		ip.pend.Chunks[s.vc] += uint16(d)
		ip.npend += d
	}
	s.freed = k
	if k == s.n {
		s.active = false
	}
}

// sendTokens returns freed chunks upstream, one token message per input
// port and edge (kept for the next edge if the token link is full).
func (r *refRouter) sendTokens() {
	for _, ip := range r.in {
		if ip == nil || ip.npend == 0 || !ip.tokens.Ready() {
			continue
		}
		ip.tokens.Send(ip.pend)
		ip.pend, ip.npend = Tokens{}, 0
	}
}

// head is source src's candidate for the crossbar, if it has one now: the
// head of an input channel (src = port·4 + channel) or of an injection
// FIFO (the sources after those), with its arrival time.
func (r *refRouter) head(now sim.Tick, src int) (p *Packet, at sim.Tick, from Port, vc int) {
	nvc := int(NumLinkPorts) * NumVCs
	if src < nvc {
		from, vc = Port(src/NumVCs), src%NumVCs
		ip := r.in[from]
		if ip == nil || ip.vc[vc].Len() == 0 || ip.free[vc] > now {
			return nil, 0, from, vc
		}
		h := ip.vc[vc].Front()
		return &h.p, h.at, from, vc
	}
	f := r.Inj[src-nvc]
	p = f.head(now)
	if p == nil {
		return nil, 0, Local, 0
	}
	return p, f.q.Front().vis, Local, 0
}

// allocate routes the head of every input and grants outputs: the
// high-priority channel and FIFOs first, then the rest, each round starting
// after the source granted first last time.
func (r *refRouter) allocate(now sim.Tick) {
	nsrc := int(NumLinkPorts)*NumVCs + len(r.Inj)
	var taken [NumLinkPorts]bool
	var recTaken [NumLinkPorts + 1]bool
	first := -1
	for pass := 0; pass < 2; pass++ {
		for k := 0; k < nsrc; k++ {
			src := (r.rr + k) % nsrc
			p, at, from, vc := r.head(now, src)
			if p == nil || p.Priority != (pass == 0) || at+r.hopDelay() > now {
				continue
			}
			if r.route(now, p, at, from, vc, src, &taken, &recTaken) && first < 0 {
				first = src
			}
		}
	}
	if first >= 0 {
		r.rr = (first + 1) % nsrc
	}
}

// hopDelay is the router's pipeline: a head may leave this long after it
// arrived.
func (r *refRouter) hopDelay() sim.Tick { return sim.Tick(r.spec.RouterCycles) * r.period }

// remaining is the hops left in dimension d in the packet's direction.
func (r *refRouter) remaining(p *Packet, d int) int {
	if p.dir[d] == 0 {
		return 0
	}
	n := r.spec.Dims[d]
	h := (p.Dst[d] - r.at[d]) * int(p.dir[d])
	return (h%n + n) % n
}

// route tries to move the head p: into a reception FIFO at its
// destination, or onto an output with room downstream. It reports whether
// it moved.
func (r *refRouter) route(now sim.Tick, p *Packet, at sim.Tick, from Port, vc, src int,
	taken *[NumLinkPorts]bool, recTaken *[NumLinkPorts + 1]bool) bool {
	if p.Dst == r.at {
		ri := int(from)
		if p.Priority {
			ri = int(NumLinkPorts)
		}
		if recTaken[ri] || r.rec[ri].busyUntil > now || r.Rec[ri].Room(now) < int(p.chunks) {
			return false
		}
		recTaken[ri] = true
		r.deliver(now, p, at, from, vc, ri, false)
		r.release(now, src)
		return true
	}
	n := int(p.chunks)
	// The deterministic way: the first dimension with hops left.
	dd := 0
	for r.remaining(p, dd) == 0 {
		dd++
	}
	det := portOf(dd, p.dir[dd])
	bestPort, bestVC, bestAvail := Port(0), -1, -1
	if p.Dynamic {
		// Minimal adaptive: any dimension with hops left, on the dynamic
		// channel with the most tokens; the packet must fit whole. Under
		// an ordered selection only the first dimension in its order
		// with room (waiting while its output is busy); under SelectHops
		// the most hops left first.
		sel := r.spec.Selection
		order := []int{0, 1, 2}
		if sel == SelectXLast {
			order = []int{2, 1, 0}
		}
		pd := -1
		for _, d := range order {
			if sel != SelectXFirst && sel != SelectXLast || r.remaining(p, d) == 0 {
				continue
			}
			if o := r.out[portOf(d, p.dir[d])]; o.avail[VCDynamic0] >= n || o.avail[VCDynamic1] >= n {
				pd = d
				break
			}
		}
		bestHops := -1
		for d := 0; d < 3; d++ {
			h := r.remaining(p, d)
			if h == 0 || pd >= 0 && d != pd {
				continue
			}
			o := portOf(d, p.dir[d])
			if taken[o] || !r.linkFree(now, o) {
				continue
			}
			for v := VCDynamic0; v <= VCDynamic1; v++ {
				a := r.out[o].avail[v]
				if a < n {
					continue
				}
				if sel == SelectHops && h != bestHops {
					if h > bestHops {
						bestPort, bestVC, bestAvail, bestHops = o, v, a, h
					}
					continue
				}
				if a > bestAvail {
					bestPort, bestVC, bestAvail = o, v, a
				}
			}
		}
		if pd >= 0 && bestVC < 0 {
			return false
		}
	}
	if bestVC < 0 {
		// The escape (or high-priority) channel, deterministic, under the
		// bubble rule: entering a ring takes room for this packet and a
		// full one more, so a ring never fills up.
		esc := VCEscape
		if p.Priority {
			esc = VCPriority
		}
		if taken[det] || !r.linkFree(now, det) {
			return false
		}
		entering := from == Local || vc != esc || from.dim() != dd
		if !bubbleRoom(r.out[det], esc, n, r.spec.VCChunks[esc], entering, r.spec.wraps(dd)) {
			return false
		}
		bestPort, bestVC = det, esc
		if p.Dynamic {
			r.escaped.Inc()
		}
	}
	// A deposit packet leaves a copy here on its way.
	ri := int(from)
	if p.Deposit && from != Local {
		if recTaken[ri] || r.rec[ri].busyUntil > now || r.Rec[ri].Room(now) < n {
			return false
		}
		recTaken[ri] = true
		r.deliver(now, p, at, from, vc, ri, true)
	}
	taken[bestPort] = true
	r.send(now, p, at, from, vc, bestPort, bestVC)
	r.release(now, src)
	return true
}

// linkFree reports whether output o can start a packet now.
func (r *refRouter) linkFree(now sim.Tick, o Port) bool {
	op := r.out[o]
	return op.s.busyUntil <= now && op.link.Ready()
}

// send starts p on output o's link into the next router's channel vc.
func (r *refRouter) send(now sim.Tick, p *Packet, at sim.Tick, from Port, vc int, o Port, nvc int) {
	op := r.out[o]
	n := int(p.chunks)
	op.avail[nvc] -= n
	op.sent(nvc, n)
	r.minTokens = min(r.minTokens, op.avail[nvc])
	q := *p
	q.vc = uint8(nvc)
	q.inPort = uint8(o.opposite())
	q.Hops++
	op.link.Send(q)
	r.startStream(now, &op.s, p, at, from, vc, r.chunkPS)
	op.s.curVC = uint8(nvc)
	op.s.busyUntil = now + sim.Tick(r.spec.PacketCycles(n))*r.period
	op.packets.Inc()
	op.payload.Add(uint64(len(p.Payload)))
	op.wireBytes.Add(uint64(r.spec.WireBytes(n)))
	op.busyPS.Add(uint64(op.s.busyUntil - now))
	if from != Local {
		r.forwarded.Inc()
	}
}

// deliver writes p (or, passing by with the deposit bit, a copy of it)
// into reception FIFO ri. The message layer sees it once its last byte
// and the link's check bytes are in.
func (r *refRouter) deliver(now sim.Tick, p *Packet, at sim.Tick, from Port, vc, ri int, copyOnly bool) {
	s := &r.rec[ri]
	q := new(Packet)
	*q = *p
	vis := now
	if from != Local {
		vis = at + sim.Tick(r.spec.PacketCycles(int(p.chunks)))*r.period
	}
	if copyOnly {
		r.deposited.Inc()
		r.Rec[ri].push(q, now, vis)
		// The copy is written as the packet streams through: the path is
		// busy, the buffer is freed by the output.
		s.busyUntil = max(now+sim.Tick(p.chunks)*r.localPS, at+sim.Tick(p.chunks)*r.chunkPS)
		return
	}
	r.startStream(now, s, p, at, from, vc, r.localPS)
	vis = max(vis, s.end())
	s.busyUntil = s.end()
	r.Rec[ri].push(q, now, vis)
	r.delivered.Inc()
}

func (r *refRouter) startStream(now sim.Tick, s *stream, p *Packet, at sim.Tick, from Port, vc int, outPS sim.Tick) {
	*s = stream{active: true, from: from, vc: vc, n: int(p.chunks), head: at, start: now, outPS: outPS, cur: *p}
	if from != Local {
		s.inPS = r.chunkPS
		// The channel's read side is busy until this packet has left.
		r.in[from].free[vc] = s.end()
	}
}

// release takes the granted head off its input channel or injection FIFO.
func (r *refRouter) release(now sim.Tick, src int) {
	nvc := int(NumLinkPorts) * NumVCs
	if src < nvc {
		r.in[src/NumVCs].vc[src%NumVCs].Pop()
		return
	}
	r.Inj[src-nvc].pop(now)
}

// schedule asks for the next edge at which something can change without
// an arrival: a stream's next chunk, an output or reception path freeing,
// a head's pipeline delay passing, a token message waiting for its link.
func (r *refRouter) schedule(now sim.Tick) bool {
	next := sim.Never
	see := func(t sim.Tick) {
		if t > now && t < next {
			next = t
		}
	}
	busy := false
	for _, op := range r.out {
		if op == nil {
			continue
		}
		if op.s.active {
			see(op.s.nextFree())
		}
		see(op.s.busyUntil)
	}
	for i := range r.rec {
		if r.rec[i].active {
			see(r.rec[i].nextFree())
		}
		see(r.rec[i].busyUntil)
	}
	for _, ip := range r.in {
		if ip == nil {
			continue
		}
		if ip.npend > 0 {
			busy = true
		}
		for vc := range ip.vc {
			if ip.vc[vc].Len() > 0 {
				see(max(ip.vc[vc].Front().at+r.hopDelay(), ip.free[vc]))
			}
		}
	}
	for _, f := range r.Inj {
		if t := f.next(); t != sim.Never {
			see(t + r.hopDelay())
		}
	}
	if busy {
		return true
	}
	if next != sim.Never {
		r.u.WakeAt(next)
	}
	return false
}

// next is when the FIFO's head becomes visible (sim.Never when empty).
func (f *FIFO) next() sim.Tick {
	if f.q.Len() == 0 {
		return sim.Never
	}
	return f.q.Front().vis
}
