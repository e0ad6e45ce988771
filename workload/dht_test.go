package workload

import (
	"fmt"
	"math"
	"testing"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/machine"
	"github.com/aaemu/aaemu/sim"
)

func runDHT(t testing.TB, scheme Scheme, coll float64, inserts int) DHTResult {
	c := newCluster(t, nil)
	d, err := SetupDHT(c, DHTConfig{Scheme: scheme, Inserts: inserts, Cells: 1 << 12, Collisions: coll, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(sim.S, c.AppsDone)
	if err := d.Verify(); err != nil {
		t.Fatalf("%s at %.0f%%: %v", scheme, coll*100, err)
	}
	return d.Result()
}

// The table holds exactly the inserted keys, whatever the scheme; AA beats
// RMA by several times, and RMA loses more to collisions.
func TestDHTInserts(t *testing.T) {
	res := map[Scheme]map[float64]DHTResult{}
	for _, s := range []Scheme{AAPoll, AAInt, AASP, RMA} {
		res[s] = map[float64]DHTResult{}
		for _, coll := range []float64{0.05, 0.25} {
			r := runDHT(t, s, coll, 400)
			res[s][coll] = r
			t.Logf("%-8s %3.0f%%: %8.0f inserts/s, %.2f remote ops, %.1f TLPs, %.0f wire bytes per insert",
				s, coll*100, r.InsertsPerSec, r.RemoteOps, r.TLPs, r.WireBytes)
		}
	}
	for _, coll := range []float64{0.05, 0.25} {
		if ratio := res[AASP][coll].InsertsPerSec / res[RMA][coll].InsertsPerSec; ratio < 2 {
			t.Errorf("AA-SP / RMA at %.0f%% collisions = %.2f: AA should be several times faster", coll*100, ratio)
		}
	}
	dropRMA := res[RMA][0.05].InsertsPerSec / res[RMA][0.25].InsertsPerSec
	dropAA := res[AASP][0.05].InsertsPerSec / res[AASP][0.25].InsertsPerSec
	if dropRMA <= dropAA {
		t.Errorf("RMA slows by %.2f× from 5%% to 25%% collisions, AA by %.2f×: RMA should degrade more", dropRMA, dropAA)
	}
}

// Active messages are real SENDs through the NIC into receive buffers the
// target polls. The table must come out exact; each insert costs the target a
// poll (AA costs it none); and with the source computing between inserts,
// AM-Exp's back-off polls less than AM's fixed interval.
func TestDHTActiveMessages(t *testing.T) {
	run := func(s Scheme, compute int) DHTResult {
		c := newCluster(t, nil)
		d, err := SetupDHT(c, DHTConfig{Scheme: s, Inserts: 200, Cells: 1 << 12, Collisions: 0.05, Compute: compute, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.S, c.AppsDone)
		if err := d.Verify(); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		r := d.Result()
		t.Logf("%-6s compute %5d cycles: %8.0f inserts/s, %5d target polls, %.1f TLPs, %.0f wire bytes per insert",
			s, compute, r.InsertsPerSec, r.TargetPolls, r.TLPs, r.WireBytes)
		return r
	}
	for _, compute := range []int{0, 10000} {
		am, exp := run(AM, compute), run(AMExp, compute)
		if am.TargetPolls < am.Inserts || exp.TargetPolls < exp.Inserts {
			t.Errorf("compute %d: polls AM %d, AM-Exp %d < %d inserts: each message needs a poll", compute, am.TargetPolls, exp.TargetPolls, am.Inserts)
		}
		if compute > 0 && exp.TargetPolls >= am.TargetPolls {
			t.Errorf("compute %d: AM-Exp polled %d times, AM %d: back-off should poll less", compute, exp.TargetPolls, am.TargetPolls)
		}
	}
	if sp := run(AASP, 0); sp.TargetPolls != 0 {
		t.Errorf("AA-SP reports %d target polls", sp.TargetPolls)
	}
}

// At scale every node owns a shard and runs several inserting processes:
// every scheme must leave every shard exact, with processes of one core
// sharing connections (the AM servers) and handlers interleaving.
func TestDHTMultiNode(t *testing.T) {
	for _, s := range []Scheme{AAPoll, AAInt, AASP, RMA, AM, AMExp, AMOnload, AMInt} {
		spec := machine.DefaultSpec()
		spec.Nodes, spec.Cores = 4, 3
		c, err := aa.New(sim.NewEngine(7), spec)
		if err != nil {
			t.Fatal(err)
		}
		d := runChecked(t, c, DHTConfig{Scheme: s, Inserts: 40, Cells: 64, Collisions: 0.3, Procs: 3, OnloadCores: 1, Seed: 7}, string(s))
		r := d.Result()
		t.Logf("%-7s %d nodes × %d procs: %8.0f inserts/s, %.1f TLPs/insert, %d polls", s, r.Nodes, r.Procs, r.InsertsPerSec, r.TLPs, r.TargetPolls)
		want := 4 * 3 * 40
		if s == AMOnload {
			want = 4 * 2 * 40 // one core of three only serves
		}
		if r.Inserts != want {
			t.Fatalf("%s: %d inserts, want %d", s, r.Inserts, want)
		}
	}
}

// Lookups (plain gets walking cell and chain) find every key with its value
// and deletes remove exactly the deleted keys, in every scheme, with
// collisions long enough to build chains and processes on several nodes
// interleaving.
func TestDHTLookupsAndDeletes(t *testing.T) {
	for _, s := range []Scheme{AAPoll, AAInt, AASP, RMA, AM, AMExp, AMOnload, AMInt} {
		c, d := runLookupsDeletes(t, s)
		r := d.Result()
		if !r.Verified || r.Lookups == 0 || r.Deletes == 0 || r.OpsPerSec <= 0 {
			t.Fatalf("%s: %+v", s, r)
		}
		t.Logf("%-9s %d inserts, %d lookups, %d deletes: %8.0f ops/s, %.2f remote ops per insert", s, r.Inserts, r.Lookups, r.Deletes, r.OpsPerSec, r.RemoteOps)
		_ = c
	}
}

func runLookupsDeletes(t *testing.T, s Scheme) (*aa.System, *DHT) {
	t.Helper()
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores = 3, 3
	c, err := aa.New(sim.NewEngine(3), spec)
	if err != nil {
		t.Fatal(err)
	}
	return c, runChecked(t, c, DHTConfig{Scheme: s, Inserts: 30, Cells: 32, Collisions: 0.4, Procs: 3, OnloadCores: 1,
		Lookups: 0.5, Deletes: 0.3, Seed: 3}, string(s))
}

// The verifier catches a deleted key brought back, a key lost, a broken
// chain and a wrong lookup: the check can fail.
func TestDHTVerifyCatchesCorruption(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(c *aa.System, d *DHT)
	}{
		{"a deleted key back", func(c *aa.System, d *DHT) {
			for _, sh := range d.shards {
				for _, k := range sh.keys {
					if sh.deleted[k] {
						m := c.Nodes[sh.node].Mem
						if a := d.cell(sh, k); m.Load64(a) == tombstone {
							m.Store64(a, k)
							return
						}
					}
				}
			}
			panic("no deleted key in a cell")
		}},
		{"a key lost", func(c *aa.System, d *DHT) {
			sh := d.shards[1]
			for _, k := range sh.keys {
				if a := d.cell(sh, k); !sh.deleted[k] && c.Nodes[1].Mem.Load64(a) == k {
					c.Nodes[1].Mem.Store64(a, tombstone)
					return
				}
			}
		}},
		{"a chain cut", func(c *aa.System, d *DHT) {
			sh := d.shards[2]
			m := c.Nodes[2].Mem
			for cell := 0; cell < d.cfg.Cells; cell++ {
				if e := m.Load64(sh.table + uint64(cell)*cellSize + 16); e != 0 && m.Load64(sh.heap+(e-1)*entrySize+16) != 0 {
					m.Store64(sh.heap+(e-1)*entrySize+16, 0)
					return
				}
			}
			panic("no chain of two entries")
		}},
		{"a wrong lookup", func(c *aa.System, d *DHT) { d.tallies[0].bad = append(d.tallies[0].bad, "key 1: value 0x2") }},
	} {
		c, d := runLookupsDeletes(t, RMA)
		tc.corrupt(c, d)
		if err := d.Verify(); err == nil {
			t.Errorf("%s: not detected", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
}

// AM-Int: the same SENDs, but the target's NIC interrupts core 0 through
// the IOMMU's interrupt window; the handler re-arms the shared receive CQ
// and drains it. The table must come out exact with no polling; every MSI
// the NIC raises runs the handler once; moderation cuts the interrupts
// (each reports several messages) and the handler runs no more than once
// per message.
func TestDHTActiveMessagesInterrupt(t *testing.T) {
	const inserts = 200
	run := func(count int) DHTResult {
		c := newCluster(t, nil)
		d := runChecked(t, c, DHTConfig{Scheme: AMInt, Inserts: inserts, Cells: 1 << 12, Collisions: 0.05, AMIntCount: count, Seed: 1},
			fmt.Sprintf("count %d", count))
		r := d.Result()
		st := c.Eng.Stats()
		events, _ := st.Get("node1.nic0.cq_events")
		msis, _ := st.Get("node1.iommu.device_msis")
		taken, _ := st.Get("node1.cpu0.interrupts")
		if events == nil || msis == nil {
			t.Fatalf("count %d: no completion events counted", count)
		}
		ev := events.(*sim.Counter).Value()
		if ev != msis.(*sim.Counter).Value() || ev != taken.(*sim.Counter).Value() || ev != uint64(r.Interrupts) {
			t.Fatalf("count %d: NIC events %d, IOMMU MSIs %v, core 0 interrupts %v, handler runs %d: want equal",
				count, ev, msis.(*sim.Counter).Value(), taken.(*sim.Counter).Value(), r.Interrupts)
		}
		t.Logf("AM-Int every %2d: %8.0f inserts/s, %4d interrupts, %.1f TLPs/insert", count, r.InsertsPerSec, r.Interrupts, r.TLPs)
		if r.TargetPolls != 0 || r.Interrupts < 1 || r.Interrupts > inserts+1 {
			t.Fatalf("count %d: %d polls, %d interrupts for %d messages", count, r.TargetPolls, r.Interrupts, inserts)
		}
		return r
	}
	every, moderated := run(1), run(DefaultAMIntCount)
	if moderated.Interrupts >= every.Interrupts {
		t.Errorf("an interrupt every 10 messages took %d interrupts, every message %d: moderation should cut them", moderated.Interrupts, every.Interrupts)
	}
	if _, err := SetupDHT(newCluster(t, nil), DHTConfig{Scheme: AMInt, Inserts: 1, Cells: 16, AMIntCount: -1}); err == nil {
		t.Error("a negative moderation count was accepted")
	}
}

// An entry the NIC wrote just before the handler re-armed, still on its way
// to memory when the drain looked, must still raise an interrupt (the arm
// carries the consumer index): this machine and seed lost one when arming
// did not, and the run never finished.
func TestDHTAMIntNoLostInterrupt(t *testing.T) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores = 4, 4
	c, err := aa.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	d, err := SetupDHT(c, DHTConfig{Scheme: AMInt, Inserts: 50, Cells: 1024, Collisions: 0.25, Procs: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c.Run(sim.S, c.AppsDone)
	if !c.AppsDone() {
		t.Fatal("the inserting processes did not finish")
	}
	if err := d.Verify(); err != nil {
		t.Fatal(err)
	}
}

// AA-Int's moderation: an MSI once 10 records are in the log (the rest
// after the notification interval) takes far fewer interrupts than one per
// record, and the table stays exact.
func TestDHTAAIntModeration(t *testing.T) {
	msis := func(records int) uint64 {
		c := newCluster(t, nil)
		d, err := SetupDHT(c, DHTConfig{Scheme: AAInt, Inserts: 200, Cells: 1 << 12, Collisions: 0.05, AAIntRecords: records, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.S, c.AppsDone)
		if err := d.Verify(); err != nil {
			t.Fatalf("every %d records: %v", records, err)
		}
		st, _ := c.Eng.Stats().Get("node1.iommu.log_msis")
		return st.(*sim.Counter).Value()
	}
	every, ten := msis(0), msis(10)
	t.Logf("AA-Int log MSIs: %d with one per record, %d with one per 10 records", every, ten)
	if ten == 0 || ten*3 > every {
		t.Fatalf("one MSI per 10 records took %d MSIs, one per record %d", ten, every)
	}
	if _, err := SetupDHT(newCluster(t, nil), DHTConfig{Scheme: AAInt, Inserts: 1, Cells: 16, AAIntRecords: -1}); err == nil {
		t.Error("a negative moderation was accepted")
	}
}

// runChecked sets the DHT up on c, runs it until every process is done and
// checks the table; what says which run failed.
func runChecked(t testing.TB, c *aa.System, cfg DHTConfig, what string) *DHT {
	t.Helper()
	d, err := SetupDHT(c, cfg)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	c.Run(sim.S, c.AppsDone)
	if !c.AppsDone() {
		t.Fatalf("%s: processes did not finish", what)
	}
	if err := d.Verify(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return d
}

// A run reports its NICs' energy from the machine's power figures: idle
// power over the run plus the active power's excess while sending, so
// doubling both figures doubles it, and an idle-only machine's energy is
// the idle power × NICs × time.
func TestDHTNICEnergy(t *testing.T) {
	run := func(active, idle float64) DHTResult {
		spec := machine.DefaultSpec()
		spec.Power.NICActiveW, spec.Power.NICIdleW = active, idle
		c, err := aa.New(sim.NewEngine(1), spec)
		if err != nil {
			t.Fatal(err)
		}
		return runChecked(t, c, DHTConfig{Scheme: AASP, Inserts: 100, Cells: 1 << 10, Collisions: 0.05, Seed: 1}, "energy").Result()
	}
	base, double, idle := run(1, 0.5), run(2, 1), run(0.5, 0.5)
	secs := float64(base.SimTimePS) / 1e12
	if want := 2 * 0.5 * secs; math.Abs(idle.NICEnergyJ-want) > 1e-12 {
		t.Fatalf("idle-only energy %g J, want %g J (2 NICs × 0.5 W × %g s)", idle.NICEnergyJ, want, secs)
	}
	if math.Abs(double.NICEnergyJ-2*base.NICEnergyJ) > 1e-12 || base.NICEnergyJ <= idle.NICEnergyJ {
		t.Fatalf("energies %g, %g (doubled), %g (idle only)", base.NICEnergyJ, double.NICEnergyJ, idle.NICEnergyJ)
	}
	spec := machine.DefaultSpec()
	spec.Power.NICIdleW = 2
	if _, err := aa.New(sim.NewEngine(1), spec); err == nil {
		t.Fatal("an idle power above the active one was accepted")
	}
}

// With a log per inserting process, each process's log takes the puts to
// its share of the table's pages (AA-Poll: polled on that process's core),
// the table comes out exact under every notification mode, lookups and
// deletes included, and every process's log has handled records.
func TestDHTProcessLogs(t *testing.T) {
	for _, s := range []Scheme{AAPoll, AAInt, AASP} {
		spec := machine.DefaultSpec()
		spec.Nodes, spec.Cores = 3, 3
		c, err := aa.New(sim.NewEngine(3), spec)
		if err != nil {
			t.Fatal(err)
		}
		d := runChecked(t, c, DHTConfig{Scheme: s, Inserts: 40, Cells: 1024, Collisions: 0.3, Procs: 3,
			Lookups: 0.3, Deletes: 0.2, ProcessLogs: true, Seed: 3}, string(s))
		if len(d.iuids) != 3 {
			t.Fatalf("%s: %d logs per node, want 3", s, len(d.iuids))
		}
		for _, n := range c.Nodes {
			for _, iuid := range d.iuids {
				if l := n.Log(iuid); l == nil || l.Processed == 0 {
					t.Fatalf("%s: node %d's log %d handled nothing", s, n.ID, iuid)
				}
			}
		}
		r := d.Result()
		t.Logf("%-7s a log per process: %8.0f inserts/s", s, r.InsertsPerSec)
	}
}

// More logs than the IOMMU's access-log CAM holds, under AA-Int with
// interrupt moderation: a log evicted with records not yet notified gets
// its MSI as it leaves (it used to lose it, and the last records of a log
// below the threshold were never handled: the active flush waited for
// them until the transport gave up).
func TestDHTIntLogsBeyondTheCAM(t *testing.T) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores, spec.Transport = 2, 8, machine.TransportSRD
	spec.IOMMU.LogCAMEntries, spec.IOMMU.FlushBufferEntries = 4, 8
	c, err := aa.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	d := runChecked(t, c, DHTConfig{Scheme: AAInt, Inserts: 25, Cells: 1024, Collisions: 0.05, Procs: 8,
		AAIntRecords: 10, ProcessLogs: true, Seed: 1}, "AA-Int, 8 logs, a 4-entry CAM")
	for _, n := range c.Nodes {
		for _, iuid := range d.iuids {
			if l := n.Log(iuid); l == nil || l.Processed == 0 {
				t.Fatalf("node %d's log %d handled nothing", n.ID, iuid)
			}
		}
	}
}

// PageZipf gives the keys locality: the share of a shard's keys in its
// busiest page grows with the exponent (uniform keys spread over the 32
// pages), every page rank still reachable once a hot page fills, and the
// table still holds exactly the keys, in an AA and an RMA run. An
// exponent out of range is refused.
func TestDHTPageZipf(t *testing.T) {
	hottest := func(zipf float64, s Scheme) float64 {
		spec := machine.DefaultSpec()
		spec.Nodes, spec.Cores = 3, 2
		c, err := aa.New(sim.NewEngine(3), spec)
		if err != nil {
			t.Fatal(err)
		}
		// 32 pages of 128 cells: 3 × 2 × 400 inserts into 3 shards fill
		// the hottest pages, so draws spill to the next ranks.
		d := runChecked(t, c, DHTConfig{Scheme: s, Inserts: 400, Cells: 4096, Collisions: 0.05, Procs: 2, PageZipf: zipf, Seed: 3}, fmt.Sprint(s, " zipf ", zipf))
		best := 0.0
		for _, sh := range d.shards {
			per := map[uint64]int{}
			for _, k := range sh.keys {
				per[(k%4096)/128]++
			}
			for _, n := range per {
				best = max(best, float64(n)/float64(len(sh.keys)))
			}
		}
		return best
	}
	for _, s := range []Scheme{AAPoll, RMA} {
		u, z1, z2 := hottest(0, s), hottest(0.99, s), hottest(2, s)
		t.Logf("%s: the busiest page's share of a shard's keys: uniform %.3f, Zipf 0.99 %.3f, Zipf 2 %.3f", s, u, z1, z2)
		if !(u < 0.08 && z1 > 2*u && z2 > z1) {
			t.Errorf("%s: busiest page %.3f (uniform), %.3f (0.99), %.3f (2): want locality growing with the exponent", s, u, z1, z2)
		}
	}
	c := newCluster(t, nil)
	for _, z := range []float64{-1, 11, math.NaN()} {
		if _, err := SetupDHT(c, DHTConfig{Scheme: AAPoll, Inserts: 1, Cells: 64, PageZipf: z}); err == nil {
			t.Errorf("page Zipf %v accepted", z)
		}
	}
}

// A process that put to several of an owner's logs (a log a process) ends
// with one flush of that owner: the gets of every log's flushing page go
// out together, the second posted before the first one's response is made,
// not one round trip after another (each flush used to wait for the last).
func TestDHTFlushTakesAnOwnersLogsTogether(t *testing.T) {
	spec := machine.DefaultSpec()
	spec.Nodes, spec.Cores, spec.Transport = 2, 4, machine.TransportSRD
	spec.IOMMU.FlushBufferEntries = 4
	c, err := aa.New(sim.NewEngine(1), spec)
	if err != nil {
		t.Fatal(err)
	}
	c.Eng.World().EnableTxnLog()
	runChecked(t, c, DHTConfig{Scheme: AAPoll, Inserts: 12, Cells: 1024, Collisions: 0.05, Procs: 4,
		ProcessLogs: true, Seed: 1}, "AA-Poll, 4 logs a node")
	txns := c.Eng.World().TxnLog()
	kids := map[sim.TxnID][]sim.TxnRecord{}
	for _, r := range txns {
		kids[r.Cause] = append(kids[r.Cause], r)
	}
	// child is the first transaction of kind that r caused.
	child := func(r sim.TxnRecord, kind string) (sim.TxnRecord, bool) {
		for _, k := range kids[r.ID] {
			if k.Kind == kind {
				return k, true
			}
		}
		return sim.TxnRecord{}, false
	}
	several := 0
	for _, op := range txns {
		if op.Kind != "dht.flush" {
			continue
		}
		var bells []sim.TxnRecord
		for _, k := range kids[op.ID] {
			if k.Kind == "tlp.MWr.doorbell" {
				bells = append(bells, k)
			}
		}
		if len(bells) < 2 {
			continue
		}
		several++
		// The first get's response: doorbell → the NIC's fetch of the work
		// request → the work request → the READ → its response.
		r, ok := bells[0], true
		for _, kind := range []string{"tlp.MRd", "wqe", "frame.READ", "frame.READ_RESPONSE"} {
			if r, ok = child(r, kind); !ok {
				t.Fatalf("%s's first flush get: no %s in its lineage", op.By, kind)
			}
		}
		if bells[1].At >= r.At {
			t.Errorf("%s flushed %d logs of one owner one after another: its second get was posted at %v, after the first one's response (%v)",
				op.By, len(bells), bells[1].At, r.At)
		}
	}
	if several == 0 {
		t.Fatal("no process put to two logs of its owner: the test checks nothing")
	}
}
