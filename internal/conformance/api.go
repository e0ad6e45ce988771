package conformance

import (
	"fmt"
	"strings"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
	"github.com/aaemu/aaemu/verify"
)

// RunAPI runs an API-level stimulus on the two-node machine: one process on
// node 0 issues the puts, gets and active flushes to node 1, whose handlers
// keep every record.
func RunAPI(s *verify.APIStimulus) (*verify.APIObservation, error) {
	return RunAPIWith(s, Options{})
}

// RunAPIWith runs an API-level stimulus with options: a tracer sees the
// whole machine's signals (the waveforms of a failing run).
func RunAPIWith(s *verify.APIStimulus, o Options) (*verify.APIObservation, error) {
	spec := machine.DefaultSpec()
	spec.NIC.PMTU, spec.NIC.Sizes.MPS, spec.NIC.Sizes.MRRS = s.PMTU, s.MPS, s.MRRS
	spec.NICs = s.NICs
	if l := s.Link; l != nil {
		spec.PCIeDown = l.Down
		if l.PH > 0 {
			spec.PCIe.Credits.PH = l.PH
		}
		if l.NPH > 0 {
			spec.PCIe.Credits.NPH = l.NPH
		}
		if l.LatencyNS > 0 {
			spec.PCIe.LatencyPS = sim.Tick(l.LatencyNS) * sim.NS
		}
		spec.Wire.LossPPM, spec.Wire.DupPPM, spec.Wire.ReorderPPM = l.LossPPM, l.DupPPM, l.ReorderPPM
	}
	e := sim.NewEngine(s.Seed)
	c, err := aa.New(e, spec)
	if err != nil {
		return nil, err
	}
	if o.Tracer != nil {
		e.AttachTracer(o.Tracer)
	}
	src, dst := c.Nodes[0], c.Nodes[1]
	mon := AttachMonitors(c.Cluster)
	obs := &verify.APIObservation{Memory: map[uint64][]byte{}, Logs: map[uint16][]verify.Record{}, Gets: map[int][]byte{}, Failed: map[int]bool{}, Flushes: map[int]int{},
		Atomics: map[int]uint64{}, Recvs: map[int]verify.APIRecv{}}
	handled := map[uint16]int{}
	for _, l := range s.Logs {
		iuid := l.IUID
		if _, err := dst.CreateLog(iuid, l.Size, iommu.Notify(l.Mode), func(x *aa.Ctx, r aa.Record) {
			obs.Logs[iuid] = append(obs.Logs[iuid], verify.Record{Header: r.Header, Data: r.Data})
			x.P.Sleep(sim.Tick(s.HandlerNS) * sim.NS)
			handled[iuid]++
		}); err != nil {
			return nil, err
		}
		if _, err := dst.CreateFlushPage(iuid); err != nil {
			return nil, err
		}
	}
	for _, pg := range s.Pages {
		b := make([]byte, 4096)
		for k := range b {
			b[k] = verify.Pattern(pg.Addr + uint64(k))
		}
		dst.Mem.Write(pg.Addr, b)
		if err := dst.Register(pg.Addr, 4096, iommu.Perm{Bits: pg.Bits, IUID: pg.IUID}); err != nil {
			return nil, err
		}
	}
	// One local buffer per operation.
	total := uint64(0)
	for _, op := range s.Ops {
		total += uint64(op.Len+4095) &^ 4095
	}
	buf := src.Alloc(total + 4096)
	if err := src.Register(buf, total+4096, iommu.Perm{Bits: pte.R | pte.W}); err != nil {
		return nil, err
	}
	var runErr error
	steps := 0 // operations the process issued and finished
	// Node 1's process posts a receive request for each send, on the
	// send's rail, in order, and reaps their completions.
	sends := map[int][]int{} // rail → its sends
	for i, op := range s.Ops {
		if op.Kind == "send" {
			sends[op.Rail] = append(sends[op.Rail], i)
		}
	}
	// One process a rail, so that a rail's sends never wait for another
	// rail's (node 0's process blocks on atomics and flushes).
	for r := range max(s.NICs, 1) {
		if len(sends[r]) == 0 {
			continue
		}
		dst.Spawn(0, fmt.Sprintf("api-recv%d", r), func(x *aa.Ctx) {
			x = x.OnRail(r)
			x.P.Sleep(sim.Tick(s.RecvLateNS) * sim.NS)
			posted := 0
			post := func(upto int) {
				for ; posted < min(upto, len(sends[r])); posted++ {
					op := s.Ops[sends[r][posted]]
					x.PostRecv(0, op.Remote, op.Len)
				}
			}
			if s.RecvAhead > 0 {
				post(s.RecvAhead)
			} else {
				post(len(sends[r]))
			}
			for k, i := range sends[r] {
				cqe := x.Recv(0)
				obs.Recvs[i] = verify.APIRecv{Index: cqe.WRID, Len: int(cqe.Length), Status: cqe.Status}
				steps++
				if s.RecvAhead > 0 {
					post(k + 1 + s.RecvAhead)
				}
			}
		})
	}
	src.Spawn(0, "api", func(x0 *aa.Ctx) {
		wrs := map[int]verbs.WR{}
		local := map[int]uint64{}
		at := buf
		for i, op := range s.Ops {
			x := x0.OnRail(op.Rail)
			x.P.Op("verify." + op.Kind)
			switch op.Kind {
			case "put":
				x.P.Write(at, op.Data)
				wrs[i] = x.Put(1, at, op.Remote, op.Len)
			case "send":
				x.P.Write(at, op.Data)
				wrs[i] = x.Send(1, at, op.Len)
			case "get":
				wrs[i] = x.Get(1, at, op.Remote, op.Len)
			case "fadd", "cas":
				var v uint64
				var err error
				if op.Kind == "fadd" {
					v, err = x.FetchAdd(1, op.Remote, op.Operand)
				} else {
					v, err = x.CAS(1, op.Remote, op.Compare, op.Operand)
				}
				if err != nil {
					obs.Failed[i] = true
				} else {
					obs.Atomics[i] = v
				}
			case "flush":
				if err := x.ActiveFlush(1, op.IUID); err != nil && runErr == nil {
					runErr = fmt.Errorf("op %d: active flush: %w", i, err)
				}
				obs.Flushes[i] = handled[op.IUID]
			}
			local[i] = at
			at += uint64(op.Len+4095) &^ 4095
			steps++
		}
		for i, op := range s.Ops {
			w, ok := wrs[i]
			if !ok {
				continue
			}
			_, err := x0.OnRail(op.Rail).Wait(w)
			steps++
			if op.Kind == "get" {
				if err != nil {
					obs.Failed[i] = true
				} else {
					b := make([]byte, op.Len)
					x0.P.Read(local[i], b)
					obs.Gets[i] = b
				}
			} else if err != nil && runErr == nil {
				runErr = fmt.Errorf("op %d: %w", i, err)
			}
		}
	})
	// The end: the process done, every predicted record handled, and then
	// a while for what a READ read again or a duplicate may still bring.
	p := verify.PredictAPI(s)
	var settled sim.Tick
	progress, since := -1, sim.Tick(0)
	// The end waits until nothing was handled for 100 µs and a record's
	// handling: a READ read again may be handled record by record.
	quiet := 100*sim.US + sim.Tick(s.HandlerNS)*sim.NS
	c.Run(sim.S, func() bool {
		// 3 ms without an operation issued or finished or a record
		// handled (15 retransmission timeouts): what is missing never
		// comes.
		n := steps
		for _, h := range handled {
			n += h
		}
		if n != progress {
			progress, since = n, c.Now()
			if settled > 0 {
				settled = c.Now() + quiet
			}
		} else if c.Now()-since > 3*sim.MS {
			return true
		}
		if settled > 0 {
			return c.Now() >= settled
		}
		if !c.AppsDone() {
			return false
		}
		// and every record handed to its handler
		for iuid, recs := range p.Logs {
			n := 0
			for _, r := range recs {
				if r.Kind != record.Pad {
					n++
				}
			}
			if handled[iuid] < n {
				return false
			}
		}
		settled = c.Now() + quiet
		return false
	})
	if !c.AppsDone() {
		return obs, fmt.Errorf("the process did not finish by %v", c.Now())
	}
	obs.EndPS = uint64(c.Now())
	mon.Finish(c.Now())
	obs.Events = events(c.Eng.Stats())
	obs.Monitor, obs.MonitorAt = messages(mon.Log)
	for _, pg := range s.Pages {
		b := make([]byte, 4096)
		dst.Mem.Read(pg.Addr, b)
		obs.Memory[pg.Addr] = b
	}
	return obs, runErr
}

// CheckAPI runs an API-level stimulus and compares with the golden model;
// with cover, it counts the bins the run hit.
func CheckAPI(s *verify.APIStimulus, cover *verify.Coverage) (*verify.Mismatch, error) {
	mm, _, err := CheckAPIWith(s, cover, Options{})
	return mm, err
}

// CheckAPIWith is CheckAPI with options; it also returns the observation
// (the monitors' messages among it), nil if the run could not start.
func CheckAPIWith(s *verify.APIStimulus, cover *verify.Coverage, o Options) (*verify.Mismatch, *verify.APIObservation, error) {
	obs, err := RunAPIWith(s, o)
	if err != nil {
		return nil, obs, err
	}
	if mm := monitorMismatch(obs.Monitor, obs.MonitorAt); mm != nil {
		return mm, obs, nil
	}
	p := verify.PredictAPI(s)
	mm := verify.CompareAPI(s, p, obs)
	if mm != nil {
		mm.At = obs.EndPS // the API level compares what the run left at its end
	}
	if mm == nil && cover != nil {
		cover.AddAPI(s, p, obs)
	}
	return mm, obs, nil
}

// events sums the run's counters by their last name, and for the links by
// their direction's too (down.credit_stall_posted).
func events(st *sim.Stats) map[string]uint64 {
	ev := map[string]uint64{}
	for _, x := range st.All() {
		c, ok := x.(*sim.Counter)
		if !ok || c.Value() == 0 {
			continue
		}
		parts := strings.Split(c.Name(), ".")
		ev[parts[len(parts)-1]] += c.Value()
		if len(parts) >= 2 {
			ev[parts[len(parts)-2]+"."+parts[len(parts)-1]] += c.Value()
		}
	}
	return ev
}
