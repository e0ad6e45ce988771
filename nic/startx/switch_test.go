package startx_test

import (
	"os"
	"testing"

	"github.com/aaemu/aaemu/cpu"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/nic/startx"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

// Four NIUs through the switch: nodes 1 to 3 send to node 0 at both
// priorities through small receive FIFOs, every message arrives once and
// in order per sender and priority; one to a node the switch has no port
// for is dropped and counted, not left blocking its input.
func TestSwitch(t *testing.T) {
	data, err := os.ReadFile("../../examples/machines/e5000.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scenario.ParseScenario("e5000.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	ms := sc.ClusterSpec()
	ms.Nodes, ms.Cores = 4, 1
	ns := startx.DefaultSpec()
	ns.RXDepth = 2
	ms.StartX = &ns
	c, err := machine.New(sim.NewEngine(1), ms)
	if err != nil {
		t.Fatal(err)
	}
	if c.StartXSwitch == nil || len(c.StartXLines) != 8 {
		t.Fatalf("switch %v, %d lines", c.StartXSwitch, len(c.StartXLines))
	}
	const per = 20
	for src := 1; src < 4; src++ {
		src := src
		port := &startx.Port{NIU: c.Nodes[src].NIU}
		c.Nodes[src].Cores[0].Spawn("sender", func(p *cpu.Proc) {
			if src == 1 {
				port.Send(p, startx.Low, 9, 0, payload(2, 0)) // no such node
			}
			for i := 0; i < per; i++ {
				port.Send(p, startx.Priority(i%2), 0, uint32(src<<8|i), payload(2+i%5, uint32(i)))
			}
		})
	}
	got := map[[2]int][]int{}
	total := 0
	rx := &startx.Port{NIU: c.Nodes[0].NIU}
	c.Nodes[0].Cores[0].Spawn("receiver", func(p *cpu.Proc) {
		for total < 3*per {
			for pri := startx.High; pri <= startx.Low; pri++ {
				if m, ok := rx.Poll(p, pri); ok {
					i := int(m.H1 & 0xff)
					if m.Src != int(m.H1>>8) || len(m.Payload) != 2+i%5 || startx.Priority(i%2) != pri {
						t.Errorf("message %+v", m)
					}
					k := [2]int{m.Src, int(pri)}
					got[k] = append(got[k], i)
					total++
				}
			}
			p.Sleep(200 * sim.NS)
		}
	})
	c.Eng.Run(10 * sim.MS)
	if total != 3*per {
		t.Fatalf("%d of %d messages", total, 3*per)
	}
	for k, v := range got {
		for j := 1; j < len(v); j++ {
			if v[j] <= v[j-1] {
				t.Errorf("from %d at %v: %v out of order", k[0], startx.Priority(k[1]), v)
				break
			}
		}
	}
	if d := c.StartXSwitch.Dropped(); d != 1 {
		t.Errorf("dropped %d, want the one to node 9", d)
	}
}
