package conformance

import (
	"fmt"

	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/memory"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/pcie"
	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verify"
	"github.com/aaemu/aaemu/verify/monitor"
)

// packetTLP is how the monitors read a PCIe packet.
func packetTLP(p *pcie.Packet) (sim.TxnID, *tlp.TLP) { return p.ID, &p.TLP }

// dirSpec is the monitor's view of a link direction.
func dirSpec(d *pcie.Dir, mps, rcb int, takeOrder bool) monitor.DirSpec {
	s := d.Spec()
	c := s.Credits
	return monitor.DirSpec{Name: d.Unit().Name(), Credits: [6]int{c.PH, c.PD, c.NPH, c.NPD, c.CplH, c.CplD},
		LatencyPS: s.LatencyPS, UpdateFCPS: s.UpdateFCLatency, SlackPS: d.Unit().Clock().Period(),
		MPS: mps, RCB: rcb, TakeOrder: takeOrder}
}

// Monitors are the protocol monitors of a machine: one per PCIe link (its
// up direction a pcie.Dir, its down one a Dir or a channel) and one RC
// monitor over every wire and every NIC's TLPs to its host.
type Monitors struct {
	Log   *monitor.Log
	links []*monitor.PCIeLink
	rc    *monitor.RC
	c     *machine.Cluster
}

// AttachMonitors watches every PCIe link and wire of c; call it after the
// cluster is built and before it runs. Finish reports what never
// completed.
func AttachMonitors(c *machine.Cluster) *Monitors {
	m := &Monitors{Log: monitor.NewLog(100), c: c}
	s := c.Spec
	m.rc = monitor.NewRC(m.Log, s.NIC.PMTU)
	for _, n := range c.Nodes {
		e := n.Fabric.Engine()
		for r, x := range n.NICs {
			up := n.Ups[r]
			// The root complex takes the NIC's TLPs as the ordering rules
			// allow; the NIC's own order of taking is its business.
			upSpec := dirSpec(up, x.Spec().Sizes.MPS, x.Spec().Sizes.RCB, true)
			var l *monitor.PCIeLink
			if dn := n.Downs[r]; dn != nil {
				l = monitor.NewPCIeLink(m.Log, upSpec, dirSpec(dn, 0, s.Memory.Sizes.RCB, false))
				monitor.WatchDir(l, 1, e, dn.In, dn.Out, packetTLP)
			} else {
				l = monitor.NewPCIeLink(m.Log, upSpec, monitor.DirSpec{Name: fmt.Sprintf("node%d.pcie%d.down", n.ID, r), RCB: s.Memory.Sizes.RCB})
				monitor.WatchChan(l, 1, e, x.DMAIn, packetTLP)
			}
			monitor.WatchDir(l, 0, e, up.In, up.Out, packetTLP)
			m.links = append(m.links, l)
			// What the NIC asks of its host, for the RC monitor's
			// exactly-once check, in the order of the other domains' frames.
			node := n.ID
			up.In.Watch(func(p *pcie.Packet) {
				if !p.TLP.Kind.HasData() || p.TLP.Kind.IsCompletion() {
					return
				}
				q := *p
				e.Output(func() { m.rc.TLP(node, e.Now(), q.ID, q.Cause, &q.TLP) })
			}, nil)
		}
	}
	// Frames are seen once, on the wire between two NICs, and only
	// connected queue pairs keep the RC rules.
	direct := c.Switch == nil && len(c.Switches) == 0 && c.Torus == nil
	rc := s.Transport == machine.TransportRC || s.Transport == ""
	for _, w := range c.Wires {
		if !direct || !rc {
			break
		}
		name := w.Unit().Name()
		w.AddTap(func(t sim.Tick, f *nic.Frame, _ bool) { m.rc.Sent(name, t, f.ID, &f.Frame) })
		w.ArriveTap(func(t sim.Tick, f *nic.Frame) { m.rc.Arrived(t, f.ID, &f.Frame) })
	}
	return m
}

// Finish ends the monitors at a quiet end of the run.
func (m *Monitors) Finish(at sim.Tick) {
	for _, l := range m.links {
		l.Finish(at)
	}
	m.rc.Finish(at)
}

// Messages are the violations, in time order.
func messages(l *monitor.Log) ([]string, uint64) {
	var out []string
	var first uint64
	for i, v := range l.Violations() {
		if i == 0 {
			first = uint64(v.At)
		}
		out = append(out, v.String())
	}
	if n := l.Count() - len(out); n > 0 {
		out = append(out, fmt.Sprintf("and %d more", n))
	}
	return out, first
}

// monitorMismatch is the first monitor report as the scoreboard's mismatch.
func monitorMismatch(msgs []string, at uint64) *verify.Mismatch {
	if len(msgs) == 0 {
		return nil
	}
	what := msgs[0]
	if len(msgs) > 1 {
		what += fmt.Sprintf(" (and %d more reports)", len(msgs)-1)
	}
	return &verify.Mismatch{Block: "monitor", Op: -1, At: at, What: what}
}

// watchDevice monitors a device wired straight to an IOMMU port in the
// IOMMU-level run: requests up, completions down from the memory
// controller's completer.
func watchDevice(log *monitor.Log, e *sim.Engine, i int, up, down *sim.Chan[pcie.Packet]) *monitor.PCIeLink {
	l := monitor.NewPCIeLink(log, monitor.DirSpec{Name: fmt.Sprintf("dev%d.up", i), TakeOrder: true},
		monitor.DirSpec{Name: fmt.Sprintf("dev%d.down", i), MPS: memory.DefaultSpec().Sizes.MPS, RCB: memory.DefaultSpec().Sizes.RCB})
	monitor.WatchChan(l, 0, e, up, packetTLP)
	monitor.WatchChan(l, 1, e, down, packetTLP)
	return l
}
