package torus

import "fmt"

// probes declares the router's traced signals; the kernel samples them
// after each evaluation of the router, and only when a tracer is attached.
//
// Per output port (xp … zm): pkt, the transaction ID of the packet being
// sent (x when idle); dst, its destination node; vc, the channel it goes
// on; tokens_vc0 … tokens_vc3, the downstream buffer's free chunks. Per
// input port (in_xp …): chunks_vc0 … chunks_vc3, the chunks its buffers
// hold. Per reception FIFO: rec[i].packets waiting.
func (r *Router) probes() {
	u := r.u
	for o, op := range r.out {
		if op == nil {
			continue
		}
		op := op
		pn := Port(o).String()
		u.Probe(pn+".pkt", 64, func() (uint64, bool) {
			if op.s.busyUntil <= u.Engine().Now() {
				return 0, false
			}
			return uint64(op.s.cur.ID), true
		})
		u.Probe(pn+".dst", 16, func() (uint64, bool) {
			if op.s.busyUntil <= u.Engine().Now() {
				return 0, false
			}
			return uint64(r.net.IndexOf(op.s.cur.Dst)), true
		})
		u.Probe(pn+".vc", 2, func() (uint64, bool) {
			if op.s.busyUntil <= u.Engine().Now() {
				return 0, false
			}
			return uint64(op.s.curVC), true
		})
		for vc := 0; vc < NumVCs; vc++ {
			vc := vc
			u.Probe(fmt.Sprintf("%s.tokens_vc%d", pn, vc), 13, func() (uint64, bool) {
				return uint64(op.avail[vc]), true
			})
		}
	}
	for p, ip := range r.in {
		if ip == nil {
			continue
		}
		ip := ip
		for vc := 0; vc < NumVCs; vc++ {
			vc := vc
			u.Probe(fmt.Sprintf("in_%s.chunks_vc%d", Port(p), vc), 13, func() (uint64, bool) {
				return uint64(ip.used[vc]), true
			})
		}
	}
	for i, f := range r.Rec {
		f := f
		u.Probe(fmt.Sprintf("rec%d_packets", i), 16, func() (uint64, bool) { return uint64(f.Len()), true })
	}
}
